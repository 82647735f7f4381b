"""Graph-order node numbering of 4- and 8-bit ``BQGraphIndex`` (format version 5): after
each ``add`` and ``compact`` the nodes are renumbered in breadth-first order from the entry,
and every public output (``ids``, ``get``, search results, filters, ``remove``, saved files)
stays as with insertion numbering. ``ORDCORE_ANN_RENUMBER=0`` keeps insertion numbering, so
the same graph can be compared both ways."""

from __future__ import annotations

import struct
from collections import deque
from pathlib import Path

import numpy as np
import pytest

from ordcore import ann


def _clustered(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((20, d)).astype(np.float32) * 3
    return (centers[rng.integers(0, 20, n)] + rng.standard_normal((n, d))).astype(np.float32)


def _assert_bfs_numbered(idx: ann.BQGraphIndex) -> None:
    """An independent walk: from node 0 (the entry), neighbours in list order, the nodes
    are met as 0, 1, 2, ... (the nodes it does not reach come last)."""
    adj, deg = idx._inner.graph()
    n = len(deg)
    seen = np.zeros(n, bool)
    seen[0] = True
    queue, met = deque([0]), [0]
    while queue:
        p = queue.popleft()
        for j in adj[p, : deg[p]]:
            if not seen[j]:
                seen[j] = True
                met.append(int(j))
                queue.append(int(j))
    assert met == list(range(len(met)))


def _same_outputs(a: ann.BQGraphIndex, b: ann.BQGraphIndex, q: np.ndarray) -> None:
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.get(a.ids), b.get(b.ids))
    assert all(i in a for i in b.ids[:50])
    for ef in (10, 24, 64):
        for rerank in (True, False):
            ra, rb = a.search(q, k=10, ef_search=ef, rerank=rerank), b.search(q, k=10, ef_search=ef, rerank=rerank)
            np.testing.assert_array_equal(ra[0], rb[0])
            np.testing.assert_array_equal(ra[1], rb[1])
    allow = a.ids[::3]
    bitmap = np.zeros(int(a.ids.max()) + 1, bool)
    bitmap[a.ids[1::4]] = True
    for flt in (allow, bitmap):
        ra, rb = a.search(q, k=10, ef_search=32, filter=flt), b.search(q, k=10, ef_search=32, filter=flt)
        np.testing.assert_array_equal(ra[0], rb[0])
        np.testing.assert_array_equal(ra[1], rb[1])


def _build(monkeypatch: pytest.MonkeyPatch, renumber: bool, bits: int, dtype: str, x: np.ndarray) -> ann.BQGraphIndex:
    monkeypatch.setenv("ORDCORE_ANN_RENUMBER", "1" if renumber else "0")
    idx = ann.BQGraphIndex(x.shape[1], metric="l2", bits=bits, rotation="hadamard", rerank_dtype=dtype)
    idx.add(x, ids=np.arange(len(x)) * 5 + 2)
    return idx


@pytest.mark.parametrize(("bits", "dtype"), [(8, "float32"), (4, "float16"), (8, "bfloat16"), (4, "int8")])
def test_renumbered_index_keeps_every_public_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bits: int, dtype: str) -> None:
    x = _clustered(2500, 32, 1)
    q = _clustered(50, 32, 2)
    a = _build(monkeypatch, True, bits, dtype, x[:1800])
    b = _build(monkeypatch, False, bits, dtype, x[:1800])
    _assert_bfs_numbered(a)
    assert not np.array_equal(a._inner.graph()[0], b._inner.graph()[0])  # renumbered at all
    _same_outputs(a, b, q)
    # Removal by id, then a second add of the same rows to both (each graph numbered its way;
    # the second build's ties follow the numbering, so only the public order is compared).
    gone = a.ids[::7]
    a.remove(gone)
    b.remove(gone)
    _same_outputs(a, b, q)
    monkeypatch.setenv("ORDCORE_ANN_RENUMBER", "1")
    a.add(x[1800:])
    _assert_bfs_numbered(a)
    ids_after_add = a.ids.copy()
    np.testing.assert_array_equal(ids_after_add, np.concatenate([np.setdiff1d(np.arange(1800) * 5 + 2, gone), 1799 * 5 + 3 + np.arange(700)]))
    a.compact()
    _assert_bfs_numbered(a)
    np.testing.assert_array_equal(a.ids, ids_after_add)
    # Saved as version 5 (ranks stored); read back, mapped or not, with the same outputs.
    path = tmp_path / "a.ordann"
    a.save(path)
    assert struct.unpack_from("<I", path.read_bytes(), 8)[0] == 5
    for mmap in (False, True):
        _same_outputs(ann.BQGraphIndex.load(path, mmap=mmap), a, q)
    # The unrenumbered index still writes version 4, which loads in insertion numbering.
    b.save(tmp_path / "b.ordann")
    assert struct.unpack_from("<I", (tmp_path / "b.ordann").read_bytes(), 8)[0] == 4
    for mmap in (False, True):
        _same_outputs(ann.BQGraphIndex.load(tmp_path / "b.ordann", mmap=mmap), b, q)


def test_compact_renumbers_the_same_graph_without_changing_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """After removals, ``compact`` of the renumbered and of the unrenumbered index repair the
    same graph (the repair scores pairs by code, ties by node) and give the same outputs."""
    x = _clustered(2000, 24, 3)
    q = _clustered(40, 24, 4)
    a = _build(monkeypatch, True, 8, "float32", x)
    b = _build(monkeypatch, False, 8, "float32", x)
    gone = a.ids[5::6]
    for idx, flag in ((a, "1"), (b, "0")):
        monkeypatch.setenv("ORDCORE_ANN_RENUMBER", flag)
        idx.remove(gone)
        idx.compact()
    _assert_bfs_numbered(a)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.get(a.ids), b.get(b.ids))
    ra, rb = a.search(q, k=10, ef_search=32), b.search(q, k=10, ef_search=32)
    overlap = np.mean([len(set(u) & set(v)) / 10 for u, v in zip(ra[0], rb[0])])
    assert overlap >= 0.95


@pytest.mark.filterwarnings("ignore::ordcore.BQFitnessWarning")
@pytest.mark.parametrize("bits", [1, 2])
def test_binary_codes_keep_insertion_numbering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bits: int) -> None:
    """1- and 2-bit indexes are not renumbered: the same file bytes with and without it."""
    x = _clustered(1500, 32, 5)
    files = []
    for flag in ("1", "0"):
        monkeypatch.setenv("ORDCORE_ANN_RENUMBER", flag)
        idx = ann.BQGraphIndex(32, metric="l2", bits=bits)
        idx.add(x)
        idx.remove([3, 9])
        idx.compact()
        idx.save(tmp_path / f"{flag}.ordann")
        files.append((tmp_path / f"{flag}.ordann").read_bytes())
    assert files[0] == files[1]
    assert struct.unpack_from("<I", files[0], 8)[0] == 1
