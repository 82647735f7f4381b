"""Checks of arguments (scalars, vector matrices, id vectors) shared by the public modules."""

from __future__ import annotations

import ctypes
import math
import operator
import os
import sys
import warnings
from typing import Any

import numpy as np
import numpy.typing as npt

from ordcore.errors import DTypeError, InvalidArgumentError, UnknownIdError

__all__ = [
    "INT64_MIN",
    "INT64_MAX",
    "UINT64_MAX",
    "int_arg",
    "size_arg",
    "num_threads_arg",
    "float_matrix_arg",
    "id_array_arg",
    "lookup_ids_arg",
    "filter_arg",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


def _show(v: int) -> str:
    text = str(v)
    return text if len(text) <= 24 else f"{text[:8]}...{text[-4:]} ({len(text)} digits)"


def int_arg(
    name: str, value: object, lo: int | None = INT64_MIN, hi: int | None = INT64_MAX
) -> int:
    """``value`` as a Python int in ``[lo, hi]`` (``None``: unbounded on that side).

    The default range is int64, what every integer parameter of the Rust core accepts at
    most; a tighter range is the caller's (``lo=1`` for sizes, ``lo=0, hi=UINT64_MAX`` for
    ``usize`` and seeds). Every public function routes its integer arguments through here,
    so a huge Python int becomes an error naming the argument, never a bare
    ``OverflowError`` from the binding.

    Raises
    ------
    DTypeError
        ``value`` is a bool or not an integer (``operator.index`` fails).
    InvalidArgumentError
        ``value`` is outside ``[lo, hi]``; the message names ``name`` and the bound.
    """
    if type(value) is int and (lo is None or value >= lo) and (hi is None or value <= hi):
        return value  # the common case, without the checks below (a call's fixed cost)
    if isinstance(value, (bool, np.bool_)):
        raise DTypeError(f"{name}: must be an integer, got a bool")
    try:
        v = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise DTypeError(f"{name}: must be an integer, got {type(value).__name__}") from None
    if lo is not None and v < lo:
        raise InvalidArgumentError(f"{name}: must be at least {_show(lo)}, got {_show(v)}")
    if hi is not None and v > hi:
        bound = {INT64_MAX: "2**63 - 1", UINT64_MAX: "2**64 - 1"}.get(hi, _show(hi))
        raise InvalidArgumentError(f"{name}: must be at most {bound}, got {_show(v)}")
    return v


def bool_arg(name: str, value: object) -> bool:
    """``value`` as a Python bool: ``True``, ``False`` or a NumPy bool; anything else (a
    string such as ``"no"`` is truthy) raises :class:`InvalidArgumentError` naming ``name``."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name}: must be a bool, got {type(value).__name__}")
    return bool(value)


def size_arg(name: str, value: object, lo: int = 0) -> int:
    """A count or size: an int in ``[lo, 2**63 - 1]``."""
    return int_arg(name, value, lo, INT64_MAX)


def max_threads() -> int:
    """The largest ``num_threads`` accepted: 8 threads per CPU this process may use, at least
    64 (a thread pool of that size is built for the call, so absurd values are refused
    instead of starting millions of threads)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(64, 8 * cpus)


def num_threads_arg(num_threads: object) -> int | None:
    """``None`` (all cores) or a thread count in ``[1, max_threads()]``."""
    if num_threads is None:
        return None
    n = int_arg("num_threads", num_threads, None, None)  # the bounds below name the limits
    if n < 1:
        raise InvalidArgumentError(f"num_threads: must be at least 1 (or None), got {_show(n)}")
    if n <= 64:  # never above max_threads(), which reads the CPU affinity
        return n
    limit = max_threads()
    if n > limit:
        raise InvalidArgumentError(
            f"num_threads: must be at most {limit} (8 per CPU this process may use, and "
            f"at least 64), got {_show(n)}"
        )
    return n


def ensure_fits(name: str, nbytes: int) -> None:
    """Raise ``MemoryError`` naming ``name`` unless ``nbytes`` fit in what this process can
    still allocate (physical memory, capped by the address space left under ``RLIMIT_AS``;
    the same rule as the Rust core's ``memory::ensure_fits``)."""
    from ordcore import _core

    usable = _core.usable_bytes()
    if nbytes > usable:
        raise MemoryError(
            f"{name}: needs about {nbytes / 2**30:.1f} GiB ({nbytes} bytes), more than the "
            f"{usable / 2**30:.1f} GiB this process can use"
        )


def warn_unknown_kernel_cap(variable: str, kernels: tuple[str, ...]) -> None:
    """Warn (``RuntimeWarning``, at import of the caller's module, pointing at the user's
    ``import`` line) when the environment variable ``variable`` that caps a SIMD kernel
    choice holds none of ``kernels``; the core then ignores it and uses the fastest kernel
    the CPU supports."""
    cap = os.environ.get(variable, "")
    if cap not in ("", *kernels):
        warnings.warn(
            f"{variable}={cap!r} is not one of {', '.join(kernels)}; it is ignored and the "
            "fastest kernel the CPU supports is used",
            RuntimeWarning,
            stacklevel=_first_frame_outside_ordcore(),
        )


def _first_frame_outside_ordcore() -> int:
    """The ``stacklevel`` that makes a warning issued by this module's caller point at the
    first frame outside the ``ordcore`` package (the user's ``import`` line), counted as
    ``warnings.warn`` counts: the import machinery's own frames are skipped."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = sys._getframe(1)  # the function that calls warnings.warn
    level = 1
    while frame.f_back is not None:
        frame = frame.f_back
        name = frame.f_code.co_filename
        if "importlib" in name and "_bootstrap" in name:
            continue
        level += 1
        if not os.path.abspath(name).startswith(package):
            break
    return level


_EXACT_INT = (np.int8, np.uint8, np.int16, np.uint16)


def float_matrix_arg(
    x: Any, arg: str, dim: int | None = None, dim_of: str = "the index dimension"
) -> npt.NDArray[np.float32]:
    """`x` as a C-contiguous, aligned, native float32 (n, dim) array (a copy when needed);
    ``dim_of`` names what ``dim`` is in the mismatch message."""
    a = np.asarray(x)
    if a.dtype == np.bool_ or a.dtype.kind not in "fiu":
        raise DTypeError(
            f"{arg}: dtype {a.dtype} is not a real number type (use float16/32/64 or a "
            "small integer type)"
        )
    if a.ndim != 2:
        raise InvalidArgumentError(f"{arg}: must be a 2-D array (n, dim), got shape {a.shape}")
    if a.dtype.kind in "iu" and a.dtype.type not in _EXACT_INT:
        if a.size and int(np.max(np.abs(a.astype(np.float64)))) > 2**24:
            raise DTypeError(
                f"{arg}: dtype {a.dtype} has values above 2**24 that float32 cannot hold exactly"
            )
    if dim is not None and a.shape[1] != dim:
        raise InvalidArgumentError(
            f"{arg}: dimension {a.shape[1]} does not match {dim_of} {dim}"
        )
    if a.dtype.kind == "f" and a.dtype.itemsize > 4 and a.size:
        big = np.isfinite(a) & (np.abs(a) > np.finfo(np.float32).max)
        if big.any():
            r, c = (int(v) for v in np.argwhere(big)[0])
            raise InvalidArgumentError(
                f"{arg}: row {r} holds {float(a[r, c]):g} at column {c}, outside the float32 "
                "range (|x| <= 3.4e38)"
            )
    # A C-contiguous, aligned, native-endian float32 array (copied only when needed).
    return np.require(a, dtype=np.float32, requirements=["C", "A"])


CACHE_LINE = 64


def empty_aligned(shape: int | tuple[int, ...], dtype: npt.DTypeLike) -> npt.NDArray[Any]:
    """``np.empty(shape, dtype)`` starting on a 64-byte boundary (a cache line), a view of a
    uint8 buffer. NumPy's large arrays start 16 bytes past one, so every other 32-byte
    vector (every 64-byte one) of a kernel's stores spans two lines: on AMD Zen 3 (AVX2, 1
    thread) an aligned output makes ``fwht(x)`` 7-27% faster (float32 n = 4096 / 32768,
    float64 n = 1024 / 4096), and on an AVX-512 Xeon decoding 10**6 small Morton codes into
    separate arrays 25-30% faster."""
    if isinstance(shape, int):
        shape = (shape,)
    if any(s < 0 for s in shape):  # reshape would read -1 as "infer this dimension"
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    dt = np.dtype(dtype)
    if dt.hasobject:
        raise TypeError(f"dtype: an aligned view of raw bytes cannot hold objects ({dt})")
    nbytes = math.prod(shape) * dt.itemsize  # Python ints (np.prod costs microseconds)
    buf = np.empty(nbytes + CACHE_LINE, dtype=np.uint8)
    # The address by ctypes: 0.7 against 2.6 us by ``__array_interface__`` (part of every
    # decode call's fixed cost).
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))  # type: ignore[arg-type]
    off = -addr % CACHE_LINE
    # Sliced in two steps: NumPy starts an empty slice at its base's start, not at ``off``.
    return buf[off : off + max(nbytes, 1)][:nbytes].view(dt).reshape(shape)


def c_array(a: Any, dtype: npt.DTypeLike | None = None) -> npt.NDArray[Any]:
    """``np.ascontiguousarray(a, dtype)``, also copied when its start is not a multiple of
    its element size: NumPy calls such a view (a buffer sliced at a byte offset)
    C-contiguous, but the compiled layer cannot read it in place."""
    arr = np.ascontiguousarray(a, dtype=dtype)
    return arr if arr.flags.aligned else arr.copy()


def id_array_arg(ids: Any, n: int | None, arg: str = "ids") -> npt.NDArray[np.int64]:
    """``ids`` as a C-contiguous int64 vector of non-negative ids (a scalar becomes one id);
    ``n``, when given, is the number of rows of ``X`` they label."""
    a = np.asarray(ids)
    if a.ndim == 0:
        a = a.reshape(1)
    if a.ndim != 1:
        raise InvalidArgumentError(f"{arg}: must be 1-D, got shape {a.shape}")
    if a.size and a.dtype.kind not in "iu":
        raise DTypeError(f"{arg}: must be integers, got dtype {a.dtype}")
    if a.dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
        raise InvalidArgumentError(f"{arg}: values must fit in int64")
    if n is not None and a.shape[0] != n:
        raise InvalidArgumentError(f"{arg}: has {a.shape[0]} entries but X has {n} rows")
    if a.dtype.kind == "i" and a.size and int(a.min()) < 0:
        row = int(np.argmax(a < 0))
        raise InvalidArgumentError(
            f"{arg}: entry {row} is {int(a[row])}; ids must be non-negative "
            "(-1 marks padding in search results)"
        )
    return c_array(a, np.int64)


def lookup_ids_arg(ids: Any, arg: str) -> npt.NDArray[np.int64]:
    """Ids to look up (``get``, a filter's allow-list) as a 1-D int64 array (integer dtypes
    only; an empty sequence of any dtype is fine). Negative ids are left for the lookup to
    report as unknown; an id beyond int64, which no index can hold, is an
    :class:`UnknownIdError` here."""
    a = np.asarray(ids)
    if a.ndim != 1:
        raise InvalidArgumentError(f"{arg}: must be a 1-D array of ids, got shape {a.shape}")
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if a.dtype == np.bool_ or a.dtype.kind not in "iu":
        raise DTypeError(f"{arg}: ids must be integers, got dtype {a.dtype}")
    if a.dtype.kind == "u" and a.dtype.itemsize == 8:
        big = a > np.iinfo(np.int64).max
        if big.any():
            raise UnknownIdError(
                f"{arg}: id {int(a[big][0])} is not in the index (ids are int64, at most "
                "2**63 - 1)"
            )
    return c_array(a, np.int64)


def filter_arg(
    filter: Any,
) -> tuple[npt.NDArray[np.int64] | None, npt.NDArray[np.bool_] | None]:
    """A search ``filter`` as ``(allow_list, None)`` (integer ids, see
    :func:`lookup_ids_arg`; 8-bit integer arrays are refused as ambiguous) or
    ``(None, bitmap)`` (a 1-D bool array indexed by id value)."""
    f = np.asarray(filter)
    if f.ndim != 1:
        raise InvalidArgumentError(
            f"filter: must be a 1-D allow-list of ids or a 1-D bool bitmap, got shape {f.shape}"
        )
    if f.dtype == np.bool_:
        return None, c_array(f)
    if f.dtype.kind in "iu" and f.dtype.itemsize == 1:
        # A 0/1 mask read as ids would silently allow only ids 0 and 1.
        raise DTypeError(
            f"filter: an {f.dtype} array is ambiguous (a 0/1 mask or ids?): pass a bitmap as "
            "a bool array (filter.astype(bool)), or ids as int32/int64"
        )
    return lookup_ids_arg(f, "filter"), None
