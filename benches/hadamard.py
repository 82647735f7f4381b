"""Speed of ordcore.hadamard.fwht against its peers (float32, one batch of ~64 MiB).

Part 1, interleaved (each repeat runs every contender once on the same data, best of
--reps kept), single-threaded: np.copyto over the same array (the memory-bandwidth floor),
ordcore in place (``fwht(y, out=y)``) and out of place (``out=``), and fht-cpu (SIMD C) in
place and with ``out=``. Ratios: ordcore / fht-cpu (< 1: ordcore faster) and out-of-place
ordcore / memcpy. In-place runs start from the same data every time (restored untimed).
fht-cpu is unnormalized and ordcore runs normalized (the scale is fused), so ordcore does
a little more work; outputs are checked equal up to that scale first. fht-cpu is skipped
with the reason printed when it cannot be imported (pip install fht-cpu).

Part 2: ordcore on all cores, the dense product ``x @ scipy.linalg.hadamard(n)`` (n <= 4096,
timed on a slice of the rows), a NumPy reshape-based FWHT, and the ``hadamard-transform``
package (torch, CPU) when importable; ratios peer / ordcore. JSON goes to
bench-results/hadamard.json.

    python benches/hadamard.py [--mib 64] [--reps 5]
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


def interleaved(fns: dict[str, Callable[[], Any]], reset: Callable[[], None], elems: int,
                reps: int) -> dict[str, float]:
    """Best ns per element of each function, run in turn ``reps`` times, ``reset()``
    (untimed) before each call."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(reps):
        for name, f in fns.items():
            reset()
            t0 = time.perf_counter()
            f()
            best[name] = min(best[name], time.perf_counter() - t0)
    return {k: v / elems * 1e9 for k, v in best.items()}


def fht_cpu_peer() -> tuple[Any, str]:
    try:
        import fht_cpu
    except ImportError as e:
        return None, f"fht-cpu cannot be imported ({e}); pip install fht-cpu"
    from importlib.metadata import version

    return fht_cpu, f"fht-cpu {version('fht-cpu')}"


def part1(sizes: list[int], mib: float, reps: int) -> list[dict[str, Any]]:
    fc, note = fht_cpu_peer()
    print(f"peer: {note}" if fc else f"skipped fht-cpu: {note}")
    rng = np.random.default_rng(0)
    print("single-threaded, float32, ns per element (best of interleaved repeats)")
    head = (f"{'n':>6} {'rows':>6} | {'memcpy':>7} {'ord in':>7} {'ord out':>7} {'fht in':>7} "
            f"{'fht out':>7} | {'in: ord/fht':>11} {'out: ord/fht':>12} {'ord out/memcpy':>14}")
    print(head)
    print("-" * len(head))
    rows_out = []
    for n in sizes:
        rows = max(1, int(mib * 2**20) // 4 // n)
        x = rng.standard_normal((rows, n), dtype=np.float32)
        y = x.copy()
        out = np.empty_like(x)
        if fc is not None:
            want = hadamard.fwht(x[:4], normalized=False)
            got = fc.fht(x[:4].copy(), inplace=True, num_threads=1)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(n))
        fns: dict[str, Callable[[], Any]] = {
            "memcpy": lambda: np.copyto(out, x),
            "ordcore_inplace": lambda: hadamard.fwht(y, out=y, num_threads=1),
            "ordcore_out": lambda: hadamard.fwht(x, out=out, num_threads=1),
        }
        if fc is not None:
            fns["fht_cpu_inplace"] = lambda: fc.fht(y, inplace=True, num_threads=1)
            fns["fht_cpu_out"] = lambda: fc.fht(x, out=out, num_threads=1)
        t = interleaved(fns, lambda: np.copyto(y, x), x.size, reps)
        r: dict[str, Any] = {"n": n, "rows": rows, "ns_per_elem": t}
        fi, fo = t.get("fht_cpu_inplace"), t.get("fht_cpu_out")
        r["ratio_inplace_ordcore_over_fht_cpu"] = t["ordcore_inplace"] / fi if fi else None
        r["ratio_out_ordcore_over_fht_cpu"] = t["ordcore_out"] / fo if fo else None
        r["ratio_out_ordcore_over_memcpy"] = t["ordcore_out"] / t["memcpy"]
        rows_out.append(r)

        def f(v: float | None, w: int, p: int = 3) -> str:
            return f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"

        print(f"{n:>6} {rows:>6} | {f(t['memcpy'], 7)} {f(t['ordcore_inplace'], 7)} "
              f"{f(t['ordcore_out'], 7)} {f(fi, 7)} {f(fo, 7)} | "
              f"{f(r['ratio_inplace_ordcore_over_fht_cpu'], 11, 2)} "
              f"{f(r['ratio_out_ordcore_over_fht_cpu'], 12, 2)} "
              f"{f(r['ratio_out_ordcore_over_memcpy'], 14, 2)}", flush=True)
    return rows_out


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
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    args = ap.parse_args()
    single = part1(args.sizes, args.mib, args.reps)
    print()

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
        "single_threaded_vs_fht_cpu": single,
        "results": results,
    }
    outdir = Path(__file__).resolve().parents[1] / "bench-results"
    outdir.mkdir(exist_ok=True)
    (outdir / "hadamard.json").write_text(json.dumps(meta, indent=2))
    print(f"wrote {outdir / 'hadamard.json'}")


if __name__ == "__main__":
    main()
