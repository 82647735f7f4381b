"""``ordcore demo``: every module of ordcore on the bundled real data, in well under a minute.

1. A binary-quantized graph index over 10,000 real sentence embeddings: build time,
   memory against the float vectors, recall@10 and QPS against exact search, and three
   queries with the texts they retrieve.
2. Packing 22,149 real man-page token counts at 2,048 and 8,192 tokens: LPFHP, item-wise
   best-fit decreasing, and no packing.
3. The locality of every patch scan order on a 14x14 grid (a ViT-B/16 at 224 px).
4. A randomized Hadamard rotation of the embeddings: round-trip error and throughput.
"""

from __future__ import annotations

import time
from typing import get_args

import numpy as np

from ordcore import ann, datasets, hadamard, packing, sfc
from ordcore._text import table

__all__ = ["run_demo"]


def _section(title: str) -> None:
    print(f"\n== {title} ==")


def _demo_index(num_threads: int | None) -> None:
    g = datasets.load_glosses()
    base = g.base.astype(np.float32)
    queries = g.queries.astype(np.float32)
    _section(f"1. BQ graph index: {len(base):,} WordNet gloss embeddings, dim {base.shape[1]}")
    index = ann.BQGraphIndex(base.shape[1], metric="cosine", bits=2, R=32, L_build=64)
    t0 = time.perf_counter()
    index.add(base, num_threads=num_threads)
    build_s = time.perf_counter() - t0
    mem = index.memory_usage()
    hot = mem["codes"] + mem["graph"]
    print(f"build time {build_s:.2f} s ({len(base) / build_s:,.0f} vectors/s)")
    print(
        f"hot-path memory (codes + graph) {hot / 2**20:.2f} MiB vs float32 vectors "
        f"{base.nbytes / 2**20:.2f} MiB ({base.nbytes / hot:.1f}x smaller)"
    )
    t0 = time.perf_counter()
    truth, _ = ann.exact_search(base, queries, 10, metric="cosine")
    exact_qps = len(queries) / (time.perf_counter() - t0)
    rows = []
    for ef in (16, 32, 64, 128):
        index.search(queries[:8], k=10, ef_search=ef, num_threads=num_threads)  # warm-up
        t0 = time.perf_counter()
        found, _ = index.search(queries, k=10, ef_search=ef, num_threads=num_threads)
        qps = len(queries) / (time.perf_counter() - t0)
        rows.append([str(ef), f"{ann.recall_at_k(found, truth):.3f}", f"{qps:,.0f}"])
    print(table(["ef_search", "recall@10", "QPS"], rows))
    print(f"exact search (brute force): {exact_qps:,.0f} QPS")
    found, dists = index.search(queries[:3], k=3, ef_search=64)
    for q in range(3):
        print(f'\nquery: "{g.query_texts[q]}"')
        for rank, (i, d) in enumerate(zip(found[q], dists[q]), 1):
            print(f'  {rank}. ({d:.3f}) "{g.base_texts[i]}"')


def _demo_packing() -> None:
    lengths = datasets.load_doc_lengths()
    _section(
        f"2. Sequence packing: {len(lengths):,} real man pages, "
        f"{int(lengths.sum()):,} tokens (cl100k_base)"
    )
    rows = []
    for max_len in (2048, 8192):
        unpacked = int(np.ceil(lengths / max_len).sum())
        padding = 1 - lengths.sum() / (unpacked * max_len)
        rows.append([str(max_len), "none (one row per chunk)", f"{unpacked:,}", f"{padding:.2%}", "-"])
        for algorithm in ("lpfhp", "bfd"):
            t0 = time.perf_counter()
            plan = packing.pack(lengths, max_len, algorithm=algorithm, overlong="split")
            ms = (time.perf_counter() - t0) * 1e3
            stats = plan.stats
            rows.append(
                [
                    str(max_len),
                    algorithm,
                    f"{stats.num_packs:,}",
                    f"{1 - stats.efficiency:.2%}",
                    f"{ms:.1f} ms",
                ]
            )
    print("long documents are split into max_len fragments (overlong='split')")
    print(table(["max_len", "packing", "rows", "padding", "time"], rows))


def _demo_scan() -> None:
    _section("3. Patch scan orders on a 14x14 grid")
    rows = []
    for kind in get_args(sfc.ScanKind):
        loc = sfc.locality(sfc.scan_order(14, 14, kind), 14, 14)
        values = loc._asdict()
        rows.append([kind] + [f"{v:.3f}" if isinstance(v, float) else str(v) for v in values.values()])
    print(table(["order", *sfc.Locality._fields], rows))


def _demo_hadamard() -> None:
    g = datasets.load_glosses()
    x = g.base.astype(np.float32)
    n = x.shape[1]
    _section(f"4. Randomized Hadamard rotation of the embeddings (n = {n})")
    rot = hadamard.RandomizedHadamard(n, seed=0, blocks=2)
    y = rot.forward(x)
    t0 = time.perf_counter()
    repeats = 5
    for _ in range(repeats):
        y = rot.forward(x)
    seconds = (time.perf_counter() - t0) / repeats
    back = rot.inverse(y)
    err = float(np.max(np.abs(back - x)))
    norm_err = float(np.max(np.abs(np.linalg.norm(y, axis=1) - np.linalg.norm(x, axis=1))))
    print(f"two-block rotation of {x.shape[0]:,} x {n} float32: {seconds * 1e3:.2f} ms")
    print(f"throughput {x.nbytes / seconds / 1e9:.2f} GB/s, {x.shape[0] / seconds:,.0f} rows/s")
    print(f"max |inverse(forward(x)) - x| = {err:.2e}; max norm change {norm_err:.2e}")


def run_demo(num_threads: int | None = None) -> int:
    """Run the four demonstrations and print their tables. Returns 0."""
    t0 = time.perf_counter()
    _demo_index(num_threads)
    _demo_packing()
    _demo_scan()
    _demo_hadamard()
    print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s")
    return 0
