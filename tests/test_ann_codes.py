"""The 4- and 8-bit scalar codes of ``BQGraphIndex`` (asymmetric scoring, format version 2)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ordcore
from ordcore import ann

from ann_header import set_header_crc


def _clustered(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((20, d)).astype(np.float32) * 3
    x = centers[rng.integers(0, 20, n)] + rng.standard_normal((n, d)).astype(np.float32)
    return x.astype(np.float32)


def _pca(x: np.ndarray, q: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    m = x.mean(0)
    _, _, vt = np.linalg.svd(x[:10000] - m, full_matrices=False)
    p = vt[:d].T
    return ((x - m) @ p).astype(np.float32), ((q - m) @ p).astype(np.float32)


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("metric", ["l2", "cosine", "ip"])
@pytest.mark.parametrize("rotation", [None, "hadamard"])
def test_scalar_codes_reach_exact_results(bits: int, metric: str, rotation: str | None) -> None:
    """Graph search over the scalar codes against brute-force exact search."""
    data = _clustered(3100, 48, 1)
    x, q = data[:3000], data[3000:]
    if metric == "ip":
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    idx = ann.BQGraphIndex(48, metric=metric, bits=bits, rotation=rotation)  # type: ignore[arg-type]
    idx.add(x)
    truth, tdist = ann.exact_search(x, q, 10, metric=metric)  # type: ignore[arg-type]
    ids, dist = idx.search(q, k=10, ef_search=64)
    assert ann.recall_at_k(ids, truth) >= 0.95
    # The reranked distances are the exact ones.
    hit = ids[:, 0] == truth[:, 0]
    np.testing.assert_allclose(dist[hit, 0], tdist[hit, 0], rtol=1e-5, atol=1e-5)
    # Without the rerank the code order alone is already close (asymmetric scores).
    raw, _ = idx.search(q, k=10, ef_search=64, rerank=False)
    assert ann.recall_at_k(raw, truth) >= (0.45 if bits == 4 else 0.9)


def test_scalar_codes_on_low_dimensional_real_data(shared_data: Path) -> None:
    """50-d PCA-reduced glosses: 2-bit codes fall short, 4- and 8-bit codes reach 0.98."""
    base = np.load(shared_data / "ann" / "glosses_base.npy")[:20000].astype(np.float32)
    queries = np.load(shared_data / "ann" / "glosses_queries.npy")[:200].astype(np.float32)
    x, q = _pca(base, queries, 50)
    truth, _ = ann.exact_search(x, q, 10, metric="cosine")
    rec = {}
    for bits in (2, 4, 8):
        idx = ann.BQGraphIndex(50, bits=bits, rotation="hadamard")
        idx.add(x)
        ids, _ = idx.search(q, k=10, ef_search=40)
        rec[bits] = ann.recall_at_k(ids, truth)
    assert rec[4] >= 0.98 and rec[8] >= 0.98, rec
    assert rec[2] < rec[4] - 0.1, rec


_KERNEL_SCRIPT = """
import sys
import numpy as np
from ordcore import ann
dim, bits, metric, threads, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(5)
x = rng.standard_normal((1200, dim)).astype(np.float32)
idx = ann.BQGraphIndex(dim, metric=metric, bits=bits, R=16, L_build=32, rotation="hadamard", seed=2)
idx.add(x, num_threads=threads)
idx.save(out + ".idx")
ids, dist = idx.search(x[:40] + 0.1, k=10, ef_search=24, num_threads=threads)
# A search-time degree bound, and the float16 rerank store (F16C decode unless scalar).
ids_d, dist_d = idx.search(x[:40] + 0.1, k=10, ef_search=10, num_threads=threads, degree=6)
half = ann.BQGraphIndex(dim, metric=metric, bits=bits, R=16, L_build=32, rotation="hadamard", seed=2,
                        rerank_dtype="float16")
half.add(x, num_threads=threads)
ids_h, dist_h = half.search(x[:40] + 0.1, k=10, ef_search=24, num_threads=threads)
np.savez(out + ".npz", ids=ids, dist=dist, ids_d=ids_d, dist_d=dist_d, ids_h=ids_h, dist_h=dist_h)
print(ann.sq_kernel())
"""


@pytest.mark.parametrize(("bits", "dim", "metric"), [(4, 50, "l2"), (8, 50, "cosine"), (4, 384, "cosine"), (8, 130, "l2")])
def test_every_sq_kernel_builds_the_same_index(tmp_path: Path, bits: int, dim: int, metric: str) -> None:
    """AVX-512 VNNI, AVX2 and scalar kernels (capped by ORDCORE_ANN_SQ_KERNEL), the copies
    of the beam and prune loops for each popcount kernel (ORDCORE_ANN_KERNEL=popcnt), and 1
    or 2 threads, give byte-identical index files (so identical graphs, whose prunes score
    pairs with the query forms, and identical ordered neighbour lists) and identical search
    results, also with a search-time degree bound and from a float16 rerank store (decoded
    with F16C except under the scalar kernel)."""
    runs = {}
    for cap, threads in (("", 2), ("avx2", 1), ("scalar", 2), ("popcnt", 1)):
        env = dict(os.environ, ORDCORE_ANN_SQ_KERNEL="" if cap == "popcnt" else cap)
        if cap == "popcnt":
            env["ORDCORE_ANN_KERNEL"] = "popcnt"
        out = str(tmp_path / f"{cap or 'best'}{threads}")
        run = subprocess.run([sys.executable, "-c", _KERNEL_SCRIPT, str(dim), str(bits), metric, str(threads), out],
                             env=env, capture_output=True, text=True, check=True)
        used = run.stdout.strip()
        assert used in ("avx512-vnni", "avx2", "scalar")
        if cap == "scalar":
            assert used == "scalar"
        runs[cap] = out
    for cap in ("avx2", "scalar", "popcnt"):
        assert Path(runs[cap] + ".idx").read_bytes() == Path(runs[""] + ".idx").read_bytes()
        a, b = np.load(runs[cap] + ".npz"), np.load(runs[""] + ".npz")
        for key in ("ids", "dist", "ids_d", "dist_d", "ids_h", "dist_h"):
            np.testing.assert_array_equal(a[key], b[key])


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("mmap", [False, True])
def test_scalar_code_files_round_trip(tmp_path: Path, bits: int, mmap: bool) -> None:
    x = _clustered(800, 40, 3)
    idx = ann.BQGraphIndex(40, metric="l2", bits=bits, rotation="hadamard")
    idx.add(x)
    idx.remove([3, 5])
    path = tmp_path / "i.ordann"
    idx.save(path)
    head = path.read_bytes()[:28]
    assert struct.unpack_from("<I", head, 8)[0] == 5 and head[25] == bits  # renumbered: ranks saved
    back = ann.BQGraphIndex.load(path, mmap=mmap)
    assert back.bits == bits and len(back) == len(idx)
    assert back.search_degree == idx.search_degree > 0
    a, b = idx.search(x[:30], k=5, ef_search=32), back.search(x[:30], k=5, ef_search=32)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    back.add(x[:10] + 0.5)
    assert len(back) == len(idx) + 10


@pytest.mark.parametrize("bits", [1, 2])
def test_binary_code_files_stay_version_1(tmp_path: Path, bits: int) -> None:
    """1- and 2-bit indexes keep writing format version 1, which older releases read."""
    idx = ann.BQGraphIndex(16, bits=bits)
    idx.add(_clustered(100, 16, 4))
    idx.save(tmp_path / "i.ordann")
    assert struct.unpack_from("<I", (tmp_path / "i.ordann").read_bytes(), 8)[0] == 1


def test_version_1_header_with_scalar_bits_is_refused(tmp_path: Path) -> None:
    idx = ann.BQGraphIndex(16, bits=4)
    idx.add(_clustered(100, 16, 5))
    path = tmp_path / "i.ordann"
    idx.save(path)
    raw = bytearray(path.read_bytes())
    raw[8:12] = struct.pack("<I", 1)
    raw[96:100] = bytes(4)  # the version-4 degree bound: reserved in version 1
    set_header_crc(raw)
    path.write_bytes(bytes(raw))
    with pytest.raises(ordcore.IndexFormatError, match="needs format version 2"):
        ann.BQGraphIndex.load(path)


@pytest.mark.parametrize("bits", [0, 3, 16, True, 2.0, "4", None])
def test_bad_bits_is_one_clear_error(bits: object) -> None:
    with pytest.raises(ordcore.InvalidArgumentError, match="bits: must be 'auto', 1, 2, 4 or 8"):
        ann.BQGraphIndex(8, bits=bits)  # type: ignore[arg-type]


@pytest.mark.parametrize("bits", [4, 8])
def test_gpu_paths_refuse_scalar_codes(bits: int) -> None:
    from ordcore.gpu import ann as gpu_ann

    x = np.ones((2, 8), np.float32)
    with pytest.raises(ordcore.InvalidArgumentError, match="no GPU path"):
        gpu_ann.encode(x, bits=bits)
    with pytest.raises(ordcore.InvalidArgumentError, match="no GPU path"):
        gpu_ann.code_distance(x, x, 8, bits)


def test_gpu_paths_refuse_auto_bits() -> None:
    from ordcore.gpu import ann as gpu_ann

    x = np.ones((2, 8), np.float32)
    with pytest.raises(ordcore.InvalidArgumentError, match="bits.*'auto'.*chosen bits"):
        gpu_ann.encode(x, bits="auto")  # type: ignore[arg-type]


def _rounded(x: np.ndarray, dtype: str) -> np.ndarray:
    """The stored vectors of each rerank dtype, computed independently with NumPy."""
    if dtype == "float32":
        return x
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        b = x.view(np.uint32).astype(np.uint64)
        r = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16 << 16).astype(np.uint32)
        return r.view(np.float32)
    s = np.abs(x).max(axis=1, keepdims=True) / np.float32(127)
    return (np.clip(np.round(x / s), -127, 127) * s).astype(np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8"])
@pytest.mark.parametrize(("metric", "bits"), [("l2", 4), ("cosine", 2), ("ip", 8)])
# 2,000 rows of 6 clusters code poorly in 2 bits (estimated code-space recall@10 ~0.29): the
# fitness warning is right, and beside the point of this test.
@pytest.mark.filterwarnings("ignore::ordcore.errors.BQFitnessWarning")
def test_compact_rerank_store(tmp_path: Path, dtype: str, metric: str, bits: int) -> None:
    """Distances are the exact distances to the vectors as each dtype stores them; recall
    holds; the store is 2x / ~4x smaller; save + load (also mapped) give the same results."""
    data = _clustered(2100, 40, 6)
    x, q = data[:2000], data[2000:]
    if metric != "l2":
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    idx = ann.BQGraphIndex(40, metric=metric, bits=bits, rotation="hadamard", rerank_dtype=dtype)  # type: ignore[arg-type]
    idx.add(x)
    assert idx.rerank_dtype == dtype
    ids, dist = idx.search(q, k=10, ef_search=80)
    stored = _rounded(x, dtype)
    qq = q / np.linalg.norm(q, axis=1, keepdims=True) if metric == "cosine" else q
    got = stored[ids]
    if metric == "l2":
        want = ((got - qq[:, None, :]) ** 2).sum(-1)
    else:
        want = 1 - (got * qq[:, None, :]).sum(-1)
    np.testing.assert_allclose(dist, want, rtol=2e-4, atol=2e-5)
    truth, _ = ann.exact_search(x, q, 10, metric=metric)  # type: ignore[arg-type]
    assert ann.recall_at_k(ids, truth) >= 0.85
    per_row = {"float32": 160, "float16": 80, "bfloat16": 80, "int8": 44}[dtype]
    assert idx.memory_usage()["float_vectors"] == 2000 * per_row
    idx.save(tmp_path / "i.ordann")
    version = struct.unpack_from("<I", (tmp_path / "i.ordann").read_bytes(), 8)[0]
    assert version == (1 if (dtype == "float32" and bits <= 2) else 2 if bits <= 2 else 5)
    for mmap in (False, True):
        back = ann.BQGraphIndex.load(tmp_path / "i.ordann", mmap=mmap)
        assert back.rerank_dtype == dtype
        assert back.memory_usage()["float_vectors_mapped"] is mmap
        b_ids, b_dist = back.search(q, k=10, ef_search=80)
        np.testing.assert_array_equal(b_ids, ids)
        np.testing.assert_array_equal(b_dist, dist)
    back.remove([1, 2, 3])
    back.compact()
    assert len(back) == 1997 and back.search(q, k=10)[0].min() >= 0


@pytest.mark.parametrize("dtype", ["float64", "fp16", "", None, 16])
def test_bad_rerank_dtype_is_one_clear_error(dtype: object) -> None:
    with pytest.raises(ordcore.InvalidArgumentError, match="rerank_dtype: unknown rerank dtype"):
        ann.BQGraphIndex(8, rerank_dtype=dtype)  # type: ignore[arg-type]


def test_float16_store_refuses_values_it_cannot_hold() -> None:
    idx = ann.BQGraphIndex(4, metric="l2", rerank_dtype="float16")
    x = np.ones((10, 4), np.float32)
    x[7, 2] = 70000.0
    with pytest.raises(ordcore.InvalidArgumentError, match="row 7 .* float16"):
        idx.add(x)
    assert len(idx) == 0
    ann.BQGraphIndex(4, metric="l2", rerank_dtype="bfloat16").add(x)


def _integer_rows(n: int, d: int, seed: int) -> np.ndarray:
    """Clustered rows of small integer counts (as SIFT's): every value a float16 value."""
    return np.clip(np.rint(_clustered(n, d, seed) * 20 + 60), 0, 255).astype(np.float32)


def test_auto_rerank_store_is_float16_only_when_it_holds_the_rows_exactly(tmp_path: Path) -> None:
    """``rerank_dtype="auto"`` (the default) with ``bits="auto"``: float16 for rows whose
    values are all float16 values, with the ids and distances of a float32 store; float32
    otherwise, under cosine and with an explicit ``bits``; a later add of other values widens
    the store to float32 first, so the results stay those of a float32 store."""
    data = _integer_rows(3100, 32, 3)
    x, q = data[:3000], data[3000:]
    idx = ann.BQGraphIndex(32, metric="l2")
    assert idx.rerank_dtype == "auto"
    idx.add(x)
    choice = idx.choice
    assert choice is not None and choice["rerank_dtype"] == idx.rerank_dtype == "float16"
    assert "rerank store float16" in choice["reason"]
    ref = ann.BQGraphIndex(32, metric="l2", bits=idx.bits, rotation=idx.rotation,
                           R=idx.R, L_build=idx.L_build, rerank_dtype="float32")
    ref.add(x)
    assert idx.memory_usage()["float_vectors"] * 2 == ref.memory_usage()["float_vectors"]
    for ef in (10, 40):
        got, want = idx.search(q, 10, ef_search=ef), ref.search(q, 10, ef_search=ef)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    # Saved and loaded, the pick and its widening carry over.
    path = tmp_path / "auto16.ordann"
    idx.save(path)
    back = ann.BQGraphIndex.load(path)
    assert back.rerank_dtype == "float16" and back.choice == choice
    more = x[:50] + np.float32(0.1)  # 60.1 and the like are not float16 values
    more[0, 0] = 1e6  # beyond float16's range: a float16 store would refuse the row
    for index in (idx, back):
        index.add(more)
        assert index.rerank_dtype == "float32" and index.choice is not None
        assert index.choice["rerank_dtype"] == "float32"
        assert "widened to float32" in index.choice["reason"]
    ref.add(more)
    for index in (idx, back):
        got, want = index.search(q, 10, ef_search=40), ref.search(q, 10, ef_search=40)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    idx.save(path)
    assert ann.BQGraphIndex.load(path).rerank_dtype == "float32"
    # Float16 values added later keep the float16 store.
    keep = ann.BQGraphIndex(32, metric="l2")
    keep.add(x[:2000])
    keep.add(x[2000:])
    assert keep.rerank_dtype == "float16"
    # Other values, cosine, an explicit bits or rerank_dtype: float32 / as given.
    assert _auto_store(x + np.float32(0.1), "l2") == "float32"
    assert _auto_store(x, "cosine") == "float32"
    assert _auto_store(x, "l2", bits=8) == "float32"
    assert _auto_store(x, "l2", rerank_dtype="int8") == "int8"


def test_auto_rerank_store_takes_bfloat16_for_bfloat16_values() -> None:
    """Rows of bfloat16 values that float16 cannot hold (embeddings shipped as bfloat16)
    get a bfloat16 store with the results of a float32 one; other values widen it."""
    x = (_clustered(2600, 24, 5) * 1e-3).view(np.uint32) & np.uint32(0xFFFF0000)
    x = x.view(np.float32)
    x[0, 0] = 2.0**17  # a bfloat16 value beyond float16's range
    x, q = x[:2500], x[2500:]
    assert not ann._holds_exactly("float16", x)
    idx = ann.BQGraphIndex(24, metric="ip")
    idx.add(x)
    assert idx.rerank_dtype == "bfloat16" and idx.choice is not None
    assert idx.choice["rerank_dtype"] == "bfloat16"
    ref = ann.BQGraphIndex(24, metric="ip", bits=idx.bits, rotation=idx.rotation,
                           R=idx.R, L_build=idx.L_build, rerank_dtype="float32")
    ref.add(x)
    more = q + np.float32(1e-7)
    for index in (idx, ref):
        index.add(more)
    assert idx.rerank_dtype == "float32" and "bfloat16 does not hold" in idx.choice["reason"]
    got, want = idx.search(q, 10, ef_search=40), ref.search(q, 10, ef_search=40)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def _auto_store(x: np.ndarray, metric: str, **kw: object) -> str:
    idx = ann.BQGraphIndex(x.shape[1], metric=metric, **kw)  # type: ignore[arg-type]
    idx.add(x)
    if idx.choice is not None:
        assert idx.choice.get("rerank_dtype", idx.rerank_dtype) == idx.rerank_dtype
    return idx.rerank_dtype


def test_index_files_before_the_automatic_rerank_store_load(tmp_path: Path) -> None:
    """A saved choice without ``rerank_dtype`` (files written before it) loads, and keeps its
    store on later adds; a choice naming another store than the file's, or a pending choice
    with an unknown one, is an ``IndexFormatError``."""
    import json

    x = _integer_rows(1500, 16, 4)
    idx = ann.BQGraphIndex(16, metric="l2")
    idx.add(x)
    meta = json.loads(idx._inner.meta())
    del meta["choice"]["rerank_dtype"]
    old = ann.BQGraphIndex(16, metric="l2", bits=idx.bits, rotation=idx.rotation,
                           rerank_dtype="float16")
    old.add(x)
    old._inner.set_meta(json.dumps(meta))
    path = tmp_path / "old.ordann"
    old.save(path)
    back = ann.BQGraphIndex.load(path)
    assert back.choice is not None and "rerank_dtype" not in back.choice
    back.add(x[:10] + np.float32(0.1))
    assert back.rerank_dtype == "float16"  # not an automatic pick: rounded, as asked
    for bad in ({**meta, "choice": {**meta["choice"], "rerank_dtype": "float32"}},
                {"pending": {"rotation": "auto", "rerank_dtype": "float64"}}):
        target = ann.BQGraphIndex(16, metric="l2", bits=idx.bits, rotation=idx.rotation,
                                  rerank_dtype="float16")
        if "choice" in bad:
            target.add(x)
        target._inner.set_meta(json.dumps(bad))
        target.save(path)
        with pytest.raises(ordcore.IndexFormatError, match="old.ordann"):
            ann.BQGraphIndex.load(path)


@pytest.mark.parametrize("bits", [4, 8, "auto"])
def test_scalar_codes_serve_data_with_a_large_common_offset(bits: object) -> None:
    """The query's int8 form rounds the query minus its mean, so data whose common offset
    (100) dwarfs its spread (1) keeps its neighbours without a rotation (recall@10 about
    0.999 at ``ef_search`` 64; 0.71 when the query itself was rounded on one scale)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3000, 32)).astype(np.float32) + 100
    q = x[:200] + np.float32(0.3) * rng.standard_normal((200, 32)).astype(np.float32)
    extra = {} if bits == "auto" else {"rotation": None}
    idx = ann.BQGraphIndex(32, metric="l2", bits=bits, **extra)  # type: ignore[arg-type]
    idx.add(x)
    truth, _ = ann.exact_search(x, q, 10, "l2")
    assert ann.recall_at_k(idx.search(q, 10, ef_search=64)[0], truth) >= 0.97
