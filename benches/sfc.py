"""Benchmark ordcore.sfc against hilbertcurve, numpy-hilbert-curve and pymorton.

One run, the same 1,000,000 random points for every library: Hilbert 2-D (nbits 16) and
3-D (nbits 10), Morton 2-D and 3-D. ordcore runs single-threaded (``num_threads=1``) and on
all cores. The pure-Python peers (hilbertcurve, pymorton) are timed on a subsample of
``--sub`` points and scaled per point (printed as such). Writes JSON to bench-results/.

    python benches/sfc.py [--n 1000000] [--sub 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Callable

import numpy as np

from ordcore import sfc


def best_ns_per_point(fn: Callable[[], object], n: int, repeat: int) -> tuple[float, float]:
    """Best-of-``repeat`` (wall, process CPU) nanoseconds per point."""
    fn()  # warm-up (tables, pools)
    wall = cpu = float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        cpu = min(cpu, time.process_time() - c)
        wall = min(wall, time.perf_counter() - t)
    return wall / n * 1e9, cpu / n * 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--sub", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n, sub = args.n, args.sub
    rng = np.random.default_rng(0)
    rows: list[dict[str, object]] = []

    def add(task: str, lib: str, ns: tuple[float, float], points: int, note: str = "") -> None:
        rows.append({"task": task, "library": lib, "ns_per_point": ns[0],
                     "cpu_ns_per_point": ns[1], "points_timed": points, "note": note})

    for d, nbits in [(2, 16), (3, 10)]:
        pts = rng.integers(0, 2**nbits, size=(n, d), dtype=np.int64)
        small = pts[:sub]
        task = f"hilbert {d}D nbits {nbits}"
        add(task, "ordcore 1 thread",
            best_ns_per_point(lambda: sfc.hilbert_encode(pts, nbits, num_threads=1), n,
                              args.repeat), n)
        add(task, f"ordcore {os.cpu_count()} threads",
            best_ns_per_point(lambda: sfc.hilbert_encode(pts, nbits), n, args.repeat), n)
        ref = sfc.hilbert_encode(small, nbits)
        try:
            import hilbert  # numpy-hilbert-curve

            assert np.array_equal(hilbert.encode(small, d, nbits), ref)
            add(task, "numpy-hilbert-curve",
                best_ns_per_point(lambda: hilbert.encode(pts, d, nbits), n, 1), n)
        except ImportError:
            print("numpy-hilbert-curve not installed; skipped")
        try:
            from hilbertcurve.hilbertcurve import HilbertCurve

            hc = HilbertCurve(p=nbits, n=d)
            lst = small.tolist()
            assert hc.distances_from_points(lst) == ref.tolist()
            add(task, "hilbertcurve", best_ns_per_point(
                lambda: hc.distances_from_points(lst), sub, 1), sub,
                f"subsample of {sub} points, scaled per point")
        except ImportError:
            print("hilbertcurve not installed; skipped")

        task = f"morton {d}D nbits {nbits}"
        add(task, "ordcore 1 thread",
            best_ns_per_point(lambda: sfc.morton_encode(pts, nbits, num_threads=1), n,
                              args.repeat), n)
        add(task, f"ordcore {os.cpu_count()} threads",
            best_ns_per_point(lambda: sfc.morton_encode(pts, nbits), n, args.repeat), n)
        try:
            import pymorton

            il = pymorton.interleave2 if d == 2 else pymorton.interleave3
            lst = small.tolist()
            assert [il(*r) for r in lst] == sfc.morton_encode(small, nbits).tolist()
            add(task, "pymorton", best_ns_per_point(lambda: [il(*r) for r in lst], sub, 1),
                sub, f"subsample of {sub} points, scaled per point")
        except ImportError:
            print("pymorton not installed; skipped")

    print(__doc__.splitlines()[0])
    print("wall = best-of wall clock; cpu = process CPU time (all threads), robust to a loaded")
    print("machine; ratios = peer / ordcore single-threaded, on cpu time (peers are 1-thread).")
    print(f"{'task':<22} {'library':<20} {'wall ns/pt':>11} {'cpu ns/pt':>11} {'ratio':>9}  note")
    base: dict[str, float] = {}
    for r in rows:
        if r["library"] == "ordcore 1 thread":
            base[str(r["task"])] = float(r["cpu_ns_per_point"])  # type: ignore[arg-type]
    for r in rows:
        ns = float(r["ns_per_point"])  # type: ignore[arg-type]
        cpu = float(r["cpu_ns_per_point"])  # type: ignore[arg-type]
        ratio = cpu / base[str(r["task"])]
        r["ratio_cpu_vs_ordcore_1_thread"] = ratio
        print(f"{r['task']:<22} {r['library']:<20} {ns:>11.2f} {cpu:>11.2f} {ratio:>8.1f}x"
              f"  {r['note']}")
    out = Path(__file__).resolve().parents[1] / "bench-results"
    out.mkdir(exist_ok=True)
    path = out / "sfc.json"
    path.write_text(json.dumps({"n": n, "sub": sub, "machine": platform.processor()
                                or platform.machine(), "cpus": os.cpu_count(),
                                "rows": rows}, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
