"""Reading the file formats the command line accepts (vectors, lengths)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ordcore.errors import InvalidArgumentError

__all__ = ["read_vectors", "read_lengths", "read_vecs", "write_vecs", "write_atomic"]

_VECS_DTYPES: dict[str, np.dtype[Any]] = {".fvecs": np.dtype("<f4"), ".ivecs": np.dtype("<i4"), ".bvecs": np.dtype("u1")}


def read_vecs(path: str | Path) -> npt.NDArray[Any]:
    """Read a ``.fvecs`` / ``.ivecs`` / ``.bvecs`` file (the TEXMEX format of SIFT1M, GIST1M).

    Each record is a little-endian int32 dimension ``d`` followed by ``d`` components
    (float32, int32 or uint8). Returns an array of shape (N, d).

    Raises
    ------
    InvalidArgumentError
        If the extension is unknown, records disagree on ``d``, or the file is truncated.
    """
    path = Path(path)
    dtype = _VECS_DTYPES.get(path.suffix.lower())
    if dtype is None:
        raise InvalidArgumentError(f"{path}: expected .fvecs, .ivecs or .bvecs")
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0:
        return np.empty((0, 0), dtype=dtype)
    if raw.size < 4:
        raise InvalidArgumentError(f"{path}: truncated (shorter than one record header)")
    d = int(raw[:4].view("<i4")[0])
    record = 4 + d * dtype.itemsize
    if d < 1 or raw.size % record:
        raise InvalidArgumentError(
            f"{path}: size {raw.size} bytes is not a whole number of records of dimension {d}"
        )
    records = raw.reshape(-1, record)
    dims = records[:, :4].copy().view("<i4").ravel()
    bad = np.flatnonzero(dims != d)
    if bad.size:
        raise InvalidArgumentError(
            f"{path}: record {bad[0]} has dimension {dims[bad[0]]}, the first has {d}"
        )
    return records[:, 4:].copy().view(dtype).astype(dtype.newbyteorder("="))


_MAGIC = {".npy": b"\x93NUMPY", ".npz": b"PK"}  # format.MAGIC_PREFIX; any zip archive


def write_vecs(path: str | Path, arr: npt.ArrayLike) -> None:
    """Write a 2-D array as ``.fvecs`` (float32), ``.ivecs`` (int32) or ``.bvecs`` (uint8),
    chosen by the extension: per row a little-endian int32 dimension, then the row. The
    inverse of :func:`read_vecs`. Raises InvalidArgumentError for another extension or a
    value that does not fit the format's dtype."""
    path = Path(path)
    dtype = _VECS_DTYPES.get(path.suffix.lower())
    if dtype is None:
        raise InvalidArgumentError(f"{path}: expected .fvecs, .ivecs or .bvecs")
    a = np.asarray(arr)
    if a.ndim != 2:
        raise InvalidArgumentError(f"arr: expected a 2-D array, got shape {a.shape}")
    body = a.astype(dtype)
    if dtype.kind != "f" and not np.array_equal(body, a):
        raise InvalidArgumentError(f"arr: values do not fit {path.suffix} ({dtype})")
    n, d = body.shape
    header = np.full((n, 1), d, dtype="<i4").view(np.uint8)
    rows = np.concatenate([header, np.ascontiguousarray(body).view(np.uint8).reshape(n, -1)], 1)
    write_atomic(path, rows.tobytes())


def write_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder, so a reader
    never sees a half-written file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _load_array(spec: str) -> npt.NDArray[Any]:
    """Load ``.npy`` or ``.npz[:NAME]``; errors name the file."""
    name = None
    text = spec
    if ".npz:" in text:
        text, name = text.rsplit(":", 1)
    path = Path(text)
    if not path.is_file():
        raise InvalidArgumentError(f"{path}: no such file")
    suffix = ".npy" if path.suffix.lower() == ".npy" else ".npz"
    with open(path, "rb") as f:
        head = f.read(len(_MAGIC[suffix]))
    if head != _MAGIC[suffix]:
        kind = "a NumPy array file" if suffix == ".npy" else "a NumPy zip archive"
        raise InvalidArgumentError(
            f"{path}: not a {suffix} file (it does not start like {kind}; "
            "name a text file of lengths e.g. lengths.txt)"
        )
    try:
        if suffix == ".npy":
            arr: npt.NDArray[Any] = np.load(path, allow_pickle=False)
            return arr
        with np.load(path, allow_pickle=False) as data:
            names = list(data.keys())
            if name is None:
                if len(names) != 1:
                    raise InvalidArgumentError(
                        f"{path}: holds arrays {names}; choose one as {path}:NAME"
                    )
                name = names[0]
            if name not in names:
                raise InvalidArgumentError(f"{path}: no array {name!r} (has {names})")
            arr = data[name]
            return arr
    except (ValueError, OSError, EOFError) as exc:
        if isinstance(exc, InvalidArgumentError):
            raise
        raise InvalidArgumentError(f"{path}: not a readable NumPy file ({exc})") from None


def read_vectors(spec: str | Path) -> npt.NDArray[Any]:
    """Read a 2-D array from ``.npy``, ``.npz`` (``file.npz`` with one array, or
    ``file.npz:NAME``), ``.fvecs``, ``.ivecs`` or ``.bvecs``."""
    text = str(spec)
    suffix = Path(text.split(".npz:")[0] + (".npz" if ".npz:" in text else "")).suffix.lower()
    if suffix in (".npy", ".npz"):
        arr = _load_array(text)
    elif suffix in _VECS_DTYPES:
        if not Path(text).is_file():
            raise InvalidArgumentError(f"{text}: no such file")
        arr = read_vecs(text)
    else:
        raise InvalidArgumentError(
            f"{text}: unknown format {suffix!r} (expected .npy, .npz, .fvecs, .ivecs, .bvecs)"
        )
    if arr.ndim != 2:
        raise InvalidArgumentError(f"{text}: expected a 2-D array, got shape {arr.shape}")
    return arr


def read_lengths(spec: str | Path) -> npt.NDArray[np.int64]:
    """Read sequence lengths from ``.npy``, ``.npz`` (``file.npz`` with one array, or
    ``file.npz:NAME``) or a text file with one integer per line."""
    text = str(spec)
    if text.lower().endswith(".npy") or ".npz" in text.lower():
        arr = _load_array(text)
    else:
        path = Path(text)
        if not path.is_file():
            raise InvalidArgumentError(f"{path}: no such file")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "input contained no data"
                arr = np.loadtxt(path, dtype=np.int64, ndmin=1)
        except UnicodeDecodeError:
            raise InvalidArgumentError(
                f"{path}: not a text file (use .npy, .npz or one integer per line)"
            ) from None
        except ValueError as exc:
            raise InvalidArgumentError(f"{path}: not one integer per line ({exc})") from None
    if arr.ndim != 1 or arr.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"{spec}: expected a 1-D integer array, got {arr.dtype} of shape {arr.shape}"
        )
    lengths: npt.NDArray[np.int64] = arr.astype(np.int64)
    return lengths
