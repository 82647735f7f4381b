"""``BQGraphIndex.get``, filtered search and the automatic code choice (``bits="auto"``).

Filtered search is checked against exact filtered search (``exact_search`` over the allowed
rows) on real data, for filters from 50 % of the ids down to 10 ids; ``get`` against the
rounding each rerank dtype documents; the choice against what it promises (the chosen
code's index reaches recall@10 0.95 on that data).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ordcore
from ordcore import ann
from ordcore.errors import DTypeError, InvalidArgumentError, UnknownIdError

N = 20_000
NQ = 200


def _glosses(data: Path, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    base = np.load(data / "ann" / "glosses_base.npy", mmap_mode="r")[:n]
    q = np.load(data / "ann" / "glosses_queries.npy")[:NQ]
    return np.ascontiguousarray(base, dtype=np.float32), q.astype(np.float32)


@pytest.fixture(scope="module")
def glosses_index(shared_data: Path) -> tuple[ann.BQGraphIndex, np.ndarray, np.ndarray]:
    x, q = _glosses(shared_data)
    idx = ann.BQGraphIndex(x.shape[1], metric="cosine", bits=2)
    # Ids that are not row numbers, so a filter by row would fail.
    idx.add(x, ids=np.arange(N, dtype=np.int64) * 3 + 7)
    return idx, x, q


def _exact_filtered(
    x: np.ndarray, q: np.ndarray, ids: np.ndarray, allowed: np.ndarray, k: int = 10
) -> np.ndarray:
    """Ids of the exact top-k among the allowed rows (``allowed``: row numbers)."""
    rows = np.sort(np.unique(allowed))
    found, _ = ann.exact_search(x[rows], q, k, "cosine")
    return np.where(found >= 0, ids[rows][np.maximum(found, 0)], -1)


@pytest.mark.parametrize("share", [0.5, 0.2, 0.01, 0.001, 10])
def test_filtered_search_matches_exact_filtered_search(
    glosses_index: tuple[ann.BQGraphIndex, np.ndarray, np.ndarray], share: float
) -> None:
    idx, x, q = glosses_index
    ids = np.arange(N, dtype=np.int64) * 3 + 7
    rng = np.random.default_rng(int(share * 1000))
    m = int(share) if share >= 1 else int(N * share)
    rows = rng.choice(N, size=m, replace=False)
    truth = _exact_filtered(x, q, ids, rows)
    # The allow-list and the bitmap indexed by id value give the same results.
    found, d = idx.search(q, 10, filter=ids[rows])
    bitmap = np.zeros(ids.max() + 1, dtype=bool)
    bitmap[ids[rows]] = True
    found_b, d_b = idx.search(q, 10, filter=bitmap)
    np.testing.assert_array_equal(found, found_b)
    np.testing.assert_array_equal(d, d_b)
    allowed = set(ids[rows].tolist())
    assert all(i in allowed for i in found[found >= 0].tolist())
    want = min(10, m)
    assert np.all((found >= 0).sum(axis=1) == want)
    recall = ann.recall_at_k(found[:, :want], truth[:, :want])
    # Measured: 0.5 -> 0.999, 0.2 -> 0.999 (graph path); 1 %, 0.1 %, 10 ids: exact scan.
    assert recall >= 0.95, (share, recall)
    if m * m <= 4 * 64 * N:  # the exact-scan path
        assert recall == 1.0


def test_filter_edge_cases(glosses_index: tuple[ann.BQGraphIndex, np.ndarray, np.ndarray]) -> None:
    idx, _, q = glosses_index
    # Repeats in an allow-list are fine; k beyond the allowed set pads.
    found, d = idx.search(q[:3], 5, filter=[7, 7, 10])
    assert sorted(found[0, :2].tolist()) == [7, 10]
    assert np.all(found[:, 2:] == -1) and np.all(np.isinf(d[:, 2:]))
    # A short bitmap allows nothing past its end; an all-False one allows nothing.
    short = np.zeros(11, dtype=bool)
    short[[7, 10]] = True
    np.testing.assert_array_equal(idx.search(q[:3], 5, filter=short)[0], found)
    none, _ = idx.search(q[:2], 3, filter=np.zeros(5, dtype=bool))
    assert np.all(none == -1)
    assert np.all(idx.search(q[:2], 3, filter=[])[0] == -1)
    # k beyond the beam (as without a filter: the beam is raised to k).
    half = np.arange(N // 2) * 6 + 7
    wide, wd = idx.search(q[:3], 150, ef_search=16, filter=half)
    assert np.all(np.isin(wide, half)) and np.all(np.diff(wd, axis=1) >= 0)
    # rerank=False with a filter still returns only allowed ids.
    f, _ = idx.search(q[:4], 10, rerank=False, filter=np.arange(N // 2) * 3 + 7)
    assert np.all((f - 7) % 3 == 0) and np.all(f < (N // 2) * 3 + 7)
    with pytest.raises(UnknownIdError, match="filter.*8"):
        idx.search(q[:1], 3, filter=[7, 8])
    with pytest.raises(KeyError):
        idx.search(q[:1], 3, filter=[-1])
    with pytest.raises(DTypeError, match="filter"):
        idx.search(q[:1], 3, filter=np.array([7.0, 10.0]))
    with pytest.raises(InvalidArgumentError, match="filter"):
        idx.search(q[:1], 3, filter=np.array([[7, 10]]))
    with pytest.raises(InvalidArgumentError, match="filter"):
        idx.search(q[:1], 3, filter=np.zeros((2, 2), dtype=bool))


def test_filter_skips_removed_ids() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 16)).astype(np.float32)
    idx = ann.BQGraphIndex(16, metric="l2", bits=2)
    idx.add(x)
    idx.remove([3, 4])
    with pytest.raises(UnknownIdError, match="3"):
        idx.search(x[:1], 3, filter=[3, 5])
    bitmap = np.ones(500, dtype=bool)
    found, _ = idx.search(x[3:5], 10, filter=bitmap)
    assert not np.isin(found, [3, 4]).any()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8"])
@pytest.mark.parametrize("metric", ["cosine", "l2"])
def test_get_returns_the_stored_rounding(dtype: ann.RerankDtype, metric: ann.Metric) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((300, 24)).astype(np.float32)
    idx = ann.BQGraphIndex(24, metric=metric, bits=2, rerank_dtype=dtype)
    idx.add(x, ids=np.arange(300) + 100)
    v = x.astype(np.float64)
    if metric == "cosine":
        v = v / np.linalg.norm(v, axis=1, keepdims=True)
    v32 = v.astype(np.float32)
    if dtype == "float32":
        want = v32
    elif dtype == "float16":
        want = v32.astype(np.float16).astype(np.float32)
    elif dtype == "bfloat16":
        # Round to nearest even on the upper 16 bits of the float32.
        b = v32.view(np.uint32).astype(np.uint64)
        b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
        want = b.astype(np.uint32).view(np.float32)
    else:
        s = np.abs(v32).max(axis=1, keepdims=True) / np.float32(127)
        want = (s * np.round(v32 / s)).astype(np.float32)
    got = idx.get([100, 399, 100, 250])
    assert got.dtype == np.float32 and got.shape == (4, 24)
    rows = [0, 299, 0, 150]
    np.testing.assert_allclose(got, want[rows], rtol=0, atol=1e-6 if dtype == "int8" else 0)
    # The distances search returns are the exact distances to exactly these vectors.
    q = (x[:1] + x[1:2]).astype(np.float64)
    if metric == "cosine":
        q = q / np.linalg.norm(q)
    found, d = idx.search(q.astype(np.float32), 3, ef_search=400)
    g = idx.get(found[0]).astype(np.float64)
    ref = 1 - g @ q[0] if metric == "cosine" else ((q - g) ** 2).sum(axis=1)
    np.testing.assert_allclose(d[0], ref, rtol=1e-5, atol=1e-5)
    assert idx.get([]).shape == (0, 24)


def test_get_errors() -> None:
    idx = ann.BQGraphIndex(4, metric="l2", bits=2)
    idx.add(np.eye(4, dtype=np.float32) + 1, ids=[10, 11, 12, 13])
    idx.remove([12])
    with pytest.raises(UnknownIdError, match="12") as info:
        idx.get([10, 12])
    assert isinstance(info.value, KeyError) and isinstance(info.value, ordcore.UnknownIdError)
    with pytest.raises(UnknownIdError, match="5, 6.*1 more"):
        idx.get([5, 6, 7, 8, 9, 1])
    with pytest.raises(UnknownIdError):
        idx.get(np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(DTypeError, match="ids"):
        idx.get([10.0])
    with pytest.raises(InvalidArgumentError, match="ids"):
        idx.get(10)
    with pytest.raises(InvalidArgumentError, match="ids"):
        idx.get([[10]])


def test_auto_choice_on_real_data(shared_data: Path, tmp_path: Path) -> None:
    """The code ``bits="auto"`` picks reaches recall@10 0.95 at ``ef_search`` <= 128 on the
    data it was picked for, no cheaper width's estimate reached the target (except 4 bits
    when 8 bits were preferred for a hot path within 25 %), and the choice survives save /
    load."""
    cases = []
    x, q = _glosses(shared_data)
    cases.append((x, q, "cosine"))
    sift = np.load(shared_data / "ann" / "sift_base.npy", mmap_mode="r")[:N]
    sq = np.load(shared_data / "ann" / "sift_queries.npy")[:NQ]
    cases.append((np.ascontiguousarray(sift, dtype=np.float32), sq.astype(np.float32), "l2"))
    mean = x.mean(0)
    vt = np.linalg.svd(x - mean, full_matrices=False)[2][:50]
    cases.append(((x - mean) @ vt.T, (q - mean) @ vt.T, "cosine"))
    chosen = []
    for base, queries, metric in cases:
        idx = ann.BQGraphIndex(base.shape[1], metric=metric)
        assert idx.bits == "auto" and idx.rotation == "auto" and idx.choice is None
        idx.add(base)  # a width that serves: no BQFitnessWarning (warnings are errors)
        choice = idx.choice
        assert choice is not None and choice["bits"] == idx.bits
        assert choice["rotation"] == idx.rotation and choice["base"] == len(base)
        # A base of 20,000 rows: the small-base construction beam of the chosen width.
        assert (idx.R, idx.L_build) == ann._default_build(base.shape[1], idx.bits, len(base))
        assert idx.L_build < ann._default_build(base.shape[1], idx.bits)[1]
        assert "cheapest" in choice["reason"]
        key = f"{choice['bits']}/{choice['rotation'] or 'none'}"
        assert choice["estimates"][key] >= choice["target"]
        order = [f"{b}/{r}" for b in (1, 2, 4, 8) for r in ("none", "hadamard")]
        cheapest = key
        if choice["bits"] == 8 and "instead of 4/" in choice["reason"]:
            cheapest = next(c for c in order if choice["estimates"][c] >= choice["target"])
            assert cheapest.startswith("4/") and f"instead of {cheapest}" in choice["reason"]
        assert all(choice["estimates"][c] < choice["target"]
                   for c in order[: order.index(cheapest)])
        truth = ann.exact_search(base, queries, 10, metric)[0]  # type: ignore[arg-type]
        recall = max(
            ann.recall_at_k(idx.search(queries, 10, ef_search=ef)[0], truth) for ef in (64, 128)
        )
        assert recall >= 0.95, (metric, choice, recall)
        same = ann.choose_codes(base, metric=metric, seed=0)  # type: ignore[arg-type]
        # The index's choice is choose_codes' plus the rerank store picked with it.
        assert {k: v for k, v in choice.items() if k not in ("reason", "rerank_dtype")} == {
            k: v for k, v in same.items() if k != "reason"}
        assert choice["reason"].startswith(same["reason"] + "; rerank store ")
        assert choice["rerank_dtype"] == idx.rerank_dtype
        chosen.append((choice["bits"], idx.rerank_dtype))
        path = tmp_path / "i.ordann"
        idx.save(path)
        back = ann.BQGraphIndex.load(path)
        assert back.choice == choice and back.bits == idx.bits
    # Measured on these subsets: glosses 2 bits; SIFT and PCA-50 glosses 8 bits (4 bits
    # reach the target, and the 8-bit hot path is within 25 % at 128 / 50 dimensions).
    # SIFT's integer counts are float16 values: a float16 rerank store holds them exactly;
    # the normalized rows of the cosine sets are not.
    assert chosen == [(2, "float32"), (8, "float16"), (8, "float32")], chosen


@pytest.mark.parametrize(("dim", "bits"), [(64, 8), (128, 8), (200, 4)])
def test_auto_prefers_8_bits_when_its_hot_path_is_close(dim: int, bits: int) -> None:
    """Where 4 bits are the cheapest code reaching the target, the choice takes 8 bits when
    the 8-bit index's codes + graph per row are within 25 % of the 4-bit one's (up to 128
    dimensions at the default R = 64), and keeps 4 bits above; the byte counts are those of
    built indexes (``memory_usage``)."""
    x = np.random.default_rng(5).standard_normal((3000, dim)).astype(np.float32)
    c = ann.choose_codes(x, metric="l2")
    assert c["estimates"]["2/none"] < c["target"] <= c["estimates"]["4/none"]
    assert (c["bits"], c["rotation"]) == (bits, None)
    hot = {}
    for b in (4, 8):
        idx = ann.BQGraphIndex(dim, metric="l2", bits=b)
        idx.add(x[:1000])
        assert idx.R == ann._default_build(dim, b, len(x))[0]
        use = idx.memory_usage()
        hot[b] = ann._hot_bytes_per_row(dim, b, None, len(x))
        # (the graph also holds a 4-byte degree per row)
        assert (hot[b] + 4) * len(idx) == use["codes"] + use["graph"]
    assert (hot[8] <= 1.25 * hot[4]) == (bits == 8)
    if bits == 8:
        assert "instead of 4/none" in c["reason"] and f"{hot[8]} bytes" in c["reason"]
    else:
        assert c["reason"].startswith("4 bits: the cheapest")


def test_an_int8_store_turns_the_8_bit_preference_off() -> None:
    """``rerank_dtype="int8"`` asks for memory over exact distances: with ``bits="auto"`` the
    choice keeps the cheapest code reaching the target (4 bits here) instead of taking 8
    bits for speed, and says so; the other stores keep the preference. ``prefer_8_bits``
    must be a bool."""
    x = np.random.default_rng(5).standard_normal((3000, 64)).astype(np.float32)
    c = ann.choose_codes(x, metric="l2", prefer_8_bits=False)
    assert (c["bits"], c["rotation"]) == (4, None)
    assert "8-bit preference is off" in c["reason"]
    assert c["estimates"] == ann.choose_codes(x, metric="l2")["estimates"]
    for dtype, bits in [("int8", 4), ("float32", 8), ("float16", 8), ("auto", 8)]:
        idx = ann.BQGraphIndex(64, metric="l2", rerank_dtype=dtype)  # type: ignore[arg-type]
        idx.add(x)
        assert idx.bits == bits, (dtype, idx.choice["reason"])
        assert ("8-bit preference is off" in idx.choice["reason"]) == (dtype == "int8")
    with pytest.raises(ann.InvalidArgumentError, match="prefer_8_bits"):
        ann.choose_codes(x, metric="l2", prefer_8_bits="no")  # type: ignore[arg-type]


def test_explicit_bits_unchanged(tmp_path: Path) -> None:
    """``bits=2`` alone is today's index: no rotation, no choice, version-1 file bytes."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((400, 32)).astype(np.float32)
    a = ann.BQGraphIndex(32, metric="l2", bits=2)
    b = ann.BQGraphIndex(32, metric="l2", bits=2, rotation=None)
    assert a.rotation is None and a.choice is None
    a.add(x)
    b.add(x)
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    raw = (tmp_path / "a").read_bytes()
    assert raw == (tmp_path / "b").read_bytes()
    assert int.from_bytes(raw[8:12], "little") == 1


def test_auto_pending_and_small_adds(tmp_path: Path) -> None:
    idx = ann.BQGraphIndex(8, metric="l2", rotation="hadamard")
    assert idx.bits == "auto" and idx.rotation == "hadamard"
    idx.save(tmp_path / "empty")
    back = ann.BQGraphIndex.load(tmp_path / "empty")
    assert back.bits == "auto" and back.rotation == "hadamard" and back.choice is None
    back.add(np.zeros((0, 8), np.float32))
    assert back.bits == "auto"
    x = np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32)
    back.add(x)  # too few rows to estimate: the most accurate code, rotation kept
    assert back.bits == 8 and back.rotation == "hadamard"
    assert back.choice is not None and "too few" in back.choice["reason"]
    back.add(x + 1)  # later adds keep the choice
    assert back.bits == 8 and len(back) == 12
    # A failed first add leaves the choice pending.
    fresh = ann.BQGraphIndex(8, metric="l2")
    bad = x.copy()
    bad[2, 3] = np.nan
    with pytest.raises(InvalidArgumentError, match="row 2"):
        fresh.add(bad)
    assert fresh.bits == "auto" and len(fresh) == 0


def test_choose_codes_arguments() -> None:
    x = np.random.default_rng(5).standard_normal((2000, 16)).astype(np.float32)
    c = ann.choose_codes(x, metric="l2", base_size=200_000)
    assert c["base"] == 200_000 and set(c["estimates"]) == {
        f"{b}/{r}" for b in (1, 2, 4, 8) for r in ("none", "hadamard")
    }
    # A larger base is harder for a code: the estimates cannot rise.
    small = ann.choose_codes(x, metric="l2")
    assert all(c["estimates"][key] <= small["estimates"][key] + 0.02 for key in c["estimates"])
    only = ann.choose_codes(x, metric="l2", rotation=None)
    assert set(only["estimates"]) == {"1/none", "2/none", "4/none", "8/none"}
    with pytest.raises(InvalidArgumentError, match="target"):
        ann.choose_codes(x, metric="l2", target=1.5)
    with pytest.raises(InvalidArgumentError, match="rotation"):
        ann.choose_codes(x, metric="l2", rotation="pca")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="bits"):
        ann.BQGraphIndex(16, bits=3)
    with pytest.raises(InvalidArgumentError, match="bits"):
        ann.BQGraphIndex(16, bits="8")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="rotation"):
        ann.BQGraphIndex(16, bits=2, rotation="pca")  # type: ignore[arg-type]


def test_bq_fitness_per_bits() -> None:
    x = np.random.default_rng(6).standard_normal((3000, 32)).astype(np.float32)
    rep = ann.bq_fitness(x, metric="l2", sample=100)
    assert set(rep["per_bits"]) == {1, 2, 4, 8} and rep["bits"] == 2
    assert rep["recall"] == rep["per_bits"][2]["recall"]
    # More bits rank better; the asymmetric 8-bit codes nearly exactly.
    r = [rep["per_bits"][b]["recall"] for b in (1, 2, 4, 8)]
    assert r == sorted(r) and r[3] > 0.9
    four = ann.bq_fitness(x, metric="l2", sample=100, bits=4)
    assert set(four["per_bits"]) == {4} and four["recall"] == rep["per_bits"][4]["recall"]
    with pytest.raises(InvalidArgumentError, match="bits"):
        ann.bq_fitness(x, metric="l2", bits=3)


def test_choose_codes_extrapolates_a_sample_to_the_base(shared_data: Path) -> None:
    """A 10 % sample standing for the whole base (``base_size``) picks what the whole base
    picks, and estimates no higher than the sample at its own size (codes rank a larger
    base worse). Measured on SIFT 200k: the full base and the extrapolated sample pick
    8 bits (4 bits reach the target; 8 bits' hot path is within 25 %), the sample at its
    own size 2 bits + hadamard."""
    sift = np.load(shared_data / "ann" / "sift_base.npy", mmap_mode="r")[:N]
    x = np.ascontiguousarray(sift, dtype=np.float32)
    full = ann.choose_codes(x, metric="l2")
    rows = np.sort(np.random.default_rng(1).choice(N, size=N // 10, replace=False))
    ext = ann.choose_codes(x[rows], metric="l2", base_size=N)
    own = ann.choose_codes(x[rows], metric="l2")
    assert (ext["bits"], ext["rotation"]) == (full["bits"], full["rotation"])
    assert ext["base"] == N and own["base"] == N // 10
    assert all(ext["estimates"][c] <= own["estimates"][c] + 1e-9 for c in own["estimates"])


def _small_index() -> tuple[ann.BQGraphIndex, np.ndarray]:
    x = np.random.default_rng(3).standard_normal((300, 8)).astype(np.float32)
    idx = ann.BQGraphIndex(8, metric="l2", bits=2)
    idx.add(x)
    return idx, x


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_an_8_bit_integer_filter_is_refused_as_ambiguous(dtype: type) -> None:
    # A 0/1 mask in uint8 read as an allow-list allowed only ids 0 and 1, silently.
    idx, x = _small_index()
    mask = (np.arange(300) % 2).astype(dtype)
    with pytest.raises(DTypeError, match="filter: .*ambiguous.*bool"):
        idx.search(x[:2], 5, filter=mask)
    got, _ = idx.search(x[:2], 5, filter=mask.astype(bool))
    assert (got % 2 == 1).all()


def test_unknown_ids_are_named_once_and_as_given() -> None:
    idx, _ = _small_index()
    with pytest.raises(UnknownIdError, match=r"ids are not in the index .*: 1000, 1001$"):
        idx.get([1000, 1000, 1000, 1001, 5])
    with pytest.raises(UnknownIdError, match=r"id 9223372036854775808 is not in the index"):
        idx.get([2**63])
    with pytest.raises(UnknownIdError, match=r"filter: id 18446744073709551615"):
        idx.search(np.zeros((1, 8), np.float32), 3, filter=np.array([2**64 - 1], np.uint64))
    with pytest.raises(UnknownIdError, match="-1"):
        idx.get([-1])


def test_choice_is_a_copy_and_messages_name_auto() -> None:
    x = np.random.default_rng(4).standard_normal((1500, 16)).astype(np.float32)
    idx = ann.BQGraphIndex(16, metric="l2")
    assert "bits='auto'" in repr(idx) and "rotation='auto'" in repr(idx)
    idx.add(x)
    choice = idx.choice
    assert choice is not None and choice["estimates"]
    choice["estimates"].clear()
    assert idx.choice is not None and idx.choice["estimates"]
    with pytest.raises(InvalidArgumentError, match="X: has no rows"):
        ann.choose_codes(np.zeros((0, 16), np.float32), metric="l2")
    deep = ann.choose_codes(x, metric="l2", k=100)
    assert "recall@100 at ef_search=100" in deep["reason"]


def test_filter_switch_to_the_exact_scan_depends_on_the_dimension() -> None:
    """The exact scan of the allowed rows takes over up to ``allowed**2 <= F * ef * n`` with
    ``F = max(1, 4 * (384 / dim) ** 0.75)``: on 50-d rows up to 2.1 times the allowed ids of
    384-d rows (where the two paths cost the same, measured on GloVe-50 / glosses). The scan
    returns exact distances even with ``rerank=False`` (the graph path: code distances),
    which tells the paths apart, and exact filtered search's ids."""
    n, ef = 4000, 64
    for dim in (50, 384):
        rng = np.random.default_rng(dim)
        x = rng.standard_normal((n, dim)).astype(np.float32)
        q = rng.standard_normal((20, dim)).astype(np.float32)
        idx = ann.BQGraphIndex(dim, metric="l2", bits=4)
        idx.add(x)
        factor = max(1.0, 4 * (384 / dim) ** 0.75)
        switch = int((factor * ef * n) ** 0.5)
        for m, scans in ((switch, True), (switch + 20, False)):
            rows = np.sort(rng.choice(n, size=m, replace=False))
            found, d = idx.search(q, 10, ef_search=ef, rerank=False, filter=rows)
            truth, dt = ann.exact_search(x[rows], q, 10, "l2")
            exact = bool(np.array_equal(found, rows[truth]) and np.allclose(d, dt))
            assert exact == scans, (dim, m, scans)
