"""Beam-loop check and timing: result/index identity hashes and CPU time of build and
fixed-``ef`` search for ordcore's BQGraphIndex (no peers).

    python benches/ann_beam.py --dataset sift --n 20000 --nq 500            # hashes + times
    python benches/ann_beam.py --dataset sift --n 20000 --check benches/ann_beam_sift20k.json

Prints, per ``bits``, the SHA-256 of the saved index file and of the search results (ids
and distances at each ``ef``), so that a change to the beam loop can be shown not to change
any graph, id or distance; ``--check FILE`` compares with hashes recorded by ``--record
FILE`` and exits 1 on a difference. Times are CPU seconds (``time.process_time``) of the
build (all threads) and of each ``ef``'s search (1 thread), best of ``--reps``. To compare
two builds of the extension, run them alternately (``PYTHONPATH=<copy of an older
python/ordcore's parent>`` for the older one).

Measured (20k rows, 500 queries, ``--bits 4,8 --efs 64,128 --reps 3``, 2 interleaved runs
each at load 2.4-4 on 2 cores; before -> after the 8-byte beam keys, the touched-list
neighbours and the once-hashed prune): SIFT bits=8 search ef 64 23.8-24.1k -> 27.4-28.4k
QPS, ef 128 14.4-15.1k -> 16.4-16.8k; bits=4 ef 64 23.1-25.3k -> 26.0-26.2k; build
2.33-2.49 s -> 2.29-2.38 s. glosses bits=4 ef 64 11.7-12.8k -> 15.6-15.7k, ef 128
7.1-7.9k -> 8.9-9.4k; bits=8 ef 64 14.2-15.0k -> 15.1-16.0k; build bits=4 4.23-4.65 s ->
4.07-4.29 s, bits=8 4.66-4.71 s -> 4.40-4.48 s. Identity hashes unchanged
(``benches/ann_beam_{sift,glosses}20k.json``).

The hashes were re-recorded when 4- and 8-bit searches began to start at the nearest of the
entry and 64 sampled nodes (``search::start_node``): their search results change (recall
within 0.005 either way); every index file and every 2-bit result hash stayed the same.

Re-recorded again when 4- and 8-bit neighbour lists began to be ordered core first after
construction, with the search-time degree bound (``order::auto_degree``, format version 4):
their index files change (same lists, new order, version 4), and so do their ``ef=16``
results (the bound is active there); ``ef=64`` and ``ef=128`` results (bound at or above
R) and every 2-bit hash stayed the same.

Re-recorded once more when the 4- and 8-bit builds began to prune with the query
form of one candidate against the code of the other (``build.rs``, ``prune_by_query``):
the 4- and 8-bit index files and results change; every 2-bit hash stayed the same.

SIFT re-recorded when 4- and 8-bit l2 codes began to store the squared norm of the decoded
vector instead of the exact one (``encode.rs``, see ``sq.rs``): the SIFT 4- and 8-bit index
files and results change; every 2-bit hash and every glosses (cosine) result hash stayed the
same. (The glosses ``4/index`` and ``8/index`` hashes differ from the recorded ones on the
tree before this change as well; their results match.)

Index hashes re-recorded when 4- and 8-bit nodes began to be renumbered breadth-first after
``add`` and ``compact`` (``renumber.rs``, format version 5): the 4- and 8-bit index files
change (nodes in another order, insertion ranks stored); every result hash (4 and 8 bits
with and without rerank, 1 and 2 threads) and every 2-bit hash stayed the same.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ann import load  # noqa: E402

from ordcore import ann  # noqa: E402


def sha(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="sift")
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--nq", type=int, default=500)
    ap.add_argument("--bits", default="2,4,8")
    ap.add_argument("--efs", default="16,64,128")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--record", default=None)
    ap.add_argument("--check", default=None)
    ap.add_argument("--no-hash", action="store_true", help="times only")
    args = ap.parse_args()
    x, q, _, metric = load(args.dataset, args.n, args.nq)
    efs = [int(e) for e in args.efs.split(",")]
    hashes: dict[str, str] = {}
    for bits in [int(b) for b in args.bits.split(",")]:
        builds = []
        for _ in range(args.reps):
            idx = ann.BQGraphIndex(x.shape[1], metric=metric, bits=bits)  # type: ignore[arg-type]
            t = time.process_time()
            idx.add(x, num_threads=args.threads)
            builds.append(time.process_time() - t)
        line = [f"bits={bits} build {min(builds):.3f}s"]
        if not args.no_hash:
            with tempfile.TemporaryDirectory() as d:
                p = os.path.join(d, "index")
                idx.save(p)
                hashes[f"{bits}/index"] = hashlib.sha256(Path(p).read_bytes()).hexdigest()[:16]
        for ef in efs:
            ts = []
            for _ in range(args.reps):
                t = time.process_time()
                ids, ds = idx.search(q, 10, ef_search=ef, num_threads=1)
                ts.append(time.process_time() - t)
            line.append(f"ef={ef} {len(q) / min(ts):.0f} qps")
            hashes[f"{bits}/ef{ef}"] = sha(ids, ds)
            if not args.no_hash:
                ids2, ds2 = idx.search(q, 10, ef_search=ef, num_threads=2, rerank=False)
                hashes[f"{bits}/ef{ef}/code"] = sha(ids2, ds2)
        print("  ".join(line), flush=True)
    if args.no_hash:
        return
    for k, v in hashes.items():
        print(k, v)
    if args.record:
        Path(args.record).write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    if args.check:
        want = json.loads(Path(args.check).read_text())
        bad = [k for k in want if k in hashes and hashes[k] != want[k]]
        print("identity:", "DIFFERS " + ", ".join(bad) if bad else f"same ({len(want)} hashes)")
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
