"""Speed of ordcore.hadamard.fwht and RandomizedHadamard against their peers.

Part 1, interleaved (each repeat runs every contender once on the same data; the best and
the median of --reps are kept), single-threaded, float32 and float64, for every size in
--sizes and two batch shapes (a batch of about --mib MiB, and --small-rows rows per call,
called repeatedly): np.copyto over the same array (the memory-bandwidth floor), ordcore in
place (``fwht(y, out=y)``) and out of place (``out=``), fht-cpu (SIMD C) in place and with
``out=`` (fht-cpu copies, then transforms), and a one-block ``RandomizedHadamard`` in place
and with ``out=`` (sign flips and scale fused into the transform), and its inverse in place
(the last sign flip fused into the transform's last pass), and the same rotation as a
fht-cpu user writes it (``np.multiply`` by the scaled signs, then fht-cpu in place;
"fht rot"). Ratios: ordcore / fht-cpu (< 1: ordcore faster; "rot in/fht" sets the
rotation against fht-cpu's bare transform, "rot/fhtrot" against fht-cpu's rotation) and
out-of-place ordcore / memcpy. ``--aligned`` runs part 1 on arrays that start on a 64-byte
boundary (NumPy's large arrays start 16 bytes past one, so half of every contender's
32-byte loads and stores span two cache lines; ordcore's own results are allocated aligned). In-place runs start from
the same data every time (restored untimed). fht-cpu is unnormalized; ordcore runs
unnormalized here too (normalized costs the same: the scale rides along with the first
pass), and outputs are checked equal first. fht-cpu is skipped with the reason printed when
it cannot be imported (pip install fht-cpu). The load average is printed before and after
(the numbers are only as quiet as the machine).

Part 2 (--part2): ordcore on all cores, the dense product ``x @ scipy.linalg.hadamard(n)``
(n <= 4096, timed on a slice of the rows), a NumPy reshape-based FWHT, and the
``hadamard-transform`` package (torch, CPU) when importable; ratios peer / ordcore. JSON
goes to bench-results/hadamard.json.

    python benches/hadamard.py [--mib 32] [--reps 5] [--sizes 256 4096 32768]
        [--dtypes float32 float64] [--small-rows 8] [--part2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.linalg

from ordcore import hadamard

SIZES = [2, 4, 8, 16, 64, 256, 1024, 4096, 32768, 262144, 1048576]


def interleaved(fns: dict[str, Callable[[], Any]], reset: Callable[[], None], elems: int,
                reps: int, calls: int = 1) -> dict[str, tuple[float, float]]:
    """(best, median) ns per element of each function, run in turn ``reps`` times
    (``calls`` calls per timing), ``reset()`` (untimed) before each timing."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for name, f in fns.items():
            reset()
            t0 = time.perf_counter()
            for _ in range(calls):
                f()
            times[name].append(time.perf_counter() - t0)
    scale = 1e9 / (elems * calls)
    return {k: (min(v) * scale, statistics.median(v) * scale) for k, v in times.items()}


def fht_cpu_peer() -> tuple[Any, str]:
    try:
        import fht_cpu
    except ImportError as e:
        return None, f"fht-cpu cannot be imported ({e}); pip install fht-cpu"
    from importlib.metadata import version

    return fht_cpu, f"fht-cpu {version('fht-cpu')}"


def load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def aligned_like(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` starting on a 64-byte boundary (NumPy's large arrays start 16 bytes
    past one)."""
    buf = np.empty(a.nbytes + 64, dtype=np.uint8)
    off = -buf.ctypes.data % 64
    b = buf[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
    b[...] = a
    return b


def part1(sizes: list[int], mib: float, reps: int, dtypes: list[str],
          small_rows: int, aligned: bool = False) -> list[dict[str, Any]]:
    fc, note = fht_cpu_peer()
    print(f"peer: {note}" if fc else f"skipped fht-cpu: {note}")
    print(f"load average before: {load()}")
    rng = np.random.default_rng(0)
    print("single-threaded, ns per element: best (median) of interleaved repeats")
    head = (f"{'dtype':>7} {'n':>7} {'rows':>7} | {'memcpy':>6} {'ord in':>6} {'fht in':>6} "
            f"{'ord out':>7} {'fht out':>7} {'rot in':>6} {'inv in':>6} {'rot out':>7} | "
            f"{'in o/f':>13} {'out o/f':>7} {'out/memcpy':>13} {'rot in/fht':>10} "
            f"{'inv in/fht':>10} {'rot out/mc':>10} {'fht rot':>7} {'rot/fhtrot':>10}")
    print(head)
    print("-" * len(head))
    rows_out = []
    for dt_name in dtypes:
        dt = np.dtype(dt_name)
        for n in sizes:
            big = max(1, int(mib * 2**20) // dt.itemsize // n)
            for rows in dict.fromkeys([big, min(big, small_rows)]):
                calls = max(1, (1 << 20) // (rows * n)) if rows < big else 1
                x = rng.standard_normal((rows, n)).astype(dt)
                y = x.copy()
                out = np.empty_like(x)
                if aligned:
                    x, y, out = aligned_like(x), aligned_like(y), aligned_like(out)
                rot = hadamard.RandomizedHadamard(n, seed=1, dtype=dt)
                if fc is not None:
                    want = hadamard.fwht(x[:4], normalized=False)
                    got = fc.fht(x[:4].copy(), inplace=True, num_threads=1)
                    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(n))
                fns: dict[str, Callable[[], Any]] = {
                    "memcpy": lambda: np.copyto(out, x),
                    "ordcore_inplace": lambda: hadamard.fwht(y, out=y, normalized=False,
                                                             num_threads=1),
                    "ordcore_out": lambda: hadamard.fwht(x, out=out, normalized=False,
                                                         num_threads=1),
                    "rotation_inplace": lambda: rot.forward(y, out=y, num_threads=1),
                    "rotation_inverse_inplace": lambda: rot.inverse(y, out=y, num_threads=1),
                    "rotation_out": lambda: rot.forward(x, out=out, num_threads=1),
                }
                if fc is not None:
                    # The rotation a fht-cpu user writes: the signs (scale folded in), then
                    # the transform, in place.
                    ds = (rot.signs(0) / np.sqrt(n)).astype(dt)

                    def fht_rotation() -> None:
                        np.multiply(y, ds, out=y)
                        fc.fht(y, inplace=True, num_threads=1)

                    yy = x[:4].copy()
                    np.multiply(yy, ds, out=yy)
                    np.testing.assert_allclose(fc.fht(yy, inplace=True, num_threads=1),
                                               rot.forward(x[:4]), rtol=1e-4, atol=1e-4)
                    fns["fht_cpu_inplace"] = lambda: fc.fht(y, inplace=True, num_threads=1)
                    fns["fht_cpu_out"] = lambda: fc.fht(x, out=out, num_threads=1)
                    fns["fht_cpu_rotation_inplace"] = fht_rotation
                t = interleaved(fns, lambda: np.copyto(y, x), x.size, reps, calls)
                b = {k: v[0] for k, v in t.items()}
                med = {k: v[1] for k, v in t.items()}
                r: dict[str, Any] = {"dtype": dt_name, "n": n, "rows": rows, "calls": calls,
                                     "ns_per_elem_best": b, "ns_per_elem_median": med}
                fi, fo = b.get("fht_cpu_inplace"), b.get("fht_cpu_out")

                def ratio(num: str, den: str, d: dict[str, float]) -> float | None:
                    return d[num] / d[den] if den in d else None

                r["ratio_inplace_ordcore_over_fht_cpu"] = ratio("ordcore_inplace", "fht_cpu_inplace", b)
                r["ratio_inplace_ordcore_over_fht_cpu_median"] = ratio(
                    "ordcore_inplace", "fht_cpu_inplace", med)
                r["ratio_out_ordcore_over_fht_cpu"] = ratio("ordcore_out", "fht_cpu_out", b)
                r["ratio_out_ordcore_over_memcpy"] = ratio("ordcore_out", "memcpy", b)
                r["ratio_out_ordcore_over_memcpy_median"] = ratio("ordcore_out", "memcpy", med)
                r["ratio_rotation_inplace_over_fht_cpu"] = ratio(
                    "rotation_inplace", "fht_cpu_inplace", b)
                r["ratio_rotation_inplace_over_fht_cpu_rotation"] = ratio(
                    "rotation_inplace", "fht_cpu_rotation_inplace", b)
                r["ratio_rotation_inverse_inplace_over_fht_cpu"] = ratio(
                    "rotation_inverse_inplace", "fht_cpu_inplace", b)
                r["ratio_rotation_out_over_memcpy"] = ratio("rotation_out", "memcpy", b)
                rows_out.append(r)

                def f(v: float | None, w: int, p: int = 3) -> str:
                    return f"{v:>{w}.{p}f}" if v is not None else f"{'-':>{w}}"

                def pair(a: float | None, m: float | None) -> str:
                    return f"{f(a, 5, 2)} ({f(m, 5, 2)})"

                print(f"{dt_name:>7} {n:>7} {rows:>7} | {f(b['memcpy'], 6)} "
                      f"{f(b['ordcore_inplace'], 6)} {f(fi, 6)} {f(b['ordcore_out'], 7)} "
                      f"{f(fo, 7)} {f(b['rotation_inplace'], 6)} "
                      f"{f(b['rotation_inverse_inplace'], 6)} {f(b['rotation_out'], 7)} | "
                      f"{pair(r['ratio_inplace_ordcore_over_fht_cpu'], r['ratio_inplace_ordcore_over_fht_cpu_median'])} "
                      f"{f(r['ratio_out_ordcore_over_fht_cpu'], 7, 2)} "
                      f"{pair(r['ratio_out_ordcore_over_memcpy'], r['ratio_out_ordcore_over_memcpy_median'])} "
                      f"{f(r['ratio_rotation_inplace_over_fht_cpu'], 10, 2)} "
                      f"{f(r['ratio_rotation_inverse_inplace_over_fht_cpu'], 10, 2)} "
                      f"{f(r['ratio_rotation_out_over_memcpy'], 10, 2)} "
                      f"{f(b.get('fht_cpu_rotation_inplace'), 7)} "
                      f"{f(r['ratio_rotation_inplace_over_fht_cpu_rotation'], 10, 2)}", flush=True)
    print(f"load average after: {load()}")
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
    ap.add_argument("--mib", type=float, default=32.0)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=SIZES)
    ap.add_argument("--dtypes", nargs="*", default=["float32", "float64"],
                    choices=["float32", "float64"])
    ap.add_argument("--small-rows", type=int, default=8,
                    help="rows per call of the small-batch shape (called repeatedly)")
    ap.add_argument("--part2", action="store_true", help="also run part 2 (all cores, peers)")
    ap.add_argument("--aligned", action="store_true",
                    help="part 1 on arrays starting on a 64-byte boundary, for every contender "
                         "(NumPy's large arrays start 16 bytes past one; torch's are aligned)")
    args = ap.parse_args()
    print(f"arrays: {'64-byte aligned' if args.aligned else 'as NumPy allocates them'}")
    single = part1(args.sizes, args.mib, args.reps, args.dtypes, args.small_rows, args.aligned)
    print()
    results: list[dict[str, Any]] = []
    if args.part2:
        results = part2(args)
    meta = {
        "bench": "hadamard",
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "batch_mib": args.mib,
        "aligned": args.aligned,
        "reps": args.reps,
        "single_threaded_vs_fht_cpu": single,
        "results": results,
    }
    outdir = Path(__file__).resolve().parents[1] / "bench-results"
    outdir.mkdir(exist_ok=True)
    (outdir / "hadamard.json").write_text(json.dumps(meta, indent=2))
    print(f"wrote {outdir / 'hadamard.json'}")


def part2(args: argparse.Namespace) -> list[dict[str, Any]]:
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
    return results


if __name__ == "__main__":
    main()
