"""Build time of ordcore's BQGraphIndex against hnswlib (M=16, ef_construction=200), with the
recall@10 each graph reaches at fixed ``ef_search``.

Builds alternate (ordcore settings in turn, then hnswlib, ``--reps`` times), so load from
other work hits each alike; times are CPU seconds of the build's threads
(``time.process_time``, ``--threads`` build threads; the ``bits="auto"`` choice is part of
ordcore's first ``add`` and of its time). The best of ``--reps`` is kept. Searches then run
at 1 thread and report recall@10 and CPU-time queries per second at each ``--efs``.

    python benches/ann_build.py --dataset sift --n 20000
    python benches/ann_build.py --dataset glove50 --n 100000 --reps 1
    python benches/ann_build.py --dataset glove50 --n 20000 --settings "R=64,L_build=128;"

``--settings`` lists the ordcore keyword sets to build, separated by ``;`` (empty: the
defaults). Measured (2 build threads on 2 cores shared with other work, load 3-6; 20k rows
with 500 queries, full size with 1000), ordcore / hnswlib build CPU time and recall@10 at
``ef_search`` 64 / 128 (hnswlib's in brackets). ``bits="auto"`` resolves ``L_build`` with
the rows of the first ``add``: below 50,000 rows 64 (48 for 4/8-bit codes below 64
dimensions), so the 20k rows below build with the small-base beam and the full-size sets
exactly as before:

Since 4/8-bit prunes score pairs with the query form and ``bits="auto"`` prefers 8 bits
over a close 4 (``choose_codes``), SIFT's default is 8 bits (``--reps 1``, 1000 queries at
200k, load 2.3-2.8):

* SIFT 20k (defaults: 8 bits, L_build=64): 0.83x; 0.9984 / 0.9998 (0.9950 / 0.9996).
* SIFT 200k (defaults: 8 bits, L_build=128): 0.54x (21.9 s against 40.2 s); recall@10 at
  ``ef_search`` 16 / 24 / 64 / 128 0.9206 / 0.9544 / 0.9886 / 0.9963 at 93.3k / 70.7k /
  36.8k / 19.9k QPS (hnswlib 0.9436 / 0.9650 / 0.9884 / 0.9960 at 40.2k / 30.9k / 15.6k /
  8.4k); ``bits=4,rotation=hadamard``: 0.48x, 0.7474 / 0.8270 / 0.9676 / 0.9950 at the
  same QPS (``--efs 16,24,48,64,128 --settings ";bits=4,rotation=hadamard"``).

Before (4 bits):

* SIFT 20k (4 bits, R=64, L_build=64): 0.67-0.73x; 0.9990 / 1.0000 (0.9948 / 0.9996);
  with ``L_build=128`` (the default before) 1.16-1.27x, 0.9986 / 0.9998.
* SIFT 100k with ``L_build=64``: 0.34x, 0.9766 / 0.9887; with 128: 0.56x, 0.9711 / 0.9890.
* SIFT 200k (L_build=128): 0.48-0.54x; 0.9267 / 0.9790 (0.9884 / 0.9960). ``L_build=64``
  costs recall there: 0.9248 / 0.9605 against 0.9254 / 0.9793, and at most 0.977 by
  ``ef_search`` 256 against 0.993 (``L_build=96``: 0.9267 / 0.9692); a first pass at 64
  instead of 32 does not restore it.
* GloVe-50 20k (4 bits, R=56, L_build=48): 0.68-0.75x; 0.9934 / 0.9986 (0.9762 / 0.9950);
  with ``L_build=64`` (before) 0.77-1.17x, 0.9942 / 0.9990; with 40: 0.73x, 0.9924 /
  0.9988. 100k (L_build=64): 0.48-0.89x, 0.9802 / 0.9954 (0.9355-0.9864 / 0.9815-0.9974);
  ``L_build=48`` there: 0.43x, 0.9741 / 0.9937. 200k: 0.56x; 0.9677 / 0.9880 (0.9235 /
  0.9675).
* glosses 20k (2 bits, R=64, L_build=64): 0.57-0.68x; 0.9926 / 0.9976 (0.9906-0.9922 /
  0.9982); with ``L_build=128`` (before) 0.85-0.97x, 0.9928 / 0.9976, and the same search
  speed at each ``ef_search``. 100k (L_build=128): 0.73x; 0.9865 / 0.9960 (0.9891 /
  0.9960); ``L_build=64`` builds it at 0.35x with the same recall (0.9878 / 0.9962).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ann import load  # noqa: E402

from ordcore import ann  # noqa: E402


def parse_settings(text: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in text.split(";"):
        kw: dict[str, Any] = {}
        for item in filter(None, (p.strip() for p in part.split(","))):
            key, value = item.split("=")
            kw[key] = int(value) if value.lstrip("-").isdigit() else (None if value == "None" else value)
        out.append(kw)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=["glosses", "sift", "glosses-pca50", "glove50"], default="sift")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--nq", type=int, default=500)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--efs", default="64,128")
    ap.add_argument("--settings", default="", help="ordcore keyword sets, ';'-separated")
    ap.add_argument("--no-hnswlib", action="store_true")
    args = ap.parse_args()
    x, q, gt, metric = load(args.dataset, args.n, args.nq)
    efs = [int(e) for e in args.efs.split(",")]
    settings = parse_settings(args.settings)
    print(f"{args.dataset}: n={x.shape[0]} dim={x.shape[1]} metric={metric} build threads="
          f"{args.threads} clock=cpu load={os.getloadavg()[0]:.1f}", flush=True)
    names = [",".join(f"{k}={v}" for k, v in kw.items()) or "defaults" for kw in settings]
    builds: dict[str, list[float]] = {name: [] for name in names}
    built: dict[str, Any] = {}
    hnsw = None
    for _ in range(args.reps):
        for name, kw in zip(names, settings):
            idx = ann.BQGraphIndex(x.shape[1], metric=metric, **kw)  # type: ignore[arg-type]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = time.process_time()
                idx.add(x, num_threads=args.threads)
                builds[name].append(time.process_time() - t)
            built[name] = idx
        if not args.no_hnswlib:
            import hnswlib

            hnsw = hnswlib.Index(space="ip" if metric == "cosine" else "l2", dim=x.shape[1])
            hnsw.init_index(max_elements=x.shape[0], M=16, ef_construction=200, random_seed=0)
            hnsw.set_num_threads(args.threads)
            t = time.process_time()
            hnsw.add_items(x)
            builds.setdefault("hnswlib", []).append(time.process_time() - t)
    if hnsw is not None:
        hnsw.set_num_threads(1)

    def search(name: str, ef: int) -> tuple[float, float]:
        t = time.process_time()
        if name == "hnswlib":
            assert hnsw is not None
            hnsw.set_ef(max(ef, 10))
            ids = hnsw.knn_query(q, k=10)[0].astype(np.int64)
        else:
            ids = built[name].search(q, 10, ef_search=ef, num_threads=1)[0]
        s = time.process_time() - t
        return ann.recall_at_k(ids, gt), len(q) / s

    ref = min(builds["hnswlib"]) if "hnswlib" in builds else None
    for name in builds:
        cells = []
        for ef in efs:
            rec, qps = max((search(name, ef) for _ in range(2)), key=lambda v: v[1])
            cells.append(f"ef {ef}: recall@10 {rec:.4f} {qps:7.0f} qps")
        extra = ""
        if name != "hnswlib":
            idx = built[name]
            extra = f" (bits={idx.bits} rotation={idx.rotation} R={idx.R} L_build={idx.L_build})"
        ratio = f" {min(builds[name]) / ref:5.2f}x hnswlib" if ref else ""
        print(f"  {name:24s} build {min(builds[name]):7.2f} s{ratio}  " + "  ".join(cells) + extra,
              flush=True)
    print(f"load at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
