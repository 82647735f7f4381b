"""One shard of a :class:`~ordcore.distributed.ShardedIndex`: a ``BQGraphIndex`` living in a
Ray actor, durable on every acknowledged change.

Durability protocol (what makes a killed actor cost a retry, not an answer):

* the index file is rewritten (``BQGraphIndex.save``: temporary file, fsync, rename) before
  ``commit`` / ``remove`` answer, so a restarted actor, whose ``__init__`` loads the file
  lazily, holds exactly what was acknowledged;
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
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ordcore.ann import BQGraphIndex
from ordcore.errors import IndexFormatError, InvalidArgumentError, UnknownIdError

__all__ = ["Shard", "file_sha256", "shard_of", "ID_HASH"]

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
        self, number: int, file: str, dim: int, params: dict[str, Any], num_threads: int
    ) -> None:
        self.number = number
        self.file = Path(file)
        self.staging = Path(file + ".staging")
        self.dim = dim
        self.params = params
        self.num_threads = num_threads
        self._index: BQGraphIndex | None = None
        self._staged_ids: dict[str, npt.NDArray[np.int64]] = {}

    # -- state -----------------------------------------------------------------------
    def _idx(self) -> BQGraphIndex:
        if self._index is None:  # after a restart: what the last acknowledged call saved
            self._index = BQGraphIndex.load(self.file)
        return self._index

    def _save(self) -> tuple[int, str]:
        idx = self._idx()
        idx.save(self.file)
        _fsync(self.file)
        return len(idx), file_sha256(self.file)

    def _change(self, apply: Any) -> tuple[int, str]:
        """Runs ``apply(index)`` and saves; if either fails, the index in memory is dropped
        so that the next call reloads what was last acknowledged (the file)."""
        try:
            apply(self._idx())
            return self._save()
        except BaseException:
            self._index = None
            raise

    def create(self, params: dict[str, Any] | None = None) -> tuple[int, str]:
        """Writes an empty index file built with ``params`` (default: the actor's; the
        driver passes the explicit ``bits`` / ``rotation`` it chose for ``bits="auto"``);
        returns ``(count, sha256)``."""
        if params is not None:
            self.params = params
        self._index = BQGraphIndex(self.dim, **self.params)
        return self._save()

    def _len(self) -> int:
        """Live vectors; 0 for a shard not created yet (``bits="auto"`` before the choice)."""
        if self._index is None and not self.file.is_file():
            return 0
        return len(self._idx())

    def open(self, sha256: str) -> int:
        """Loads the file after checking it against the manifest's checksum (``""``: a
        shard not created yet, which must have no file)."""
        if not sha256 and not self.file.exists():
            return 0
        if not self.file.is_file():
            raise FileNotFoundError(f"shard {self.number}: file {str(self.file)!r} is missing")
        actual = file_sha256(self.file)
        if actual != sha256:
            raise IndexFormatError(
                f"shard {self.number}: file {str(self.file)!r} has SHA-256 {actual}, the "
                f"manifest records {sha256} (the file was changed after the manifest was "
                "written)"
            )
        self._index = BQGraphIndex.load(self.file)
        if self._index.dim != self.dim:
            raise IndexFormatError(
                f"shard {self.number}: file holds dimension {self._index.dim}, the manifest "
                f"says {self.dim}"
            )
        return len(self._index)

    def checksum(self) -> tuple[int, str]:
        if self._index is None and not self.file.exists():
            return 0, ""  # not created yet
        return len(self._idx()), file_sha256(self.file)

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
        held = np.isin(ids, self._idx().ids)
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

    def commit(self, token: str) -> tuple[int, str]:
        """Adds every batch staged under ``token`` and saves; returns ``(count, sha256)``."""
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

    def remove(self, ids: npt.NDArray[np.int64]) -> tuple[int, str]:
        def apply(idx: BQGraphIndex) -> None:
            if np.isin(ids, idx.ids).any():  # else: removed and saved before a restart
                idx.remove(ids)

        return self._change(apply)

    def compact(self) -> tuple[int, str]:
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
        return self._idx().search(
            Q, k, ef_search=ef_search, num_threads=self.num_threads, **kwargs
        )

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
