"""Construction defaults of ``BQGraphIndex``: ``R`` and ``L_build`` by dimension and width."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ordcore import IndexFormatError, ann


def test_default_degree_and_beam_by_dimension() -> None:
    # Below 64 dimensions 56 links a node and a construction beam of 64 (the lists dominate
    # the memory, the searches the build); from 64 on 64 and 128, as before.
    scalar = ann._SCALAR_BUILD
    for dim, want in ((2, (56, 64)), (50, (56, 64)), (63, (56, 64)), (64, scalar),
                      (128, scalar), (384, scalar)):
        for bits in (4, 8):
            idx = ann.BQGraphIndex(dim, metric="l2", bits=bits)
            assert (idx.R, idx.L_build) == want, (dim, bits)
        # 1- and 2-bit codes keep the graphs of earlier releases at every dimension.
        for bits in (1, 2):
            idx = ann.BQGraphIndex(dim, metric="l2", bits=bits)
            assert (idx.R, idx.L_build) == (64, 128), (dim, bits)
    assert ann.BQGraphIndex(50, metric="l2", R=64).R == 64
    assert ann.BQGraphIndex(50, metric="l2", L_build=200).L_build == 200
    assert ann.BQGraphIndex(384, metric="l2", R=32, L_build=16).L_build == 16


def test_small_first_build_takes_the_narrow_beam() -> None:
    # A first build of fewer than 50,000 rows, when known: L_build 64, and 48 for 4/8-bit
    # codes below 64 dimensions; R unchanged. Unknown sizes keep the full-size defaults.
    assert ann._SMALL_BASE == 50_000
    for bits in (1, 2, 4, 8):
        for dim in (16, 50, 63, 64, 128, 384):
            full = ann._default_build(dim, bits)
            small = (full[0], 48 if bits > 2 and dim < 64 else 64)
            for rows in (50_000, 200_000):
                assert ann._default_build(dim, bits, rows) == full, (bits, dim, rows)
            for rows in (1, 49_999):
                assert ann._default_build(dim, bits, rows) == small, (bits, dim, rows)
    # An automatic index resolves them on its first add; later adds keep them; an explicit
    # width keeps the full-size defaults (its rows are not known when it is created).
    x = np.random.default_rng(4).standard_normal((1500, 64)).astype(np.float32)
    auto = ann.BQGraphIndex(64, metric="l2", seed=1)
    auto.add(x[:1200], num_threads=2)
    assert auto.bits in (4, 8) and (auto.R, auto.L_build) == (64, 64)
    auto.add(x[1200:], num_threads=2)
    assert (auto.R, auto.L_build) == (64, 64)
    assert ann.BQGraphIndex(64, metric="l2", bits=4).L_build == 128


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


@pytest.mark.parametrize("bits", [1, 2])
@pytest.mark.parametrize("dim", [50, 128])
def test_binary_codes_keep_the_earlier_graph(tmp_path: Path, bits: int, dim: int) -> None:
    # bits=1/2 with the defaults is the index of earlier releases (R=64, L_build=128):
    # the same file bytes, so the same graph, codes and search results.
    x = np.random.default_rng(1).standard_normal((600, dim)).astype(np.float32)
    default = ann.BQGraphIndex(dim, metric="l2", bits=bits)
    default.add(x, num_threads=2)
    explicit = ann.BQGraphIndex(dim, metric="l2", bits=bits, R=64, L_build=128)
    explicit.add(x, num_threads=2)
    default.save(tmp_path / "a")
    explicit.save(tmp_path / "b")
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()
    got = default.search(x[:20], 10, ef_search=32)
    want = explicit.search(x[:20], 10, ef_search=32)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def _scalar_choice_data() -> np.ndarray:
    # 16-d Gaussian rows: binary codes rank them poorly, so the choice takes a scalar code.
    return np.random.default_rng(2).standard_normal((1500, 16)).astype(np.float32)


def test_auto_resolves_the_chosen_widths_defaults(tmp_path: Path) -> None:
    x = _scalar_choice_data()
    idx = ann.BQGraphIndex(16, metric="l2", seed=3)
    assert idx.bits == "auto"
    idx.save(tmp_path / "pending")  # a pending choice saved and reloaded resolves alike
    pending = ann.BQGraphIndex.load(tmp_path / "pending")
    idx.add(x, num_threads=2)
    pending.add(x, num_threads=2)
    assert idx.bits in (4, 8)
    # The defaults of the chosen width for a first build of len(x) < 50,000 rows: the
    # small-base construction beam.
    want = ann._default_build(16, idx.bits, len(x))
    assert want == (56, 48)
    assert (idx.R, idx.L_build) == want and (pending.R, pending.L_build) == want
    # The same graph as the explicit width with those parameters, and the choice recorded.
    explicit = ann.BQGraphIndex(16, metric="l2", bits=idx.bits, rotation=idx.rotation, seed=3,
                                R=want[0], L_build=want[1])
    explicit.add(x, num_threads=2)
    np.testing.assert_array_equal(idx.search(x[:20], 10)[0], explicit.search(x[:20], 10)[0])
    assert idx.choice is not None and idx.choice["bits"] == idx.bits
    # Saved and reloaded: identical parameters, results and bytes.
    idx.save(tmp_path / "built")
    back = ann.BQGraphIndex.load(tmp_path / "built")
    assert (back.bits, back.R, back.L_build, back.rotation) == (
        idx.bits, idx.R, idx.L_build, idx.rotation)
    assert back.choice == idx.choice
    np.testing.assert_array_equal(back.search(x[:20], 10)[0], idx.search(x[:20], 10)[0])
    back.save(tmp_path / "again")
    assert (tmp_path / "again").read_bytes() == (tmp_path / "built").read_bytes()


def test_auto_keeps_a_given_degree_and_beam(tmp_path: Path) -> None:
    x = _scalar_choice_data()
    idx = ann.BQGraphIndex(16, metric="l2", R=24, seed=3)
    idx.save(tmp_path / "pending")
    for index in (idx, ann.BQGraphIndex.load(tmp_path / "pending")):
        index.add(x, num_threads=2)
        assert index.bits in (4, 8)
        assert (index.R, index.L_build) == (24, ann._default_build(16, index.bits, len(x))[1])
    beam = ann.BQGraphIndex(16, metric="l2", L_build=40, seed=3)
    beam.add(x, num_threads=2)
    assert (beam.R, beam.L_build) == (ann._default_build(16, beam.bits, len(x))[0], 40)


def test_pending_choice_without_build_keys_keeps_its_parameters(tmp_path: Path) -> None:
    # A pending choice saved before the defaults depended on the width holds only its
    # rotation: its placeholder's R / L_build are what it was created with, and stay.
    idx = ann.BQGraphIndex(16, metric="l2", R=40, L_build=100, seed=3)
    idx._set_meta({"pending": {"rotation": "auto"}})
    idx.save(tmp_path / "old")
    back = ann.BQGraphIndex.load(tmp_path / "old")
    back.add(_scalar_choice_data(), num_threads=2)
    assert back.bits in (4, 8) and (back.R, back.L_build) == (40, 100)


@pytest.mark.parametrize("pending", [{"rotation": "auto", "R": 1}, {"rotation": "auto", "R": "x"},
                                     {"rotation": "auto", "L_build": 0},
                                     {"rotation": "auto", "other": 3}])
def test_pending_choice_with_bad_build_keys_is_refused(tmp_path: Path,
                                                       pending: dict[str, object]) -> None:
    idx = ann.BQGraphIndex(16, metric="l2")
    idx._inner.set_meta(json.dumps({"pending": pending}))
    idx.save(tmp_path / "bad")
    with pytest.raises(IndexFormatError, match="metadata"):
        ann.BQGraphIndex.load(tmp_path / "bad")
