"""Arrays whose start is not a multiple of their element size (a buffer viewed at a byte
offset): NumPy calls them C-contiguous, the compiled layer cannot read them in place, so
ordcore copies them (inputs) or writes through an aligned result (``out=``). Every call
must give the same bits as on an aligned copy, and never refuse them as non-contiguous."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ordcore import hadamard, packing, sfc


def at_offset(a: np.ndarray[Any, Any], offset: int) -> np.ndarray[Any, Any]:
    """A copy of ``a`` whose data starts ``offset`` bytes past a 64-byte boundary."""
    buf = np.zeros(a.nbytes + 64 + offset, dtype=np.uint8)
    start = -buf.ctypes.data % 64 + offset
    b = buf[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    b[...] = a
    assert b.flags.c_contiguous and b.ctypes.data % 64 == offset
    return b


@pytest.mark.parametrize("offset", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fwht_and_rotation_read_and_write_unaligned_arrays(offset: int, dtype: Any) -> None:
    rng = np.random.default_rng(offset)
    x = rng.standard_normal((5, 64)).astype(dtype)
    xu = at_offset(x, offset)
    assert not xu.flags.aligned
    want = hadamard.fwht(x)
    assert np.array_equal(hadamard.fwht(xu), want)
    out = at_offset(np.zeros_like(x), offset)
    assert hadamard.fwht(x, out=out) is out and np.array_equal(out, want)
    assert np.array_equal(xu, x)  # the input is left alone
    assert hadamard.fwht(xu, out=xu) is xu and np.array_equal(xu, want)
    rot = hadamard.RandomizedHadamard(64, seed=3, dtype=dtype)
    xu = at_offset(x, offset)
    assert np.array_equal(rot.forward(xu), rot.forward(x))
    assert np.array_equal(rot.inverse(xu, out=out), rot.inverse(x))
    assert np.array_equal(out, rot.inverse(x))


@pytest.mark.parametrize("offset", [1, 4])
def test_sfc_reads_unaligned_codes_and_points(offset: int) -> None:
    rng = np.random.default_rng(offset)
    pts = rng.integers(0, 1 << 17, size=(300, 3), dtype=np.uint64)
    pu = at_offset(pts, offset)
    codes = sfc.hilbert_encode(pts, 17)
    assert np.array_equal(sfc.hilbert_encode(pu, 17), codes)
    cu = at_offset(np.asarray(codes), offset)
    assert np.array_equal(sfc.hilbert_decode(cu, 17, 3), pts)
    assert np.array_equal(sfc.morton_decode(cu, 17, 3), sfc.morton_decode(codes, 17, 3))
    cols = tuple(at_offset(np.ascontiguousarray(pts[:, i]), offset) for i in range(3))
    assert np.array_equal(sfc.hilbert_encode(cols, 17), codes)


def test_packing_reads_unaligned_lengths() -> None:
    lengths = np.array([3, 5, 7, 2, 1, 8, 4], dtype=np.int64)
    lu = at_offset(lengths, 3)
    assert not lu.flags.aligned
    a, b = packing.pack(lengths, 8), packing.pack(lu, 8)
    assert a.num_packs == b.num_packs
    assert np.array_equal(a.seq_index, b.seq_index)
    assert np.array_equal(a.pack_offsets, b.pack_offsets)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize(("shape", "axis"), [((64, 1024), -1), ((1024, 64), 0), ((4, 256, 8), 1),
                                             ((768, 3), 0), ((0, 64), -1), ((3, 0, 16), 2)])
@pytest.mark.parametrize("fn", ["fwht", "ifwht", "forward", "inverse"])
def test_new_hadamard_results_start_on_a_cache_line(dtype: Any, shape: tuple[int, ...],
                                                    axis: int, fn: str) -> None:
    # The documented layout of a new result: C-contiguous, 64-byte aligned, on every path
    # (last axis or not, float16 cast back or not, empty batches), with the bits of the
    # last-axis call.
    x = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    n = shape[axis]
    rot = hadamard.RandomizedHadamard(n, seed=3, dtype=dtype)
    call = {"fwht": hadamard.fwht, "ifwht": hadamard.ifwht, "forward": rot.forward,
            "inverse": rot.inverse}[fn]
    got = call(x, axis=axis)
    assert got.flags.c_contiguous and got.ctypes.data % 64 == 0
    assert got.dtype == dtype and got.shape == shape
    want = np.moveaxis(call(np.ascontiguousarray(np.moveaxis(x, axis, -1))), -1, axis)
    np.testing.assert_array_equal(got, want)
