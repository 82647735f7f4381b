"""Tests of ordcore.hadamard against scipy.linalg.hadamard (float64 references)."""

from __future__ import annotations

import functools
from typing import Any

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

import ordcore
from ordcore import hadamard as had

POW2 = [2**k for k in range(16)]  # 1 .. 32768
KS = [12, 20, 28, 36, 40, 52, 60, 108, 140, 156, 172]


def composite_sizes(limit: int = 32768) -> list[int]:
    return sorted({k << j for k in KS for j in range(16) if k << j <= limit})


def rand(shape: tuple[int, ...], seed: int = 0, dtype: type = np.float64) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def dense_ref(x: np.ndarray, h: np.ndarray, normalized: bool) -> np.ndarray:
    y = x.astype(np.float64) @ h.astype(np.float64)
    return y / np.sqrt(h.shape[0]) if normalized else y


# ---------------------------------------------------------------------------- sizes


def test_supported_sizes_listing() -> None:
    assert had.supported_sizes(64) == [1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 52, 56, 60, 64]
    assert had.supported_sizes(0) == []
    for n in (11008, 14336, 4096, 96, 160, 224, 320, 172, 156, 40):
        assert had.is_supported_size(n)
    for n in (0, 3, 6, 10, 44, 88, 137, 11000):
        assert not had.is_supported_size(n)
    assert had.next_supported_size(137) == 140
    assert had.next_supported_size(11000) == 11008
    assert had.next_supported_size(0) == 1


@pytest.mark.parametrize("k", [1, *KS])
def test_base_matrices_are_hadamard(k: int) -> None:
    h = had.hadamard_matrix(k, dtype=np.int64)
    assert set(np.unique(h)) <= {-1, 1}
    np.testing.assert_array_equal(h @ h.T, k * np.eye(k, dtype=np.int64))


def test_hadamard_matrix_is_kron_with_sylvester() -> None:
    for k in KS:
        for p in (2, 4, 8):
            full = had.hadamard_matrix(k * p)
            want = np.kron(had.hadamard_matrix(k), scipy.linalg.hadamard(p))
            np.testing.assert_array_equal(full, want)
    np.testing.assert_array_equal(
        had.hadamard_matrix(40), np.kron(had.hadamard_matrix(20), scipy.linalg.hadamard(2))
    )
    assert had.hadamard_matrix(12, dtype=np.float32).dtype == np.float32


def sylvester_columns(n: int, cols: np.ndarray) -> np.ndarray:
    """Columns ``cols`` of the Sylvester matrix: H[i, j] = (-1)**popcount(i & j)."""
    i = np.arange(n, dtype=np.int64)[:, None]
    parity = (np.bitwise_count(i & cols[None, :].astype(np.int64)) & 1).astype(np.int64)
    return (1 - 2 * parity).astype(np.float64)


def test_sylvester_formula_is_scipy() -> None:
    for n in (1, 2, 64, 1024):
        np.testing.assert_array_equal(sylvester_columns(n, np.arange(n)), scipy.linalg.hadamard(n))


@pytest.mark.parametrize("n", POW2)
def test_matches_scipy_pow2(n: int) -> None:
    """Against scipy.linalg.hadamard in float64 (dense up to 4096; above, the same entries
    on a random subset of 512 output columns, as the full matrix would need gigabytes)."""
    rows = 3 if n <= 4096 else 1
    x = rand((rows, n), seed=n)
    if n <= 4096:
        cols = np.arange(n)
        h = scipy.linalg.hadamard(n).astype(np.float64)
        np.testing.assert_array_equal(had.hadamard_matrix(n), h)
    else:
        cols = np.sort(np.random.default_rng(n).choice(n, 512, replace=False))
        h = sylvester_columns(n, cols)
    for normalized in (False, True):
        want = dense_ref(x, h, normalized) * (np.sqrt(h.shape[0] / n) if normalized else 1.0)
        got = had.fwht(x, normalized=normalized)[:, cols]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-9 * np.sqrt(n))
        # float32: reference still float64 (case H7)
        got32 = had.fwht(x.astype(np.float32), normalized=normalized)
        assert got32.dtype == np.float32
        scale = np.sqrt(n) if not normalized else 1.0
        np.testing.assert_allclose(got32[:, cols], want, rtol=1e-4,
                                   atol=2e-5 * scale * np.log2(max(n, 2)))


@pytest.mark.parametrize("n", composite_sizes())
def test_matches_dense_composite(n: int) -> None:
    """Every K * 2^k up to 32768, including k = 3 (case H3: 96, 160, 224, 320)."""
    x = rand((2, n), seed=n)
    k, p = next((k, n // k) for k in [1, 12, 20, 28, 36, 52, 60, 108, 140, 156, 172]
                if n % k == 0 and (n // k) & (n // k - 1) == 0)
    # x @ kron(H_K, H_P) = H_K^T X H_P with X the (K, P) reshaping of x.
    hk = had.hadamard_matrix(k)
    hp = scipy.linalg.hadamard(p).astype(np.float64)
    want = np.einsum("ac,rab->rcb", hk, x.reshape(2, k, p) @ hp).reshape(2, n)
    for normalized in (False, True):
        got = had.fwht(x, normalized=normalized)
        ref = want / np.sqrt(n) if normalized else want
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * np.sqrt(n))
        back = had.ifwht(got, normalized=normalized)
        np.testing.assert_allclose(back, x, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n", [8, 12, 96, 160, 224, 320, 1024, 4096])
def test_dense_match_via_matrix(n: int) -> None:
    x = rand((4, n), seed=1)
    h = had.hadamard_matrix(n)
    np.testing.assert_allclose(had.fwht(x, normalized=False), x @ h, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(had.ifwht(x, normalized=False), x @ h.T / n, rtol=1e-10, atol=1e-12)


def test_fixed_vectors() -> None:
    np.testing.assert_array_equal(
        had.fwht(np.arange(8.0), normalized=False), [28, -4, -8, 0, -16, 0, 0, 0]
    )
    np.testing.assert_array_equal(
        had.fwht(np.array([4.0, 2, 2, 0, 0, 2, -2, 0]), normalized=False), [8, 0, 8, 0, 8, 8, 0, 0]
    )
    np.testing.assert_array_equal(had.fwht(np.array([3.0]), normalized=False), [3.0])


@pytest.mark.parametrize("n", [64, 12, 40, 172 * 2])
def test_orthogonality_parseval_involution(n: int) -> None:
    m = had.fwht(np.eye(n))
    np.testing.assert_allclose(m @ m.T, np.eye(n), atol=1e-12)
    x = rand((5, n), seed=2)
    y = had.fwht(x)
    np.testing.assert_allclose((y**2).sum(-1), (x**2).sum(-1), rtol=1e-12)
    if n & (n - 1) == 0:  # Sylvester: symmetric, so the normalized transform is an involution
        np.testing.assert_allclose(had.fwht(y), x, atol=1e-12)
        np.testing.assert_allclose(had.fwht(had.fwht(x, normalized=False), normalized=False), n * x)


@pytest.mark.parametrize("shape,axis", [((3, 4, 16), -1), ((3, 16, 4), 1), ((16, 3, 2), 0),
                                        ((2, 3, 12, 5), 2), ((2, 3, 12, 5), -2), ((16,), 0)])
def test_batch_shapes_every_axis(shape: tuple[int, ...], axis: int) -> None:
    x = rand(shape, seed=3)
    n = shape[axis]
    h = had.hadamard_matrix(n)
    want = np.moveaxis(np.moveaxis(x, axis, -1) @ h, -1, axis) / np.sqrt(n)
    got = had.fwht(x, axis=axis)
    assert got.shape == x.shape and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(had.ifwht(got, axis=axis), x, atol=1e-12)
    xc = x.copy()
    assert had.fwht(x, axis=axis, out=x) is x
    np.testing.assert_allclose(x, want, atol=1e-12)
    assert not np.array_equal(x, xc)


def test_empty_batch() -> None:
    x = np.zeros((0, 16), np.float32)
    assert had.fwht(x).shape == (0, 16)


# ---------------------------------------------------------------------------- cases


def test_h1_strided_view() -> None:
    a = np.arange(16, dtype=np.float32)
    want = a[::2].astype(np.float64) @ scipy.linalg.hadamard(8)
    np.testing.assert_array_equal(had.fwht(a[::2], normalized=False), want)
    np.testing.assert_array_equal(a, np.arange(16, dtype=np.float32))  # input untouched
    v = a[::2]
    had.fwht(v, out=v, normalized=False)
    np.testing.assert_array_equal(a[::2], want)
    np.testing.assert_array_equal(a[1::2], np.arange(1, 16, 2, dtype=np.float32))
    # Non-contiguous 2-D view along a non-last axis.
    b = rand((16, 10), seed=4)
    view = b[::2, ::3]
    np.testing.assert_allclose(had.fwht(view, axis=0, normalized=False),
                               scipy.linalg.hadamard(8) @ view, atol=1e-12)


def test_h2_identity_k12() -> None:
    m = had.fwht(np.eye(12), normalized=False)
    np.testing.assert_allclose(m @ m.T, 12 * np.eye(12), atol=1e-12)
    assert set(np.unique(m)) == {-1.0, 1.0}
    m = had.fwht(np.eye(12))
    np.testing.assert_allclose(m @ m.T, np.eye(12), atol=1e-12)


@pytest.mark.parametrize("k", [12, 20, 28, 40])
def test_h3_k_times_8(k: int) -> None:
    n = 8 * k
    x = rand((3, n), seed=k)
    np.testing.assert_allclose(had.fwht(x, normalized=False), x @ had.hadamard_matrix(n), atol=1e-10)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(had.fwht(x32, normalized=False), x @ had.hadamard_matrix(n),
                               rtol=1e-4, atol=1e-3)


def test_h4_inverse_uses_transpose_k20() -> None:
    n = 160
    h = had.hadamard_matrix(n)
    assert not np.array_equal(h, h.T)  # H_20 (Paley I) is not symmetric
    x = rand((4, n), seed=5)
    np.testing.assert_allclose(had.ifwht(had.fwht(x)), x, atol=1e-12)
    np.testing.assert_allclose(had.ifwht(x), x @ h.T / np.sqrt(n), atol=1e-12)
    # The adjoint (backward pass) of y = fwht(x): dL/dx = ifwht(dL/dy) for the orthogonal map.
    g = rand((4, n), seed=6)
    np.testing.assert_allclose(had.ifwht(g), g @ (h / np.sqrt(n)).T, atol=1e-12)
    rh = had.RandomizedHadamard(n, seed=9, blocks=2, dtype=np.float64)
    np.testing.assert_allclose(rh.inverse(rh.forward(x)), x, atol=1e-12)
    np.testing.assert_allclose(rh.inverse(g), g @ rh.matrix().T, atol=1e-12)


def test_h5_float16_no_overflow() -> None:
    x = 2 * np.ones(32768, dtype=np.float16)
    y = had.fwht(x)
    assert y.dtype == np.float16 and np.isfinite(y).all()
    assert y[0] == np.float16(2 * np.sqrt(32768))
    np.testing.assert_array_equal(y[1:], 0)


def test_float16_result_beyond_its_range_is_inf_without_a_warning() -> None:
    """An unnormalized float16 transform whose result exceeds float16's range gives inf
    there (documented), in a new array and through ``out=``, and raises no NumPy overflow
    warning (which ``-W error`` would turn into an exception)."""
    import warnings

    x = np.full(4096, 60000, dtype=np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = had.fwht(x, normalized=False)
        out = np.empty_like(x)
        had.fwht(x, normalized=False, out=out)
    assert np.isinf(y[0]) and (y[1:] == 0).all()
    np.testing.assert_array_equal(out, y)


def test_h6_unsupported_size() -> None:
    with pytest.raises(ValueError, match=r"137.*128.*140.*pad_to_supported") as ei:
        had.fwht(np.ones(137))
    assert isinstance(ei.value, ordcore.InvalidArgumentError)
    padded, n = had.pad_to_supported(np.ones((2, 137)))
    assert n == 140 and padded.shape == (2, 140)
    np.testing.assert_array_equal(padded[:, 137:], 0)
    back = had.ifwht(had.fwht(padded))[:, :137]
    np.testing.assert_allclose(back, 1.0, atol=1e-12)
    padded, n = had.pad_to_supported(np.ones((137, 3)), axis=0, size=256)
    assert n == 256 and padded.shape == (256, 3)
    with pytest.raises(ValueError, match="size"):
        had.pad_to_supported(np.ones(137), size=100)
    with pytest.raises(ValueError, match="size"):
        had.pad_to_supported(np.ones(137), size=150)


def test_h7_float32_at_32768_against_float64_reference() -> None:
    n = 32768
    x = rand((1, n), seed=7)
    want = had.fwht(x, normalized=False)  # float64 FWHT, checked against scipy above
    # the float64 reference itself against the recursive definition, all in float64
    u, v = x[:, : n // 2], x[:, n // 2 :]
    hu, hv = had.fwht(u, normalized=False), had.fwht(v, normalized=False)
    np.testing.assert_allclose(want, np.concatenate([hu + hv, hu - hv], axis=1), rtol=1e-12, atol=1e-9)
    got = had.fwht(x.astype(np.float32), normalized=False)
    err = np.abs(got.astype(np.float64) - want).max()
    assert err < 1e-4 * np.sqrt(n) * 15, err


SIGN_SCRIPT = """
import numpy as np, sys
from ordcore.hadamard import RandomizedHadamard
np.random.seed(int(sys.argv[1]))
np.random.rand(int(sys.argv[1]))
r = RandomizedHadamard(96, seed=123, blocks=3, dtype=np.float64)
x = np.arange(96.0)
print(r.signs(0).tobytes().hex(), r.signs(2).tobytes().hex(), r.forward(x).tobytes().hex())
"""


def test_h8_same_seed_two_processes() -> None:
    outs = [
        subprocess.run([sys.executable, "-c", SIGN_SCRIPT, str(s)], capture_output=True,
                       text=True, check=True).stdout
        for s in (1, 7)
    ]
    assert outs[0] == outs[1] and outs[0].strip()
    r = had.RandomizedHadamard(96, seed=123, blocks=3, dtype=np.float64)
    np.random.rand(10)  # global RNG state must not matter
    assert outs[0].split()[2] == r.forward(np.arange(96.0)).tobytes().hex()


# ---------------------------------------------------------------------------- signs


def counter_sign_negative(seed: int, stream: int, index: int) -> bool:
    """The documented counter generator (rng.rs), re-implemented in Python."""
    m = (1 << 64) - 1
    g = 0x9E3779B97F4A7C15

    def mix64(z: int) -> int:
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
        return z ^ (z >> 31)

    k = mix64((seed + g) & m)
    k = mix64(k ^ ((stream + g) & m))
    return mix64(k ^ ((index + g) & m)) >> 63 == 1


def test_signs_follow_documented_generator() -> None:
    for seed in (0, 1, 2**64 - 1):
        r = had.RandomizedHadamard(64, seed=seed, blocks=2, group_size=16)
        for b in range(2):
            want = [-1.0 if counter_sign_negative(seed, b, i) else 1.0 for i in range(64)]
            np.testing.assert_array_equal(r.signs(b), want)
        np.testing.assert_array_equal(had.RandomizedHadamard(64, seed=seed, blocks=2).signs(1),
                                      r.signs(1))


def test_randomized_definition() -> None:
    n, g = 96, 32
    x = rand((3, n), seed=8)
    r = had.RandomizedHadamard(n, seed=5, blocks=2, group_size=g, dtype=np.float64)
    y = x.copy()
    for b in range(2):
        y = y * r.signs(b)
        y = had.fwht(y.reshape(3, n // g, g)).reshape(3, n)
    np.testing.assert_allclose(r.forward(x), y, atol=1e-12)
    m = r.matrix()
    np.testing.assert_allclose(x @ m, y, atol=1e-12)
    np.testing.assert_allclose(m @ m.T, np.eye(n), atol=1e-12)


@pytest.mark.parametrize("blocks", [1, 2, 3])
@pytest.mark.parametrize("n,group", [(256, None), (160, None), (11008, None), (96, 32),
                                     (4096, 32), (172 * 3, 172), (30, 1)])
def test_randomized_round_trip(blocks: int, n: int, group: int | None) -> None:
    x = rand((4, n), seed=blocks)
    for dtype, tol in ((np.float64, 1e-11), (np.float32, 1e-5)):
        r = had.RandomizedHadamard(n, seed=11, blocks=blocks, group_size=group, dtype=dtype)
        y = r.forward(x)
        assert y.dtype == dtype
        np.testing.assert_allclose((y.astype(np.float64) ** 2).sum(-1), (x**2).sum(-1), rtol=10 * tol)
        np.testing.assert_allclose(r.inverse(y), x, atol=tol * 10)
    xt = np.ascontiguousarray(x.T)
    r = had.RandomizedHadamard(n, seed=11, blocks=blocks, group_size=group, dtype=np.float64)
    np.testing.assert_allclose(r.forward(xt, axis=0), r.forward(x).T, atol=1e-12)
    out = np.empty_like(x)
    assert r.forward(x, out=out) is out
    np.testing.assert_allclose(out, r.forward(x))


@pytest.mark.parametrize("blocks", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_randomized_equals_its_matrix_where_signs_are_lane_masks(blocks: int, dtype: type) -> None:
    """n = 2048 has 8 KiB (float32) / 16 KiB (float64) of signs a row, where the AVX2 kernels
    read the signs as lane masks and the inverse flips its output in the transform's last
    pass: both directions equal the dense matrix."""
    n = 2048
    r = had.RandomizedHadamard(n, seed=3, blocks=blocks, dtype=dtype)
    m = r.matrix()
    x = rand((5, n), seed=blocks)
    tol = 1e-10 if dtype == np.float64 else 1e-4
    np.testing.assert_allclose(r.forward(x.astype(dtype)), x @ m, atol=tol)
    np.testing.assert_allclose(r.inverse(x.astype(dtype)), x @ m.T, atol=tol)
    y = x.astype(dtype)
    r.inverse(y, out=y)
    np.testing.assert_allclose(y, x @ m.T, atol=tol)


def test_randomized_spreads_spikes() -> None:
    n = 1024
    r = had.RandomizedHadamard(n, seed=0, blocks=1, dtype=np.float64)
    y = r.forward(np.eye(n)[0])
    np.testing.assert_allclose(np.abs(y), 1 / np.sqrt(n))


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from([1, 2, 8, 12, 20, 28, 36, 40, 52, 60, 64, 96]),
    st.integers(1, 3),
    st.integers(0, 2**64 - 1),
    st.integers(1, 3),
)
def test_property_round_trip(n: int, blocks: int, seed: int, rows: int) -> None:
    x = np.random.default_rng(seed % 1000).standard_normal((rows, n))
    r = had.RandomizedHadamard(n, seed=seed, blocks=blocks, dtype=np.float64)
    y = r.forward(x)
    np.testing.assert_allclose(np.linalg.norm(y, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(r.inverse(y), x, atol=1e-12)
    np.testing.assert_allclose(had.ifwht(had.fwht(x)), x, atol=1e-12)


# ---------------------------------------------------------------------------- srht


def test_srht_contract() -> None:
    n, m = 256, 64
    x = rand((3, n), seed=12)
    y = had.srht(x, m, seed=4)
    idx = had.srht_indices(n, m, seed=4)
    assert len(idx) == m and np.all(np.diff(idx) > 0) and idx[-1] < n
    r = had.RandomizedHadamard(n, seed=4, dtype=np.float64)
    np.testing.assert_allclose(y, np.sqrt(n / m) * r.forward(x)[:, idx], atol=1e-12)
    # E ||y||^2 = ||x||^2 over seeds
    norms = [np.sum(had.srht(x[0], m, seed=s) ** 2) for s in range(300)]
    assert abs(np.mean(norms) / np.sum(x[0] ** 2) - 1) < 0.05
    # m = n: the orthonormal one-block rotation
    np.testing.assert_allclose(had.srht(x, n, seed=4), r.forward(x), atol=1e-12)
    assert had.srht(x.astype(np.float32), m, seed=4).dtype == np.float32
    assert had.srht(np.ones((n, 2)), 8, seed=0, axis=0).shape == (8, 2)
    # sampling is uniform-ish: every coordinate gets picked over many seeds
    counts = np.bincount(np.concatenate([had.srht_indices(64, 8, seed=s) for s in range(800)]),
                         minlength=64)
    assert counts.min() > 50 and counts.max() < 150


# ---------------------------------------------------------------------------- errors


def test_bad_inputs() -> None:
    x = np.ones(16)
    with pytest.raises(ordcore.DTypeError, match="x"):
        had.fwht(np.arange(16))
    with pytest.raises(TypeError):
        had.fwht(np.ones(16, dtype=np.complex128))
    with pytest.raises(TypeError):
        had.fwht(np.ones(16, dtype=bool))
    with pytest.raises(ValueError, match="axis"):
        had.fwht(x, axis=1)
    with pytest.raises(ValueError, match="axis"):
        had.fwht(np.ones((2, 16)), axis=-3)
    with pytest.raises(ValueError, match="x"):
        had.fwht(np.float64(1.0))
    with pytest.raises(ValueError, match="out"):
        had.fwht(x, out=np.ones(8))
    with pytest.raises(TypeError, match="out"):
        had.fwht(x, out=np.ones(16, np.float32))
    ro = np.ones(16)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out"):
        had.fwht(x, out=ro)
    with pytest.raises(ValueError, match="blocks"):
        had.RandomizedHadamard(16, seed=0, blocks=0)
    with pytest.raises(ValueError, match="group_size"):
        had.RandomizedHadamard(48, seed=0, group_size=32)
    with pytest.raises(ValueError, match="group_size"):
        had.RandomizedHadamard(30, seed=0, group_size=10)
    with pytest.raises(ValueError, match="n"):
        had.RandomizedHadamard(30, seed=0)
    with pytest.raises(ValueError, match="seed"):
        had.RandomizedHadamard(16, seed=-1)
    with pytest.raises(TypeError):
        had.RandomizedHadamard(16, seed=0, dtype=np.int32)
    r = had.RandomizedHadamard(16, seed=0)
    with pytest.raises(ValueError, match="x"):
        r.forward(np.ones(8))
    with pytest.raises(ValueError, match="block"):
        r.signs(1)
    with pytest.raises(ValueError, match="m"):
        had.srht(x, 17, seed=0)
    with pytest.raises(ValueError, match="m"):
        had.srht(x, 0, seed=0)
    with pytest.raises(ValueError, match="x"):
        had.srht(np.ones(88), 4, seed=0)
    with pytest.raises(ValueError, match="n"):
        had.hadamard_matrix(10)
    with pytest.raises(ValueError, match="too large"):
        had.hadamard_matrix(32768)


def test_out_overlapping_input() -> None:
    base = rand((2, 24), seed=13)
    x = base[:, :16]
    want = had.fwht(x)
    b2 = base.copy()
    had.fwht(b2[:, :16], out=b2[:, 8:24])  # overlapping, shifted
    np.testing.assert_allclose(b2[:, 8:24], want, atol=1e-12)
    np.testing.assert_array_equal(b2[:, :8], base[:, :8])


def test_nan_inf_propagate() -> None:
    x = np.zeros((3, 16))
    x[0, 3] = np.nan
    x[1, 5] = np.inf
    y = had.fwht(x)
    assert np.isnan(y[0]).all()
    assert np.isinf(y[1]).all() and np.isfinite(y[2]).all()
    x2 = np.zeros(12)
    x2[0], x2[1] = np.inf, -np.inf
    assert np.isnan(had.fwht(x2)).any()  # inf - inf
    x3 = np.full(8, np.nan, np.float32)
    assert np.isnan(had.fwht(x3)).all()


def test_byteswapped_and_float16_out() -> None:
    x = rand((2, 32), seed=14).astype(">f8")
    np.testing.assert_allclose(had.fwht(x), had.fwht(x.astype(np.float64)), atol=1e-12)
    h = rand((2, 32), seed=15).astype(np.float16)
    out = np.empty_like(h)
    had.fwht(h, out=out)
    np.testing.assert_allclose(out, had.fwht(h.astype(np.float32)).astype(np.float16))


def test_threads_agree() -> None:
    x = rand((512, 64), seed=16).astype(np.float32)
    a = had.fwht(x, num_threads=1)
    b = had.fwht(x, num_threads=2)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="num_threads"):
        had.fwht(x, num_threads=0)


# --- Ctrl-C and memory ------------------------------------------------------------------


def test_ctrl_c_interrupts_long_rotations_and_transforms() -> None:
    from sigint_check import assert_interrupts_early

    setup = """
    from ordcore import hadamard
    x = np.random.default_rng(0).standard_normal((1 << 15, 1024)).astype(np.float32)
    out = np.empty_like(x)
    rot = hadamard.RandomizedHadamard(1024, seed=0, blocks=64)
    """
    # In place (row loop) and out of place (row-pair loop), single-threaded.
    assert_interrupts_early(setup, "rot.forward(x, num_threads=1)")
    assert_interrupts_early(setup, "rot.forward(x, out=out, num_threads=1)")


def test_huge_rotation_raises_memory_error_instead_of_aborting() -> None:
    from sigint_check import assert_refused_under_rlimit

    line = assert_refused_under_rlimit(
        "from ordcore import hadamard", "hadamard.RandomizedHadamard(2**34, seed=0)", "n")
    assert line.startswith("MemoryError")


_KERNEL_CHECK = r"""
import hashlib
import json
import numpy as np
import scipy.linalg
from ordcore import hadamard

rng = np.random.default_rng(3)
worst = 0.0
digest = hashlib.sha256()
# below, at and above one vector (16 float32 / 8 float64), the 16-register block (256 /
# 128), the radix-16 and radix-8 passes, and composite sizes
sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 4096, 8192, 32768, 65536, 1 << 17,
         12 * 256, 172 * 512]
for n in sizes:
    x = rng.standard_normal((3, n))
    if n <= 4096 and n & (n - 1) == 0:
        want = x @ scipy.linalg.hadamard(n)
    else:
        want = hadamard.fwht(x, normalized=False)  # float64: the generic loops
    for dt in (np.float32, np.float64):
        xs = x.astype(dt)
        tol = (1e-4 if dt == np.float32 else 1e-10) * np.sqrt(n) * (np.abs(want).max() + 1)
        got = hadamard.fwht(xs, normalized=False)
        worst = max(worst, float(np.abs(got - want).max() / tol))
        assert np.abs(got - want).max() <= tol, (n, dt)
        y = xs.copy()
        hadamard.fwht(y, out=y, normalized=True)
        assert np.allclose(y, want / np.sqrt(n), atol=tol / np.sqrt(n)), (n, dt)
        o = np.empty_like(xs)
        hadamard.fwht(xs, out=o, normalized=False)
        assert np.array_equal(o, got)
        digest.update(got.tobytes() + y.tobytes())
        # many rows of a small n in one call (several rows per vector, ragged tails)
        many = rng.standard_normal((37, n)).astype(dt) if n <= 256 else xs
        digest.update(hadamard.fwht(many).tobytes())
        # one row of at most 4096 elements (the binding's GIL-holding tiny path) equals the
        # same row inside a batch large enough to go parallel
        tiny = hadamard.fwht(xs[:1], normalized=False)
        large = hadamard.fwht(np.repeat(xs[:1], 20000 // n + 1, axis=0), normalized=False)
        assert np.array_equal(large, np.broadcast_to(tiny, large.shape)), (n, dt)
        ok = hadamard.is_supported_size(n)
        for group in (None, 4, 32):
            if group is not None and (n % group or n == group):
                continue
            rot = hadamard.RandomizedHadamard(n, seed=5, blocks=2, group_size=group, dtype=dt)
            r = rot.forward(xs)
            back = rot.inverse(r)
            assert np.allclose(back, xs, atol=tol / np.sqrt(n)), (n, dt, group)
            r2 = xs.copy()
            rot.forward(r2, out=r2)  # in place
            assert np.array_equal(r2, r), (n, dt, group)
            # the C-contiguous fast path equals the general path (a column-major copy)
            assert np.array_equal(rot.forward(np.asfortranarray(xs)), r), (n, dt, group)
            assert np.array_equal(rot.inverse(np.asfortranarray(r)), back), (n, dt, group)
            big = np.repeat(xs[:1], 20000 // n + 1, axis=0)
            assert np.array_equal(rot.forward(big), np.broadcast_to(r[:1], big.shape)), (n, dt)
            digest.update(r.tobytes() + back.tobytes())
# out of place on batches of at least 1 MiB (beyond a typical L2 cache; several rows per
# task and one) equals in place bit for bit, for fwht and rotations of one and two blocks
for n, rows in [(16, 20001), (256, 1601), (1024, 301), (4096, 67), (32768, 9)]:
    for dt in (np.float32, np.float64):
        xs = rng.standard_normal((rows, n)).astype(dt)
        y = xs.copy()
        hadamard.fwht(y, out=y, normalized=False)
        o = np.full_like(xs, 7)
        hadamard.fwht(xs, out=o, normalized=False)
        assert np.array_equal(o, y), (n, dt)
        digest.update(o.tobytes())
        for blocks in (1, 2):
            rot = hadamard.RandomizedHadamard(n, seed=7, blocks=blocks, dtype=dt)
            for apply in (rot.forward, rot.inverse):
                y = xs.copy()
                apply(y, out=y)
                o = np.full_like(xs, 7)
                apply(xs, out=o)
                assert np.array_equal(o, y), (n, dt, blocks)
                digest.update(o.tobytes())
print(json.dumps({"kernel": hadamard.kernel(), "worst": worst, "digest": digest.hexdigest()}))
"""


@functools.lru_cache(maxsize=None)
def _kernel_check(kernel: str) -> dict[str, Any]:
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, ORDCORE_HADAMARD_KERNEL=kernel)
    r = subprocess.run([sys.executable, "-c", _KERNEL_CHECK], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.parametrize("kernel", ["portable", "avx2", "avx512"])
def test_every_hadamard_kernel_matches_the_dense_product(kernel: str) -> None:
    """Each SIMD path (pinned by ORDCORE_HADAMARD_KERNEL): in place, out of place and in
    rotations (grouped, in place too), float32 and float64, sizes below, at and above one
    vector, the register block and each large-stride pass, against
    x @ scipy.linalg.hadamard(n); out of place on batches of at least 1 MiB equals in
    place bit for bit."""
    out = _kernel_check(kernel)
    order = ["portable", "avx2", "avx512"]
    assert order.index(out["kernel"]) <= order.index(kernel)
    if kernel == "portable":
        assert out["kernel"] == "portable"


def test_every_hadamard_kernel_gives_identical_bits() -> None:
    """Every path does the same additions in the same order (scale and signs applied to
    the input), so transforms and rotations agree bit for bit across paths."""
    digests = {k: _kernel_check(k)["digest"] for k in ["portable", "avx2", "avx512"]}
    assert len(set(digests.values())) == 1, digests


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_out_aliasing_rules_on_the_fast_path(dt: type) -> None:
    """out= may be x, a view of x's memory, a reversed view, or a separate array: every
    form gives the transform of the original x (the contiguous fast path and the general
    path agree), and a separate out leaves x untouched."""
    base = rand((5, 64), seed=21).astype(dt)
    want = had.fwht(base.astype(np.float64)).astype(dt)
    tol = 1e-5 if dt == np.float32 else 1e-12
    for make_out in (lambda a: a, lambda a: a.view(), lambda a: a[::-1, :][::-1, :],
                     lambda a: a.reshape(5, 64)):
        x = base.copy()
        out = make_out(x)
        res = had.fwht(x, out=out)
        assert res is out
        np.testing.assert_allclose(out, want, atol=tol)
    x = base.copy()
    sep = np.full_like(x, 7)
    assert had.fwht(x, out=sep) is sep
    np.testing.assert_array_equal(x, base)
    np.testing.assert_array_equal(sep, had.fwht(base))
    # 1-D and 3-D inputs through the fast path equal the 2-D rows
    np.testing.assert_array_equal(had.fwht(base[0]), had.fwht(base)[0])
    np.testing.assert_array_equal(had.fwht(base.reshape(5, 4, 16), axis=-1),
                                  had.fwht(base.reshape(20, 16)).reshape(5, 4, 16))
    # a read-only x with out=x is refused as before
    ro = base.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        had.fwht(ro, out=ro)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_rotation_fast_path_equals_the_general_path(dt: type) -> None:
    """RandomizedHadamard on C-contiguous rows of its dtype (new array, in place, separate
    out) gives the bits of the general path (a column-major copy, axis 0 of the transpose),
    leaves x untouched unless in place, and refuses what it refused before."""
    base = rand((6, 64), seed=23).astype(dt)
    rot = had.RandomizedHadamard(64, seed=9, blocks=2, dtype=dt)
    for inverse in (False, True):
        apply = rot.inverse if inverse else rot.forward
        general = apply(np.asfortranarray(base))
        np.testing.assert_array_equal(apply(base.T.copy(), axis=0), general.T)
        x = base.copy()
        np.testing.assert_array_equal(apply(x), general)
        np.testing.assert_array_equal(x, base)
        sep = np.full_like(x, 7)
        assert apply(x, out=sep) is sep
        np.testing.assert_array_equal(sep, general)
        np.testing.assert_array_equal(x, base)
        assert apply(x, out=x) is x
        np.testing.assert_array_equal(x, general)
        np.testing.assert_array_equal(apply(base.reshape(2, 3, 64)), general.reshape(2, 3, 64))
        np.testing.assert_array_equal(apply(base[0]), general[0])
    ro = base.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        rot.forward(ro, out=ro)
    with pytest.raises(ValueError, match="x: has length 32"):
        rot.forward(base[:, :32].copy())
    other = (np.float64 if dt == np.float32 else np.float32)
    with pytest.raises(TypeError, match="out: has dtype"):
        rot.forward(base, out=np.empty(base.shape, dtype=other))
    # tiny inputs (held GIL in the binding) refuse a bad thread count like large ones
    for n_rows in (1, 600):
        with pytest.raises(ValueError, match="num_threads"):
            rot.forward(np.ones((n_rows, 64), dtype=dt), num_threads=0)
        with pytest.raises(ValueError, match="num_threads"):
            had.fwht(np.ones((n_rows, 64), dtype=dt), num_threads=0)


def test_rotation_dtype_is_native_and_none_means_the_default() -> None:
    # A big-endian dtype used to be kept as is: results came back big-endian and no out=
    # matched it (out's byte order was normalized before the comparison).
    x = rand((2, 16), 3, np.float32)
    rot = had.RandomizedHadamard(16, seed=1, dtype=">f4")
    want = had.RandomizedHadamard(16, seed=1, dtype=np.float32).forward(x)
    assert rot.dtype == np.float32 and rot.forward(x).dtype == np.dtype("=f4")
    np.testing.assert_array_equal(rot.forward(x), want)
    for out in (np.empty((2, 16), "<f4"), np.empty((2, 16), ">f4")):
        assert rot.forward(x, out=out) is out
        np.testing.assert_array_equal(out, want)
    assert had.RandomizedHadamard(16, seed=1, dtype=None).dtype == np.float32


def test_hadamard_matrix_dtype_and_negative_size_errors() -> None:
    with pytest.raises(ordcore.InvalidArgumentError, match=r"n: .*got -4"):
        had.hadamard_matrix(-4)
    for dt in (np.uint8, np.uint32, bool):
        with pytest.raises(ordcore.DTypeError, match="dtype"):
            had.hadamard_matrix(4, dtype=dt)
    assert had.hadamard_matrix(4, dtype=None).dtype == np.float64
    np.testing.assert_array_equal(had.hadamard_matrix(4, dtype=np.int8), scipy.linalg.hadamard(4))


def test_normalized_must_be_a_bool() -> None:
    x = rand((2, 16), 4, np.float32)
    for bad in ("no", 0, 1.0, None, np.array([True, False])):
        with pytest.raises(ordcore.InvalidArgumentError, match="normalized: must be a bool"):
            had.fwht(x, normalized=bad)  # type: ignore[arg-type]
        with pytest.raises(ordcore.InvalidArgumentError, match="normalized: must be a bool"):
            had.ifwht(x.T, axis=0, normalized=bad)  # type: ignore[arg-type]
    np.testing.assert_array_equal(had.fwht(x, normalized=np.bool_(False)),
                                  had.fwht(x, normalized=False))


def test_srht_names_an_unsupported_length_before_m() -> None:
    for n, m in ((10, 100), (0, 1), (14, 1000)):
        with pytest.raises(ordcore.InvalidArgumentError, match=rf"x: {n} is not a supported"):
            had.srht(np.ones((2, n)), m, seed=1)


def test_axis_type_errors_match_the_other_integer_arguments() -> None:
    x = rand((2, 16), 5, np.float32)
    for bad in (True, np.True_, 1.0, "1", None, [1]):
        with pytest.raises(ordcore.DTypeError, match="axis: must be an integer"):
            had.fwht(x, axis=bad)  # type: ignore[arg-type]
        with pytest.raises(ordcore.DTypeError, match="axis: must be an integer"):
            had.RandomizedHadamard(16, seed=1).forward(x, axis=bad)  # type: ignore[arg-type]
    with pytest.raises(ordcore.InvalidArgumentError, match="axis: 2 is out of range"):
        had.fwht(x, axis=2)
    np.testing.assert_array_equal(had.fwht(x, axis=np.int64(-1)), had.fwht(x, axis=1))
