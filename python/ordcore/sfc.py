"""Space-filling curves, scan orders of 2-D grids, and point-cloud serialization.

Conventions
-----------
* **Hilbert index** (:func:`hilbert_encode`): exactly the curve of the `hilbertcurve`
  package, ``HilbertCurve(p=nbits, n=D).distances_from_points`` — John Skilling,
  "Programming the Hilbert curve", AIP Conf. Proc. 707, 381 (2004) — for every ``D >= 1``
  and ``nbits`` with ``D * nbits <= 64``. Coordinate 0 supplies the most significant bit
  of each ``D``-bit group of the index.
* **Morton code** (:func:`morton_encode`): bit ``b`` of coordinate ``i`` goes to bit
  ``b * D + i`` (``axis0="lsb"``: coordinate 0 least significant, as libmorton and
  pymorton) or ``b * D + (D - 1 - i)`` (``axis0="msb"``: coordinate 0 most significant,
  as Point Transformer V3 / O-CNN ``xyz2key``).
* Indices and codes are ``uint64`` unless ``dtype=`` asks for another unsigned type
  (``dtype="narrowest"``: the smallest of uint8/16/32/64 that holds ``D * nbits`` bits, as
  hilbertsfc returns). Coordinates may be one ``(N, D)`` array or a tuple of ``D`` separate
  1-D arrays; decoders return ``(N, D)`` or, with ``separate=True``, a tuple of ``D`` arrays.
* 2-D and 3-D run batch kernels compiled for AVX-512, AVX2 and portable code, picked once
  per process (:func:`kernel`); the environment variable ``ORDCORE_SFC_KERNEL`` =
  ``portable``/``avx2``/``avx512`` caps the choice (results are identical on every path).
* The four encode/decode functions also take CuPy arrays and CUDA torch tensors: they then
  run on the GPU (:mod:`ordcore.gpu.sfc`, bit-identical) and return the same kind of array;
  ``dtype``, ``separate`` and separate coordinate arrays are CPU-only there (refused).

Every batch function validates in the same pass that computes (an OR-reduction per chunk),
releases the GIL, and runs on a rayon pool for large inputs (``num_threads=None``: all
cores or ``RAYON_NUM_THREADS``; ``num_threads=1``: the calling thread only).
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, TypeGuard, TypeVar

import numpy as np
import numpy.typing as npt

from ordcore import _core
from ordcore import gpu as _gpu
from ordcore._args import CACHE_LINE as _CACHE_LINE
from ordcore._args import bool_arg as _bool_arg
from ordcore._args import c_array as _c_array
from ordcore._args import empty_aligned as _empty_aligned
from ordcore._args import ensure_fits as _ensure_fits
from ordcore._args import int_arg as _int_arg
from ordcore._args import num_threads_arg as _threads
from ordcore._args import warn_unknown_kernel_cap as _warn_cap
from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore.gpu.sfc import check_width as _check_width

__all__ = [
    "kernel",
    "hilbert_encode",
    "hilbert_decode",
    "morton_encode",
    "morton_decode",
    "scan_order",
    "inverse_permutation",
    "serialize",
    "deserialize",
    "locality",
    "Serialization",
    "Deserialized",
    "Locality",
    "SCAN_KINDS",
]

ScanKind = Literal[
    "raster", "column", "snake", "snake_column", "hilbert", "morton", "spiral", "diagonal"
]
SerializationOrder = Literal["z", "z-trans", "hilbert", "hilbert-trans"]
AxisOrder = Literal["lsb", "msb"]

#: The names accepted by :func:`scan_order`.
SCAN_KINDS: tuple[str, ...] = (
    "raster",
    "column",
    "snake",
    "snake_column",
    "hilbert",
    "morton",
    "spiral",
    "diagonal",
)


def _big_int_list(name: str, value: object, arr: np.ndarray, bits: int = 64,
                  what: str = "") -> np.ndarray:
    """A Python sequence of ints that NumPy made float64 or object (a value beyond int64):
    as uint64 when every value is in the allowed range ``[0, 2**bits)``, else an error
    naming the first row outside it (``what``: the width the range comes from, as the
    core's messages end); ``arr`` unchanged when the values are not all ints."""
    obj = np.asarray(value, dtype=object)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in obj.flat):
        return arr
    for i, v in enumerate(obj.flat):
        if not 0 <= int(v) < 1 << bits:
            where = f"row {i}" if obj.ndim == 1 else "row {} (column {})".format(
                *np.unravel_index(i, obj.shape)
            )
            row = "" if obj.ndim != 2 else "; row {} is [{}]".format(
                i // obj.shape[1], ", ".join(str(int(x)) for x in obj[i // obj.shape[1]])
            )
            raise InvalidArgumentError(
                f"{name}: {where} has value {int(v)}, outside the allowed range "
                f"[0, 2^{bits}) = [0, {(1 << bits) - 1}]{what}{row}"
            )
    return np.array([int(v) for v in obj.flat], dtype=np.uint64).reshape(obj.shape)


def _ready(value: Any, ndim: int) -> TypeGuard[np.ndarray]:
    """Whether ``value`` is already what the core reads as is: a plain ``ndarray`` of rank
    ``ndim``, a native-endian integer dtype (not bool), C-contiguous and aligned (the
    per-call checks below cost microseconds, a tenth of a call on 10**6 small points)."""
    if type(value) is not np.ndarray or value.ndim != ndim:
        return False
    dt, flags = value.dtype, value.flags  # each .flags lookup builds a new object
    return dt.kind in "iu" and dt.isnative and flags.c_contiguous and flags.aligned


def _int_array(name: str, value: npt.ArrayLike, ndim: int, bits: int = 64,
               what: str = "") -> np.ndarray:
    """``value`` as a C-contiguous, native-endian integer array of rank ``ndim``; ``bits``:
    the values' allowed range ``[0, 2**bits)`` where known (``what`` its origin), checked
    here when a Python int is beyond int64 (NumPy then holds the list as objects)."""
    if _ready(value, ndim):
        return value
    if isinstance(value, np.ma.MaskedArray):
        raise InvalidArgumentError(
            f"{name}: a masked array is not accepted (its masked entries would be coded from "
            "the values under the mask); pass a plain array, e.g. .filled(value) or the "
            "unmasked rows"
        )
    try:
        arr = np.asarray(value)
    except ValueError as e:  # a ragged nested list
        raise InvalidArgumentError(f"{name}: not a rectangular array ({e})") from None
    if arr.dtype.kind in "fO" and arr.size and not isinstance(value, np.ndarray):
        arr = _big_int_list(name, value, arr, bits, what)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(value, np.ndarray):
            arr = arr.astype(np.uint64)  # an empty list: no dtype to refuse (rank still checked)
        else:
            raise DTypeError(
                f"{name}: must have an integer dtype (signed or unsigned), got {arr.dtype}"
            )
    if arr.ndim != ndim:
        shape = "(N, D)" if ndim == 2 else "(N,)"
        raise InvalidArgumentError(
            f"{name}: must be a {ndim}-D array of shape {shape}, got shape {arr.shape}"
        )
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return _c_array(arr)


def _axis0(axis0: str) -> bool:
    if axis0 not in ("lsb", "msb"):
        raise InvalidArgumentError(f'axis0: must be "lsb" or "msb", got {axis0!r}')
    return axis0 == "msb"


def kernel() -> str:
    """The sfc compute kernel in use: ``"avx512"``, ``"avx2"`` or ``"portable"``.

    The best the CPU runs, capped by the environment variable ``ORDCORE_SFC_KERNEL`` (read
    once per process; a value other than these three is ignored, with a ``RuntimeWarning``
    at import). Every kernel gives identical results.
    """
    return _core.sfc_kernel()


_warn_cap("ORDCORE_SFC_KERNEL", ("portable", "avx2", "avx512"))


OutDType = npt.DTypeLike | Literal["narrowest"] | None

_R = TypeVar("_R")

_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _out_bits(dtype: OutDType, need: int, what: str) -> int:
    """Bits of the requested unsigned output type (64 for None), checked to hold ``need``."""
    if dtype is None:
        return 64
    if isinstance(dtype, str) and dtype == "narrowest":
        return 8 if need <= 8 else 16 if need <= 16 else 32 if need <= 32 else 64
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise DTypeError(f"dtype: not a NumPy dtype: {dtype!r}") from None
    if dt.kind != "u":
        raise DTypeError(f"dtype: must be an unsigned integer dtype or 'narrowest', got {dt}")
    bits = dt.itemsize * 8
    if bits < need:
        raise InvalidArgumentError(
            f"dtype: {dt} cannot hold {what}; use "
            f"uint{next(b for b in (8, 16, 32, 64) if b >= need)} or wider"
        )
    return bits


def _byte_order(result: _R, dtype: OutDType) -> _R:
    """``result`` (an array or a tuple of them) in ``dtype``'s byte order where that is
    not native (the core writes native integers)."""
    if dtype is None or (isinstance(dtype, str) and dtype == "narrowest"):
        return result
    dt = np.dtype(dtype)  # already checked by _out_bits
    if dt.isnative:
        return result
    if isinstance(result, tuple):
        return tuple(r.astype(dt) for r in result)  # type: ignore[return-value]
    return result.astype(dt)  # type: ignore[attr-defined, no-any-return]


def _coords_in(coords: Any, bits: int = 64,
               what: str = "") -> tuple[np.ndarray | list[np.ndarray], int]:
    """``coords`` as a C-contiguous (N, D) array, or (a tuple given) a list of D contiguous
    1-D arrays of one integer dtype; with D. ``bits``: as for :func:`_int_array`."""
    if isinstance(coords, tuple) and coords and _ready(coords[0], 1):
        c0 = coords[0]
        dt, shape = c0.dtype, c0.shape
        if all(_ready(c, 1) and c.dtype == dt and c.shape == shape for c in coords[1:]):
            return list(coords), len(coords)
    if isinstance(coords, tuple):
        if not coords:
            raise InvalidArgumentError("coords: an empty tuple has no coordinate arrays")
        if any(_gpu.is_device_array(c) for c in coords):
            raise InvalidArgumentError(
                "coords: separate coordinate arrays are not supported on the GPU path; "
                "pass one (N, D) device array"
            )
        cols = [_int_array(f"coords[{i}]", c, 1, bits, what) for i, c in enumerate(coords)]
        n = cols[0].shape[0]
        for i, c in enumerate(cols):
            if c.shape[0] != n:
                raise InvalidArgumentError(
                    f"coords: the separate coordinate arrays differ in length: coords[0] has "
                    f"{n} values, coords[{i}] has {c.shape[0]}"
                )
        common = np.result_type(*cols)
        if common.kind not in "iu":  # uint64 with a signed type: keep int64 semantics out
            for i, c in enumerate(cols):  # a negative value would wrap in uint64: name it
                neg = np.flatnonzero(c < 0) if c.dtype.kind == "i" else np.empty(0, np.intp)
                if len(neg):
                    r = int(neg[0])
                    row = ", ".join(str(int(col[r])) for col in cols)
                    raise InvalidArgumentError(
                        f"coords: row {r} (column {i}) has value {int(c[r])}, outside the "
                        f"allowed range [0, 2^{bits}) = [0, {(1 << bits) - 1}]{what}; row {r} "
                        f"is [{row}]"
                    )
            common = np.dtype(np.uint64)
        cols = [_c_array(c, common) for c in cols]
        return cols, len(cols)
    arr = _int_array("coords", coords, 2, bits, what)
    return arr, arr.shape[1]


def _gpu_refuse(**opts: object) -> None:
    bad = [k for k, v in opts.items() if v]
    if bad:
        raise InvalidArgumentError(
            f"{', '.join(bad)}: not supported on the GPU path (CuPy / CUDA input); "
            "the GPU returns uint64 (N,) codes and (N, D) coordinates"
        )


def _encode(curve: str, coords: Any, nbits: int, msb: bool, dtype: OutDType,
            num_threads: int | None) -> np.ndarray:
    nb = _int_arg("nbits", nbits, None, None)
    c, d = _coords_in(coords, *((nb, f" for nbits = {nb}") if 1 <= nb <= 64 else (64, "")))
    if (isinstance(coords, list) and 2 <= len(coords) <= 3 and d * max(nb, 1) > 64
            and all(np.ndim(v) == 1 for v in coords)):
        # hilbertsfc and pymorton take x, y (z) apart: say why the width fails.
        raise InvalidArgumentError(
            f"coords: a list of {len(coords)} 1-D arrays is read as {len(coords)} rows of "
            f"D = {d} coordinates, and D * nbits = {d} * {nb} exceeds 64 bits; pass "
            "separate coordinate arrays as a tuple, e.g. (x, y)"
        )
    if not 1 <= nb <= 64:  # beyond int64 too: the width error, before the core sees it
        _check_width(d, nb)
    if d in (2, 3):
        if 1 <= nb and d * nb <= 64:
            bits = _out_bits(dtype, d * nb, f"codes of D * nbits = {d} * {nb} = {d * nb} bits")
        else:
            bits = 64  # the core reports the width error
        codes: np.ndarray = _core.sfc_encode(c, nb, curve, msb, bits, _threads(num_threads))
        return codes
    arr = np.stack(c, axis=1) if isinstance(c, list) else c
    if curve == "hilbert":
        out = _core.sfc_hilbert_encode(arr, nb, _threads(num_threads))
    else:
        out = _core.sfc_morton_encode(arr, nb, msb, _threads(num_threads))
    bits = _out_bits(dtype, d * nb, f"codes of D * nbits = {d} * {nb} = {d * nb} bits")
    return out if bits == 64 else out.astype(_UNSIGNED[bits])


def _decode(curve: str, arg: str, codes: Any, nbits: int, ndim: int, msb: bool,
            dtype: OutDType, separate: bool,
            num_threads: int | None) -> np.ndarray | tuple[np.ndarray, ...]:
    nd = _int_arg("ndim", ndim, None, None)  # the bounds below name the real limits
    nb = _int_arg("nbits", nbits, None, None)
    # D * nbits within a code (else the core names the width error, before any dtype).
    fits = 1 <= nd and 1 <= nb and nd * nb <= 64
    arr = _int_array(arg, codes, 1, *((nd * nb, f" for D * nbits = {nd * nb}") if fits
                                      else (64, "")))
    separate = _bool_arg("separate", separate)
    if nd < 1:
        raise InvalidArgumentError(f"ndim: must be at least 1, got {nd}")
    if nd > 64:
        raise InvalidArgumentError(
            f"ndim: at most 64 axes fit a 64-bit code (nbits >= 1 each), got {nd}"
        )
    if not 1 <= nb <= 64:
        _check_width(nd, nb)
    bits = _out_bits(dtype, nb, f"coordinates of nbits = {nb}") if fits else 64
    if nd in (2, 3):
        if not separate or not 1 <= nb <= 64 // nd:  # the core refuses such widths
            out: np.ndarray = _core.sfc_decode(arr, nb, nd, curve, msb, bits,
                                               _threads(num_threads))
            return out
        # Separate arrays, each starting on a cache line (see decode_cols_into in the
        # binding).
        n, per_line = arr.shape[0], _CACHE_LINE // (bits // 8)
        m = max(-(-n // per_line), 1) * per_line  # n = 0 too: each empty array on a line
        if nd * m * bits >= 8 << 26:  # 64 MiB and up: the core's memory rule, named
            _ensure_fits(arg, nd * m * bits // 8)
        buf = _empty_aligned((nd, m), _UNSIGNED[bits])
        _core.sfc_decode(arr, nb, nd, curve, msb, bits, _threads(num_threads), buf)
        return (buf[0, :n], buf[1, :n]) if nd == 2 else (buf[0, :n], buf[1, :n], buf[2, :n])
    if curve == "hilbert":
        g = _core.sfc_hilbert_decode(arr, nb, nd, _threads(num_threads))
    else:
        g = _core.sfc_morton_decode(arr, nb, nd, msb, _threads(num_threads))
    if bits != 64:
        g = g.astype(_UNSIGNED[bits])
    if separate:
        t = np.ascontiguousarray(g.T)
        return tuple(t)
    return g


def hilbert_encode(
    coords: npt.ArrayLike | tuple[npt.ArrayLike, ...],
    nbits: int,
    *,
    dtype: OutDType = None,
    num_threads: int | None = None,
) -> npt.NDArray[np.unsignedinteger]:
    """Hilbert indices of integer points.

    Parameters
    ----------
    coords : array_like, shape (N, D), or a tuple of D array_likes of shape (N,)
        Grid coordinates, each in ``[0, 2**nbits)``, any signed or unsigned integer dtype,
        any strides and byte order. A tuple holds separate coordinate arrays
        (``(x, y)`` or ``(x, y, z)``, as hilbertsfc takes them) of equal length.
    nbits : int
        Bits per coordinate (the curve's order); ``1 <= nbits`` and ``D * nbits <= 64``.
    dtype : unsigned integer dtype or "narrowest", optional
        Output type; ``None`` (default) gives uint64, ``"narrowest"`` the smallest of
        uint8/16/32/64 that holds ``D * nbits`` bits (uint32 for 2 x 16 bits). A
        non-native byte order (``">u4"``) is applied by a converting copy.
    num_threads : int, optional
        Threads to use; ``None`` uses all cores (large inputs only).

    Returns
    -------
    ndarray, shape (N,), uint64 (or ``dtype``)
        The Hilbert index of each point, equal to
        ``hilbertcurve.HilbertCurve(p=nbits, n=D).distances_from_points(coords)``
        (Skilling 2004; coordinate 0 is the most significant bit of each ``D``-bit group).
        hilbertsfc's 2-D ``hilbert_encode_2d(x, y)`` gives the same indices at even
        ``nbits``; at odd ``nbits`` its curve is this one with x and y exchanged
        (``hilbert_encode((y, x), nbits)`` gives its indices). Its 3-D curve is a different
        variant.

    Raises
    ------
    DTypeError
        ``coords`` is not an integer array (bool and float are rejected); ``dtype`` is not
        unsigned.
    InvalidArgumentError
        ``coords`` is not 2-D (or the tuple's arrays not 1-D of one length), ``D < 1``,
        ``nbits < 1``, ``D * nbits > 64``, a value is negative or ``>= 2**nbits`` (the
        message names the first offending row), or ``dtype`` is narrower than
        ``D * nbits`` bits. ``dtype`` or a tuple with GPU input.
    KeyboardInterrupt
        Ctrl-C during a long call (checked every few thousand points).
    """
    if _gpu.is_device_array(coords):
        _gpu_refuse(dtype=dtype is not None)
        return _gpu.sfc.hilbert_encode(coords, nbits)  # type: ignore[no-any-return]
    return _byte_order(_encode("hilbert", coords, nbits, False, dtype, num_threads), dtype)


def hilbert_decode(
    index: npt.ArrayLike,
    nbits: int,
    ndim: int,
    *,
    dtype: OutDType = None,
    separate: bool = False,
    num_threads: int | None = None,
) -> Any:
    """Points of Hilbert indices: the inverse of :func:`hilbert_encode`.

    Parameters
    ----------
    index : array_like, shape (N,), integer dtype
        Hilbert indices in ``[0, 2**(ndim * nbits))``.
    nbits, ndim : int
        Bits per coordinate and number of dimensions ``D`` (``D * nbits <= 64``).
    dtype : unsigned integer dtype or "narrowest", optional
        Coordinate type; ``None`` gives uint64, ``"narrowest"`` the smallest that holds
        ``nbits`` bits. A non-native byte order is applied by a converting copy (with
        ``separate``, the arrays then need not start on a 64-byte boundary).
    separate : bool
        Return a tuple of ``D`` arrays of shape (N,) (as hilbertsfc) instead of one array.
        Each is C-contiguous and writable; for ``ndim`` 2 and 3 each starts on a 64-byte
        boundary (disjoint views of one buffer).

    Returns
    -------
    ndarray, shape (N, ndim), uint64 (or ``dtype``); a tuple of ``ndim`` (N,) arrays with ``separate``
        Equal to ``hilbertcurve.HilbertCurve(p=nbits, n=ndim).points_from_distances``.

    Raises
    ------
    DTypeError, InvalidArgumentError
        As :func:`hilbert_encode`; an index out of range names its row; ``dtype`` narrower
        than ``nbits`` bits. ``dtype`` or ``separate`` with GPU input.
    """
    if _gpu.is_device_array(index):
        _gpu_refuse(dtype=dtype is not None, separate=separate)
        return _gpu.sfc.hilbert_decode(index, nbits, ndim)
    return _byte_order(
        _decode("hilbert", "index", index, nbits, ndim, False, dtype, separate, num_threads),
        dtype,
    )


def morton_encode(
    coords: npt.ArrayLike | tuple[npt.ArrayLike, ...],
    nbits: int,
    *,
    axis0: AxisOrder = "lsb",
    dtype: OutDType = None,
    num_threads: int | None = None,
) -> npt.NDArray[np.unsignedinteger]:
    """Morton (Z-order) codes of integer points, by bit interleaving.

    Parameters
    ----------
    coords : array_like, shape (N, D), or a tuple of D array_likes of shape (N,)
        Coordinates in ``[0, 2**nbits)``, any integer dtype (a tuple: separate arrays).
    nbits : int
        Bits per coordinate; ``1 <= nbits``, ``D * nbits <= 64`` (2-D: 32, 3-D: 21).
    axis0 : {"lsb", "msb"}
        Where coordinate 0 goes inside each ``D``-bit group. ``"lsb"`` (default): bit ``b``
        of coordinate ``i`` lands on bit ``b * D + i`` (libmorton, pymorton).
        ``"msb"``: on bit ``b * D + D - 1 - i`` (Point Transformer V3's ``z`` order).
    dtype : unsigned integer dtype or "narrowest", optional
        As :func:`hilbert_encode`.
    num_threads : int, optional
        Threads to use; ``None`` uses all cores (large inputs only).

    Returns
    -------
    ndarray, shape (N,), uint64 (or ``dtype``)

    Raises
    ------
    DTypeError, InvalidArgumentError
        As :func:`hilbert_encode`.
    """
    if _gpu.is_device_array(coords):
        _gpu_refuse(dtype=dtype is not None)
        return _gpu.sfc.morton_encode(coords, nbits, axis0=axis0)  # type: ignore[no-any-return]
    return _byte_order(
        _encode("morton", coords, nbits, _axis0(axis0), dtype, num_threads), dtype
    )


def morton_decode(
    code: npt.ArrayLike,
    nbits: int,
    ndim: int,
    *,
    axis0: AxisOrder = "lsb",
    dtype: OutDType = None,
    separate: bool = False,
    num_threads: int | None = None,
) -> Any:
    """Coordinates of Morton codes: the inverse of :func:`morton_encode`.

    ``dtype`` and ``separate`` as :func:`hilbert_decode`.

    Returns
    -------
    ndarray, shape (N, ndim), uint64 (or ``dtype``); a tuple of ``ndim`` (N,) arrays with ``separate``

    Raises
    ------
    DTypeError, InvalidArgumentError
        Non-integer codes, bad widths, or a code ``>= 2**(ndim * nbits)`` (row named).
    """
    if _gpu.is_device_array(code):
        _gpu_refuse(dtype=dtype is not None, separate=separate)
        return _gpu.sfc.morton_decode(code, nbits, ndim, axis0=axis0)
    return _byte_order(
        _decode("morton", "code", code, nbits, ndim, _axis0(axis0), dtype, separate,
                num_threads),
        dtype,
    )


def scan_order(height: int, width: int, kind: ScanKind = "hilbert") -> npt.NDArray[np.int64]:
    """A permutation that visits a ``height x width`` grid in a given order.

    ``tokens.reshape(-1, C)[p]`` lists the cells (row-major index ``r * width + c``) in
    visiting order; ``inverse_permutation(p)`` undoes it.

    Kinds (``r`` = row, ``c`` = column, both from 0):

    * ``raster``: row by row, each left to right (``p = arange(H * W)``).
    * ``column``: column by column, each top to bottom.
    * ``snake``: boustrophedon by rows: even rows left to right, odd rows right to left.
    * ``snake_column``: even columns top to bottom, odd columns bottom to top.
    * ``hilbert``: the generalized Hilbert curve "gilbert" (J. Červený, 2019,
      https://github.com/jakubcerveny/gilbert) for any rectangle: it starts at cell (0, 0),
      runs along the longer side first, and makes only 4-neighbour steps except at most
      one diagonal step, which it takes exactly when the longer side is odd and the
      shorter side even and greater than 2 (grid-graph parity forbids a 4-neighbour path
      between its two end corners then). On a ``2**k x 2**k`` grid it is the Hilbert curve
      of :func:`hilbert_encode` with coordinate 0 = column: ``p[i] = r * W + c`` where
      ``(c, r) = hilbert_decode([i], k, 2)[0]``.
    * ``morton``: cells sorted by the Morton code of ``(c, r)`` (column in the low bit:
      right, then down-left, then right: the "Z"); on non-power-of-two grids the codes
      outside the grid are skipped.
    * ``spiral``: clockwise from the top-left cell, outside in (top row left to right,
      right column down, bottom row right to left, left column up, then the inner ring).
    * ``diagonal``: anti-diagonals ``r + c = 0, 1, 2, ...``; even diagonals run upwards
      (row decreasing), odd ones downwards (row increasing): the JPEG zigzag.

    Parameters
    ----------
    height, width : int
        Grid size, each at least 1 (1 x N, N x 1, odd and prime sizes all work).
    kind : str
        One of :data:`SCAN_KINDS`.

    Returns
    -------
    ndarray, shape (height * width,), int64

    Raises
    ------
    InvalidArgumentError
        ``height`` or ``width`` < 1, an unknown ``kind``, or more than 2**40 cells.
    """
    h = _int_arg("height", height)
    w = _int_arg("width", width)
    if not isinstance(kind, str):
        raise DTypeError(f"kind: must be a string, got {type(kind).__name__}")
    return _core.sfc_scan_order(h, w, kind)


def inverse_permutation(p: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The inverse ``q`` of a permutation ``p`` of ``0..n-1``: ``q[p[i]] = i``.

    Parameters
    ----------
    p : array_like, shape (n,), integer dtype

    Returns
    -------
    ndarray, shape (n,), int64

    Raises
    ------
    InvalidArgumentError
        ``p`` is not a permutation (the message names the first bad position).
    """
    return _inverse_permutation(_int_array("p", p, 1), "p")


def _inverse_permutation(arr: np.ndarray, arg: str) -> npt.NDArray[np.int64]:
    """:func:`inverse_permutation` of the integer array ``arr``, errors naming ``arg``."""
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise InvalidArgumentError(f"{arg}: values exceed int64; not a permutation")
    return _core.sfc_inverse_permutation(_c_array(arr, np.int64), arg)


class _SerializationFields(NamedTuple):
    code: npt.NDArray[np.uint64]
    order: npt.NDArray[np.int64]
    inverse: npt.NDArray[np.int64]


class Serialization(_SerializationFields):
    """Result of :func:`serialize`: unpacks as ``code, order, inverse``, with ``depth``.

    Fields
    ------
    code : ndarray, shape (N,), uint64
        ``batch << (3 * depth) | curve code``.
    order : ndarray, shape (N,), int64
        A stable argsort of ``code`` (ties, i.e. points in one voxel, by index).
    inverse : ndarray, shape (N,), int64
        ``inverse[order[i]] = i``.

    Attributes
    ----------
    depth : int
        Bits per axis the codes use (Pointcept's ``serialized_depth``); pass it to
        :func:`deserialize`.
    curve : str
        The curve the codes follow (``serialize``'s ``order`` argument: ``"z"``,
        ``"z-trans"``, ``"hilbert"`` or ``"hilbert-trans"``); :func:`deserialize` of the
        Serialization itself decodes with it.
    """

    depth: int
    curve: str

    def __new__(
        cls,
        code: npt.NDArray[np.uint64],
        order: npt.NDArray[np.int64],
        inverse: npt.NDArray[np.int64],
        depth: int,
        curve: str = "z",
    ) -> Serialization:
        self = super().__new__(cls, code, order, inverse)
        self.depth = depth
        self.curve = curve
        return self

    def __repr__(self) -> str:
        return (
            f"Serialization(code={self.code!r}, order={self.order!r}, "
            f"inverse={self.inverse!r}, depth={self.depth}, curve={self.curve!r})"
        )

    def __getnewargs__(self) -> tuple[Any, ...]:
        # pickle and copy rebuild it through __new__, which needs depth and curve too.
        return (self.code, self.order, self.inverse, self.depth, self.curve)

    def _replace(self, **fields: Any) -> Serialization:
        """A copy with some fields (or ``depth`` / ``curve``) replaced, as a NamedTuple's."""
        now = dict(zip(self._fields, self), depth=self.depth, curve=self.curve)
        unknown = sorted(set(fields) - set(now))
        if unknown:
            raise ValueError(f"Got unexpected field names: {unknown!r}")
        return Serialization(**{**now, **fields})


class Deserialized(NamedTuple):
    """Result of :func:`deserialize` (unpacks as ``grid_coord, batch``)."""

    #: ``(N, 3)`` uint64 grid coordinates ``(x, y, z)``.
    grid_coord: npt.NDArray[np.uint64]
    #: ``(N,)`` uint64 batch ids (the bits above ``3 * depth``).
    batch: npt.NDArray[np.uint64]


_SER_ORDERS = ("z", "z-trans", "hilbert", "hilbert-trans")


def _ser_order(order: str) -> str:
    if order not in _SER_ORDERS:
        raise InvalidArgumentError(
            f"order: must be one of {', '.join(map(repr, _SER_ORDERS))}, got {order!r}"
        )
    return order


Origin = Literal["global", "per_cloud"]


def serialize(
    points: npt.ArrayLike,
    grid_size: float,
    order: SerializationOrder = "z",
    batch: npt.ArrayLike | None = None,
    depth: int | None = None,
    *,
    origin: Origin = "global",
    num_threads: int | None = None,
) -> Serialization:
    """Serialize a (batched) point cloud exactly as Point Transformer V3 does.

    With the defaults the codes equal Pointcept's ``Point.serialization``
    (``pointcept/models/utils/structure.py``, PTv3: Wu et al., CVPR 2024,
    arXiv:2312.10035) bit for bit:

    1. The points are cast to float32 (float64 input too, as Pointcept's data pipeline
       does) and the grid coordinates are
       ``g = trunc((p - p.min(0)) / grid_size)`` in float32, with the minimum taken over
       **all** points of the batch and ``grid_size`` rounded to float32 (PTv3's
       ``torch.div(coord - coord.min(0)[0], grid_size, rounding_mode="trunc")`` on the CPU).
    2. ``depth=None`` uses Pointcept's adaptive depth ``int(g.max() + 1).bit_length()``.
       (The standalone PointTransformerV3 ``model.py`` uses ``int(g.max()).bit_length()``,
       one bit less when ``g.max() + 1`` is a power of two; pass ``depth`` to match it.)
    3. A code per point, with the batch id in the high bits,
       ``code = batch << (3 * depth) | curve code``:

       * ``"z"``: Morton code of ``(x, y, z)``, ``x`` most significant in each 3-bit group
         (``morton_encode(g, depth, axis0="msb")``, O-CNN ``xyz2key``);
       * ``"z-trans"``: the same of ``(y, x, z)``;
       * ``"hilbert"``: ``hilbert_encode(g, depth)`` (Skilling's curve, PTv3's ``hilbert``);
       * ``"hilbert-trans"``: the same of ``(y, x, z)``.
    4. ``order`` is a *stable* argsort of the codes (points in one voxel share a code and
       keep their index order; ``torch.argsort`` is not stable, so PTv3's order of tied
       points is unspecified), and ``inverse`` its inverse permutation.

    Departures from PTv3, on request: ``origin="per_cloud"`` takes the minimum over the
    points of each batch id separately; an explicit ``depth`` fixes the bits per axis
    (Hilbert codes then differ from the adaptive ones unless the depths agree); ``depth``
    may go up to 21 (PTv3 stops at 16).

    Parameters
    ----------
    points : array_like, shape (N, 3), real dtype
        Point coordinates (any unit; ``grid_size`` is in the same unit).
    grid_size : float
        Voxel edge length, finite and > 0 (also after rounding to float32).
    order : {"z", "z-trans", "hilbert", "hilbert-trans"}
    batch : array_like, shape (N,), integer dtype, optional
        Batch id of each point (need not be sorted), ``0 <= batch < 2**(64 - 3 * depth)``.
    depth : int, optional
        Bits per axis, ``1..21``; every grid coordinate must be ``< 2**depth``. ``None``
        (default): the adaptive depth above.
    origin : {"global", "per_cloud"}
        Grid origin: the minimum over all points (default, PTv3) or per batch id.
    num_threads : int, optional
        Threads to use; ``None`` uses all cores (large inputs only).

    Returns
    -------
    Serialization
        ``(code, order, inverse)``: uint64, int64, int64, each of shape (N,), and the
        attribute ``depth`` (int) the codes use. An empty cloud gets ``depth = 1`` unless
        given.

    Raises
    ------
    DTypeError
        Non-real points, non-integer batch, a ``grid_size`` that is not a number (a bool
        or string included).
    InvalidArgumentError
        Wrong shapes, NaN or inf in ``points`` (row named, also after the float32 cast),
        ``grid_size <= 0``, not finite or beyond float64, ``depth`` outside ``1..21``, a
        grid coordinate ``>= 2**depth`` (row named); for the adaptive depth, one of
        ``2**21 - 1`` or more, which would make the depth 22 (row named; ``depth=21`` holds
        a coordinate of exactly ``2**21 - 1``); a negative or too large batch id (row
        named), an unknown ``origin``.
    MemoryError
        The call would need more memory than the machine has (about 60 bytes a point).
    """
    arr = np.asarray(points)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise DTypeError(f"points: must have a real (float or integer) dtype, got {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise InvalidArgumentError(f"points: must have shape (N, 3), got {arr.shape}")
    with np.errstate(over="ignore"):  # values beyond float32 become inf: reported by row
        arr = _c_array(arr, np.float32)
    if isinstance(grid_size, (bool, np.bool_, str, bytes)):
        raise DTypeError(f"grid_size: must be a number, got {type(grid_size).__name__}")
    try:
        gs = float(grid_size)
    except OverflowError:
        raise InvalidArgumentError("grid_size: is too large for a float") from None
    except (TypeError, ValueError):
        raise DTypeError(
            f"grid_size: must be a number, got {type(grid_size).__name__}"
        ) from None
    if origin not in ("global", "per_cloud"):
        raise InvalidArgumentError(f'origin: must be "global" or "per_cloud", got {origin!r}')
    b: np.ndarray | None = None
    if batch is not None:
        b = _int_array("batch", batch, 1)
        if b.shape[0] != arr.shape[0]:
            raise InvalidArgumentError(
                f"batch: has {b.shape[0]} entries but points has {arr.shape[0]} rows"
            )
        if b.dtype.kind == "i" and b.size:
            neg = np.flatnonzero(b < 0)
            if neg.size:
                raise InvalidArgumentError(
                    f"batch: row {int(neg[0])} has negative batch id {int(b[neg[0]])}"
                )
        b = _c_array(b, np.uint64)
    d = None if depth is None else _int_arg("depth", depth)
    code, order_, inverse, used = _core.sfc_serialize(
        arr, b, gs, d, _ser_order(order), origin, _threads(num_threads)
    )
    return Serialization(code, order_, inverse, used, order)


def deserialize(
    code: npt.ArrayLike | Serialization,
    order: SerializationOrder | None = None,
    depth: int | None = None,
) -> Deserialized:
    """Split serialization codes into grid coordinates and batch ids.

    The inverse of the code computation of :func:`serialize`: ``batch = code >> (3 * depth)``
    and the low ``3 * depth`` bits decode to ``(x, y, z)`` (for the ``-trans`` orders the
    swap of ``x`` and ``y`` is undone, so the coordinates are always ``(x, y, z)``).
    Always returns exactly two arrays (a NamedTuple ``(grid_coord, batch)``).

    Parameters
    ----------
    code : array_like, shape (N,), integer dtype, or Serialization
        Codes, or the result of :func:`serialize` itself (its ``code``, ``depth`` and
        ``curve``).
    order : {"z", "z-trans", "hilbert", "hilbert-trans"}, optional
        The curve the codes follow. With a Serialization it defaults to (and must equal) its
        ``curve``; with a code array it defaults to ``"z"``.
    depth : int, optional
        Bits per axis, ``1..21``: the ``depth`` attribute of the :class:`Serialization`.
        Required when ``code`` is an array; when ``code`` is a Serialization it defaults
        to (and must equal) its depth.

    Returns
    -------
    Deserialized
        ``grid_coord`` (N, 3) uint64 and ``batch`` (N,) uint64.

    Raises
    ------
    DTypeError, InvalidArgumentError
        Non-integer codes, negative codes, an unknown order, an order other than the
        Serialization's curve, ``depth`` missing, outside ``1..21`` or different from the
        Serialization's.
    """
    if isinstance(code, Serialization):
        if order is not None and order != code.curve:
            _ser_order(order)
            raise InvalidArgumentError(
                f"order: {order!r} differs from the curve {code.curve!r} the codes were made with"
            )
        order = code.curve  # type: ignore[assignment]
    o = _ser_order("z" if order is None else order)
    if isinstance(code, Serialization):
        if depth is not None and _int_arg("depth", depth) != code.depth:
            raise InvalidArgumentError(
                f"depth: {depth} differs from the depth {code.depth} the codes were made with"
            )
        depth = code.depth
        code = code.code
    if depth is None:
        raise InvalidArgumentError(
            "depth: required with a code array (pass the depth attribute of serialize's "
            "result, or the Serialization itself)"
        )
    d = _int_arg("depth", depth)
    if not 1 <= d <= 21:
        raise InvalidArgumentError(f"depth: must be between 1 and 21, got {d}")
    arr = _int_array("code", code, 1)
    if arr.dtype.kind == "i" and arr.size:
        neg = np.flatnonzero(arr < 0)
        if neg.size:
            raise InvalidArgumentError(f"code: row {int(neg[0])} is negative")
    c = arr.astype(np.uint64, copy=False)
    shift = np.uint64(3 * d)
    batch = c >> shift
    low = c & np.uint64((1 << (3 * d)) - 1)
    if o.startswith("z"):
        g = morton_decode(low, d, 3, axis0="msb")
    else:
        g = hilbert_decode(low, d, 3)
    if o.endswith("-trans"):
        g = np.ascontiguousarray(g[:, [1, 0, 2]])
    return Deserialized(g, batch)


class Locality(NamedTuple):
    """Step statistics of a scan order (see :func:`locality`)."""

    #: Mean Euclidean length of the ``n - 1`` steps (0.0 for a single cell).
    mean_step: float
    #: Longest Euclidean step.
    max_step: float
    #: Steps that are not a move to a 4-neighbour (Manhattan distance != 1).
    non_neighbor_steps: int
    #: Number of steps, ``height * width - 1``.
    steps: int


def locality(order: npt.ArrayLike, height: int, width: int) -> Locality:
    """Statistics of the path a scan order takes through a ``height x width`` grid.

    Parameters
    ----------
    order : array_like, shape (height * width,), integer dtype
        A permutation of the row-major cell indices, e.g. from :func:`scan_order`.
    height, width : int

    Returns
    -------
    Locality
        ``(mean_step, max_step, non_neighbor_steps, steps)``; distances in cell units.

    Raises
    ------
    InvalidArgumentError
        Sizes < 1, or ``order`` is not a permutation of ``0..height*width-1``.
    """
    h = _int_arg("height", height)
    w = _int_arg("width", width)
    if h < 1 or w < 1:
        raise InvalidArgumentError(f"height, width: must be at least 1, got {h} x {w}")
    p = _int_array("order", order, 1)
    if p.shape[0] != h * w:
        raise InvalidArgumentError(
            f"order: has {p.shape[0]} entries, expected height * width = {h * w}"
        )
    _inverse_permutation(p, "order")  # validates it is a permutation
    p = p.astype(np.int64, copy=False)
    r, c = np.divmod(p, w)
    dr = np.diff(r)
    dc = np.diff(c)
    if dr.size == 0:
        return Locality(0.0, 0.0, 0, 0)
    dist = np.hypot(dr, dc)
    non = int(np.count_nonzero(np.abs(dr) + np.abs(dc) != 1))
    return Locality(float(dist.mean()), float(dist.max()), non, int(dr.size))
