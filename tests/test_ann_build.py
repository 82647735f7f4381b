"""Construction defaults of ``BQGraphIndex``: ``R`` and ``L_build`` by dimension."""

from __future__ import annotations

import numpy as np

from ordcore import ann


def test_default_degree_and_beam_by_dimension() -> None:
    # Below 64 dimensions 56 links a node and a construction beam of 64 (the lists dominate
    # the memory, the searches the build); from 64 on 64 and 128, as before.
    for dim, want in ((2, (56, 64)), (50, (56, 64)), (63, (56, 64)), (64, (64, 128)),
                      (128, (64, 128)), (384, (64, 128))):
        idx = ann.BQGraphIndex(dim, metric="l2", bits=4)
        assert (idx.R, idx.L_build) == want, dim
    assert ann.BQGraphIndex(50, metric="l2", R=64).R == 64
    assert ann.BQGraphIndex(50, metric="l2", L_build=200).L_build == 200
    assert ann.BQGraphIndex(384, metric="l2", R=32, L_build=16).L_build == 16


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
    found, _ = small.search(x[:5], 10)
    assert (found >= 0).all()
