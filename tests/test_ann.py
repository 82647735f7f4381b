"""ordcore.ann: API contracts on small synthetic data, and the cases of shared/cases/ann.md."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import ordcore
from ordcore import ann
from ordcore.errors import DTypeError, IndexFormatError, InvalidArgumentError

from ann_header import set_header_crc


def _gauss(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _index(x: np.ndarray, metric: str = "cosine", **kw: object) -> ann.BQGraphIndex:
    idx = ann.BQGraphIndex(x.shape[1], metric=metric, **kw)  # type: ignore[arg-type]
    idx.add(x)
    return idx


# --- reference implementation of the code layout (the GPU helper matches it bit for bit) ---


def _ref_encode(x: np.ndarray, bits: int, metric: str) -> np.ndarray:
    x = x.astype(np.float32)
    if metric == "cosine":
        norm = np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=1, keepdims=True))
        x = (x.astype(np.float64) / norm).astype(np.float32)
    n, d = x.shape
    w = (d + 63) // 64
    out = np.zeros((n, bits * w), dtype=np.uint64)
    for r in range(n):
        sign = x[r] > 0
        planes = [sign]
        if bits == 2:
            a = np.abs(x[r]).astype(np.float64)
            tau = 0.0
            for v in a:  # index order, float64
                tau += v
            tau /= d
            planes.append(a > tau)
        for p, plane in enumerate(planes):
            for i in np.nonzero(plane)[0]:
                out[r, p * w + i // 64] |= np.uint64(1) << np.uint64(i % 64)
    return out


def _ref_distance(a: np.ndarray, b: np.ndarray, bits: int) -> int:
    """4D - sum s_a s_b m_a m_b on float vectors, from the definition."""
    d = a.shape[0]
    sa, sb = np.where(a > 0, 1, -1), np.where(b > 0, 1, -1)
    if bits == 1:
        return int(np.sum(sa != sb))
    ta = np.abs(a).astype(np.float64).mean()
    tb = np.abs(b).astype(np.float64).mean()
    ma = 1 + (np.abs(a).astype(np.float64) > ta)
    mb = 1 + (np.abs(b).astype(np.float64) > tb)
    return int(4 * d - np.sum(sa * sb * ma * mb))


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.float32, st.tuples(st.integers(1, 4), st.integers(1, 150)),
           elements=st.floats(-4, 4, width=32)),
    st.sampled_from([1, 2]),
)
def test_encode_matches_reference_layout(x: np.ndarray, bits: int) -> None:
    codes = ann.encode(x, bits=bits, metric="l2")
    assert codes.dtype == np.uint64
    assert codes.shape == (x.shape[0], bits * ((x.shape[1] + 63) // 64))
    np.testing.assert_array_equal(codes, _ref_encode(x, bits, "l2"))
    if x.shape[0] >= 2:
        got = ann.code_distance(codes[:1].repeat(x.shape[0] - 1, 0), codes[1:], x.shape[1], bits)
        want = [_ref_distance(x[0], x[j], bits) for j in range(1, x.shape[0])]
        np.testing.assert_array_equal(got, want)


def test_encode_cosine_normalizes_and_self_distance_positive() -> None:
    x = _gauss(5, 200, 1) * 7
    np.testing.assert_array_equal(ann.encode(x, metric="cosine"), _ref_encode(x, 2, "cosine"))
    c = ann.encode(x, bits=2)
    self_d = ann.code_distance(c, c, 200, 2)
    assert np.all(self_d > 0)  # not a metric: d(a, a) > 0


# --- the cases of shared/cases/ann.md ---


def test_a1_one_vector_k4_pads() -> None:
    idx = ann.BQGraphIndex(3)
    idx.add(np.array([[1.0, 2.0, 3.0]]), ids=[42])
    ids, d = idx.search(np.array([[1.0, 2.0, 3.1]]), k=4)
    assert ids.tolist() == [[42, -1, -1, -1]]
    assert np.isfinite(d[0, 0]) and np.all(np.isinf(d[0, 1:]))


def test_a2_65_vectors_k100() -> None:
    x = _gauss(65, 768, 2)
    idx = ann.BQGraphIndex(768)
    ids_in = np.arange(1000, 1065)
    idx.add(x, ids=ids_in)
    ids, d = idx.search(x[:3], k=100)
    for row, dr in zip(ids, d):
        assert sorted(row[:65].tolist()) == ids_in.tolist()
        assert np.all(row[65:] == -1) and np.all(np.isinf(dr[65:]))
        assert np.all(np.diff(dr[:65]) >= 0)


def test_a3_empty_index_only_padding() -> None:
    idx = ann.BQGraphIndex(1, metric="l2")
    ids, d = idx.search(np.array([[0.5]]), k=3)
    assert ids.tolist() == [[-1, -1, -1]] and np.all(np.isinf(d))


def test_a4_nan_query_names_row() -> None:
    idx = _index(_gauss(50, 8))
    q = _gauss(3, 8, 5)
    q[1, 4] = np.nan
    with pytest.raises(ValueError, match="Q: row 1"):
        idx.search(q)


def test_a5_nan_row_in_build_leaves_index_unchanged() -> None:
    x = _gauss(100, 16)
    x[37, 3] = np.nan
    idx = ann.BQGraphIndex(16)
    with pytest.raises(ValueError, match="X: row 37"):
        idx.add(x)
    assert len(idx) == 0
    idx.add(x[:37])
    with pytest.raises(ValueError, match="row 0"):
        idx.add(x[37:], ids=np.arange(500, 563))
    assert len(idx) == 37 and 500 not in idx


def test_a6_circle_cosine_distances_in_range() -> None:
    t = np.arange(8) * 2 * np.pi / 8
    x = np.stack([np.cos(t), np.sin(t)], 1).astype(np.float32)
    idx = _index(x)
    ids, d = idx.search(x, k=8)
    assert np.all(np.isfinite(d)) and np.all(d >= 0) and np.all(d <= 2)
    assert ids[:, 0].tolist() == list(range(8))
    np.testing.assert_allclose(d[:, -1], 2.0, atol=1e-5)


def test_a7_zero_query_cosine() -> None:
    idx = _index(_gauss(20, 4))
    with pytest.raises(ValueError, match="zero vector"):
        idx.search(np.zeros((1, 4)))


def test_a8_duplicates_do_not_close_the_graph() -> None:
    dup = np.ones((8, 4))
    near = np.array([[1.5, 1, 1, 1], [1.2, 1.1, 1, 0.9], [1.9, 1, 1.05, 1]])
    x = np.vstack([dup, near]).astype(np.float32)
    q = np.array([[2.05, 1, 1, 1]], dtype=np.float32)
    for metric in ("l2", "cosine"):
        idx = _index(x, metric, R=4, L_build=4)
        ids, d = idx.search(q, k=4, ef_search=4)
        tids, td = ann.exact_search(x, q, 4, metric)  # type: ignore[arg-type]
        np.testing.assert_allclose(d, td, rtol=1e-5, atol=1e-6)
        assert set(range(8, 11)) <= set(ids[0].tolist())


def test_a9_many_copies_inner_product() -> None:
    base = _gauss(5, 16, 9)
    x = np.repeat(base, 100, axis=0)
    idx = ann.BQGraphIndex(16, metric="ip")
    idx.add(x, ids=np.arange(500) * 3 + 7)
    q = _gauss(20, 16, 10)
    ids, d = idx.search(q, k=1)
    _, td = ann.exact_search(x, q, 1, "ip")
    np.testing.assert_allclose(d[:, 0], td[:, 0], rtol=1e-5, atol=1e-5)
    best = np.argmax(q @ base.T, axis=1)
    assert np.all((ids[:, 0] - 7) // 3 // 100 == best)


def test_a10_isolated_point_is_found() -> None:
    rng = np.random.default_rng(3)
    cluster = rng.normal(0, 0.05, (100, 8)) + 5.0
    lone = np.full((1, 8), -20.0)
    x = np.vstack([cluster, lone]).astype(np.float32)
    for metric in ("l2", "cosine"):
        idx = _index(x, metric, R=8)
        ids, _ = idx.search(lone.astype(np.float32) * 1.01, k=3)
        assert ids[0, 0] == 100


@pytest.mark.parametrize("dim", [1007, 1008])
def test_a11_dims_1007_1008(dim: int) -> None:
    x = _gauss(100, dim, dim)
    idx = _index(x)
    ids, _ = idx.search(x[:10], k=1)
    assert ids[:, 0].tolist() == list(range(10))


def test_a12_ef_search_raised_to_k() -> None:
    x = _gauss(300, 16, 4)
    idx = _index(x)
    a = idx.search(x[:20], k=30, ef_search=5)
    b = idx.search(x[:20], k=30, ef_search=30)
    np.testing.assert_array_equal(a[0], b[0])
    assert np.all(a[0] >= 0)


def test_a13_dimension_mismatch_same_words() -> None:
    idx = _index(_gauss(30, 64))
    with pytest.raises(ValueError, match="70.*64"):
        idx.search(_gauss(1, 70))
    with pytest.raises(ValueError, match="70.*64"):
        idx.add(_gauss(1, 70))
    assert len(idx) == 30


def test_a14_truncated_or_flipped_file(tmp_path: Path) -> None:
    idx = _index(_gauss(200, 24))
    p = tmp_path / "i.ordann"
    idx.save(p)
    raw = p.read_bytes()
    (tmp_path / "t").write_bytes(raw[:-1])
    with pytest.raises(IndexFormatError, match="truncated"):
        ann.BQGraphIndex.load(tmp_path / "t")
    for pos in (200, len(raw) // 2, len(raw) - 5):
        flipped = bytearray(raw)
        flipped[pos] ^= 0x10
        (tmp_path / "f").write_bytes(bytes(flipped))
        with pytest.raises(IndexFormatError, match="checksum"):
            ann.BQGraphIndex.load(tmp_path / "f", mmap=True)


# --- more contracts ---


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="R"):
        ann.BQGraphIndex(8, R=1)
    with pytest.raises(ValueError, match="alpha"):
        ann.BQGraphIndex(8, alpha=0.9)
    with pytest.raises(ValueError, match="metric"):
        ann.BQGraphIndex(8, metric="hamming")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bits"):
        ann.BQGraphIndex(8, bits=3)
    with pytest.raises(ValueError, match="rotation"):
        ann.BQGraphIndex(8, rotation="pca")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dim"):
        ann.BQGraphIndex(0)


def test_bad_inputs_leave_index_unchanged() -> None:
    x = _gauss(40, 8)
    idx = _index(x)
    before = idx.search(x[:5])
    with pytest.raises(ValueError, match="2-D"):
        idx.add(x[0])
    with pytest.raises(ValueError, match="2-D"):
        idx.search(x[0])
    with pytest.raises(DTypeError):
        idx.add(x.astype(np.complex64))
    with pytest.raises(DTypeError):
        idx.add(x > 0)
    with pytest.raises(DTypeError, match="2\\*\\*24"):
        idx.add(np.full((1, 8), 2**40, dtype=np.int64))
    with pytest.raises(ValueError, match="twice"):
        idx.add(_gauss(2, 8, 1), ids=[100, 100])
    with pytest.raises(ValueError, match="already"):
        idx.add(_gauss(2, 8, 1), ids=[100, 3])
    with pytest.raises(ValueError, match="non-finite"):
        idx.add(np.full((1, 8), np.inf))
    with pytest.raises(ValueError, match="zero vector"):
        idx.add(np.zeros((1, 8)))
    with pytest.raises(ValueError, match="k"):
        idx.search(x[:1], k=0)
    with pytest.raises(ValueError, match="ef_search"):
        idx.search(x[:1], ef_search=0)
    with pytest.raises(ValueError, match="not in the index"):
        idx.remove([3, 999])
    assert len(idx) == 40 and 3 in idx
    after = idx.search(x[:5])
    np.testing.assert_array_equal(before[0], after[0])


def test_integer_and_float16_inputs_convert() -> None:
    x = np.random.default_rng(0).integers(0, 255, (60, 16)).astype(np.uint8)
    idx = ann.BQGraphIndex(16, metric="l2")
    idx.add(x)
    ids, d = idx.search(x[:4].astype(np.int64), k=1)
    assert ids[:, 0].tolist() == [0, 1, 2, 3] and np.all(d[:, 0] == 0)
    h = _gauss(30, 8).astype(np.float16)
    idx2 = _index(h)
    assert idx2.search(h[:2], k=1)[0][:, 0].tolist() == [0, 1]


def test_metric_conventions_match_exact_search() -> None:
    x = _gauss(200, 32, 7)
    q = _gauss(10, 32, 8)
    for metric in ("cosine", "ip", "l2"):
        idx = _index(x, metric)
        ids, d = idx.search(q, k=5, ef_search=200)
        tids, td = ann.exact_search(x, q, 5, metric)  # type: ignore[arg-type]
        np.testing.assert_array_equal(ids, tids)
        np.testing.assert_allclose(d, td, rtol=1e-4, atol=1e-5)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    _, dc = ann.exact_search(x, q, 1, "cosine")
    np.testing.assert_allclose(dc[:, 0], 1 - np.max(qn @ xn.T, axis=1), atol=1e-5)
    _, dl = ann.exact_search(x, q, 1, "l2")
    np.testing.assert_allclose(
        dl[:, 0], np.min(((q[:, None] - x[None]) ** 2).sum(-1), axis=1), rtol=1e-4
    )
    _, di = ann.exact_search(x, q, 1, "ip")
    np.testing.assert_allclose(di[:, 0], 1 - np.max(q @ x.T, axis=1), rtol=1e-4)


def test_exact_search_pads_and_recall_at_k() -> None:
    x = _gauss(3, 4)
    ids, d = ann.exact_search(x, x, 5, "l2")
    assert ids[:, 3:].tolist() == [[-1, -1]] * 3 and np.all(np.isinf(d[:, 3:]))
    assert ann.recall_at_k(np.array([[1, 2, -1]]), np.array([[2, 1, 3]])) == pytest.approx(2 / 3)
    assert ann.recall_at_k(np.array([[1, 2]]), np.array([[1, 2, 3]]), k=1) == 1.0


@pytest.mark.parametrize("bits", [1, 2])
def test_rerank_false_and_bits(bits: int) -> None:
    x = _gauss(500, 64, 11)
    idx = _index(x, bits=bits)
    ids, d = idx.search(x[:20], k=5, rerank=False)
    assert ids.shape == (20, 5) and np.all(ids >= 0)
    ids2, d2 = idx.search(x[:20], k=1, rerank_k=50, ef_search=50)
    assert ids2[:, 0].tolist() == list(range(20))


def test_same_seed_same_graph_any_thread_count() -> None:
    x = _gauss(2000, 32, 12)
    graphs = []
    for threads in (1, 2, 3):
        idx = ann.BQGraphIndex(32, seed=5)
        idx.add(x, num_threads=threads)
        graphs.append(idx._inner.graph())
    for g in graphs[1:]:
        np.testing.assert_array_equal(g[0], graphs[0][0])
    other = ann.BQGraphIndex(32, seed=6)
    other.add(x, num_threads=1)
    assert not np.array_equal(other._inner.graph()[0], graphs[0][0])


_KERNEL_SCRIPT = """
import sys
import numpy as np
from ordcore import ann
dim, bits, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
x = np.random.default_rng(3).standard_normal((1500, dim)).astype(np.float32)
idx = ann.BQGraphIndex(dim, bits=bits, seed=1)
idx.add(x, num_threads=2)
idx.save(out + ".idx")
ids, dist = idx.search(x[:50] + 0.1, k=10, ef_search=32)
np.savez(out + ".npz", ids=ids, dist=dist)
print(ann.cpu_kernel())
"""


@pytest.mark.parametrize("bits", [1, 2])
@pytest.mark.parametrize("dim", [100, 384, 1000])
def test_every_kernel_builds_the_same_index(tmp_path: Path, dim: int, bits: int) -> None:
    """The AVX-512, popcnt and portable code-distance kernels (chosen at run time, capped by
    ORDCORE_ANN_KERNEL) give byte-identical index files and identical search results."""
    import os
    import subprocess
    import sys

    files = {}
    for cap in ("", "popcnt", "portable"):
        env = dict(os.environ, ORDCORE_ANN_KERNEL=cap)
        out = str(tmp_path / (cap or "best"))
        run = subprocess.run([sys.executable, "-c", _KERNEL_SCRIPT, str(dim), str(bits), out], env=env,
                             capture_output=True, text=True, check=True)
        used = run.stdout.strip()
        assert used in ("avx512-vpopcntdq", "popcnt", "portable")
        if cap:
            assert used == cap or (cap == "popcnt" and used == "portable")
        files[cap] = out
    bad = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", "import ordcore.ann"],
                         env=dict(os.environ, ORDCORE_ANN_KERNEL="avx2"), capture_output=True, text=True)
    assert bad.returncode != 0 and "ORDCORE_ANN_KERNEL='avx2' is not one of" in bad.stderr
    for cap in ("popcnt", "portable"):
        assert Path(files[cap] + ".idx").read_bytes() == Path(files[""] + ".idx").read_bytes()
        a, b = np.load(files[cap] + ".npz"), np.load(files[""] + ".npz")
        np.testing.assert_array_equal(a["ids"], b["ids"])
        np.testing.assert_array_equal(a["dist"], b["dist"])


def test_incremental_add_and_auto_ids() -> None:
    x = _gauss(1200, 32, 13)
    idx = ann.BQGraphIndex(32)
    idx.add(x[:600])
    idx.add(x[600:900])
    idx.add(x[900:], ids=np.arange(5000, 5300))
    assert len(idx) == 1200
    q = x[::37]
    ids, _ = idx.search(q, k=1)
    want = [i if i < 900 else 5000 + i - 900 for i in range(0, 1200, 37)]
    assert ids[:, 0].tolist() == want
    idx.add(_gauss(2, 32, 99))
    assert set(idx.ids[-2:].tolist()) == {5300, 5301}


def test_remove_and_compact() -> None:
    x = _gauss(800, 24, 14)
    idx = _index(x)
    gone = np.arange(0, 800, 3)
    idx.remove(gone)
    assert len(idx) == 800 - len(gone) and 0 not in idx
    ids, _ = idx.search(x, k=10)
    assert not set(ids.ravel().tolist()) & set(gone.tolist())
    hit_before = np.mean(ids[:, 0] == np.arange(800))
    idx.compact()
    assert idx._inner.n_nodes() == len(idx)
    ids2, _ = idx.search(x, k=10)
    assert not set(ids2.ravel().tolist()) & set(gone.tolist())
    keep = np.setdiff1d(np.arange(800), gone)
    assert np.mean(ids2[keep, 0] == keep) >= 0.95
    assert hit_before > 0
    with pytest.raises(ValueError, match="not in the index"):
        idx.remove([0])
    idx.remove(keep)
    ids3, _ = idx.search(x[:2], k=3)
    assert np.all(ids3 == -1)
    idx.add(x[:5], ids=[0, 1, 2, 3, 4])  # removed ids may be reused
    assert len(idx) == 5


def test_memory_usage_keys() -> None:
    idx = _index(_gauss(100, 128), bits=2)
    m = idx.memory_usage()
    assert m["codes"] == 100 * 2 * 2 * 8
    assert m["graph"] == 100 * 64 * 4 + 100 * 4
    assert m["float_vectors"] == 100 * 128 * 4
    assert m["float_vectors_mapped"] is False


@pytest.mark.parametrize("rotation", [None, "hadamard"])
def test_save_load_roundtrip(tmp_path: Path, rotation: str | None) -> None:
    x = _gauss(500, 40, 15) + 1.0
    idx = ann.BQGraphIndex(40, metric="l2", rotation=rotation, seed=9, R=16)  # type: ignore[arg-type]
    idx.add(x, ids=np.arange(500) * 2)
    idx.remove([0, 2])
    p = tmp_path / "x.ordann"
    idx.save(str(p))
    assert sorted(f.name for f in tmp_path.iterdir()) == ["x.ordann"]
    want = idx.search(x[:50], k=5)
    for mmap in (False, True):
        back = ann.BQGraphIndex.load(p, mmap=mmap)
        assert back.memory_usage()["float_vectors_mapped"] is mmap
        assert (back.R, back.metric, back.rotation, back.seed, len(back)) == (
            16, "l2", rotation, 9, 498)
        got = back.search(x[:50], k=5)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        back.add(x[:3] + 0.5, ids=[10**12, 10**12 + 1, 10**12 + 2])
        assert len(back) == 501


def test_load_foreign_and_newer(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"PK\x03\x04" + bytes(300))
    with pytest.raises(IndexFormatError, match="magic"):
        ann.BQGraphIndex.load(tmp_path / "a")
    idx = _index(_gauss(20, 8))
    idx.save(tmp_path / "b")
    raw = bytearray((tmp_path / "b").read_bytes())
    raw[8] = 6  # version 6 (this release reads 1 to 5)
    set_header_crc(raw)
    (tmp_path / "c").write_bytes(bytes(raw))
    with pytest.raises(IndexFormatError, match="newer"):
        ann.BQGraphIndex.load(tmp_path / "c")
    raw[8] = 1
    raw[12:16] = (0x04030201).to_bytes(4, "little")
    (tmp_path / "d").write_bytes(bytes(raw))
    with pytest.raises(IndexFormatError, match="endianness"):
        ann.BQGraphIndex.load(tmp_path / "d")
    (tmp_path / "e").write_bytes(bytes(raw[:50]))
    with pytest.raises(IndexFormatError):
        ann.BQGraphIndex.load(tmp_path / "e")
    with pytest.raises(OSError):
        ann.BQGraphIndex.load(tmp_path / "missing")


def test_concurrent_searches_and_add() -> None:
    x = _gauss(3000, 32, 16)
    idx = _index(x[:2000])
    want = idx.search(x[:200], k=5)
    errors: list[BaseException] = []

    def searcher() -> None:
        try:
            for _ in range(5):
                got = idx.search(x[:200], k=5, num_threads=1)
                assert np.all(got[0] >= 0)
                assert np.array_equal(got[0][:, 0], want[0][:, 0])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=searcher) for _ in range(4)]
    for t in threads:
        t.start()
    idx.add(x[2000:])
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(idx) == 3000


def test_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    idx = ann.BQGraphIndex(8)
    idx.add(_gauss(300, 8), progress=True)
    assert "BQGraphIndex.add" in capsys.readouterr().err
    assert len(idx) == 300


def test_fitness_warning_and_report() -> None:
    # Non-negative clustered data (every sign bit set) is unfit without rotation and fit with
    # it (code-space recall@10 at its full size: 0.14 and 0.53).
    rng = np.random.default_rng(17)
    centers = 2 * rng.standard_normal((30, 64)).astype(np.float32)
    x = np.abs(centers[rng.integers(0, 30, 1500)] + _gauss(1500, 64, 17)) + 0.1
    idx = ann.BQGraphIndex(64, metric="l2", bits=2)
    with pytest.warns(ordcore.BQFitnessWarning, match="hadamard"):
        idx.add(x)
    # The automatic choice picks a code that serves this data: no warning.
    auto = ann.BQGraphIndex(64, metric="l2")
    auto.add(x)
    assert auto.choice is not None and auto.bits != 2
    rep = ann.bq_fitness(x, sample=500, metric="l2")
    assert rep["recommended_rotation"] == "hadamard"
    assert rep["recall_rotated"] > rep["recall"] and not rep["fit"]
    rot = ann.BQGraphIndex(64, metric="l2", bits=2, rotation="hadamard")
    rot.add(x)  # fit once rotated: no warning (pytest turns warnings into errors)
    with pytest.raises(ValueError, match="k"):
        ann.bq_fitness(x[:5], k=10, metric="l2")


def test_k_at_least_live_returns_every_live_vector_after_removals() -> None:
    x = _gauss(800, 16, 21)
    idx = _index(x)
    idx.remove(np.arange(0, 800, 2))
    ids, d = idx.search(x[:3], k=450)
    for row in ids:
        assert sorted(row[:400].tolist()) == list(range(1, 800, 2))
        assert np.all(row[400:] == -1)


def test_user_stumbles_get_clear_errors(tmp_path: Path) -> None:
    X = np.random.default_rng(5).standard_normal((50, 16)).astype(np.float32)
    index = ann.BQGraphIndex(16, metric="l2", R=8, L_build=16)
    with pytest.raises(ValueError, match="num_threads"):
        index.add(X, num_threads=-1)
    with pytest.raises(ValueError, match="non-negative"):
        index.add(X, ids=np.arange(-1, 49))
    assert len(index) == 0
    index.add(X)
    with pytest.raises(ValueError, match="num_threads"):
        index.search(X[:2], num_threads=-2)
    missing = tmp_path / "nope.ordann"
    with pytest.raises(OSError, match="nope.ordann"):
        ann.BQGraphIndex.load(missing)
    with pytest.raises(OSError, match="no_such_dir"):
        index.save(tmp_path / "no_such_dir" / "x.ordann")


# --- what a new-user trial broke (each was a crash, a hang, garbage or a wrong message) ---


def test_huge_k_and_ef_search_are_errors_or_clamped() -> None:
    x = _gauss(300, 16, 21)
    idx = _index(x, "l2")
    with pytest.raises(InvalidArgumentError, match="k: .*do not fit in memory"):
        idx.search(x[:2], k=2**62)
    with pytest.raises(InvalidArgumentError, match="k: must be at most"):
        idx.search(x[:2], k=2**64)
    with pytest.raises(InvalidArgumentError, match="k: .*do not fit in memory"):
        ann.exact_search(x, x[:2], 2**62, "l2")
    # A beam wider than the graph is clamped to it: same results as ef_search = n.
    wide = idx.search(x[:5], k=3, ef_search=2**40)
    full = idx.search(x[:5], k=3, ef_search=300)
    np.testing.assert_array_equal(wide[0], full[0])
    np.testing.assert_array_equal(wide[1], full[1])


def test_num_threads_has_an_upper_bound() -> None:
    from ordcore._args import max_threads

    x = _gauss(50, 8, 22)
    idx = _index(x, "l2")
    for call in (
        lambda: idx.add(x + 1, num_threads=10**9),
        lambda: idx.search(x[:2], num_threads=max_threads() + 1),
        lambda: ann.exact_search(x, x[:2], 3, "l2", num_threads=10**6),
    ):
        with pytest.raises(InvalidArgumentError, match="num_threads: must be at most"):
            call()
    assert len(idx) == 50
    idx.search(x[:2], num_threads=max_threads())  # the limit itself is allowed


def test_failed_save_leaves_no_temporary_file(tmp_path: Path) -> None:
    idx = _index(_gauss(50, 8, 23))
    d = tmp_path / "adir"
    d.mkdir()
    with pytest.raises(OSError, match="(?i)is a directory.*adir"):
        idx.save(d)
    with pytest.raises(OSError, match="(?i)is a directory.*adir"):
        ann.BQGraphIndex.load(d)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir"]
    assert list(d.iterdir()) == []


def test_unaligned_and_big_endian_inputs_are_copied() -> None:
    x = _gauss(200, 16, 24)
    raw = bytearray(b"\0" + x.tobytes())
    u = np.frombuffer(raw, np.float32, offset=1, count=x.size).reshape(x.shape)
    assert u.flags.c_contiguous and not u.flags.aligned
    a, b = _index(x, "l2"), _index(u, "l2")
    np.testing.assert_array_equal(a.search(x[:5], k=4)[0], b.search(u[:5], k=4)[0])
    np.testing.assert_array_equal(ann.encode(u), ann.encode(x))
    np.testing.assert_array_equal(ann.exact_search(u, u[:3], 3, "l2")[0],
                                  ann.exact_search(x, x[:3], 3, "l2")[0])


def test_code_distance_checks_dtype_and_padding_bits() -> None:
    c = ann.encode(np.random.default_rng(0).standard_normal((3, 70)).astype(np.float32))
    want = ann.code_distance(c, c[::-1], 70)
    np.testing.assert_array_equal(ann.code_distance(c.view(np.int64), c[::-1].view(np.int64), 70), want)
    np.testing.assert_array_equal(ann.code_distance(c.astype(">u8"), c[::-1], 70), want)
    for dt in (np.float64, np.int8, np.uint32):
        with pytest.raises(DTypeError, match="codes_a: codes are uint64 words"):
            ann.code_distance(c.astype(dt), c.astype(dt), 70)
    bad = c.copy()
    bad[1, 1] |= np.uint64(1) << np.uint64(63)  # sign plane, past dim 70
    with pytest.raises(InvalidArgumentError, match="codes_b: row 1 has bits set past dim = 70"):
        ann.code_distance(c, bad, 70)


def test_values_too_large_for_float32_distances() -> None:
    x = _gauss(200, 16, 25) * np.float32(1e20)
    for metric in ("l2", "ip"):
        with pytest.raises(InvalidArgumentError, match="X: row 0 has squared norm .* rescale"):
            _index(x, metric)
        with pytest.raises(InvalidArgumentError, match="squared norm"):
            ann.exact_search(x, x[:2], 3, metric)  # type: ignore[arg-type]
    idx = _index(x, "cosine")  # normalized first: fine
    assert np.all(np.isfinite(idx.search(x[:3], k=3)[1]))
    big = _gauss(10, 4, 26).astype(np.float64)
    big[3, 2] = 1e300
    with pytest.raises(InvalidArgumentError, match=r"X: row 3 holds 1e\+300 at column 2, outside the float32"):
        ann.BQGraphIndex(4, metric="l2").add(big)


def _rewrite_crcs(raw: bytearray) -> bytes:
    import struct
    import zlib

    struct.pack_into("<I", raw, 80, zlib.crc32(bytes(raw[128:])))
    set_header_crc(raw)
    return bytes(raw)


def test_crafted_files_with_valid_checksums(tmp_path: Path) -> None:
    idx = _index(_gauss(100, 24, 27))
    p = tmp_path / "i.ordann"
    idx.save(p)
    raw = p.read_bytes()
    flipped = bytearray(raw)
    flipped[100] ^= 1  # reserved header byte (inside the header CRC from version 4 on)
    (tmp_path / "r").write_bytes(bytes(flipped))
    version = int.from_bytes(raw[8:12], "little")
    with pytest.raises(IndexFormatError, match="header checksum" if version >= 4 else "reserved header bytes"):
        ann.BQGraphIndex.load(tmp_path / "r")
    (tmp_path / "r").write_bytes(_rewrite_crcs(bytearray(flipped)))
    with pytest.raises(IndexFormatError, match="reserved header bytes"):
        ann.BQGraphIndex.load(tmp_path / "r")
    neg = bytearray(raw)
    neg[128:136] = (-5).to_bytes(8, "little", signed=True)  # the first id
    (tmp_path / "n").write_bytes(_rewrite_crcs(neg))
    with pytest.raises(IndexFormatError, match="node 0 has the negative id -5"):
        ann.BQGraphIndex.load(tmp_path / "n")
    # The rewriting itself is sound: an unchanged payload with rewritten CRCs loads.
    (tmp_path / "ok").write_bytes(_rewrite_crcs(bytearray(raw)))
    assert len(ann.BQGraphIndex.load(tmp_path / "ok")) == 100


def test_membership_of_other_number_types() -> None:
    idx = _index(_gauss(10, 8, 28))
    assert 4 in idx and np.int32(4) in idx and 4.0 in idx and np.float64(4) in idx
    assert 4.5 not in idx and float("nan") not in idx and 2**70 not in idx and -(2**70) not in idx
    assert True not in idx and "4" not in idx


def test_auto_ids_after_compact_follow_the_stored_ids() -> None:
    x = _gauss(7, 8, 29)
    idx = ann.BQGraphIndex(8, metric="l2")
    idx.add(x[:5], ids=[10, 20, 30, 40, 50])
    idx.remove([50])
    idx.add(x[5:6])
    assert idx.ids.tolist() == [10, 20, 30, 40, 51]  # removed 50 still stored
    idx.remove([51])
    idx.compact()
    idx.add(x[6:7])
    assert idx.ids.tolist() == [10, 20, 30, 40, 41]  # as documented: compact dropped 50, 51


def _clustered(n: int, seed: int) -> np.ndarray:
    """30 tight clusters in 64-D: with a small R, Vamana fills each node's list with its own
    cluster and leaves most clusters without an incoming path from the entry."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((30, 32))
    labels = rng.integers(0, 30, n)
    mix = rng.standard_normal((32, 64))
    return ((centers[labels] + 0.3 * rng.standard_normal((n, 32))) @ mix).astype(np.float32)


def _reachable(idx: ann.BQGraphIndex, q: np.ndarray) -> int:
    ids, _ = idx.search(q[:1], k=len(idx))  # k >= len: the beam takes every reachable node
    return int((ids >= 0).sum())


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_every_node_is_reachable_from_the_entry(metric: str) -> None:
    """Before the connectivity repair, this build reached 98 of 3000 nodes."""
    x = _clustered(3000, 30)
    graphs = []
    for threads in (1, 2):
        idx = ann.BQGraphIndex(64, metric=metric, R=16, L_build=32, rotation="hadamard")  # type: ignore[arg-type]
        idx.add(x, num_threads=threads)
        assert _reachable(idx, x) == 3000
        ids, _ = idx.search(x, k=1, ef_search=3000)
        assert np.array_equal(ids[:, 0], np.arange(3000))  # each vector finds itself
        graphs.append(idx._inner.graph()[0])
    np.testing.assert_array_equal(graphs[0], graphs[1])  # still thread-count independent
    # Incremental adds and compaction keep it.
    idx.add(_clustered(500, 31) + 50.0, num_threads=1)
    assert _reachable(idx, x) == 3500
    idx.remove(np.arange(0, 3500, 2))
    idx.compact()
    assert _reachable(idx, x) == 1750
