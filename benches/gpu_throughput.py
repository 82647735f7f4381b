"""GPU throughput table for ordcore.gpu (run by benches/gpu_check.sh on a CUDA machine).

Rows (each timed with CUDA events on the current stream, median of several runs after
warm-up; the arrays live on the device, nothing crosses the bus inside a timing):

* Hilbert / Morton encode, 2-D and 3-D, in points per second (uint32 coordinates in, uint64
  indexes out; the per-call range check and its 8-byte flag read are included);
* fwht along the last axis, float16 / bfloat16 / float32, in effective bytes per second
  (bytes read + written) and as a ratio to a device-to-device copy of the same array (the
  bandwidth floor; target on an H200: fwht <= 1.5x the copy time for n <= 8192 in float16);
* code-space top-k (2-bit codes, brute force over the whole code matrix) in queries per
  second against float32 matmul top-k over the same vectors (torch.topk when torch is
  there, else CuPy argsort).

Writes the table as JSON to bench-results/gpu_throughput.json (and $OUT when set).
Usage: python benches/gpu_throughput.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np


def _timeit(cp: Any, fn: Callable[[], Any], reps: int, warmup: int = 2) -> float:
    """Median seconds per call (CUDA events around each call)."""
    for _ in range(warmup):
        fn()
    cp.cuda.Stream.null.synchronize()
    times = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def bench_sfc(cp: Any, quick: bool) -> list[dict[str, Any]]:
    from ordcore.gpu import sfc

    n = 1 << (24 if quick else 27)
    rows = []
    for d, nbits in ((2, 16), (2, 32), (3, 10), (3, 21)):
        pts = cp.random.randint(0, 1 << min(nbits, 31), size=(n, d), dtype=cp.int64).astype(cp.uint32)
        for kind, fn in (("hilbert", sfc.hilbert_encode), ("morton", sfc.morton_encode)):
            t = _timeit(cp, lambda: fn(pts, nbits), reps=5)
            rows.append({"bench": f"{kind}_encode", "D": d, "nbits": nbits, "N": n, "seconds": t,
                         "Gpoints_per_s": n / t / 1e9})
            print(f"{kind:8s} encode  D={d} nbits={nbits:2d}  N={n:>11,d}  {t * 1e3:8.3f} ms"
                  f"  {n / t / 1e9:8.2f} G points/s", flush=True)
        del pts
    return rows


def bench_fwht(cp: Any, quick: bool) -> list[dict[str, Any]]:
    from ordcore.gpu import hadamard

    torch: Any = None
    try:
        import torch as _torch

        torch = _torch if _torch.cuda.is_available() else None
    except ImportError:
        pass
    total_bytes = 1 << (28 if quick else 30)
    rows = []
    sizes = [256, 1024, 4096, 8192, 16384, 32768, 160, 12 * 512]
    dtypes: list[str] = ["float16", "float32"] + (["bfloat16"] if torch is not None else [])
    for dtype in dtypes:
        for n in sizes:
            item = 2 if dtype != "float32" else 4
            nrows = max(1, total_bytes // (item * n))
            if dtype == "bfloat16":
                x = torch.randn(nrows, n, device="cuda", dtype=torch.bfloat16)
                dst = torch.empty_like(x)
                copy = lambda: dst.copy_(x)  # noqa: E731
            else:
                x = cp.random.standard_normal((nrows, n), dtype=cp.float32).astype(dtype)
                dst = cp.empty_like(x)
                copy = lambda: cp.copyto(dst, x)  # noqa: E731
            t_copy = _timeit(cp, copy, reps=10)
            t = _timeit(cp, lambda: hadamard.fwht(x), reps=10)
            nbytes = 2 * nrows * n * item
            rows.append({"bench": "fwht", "dtype": dtype, "n": n, "rows": nrows, "seconds": t,
                         "copy_seconds": t_copy, "GBps": nbytes / t / 1e9, "copy_GBps": nbytes / t_copy / 1e9,
                         "ratio_to_copy": t / t_copy})
            flag = "  (target <= 1.5)" if dtype == "float16" and n <= 8192 and (n & (n - 1)) == 0 else ""
            print(f"fwht {dtype:8s} n={n:6d} rows={nrows:>9,d}  {t * 1e3:8.3f} ms  {nbytes / t / 1e9:8.1f} GB/s"
                  f"   copy {t_copy * 1e3:8.3f} ms  {nbytes / t_copy / 1e9:8.1f} GB/s   x{t / t_copy:5.2f}{flag}",
                  flush=True)
            del x, dst
    return rows


def bench_topk(cp: Any, quick: bool) -> list[dict[str, Any]]:
    from ordcore.gpu import ann

    n, d, b, k = (200_000 if quick else 1_000_000), 768, 1000, 10
    x = cp.random.standard_normal((n, d), dtype=cp.float32)
    q = cp.random.standard_normal((b, d), dtype=cp.float32)
    codes = ann.encode(x, bits=2, metric="cosine")
    qcodes = ann.encode(q, bits=2, metric="cosine")
    rows = []
    t = _timeit(cp, lambda: ann.code_search(qcodes, codes, k, dim=d, bits=2), reps=3, warmup=1)
    rows.append({"bench": "code_topk", "N": n, "D": d, "queries": b, "k": k, "seconds": t, "QPS": b / t})
    print(f"code top-{k}   N={n:,d} D={d} bits=2 queries={b}  {t * 1e3:9.2f} ms  {b / t:12,.0f} QPS", flush=True)
    t2 = _timeit(cp, lambda: ann.candidate_search(x, q, k, metric="cosine", codes=codes, n_candidates=100),
                 reps=3, warmup=1)
    rows.append({"bench": "code_topk+rerank", "N": n, "D": d, "queries": b, "k": k, "seconds": t2, "QPS": b / t2})
    print(f"code top-100 + float rerank to {k}                  {t2 * 1e3:9.2f} ms  {b / t2:12,.0f} QPS", flush=True)
    try:
        import torch

        tx, tq = torch.from_dlpack(x), torch.from_dlpack(q)

        def mm_topk() -> Any:
            return torch.topk(tq @ tx.T, k, dim=1)

        base = "torch matmul + topk"
    except ImportError:
        chunk = max(1, (1 << 28) // b)

        def mm_topk() -> Any:
            out = []
            for s in range(0, n, chunk):
                dd = q @ x[s : s + chunk].T
                out.append(cp.argsort(-dd, axis=1)[:, :k])
            return out

        base = "cupy matmul + argsort"
    t3 = _timeit(cp, mm_topk, reps=3, warmup=1)
    rows.append({"bench": "float32_matmul_topk", "impl": base, "N": n, "D": d, "queries": b, "k": k,
                 "seconds": t3, "QPS": b / t3})
    print(f"float32 {base:24s}                 {t3 * 1e3:9.2f} ms  {b / t3:12,.0f} QPS"
          f"   (code top-k x{t3 / t:.2f})", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller arrays (a smoke run)")
    args = ap.parse_args()
    try:
        import cupy as cp
    except ImportError:
        print("gpu_throughput: CuPy is not installed (pip install 'ordcore[gpu]')")
        return 2
    from ordcore import gpu

    if not gpu.is_available():
        print("gpu_throughput: no usable CUDA device")
        return 2
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    print(f"device: {name}, CuPy {cp.__version__}, Python {platform.python_version()}", flush=True)
    t0 = time.perf_counter()
    gpu.hadamard.fwht(cp.zeros((1, 8), dtype=cp.float32))  # compile the modules up front
    gpu.sfc.hilbert_encode(cp.zeros((1, 2), dtype=cp.uint32), 4)
    gpu.ann.encode(cp.ones((1, 8), dtype=cp.float32))
    print(f"kernel modules built in {time.perf_counter() - t0:.1f} s", flush=True)
    results: dict[str, Any] = {"device": name, "cupy": cp.__version__, "rows": []}
    for fn in (bench_sfc, bench_fwht, bench_topk):
        results["rows"] += fn(cp, args.quick)
        cp.get_default_memory_pool().free_all_blocks()
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    text = json.dumps(results, indent=1)
    (out / "gpu_throughput.json").write_text(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_throughput.json").write_text(text)
    hil = [r["Gpoints_per_s"] for r in results["rows"] if r["bench"] == "hilbert_encode" and r["D"] == 2]
    fw = [r["ratio_to_copy"] for r in results["rows"]
          if r["bench"] == "fwht" and r["dtype"] == "float16" and r["n"] <= 8192 and (r["n"] & (r["n"] - 1)) == 0]
    print(f"\ntargets: Hilbert 2-D encode > 20 G points/s: best {max(hil):.1f} ({'met' if max(hil) > 20 else 'NOT met'}); "
          f"fwht float16 n <= 8192 within 1.5x of copy: worst x{max(fw):.2f} ({'met' if max(fw) <= 1.5 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
