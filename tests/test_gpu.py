"""GPU paths (ordcore.gpu): NVRTC compilation and import hygiene everywhere, kernels on a device.

Tests marked ``gpu`` need CuPy and a CUDA device; tests/conftest.py skips them with the
reason otherwise. The rest runs in CPU CI: every ``.cu`` compiles through NVRTC for
``compute_90`` with no GPU, and ``import ordcore`` works (and imports no CuPy) without CuPy.
The device results are compared with ordcore's CPU core and with the NumPy references of
ordcore.gpu.reference (which test_gpu_reference.py checks against the peers).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
from importlib import resources
from typing import Any

import numpy as np
import pytest

import ordcore
from ordcore import _core
from ordcore.errors import DTypeError, GpuError, InvalidArgumentError
from ordcore.gpu import is_available, is_device_array, kernel_names, kernel_sources, reference

# ------------------------------------------------------------------------------ no GPU needed


@pytest.mark.parametrize("module", ["ann", "hadamard", "sfc"])
def test_every_cu_compiles_through_nvrtc_for_compute_90(module: str) -> None:
    from ordcore.gpu import compile_ptx

    names = kernel_names()[module]
    assert names
    ptx = compile_ptx(module, names, arch="compute_90")
    assert ".target sm_90" in ptx
    assert ptx.count(".entry") >= len(set(names))


def test_kernel_sources_ship_as_package_data() -> None:
    root = resources.files("ordcore.gpu").joinpath("kernels")
    cu = sorted(e.name for e in root.iterdir() if e.name.endswith(".cu"))
    assert cu == ["ann.cu", "hadamard.cu", "sfc.cu"]
    assert set(kernel_sources()) == set(kernel_names()) == {"ann", "hadamard", "sfc"}
    for src in kernel_sources().values():
        # NVRTC must not need the CUDA toolkit headers
        assert not re.search(r"^\s*#\s*include", src, flags=re.MULTILINE)


def test_compile_error_is_a_gpu_error_with_the_nvrtc_log() -> None:
    from ordcore.gpu import compile_ptx

    with pytest.raises(GpuError, match="no_such_kernel"):
        compile_ptx("hadamard", ["no_such_kernel<3>"])


_BLOCK_CUPY = textwrap.dedent(
    """
    import sys, importlib.abc
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("cupy", "cupy_backends", "torch"):
                raise ImportError("blocked for the test: " + name)
            return None
    sys.meta_path.insert(0, Block())
    """
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_import_ordcore_never_imports_cupy() -> None:
    r = _run(
        "import sys, ordcore, ordcore.gpu\n"
        "from ordcore.gpu import sfc, hadamard, ann, reference\n"
        "import ordcore.sfc, ordcore.hadamard, ordcore.ann\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('cupy', 'cupy_backends', 'torch')]\n"
        "assert not bad, bad\n"
    )
    assert r.returncode == 0, r.stderr


def test_import_ordcore_works_without_cupy_and_gpu_input_gives_a_clear_error() -> None:
    r = _run(
        _BLOCK_CUPY
        + textwrap.dedent(
            """
            import ordcore
            from ordcore import gpu
            from ordcore.errors import GpuError
            assert gpu.is_available() is False
            class FakeCuda:
                __cuda_array_interface__ = {"shape": (1, 2), "typestr": "<u4", "data": (0, False), "version": 3}
            assert gpu.is_device_array(FakeCuda())
            for call in (lambda: gpu.sfc.hilbert_encode(FakeCuda(), 4),
                         lambda: gpu.hadamard.fwht(FakeCuda()),
                         lambda: gpu.ann.encode(FakeCuda())):
                try:
                    call()
                except GpuError as e:
                    assert "pip install 'ordcore[gpu]'" in str(e), e
                else:
                    raise AssertionError("no GpuError")
            print("ok")
            """
        )
    )
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_is_device_array_needs_no_cupy() -> None:
    class CudaIface:
        __cuda_array_interface__: dict[str, Any] = {}

    class FakeTorch:
        __module__ = "torch"

        def __init__(self, cuda: bool) -> None:
            self.is_cuda = cuda

    FakeCupy = type("ndarray", (), {"__module__": "cupy._core.core"})
    assert not is_device_array(np.zeros(3))
    assert not is_device_array([1, 2])
    assert is_device_array(CudaIface())
    assert is_device_array(FakeCupy())
    assert is_device_array(FakeTorch(True))
    assert not is_device_array(FakeTorch(False))
    # NumPy objects answer at once; a class with no module name is not a device array.
    assert not is_device_array(np.float32(1)) and not is_device_array(np.ma.zeros(3))
    NoModule = type("NoModule", (), {})
    NoModule.__module__ = None  # type: ignore[assignment]
    assert not is_device_array(NoModule())


def test_is_available_is_a_bool() -> None:
    assert isinstance(is_available(), bool)


# ------------------------------------------------------------------------------ on a device

gpu = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp() -> Any:
    import cupy

    return cupy


def _torch_cuda() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


# --- sfc

_INT_DTYPES = ["uint8", "int16", "int32", "uint32", "int64", "uint64"]


@gpu
@pytest.mark.parametrize(("d", "nbits"), [(2, 16), (2, 32), (3, 10), (3, 21), (4, 16), (5, 12), (1, 64), (16, 4)])
def test_gpu_hilbert_matches_reference_and_cpu(cp: Any, d: int, nbits: int) -> None:
    from ordcore.gpu import sfc

    rng = np.random.default_rng(d * 1000 + nbits)
    hi = np.uint64((1 << nbits) - 1) if nbits < 64 else np.uint64(2**64 - 1)
    pts = rng.integers(0, hi, size=(5000, d), dtype=np.uint64, endpoint=True)
    pts[0] = hi
    pts[1] = 0
    want = reference.hilbert_encode(pts, nbits)
    got = sfc.hilbert_encode(cp.asarray(pts), nbits)
    assert isinstance(got, cp.ndarray) and got.dtype == cp.uint64 and got.shape == (5000,)
    np.testing.assert_array_equal(got.get(), want)
    np.testing.assert_array_equal(np.asarray(_core.sfc_hilbert_encode(pts, nbits)), want)
    back = sfc.hilbert_decode(got, nbits, d)
    assert back.shape == (5000, d)
    np.testing.assert_array_equal(back.get(), pts)


@gpu
@pytest.mark.parametrize("dtype", _INT_DTYPES)
@pytest.mark.parametrize("d", [2, 3, 6])
def test_gpu_sfc_every_coordinate_dtype(cp: Any, dtype: str, d: int) -> None:
    from ordcore.gpu import sfc

    nbits = min(7, 64 // d)
    pts = np.random.default_rng(d).integers(0, 1 << nbits, size=(777, d)).astype(dtype)
    np.testing.assert_array_equal(sfc.hilbert_encode(cp.asarray(pts), nbits).get(), reference.hilbert_encode(pts, nbits))
    for axis0 in ("lsb", "msb"):
        msb = axis0 == "msb"
        m = sfc.morton_encode(cp.asarray(pts), nbits, axis0=axis0)
        np.testing.assert_array_equal(m.get(), reference.morton_encode(pts, nbits, msb_first=msb))
        np.testing.assert_array_equal(sfc.morton_decode(m, nbits, d, axis0=axis0).get(), pts.astype(np.uint64))


@gpu
@pytest.mark.parametrize(("d", "nbits"), [(2, 21), (2, 32), (3, 21), (4, 16), (1, 64)])
def test_gpu_morton_matches_reference_and_cpu(cp: Any, d: int, nbits: int) -> None:
    from ordcore.gpu import sfc

    hi = np.uint64((1 << nbits) - 1) if nbits < 64 else np.uint64(2**64 - 1)
    pts = np.random.default_rng(nbits).integers(0, hi, size=(3000, d), dtype=np.uint64, endpoint=True)
    pts[0] = hi
    got = sfc.morton_encode(cp.asarray(pts), nbits).get()
    np.testing.assert_array_equal(got, reference.morton_encode(pts, nbits))
    np.testing.assert_array_equal(np.asarray(_core.sfc_morton_encode(pts, nbits, False)), got)


@gpu
def test_gpu_sfc_cases(cp: Any) -> None:
    from ordcore.gpu import sfc

    # S1: no 16-bit truncation
    m = sfc.morton_encode(cp.asarray(np.array([[65536, 0], [2**20 - 1, 2**16 - 1]], dtype=np.int64)), 21).get()
    assert int(m[0]) == 1 << 32 and m[0] != m[1]
    # S2: round trip at the largest nbits
    for d, nb in ((2, 32), (3, 21)):
        p = np.full((1, d), (1 << nb) - 1, dtype=np.uint64)
        np.testing.assert_array_equal(sfc.morton_decode(sfc.morton_encode(cp.asarray(p), nb), nb, d).get(), p)
    # S3: D * nbits > 64
    with pytest.raises(InvalidArgumentError, match="64"):
        sfc.hilbert_encode(cp.zeros((2, 3), dtype=cp.int64), 22)
    # S4: out of range, naming the row
    for bad in ([[8, 0]], [[-1, 0]]):
        arr = cp.asarray(np.array([[1, 2]] + bad, dtype=np.int64))
        with pytest.raises(InvalidArgumentError, match="row 1"):
            sfc.hilbert_encode(arr, 3)
    with pytest.raises(InvalidArgumentError, match="row 0"):
        sfc.hilbert_decode(cp.asarray(np.array([64], dtype=np.uint64)), 3, 2)
    # S5 / S6: shapes and the 64-bit boundary
    one = sfc.hilbert_encode(cp.asarray(np.array([[2**32 - 1, 0]], dtype=np.uint64)), 32)
    assert one.shape == (1,) and int(one[0]) == 2**64 - 1
    assert sfc.hilbert_encode(cp.zeros((0, 2), dtype=cp.int32), 8).shape == (0,)
    # S7
    ref = sfc.hilbert_encode(cp.asarray(np.array([[999, 999, 999], [479, 724, 495]])), 12).get()
    assert ref.tolist() == [766935405, 975605184]
    with pytest.raises(DTypeError):
        sfc.hilbert_encode(cp.zeros((2, 2), dtype=cp.float32), 4)


@gpu
def test_gpu_sfc_torch_tensors_round_trip_without_copy(cp: Any) -> None:
    torch = _torch_cuda()
    from ordcore.gpu import sfc

    t = torch.randint(0, 1 << 16, (1000, 2), device="cuda", dtype=torch.int64)
    h = sfc.hilbert_encode(t, 16)
    assert isinstance(h, torch.Tensor) and h.device == t.device
    np.testing.assert_array_equal(h.cpu().numpy().view(np.uint64), reference.hilbert_encode(t.cpu().numpy(), 16))


# --- hadamard


def _hmat(n: int) -> np.ndarray:
    return np.asarray(_core.hadamard_matrix(n), dtype=np.float64)


def _tol(dtype: str, n: int) -> float:
    eps = {"float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    return eps * (2 + math.log2(max(n, 2)))


_POW2 = [1 << k for k in range(0, 16)]
_KSIZES = [12, 20, 24, 40, 96, 160, 224, 320, 12 * 1024, 172 * 4, 156 * 2, 36 * 64, 108, 140 * 8]


@gpu
@pytest.mark.parametrize("n", _POW2 + _KSIZES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gpu_fwht_matches_dense_matrix(cp: Any, n: int, dtype: str) -> None:
    from ordcore.gpu import hadamard

    rows = 3 if n >= 4096 else 37
    x = np.random.default_rng(n).standard_normal((rows, n)).astype(dtype)
    h = _hmat(n) if n <= 4096 else None
    for normalized in (True, False):
        for inverse in (False, True):
            y = hadamard.fwht(cp.asarray(x), normalized=normalized, inverse=inverse)
            assert y.dtype == x.dtype and y.shape == x.shape
            xd = x.astype(np.float64)
            if h is None:  # large power of two: scipy-free Sylvester reference via reshapes
                want = xd.copy()
                m = 1
                while m < n:
                    want = want.reshape(rows, -1, 2, m)
                    a, b = want[:, :, 0, :].copy(), want[:, :, 1, :].copy()
                    want[:, :, 0, :], want[:, :, 1, :] = a + b, a - b
                    m *= 2
                want = want.reshape(rows, n)
                if n % 3 == 0 or n % 5 == 0 or n % 7 == 0:
                    pytest.skip("dense reference too large")
            else:
                want = xd @ (h.T if inverse else h)
            want = want / (math.sqrt(n) if normalized else (n if inverse else 1))
            scale = np.abs(want).max() + 1e-30
            err = np.abs(y.get().astype(np.float64) - want).max() / scale
            assert err < _tol(dtype, n) * (1 if normalized else 4), (n, normalized, inverse, err)


@gpu
def test_gpu_fwht_bfloat16_through_torch(cp: Any) -> None:
    torch = _torch_cuda()
    from ordcore.gpu import hadamard

    for n in (64, 4096, 32768, 160):
        x = torch.randn(5, n, device="cuda", dtype=torch.bfloat16)
        y = hadamard.fwht(x)
        assert isinstance(y, torch.Tensor) and y.dtype == torch.bfloat16 and y.device == x.device
        want = x.double().cpu().numpy() @ _hmat(n) / math.sqrt(n) if n <= 4096 else None
        if want is not None:
            err = np.abs(y.double().cpu().numpy() - want).max() / np.abs(want).max()
            assert err < _tol("bfloat16", n)
        back = hadamard.fwht(y.float(), inverse=True)
        assert torch.allclose(back, x.float(), atol=0.05 * float(x.float().abs().max()))


@gpu
def test_gpu_fwht_cases(cp: Any) -> None:
    from ordcore.gpu import hadamard

    # H1: a strided view is transformed exactly and never written
    a = cp.arange(16, dtype=cp.float32)
    before = a.copy()
    y = hadamard.fwht(a[::2], normalized=False)
    np.testing.assert_allclose(y.get(), np.arange(0, 16, 2, dtype=np.float64) @ _hmat(8))
    assert bool((a == before).all())
    # H2: the 12-size transform of the identity is orthogonal
    h12 = hadamard.fwht(cp.eye(12, dtype=cp.float32), normalized=False).get().astype(np.float64)
    np.testing.assert_allclose(h12 @ h12.T, 12 * np.eye(12), atol=1e-4)
    # H4: inverse(forward(x)) == x at K = 20
    x = cp.asarray(np.random.default_rng(4).standard_normal((9, 160)).astype(np.float32))
    back = hadamard.fwht(hadamard.fwht(x), inverse=True)
    np.testing.assert_allclose(back.get(), x.get(), atol=1e-5)
    # H5: no float16 overflow before the scale
    z = hadamard.fwht(cp.full(32768, 2, dtype=cp.float16))
    zz = z.get().astype(np.float64)
    assert np.isfinite(zz).all() and abs(zz[0] - 2 * math.sqrt(32768)) < 0.5 and np.abs(zz[1:]).max() == 0
    # H6: unsupported size
    with pytest.raises(InvalidArgumentError, match="137"):
        hadamard.fwht(cp.zeros((2, 137), dtype=cp.float32))
    with pytest.raises(DTypeError):
        hadamard.fwht(cp.zeros((2, 8), dtype=cp.int32))


@gpu
@pytest.mark.parametrize(("n", "blocks", "group"), [(256, 1, None), (1024, 3, None), (160, 2, None), (4096, 2, 512), (96, 1, 12)])
def test_gpu_randomized_hadamard_matches_cpu(cp: Any, n: int, blocks: int, group: int | None) -> None:
    from ordcore.gpu import hadamard

    x = np.random.default_rng(n + blocks).standard_normal((33, n)).astype(np.float32)
    rh = _core.RandomizedHadamard(n, 1234, blocks, group)
    want = np.asarray(rh.forward_f32(x))
    got = hadamard.randomized_hadamard(cp.asarray(x), seed=1234, blocks=blocks, group_size=group)
    np.testing.assert_allclose(got.get(), want, atol=1e-4 * np.abs(want).max())
    back = hadamard.randomized_hadamard(got, seed=1234, blocks=blocks, group_size=group, inverse=True)
    np.testing.assert_allclose(back.get(), x, atol=1e-4 * np.abs(x).max())
    h16 = hadamard.randomized_hadamard(cp.asarray(x.astype(np.float16)), seed=1234, blocks=blocks, group_size=group)
    assert h16.dtype == cp.float16
    np.testing.assert_allclose(h16.get().astype(np.float32), want, atol=3e-3 * np.abs(want).max())


@gpu
def test_gpu_signs_are_bit_identical_to_the_cpu(cp: Any) -> None:
    # H8: same (seed, n, blocks) -> same signs on both backends
    from ordcore.gpu import hadamard

    like = cp.zeros(1)
    for seed, blocks, n in [(0, 1, 1024), (2**64 - 1, 4, 4096), (77, 64, 160)]:
        s = hadamard.random_signs(seed, blocks, n, like).get()
        np.testing.assert_array_equal(s, reference.random_signs(seed, blocks, n))
        rh = _core.RandomizedHadamard(n, seed, blocks, None)
        for b in range(blocks):
            np.testing.assert_array_equal(s[b], np.asarray(rh.signs(b)).astype(np.int8))
    u = hadamard.counter_u64(42, 7, 100000, like).get()
    np.testing.assert_array_equal(u, reference.counter_u64(42, 7, np.arange(100000)))


# --- ann


def _clustered(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((16, d))
    return (centers[rng.integers(0, 16, n)] + 0.3 * rng.standard_normal((n, d))).astype(np.float32)


@gpu
@pytest.mark.parametrize(("d", "bits", "metric"), [(64, 2, "cosine"), (70, 2, "l2"), (768, 2, "cosine"), (1007, 1, "ip"), (1008, 2, "ip")])
def test_gpu_ann_encode_is_bit_identical(cp: Any, d: int, bits: int, metric: str) -> None:
    from ordcore.gpu import ann

    x = _clustered(2000, d, d)
    got = ann.encode(cp.asarray(x), bits=bits, metric=metric).get()
    np.testing.assert_array_equal(got, np.asarray(_core.ann_encode(x, bits, metric)))
    np.testing.assert_array_equal(got, reference.ann_encode(x, bits, metric))


@gpu
@pytest.mark.parametrize(("d", "bits"), [(64, 1), (70, 2), (768, 2), (1008, 2)])
def test_gpu_code_distances_and_top_k(cp: Any, d: int, bits: int) -> None:
    from ordcore.gpu import ann

    x = _clustered(3000, d, 1)
    q = _clustered(50, d, 2)
    cx, cq = reference.ann_encode(x, bits, "cosine"), reference.ann_encode(q, bits, "cosine")
    dist = reference.code_distances(cq, cx, d, bits)
    got = ann.code_distances(cp.asarray(cq), cp.asarray(cx), dim=d, bits=bits).get()
    np.testing.assert_array_equal(got, dist)
    k = 20
    ids, ds = ann.code_search(cp.asarray(cq), cp.asarray(cx), k, dim=d, bits=bits)
    order = np.lexsort((np.broadcast_to(np.arange(len(cx)), dist.shape), dist), axis=1)[:, :k]
    np.testing.assert_array_equal(ids.get(), order)
    np.testing.assert_array_equal(ds.get(), np.take_along_axis(dist, order, 1).astype(np.float32))


@gpu
def test_gpu_code_top_k_ties_padding_and_overflow(cp: Any) -> None:
    from ordcore.gpu import ann

    d = 64
    x = np.tile(np.random.default_rng(0).standard_normal((3, d)).astype(np.float32), (2000, 1))  # 6000 rows, 3 codes
    cx = reference.ann_encode(x, 2, "cosine")
    cq = cx[:4]
    ids, ds = ann.code_search(cp.asarray(cq), cp.asarray(cx), 5, dim=d, bits=2)  # ties overflow the buffer
    dist = reference.code_distances(cq, cx, d, 2)
    order = np.lexsort((np.broadcast_to(np.arange(len(cx)), dist.shape), dist), axis=1)[:, :5]
    np.testing.assert_array_equal(ids.get(), order)
    # A1 / A3: fewer rows than k, and none at all
    ids, ds = ann.code_search(cp.asarray(cq), cp.asarray(cx[:1]), 4, dim=d, bits=2)
    assert ids.get()[:, 1:].tolist() == [[-1] * 3] * 4 and np.isinf(ds.get()[:, 1:]).all()
    ids, ds = ann.code_search(cp.asarray(cq), cp.asarray(cx[:0]), 4, dim=d, bits=2)
    assert (ids.get() == -1).all() and np.isinf(ds.get()).all()


@gpu
@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_gpu_exact_search_rerank_and_candidates(cp: Any, metric: str) -> None:
    from ordcore.gpu import ann

    x = _clustered(5000, 96, 3)
    q = _clustered(64, 96, 4)
    want_ids, want_d = (np.asarray(a) for a in _core.ann_exact_search(x, q, 10, metric, None))
    ids, ds = ann.exact_search(cp.asarray(x), cp.asarray(q), 10, metric=metric)
    agree = (ids.get() == want_ids).mean()
    assert agree > 0.99, agree  # exact near-ties may swap under float32 noise
    np.testing.assert_allclose(ds.get(), want_d, rtol=1e-4, atol=1e-4)
    cand = np.concatenate([want_ids[:, ::-1], np.full((64, 3), -1)], axis=1)
    rid, rd = ann.rerank(cp.asarray(q), cp.asarray(x), cp.asarray(cand), 5, metric=metric)
    assert (rid.get() == want_ids[:, :5]).mean() > 0.99
    cid, _ = ann.candidate_search(cp.asarray(x), cp.asarray(q), 10, metric=metric, n_candidates=200)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(cid.get(), want_ids)])
    assert recall > 0.8, recall


@gpu
def test_gpu_ann_errors(cp: Any) -> None:
    from ordcore.gpu import ann

    x = cp.ones((4, 8), dtype=cp.float32)
    bad = x.copy()
    bad[2, 3] = cp.nan
    with pytest.raises(InvalidArgumentError, match="row 2"):
        ann.encode(bad)
    zero = x.copy()
    zero[1] = 0
    with pytest.raises(InvalidArgumentError, match="row 1 is a zero vector"):
        ann.exact_search(zero, x, 2, metric="cosine")
    with pytest.raises(InvalidArgumentError, match="dimension"):
        ann.exact_search(x, cp.ones((1, 9), dtype=cp.float32), 2)


# --- dispatch through the public API


@gpu
def test_public_functions_dispatch_device_arrays(cp: Any) -> None:
    import ordcore.ann
    import ordcore.hadamard
    import ordcore.sfc

    pts = np.random.default_rng(0).integers(0, 1 << 10, size=(500, 3)).astype(np.int32)
    h = ordcore.sfc.hilbert_encode(cp.asarray(pts), 10)
    assert isinstance(h, cp.ndarray)
    np.testing.assert_array_equal(h.get(), ordcore.sfc.hilbert_encode(pts, 10))
    np.testing.assert_array_equal(ordcore.sfc.hilbert_decode(h, 10, 3).get(), pts.astype(np.uint64))
    m = ordcore.sfc.morton_encode(cp.asarray(pts), 10, axis0="msb")
    np.testing.assert_array_equal(m.get(), ordcore.sfc.morton_encode(pts, 10, axis0="msb"))
    np.testing.assert_array_equal(ordcore.sfc.morton_decode(m, 10, 3, axis0="msb").get(), pts.astype(np.uint64))

    x = np.random.default_rng(1).standard_normal((6, 96, 5)).astype(np.float32)
    y = ordcore.hadamard.fwht(cp.asarray(x), axis=1)
    assert isinstance(y, cp.ndarray) and y.shape == x.shape
    np.testing.assert_allclose(y.get(), ordcore.hadamard.fwht(x, axis=1), atol=1e-5)
    back = ordcore.hadamard.ifwht(y, axis=1)
    np.testing.assert_allclose(back.get(), x, atol=1e-5)
    buf = cp.asarray(x)
    assert ordcore.hadamard.fwht(buf, axis=1, out=buf) is buf  # in place
    np.testing.assert_allclose(buf.get(), y.get(), atol=1e-6)

    rh = ordcore.hadamard.RandomizedHadamard(160, seed=9, blocks=2)
    z = np.random.default_rng(2).standard_normal((7, 160)).astype(np.float16)
    got = rh.forward(cp.asarray(z))
    assert isinstance(got, cp.ndarray) and got.dtype == cp.float32  # the rotation's dtype
    np.testing.assert_allclose(got.get(), rh.forward(z), atol=1e-4)
    np.testing.assert_allclose(rh.inverse(got).get(), z.astype(np.float32), atol=1e-3)

    v = np.random.default_rng(3).standard_normal((300, 70)).astype(np.float32)
    codes = ordcore.ann.encode(cp.asarray(v), bits=2, metric="l2")
    np.testing.assert_array_equal(codes.get(), ordcore.ann.encode(v, bits=2, metric="l2"))
    cd = ordcore.ann.code_distance(codes, codes[::-1].copy(), 70, 2)
    np.testing.assert_array_equal(cd.get(), ordcore.ann.code_distance(codes.get(), codes.get()[::-1], 70, 2))
    ids, d = ordcore.ann.exact_search(cp.asarray(v), cp.asarray(v[:5]), 3, "l2")
    assert ids.get()[:, 0].tolist() == [0, 1, 2, 3, 4]


@gpu
def test_torch_bfloat16_rotation_and_out(cp: Any) -> None:
    torch = _torch_cuda()
    import ordcore.hadamard

    x = torch.randn(4, 1024, device="cuda", dtype=torch.bfloat16)
    rh = ordcore.hadamard.RandomizedHadamard(1024, seed=5, dtype=np.float32)
    y = rh.forward(x)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32
    want = rh.forward(x.float().cpu().numpy())
    np.testing.assert_allclose(y.cpu().numpy(), want, atol=1e-4)
    out = torch.empty_like(x)
    r = ordcore.hadamard.fwht(x, out=out)
    assert r is out and out.dtype == torch.bfloat16
