"""The search-time degree bound of ``BQGraphIndex.search`` (``degree=``) and the ordered
neighbour lists of 4- and 8-bit indexes that it reads (format version 4)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import ordcore
from ordcore import ann

from ann_header import set_header_crc


def _clustered(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((20, d)).astype(np.float32) * 3
    return (centers[rng.integers(0, 20, n)] + rng.standard_normal((n, d))).astype(np.float32)


def _as_earlier_release(path: Path, version: int) -> None:
    """Rewrites a version-4 file (an index built under ``ORDCORE_ANN_RENUMBER=0``, so in
    insertion numbering) as earlier releases wrote it (no degree bound)."""
    raw = bytearray(path.read_bytes())
    assert struct.unpack_from("<I", raw, 8)[0] == 4
    raw[8:12] = struct.pack("<I", version)
    raw[96:100] = bytes(4)
    set_header_crc(raw)
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("bits", [4, 8])
def test_full_degree_keeps_the_results_of_unordered_lists(tmp_path: Path, bits: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ordering the lists changes no search that expands every neighbour: the same index
    read back as a file of an earlier release (lists as saved, no bound) gives the same
    results at ``degree=R`` and by default, and an old file loads with ``search_degree`` 0
    and expands every neighbour by default."""
    monkeypatch.setenv("ORDCORE_ANN_RENUMBER", "0")
    x = _clustered(3000, 32, 1)
    q = _clustered(60, 32, 2)
    idx = ann.BQGraphIndex(32, metric="l2", bits=bits, rotation="hadamard")
    idx.add(x)
    assert 0 < idx.search_degree <= idx.R
    path = tmp_path / "i.ordann"
    idx.save(path)
    for version in (2, 3):
        old_path = tmp_path / f"v{version}.ordann"
        old_path.write_bytes(path.read_bytes())
        _as_earlier_release(old_path, version)
        old = ann.BQGraphIndex.load(old_path)
        assert old.search_degree == 0
        for ef in (10, 16, 64):
            want = old.search(q, k=10, ef_search=ef)
            for got in (idx.search(q, k=10, ef_search=ef, degree=idx.R), old.search(q, k=10, ef_search=ef, degree=10**6)):
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])
        # A wide beam's automatic bound covers every list.
        a, b = idx.search(q, k=10, ef_search=64), old.search(q, k=10, ef_search=64)
        np.testing.assert_array_equal(a[0], b[0])
        # Saved again, an old index keeps the lowest version that holds it (no bound to
        # store, no metadata: version 2).
        old.save(tmp_path / "again.ordann")
        assert struct.unpack_from("<I", (tmp_path / "again.ordann").read_bytes(), 8)[0] == 2


def test_automatic_bound_keeps_recall_and_binary_codes_are_unchanged() -> None:
    """The automatic bound costs little recall at a narrow beam (measured in
    ``benches/ann.py``: it wins QPS at equal recall); 1- and 2-bit indexes have no bound, so
    their default searches are the full searches of today."""
    x = _clustered(4000, 16, 3)
    q = _clustered(100, 16, 4)
    truth, _ = ann.exact_search(x, q, 10, metric="l2")
    idx = ann.BQGraphIndex(16, metric="l2", bits=4, rotation="hadamard")
    idx.add(x)
    assert 3 * 16 < idx.R  # the bound is active at ef_search=16
    auto = ann.recall_at_k(idx.search(q, k=10, ef_search=16)[0], truth)
    full = ann.recall_at_k(idx.search(q, k=10, ef_search=16, degree=idx.R)[0], truth)
    assert full >= 0.65 and auto >= full - 0.03, (auto, full)
    # A bound below the automatic one is a real cut: it loses recall.
    wide = ann.recall_at_k(idx.search(q, k=10, ef_search=64)[0], truth)
    assert ann.recall_at_k(idx.search(q, k=10, ef_search=64, degree=4)[0], truth) < wide - 0.1
    for bits in (1, 2):
        b = ann.BQGraphIndex(16, metric="l2", bits=bits)
        with pytest.warns(ordcore.BQFitnessWarning):  # binary codes fit this data poorly
            b.add(x)
        assert b.search_degree == 0
        a, c = b.search(q, k=10, ef_search=16), b.search(q, k=10, ef_search=16, degree=b.R)
        np.testing.assert_array_equal(a[0], c[0])
        np.testing.assert_array_equal(a[1], c[1])


def test_degree_with_filters_and_removals() -> None:
    """The bound composes with a filter and removed nodes: only allowed live ids, each query
    ``min(k, allowed)`` results, exact distances."""
    x = _clustered(2000, 24, 5)
    q = _clustered(20, 24, 6)
    idx = ann.BQGraphIndex(24, metric="l2", bits=8)
    idx.add(x)
    idx.remove(np.arange(0, 2000, 5))
    allow = np.arange(1, 2000, 2)
    allow = allow[allow % 5 != 0]
    for degree in (None, 2, 5):
        ids, dist = idx.search(q, k=10, ef_search=16, filter=allow, degree=degree)
        assert np.isin(ids, allow).all()
        want = ((x[ids] - q[:, None, :]) ** 2).sum(-1)
        np.testing.assert_allclose(dist, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("degree", [0, -1])
def test_bad_degree_is_one_clear_error(degree: int) -> None:
    idx = ann.BQGraphIndex(8, bits=4)
    idx.add(_clustered(50, 8, 7))
    with pytest.raises(ordcore.InvalidArgumentError, match="degree"):
        idx.search(_clustered(2, 8, 8), degree=degree)


@pytest.mark.parametrize("degree", [2.5, "4", True])
def test_degree_of_the_wrong_type_is_refused(degree: object) -> None:
    idx = ann.BQGraphIndex(8, bits=4)
    idx.add(_clustered(50, 8, 9))
    with pytest.raises((TypeError, ordcore.InvalidArgumentError), match="degree"):
        idx.search(_clustered(2, 8, 10), degree=degree)  # type: ignore[arg-type]


def test_the_degree_field_is_covered_by_the_header_checksum(tmp_path: Path) -> None:
    """A version-5 file whose degree bound was changed (to another value in 1..R, which the
    range check alone accepts) is refused as corrupted, not loaded with other results."""
    idx = ann.BQGraphIndex(24, metric="l2", bits=4)
    idx.add(_clustered(800, 24, 3))
    path = tmp_path / "i.ordann"
    idx.save(path)
    raw = bytearray(path.read_bytes())
    assert struct.unpack_from("<I", raw, 8)[0] == 5
    assert struct.unpack_from("<I", raw, 96)[0] == idx.search_degree < idx.R
    for patch in (idx.R, idx.search_degree ^ 1):
        bad = bytearray(raw)
        struct.pack_into("<I", bad, 96, patch)
        (tmp_path / "bad.ordann").write_bytes(bytes(bad))
        with pytest.raises(ordcore.IndexFormatError, match="header checksum"):
            ann.BQGraphIndex.load(tmp_path / "bad.ordann")


def test_compact_without_removals_orders_the_lists_of_an_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index read from a file of an earlier release (unordered lists, no bound) gets its
    order and bound from ``compact()`` even when nothing was removed, as from ``add``."""
    monkeypatch.setenv("ORDCORE_ANN_RENUMBER", "0")
    x = _clustered(2000, 32, 4)
    q = _clustered(40, 32, 5)
    idx = ann.BQGraphIndex(32, metric="l2", bits=8)
    idx.add(x)
    path = tmp_path / "i.ordann"
    idx.save(path)
    _as_earlier_release(path, 3)
    old = ann.BQGraphIndex.load(path)
    assert old.search_degree == 0
    old.compact()
    assert old.search_degree == idx.search_degree
    for ef in (10, 32):
        np.testing.assert_array_equal(old.search(q, k=10, ef_search=ef)[0], idx.search(q, k=10, ef_search=ef)[0])
