"""GPU paths of :mod:`ordcore.sfc`: Hilbert indexes and Morton codes of CUDA arrays.

Bit-identical to the CPU: Hilbert indexes are exactly
``hilbertcurve.HilbertCurve(p=nbits, n=D).distances_from_points`` (Skilling's transpose
algorithm, coordinate 0 the most significant bit of each D-bit group); Morton codes
interleave bits with coordinate 0 in the least significant bit of each group (``axis0="lsb"``) or the most
significant one (``axis0="msb"``), as :mod:`ordcore.sfc`. ``D * nbits <= 64``; indexes are uint64.

Inputs are CuPy arrays or CUDA torch tensors, results come back in the same kind on the
same device. Out-of-range values are detected in the same kernel pass; reporting them
reads one 8-byte flag back from the device (which waits for the kernel).
"""

from __future__ import annotations

import operator
from typing import Any, NoReturn

import numpy as np

from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore.gpu import _kernels
from ordcore.gpu._runtime import enter, get_kernel, grid_for, launch

__all__ = ["hilbert_encode", "hilbert_decode", "morton_encode", "morton_decode", "check_width"]

_BLOCK = 256
_NO_ROW = 0xFFFFFFFFFFFFFFFF


def check_width(ndim: int, nbits: int) -> None:
    """``1 <= D``, ``1 <= nbits`` and ``D * nbits <= 64``, as the CPU checks them (the CPU
    path calls this too for an ``nbits`` the core cannot take: beyond int64)."""
    if ndim < 1:
        raise InvalidArgumentError("coords: need at least one dimension (D >= 1), got D = 0")
    if nbits < 1:
        raise InvalidArgumentError(f"nbits: must be at least 1, got {nbits}")
    if ndim * nbits > 64:
        fits = (f"D = {ndim} axes exceed it even at nbits = 1" if ndim > 64
                else f"with D = {ndim}, nbits can be at most {64 // ndim}")
        raise InvalidArgumentError(
            f"nbits: D * nbits = {ndim} * {nbits} = {ndim * nbits} exceeds the 64-bit limit "
            f"of a uint64 code ({fits})"
        )


def _coords(cp: Any, a: Any) -> tuple[Any, str]:
    if a.dtype.kind not in "iu":
        raise DTypeError(f"coords: must have an integer dtype (signed or unsigned), got {a.dtype}")
    name = a.dtype.name
    if name not in _kernels.SFC_COORD_TYPES:  # 8/16-bit: widen on the device
        a = a.astype(cp.int32 if a.dtype.kind == "i" else cp.uint32)
        name = a.dtype.name
    return cp.ascontiguousarray(a), _kernels.SFC_COORD_TYPES[name]


def _codes(cp: Any, a: Any, arg: str) -> Any:
    if a.dtype.kind not in "iu" or a.dtype == cp.bool_:
        raise DTypeError(f"{arg}: must have an integer dtype (signed or unsigned), got {a.dtype}")
    if a.ndim != 1:
        raise InvalidArgumentError(f"{arg}: must be 1-D (N,), got shape {a.shape}")
    # int64 with negative values become huge uint64 and fail the range check
    return cp.ascontiguousarray(a.astype(cp.uint64, copy=False))


def _ds(d: int) -> int:
    return d if d in (2, 3) else 0


def _axis0(axis0: str) -> bool:
    if axis0 not in ("lsb", "msb"):
        raise InvalidArgumentError(f'axis0: must be "lsb" or "msb", got {axis0!r}')
    return axis0 == "msb"


def _raise_bad(what: str, arg: str, row: int, values: Any, limit: str) -> NoReturn:
    raise InvalidArgumentError(f"{arg}: row {row} has {what} {values} outside {limit}")


def _int(name: str, v: object) -> int:
    if isinstance(v, (bool, np.bool_)):
        raise DTypeError(f"{name}: must be an integer, got a bool")
    try:
        return operator.index(v)  # type: ignore[arg-type]
    except TypeError:
        raise DTypeError(f"{name}: must be an integer, got {type(v).__name__}") from None


def _launch(cp: Any, kernel: str, src: Any, ndim: int, nbits: int, msb_first: bool | None, out: Any) -> int | None:
    """Run ``kernel`` over the ``n = len(src) > 0`` rows into ``out``; the first row the kernel
    flagged as out of range, or None."""
    n = int(src.shape[0])
    bad = cp.full(1, _NO_ROW, dtype=cp.uint64)
    args: tuple[Any, ...] = (src, np.int64(n), np.int32(ndim), np.int32(nbits))
    if msb_first is not None:
        args += (np.int32(msb_first),)
    args += (out, bad)
    launch(get_kernel("sfc", kernel), (grid_for(n, _BLOCK),), (_BLOCK,), args)
    row = int(bad.get()[0])
    return None if row == _NO_ROW else row


def _encode(kind: str, coords: Any, nbits: int, msb_first: bool | None) -> Any:
    nbits = _int("nbits", nbits)
    bnd = enter(coords)
    cp = bnd.cp
    with bnd.active():
        a = bnd.to_cupy(coords)
        if a.ndim != 2:
            raise InvalidArgumentError(f"coords: must be 2-D (N, D), got shape {a.shape}")
        n, d = int(a.shape[0]), int(a.shape[1])
        check_width(d, nbits)
        a, c = _coords(cp, a)
        out = cp.empty(n, dtype=cp.uint64)
        if n == 0:
            return bnd.back(out)
        row = _launch(cp, f"{kind}_encode<{c}, {_ds(d)}>", a, d, nbits, msb_first, out)
        if row is not None:
            _raise_bad("coordinates", "coords", row, a[row].get().tolist(), f"[0, 2^{nbits}) (nbits = {nbits})")
        return bnd.back(out)


def _decode(kind: str, codes: Any, nbits: int, ndim: int, msb_first: bool | None, arg: str) -> Any:
    nbits, ndim = _int("nbits", nbits), _int("ndim", ndim)
    if ndim < 1:
        raise InvalidArgumentError(f"ndim: must be at least 1, got {ndim}")
    bnd = enter(codes)
    cp = bnd.cp
    with bnd.active():
        check_width(ndim, nbits)
        h = _codes(cp, bnd.to_cupy(codes), arg)
        n = int(h.shape[0])
        out = cp.empty((n, ndim), dtype=cp.uint64)
        if n == 0:
            return bnd.back(out)
        row = _launch(cp, f"{kind}_decode<{_ds(ndim)}>", h, ndim, nbits, msb_first, out)
        if row is not None:
            total = ndim * nbits
            _raise_bad("index", arg, row, int(h[row : row + 1].get()[0]), f"[0, 2^{total}) (D * nbits = {total})")
        return bnd.back(out)


def hilbert_encode(coords: Any, nbits: int) -> Any:
    """Hilbert indexes (uint64, shape (N,)) of integer coordinates (N, D) on the GPU.

    Matches ``hilbertcurve.HilbertCurve(p=nbits, n=D).distances_from_points`` bit for bit.

    Raises
    ------
    InvalidArgumentError
        ``D * nbits > 64``, ``nbits < 1``, or a coordinate outside ``[0, 2^nbits)``
        (naming the first such row).
    DTypeError
        non-integer coordinates.
    GpuError
        no CuPy, or the kernel failed.
    """
    return _encode("hilbert", coords, nbits, None)


def hilbert_decode(index: Any, nbits: int, ndim: int) -> Any:
    """Coordinates (uint64, shape (N, ndim)) of Hilbert indexes (N,) on the GPU; the
    inverse of :func:`hilbert_encode`. Indexes ``>= 2^(ndim * nbits)`` raise
    InvalidArgumentError naming the row."""
    return _decode("hilbert", index, nbits, ndim, None, "index")


def morton_encode(coords: Any, nbits: int, *, axis0: str = "lsb") -> Any:
    """Morton codes (uint64, (N,)) of integer coordinates (N, D) on the GPU: bit ``b`` of
    coordinate ``i`` goes to bit ``b * D + i`` (``axis0="lsb"``) or ``b * D + D - 1 - i``
    (``axis0="msb"``). Same errors as :func:`hilbert_encode`."""
    return _encode("morton", coords, nbits, _axis0(axis0))


def morton_decode(code: Any, nbits: int, ndim: int, *, axis0: str = "lsb") -> Any:
    """Coordinates (uint64, (N, ndim)) of Morton codes (N,) on the GPU; the inverse of
    :func:`morton_encode`."""
    return _decode("morton", code, nbits, ndim, _axis0(axis0), "code")
