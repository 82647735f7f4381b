"""Fast Walsh-Hadamard transforms and randomized Hadamard rotations.

Sizes
-----
A length ``n`` is supported when ``n = K * 2**k`` with ``K`` in
``{1, 12, 20, 28, 36, 40, 52, 60, 108, 140, 156, 172}`` (e.g. ``11008 = 172 * 64``,
``14336 = 28 * 512``). The transform of a row vector ``x`` is ``x @ H_n`` with::

    H_n = kron(H_K, H_{2**k})      coordinate i = a * 2**k + b  (a < K, b < 2**k)

where ``H_{2**k}`` is the Sylvester matrix (``scipy.linalg.hadamard``, natural order) and
``H_K`` a Hadamard matrix of order ``K`` (entries +-1, ``H_K @ H_K.T == K * I``) built by
the Paley I (K = 12, 20, 60, 108, 140), Paley II (K = 28, 36, and 52 over GF(25)) or
Williamson (K = 156, 172; circulants of order 39 and 43) constructions. The smallest ``K``
is used, so ``40 * 2**k`` runs as ``20 * 2**(k+1)`` (``H_40 = kron(H_20, H_2)``).
:func:`hadamard_matrix` returns ``H_n`` itself. ``H_K`` is not symmetric, so the inverse
transform (:func:`ifwht`) multiplies by the transpose. Other sizes raise
:class:`~ordcore.InvalidArgumentError` naming the nearest supported sizes; zero padding
happens only through :func:`pad_to_supported`.

Randomized rotations
--------------------
:class:`RandomizedHadamard` with ``blocks = B`` maps a row ``x`` to
``x D_1 H D_2 H ... D_B H / sqrt(g)**B`` (signs first, then the transform, ``B`` times;
``g`` the group size, ``n`` when ungrouped). The sign of coordinate ``i`` (0-based, over
the whole row of length ``n``, grouped or not) in block ``b`` (0-based) is ``-1`` exactly
when the top bit of the counter-based value ``counter_u64(seed, b, i)`` is set (SplitMix64
finalizer applied three times, documented in ``rust/ordcore-core/src/rng.rs``), so the same
``(seed, n, blocks)`` gives bit-identical signs in every process and on every device.

All transforms run in Rust on rows in parallel (rayon) with the GIL released; float32 and
float64 compute natively, float16 computes in float32 (the scale is applied before the cast
back). Integer, boolean and complex inputs raise :class:`~ordcore.DTypeError`.
:func:`fwht`, :func:`ifwht` and :class:`RandomizedHadamard` also take CuPy arrays and CUDA
torch tensors (float32, float16, bfloat16): they run on the GPU (:mod:`ordcore.gpu.hadamard`,
bit-identical signs) and return the same kind of array.
"""

from __future__ import annotations

from typing import Any, Callable, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from ordcore import _core
from ordcore import gpu as _gpu
from ordcore._args import (
    INT64_MAX,
    UINT64_MAX,
    bool_arg,
    c_array,
    empty_aligned,
    int_arg,
    num_threads_arg,
    warn_unknown_kernel_cap,
)
from ordcore.errors import DTypeError, InvalidArgumentError

__all__ = [
    "kernel",
    "SUPPORTED_K",
    "fwht",
    "ifwht",
    "hadamard_matrix",
    "is_supported_size",
    "next_supported_size",
    "supported_sizes",
    "pad_to_supported",
    "RandomizedHadamard",
    "srht",
    "srht_indices",
]

#: The base orders ``K`` of the supported sizes ``K * 2**k``.
SUPPORTED_K: tuple[int, ...] = (1, 12, 20, 28, 36, 40, 52, 60, 108, 140, 156, 172)

_FLOAT_KINDS = {np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)}


def kernel() -> str:
    """The SIMD path of the CPU transforms: ``"avx512"``, ``"avx2"`` or ``"portable"``.

    The best the CPU runs, capped by the environment variable ``ORDCORE_HADAMARD_KERNEL``
    (read once per process; a value other than these three is ignored, with a
    ``RuntimeWarning`` at import). On ``"avx512"`` power-of-two rows (float32 and float64, any
    length) run hand-blocked kernels (several short rows per vector, up to 256 float32 / 128
    float64 elements in registers, radix-16/8 register passes above). Every path does the
    same additions in the same order, with the scale and signs applied to the input, so
    all paths return identical bits.
    """
    return _core.hadamard_kernel()


warn_unknown_kernel_cap("ORDCORE_HADAMARD_KERNEL", ("portable", "avx2", "avx512"))


def is_supported_size(n: int) -> bool:
    """Whether ``n`` has the form ``K * 2**k`` with ``K`` in :data:`SUPPORTED_K`.

    A predicate on the form of any ``n`` up to ``2**64 - 1`` (``False`` outside
    ``[1, 2**64 - 1]``); the transforms themselves take lengths up to ``2**63 - 1``, the
    largest an array dimension can be."""
    n = int_arg("n", n, None, None)
    return 1 <= n <= UINT64_MAX and bool(_core.hadamard_is_supported_size(n))


def next_supported_size(n: int) -> int:
    """The smallest supported size ``>= n`` (``1`` for ``n <= 1``)."""
    return int(_core.hadamard_next_supported_size(max(int_arg("n", n, None, INT64_MAX), 0)))


def supported_sizes(max_n: int) -> list[int]:
    """Every supported size ``<= max_n``, ascending (``[1, 2, 4, 8, 12, 16, 20, ...]``)."""
    max_n = int_arg("max_n", max_n, None, None)
    if max_n < 1:
        return []
    return [int(v) for v in _core.hadamard_supported_sizes(min(max_n, INT64_MAX))]


def _check_size(arg: str, n: int) -> None:
    if n > INT64_MAX:
        raise InvalidArgumentError(f"{arg}: must be at most 2**63 - 1, got {n}")
    if n < 0:
        raise InvalidArgumentError(f"{arg}: must be a supported size (a positive length), got {n}")
    if not is_supported_size(n):
        raise InvalidArgumentError(_core.hadamard_unsupported_size_message(arg, n))


def _compute_dtype(arg: str, dtype: np.dtype[Any]) -> np.dtype[Any]:
    """float32 for float16/float32, float64 for float64; DTypeError otherwise."""
    if dtype.kind != "f" or np.dtype(dtype.type) not in _FLOAT_KINDS:
        raise DTypeError(
            f"{arg}: dtype {dtype} is not supported (float16, float32 or float64); "
            f"cast integer or complex data explicitly, e.g. x.astype(np.float32)"
        )
    return np.dtype(np.float64) if dtype.itemsize == 8 else np.dtype(np.float32)


def _normalize_axis(axis: int, ndim: int) -> int:
    """``axis`` in ``[0, ndim)``: a bool or non-integer is a DTypeError (as for every
    integer argument, :func:`int_arg`), one out of range an InvalidArgumentError."""
    axis = int_arg("axis", axis, None, None)
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(f"axis: {axis} is out of range for an array of {ndim} dimensions")
    return axis % ndim


def _as_input(arg: str, x: ArrayLike) -> NDArray[Any]:
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise InvalidArgumentError(f"{arg}: must have at least one dimension")
    return arr


def _check_out(out: Any, shape: tuple[int, ...], dtype: np.dtype[Any]) -> NDArray[Any]:
    if not isinstance(out, np.ndarray):
        raise InvalidArgumentError(f"out: must be a NumPy array, got {type(out).__name__}")
    if out.shape != shape:
        raise InvalidArgumentError(f"out: has shape {out.shape}, expected {shape}")
    if out.dtype.newbyteorder("=") != dtype:
        raise DTypeError(f"out: has dtype {out.dtype}, expected {dtype}")
    if not out.flags.writeable:
        raise InvalidArgumentError("out: is read-only")
    return out


def _rows_transform(
    arr: NDArray[Any],
    axis: int,
    out: NDArray[Any] | None,
    out_dtype: np.dtype[Any],
    kernel: Callable[[NDArray[Any], NDArray[Any]], None],
    inplace_kernel: Callable[[NDArray[Any]], None] | None,
) -> NDArray[Any]:
    """Runs ``kernel(src_rows, dst_rows)`` over the rows along ``axis`` and handles
    layout, dtype and ``out`` (which may alias the input in any way)."""
    n = arr.shape[axis]
    cdt = np.dtype(np.float64) if out_dtype.itemsize == 8 else np.dtype(np.float32)
    last = axis == arr.ndim - 1
    moved = arr if last else np.moveaxis(arr, axis, -1)
    if out is not None:
        out_moved = out if last else np.moveaxis(out, axis, -1)
        # In place on a C-contiguous row layout: no copy at all.
        if (
            inplace_kernel is not None
            and out_moved.dtype == cdt
            and out_moved.flags.c_contiguous
            and out_moved.flags.aligned
            and out is arr
        ):
            inplace_kernel(out_moved.reshape(-1, n))
            return out
    src = c_array(moved, cdt).reshape(-1, n)
    if (
        out is not None
        and out_moved.dtype == cdt
        and out_moved.flags.c_contiguous
        and out_moved.flags.aligned
        and not np.may_share_memory(out, src)
    ):
        kernel(src, out_moved.reshape(-1, n))
        return out
    res = empty_aligned(src.shape, cdt)
    kernel(src, res)
    res_moved = res.reshape(moved.shape)
    if out is None and last and out_dtype == cdt:
        return res_moved
    if out is None:
        # One copy that casts (float16) and puts the axis back, into an aligned result.
        out = empty_aligned(arr.shape, out_dtype)
        out_moved = out if last else np.moveaxis(out, axis, -1)
    # A float16 result beyond its range becomes inf (documented), without NumPy's warning.
    with np.errstate(over="ignore"):
        np.copyto(out_moved, res_moved, casting="unsafe")
    return out


def _normalized_arg(value: object) -> bool:
    """``normalized`` checked (:func:`bool_arg`), without a call for a plain bool."""
    return value if type(value) is bool else bool_arg("normalized", value)


def _fast_layout(x: object, axis: object, out: Any) -> TypeGuard[NDArray[Any]]:
    """Whether a call takes the fast path: ``x`` a non-empty native float32/float64 ndarray,
    C-contiguous, transformed along its last axis, in place (``out is x``, writeable), into
    a new array, or into a separate C-contiguous writeable ``out`` of its shape and dtype.
    Small batches are dominated by per-call overhead, so these skip the general layout
    handling of :func:`_rows_transform`; every other call goes the general way (which
    raises the errors)."""
    return (
        type(x) is np.ndarray
        and (
            out is None
            or out is x
            or (
                type(out) is np.ndarray
                and out.shape == x.shape
                and out.dtype == x.dtype
                and out.flags.c_contiguous
                and out.flags.aligned
                and out.flags.writeable
                and not np.may_share_memory(out, x)
            )
        )
        and x.ndim >= 1
        and type(axis) is int
        and (axis == -1 or axis == x.ndim - 1)
        and x.dtype.isnative
        and x.dtype.char in "fd"
        and x.flags.c_contiguous
        and x.flags.aligned
        and (out is not x or x.flags.writeable)
        and x.size > 0
    )


def _fast_threads(num_threads: Any) -> int | None:
    """``num_threads_arg(num_threads)`` without the call for the common values (its bound
    is never below 64)."""
    if num_threads is None or (type(num_threads) is int and 1 <= num_threads <= 64):
        return num_threads
    return num_threads_arg(num_threads)


def _rows_of(x: NDArray[Any]) -> NDArray[Any]:
    """The C-contiguous ``x`` as ``(rows, n)`` (``x`` itself when already 2-D)."""
    return x if x.ndim == 2 else x.reshape(-1, x.shape[-1])


def _new_or_out(rows: NDArray[Any], out: NDArray[Any] | None) -> NDArray[Any]:
    """A new array of ``rows``'s shape and dtype (64-byte aligned, see
    :func:`ordcore._args.empty_aligned`), or ``out`` viewed as ``(rows, n)``."""
    if out is None:
        return empty_aligned(rows.shape, rows.dtype)
    return _rows_of(out)


def _fwht_impl(
    x: ArrayLike,
    axis: int,
    normalized: bool,
    inverse: bool,
    out: NDArray[Any] | None,
    num_threads: int | None,
) -> NDArray[Any]:
    if _fast_layout(x, axis, out) and _core.hadamard_is_supported_size(x.shape[-1]):
        nt = _fast_threads(num_threads)
        f32 = x.dtype.char == "f"
        rows = _rows_of(x)
        if out is not x:
            res = _new_or_out(rows, out)
            (_core.hadamard_fwht_f32 if f32 else _core.hadamard_fwht_f64)(
                rows, res, bool(normalized), inverse, nt)
            return res.reshape(x.shape) if out is None else out
        (_core.hadamard_fwht_inplace_f32 if f32 else _core.hadamard_fwht_inplace_f64)(
            rows, bool(normalized), inverse, nt)
        return x
    return _fwht_general(x, axis, normalized, inverse, out, num_threads)


def _fwht_general(
    x: ArrayLike,
    axis: int,
    normalized: bool,
    inverse: bool,
    out: NDArray[Any] | None,
    num_threads: int | None,
) -> NDArray[Any]:
    """:func:`_fwht_impl` for every layout (a function of its own: the closures' cells would
    cost the fast path their allocation)."""
    arr = _as_input("x", x)
    ax = _normalize_axis(axis, arr.ndim)
    _check_size("x", arr.shape[ax])
    cdt = _compute_dtype("x", arr.dtype)
    out_dtype = np.dtype(arr.dtype.newbyteorder("="))
    if out is not None:
        out = _check_out(out, arr.shape, out_dtype)
    f32 = cdt == np.float32
    into = _core.hadamard_fwht_f32 if f32 else _core.hadamard_fwht_f64
    inplace = _core.hadamard_fwht_inplace_f32 if f32 else _core.hadamard_fwht_inplace_f64

    def kernel(src: NDArray[Any], dst: NDArray[Any]) -> None:
        into(src, dst, bool(normalized), inverse, num_threads_arg(num_threads))

    def inplace_kernel(rows: NDArray[Any]) -> None:
        inplace(rows, bool(normalized), inverse, num_threads_arg(num_threads))

    return _rows_transform(arr, ax, out, out_dtype, kernel, inplace_kernel)


def fwht(
    x: ArrayLike,
    *,
    axis: int = -1,
    normalized: bool = True,
    out: NDArray[Any] | None = None,
    num_threads: int | None = None,
) -> NDArray[Any]:
    """Fast Walsh-Hadamard transform along one axis.

    Computes ``x @ H_n`` along ``axis`` (``H_n`` as returned by :func:`hadamard_matrix`),
    divided by ``sqrt(n)`` when ``normalized`` (then the transform is orthogonal). For
    ``n = 2**k`` this equals ``x @ scipy.linalg.hadamard(n)`` (Sylvester, natural order),
    which is symmetric, so applying the unnormalized transform twice gives ``n * x``.

    Parameters
    ----------
    x : array_like, float16, float32 or float64, shape ``(..., n, ...)``
        Any rank and strides; ``n = x.shape[axis]`` must be a supported size.
    axis : int
        The axis to transform (negative counts from the end).
    normalized : bool
        Scale by ``1/sqrt(n)`` (default) or not at all; a NumPy bool is accepted, anything
        else (a string is truthy) raises :class:`~ordcore.InvalidArgumentError`.
    out : ndarray, optional
        Array of ``x``'s shape and dtype to write into; may be ``x`` itself (in place) or
        overlap it in any way (the result is computed before it is written).
    num_threads : int, optional
        Rayon threads (default: all cores, or ``RAYON_NUM_THREADS``).

    Returns
    -------
    ndarray
        Same shape and dtype as ``x`` (``out`` when given), C-contiguous; a new array
        starts on a 64-byte boundary (NumPy's large arrays start 16 bytes past one, which
        splits every other 32-byte vector across two cache lines in the next kernel that
        reads it). float16 is computed in float32 and the scale applied before the cast
        back, so it overflows only where the result itself is not representable. NaN and
        inf propagate as IEEE arithmetic says.

    Raises
    ------
    InvalidArgumentError
        Unsupported ``n`` (the message lists the nearest supported sizes), ``axis`` out of
        range, a 0-d input, ``out`` of the wrong shape or read-only.
    DTypeError
        Integer, boolean, complex or object input, ``out`` of another dtype, or an ``axis``
        that is not an integer (a bool included).
    KeyboardInterrupt
        Ctrl-C during a long call (checked every few thousand elements); rows of ``out``
        (or of ``x`` in place) may then be left partly transformed.
    MemoryError
        The scratch row would not fit in memory.
    """
    normalized = _normalized_arg(normalized)
    if type(x) is not np.ndarray and _gpu.is_device_array(x):
        return _gpu.hadamard.fwht(x, axis=axis, normalized=normalized, out=out)  # type: ignore[no-any-return]
    return _fwht_impl(x, axis, normalized, False, out, num_threads)


def ifwht(
    y: ArrayLike,
    *,
    axis: int = -1,
    normalized: bool = True,
    out: NDArray[Any] | None = None,
    num_threads: int | None = None,
) -> NDArray[Any]:
    """Inverse of :func:`fwht` with the same ``normalized``: ``y @ H_n.T`` divided by
    ``sqrt(n)`` (normalized) or ``n`` (unnormalized).

    ``H_n.T`` differs from ``H_n`` when ``H_K`` is not symmetric (``K > 1``), so this is
    also the adjoint (backward pass) of the normalized transform. Parameters, returns and
    errors as for :func:`fwht`.
    """
    normalized = _normalized_arg(normalized)
    if type(y) is not np.ndarray and _gpu.is_device_array(y):
        return _gpu.hadamard.fwht(y, axis=axis, normalized=normalized, inverse=True, out=out)  # type: ignore[no-any-return]
    return _fwht_impl(y, axis, normalized, True, out, num_threads)


def hadamard_matrix(n: int, *, dtype: DTypeLike = np.float64) -> NDArray[Any]:
    """The dense unnormalized ``(n, n)`` matrix ``H_n`` that ``fwht(x, normalized=False)``
    applies as ``x @ H_n``: ``kron(H_K, H_{2**k})``, entries ``+1``/``-1``.

    Parameters
    ----------
    n : int
        A supported size, at most 16384 (the dense matrix is meant for tests and for reading H_K).
    dtype : dtype
        Output dtype: a signed integer, float or complex dtype (default, and ``None``:
        float64).

    Returns
    -------
    ndarray of shape ``(n, n)``
        With ``H_n @ H_n.T == n * I``. For a power of two it equals
        ``scipy.linalg.hadamard(n)``.

    Raises
    ------
    InvalidArgumentError
        Unsupported, negative or too large ``n``.
    DTypeError
        An unsigned integer or bool ``dtype`` (it cannot hold ``-1``).
    """
    n = int_arg("n", n, None, None)
    _check_size("n", n)
    dt = np.dtype(np.float64 if dtype is None else dtype)
    if dt.kind not in "ifc":
        raise DTypeError(
            f"dtype: {dt} cannot hold the entries +1 and -1 (use a signed integer, float or "
            f"complex dtype)"
        )
    return np.asarray(_core.hadamard_matrix(n), dtype=dt)


def pad_to_supported(
    x: ArrayLike, *, axis: int = -1, size: int | None = None
) -> tuple[NDArray[Any], int]:
    """Zero-pad ``x`` along ``axis`` to a supported size, explicitly.

    Parameters
    ----------
    x : array_like
        Any array with at least one dimension.
    axis : int
        The axis to pad.
    size : int, optional
        Target size (must be supported and ``>=`` the current one); default the smallest
        supported size ``>= x.shape[axis]`` (:func:`next_supported_size`).

    Returns
    -------
    (padded, n) : (ndarray, int)
        A new array (``x`` is never modified; a copy even when no padding is needed) with
        ``x`` in the leading ``x.shape[axis]`` positions and zeros after, and its new size
        ``n``. Slice the first ``x.shape[axis]`` entries after an inverse transform to get
        ``x`` back.
    """
    arr = _as_input("x", x)
    ax = _normalize_axis(axis, arr.ndim)
    cur = arr.shape[ax]
    n = next_supported_size(cur) if size is None else int_arg("size", size, None, None)
    if n < cur:
        raise InvalidArgumentError(f"size: {n} is smaller than the current length {cur}")
    _check_size("size", n)
    widths = [(0, 0)] * arr.ndim
    widths[ax] = (0, n - cur)
    return np.pad(arr, widths), n


def _rotation_dtype(dtype: DTypeLike) -> np.dtype[Any]:
    """``dtype`` (``None``: the default float32) in native byte order, as results are."""
    dt = np.dtype(np.float32 if dtype is None else dtype)
    _compute_dtype("dtype", dt)
    return dt.newbyteorder("=")


class RandomizedHadamard:
    """Randomized Hadamard rotation ``y = x D_1 H D_2 H ... D_B H / sqrt(g)**B``.

    Signs first, then the Hadamard transform, ``blocks`` times, normalized so the map is
    orthogonal (QuIP#/QuaRot-style incoherence processing; ``blocks = 2`` is the two-block
    structured rotation of Zilca and Mendelson, arXiv 2604.23418). With ``group_size = g``
    the transform ``H`` is block-diagonal: ``n / g`` independent ``H_g`` (the grouped
    rotation used with microscaling FP4 formats); ``n`` itself then need not be supported.

    The sign of coordinate ``i`` (0-based, global over ``0..n`` also when grouped) in block
    ``b`` (0-based) is ``-1`` iff ``ordcore_core::rng::counter_sign_negative(seed, b, i)``:
    the top bit of ``mix64(mix64(mix64(seed + G) ^ (b + G)) ^ (i + G))`` with
    ``G = 0x9E3779B97F4A7C15`` and wrapping 64-bit arithmetic (``mix64`` the SplitMix64
    finalizer). No global RNG state: the same ``(seed, n, blocks)`` gives identical signs
    and outputs in every process and on every backend.

    Parameters
    ----------
    n : int
        Row length.
    seed : int
        In ``[0, 2**64)``.
    blocks : int
        Number of sign-and-transform rounds, 1 to 64.
    group_size : int, optional
        A supported size dividing ``n``.
    dtype : float16, float32 (default, and ``None``) or float64
        The dtype :meth:`forward` / :meth:`inverse` return (float16 computes in float32),
        in native byte order whatever the byte order given.

    Raises
    ------
    InvalidArgumentError
        ``blocks < 1``, ``group_size`` not dividing ``n`` or unsupported, ``n``
        unsupported without a group size, ``seed`` out of range.
    DTypeError
        A non-float ``dtype``.
    MemoryError
        The signs (12 bytes per coordinate and block) would not fit in memory, e.g.
        ``n = 2**34``; the message names ``n`` and the bytes.
    """

    def __init__(
        self,
        n: int,
        *,
        seed: int,
        blocks: int = 1,
        group_size: int | None = None,
        dtype: DTypeLike = np.float32,
    ) -> None:
        seed = int_arg("seed", seed, 0, UINT64_MAX)
        blocks = int_arg("blocks", blocks, 1)
        n = int_arg("n", n, 1)
        if group_size is not None:
            group_size = int_arg("group_size", group_size, 1)
        if group_size is None:
            _check_size("n", int(n))
        elif int(n) % int(group_size) == 0:
            _check_size("group_size", int(group_size))
        self._dtype = _rotation_dtype(dtype)
        self._core = _core.RandomizedHadamard(
            int(n), int(seed), int(blocks), None if group_size is None else int(group_size)
        )

    @property
    def n(self) -> int:
        """Row length."""
        return int(self._core.n)

    @property
    def seed(self) -> int:
        """The seed of the signs."""
        return int(self._core.seed)

    @property
    def blocks(self) -> int:
        """Number of sign-and-transform rounds."""
        return int(self._core.blocks)

    @property
    def group_size(self) -> int:
        """The group size (``n`` when ungrouped)."""
        return int(self._core.group_size)

    @property
    def dtype(self) -> np.dtype[Any]:
        """The output dtype of :meth:`forward` and :meth:`inverse`."""
        return self._dtype

    def __repr__(self) -> str:
        return (
            f"RandomizedHadamard(n={self.n}, seed={self.seed}, blocks={self.blocks}, "
            f"group_size={self.group_size}, dtype={self._dtype.name})"
        )

    def signs(self, block: int = 0) -> NDArray[np.float64]:
        """The signs ``D_{block+1}`` as a float64 vector of ``+1.0``/``-1.0`` (length ``n``)."""
        if not 0 <= int_arg("block", block, None, None) < self.blocks:
            raise InvalidArgumentError(f"block: must be in [0, {self.blocks}), got {block}")
        return np.asarray(self._core.signs(int(block)))

    def _apply(
        self,
        x: ArrayLike,
        axis: int,
        out: NDArray[Any] | None,
        num_threads: int | None,
        inverse: bool,
    ) -> NDArray[Any]:
        if type(x) is not np.ndarray and _gpu.is_device_array(x):
            return self._apply_gpu(x, axis, out, inverse)  # type: ignore[no-any-return]
        if _fast_layout(x, axis, out) and x.dtype == self._dtype and x.shape[-1] == self._core.n:
            nt = _fast_threads(num_threads)
            rows = _rows_of(x)
            f32 = x.dtype.char == "f"
            core = self._core
            if out is not x:
                res = _new_or_out(rows, out)
                (core.rotate_into_f32 if f32 else core.rotate_into_f64)(rows, res, inverse, nt)
                return res.reshape(x.shape) if out is None else out
            (core.rotate_inplace_f32 if f32 else core.rotate_inplace_f64)(rows, inverse, nt)
            return x
        return self._apply_general(x, axis, out, num_threads, inverse)

    def _apply_general(
        self,
        x: ArrayLike,
        axis: int,
        out: NDArray[Any] | None,
        num_threads: int | None,
        inverse: bool,
    ) -> NDArray[Any]:
        """:meth:`_apply` for every layout (separate, as :func:`_fwht_general`)."""
        arr = _as_input("x", x)
        _compute_dtype("x", arr.dtype)
        ax = _normalize_axis(axis, arr.ndim)
        if arr.shape[ax] != self.n:
            raise InvalidArgumentError(
                f"x: has length {arr.shape[ax]} along axis {axis}, the rotation {self.n}"
            )
        if out is not None:
            out = _check_out(out, arr.shape, self._dtype)
        f32 = self._dtype.itemsize <= 4
        core = self._core
        into = core.rotate_into_f32 if f32 else core.rotate_into_f64
        inplace = core.rotate_inplace_f32 if f32 else core.rotate_inplace_f64

        def kernel(src: NDArray[Any], dst: NDArray[Any]) -> None:
            into(src, dst, inverse, num_threads_arg(num_threads))

        def inplace_kernel(rows: NDArray[Any]) -> None:
            inplace(rows, inverse, num_threads_arg(num_threads))

        return _rows_transform(arr, ax, out, self._dtype, kernel, inplace_kernel)

    def _apply_gpu(self, x: Any, axis: int, out: Any, inverse: bool) -> Any:
        """The GPU path (CuPy array or CUDA tensor in, the same kind out)."""
        if self._dtype == np.float64:
            raise DTypeError("dtype: float64 rotations have no GPU path (use float32 or float16)")
        return _gpu.hadamard.randomized_hadamard(
            x, seed=self.seed, blocks=self.blocks, group_size=self.group_size, inverse=inverse,
            axis=axis, out=out, out_dtype=self._dtype.name,
        )

    def forward(
        self,
        x: ArrayLike,
        *,
        axis: int = -1,
        out: NDArray[Any] | None = None,
        num_threads: int | None = None,
    ) -> NDArray[Any]:
        """Rotate ``x`` (float16/32/64, length ``n`` along ``axis``); returns
        :attr:`dtype`. ``out`` as in :func:`fwht`. Raises as :func:`fwht` and
        :class:`~ordcore.InvalidArgumentError` when the length is not ``n``."""
        return self._apply(x, axis, out, num_threads, inverse=False)

    def inverse(
        self,
        y: ArrayLike,
        *,
        axis: int = -1,
        out: NDArray[Any] | None = None,
        num_threads: int | None = None,
    ) -> NDArray[Any]:
        """Undo :meth:`forward` (apply the transpose rotation); as :meth:`forward`."""
        return self._apply(y, axis, out, num_threads, inverse=True)

    def matrix(self) -> NDArray[Any]:
        """The dense ``(n, n)`` rotation ``R`` with ``forward(x) == x @ R`` (for tests),
        computed in float64 and returned in :attr:`dtype`; orthogonal."""
        eye = np.eye(self.n, dtype=np.float64)
        return np.asarray(self._core.forward_f64(eye, None), dtype=self._dtype)


def srht_indices(n: int, m: int, *, seed: int) -> NDArray[np.intp]:
    """The ``m`` coordinates (ascending) that :func:`srht` keeps out of ``n``.

    A partial Fisher-Yates shuffle of ``0..n``: step ``t < m`` swaps position ``t`` with
    ``t + floor(u_t * (n - t) / 2**64)``, ``u_t = counter_u64(seed, 0x5352485453414D50, t)``
    (stream "SRHTSAMP"); the first ``m`` positions, sorted. Uniform without replacement up
    to a bias below ``n / 2**64``.
    """
    n = int_arg("n", n, 0)
    m = int_arg("m", m, 0)
    seed = int_arg("seed", seed, 0, UINT64_MAX)
    return np.asarray(_core.hadamard_srht_indices(n, m, seed), dtype=np.intp)


def srht(
    x: ArrayLike,
    m: int,
    *,
    seed: int,
    axis: int = -1,
    num_threads: int | None = None,
) -> NDArray[Any]:
    """Subsampled randomized Hadamard transform (Ailon and Chazelle, "The fast
    Johnson-Lindenstrauss transform", STOC 2006 / SICOMP 2009).

    Projects every length-``n`` vector along ``axis`` to ``m`` dimensions::

        y = sqrt(n / m) * R(x)[S] = (x * s) @ H_n[:, S] / sqrt(m)

    with ``R = RandomizedHadamard(n, seed=seed, blocks=1)`` (signs ``s`` of block 0) and
    ``S = srht_indices(n, m, seed=seed)``: ``m`` coordinates drawn uniformly without
    replacement from the counter-based generator, in ascending order. Every coordinate
    of ``R(x)`` is kept with probability ``m / n``, so ``E ||y||**2 = ||x||**2`` exactly
    (over the sample, for any signs). It is a projection: there is no inverse.

    Parameters
    ----------
    x : array_like, float16/32/64
        ``n = x.shape[axis]`` must be a supported size (pad with :func:`pad_to_supported`).
    m : int
        Output dimension, ``1 <= m <= n``.
    seed : int
        In ``[0, 2**64)``; determines both the signs and the sample.

    Returns
    -------
    ndarray
        ``x``'s shape with ``axis`` of length ``m``, ``x``'s dtype.

    Raises
    ------
    InvalidArgumentError
        ``m > n`` or ``m < 1``, unsupported ``n``, ``axis`` out of range, ``seed`` outside
        ``[0, 2**64)``.
    DTypeError
        Non-float input; ``m``, ``seed`` or ``axis`` not an integer (a bool included).
    """
    arr = _as_input("x", x)
    ax = _normalize_axis(axis, arr.ndim)
    n = arr.shape[ax]
    cdt = _compute_dtype("x", arr.dtype)
    _check_size("x", n)
    m = int_arg("m", m, None, None)
    if not 1 <= m <= n:
        raise InvalidArgumentError(f"m: must be between 1 and the input length n = {n}, got {m}")
    seed = int_arg("seed", seed, 0, UINT64_MAX)
    moved = np.moveaxis(arr, ax, -1)
    src = c_array(moved, cdt).reshape(-1, n)
    fn = _core.hadamard_srht_f32 if cdt == np.float32 else _core.hadamard_srht_f64
    res = np.asarray(fn(src, m, seed, num_threads_arg(num_threads)))
    res = res.reshape(moved.shape[:-1] + (int(m),)).astype(arr.dtype.newbyteorder("="), copy=False)
    return np.ascontiguousarray(np.moveaxis(res, -1, ax))
