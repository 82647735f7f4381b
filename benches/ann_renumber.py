"""Graph-order node numbering (``rust/ordcore-core/src/ann/renumber.rs``): the same graph
searched in insertion numbering and renumbered breadth-first from the entry.

One index is built with ``ORDCORE_ANN_RENUMBER=0`` (insertion numbering), saved, and
renumbered by ``compact()`` (without removals it only renumbers), whose CPU time is the
build-time cost; the file read back gives the unrenumbered copy of the same graph. Searches
(1 thread, CPU time) alternate between the two, point by point, ``--runs`` times; the best
QPS of each is printed with the ratio, and the recall of both (identical results).

    python benches/ann_renumber.py --dataset sift --n 200000 --nq 1000 --efs 16,24,32,48

Measured (2 build threads, load 4, ``--runs 4``): SIFT 200k, ``bits="auto"`` (8 bits), build
22.7 s CPU, renumbering 0.27 s (1.2 %); recall@10 identical in both numberings (0.9481 /
0.9665 / 0.9723 / 0.9832 at ``ef_search`` 16 / 24 / 32 / 48); QPS insertion order 85.1k /
65.7k / 56.4k / 42.2k, renumbered 88.7k / 68.8k / 58.8k / 44.7k (1.042x / 1.046x / 1.042x /
1.059x). Again with ``--runs 6`` at load 1.5: 84.9k / 65.5k / 56.2k / 42.2k against 89.1k /
69.4k / 59.2k / 44.8k (1.050x / 1.059x / 1.053x / 1.062x), renumbering 0.21 s of 22.9 s;
interpolated at recall@10 0.95: 82.9k against 87.1k (1.05x).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ann import load  # noqa: E402

from ordcore import ann  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", choices=["glosses", "sift", "glosses-pca50", "glove50"], default="sift")
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--nq", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--efs", default="16,24,32,48")
    ap.add_argument("--bits", default="auto")
    args = ap.parse_args()
    x, q, gt, metric = load(args.dataset, args.n, args.nq)
    efs = [int(e) for e in args.efs.split(",")]
    bits = args.bits if args.bits == "auto" else int(args.bits)
    os.environ["ORDCORE_ANN_RENUMBER"] = "0"
    idx = ann.BQGraphIndex(x.shape[1], metric=metric, bits=bits)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.process_time()
        idx.add(x, num_threads=args.threads)
        build = time.process_time() - t
    path = Path(tempfile.mkdtemp()) / "i.ordann"
    idx.save(path)
    os.environ["ORDCORE_ANN_RENUMBER"] = "1"
    t = time.process_time()
    idx.compact()
    renumber = time.process_time() - t
    plain = ann.BQGraphIndex.load(path)
    path.unlink()
    print(f"{args.dataset}: n={x.shape[0]} dim={x.shape[1]} metric={metric} bits={idx.bits} "
          f"build {build:.2f} s cpu, renumber {renumber:.3f} s cpu ({100 * renumber / build:.2f} %) "
          f"load={os.getloadavg()[0]:.1f}", flush=True)
    best: dict[tuple[str, int], float] = {}
    recall: dict[tuple[str, int], float] = {}
    for _ in range(args.runs):
        for ef in efs:
            for name, index in (("insertion", plain), ("bfs", idx)):
                t = time.process_time()
                ids = index.search(q, 10, ef_search=ef, num_threads=1)[0]
                qps = len(q) / (time.process_time() - t)
                best[name, ef] = max(best.get((name, ef), 0.0), qps)
                recall[name, ef] = ann.recall_at_k(ids, gt)
    for ef in efs:
        a, b = best["insertion", ef], best["bfs", ef]
        print(f"ef {ef}: recall@10 {recall['insertion', ef]:.4f} / {recall['bfs', ef]:.4f}  "
              f"insertion {a:8.0f} qps  bfs {b:8.0f} qps  ratio {b / a:.3f}", flush=True)


if __name__ == "__main__":
    main()
