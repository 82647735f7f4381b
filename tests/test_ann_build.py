"""Construction defaults of ``BQGraphIndex``: ``R`` by dimension and ``L_build``."""

from __future__ import annotations

import numpy as np

from ordcore import ann


def test_default_degree_and_beam() -> None:
    # 64 links a node, 56 below 64 dimensions (where the lists dominate the memory); the
    # construction beam 64 (128 before).
    for dim, r in ((2, 56), (50, 56), (63, 56), (64, 64), (128, 64), (384, 64)):
        idx = ann.BQGraphIndex(dim, metric="l2", bits=4)
        assert (idx.R, idx.L_build) == (r, 64), dim
    assert ann.BQGraphIndex(50, metric="l2", R=64).R == 64
    assert ann.BQGraphIndex(384, metric="l2", R=32, L_build=200).L_build == 200


def test_default_degree_sets_the_graph_memory() -> None:
    # The graph holds R links and a degree per node: (R + 1) * 4 bytes a row.
    x = np.random.default_rng(0).standard_normal((300, 50)).astype(np.float32)
    small = ann.BQGraphIndex(50, metric="l2", bits=4, rerank_dtype="int8")
    small.add(x)
    wide = ann.BQGraphIndex(50, metric="l2", bits=4, R=64, rerank_dtype="int8")
    wide.add(x)
    assert small.memory_usage()["graph"] == 300 * 57 * 4
    assert wide.memory_usage()["graph"] == 300 * 65 * 4
    assert small.memory_usage()["codes"] == wide.memory_usage()["codes"]
    assert all(len(small.search(x[:5], 10)[0][i]) == 10 for i in range(5))
