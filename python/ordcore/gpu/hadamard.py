"""GPU paths of :mod:`ordcore.hadamard`: FWHT and randomized Hadamard rotations on CUDA arrays.

Every function takes a CuPy array or a CUDA ``torch.Tensor`` (float32, float16 or bfloat16;
the transform is computed in float32 and rounded once to the input's type) and returns the
same kind of array, dtype and shape, on the same device and stream. Sizes along the last
axis: ``n = K * 2^k`` as on the CPU (``K`` in 1, 12, 20, 28, 36, 40, 52, 60, 108, 140, 156,
172; ``2^k <= 32768``), with ``H_n = kron(H_K, H_{2^k})`` and the CPU's ``H_K``
(``ordcore.hadamard.hadamard_matrix``). Results equal the CPU's up to float32 rounding
(the summation order differs); the random signs are bit-identical (same counter-based
generator, ``ordcore.gpu.reference.random_signs``).
"""

from __future__ import annotations

import importlib
import math
import threading
from typing import Any

import numpy as np

from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore.gpu import _kernels
from ordcore.gpu._runtime import Boundary, enter, get_kernel, grid_for, launch

__all__ = ["fwht", "randomized_hadamard", "random_signs", "counter_u64", "MAX_POW2"]

MAX_POW2 = 1 << _kernels.FWHT_MAX_LOG_N


def _decompose(n: int, arg: str = "x") -> tuple[int, int]:
    """``(K, 2^k)`` of the CPU's decomposition of ``n`` (smallest base order that fits)."""
    _core: Any = importlib.import_module("ordcore._core")
    dec = _core.hadamard_decompose(n) if n > 0 else None
    if dec is None:
        raise InvalidArgumentError(str(_core.hadamard_unsupported_size_message(arg, n)))
    k, m = int(dec[0]), int(dec[1])
    if m > MAX_POW2:
        raise InvalidArgumentError(
            f"{arg}: size {n} = {k} * {m} needs a power-of-two transform of {m} > {MAX_POW2}, "
            "the largest the GPU kernels support"
        )
    return k, m


_hk_lock = threading.Lock()
_hk_cache: dict[tuple[int, bool, int], Any] = {}


def _base_matrix(cp: Any, k: int, transpose: bool) -> Any:
    """H_K (or its transpose) as a float32 device array, uploaded once per device (a
    constant of the library, not user data)."""
    _core: Any = importlib.import_module("ordcore._core")
    key = (k, transpose, int(cp.cuda.Device().id))
    with _hk_lock:
        h = _hk_cache.get(key)
        if h is None:
            hk = np.asarray(_core.hadamard_matrix(k), dtype=np.float32)
            h = cp.asarray(np.ascontiguousarray(hk.T if transpose else hk))
            _hk_cache[key] = h
    return h


def _storage(bnd: Boundary, x: object, arg: str) -> tuple[Any, str, Any]:
    """``(cupy array, C storage type, dtype to view the result as)``; bfloat16 travels as
    raw 16-bit words."""
    a = bnd.to_cupy(x)
    name = a.dtype.name
    if bnd.bf16:
        return a.view(bnd.cp.uint16), "ord_bf16", a.dtype
    if name == "bfloat16":
        return a.view(bnd.cp.uint16), "ord_bf16", a.dtype
    if name == "float32":
        return a, "float", a.dtype
    if name == "float16":
        return a, "ord_f16", a.dtype
    raise DTypeError(
        f"{arg}: the GPU fwht supports float32, float16 and bfloat16, got {name} "
        "(convert with .astype('float32'))"
    )


def _fwht_launch(
    cp: Any,
    src: Any,
    src_c: str,
    dst: Any,
    dst_c: str,
    rows: int,
    log_m: int,
    scale: float,
    signs: tuple[int, int, int] | None,
) -> None:
    """One fwht kernel over ``rows`` contiguous rows of ``2^log_m`` (src -> dst, may alias);
    ``signs = (seed, stream, sub_k)`` negates coordinates before the transform."""
    if rows == 0:
        return
    block, rows_per_block, smem = _kernels.fwht_geometry(log_m)
    kern = get_kernel("hadamard", _kernels.fwht_name(src_c, dst_c, log_m), smem)
    vec = int(src.data.ptr % 16 == 0 and dst.data.ptr % 16 == 0)
    seed, stream, sub_k = signs if signs is not None else (0, 0, 1)
    args = (
        src,
        dst,
        np.int64(rows),
        np.float32(scale),
        np.int32(vec),
        np.int32(signs is not None),
        np.uint64(seed % (1 << 64)),
        np.uint64(stream),
        np.int64(sub_k),
    )
    grid = (rows + rows_per_block - 1) // rows_per_block
    launch(kern, (grid,), (block,), args, shared_mem=smem)


def _transform(
    cp: Any,
    src: Any,
    src_c: str,
    dst: Any,
    dst_c: str,
    n_row: int,
    g: int,
    scale: float,
    inverse: bool,
    signs: tuple[int, int] | None,
) -> None:
    """``dst = (src * signs) @ blockdiag(H_g)`` (``H_g^T`` when inverse) over rows of length
    ``n_row``; ``signs = (seed, stream)`` indexed by the coordinate in the row."""
    total = src.size
    k, m = _decompose(g, "group_size" if g != n_row else "x")
    log_m = m.bit_length() - 1
    sub = None if signs is None else (signs[0], signs[1], n_row // m)
    if k == 1:
        _fwht_launch(cp, src, src_c, dst, dst_c, total // m, log_m, scale, sub)
        return
    z = cp.empty(total, dtype=cp.float32)
    _fwht_launch(cp, src, src_c, z, "float", total // m, log_m, 1.0, sub)
    hk = _base_matrix(cp, k, inverse)
    kern = get_kernel("hadamard", f"hadamard_kmix<{dst_c}>")
    groups = total // g
    args = (z, dst, hk, np.int32(k), np.int64(m), np.int64(groups), np.float32(scale))
    launch(kern, (grid_for(groups * m, 256),), (256,), args)


_C_OF_DTYPE = {"float32": "float", "float16": "ord_f16", "bfloat16": "ord_bf16"}


def _prepare(x: object, arg: str, axis: int) -> tuple[Boundary, Any, str, Any, int]:
    """``(boundary, rows (m, n) contiguous, C type, dtype, axis)`` with the transformed axis
    moved last (a device copy only when the layout needs one)."""
    bnd = enter(x)
    a, c, dtype = _storage(bnd, x, arg)
    if a.ndim == 0:
        raise InvalidArgumentError(f"{arg}: needs at least one axis, got a 0-d array")
    if isinstance(axis, bool) or not -a.ndim <= int(axis) < a.ndim:
        raise InvalidArgumentError(f"axis: {axis} is out of range for an array of {a.ndim} dimensions")
    ax = int(axis) % a.ndim
    return bnd, a, c, dtype, ax


def _finish(bnd: Boundary, res: Any, a_shape: tuple[int, ...], ax: int, dtype: Any, out: Any) -> Any:
    """Move the axis back, view as the storage dtype, copy into ``out`` when given."""
    cp = bnd.cp
    moved = [*a_shape[:ax], *a_shape[ax + 1 :], a_shape[ax]]
    y = cp.moveaxis(res.reshape(moved), -1, ax)
    if y.dtype != dtype:
        y = y.view(dtype)  # bfloat16 words travel as uint16
    if out is None:
        return bnd.back(cp.ascontiguousarray(y))
    o = bnd.to_cupy(out)
    if o.shape != y.shape:
        raise InvalidArgumentError(f"out: has shape {o.shape}, expected {y.shape}")
    if o.dtype != y.dtype:
        raise DTypeError(f"out: has dtype {o.dtype}, expected {y.dtype}")
    o[...] = y  # device to device (out may alias the input: the result is complete)
    return out


def _rows(cp: Any, a: Any, ax: int) -> Any:
    n = int(a.shape[ax])
    return cp.ascontiguousarray(cp.moveaxis(a, ax, -1)).reshape(-1, n) if a.size else a.reshape(-1, max(n, 1))


def fwht(
    x: Any, *, axis: int = -1, normalized: bool = True, inverse: bool = False, out: Any = None
) -> Any:
    """The Hadamard transform along ``axis`` of a CUDA array (the GPU path of
    ``ordcore.hadamard.fwht`` / ``ifwht``).

    ``y = x @ H_n`` (``x @ H_n^T`` when ``inverse``), times ``1/sqrt(n)`` when
    ``normalized``, else ``1`` (forward) or ``1/n`` (inverse). Any shape; float32, float16
    or bfloat16 (computed in float32, one rounding at the end, so ``2 * ones(32768)`` in
    float16 gives ``2 * sqrt(32768)`` without overflowing). Strided views are transformed
    exactly (a contiguous device copy is made first); the input is never modified unless it
    is ``out``.

    Raises
    ------
    InvalidArgumentError
        ``n`` is not a supported size (or its power-of-two part exceeds 32768), bad
        ``axis`` or ``out``.
    DTypeError
        another dtype (float64 has no GPU path: convert it).
    GpuError
        no CuPy, or a kernel failed to compile or launch.
    """
    bnd, a, c, dtype, ax = _prepare(x, "x", axis)
    cp = bnd.cp
    with bnd.active():
        n = int(a.shape[ax])
        _decompose(n)
        rows = _rows(cp, a, ax)
        res = cp.empty_like(rows)
        scale = 1.0 / math.sqrt(n) if normalized else (1.0 / n if inverse else 1.0)
        if rows.size:
            _transform(cp, rows, c, res, c, n, n, scale, inverse, None)
        return _finish(bnd, res, a.shape, ax, dtype, out)


def randomized_hadamard(
    x: Any,
    *,
    seed: int,
    blocks: int = 1,
    group_size: int | None = None,
    inverse: bool = False,
    axis: int = -1,
    out: Any = None,
    out_dtype: str | None = None,
) -> Any:
    """``ordcore.hadamard.RandomizedHadamard(n, seed=seed, blocks=blocks,
    group_size=group_size)`` applied along ``axis`` of a CUDA array (``inverse`` undoes it).

    Forward ``y = x D_0 H D_1 H ... D_{B-1} H / sqrt(g)^B`` with ``H`` block-diagonal in
    ``H_g`` (``g = group_size`` or ``n``) and ``D_b`` the signs of block ``b``:
    coordinate ``i`` negated iff ``counter_u64(seed, b, i) >> 63 == 1``, generated on the
    device (bit-identical to the CPU). Intermediate rounds stay in float32; the result has
    ``out_dtype`` ("float32", "float16" or "bfloat16"; default: the input's).
    Same errors as :func:`fwht`; ``blocks`` in 1..64.
    """
    if not 1 <= blocks <= 64:
        raise InvalidArgumentError(f"blocks: must be between 1 and 64, got {blocks}")
    if not 0 <= int(seed) < 2**64:
        raise InvalidArgumentError(f"seed: must be in [0, 2**64), got {seed}")
    bnd, a, c, dtype, ax = _prepare(x, "x", axis)
    cp = bnd.cp
    with bnd.active():
        n = int(a.shape[ax])
        g = n if group_size is None else int(group_size)
        if g < 1 or n % g:
            raise InvalidArgumentError(f"group_size: {g} does not divide n = {n}")
        _decompose(g, "group_size" if group_size is not None else "x")
        rows = _rows(cp, a, ax)
        in_c = c
        in_name = "bfloat16" if c == "ord_bf16" else dtype.name
        oname = in_name if out_dtype is None else str(out_dtype)
        if oname != "bfloat16":
            oname = np.dtype(oname).name
        if oname not in _C_OF_DTYPE:
            raise DTypeError(f"dtype: the GPU rotation writes float32, float16 or bfloat16, not {oname}")
        oc = _C_OF_DTYPE[oname]
        if c != oc and "float" not in (c, oc):  # no direct half <-> bfloat16 instance
            rows, c = rows.astype(cp.float32) if c == "ord_f16" else _bf16_to_f32(cp, rows), "float"
        res_dtype = cp.uint16 if oc == "ord_bf16" else (cp.float16 if oc == "ord_f16" else cp.float32)
        res = cp.empty(rows.shape, dtype=res_dtype)
        if rows.size:
            scale = float(g) ** (-0.5 * blocks)
            buf = cp.empty(rows.shape, dtype=cp.float32) if (blocks > 1 or inverse) else None
            # (sign stream applied before, transform?) per launch
            steps: list[tuple[int | None, bool]]
            if not inverse:
                steps = [(b, True) for b in range(blocks)]
            else:
                steps = [(None, True)]
                steps += [(b, True) for b in range(blocks - 1, 0, -1)]
                steps += [(0, False)]
            src, src_c = rows, c
            for i, (stream, do_h) in enumerate(steps):
                last = i == len(steps) - 1
                dst, dst_c = (res, oc) if last else (buf, "float")
                s = scale if last else 1.0
                if do_h:
                    sg = (int(seed), stream) if stream is not None else None
                    _transform(cp, src, src_c, dst, dst_c, n, g, s, inverse, sg)
                else:  # signs only: length-1 "rows", the generator index is the coordinate
                    _fwht_launch(cp, src, src_c, dst, dst_c, src.size, 0, s, (int(seed), int(stream or 0), n))
                src, src_c = dst, dst_c
        if oname == "bfloat16":
            if in_c != "ord_bf16":
                raise DTypeError("dtype: bfloat16 output needs bfloat16 input on the GPU")
            return _finish(bnd, res, a.shape, ax, dtype, out)
        return _finish(bnd, res, a.shape, ax, np.dtype(oname), out)


def _bf16_to_f32(cp: Any, words: Any) -> Any:
    return (words.astype(cp.uint32) << 16).view(cp.float32)


def random_signs(seed: int, blocks: int, n: int, like: Any) -> Any:
    """int8 ``(blocks, n)`` signs (``-1`` iff ``counter_u64(seed, b, i) >> 63 == 1``) on
    the device of ``like`` (a CUDA array), in ``like``'s kind."""
    bnd = enter(like)
    cp = bnd.cp
    with bnd.active():
        out = cp.empty((blocks, n), dtype=cp.int8)
        if out.size:
            kern = get_kernel("hadamard", "random_signs")
            args = (np.uint64(seed % (1 << 64)), np.int64(blocks), np.int64(n), out)
            launch(kern, (grid_for(out.size, 256),), (256,), args)
        return bnd.back(out)


def counter_u64(seed: int, stream: int, count: int, like: Any) -> Any:
    """uint64 ``counter_u64(seed, stream, i)`` for ``i < count`` on ``like``'s device."""
    bnd = enter(like)
    cp = bnd.cp
    with bnd.active():
        out = cp.empty(count, dtype=cp.uint64)
        if count:
            kern = get_kernel("hadamard", "counter_u64_kernel")
            args = (np.uint64(seed % (1 << 64)), np.uint64(stream % (1 << 64)), np.int64(count), out)
            launch(kern, (grid_for(count, 256),), (256,), args)
        return bnd.back(out)
