"""Token tables from files (Parquet, JSON Lines, ``save_to_disk`` datasets) and atomic Parquet
output, for ``ordcore pack`` (pyarrow imported inside the calls)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ordcore.errors import InvalidArgumentError, MissingDependencyError

__all__ = ["is_token_file", "read_token_table", "write_parquet_atomic"]

_PARQUET = (".parquet", ".pq")
_JSONL = (".jsonl", ".ndjson", ".json")


def is_token_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a token table (Parquet, JSON Lines or a ``save_to_disk``
    folder) rather than a file of lengths."""
    p = Path(path)
    return p.suffix.lower() in _PARQUET + _JSONL or (
        p.is_dir() and ((p / "dataset_info.json").is_file() or (p / "dataset_dict.json").is_file())
    )


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError as exc:
        raise MissingDependencyError(
            f"reading token files needs pyarrow ({exc}): pip install 'ordcore[hf]'"
        ) from exc
    return pyarrow


def read_token_table(path: str | os.PathLike[str], *, split: str | None = None) -> Any:
    """Reads a token table as a ``pyarrow.Table``.

    ``.parquet`` / ``.pq`` (memory-mapped), ``.jsonl`` / ``.ndjson`` / ``.json`` (JSON Lines:
    one object per line), or a folder written by ``Dataset.save_to_disk`` /
    ``DatasetDict.save_to_disk`` (``split`` picks the split of a ``DatasetDict``; needs the
    ``datasets`` package).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ordcore.InvalidArgumentError
        The file cannot be parsed, or a ``DatasetDict`` without a (valid) ``split``.
    ordcore.MissingDependencyError
        pyarrow (or ``datasets`` for a saved dataset) is not installed.
    """
    pa = _pyarrow()
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or folder")
    if p.is_dir():
        try:
            import datasets
        except ImportError as exc:
            raise MissingDependencyError(
                f"reading a saved dataset needs 'datasets' ({exc}): pip install 'ordcore[hf]'"
            ) from exc
        from ordcore.packing._hf import _arrow_table

        ds = datasets.load_from_disk(str(p))
        if isinstance(ds, datasets.DatasetDict):
            if split is None or split not in ds:
                what = "needs --split" if split is None else f"has no split {split!r}"
                raise InvalidArgumentError(
                    f"{p}: is a DatasetDict and {what} (splits: {', '.join(ds)})"
                )
            ds = ds[split]
        elif split is not None:
            raise InvalidArgumentError(f"{p}: is a single Dataset; --split does not apply")
        return _arrow_table(ds)
    if split is not None:
        raise InvalidArgumentError(f"{p}: --split applies only to a save_to_disk folder")
    try:
        if p.suffix.lower() in _PARQUET:
            import pyarrow.parquet as pq

            return pq.read_table(p, memory_map=True)
        import pyarrow.json as pj

        return pj.read_json(p)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise
        kind = "Parquet" if p.suffix.lower() in _PARQUET else "JSON Lines"
        raise InvalidArgumentError(f"{p}: not a readable {kind} file ({exc})") from None


def write_parquet_atomic(table: Any, path: str | os.PathLike[str]) -> None:
    """Writes ``table`` to ``path`` as Parquet through a temporary file in the same folder
    and a rename, so ``path`` is either the old file or the complete new one (never half
    written, also when interrupted).

    Raises
    ------
    FileNotFoundError
        The folder of ``path`` does not exist.
    IsADirectoryError
        ``path`` is a folder.
    """
    import pyarrow.parquet as pq

    out = Path(path)
    if out.is_dir():
        raise IsADirectoryError(f"{out}: is a folder")
    if not out.resolve().parent.is_dir():
        raise FileNotFoundError(f"{out}: folder {out.resolve().parent} does not exist")
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
