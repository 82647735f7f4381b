"""Calibration of ``bits="auto"``: the fitness estimate of each code against the recall@10 a
real graph index of that code reaches, per data set and base size.

For each configuration (bits 1/2/4/8, rotation none/hadamard) it prints the estimate
``ordcore.ann.choose_codes`` uses (the share of the exact top-10 found among the code-space
top-``depth`` candidates, :func:`ordcore.ann._estimates`) and the recall@10 of a
``BQGraphIndex`` built with that code at ``ef_search`` 64 and 128.

    python benches/ann_choice.py glosses --n 20000 100000
    python benches/ann_choice.py sift --n 20000 200000 --bits 4 8

With ``--filter``, it measures filtered search instead (a ``bits=2`` index; recall@10 against
exact filtered search and queries per second on 1 thread, per share of allowed ids), around
the switch to the exact scan of the allowed set (``allowed**2 <= 4 * ef * n``):

    python benches/ann_choice.py glosses --n 100000 --filter
"""

from __future__ import annotations

import argparse
import sys
import time
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


def filtered(dataset: str, n: int, nq: int) -> None:
    x, q, _, metric = load(dataset, n, nq)
    idx = ann.BQGraphIndex(x.shape[1], metric=metric, bits=2)  # type: ignore[arg-type]
    idx.add(x)
    n = len(x)
    switch = (4 * 64 * n) ** 0.5
    print(f"# {dataset} n={n}: exact scan below {switch:.0f} allowed ids ({switch / n:.4f})")
    rng = np.random.default_rng(0)
    for share in (0.5, 0.2, 0.1, 1.1 * switch / n, 0.99 * switch / n, 0.05, 0.01, 0.001):
        m = max(1, int(share * n))
        rows = np.sort(rng.choice(n, size=m, replace=False))
        truth = ann.exact_search(x[rows], q, 10, metric=metric)[0]  # type: ignore[arg-type]
        truth = np.where(truth >= 0, rows[np.maximum(truth, 0)], -1)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            found = idx.search(q, 10, filter=rows, num_threads=1)[0]
            times.append(time.perf_counter() - t)
        kk = min(10, m)
        rec = ann.recall_at_k(found[:, :kk], truth[:, :kk])
        path = "scan" if m * m <= 4 * 64 * n else "graph"
        print(f"share={share:.4f} allowed={m:7d} path={path:5s} recall@10={rec:.4f} "
              f"qps={len(q) / min(times):8.0f}", flush=True)


if __name__ == "__main__":
    main()
