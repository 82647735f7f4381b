"""One shard of a :class:`~ordcore.distributed.ShardedIndex`: a ``BQGraphIndex`` living in a
Ray actor, durable on every acknowledged change.

Durability protocol (what makes a killed actor cost a retry, not an answer):

* every change writes a new generation of the shard's file,
  ``shard-<number>.<generation>.ordcann`` (``BQGraphIndex.save``: temporary file, fsync,
  rename), before ``create`` / ``commit`` / ``remove`` / ``compact`` answer; the old
  generation stays until the driver's manifest names the new one (the manifest is the single
  commit point). A restarted actor, whose ``__init__`` finds its newest generation, holds
  exactly what it acknowledged; :meth:`Shard.open` (``ShardedIndex.load``) takes the
  generation the manifest names and removes the others (newer ones were never committed);
* ``add`` is two-phase: ``stage`` validates a batch against the shard's ids and writes it to
  ``<file>.staging/<token>-<seq>.npz``; ``commit`` adds every staged batch of the token at
  once (one graph build for a first add), saves, then deletes the staging files. Each step is
  idempotent, so Ray's task retry after a restart is safe: a batch staged twice is written
  once, and a commit whose ids are all present already happened (``stage`` checked that none
  were).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ordcore.ann import BQGraphIndex
from ordcore.errors import IndexFormatError, InvalidArgumentError, UnknownIdError

__all__ = ["Shard", "file_sha256", "shard_of", "ID_HASH", "shard_file", "parse_shard_file"]

#: The id-to-shard rule recorded in the manifest.
ID_HASH = "splitmix64(id) % num_shards"

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def shard_of(ids: npt.NDArray[np.int64], num_shards: int) -> npt.NDArray[np.int64]:
    """Shard of each id: the SplitMix64 output (Steele, Lea and Flood, OOPSLA 2014) of a
    generator whose state is the id, modulo ``num_shards``. Uniform for any id pattern
    (consecutive ids spread evenly) and independent of the platform."""
    z = np.asarray(ids, dtype=np.int64).reshape(-1).view(np.uint64) + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z ^= z >> np.uint64(31)
    return (z % np.uint64(num_shards)).astype(np.int64)


#: ``shard-<number>[.<generation>].ordcann`` (no generation: 0, the name before generations).
_FILE_RE = re.compile(r"shard-(\d+)(?:\.(\d+))?\.ordcann")


def shard_file(number: int, generation: int) -> str:
    """The file name of generation ``generation`` of shard ``number``."""
    return f"shard-{number:05d}.{generation:08d}.ordcann"


def parse_shard_file(name: str) -> tuple[int, int] | None:
    """``(shard number, generation)`` of a shard file name, ``None`` for other names."""
    m = _FILE_RE.fullmatch(name)
    return None if m is None else (int(m.group(1)), int(m.group(2) or 0))


def shard_files(folder: Path, number: int) -> dict[int, Path]:
    """Generation -> file of every file of shard ``number`` in ``folder``."""
    out: dict[int, Path] = {}
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return out
    for name in names:
        parsed = parse_shard_file(name)
        if parsed is not None and parsed[0] == number and (folder / name).is_file():
            out[parsed[1]] = folder / name
    return out


def file_sha256(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes (read in 4 MiB chunks; hashlib releases the GIL)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Shard:
    """The actor body (wrapped by ``ray.remote`` in :mod:`ordcore.distributed.index`).

    ``num_threads`` is passed to every index call: Ray sets ``OMP_NUM_THREADS`` for an
    actor but not ``RAYON_NUM_THREADS``, and rayon would otherwise start one thread per core
    of the node in every shard.
    """

    def __init__(
        self, number: int, folder: str, dim: int, params: dict[str, Any], num_threads: int
    ) -> None:
        self.number = number
        self.folder = Path(folder)
        # after a restart: the newest generation, what this shard last acknowledged
        files = shard_files(self.folder, number)
        self.generation = max(files, default=0)
        self.file: Path | None = files.get(self.generation)
        self.staging = self.folder / f"shard-{number:05d}.staging"
        self.dim = dim
        self.params = params
        self.num_threads = num_threads
        self._index: BQGraphIndex | None = None
        self._staged_ids: dict[str, npt.NDArray[np.int64]] = {}

    # -- state -----------------------------------------------------------------------
    def _created(self) -> bool:
        return self._index is not None or self.file is not None

    def _idx(self) -> BQGraphIndex:
        if self._index is None:  # after a restart: what the last acknowledged call saved
            if self.file is None:
                raise FileNotFoundError(f"shard {self.number}: not created yet")
            self._index = BQGraphIndex.load(self.file)
        return self._index

    def _save(self) -> tuple[int, str, str]:
        """Writes the index as the next generation; returns ``(count, sha256, file name)``.
        The previous generation stays (the manifest may still name it)."""
        idx = self._idx()
        new = self.folder / shard_file(self.number, self.generation + 1)
        idx.save(new)
        _fsync(new)
        _fsync(self.folder)
        self.generation += 1
        self.file = new
        return len(idx), file_sha256(new), new.name

    def _change(self, apply: Any) -> tuple[int, str, str]:
        """Runs ``apply(index)`` and saves; if either fails, the index in memory is dropped
        so that the next call reloads what was last acknowledged (the file)."""
        try:
            apply(self._idx())
            return self._save()
        except BaseException:
            self._index = None
            raise

    def create(self, params: dict[str, Any] | None = None) -> tuple[int, str, str]:
        """Writes an empty index file built with ``params`` (default: the actor's; the
        driver passes the explicit ``bits`` / ``rotation`` it chose for ``bits="auto"``);
        returns ``(count, sha256, file name)``."""
        if params is not None:
            self.params = params
        self._index = BQGraphIndex(self.dim, **self.params)
        return self._save()

    def _len(self) -> int:
        """Live vectors; 0 for a shard not created yet (``bits="auto"`` before the choice)."""
        if not self._created():
            return 0
        return len(self._idx())

    def open(self, file: str, sha256: str) -> int:
        """Loads ``file`` (the generation the manifest names) after checking it against the
        manifest's checksum (``file`` and ``sha256`` empty: a shard not created yet), then
        removes this shard's other generations: older ones are superseded, newer ones were
        written by a change whose manifest was never written (a driver that died during
        ``add``), so the index is the last committed one."""
        files = shard_files(self.folder, self.number)
        if not sha256:  # not created yet (bits="auto" before the first add)
            self._index, self.file, self.generation = None, None, 0
            keep = None
        else:
            path = self.folder / file
            if not path.is_file():
                raise FileNotFoundError(f"shard {self.number}: file {str(path)!r} is missing")
            actual = file_sha256(path)
            if actual != sha256:
                raise IndexFormatError(
                    f"shard {self.number}: file {str(path)!r} has SHA-256 {actual}, the "
                    f"manifest records {sha256} (the file was changed after the manifest was "
                    "written)"
                )
            index = BQGraphIndex.load(path)
            if index.dim != self.dim:
                raise IndexFormatError(
                    f"shard {self.number}: file holds dimension {index.dim}, the manifest "
                    f"says {self.dim}"
                )
            parsed = parse_shard_file(file)
            self._index, self.file = index, path
            self.generation = 0 if parsed is None else parsed[1]
            keep = path.name
        for p in files.values():
            if p.name != keep:
                p.unlink(missing_ok=True)
        return len(self._index) if self._index is not None else 0

    def checksum(self) -> tuple[int, str, str]:
        if not self._created():
            return 0, "", ""  # not created yet
        assert self.file is not None
        return len(self._idx()), file_sha256(self.file), self.file.name

    # -- add: stage, then commit -----------------------------------------------------
    def _batch_path(self, token: str, key: str) -> Path:
        return self.staging / f"{token}-{key}.npz"

    def _staged(self, token: str) -> list[Path]:
        return sorted(self.staging.glob(f"{token}-*.npz"))

    def stage(
        self,
        token: str,
        key: str,
        X: npt.NDArray[np.float32],
        ids: npt.NDArray[np.int64],
        rows: npt.NDArray[np.int64],
    ) -> int:
        """Validates one batch's ids (not in the index, not staged before under ``token``)
        and stores the batch durably under ``key`` (unique within the add and the same when a
        caller's task is retried). ``rows`` are the batch rows' positions in the caller's
        input, used in messages. Returns the number of rows."""
        path = self._batch_path(token, key)
        if path.exists():  # a retry after a restart
            return int(ids.shape[0])
        held = (np.isin(ids, self._idx().ids) if self._created()
                else np.zeros(ids.shape, dtype=bool))  # bits="auto": created at the commit
        if held.any():
            j = int(np.argmax(held))
            raise InvalidArgumentError(
                f"ids: id {int(ids[j])} (row {int(rows[j])}) is already in the index; ids "
                "must be distinct across add calls (remove it first to replace it)"
            )
        before = self._staged_ids.get(token)
        if before is None:
            parts = [np.load(p)["ids"] for p in self._staged(token)]
            before = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        twice = np.isin(ids, before)
        if twice.any():
            j = int(np.argmax(twice))
            raise InvalidArgumentError(
                f"ids: id {int(ids[j])} (row {int(rows[j])}) appears twice in this add"
            )
        self.staging.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as f:
            np.savez(f, X=X, ids=ids)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        self._staged_ids[token] = np.concatenate([before, ids])
        return int(ids.shape[0])

    def commit(self, token: str) -> tuple[int, str, str]:
        """Adds every batch staged under ``token`` and saves; returns ``(count, sha256, file
        name)``. A shard not created yet (``bits="auto"``) must be created first."""
        files = self._staged(token)
        if files:
            data = [np.load(p) for p in files]
            X = np.concatenate([d["X"] for d in data])
            ids = np.concatenate([d["ids"] for d in data])

            def apply(idx: BQGraphIndex) -> None:
                if not np.isin(ids, idx.ids).all():  # else: saved before a restart
                    idx.add(X, ids, num_threads=self.num_threads)

            out = self._change(apply)
        else:
            out = self.checksum()
        self.abort(token)
        return out

    def abort(self, token: str) -> None:
        """Drops what was staged under ``token``."""
        for p in self._staged(token):
            p.unlink()
        self._staged_ids.pop(token, None)
        if self.staging.is_dir() and not any(self.staging.iterdir()):
            shutil.rmtree(self.staging, ignore_errors=True)

    # -- remove ----------------------------------------------------------------------
    def check_known(self, ids: npt.NDArray[np.int64]) -> None:
        """Raises :class:`~ordcore.UnknownIdError` naming the first id this shard lacks."""
        known = np.isin(ids, self._idx().ids)
        if not known.all():
            missing = ids[~known]
            raise UnknownIdError(
                f"ids: {missing.size} id(s) are not in the index, first "
                f"{missing[:5].tolist()}; nothing was removed"
            )

    def remove(self, ids: npt.NDArray[np.int64]) -> tuple[int, str, str]:
        def apply(idx: BQGraphIndex) -> None:
            if np.isin(ids, idx.ids).any():  # else: removed and saved before a restart
                idx.remove(ids)

        return self._change(apply)

    def compact(self) -> tuple[int, str, str]:
        return self._change(lambda idx: idx.compact(num_threads=self.num_threads))

    # -- get -------------------------------------------------------------------------
    def get(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """``BQGraphIndex.get`` of this shard's ids."""
        out: npt.NDArray[np.float32] = self._idx().get(ids)  # type: ignore[attr-defined,unused-ignore]
        return out

    def unknown(self, ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The ids this shard does not hold (live), in the order given."""
        if self._len() == 0:
            return ids
        return ids[~np.isin(ids, self._idx().ids)]

    # -- search ----------------------------------------------------------------------
    def search(
        self, Q: npt.NDArray[np.float32], k: int, ef_search: int, kwargs: dict[str, Any],
        flt: npt.NDArray[Any] | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """``BQGraphIndex.search``; ``flt`` is its ``filter`` (this shard's share of an
        allow-list, or the bitmap every shard gets)."""
        if flt is not None:
            kwargs = {**kwargs, "filter": flt}
        kwargs = {"num_threads": self.num_threads, **kwargs}  # the caller's, if given
        return self._idx().search(Q, k, ef_search=ef_search, **kwargs)

    # -- introspection (tests, benchmarks) ---------------------------------------------
    def info(self, Q: npt.NDArray[np.float32] | None = None) -> dict[str, Any]:
        """pid, thread count, length; for ``Q``, whether it arrived as a read-only view of
        the object store (zero-copy) rather than a private copy."""
        out: dict[str, Any] = {
            "pid": os.getpid(),
            "num_threads": self.num_threads,
            "len": self._len(),
            "time": time.time(),
        }
        if Q is not None:
            out["q_writeable"] = bool(Q.flags.writeable)
            out["q_owndata"] = bool(Q.flags.owndata)
        return out
