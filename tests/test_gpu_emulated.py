"""The GPU wrappers' plumbing, run on the CPU against a NumPy stand-in for CuPy whose
kernels are emulated from ordcore.gpu.reference (tests/gpu_fake_cupy.py).

This checks what Python does around the kernels (dispatch from the public API, argument
validation, shapes and dtypes, axis/out handling, the order of launches of multi-round
rotations and of the K * 2^k path, top-k keys, padding and the overflow fallback); the
CUDA code itself is checked by test_gpu_host.py (host build) and the ``gpu`` tests.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import pytest

import ordcore.ann
import ordcore.hadamard
import ordcore.sfc
from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore.gpu import reference

from gpu_fake_cupy import installed


@pytest.fixture
def cp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    with installed(monkeypatch) as fake:
        yield fake


def test_sfc_gpu_refuses_cpu_only_options(cp: Any) -> None:
    pts = cp.asarray(np.zeros((4, 2), dtype=np.int32))
    with pytest.raises(InvalidArgumentError, match="dtype: not supported on the GPU path"):
        ordcore.sfc.hilbert_encode(pts, 8, dtype="narrowest")
    with pytest.raises(InvalidArgumentError, match="dtype: not supported on the GPU path"):
        ordcore.sfc.morton_encode(pts, 8, dtype=np.uint16)
    h = ordcore.sfc.hilbert_encode(pts, 8)
    with pytest.raises(InvalidArgumentError, match="separate: not supported on the GPU path"):
        ordcore.sfc.hilbert_decode(h, 8, 2, separate=True)
    with pytest.raises(InvalidArgumentError, match="dtype, separate: not supported"):
        ordcore.sfc.morton_decode(h, 8, 2, dtype=np.uint8, separate=True)
    col = cp.asarray(np.zeros(4, dtype=np.int32))
    with pytest.raises(InvalidArgumentError, match="separate coordinate arrays are not supported"):
        ordcore.sfc.hilbert_encode((col, col), 8)


def test_sfc_dispatch_and_errors(cp: Any) -> None:
    pts = np.random.default_rng(0).integers(0, 1 << 12, size=(300, 3)).astype(np.int16)
    h = ordcore.sfc.hilbert_encode(cp.asarray(pts), 12)
    assert isinstance(h, cp.ndarray) and h.dtype == np.uint64 and h.shape == (300,)
    np.testing.assert_array_equal(h.get(), ordcore.sfc.hilbert_encode(pts, 12))
    back = ordcore.sfc.hilbert_decode(h, 12, 3)
    np.testing.assert_array_equal(back.get(), pts.astype(np.uint64))
    m = ordcore.sfc.morton_encode(cp.asarray(pts), 12, axis0="msb")
    np.testing.assert_array_equal(m.get(), ordcore.sfc.morton_encode(pts, 12, axis0="msb"))
    np.testing.assert_array_equal(ordcore.sfc.morton_decode(m, 12, 3, axis0="msb").get(), pts.astype(np.uint64))
    with pytest.raises(InvalidArgumentError, match=r"row 1 .*\[8, 0\]"):
        ordcore.sfc.hilbert_encode(cp.asarray(np.array([[1, 2], [8, 0]])), 3)
    with pytest.raises(InvalidArgumentError, match="row 0"):
        ordcore.sfc.hilbert_encode(cp.asarray(np.array([[-1, 0]])), 3)
    with pytest.raises(InvalidArgumentError, match="64-bit limit"):
        ordcore.sfc.hilbert_encode(cp.zeros((2, 3), dtype=np.int64), 22)
    with pytest.raises(InvalidArgumentError, match="row 1"):
        ordcore.sfc.morton_decode(cp.asarray(np.array([0, 64], dtype=np.uint64)), 3, 2)
    with pytest.raises(InvalidArgumentError, match="axis0"):
        ordcore.sfc.morton_encode(cp.zeros((1, 2), dtype=np.int32), 3, axis0="mid")  # type: ignore[arg-type]
    with pytest.raises(DTypeError):
        ordcore.sfc.hilbert_encode(cp.zeros((2, 2), dtype=np.float32), 3)
    assert ordcore.sfc.hilbert_encode(cp.zeros((0, 2), dtype=np.int32), 4).shape == (0,)


@pytest.mark.parametrize("n", [1, 2, 8, 96, 160, 1024, 12 * 64])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_fwht_dispatch_axis_out(cp: Any, n: int, dtype: str) -> None:
    x = np.random.default_rng(n).standard_normal((3, n, 2)).astype(dtype)
    for inverse in (False, True):
        f = ordcore.hadamard.ifwht if inverse else ordcore.hadamard.fwht
        for normalized in (True, False):
            got = f(cp.asarray(x), axis=1, normalized=normalized)
            want = f(x, axis=1, normalized=normalized)
            assert isinstance(got, cp.ndarray) and got.dtype == x.dtype and got.shape == x.shape
            tol = 1e-4 if dtype == "float32" else 2e-2
            np.testing.assert_allclose(got.get().astype(np.float64), want.astype(np.float64),
                                       rtol=tol, atol=tol * max(1.0, float(np.abs(want).max())))
    buf = cp.asarray(x)
    assert ordcore.hadamard.fwht(buf, axis=1, out=buf) is buf
    np.testing.assert_allclose(buf.get().astype(np.float64), ordcore.hadamard.fwht(x, axis=1).astype(np.float64),
                               rtol=2e-2, atol=2e-2)
    with pytest.raises(InvalidArgumentError, match="out"):
        ordcore.hadamard.fwht(cp.asarray(x), axis=1, out=cp.zeros((1, 2), dtype=x.dtype))


def test_fwht_errors_and_strided(cp: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="137"):
        ordcore.hadamard.fwht(cp.zeros((2, 137), dtype=np.float32))
    with pytest.raises(DTypeError):
        ordcore.hadamard.fwht(cp.zeros((2, 8), dtype=np.int32))
    with pytest.raises(InvalidArgumentError, match="axis"):
        ordcore.hadamard.fwht(cp.zeros((2, 8), dtype=np.float32), axis=2)
    a = cp.asarray(np.arange(16, dtype=np.float32))
    y = ordcore.hadamard.fwht(a[::2], normalized=False)
    np.testing.assert_allclose(y.get(), ordcore.hadamard.fwht(np.arange(0, 16, 2, dtype=np.float32), normalized=False))
    np.testing.assert_array_equal(a.get(), np.arange(16, dtype=np.float32))


@pytest.mark.parametrize(("n", "blocks", "group"), [(64, 1, None), (256, 3, None), (160, 2, None), (96, 2, 12), (512, 1, 64)])
def test_randomized_hadamard_dispatch(cp: Any, n: int, blocks: int, group: int | None) -> None:
    x = np.random.default_rng(n).standard_normal((5, n)).astype(np.float32)
    for dtype in (np.float32, np.float16):
        rh = ordcore.hadamard.RandomizedHadamard(n, seed=77, blocks=blocks, group_size=group, dtype=dtype)
        got = rh.forward(cp.asarray(x))
        assert isinstance(got, cp.ndarray) and got.dtype == dtype
        want = rh.forward(x)
        np.testing.assert_allclose(got.get().astype(np.float64), want.astype(np.float64), atol=2e-3 if dtype == np.float16 else 1e-4)
        back = rh.inverse(cp.asarray(want))
        np.testing.assert_allclose(back.get().astype(np.float64), rh.inverse(want).astype(np.float64),
                                   atol=2e-3 if dtype == np.float16 else 1e-4)
    with pytest.raises(DTypeError, match="float64"):
        ordcore.hadamard.RandomizedHadamard(n, seed=1, dtype=np.float64, group_size=group).forward(cp.asarray(x))


def test_signs_and_counter(cp: Any) -> None:
    from ordcore.gpu import hadamard

    s = hadamard.random_signs(3, 4, 100, cp.zeros(1))
    np.testing.assert_array_equal(s.get(), reference.random_signs(3, 4, 100))


@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_ann_dispatch(cp: Any, metric: str) -> None:
    from ordcore.gpu import ann

    rng = np.random.default_rng(5)
    x = rng.standard_normal((200, 70)).astype(np.float32)
    q = rng.standard_normal((7, 70)).astype(np.float32)
    codes = ordcore.ann.encode(cp.asarray(x), bits=2, metric=metric)
    np.testing.assert_array_equal(codes.get(), ordcore.ann.encode(x, bits=2, metric=metric))
    cd = ordcore.ann.code_distance(codes, cp.asarray(codes.get()[::-1].copy()), 70, 2)
    np.testing.assert_array_equal(cd.get(), ordcore.ann.code_distance(codes.get(), codes.get()[::-1], 70, 2))
    ids, d = ordcore.ann.exact_search(cp.asarray(x), cp.asarray(q), 5, metric)
    wid, wd = ordcore.ann.exact_search(x, q, 5, metric)
    np.testing.assert_array_equal(ids.get(), wid)
    np.testing.assert_allclose(d.get(), wd, rtol=1e-5, atol=1e-5)
    ids, d = ordcore.ann.exact_search(cp.asarray(x[:3]), cp.asarray(q), 5, metric)  # A1/A2 padding
    assert (ids.get()[:, 3:] == -1).all() and np.isinf(d.get()[:, 3:]).all()
    qc = ann.encode(cp.asarray(q), bits=2, metric=metric)
    cid, cdist = ann.code_search(qc, codes, 10, dim=70)
    dist = reference.code_distances(qc.get(), codes.get(), 70, 2)
    order = np.lexsort((np.broadcast_to(np.arange(200), dist.shape), dist), axis=1)[:, :10]
    np.testing.assert_array_equal(cid.get(), order)
    np.testing.assert_array_equal(cdist.get(), np.take_along_axis(dist, order, 1).astype(np.float32))
    rid, rd = ann.rerank(cp.asarray(q), cp.asarray(x), cp.asarray(np.concatenate([wid[:, ::-1], -np.ones((7, 2), dtype=np.int64)], 1)), 4, metric=metric)
    np.testing.assert_array_equal(rid.get(), wid[:, :4])
    sid, _ = ann.candidate_search(cp.asarray(x), cp.asarray(q), 5, metric=metric, n_candidates=200)
    np.testing.assert_array_equal(sid.get(), wid)  # every row is a candidate: exact


def test_code_search_overflow_fallback(cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from ordcore.gpu import ann

    x = np.tile(np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32), (700, 1))
    c = ann.encode(cp.asarray(x), bits=1, metric="l2")
    ids, d = ann.code_search(c[:2], c, 4, dim=64, bits=1)  # 700 exact ties > cap
    assert ids.get().tolist() == [[0, 3, 6, 9], [1, 4, 7, 10]]
    assert (d.get() == 0).all()


def test_ann_errors(cp: Any) -> None:
    x = np.ones((4, 8), dtype=np.float32)
    bad = x.copy()
    bad[2, 3] = np.nan
    with pytest.raises(InvalidArgumentError, match="row 2 has a non-finite value"):
        ordcore.ann.encode(cp.asarray(bad))
    zero = x.copy()
    zero[1] = 0
    with pytest.raises(InvalidArgumentError, match="row 1 is a zero vector"):
        ordcore.ann.exact_search(cp.asarray(zero), cp.asarray(x), 2, "cosine")
    with pytest.raises(InvalidArgumentError, match="dimension"):
        ordcore.ann.exact_search(cp.asarray(x), cp.asarray(np.ones((1, 9), np.float32)), 2)
    with pytest.raises(DTypeError):
        ordcore.ann.encode(cp.asarray(np.ones((2, 2), dtype=np.int64)))


def test_compile_and_launch_failures_are_gpu_errors(cp: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from ordcore.errors import GpuError

    class Broken:
        def __init__(self, *a: Any, **k: Any) -> None:
            raise RuntimeError("NVRTC_ERROR_COMPILATION: simulated log line")

    monkeypatch.setattr(cp, "RawModule", Broken)
    with pytest.raises(GpuError, match="simulated log line"):
        ordcore.hadamard.fwht(cp.zeros((2, 8), dtype=np.float32))

    class Failing:
        name = "fwht"
        max_dynamic_shared_size_bytes = 0

        def __call__(self, *a: Any, **k: Any) -> None:
            raise RuntimeError("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")

    class Module:
        def __init__(self, *a: Any, **k: Any) -> None: ...

        def get_function(self, name: str) -> Failing:
            return Failing()

    from ordcore.gpu import _runtime

    monkeypatch.setattr(cp, "RawModule", Module)
    monkeypatch.setattr(_runtime, "_modules", {})
    monkeypatch.setattr(_runtime, "_kernels", {})
    with pytest.raises(GpuError, match="unspecified launch failure"):
        ordcore.sfc.hilbert_encode(cp.zeros((2, 2), dtype=np.int32), 3)
