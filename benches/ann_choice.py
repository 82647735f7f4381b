"""Calibration of ``bits="auto"``: the fitness estimate of each code against the recall@10 a
real graph index of that code reaches, per data set and base size.

For each configuration (bits 1/2/4/8, rotation none/hadamard) it prints the estimate
``ordcore.ann.choose_codes`` uses (the share of the exact top-10 found among the code-space
top-``depth`` candidates, :func:`ordcore.ann._estimates`) and the recall@10 of a
``BQGraphIndex`` built with that code at ``ef_search`` 64 and 128.

    python benches/ann_choice.py glosses --n 20000 100000
    python benches/ann_choice.py sift --n 20000 200000 --bits 4 8

With ``--filter``, it measures filtered search instead (a ``bits="auto"`` index; both paths,
graph and exact scan of the allowed set, at the same allowed counts: recall@10 against exact
filtered search and CPU-time queries per second on 1 thread), around the switch to the scan
(``allowed**2 <= factor(dim) * ef * n``, ``factor = 4 * (384 / dim) ** 0.75``):

    python benches/ann_choice.py glosses --n 100000 --filter
    python benches/ann_choice.py sift --n 100000 --filter
    python benches/ann_choice.py glove50 --n 100000 --filter
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from ann import load  # noqa: E402

from ordcore import ann  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dataset")
    p.add_argument("--n", type=int, nargs="+", default=[20000])
    p.add_argument("--nq", type=int, default=300)
    p.add_argument("--bits", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--rotation", nargs="+", default=["none", "hadamard"])
    p.add_argument("--no-graph", action="store_true")
    p.add_argument("--filter", action="store_true")
    a = p.parse_args()
    if a.filter:
        for n in a.n:
            filtered(a.dataset, n, a.nq)
        return
    for n in a.n:
        if a.dataset == "random":
            rng = np.random.default_rng(0)
            x = rng.standard_normal((n, 64)).astype(np.float32)
            q = rng.standard_normal((a.nq, 64)).astype(np.float32)
            metric = "l2"
            gt = ann.exact_search(x, q, 10, metric="l2")[0]
        else:
            x, q, gt, metric = load(a.dataset, n, a.nq)
        configs = [(b, r) for b in a.bits for r in a.rotation]
        t = time.perf_counter()
        est, _ = ann._estimates(x, metric, configs, base_size=len(x), seed=0)  # type: ignore[arg-type]
        te = time.perf_counter() - t
        print(f"# {a.dataset} n={len(x)} d={x.shape[1]} {metric} (estimates {te:.1f}s)", flush=True)
        for (b, r), e in zip(configs, est):
            line = f"{a.dataset:14s} n={len(x):7d} bits={b} rot={r:8s} est={e:.4f}"
            if not a.no_graph:
                idx = ann.BQGraphIndex(
                    x.shape[1], metric=metric, bits=b,  # type: ignore[arg-type]
                    rotation=None if r == "none" else "hadamard",
                )
                t = time.perf_counter()
                with __import__("warnings").catch_warnings():
                    __import__("warnings").simplefilter("ignore")
                    idx.add(x)
                tb = time.perf_counter() - t
                rec = [ann.recall_at_k(idx.search(q, 10, ef_search=ef)[0], gt) for ef in (64, 128)]
                line += f" graph@64={rec[0]:.4f} graph@128={rec[1]:.4f} build={tb:.1f}s"
            print(line, flush=True)


def scan_factor(dim: int) -> float:
    """The factor of the switch to the exact scan (``rust/ordcore-core/src/ann/search.rs``,
    ``filter_scan_factor``): ``allowed**2 <= factor * ef * n`` scans."""
    return max(1.0, 4.0 * (384.0 / dim) ** 0.75)


def filtered(dataset: str, n: int, nq: int, ef: int = 64) -> None:
    """Both paths of a filtered search at the same allowed counts (the path forced through
    ``ORDCORE_ANN_FILTER_SCAN_FACTOR``), around the switch: CPU-time queries per second on 1
    thread and recall@10 against exact filtered search; where the two cost the same,
    ``allowed**2 / (ef * n)`` is the factor the switch should use."""
    x, q, _, metric = load(dataset, n, nq)
    idx = ann.BQGraphIndex(x.shape[1], metric=metric)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idx.add(x)
    n = len(x)
    factor = scan_factor(x.shape[1])
    switch = (factor * ef * n) ** 0.5
    print(f"# {dataset} n={n} d={x.shape[1]} bits={idx.bits} rotation={idx.rotation} ef={ef}: "
          f"exact scan below {switch:.0f} allowed ids (factor {factor:.2f})", flush=True)
    rng = np.random.default_rng(0)
    for f in (0.5, 1, 2, 4, 8, 16, 32):
        m = min(n, max(1, int((f * ef * n) ** 0.5)))
        rows = np.sort(rng.choice(n, size=m, replace=False))
        truth = ann.exact_search(x[rows], q, 10, metric=metric)[0]  # type: ignore[arg-type]
        truth = np.where(truth >= 0, rows[np.maximum(truth, 0)], -1)
        kk = min(10, m)
        cells = []
        qps = {}
        for path, forced in (("graph", "0"), ("scan", "1e30")):
            os.environ["ORDCORE_ANN_FILTER_SCAN_FACTOR"] = forced
            try:
                idx.search(q[:20], 10, ef_search=ef, filter=rows, num_threads=1)
                times = []
                for _ in range(2):
                    t = time.process_time()
                    found = idx.search(q, 10, ef_search=ef, filter=rows, num_threads=1)[0]
                    times.append(time.process_time() - t)
            finally:
                del os.environ["ORDCORE_ANN_FILTER_SCAN_FACTOR"]
            qps[path] = len(q) / min(times)
            rec = ann.recall_at_k(found[:, :kk], truth[:, :kk])
            cells.append(f"{path} {qps[path]:7.0f} qps recall@10 {rec:.4f}")
        picked = "scan" if m * m <= factor * ef * n else "graph"
        print(f"allowed={m:7d} allowed^2/(ef n)={m * m / (ef * n):6.2f}  " + "  ".join(cells)
              + f"  graph/scan {qps['graph'] / qps['scan']:5.2f}  rule: {picked}", flush=True)


if __name__ == "__main__":
    main()
