"""Derive ordcore's bundled sample data from the full real data sets.

Run from the repository root (the full data lives in ``../shared/data``)::

    python -m ordcore.datasets.derive --source ../shared/data --dest python/ordcore/datasets

It writes, deterministically (seed 0):

- ``glosses.npz``: 10,000 unit-norm all-MiniLM-L6-v2 sentence embeddings (float16, 384-d) of
  WordNet 3.0 glosses drawn from ``ann/glosses_base.npy``, 200 query embeddings drawn from
  ``ann/glosses_queries.npy``, and the exact cosine top-10 of each query within the 10,000
  (computed here in float64 from the float16 values, ties broken by the lower row);
- ``glosses_base.txt.gz`` / ``glosses_queries.txt.gz``: the gloss text of each row;
- ``doclens_manpages.npy``: token counts (cl100k_base) of 22,149 real man pages, from
  ``packing/doclens_cl100k_manpages_roff.npy``;
- ``WORDNET_LICENSE.txt``: WordNet's licence notice, which must travel with the glosses.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
from pathlib import Path

import numpy as np

N_BASE = 10_000
N_QUERIES = 200
K_TRUTH = 10


def exact_cosine_topk(base: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Row indices of the ``k`` most cosine-similar base rows per query (float64, stable)."""
    b = base.astype(np.float64)
    q = queries.astype(np.float64)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    sims = q @ b.T
    # Stable sort on -similarity keeps the lower row first among exact ties.
    return np.argsort(-sims, axis=1, kind="stable")[:, :k].astype(np.int32)


def derive(source: Path, dest: Path) -> None:
    rng = np.random.default_rng(0)
    ann = source / "ann"
    base_all = np.load(ann / "glosses_base.npy", mmap_mode="r")
    queries_all = np.load(ann / "glosses_queries.npy", mmap_mode="r")
    base_rows = np.sort(rng.choice(base_all.shape[0], N_BASE, replace=False))
    query_rows = np.sort(rng.choice(queries_all.shape[0], N_QUERIES, replace=False))
    base = np.ascontiguousarray(base_all[base_rows])
    queries = np.ascontiguousarray(queries_all[query_rows])
    truth = exact_cosine_topk(base, queries, K_TRUTH)
    np.savez_compressed(
        dest / "glosses.npz",
        base=base,
        queries=queries,
        truth=truth,
        base_source_rows=base_rows.astype(np.int32),
        query_source_rows=query_rows.astype(np.int32),
    )
    for name, rows in (("glosses_base", base_rows), ("glosses_queries", query_rows)):
        lines = (ann / f"{name}.txt").read_text(encoding="utf-8").splitlines()
        text = "\n".join(lines[i] for i in rows) + "\n"
        with gzip.open(dest / f"{name}.txt.gz", "wt", encoding="utf-8", compresslevel=9) as fh:
            fh.write(text)
    lengths = np.load(source / "packing" / "doclens_cl100k_manpages_roff.npy")
    np.save(dest / "doclens_manpages.npy", lengths.astype(np.int32))
    shutil.copyfile(ann / "WORDNET_LICENSE.txt", dest / "WORDNET_LICENSE.txt")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=Path("../shared/data"))
    parser.add_argument("--dest", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    derive(args.source, args.dest)


if __name__ == "__main__":
    main()
