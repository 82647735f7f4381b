"""Speed of ordcore.hadamard.fwht against its peers (float32, one batch of ~64 MiB).

Columns (ns per element, best of --reps runs; ordcore and hadamard-transform normalized): np.copyto over the same array (the memory
bandwidth floor), ordcore.fwht single-threaded and on all cores (writing into a
preallocated ``out``), the dense product ``x @ scipy.linalg.hadamard(n)`` (n <= 4096, timed
on a slice of the rows), a NumPy reshape-based FWHT, and the ``hadamard-transform`` package
(torch, CPU) when torch is importable. Ratios: peer time / ordcore time (single-threaded
ordcore for the copy ratio). JSON goes to bench-results/hadamard.json.

    python benches/hadamard.py [--mib 64] [--reps 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.linalg

from ordcore import hadamard

SIZES = [64, 256, 1024, 4096, 32768]


def best_ns_per_elem(fn: Callable[[], Any], elems: int, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best / elems * 1e9


def numpy_fwht(x: np.ndarray) -> np.ndarray:
    """Reshape-based radix-2 FWHT (Sylvester order), unnormalized."""
    rows, n = x.shape
    y = x
    h = 1
    while h < n:
        y = y.reshape(rows, n // (2 * h), 2, h)
        a, b = y[:, :, 0, :], y[:, :, 1, :]
        y = np.stack((a + b, a - b), axis=2)
        h *= 2
    return y.reshape(rows, n)


def torch_peer() -> tuple[Callable[[np.ndarray], Any] | None, str]:
    try:
        import torch
    except ImportError:
        return None, "torch is not installed (hadamard-transform needs it)"
    try:
        from hadamard_transform import hadamard_transform
    except ImportError:
        return None, "hadamard-transform is not installed (pip install hadamard-transform)"

    def run(x: np.ndarray) -> Any:
        with torch.no_grad():
            return hadamard_transform(torch.from_numpy(x))

    return run, f"hadamard-transform with torch {torch.__version__} ({torch.get_num_threads()} threads)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=float, default=64.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    args = ap.parse_args()

    peer, peer_note = torch_peer()
    print(f"peer hadamard-transform: {peer_note}")
    rng = np.random.default_rng(0)
    results: list[dict[str, Any]] = []
    header = (f"{'n':>6} {'rows':>6} | {'copy':>6} {'ord 1t':>7} {'ord all':>7} {'dense':>8} "
              f"{'numpy':>7} {'h-t':>7} | {'ord/copy':>8} {'dense/ord':>9} {'numpy/ord':>9} {'h-t/ord':>8}")
    print("ns per element, float32")
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        rows = max(1, int(args.mib * 2**20) // 4 // n)
        x = rng.standard_normal((rows, n), dtype=np.float32)
        out = np.empty_like(x)
        elems = x.size
        r: dict[str, Any] = {"n": n, "rows": rows, "dtype": "float32"}
        r["copy"] = best_ns_per_elem(lambda: np.copyto(out, x), elems, args.reps)
        r["ordcore_1t"] = best_ns_per_elem(
            lambda: hadamard.fwht(x, out=out, num_threads=1), elems, args.reps)
        r["ordcore_all"] = best_ns_per_elem(
            lambda: hadamard.fwht(x, out=out), elems, args.reps)
        r["ordcore_alloc"] = best_ns_per_elem(
            lambda: hadamard.fwht(x), elems, args.reps)
        if n <= 4096:
            sub = x[: max(1, min(rows, (1 << 22) // n))]
            h = scipy.linalg.hadamard(n).astype(np.float32)
            r["dense"] = best_ns_per_elem(lambda: sub @ h, sub.size, args.reps)
        else:
            r["dense"] = None
        sub = x[: max(1, rows // 4)]
        r["numpy"] = best_ns_per_elem(lambda: numpy_fwht(sub), sub.size, args.reps)
        if peer is not None:
            peer(x[:1])
            r["hadamard_transform"] = best_ns_per_elem(lambda: peer(x), elems, args.reps)
        else:
            r["hadamard_transform"] = None
        o1 = r["ordcore_1t"]
        r["ratio_ordcore_1t_over_copy"] = o1 / r["copy"]
        r["ratio_dense_over_ordcore"] = r["dense"] / r["ordcore_all"] if r["dense"] else None
        r["ratio_numpy_over_ordcore"] = r["numpy"] / r["ordcore_all"]
        ht = r["hadamard_transform"]
        r["ratio_hadamard_transform_over_ordcore"] = ht / r["ordcore_all"] if ht else None
        results.append(r)

        def f(v: float | None, w: int, p: int = 3) -> str:
            return f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"

        print(f"{n:>6} {rows:>6} | {f(r['copy'], 6)} {f(o1, 7)} {f(r['ordcore_all'], 7)} "
              f"{f(r['dense'], 8, 2)} {f(r['numpy'], 7, 2)} {f(ht, 7, 2)} | "
              f"{f(r['ratio_ordcore_1t_over_copy'], 8, 2)} {f(r['ratio_dense_over_ordcore'], 9, 1)} "
              f"{f(r['ratio_numpy_over_ordcore'], 9, 1)} {f(r['ratio_hadamard_transform_over_ordcore'], 8, 1)}")
    meta = {
        "bench": "hadamard",
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "hadamard_transform": peer_note,
        "batch_mib": args.mib,
        "reps": args.reps,
        "results": results,
    }
    outdir = Path(__file__).resolve().parents[1] / "bench-results"
    outdir.mkdir(exist_ok=True)
    (outdir / "hadamard.json").write_text(json.dumps(meta, indent=2))
    print(f"wrote {outdir / 'hadamard.json'}")


if __name__ == "__main__":
    main()
