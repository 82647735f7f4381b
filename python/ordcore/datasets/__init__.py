"""Small real data sets bundled with ordcore (about 9 MB), for the demo and quick trials.

- :func:`load_glosses`: 10,000 sentence embeddings (all-MiniLM-L6-v2, 384-d, unit norm,
  float16) of WordNet 3.0 glosses with their texts, 200 query embeddings with their texts,
  and each query's exact cosine top-10 among the 10,000.
- :func:`load_doc_lengths`: token counts (OpenAI ``cl100k_base`` tokenizer) of 22,149 real
  Linux man pages, a pretraining-style length distribution with a long tail.

Source: derived by ``python -m ordcore.datasets.derive`` from the full sets described in
the ordcore repository (100,000 gloss embeddings; man pages of Debian packages). WordNet 3.0
is © 1996-2012 Princeton University (Cognitive Science Laboratory) and is redistributed
under the WordNet licence, whose notice ships beside the data as ``WORDNET_LICENSE.txt``.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

__all__ = ["Glosses", "load_glosses", "load_doc_lengths", "wordnet_license", "export", "EXPORT_FILES"]

EXPORT_FILES: dict[str, str] = {
    "base.fvecs": "the 10,000 gloss embeddings (float32, 384-d)",
    "queries.fvecs": "the 200 query embeddings (float32)",
    "gt.ivecs": "each query's exact cosine top-10 base rows, nearest first (int32)",
    "lengths.npy": "token counts of the 22,149 man pages (int64)",
    "lengths.txt": "the same, one per line",
}
"""The files :func:`export` writes, with what each holds."""


@dataclass(frozen=True)
class Glosses:
    """The bundled gloss embeddings.

    Attributes
    ----------
    base : ndarray, shape (10000, 384), float16
        Unit-norm sentence embeddings (cosine-native).
    base_texts : list[str]
        The gloss text of each base row.
    queries : ndarray, shape (200, 384), float16
        Query embeddings (other glosses, disjoint from the base).
    query_texts : list[str]
        The gloss text of each query.
    truth : ndarray, shape (200, 10), int32
        Exact cosine top-10 base rows per query, nearest first (ties: lower row first).
    """

    base: npt.NDArray[np.float16]
    base_texts: list[str]
    queries: npt.NDArray[np.float16]
    query_texts: list[str]
    truth: npt.NDArray[np.int32]


def _read_lines(name: str) -> list[str]:
    raw = resources.files(__name__).joinpath(name).read_bytes()
    return gzip.decompress(raw).decode("utf-8").splitlines()


def load_glosses() -> Glosses:
    """Load the bundled WordNet gloss embeddings (see :class:`Glosses`)."""
    with resources.as_file(resources.files(__name__).joinpath("glosses.npz")) as path:
        with np.load(path) as data:
            base, queries, truth = data["base"], data["queries"], data["truth"]
    return Glosses(
        base=base,
        base_texts=_read_lines("glosses_base.txt.gz"),
        queries=queries,
        query_texts=_read_lines("glosses_queries.txt.gz"),
        truth=truth,
    )


def load_doc_lengths() -> npt.NDArray[np.int64]:
    """Token counts of 22,149 real man pages (int64, shape (22149,), cl100k_base tokens)."""
    with resources.as_file(resources.files(__name__).joinpath("doclens_manpages.npy")) as path:
        lengths: npt.NDArray[np.int64] = np.load(path).astype(np.int64)
    return lengths


def wordnet_license() -> str:
    """The WordNet 3.0 licence notice that must accompany the gloss texts."""
    return resources.files(__name__).joinpath("WORDNET_LICENSE.txt").read_text("utf-8")


def export(folder: str | os.PathLike[str] = ".") -> list[Path]:
    """Write the bundled data as the files the command line reads (:data:`EXPORT_FILES`):
    the glosses as TEXMEX ``.fvecs``/``.ivecs`` (as SIFT1M ships) and the man-page lengths
    as ``.npy`` and text. ``folder`` is created (with its parents) when missing; existing files
    of those names are replaced (each write is atomic). Returns the paths written.

    Raises
    ------
    NotADirectoryError
        ``folder`` exists and is not a folder.
    """
    from ordcore._io import write_atomic, write_vecs

    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out}: is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    g = load_glosses()
    lengths = load_doc_lengths()
    write_vecs(out / "base.fvecs", g.base.astype(np.float32))
    write_vecs(out / "queries.fvecs", g.queries.astype(np.float32))
    write_vecs(out / "gt.ivecs", g.truth.astype(np.int32))
    buf = io.BytesIO()
    np.save(buf, lengths)
    write_atomic(out / "lengths.npy", buf.getvalue())
    write_atomic(out / "lengths.txt", ("\n".join(map(str, lengths.tolist())) + "\n").encode())
    return [out / name for name in EXPORT_FILES]
