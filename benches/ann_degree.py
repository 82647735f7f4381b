"""The search-time degree bound of ``BQGraphIndex.search`` (``degree=``), measured on one
index: full neighbour lists (``degree=R``, what searches did before the bound) against
rules ``max(D, f * ef)`` and the automatic bound (``degree=None``), interleaved point by
point, best of ``--reps`` CPU-time runs at 1 thread, QPS at recall@10 0.90 / 0.95 / 0.98
interpolated over the ``--efs`` sweep as ``benches/ann.py`` does.

    python benches/ann_degree.py --dataset glosses --bits 4 --rotation hadamard --rerank-dtype float16
    python benches/ann_degree.py --dataset sift --rules auto,full,27/2,27/3,27/4

A rule ``D/f`` expands ``max(D, f * ef)`` neighbours per node; ``full`` every neighbour;
``auto`` the index's own bound (``max(index.search_degree, 3 * ef)``).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ann import load, qps_at  # noqa: E402

from ordcore import ann  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="glosses")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--nq", type=int, default=500)
    ap.add_argument("--bits", default="auto")
    ap.add_argument("--rotation", default="auto", help="auto, none or hadamard")
    ap.add_argument("--rerank-dtype", default="float32")
    ap.add_argument("--rules", default="auto,full")
    ap.add_argument("--efs", default="10,12,14,16,20,24,32,48")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    x, q, gt, metric = load(args.dataset, args.n, args.nq)
    bits = args.bits if args.bits == "auto" else int(args.bits)
    rotation = None if args.rotation == "none" else args.rotation
    idx = ann.BQGraphIndex(x.shape[1], metric=metric, bits=bits, rotation=rotation,  # type: ignore[arg-type]
                           rerank_dtype=args.rerank_dtype)  # type: ignore[arg-type]
    idx.add(x)
    print(f"{args.dataset} n={len(x)} bits={idx.bits} rotation={idx.rotation} rerank_dtype={idx.rerank_dtype} "
          f"R={idx.R} search_degree={idx.search_degree}", flush=True)
    rules = args.rules.split(",")
    efs = [int(e) for e in args.efs.split(",")]

    def degree(rule: str, ef: int) -> int | None:
        if rule == "auto":
            return None
        if rule == "full":
            return idx.R
        d, f = rule.split("/")
        return max(int(d), int(float(f) * ef))

    best: dict[tuple[str, int], tuple[float, float]] = {}
    for _ in range(args.reps):
        for ef in efs:
            for rule in rules:
                t = time.process_time()
                ids = idx.search(q, 10, ef_search=ef, num_threads=1, degree=degree(rule, ef))[0]
                s = time.process_time() - t
                old = best.get((rule, ef), (0.0, 0.0))
                best[(rule, ef)] = (ann.recall_at_k(ids, gt), max(old[1], len(q) / s))
    for rule in rules:
        curve = [{"recall": best[(rule, ef)][0], "qps": best[(rule, ef)][1]} for ef in efs]
        at = " ".join(f"{(qps_at(curve, t) or 0) / 1000:6.1f}k" for t in (0.90, 0.95, 0.98))
        pts = " ".join(f"{ef}:{best[(rule, ef)][0]:.3f}/{best[(rule, ef)][1] / 1000:.0f}k" for ef in efs)
        print(f"  {rule:8s} QPS@0.90/0.95/0.98 {at}   {pts}")


if __name__ == "__main__":
    main()
