"""ordcore.distributed.ShardedIndex with 1, 2 and 4 shards against the single BQGraphIndex.

One process, one local Ray cluster, the same data: build time, QPS and recall@10 over an
``ef_search`` sweep (single index and sharded index interleaved point by point), and the
cost of a restart (a killed shard actor: time until the next search answers, against a
normal search). Writes ``bench-results/distributed-<dataset>.json``.

    python benches/distributed.py                       # SIFT 50k, 1000 queries
    python benches/distributed.py --dataset glosses --n 20000

On a machine with few cores this measures overhead, not speed-up: every shard competes for
the same cores, and a query pays one actor call per shard plus the merge. Sharding pays off
when shards sit on separate nodes (see docs/scale-out.md); the recall gain (each shard
searches its part with the full beam) shows anywhere.
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


def load(dataset: str, n: int, nq: int) -> tuple[Any, Any, Any, str]:
    base = np.load(DATA / f"{dataset}_base.npy", mmap_mode="r")
    x = np.ascontiguousarray(base[:n]).astype(np.float32)
    q = np.load(DATA / f"{dataset}_queries.npy")[:nq].astype(np.float32)
    metric = "cosine" if dataset == "glosses" else "l2"
    gt = ann.exact_search(x, q, K, metric)[0]
    return x, q, gt, metric


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def best_of(fn: Callable[[], Any], reps: int) -> tuple[float, Any]:
    runs = [timed(fn) for _ in range(reps)]
    return min(r[0] for r in runs), runs[0][1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dataset", default="sift", choices=["sift", "glosses"])
    p.add_argument("--n", type=int, default=50_000)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--ef", type=int, nargs="+", default=[10, 32, 64])
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    from ordcore.distributed import ShardedIndex

    cpus = os.cpu_count() or 1
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    x, q, gt, metric = load(args.dataset, args.n, args.queries)
    params: dict[str, Any] = {"metric": metric}
    if args.dataset == "sift":
        params["rotation"] = "hadamard"
    print(f"{args.dataset} n={x.shape[0]} dim={x.shape[1]} queries={q.shape[0]} cpus={cpus}")

    build_single, single = timed(lambda: _single(x, params))
    results: dict[str, Any] = {"dataset": args.dataset, "n": x.shape[0], "cpus": cpus,
                               "single": {"build_s": build_single}, "sharded": {}}
    print(f"single index: build {build_single:.2f} s")
    print(f"{'shards':>6} {'build s':>8} {'build/1':>8} {'ef':>4} {'recall 1':>9} "
          f"{'recall S':>9} {'QPS 1':>9} {'QPS S':>9} {'QPS S/1':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for s in args.shards:
            ix = ShardedIndex(x.shape[1], s, path=Path(tmp) / f"s{s}",
                              num_cpus_per_shard=cpus / s, **params)
            build_s, _ = timed(lambda: ix.add(x))
            rows = []
            for ef in args.ef:
                t1, r1 = best_of(lambda: single.search(q, K, ef_search=ef), args.reps)
                ts, rs = best_of(lambda: ix.search(q, K, ef_search=ef), args.reps)
                rec1, recs = ann.recall_at_k(r1[0], gt), ann.recall_at_k(rs[0], gt)
                qps1, qpss = q.shape[0] / t1, q.shape[0] / ts
                rows.append({"ef": ef, "recall_single": rec1, "recall_sharded": recs,
                             "qps_single": qps1, "qps_sharded": qpss})
                print(f"{s:>6} {build_s:>8.2f} {build_s / build_single:>8.2f} {ef:>4} "
                      f"{rec1:>9.3f} {recs:>9.3f} {qps1:>9.0f} {qpss:>9.0f} {qpss / qps1:>8.2f}")
            # restart cost: kill shard 0, time the next search (restart + reload + retry)
            ef = args.ef[-1]
            normal, want = best_of(lambda: ix.search(q, K, ef_search=ef), args.reps)
            ray.kill(ix.actors[0], no_restart=False)
            after, got = timed(lambda: ix.search(q, K, ef_search=ef))
            same = bool((got[0] == want[0]).all())
            print(f"{'':>6} restart of shard 0: next search {after:.2f} s vs {normal:.3f} s "
                  f"normally (+{after - normal:.2f} s), same answer: {same}")
            results["sharded"][str(s)] = {"build_s": build_s, "points": rows,
                                          "search_after_restart_s": after,
                                          "search_normal_s": normal, "same_after_restart": same}
            ix.close()
    results["merge"] = merge_table()
    OUT.mkdir(exist_ok=True)
    out = OUT / f"distributed-{args.dataset}.json"
    out.write_text(json.dumps(results, indent=2))
    print(f"wrote {out}")
    ray.shutdown()


def merge_table(nq: int = 10_000) -> list[dict[str, float]]:
    """The driver's merge alone: merge_topk against sorting all num_shards * k candidates
    by (distance, id), 10,000 queries, k = 10, interleaved, best of 3."""
    from ordcore.distributed import merge_topk

    def full_sort(ids: list[Any], ds: list[Any], k: int) -> Any:
        a, d = np.concatenate(ids, 1), np.concatenate(ds, 1)
        o = np.lexsort((a, d), axis=1)[:, :k]
        return np.take_along_axis(a, o, 1), np.take_along_axis(d, o, 1)

    rng = np.random.default_rng(0)
    rows = []
    print(f"{'shards':>6} {'merge q/s':>10} {'full sort q/s':>14} {'ratio':>6}")
    for s in (4, 20, 100, 400):
        ids = [rng.integers(0, 1 << 40, (nq, K)) for _ in range(s)]
        ds = [np.sort(rng.random((nq, K), dtype=np.float32), 1) for _ in range(s)]
        t_m = t_f = float("inf")
        for _ in range(3):
            t_m = min(t_m, timed(lambda: merge_topk(ids, ds, K))[0])
            t_f = min(t_f, timed(lambda: full_sort(ids, ds, K))[0])
        rows.append({"shards": s, "merge_qps": nq / t_m, "full_sort_qps": nq / t_f})
        print(f"{s:>6} {nq / t_m:>10.0f} {nq / t_f:>14.0f} {t_f / t_m:>6.1f}")
    return rows


def _single(x: Any, params: dict[str, Any]) -> ann.BQGraphIndex:
    ix = ann.BQGraphIndex(x.shape[1], **params)
    ix.add(x)
    return ix


if __name__ == "__main__":
    main()
