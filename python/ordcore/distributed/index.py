"""``ShardedIndex``: one ``BQGraphIndex`` per shard, each in a Ray actor, merged by the
driver (the scheme of faiss ``IndexShards``, Milvus, Qdrant, Weaviate, Vespa and cuVS)."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import shutil
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from ordcore._args import (
    INT64_MAX,
    bool_arg,
    filter_arg,
    float_matrix_arg,
    id_array_arg,
    lookup_ids_arg,
    num_threads_arg,
)
from ordcore.ann import BQGraphIndex
from ordcore.distributed._ray import get, require_cluster
from ordcore.distributed._shard import ID_HASH, Shard, parse_shard_file, shard_of
from ordcore.errors import (
    ClusterError,
    IndexFormatError,
    InvalidArgumentError,
    ShardTimeoutError,
    UnknownIdError,
)

__all__ = ["ShardedIndex", "merge_topk", "MANIFEST", "FORMAT_VERSION"]

MANIFEST = "manifest.json"
FORMAT = "ordcore.distributed.ShardedIndex"
#: 2 added ``shard_params`` and ``choice`` (``bits="auto"``); version 1 manifests still load.
FORMAT_VERSION = 2
#: With ``num_cpus_per_shard=None`` the shards share the cluster's CPUs less one whole CPU, so
#: that a Ray Data task (a ``Dataset`` fed to ``add`` asks for 1 CPU per task) and packing
#: always find room.
SHARD_CPU_FREE = 1.0
#: The least a shard reserves by default (on a cluster of barely more than one CPU the
#: shards then share the CPUs with those tasks).
SHARD_CPU_MIN = 0.01
#: Seconds to wait for the shard actors to be placed and answer their first call.
START_TIMEOUT_S = 120.0
#: Rows per ``stage`` call when ``add`` routes a block of a ``ray.data.Dataset``.
DATASET_BATCH_ROWS = 16_384
#: Routing tasks of a Dataset ``add`` in flight at once (each holds one block).
DATASET_TASKS_IN_FLIGHT = 4
#: CPUs each routing task reserves (they wait on the shards most of the time).
ROUTE_TASK_CPUS = 0.25
#: Rows of the first add that ``bits="auto"`` chooses the codes from (a uniform sample).
CHOICE_SAMPLE_ROWS = 10_000


def merge_topk(
    ids: list[npt.NDArray[np.int64]], distances: list[npt.NDArray[np.float32]], k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Merges per-shard ``(nq, k)`` results into the ``k`` best per query, ordered by
    ``(distance, id)``; padding (``-1`` / ``+inf``) sorts last. Exact: with exact shards the
    result equals an exact search whose ties are ordered by id.

    The candidates at or below each row's ``k``-th smallest distance (ties included) are
    selected first (``np.partition``), and only those are sorted: 7-9x faster than sorting
    all ``num_shards * k`` candidates from 20 shards on (``benches/distributed.py``).
    """
    all_ids = np.concatenate(ids, axis=1)
    all_d = np.concatenate(distances, axis=1)
    if all_d.shape[1] > k:
        kth = np.partition(all_d, k - 1, axis=1)[:, k - 1 : k]
        keep = all_d <= kth
        width = int(keep.sum(axis=1).max()) if keep.size else k
        front = np.argsort(~keep, axis=1, kind="stable")[:, :width]  # kept ones first
        all_ids = np.take_along_axis(all_ids, front, axis=1)
        all_d = np.where(
            np.take_along_axis(keep, front, axis=1), np.take_along_axis(all_d, front, axis=1), np.inf
        ).astype(np.float32, copy=False)
    key_ids = np.where(all_ids < 0, np.iinfo(np.int64).max, all_ids)
    order = np.lexsort((key_ids, all_d), axis=1)[:, :k]
    out_ids = np.take_along_axis(all_ids, order, axis=1)
    out_d = np.take_along_axis(all_d, order, axis=1)
    return np.ascontiguousarray(out_ids), np.ascontiguousarray(out_d)


def _positive(value: Any, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InvalidArgumentError(f"{arg}: must be an integer >= 1, got {value!r}")
    return int(value)


def _check_rows(a: npt.NDArray[np.float32], metric: str, row0: int, arg: str) -> None:
    """What the index's build would refuse, checked before any shard changes."""
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        raise InvalidArgumentError(f"{arg}: row {row0 + int(np.argmax(bad))} holds NaN or inf")
    if metric == "cosine":
        zero = ~(a != 0).any(axis=1)
        if zero.any():
            raise InvalidArgumentError(
                f"{arg}: row {row0 + int(np.argmax(zero))} is all zeros, which has no "
                "direction under the cosine metric"
            )


def _check_distinct(ids: npt.NDArray[np.int64], row0: int) -> None:
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    same = np.flatnonzero(s[1:] == s[:-1])
    if same.size:
        i, j = order[same[0]], order[same[0] + 1]
        raise InvalidArgumentError(
            f"ids: id {int(s[same[0]])} appears twice (rows {row0 + int(i)} and "
            f"{row0 + int(j)})"
        )


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ShardedIndex:
    """A :class:`~ordcore.ann.BQGraphIndex` split into ``num_shards`` shards, one per Ray
    actor, searched together.

    Rows go to shard ``splitmix64(id) % num_shards``. Every shard is an independent
    ``BQGraphIndex`` with the same parameters and the same ``seed`` (so the same rotation);
    a query goes to every shard, each returns its local top-``k`` with exact (reranked)
    distances, and the driver merges them by ``(distance, id)`` (``rerank=False``: see
    :meth:`search`). With exhaustive shards the
    merge is exactly the global top-``k``; with approximate shards merged recall is at least
    the single index's at the same ``ef_search`` (each shard searches a quarter of the data
    with the full beam), at about ``num_shards`` times the distance work.

    Parameters
    ----------
    dim : int
        Vector dimension.
    num_shards : int
        Number of shards (>= 1).
    path : str or os.PathLike
        Folder for the shard files and ``manifest.json``; on a multi-node cluster it must be
        storage every node mounts at the same path (NFS, Lustre, a FUSE-mounted bucket). It
        must not hold an index already (open that one with :meth:`load`).
    num_cpus_per_shard : float, optional
        CPUs each actor reserves (fractions allowed). Default: the cluster's CPUs less one
        whole CPU, divided among the shards (at least 0.01 each, so on a cluster of barely
        more than one CPU the shards share CPUs with other tasks), so that Ray Data tasks (1 CPU each by default)
        keep room to run; an ``add`` of a ``ray.data.Dataset`` with less than one CPU left
        beside the shards is a ``ClusterError`` (it would wait forever). More than the cluster
        has in all is a ``ClusterError`` at once. Each shard's index calls use
        ``max(1, floor(num_cpus_per_shard))`` threads.
    max_restarts : int
        Restarts Ray allows each actor (and retries of the call that found it dead).
    **params
        Passed to every shard's ``BQGraphIndex`` (``metric``, ``bits``, ``R``,
        ``L_build``, ``alpha``, ``rotation``, ``seed``, ...), and validated on the driver
        first. With ``bits="auto"`` (given, or the single index's default where it is
        ``"auto"``) the driver calls ``ordcore.ann.choose_codes(sample, metric=...,
        base_size=<rows of the first non-empty add>)`` once, on a sample of up to
        ``CHOICE_SAMPLE_ROWS`` rows of that add, and only then creates every shard's index
        with the explicit ``bits`` / ``rotation`` chosen (:attr:`choice`,
        :attr:`shard_params`, both in the manifest).

    Raises
    ------
    ordcore.ClusterError
        Ray is not initialised (the message says how to start it).
    ordcore.MissingDependencyError
        Ray is not installed (``pip install 'ordcore[ray]'``).
    ordcore.InvalidArgumentError
        ``num_shards < 1``, a bad ``num_cpus_per_shard`` or index parameter (NumPy scalars
        are accepted, as by ``BQGraphIndex``, and recorded as Python numbers), or a ``path``
        that is a file or cannot be created.
    FileExistsError
        ``path`` holds a manifest already.

    A constructor that raises leaves nothing at ``path``: the files it wrote and the
    folders it created are removed (a folder that existed keeps what it held).

    Notes
    -----
    Durability: a shard writes every acknowledged ``add`` / ``remove`` / ``compact`` to a
    new generation of its file (``shard-<shard>.<generation>.ordcann``) before it answers,
    keeping the previous one; the manifest (the committed file of each shard, its SHA-256,
    parameters, the id-hash rule, format version) is then rewritten atomically (temporary
    file, fsync, rename) and is the single commit point; only after it are the superseded
    generations removed. :meth:`load` opens the files the manifest names and removes newer,
    uncommitted ones, so a driver killed during a change (``add`` of many shards, a Ctrl-C)
    leaves an index that loads as it was after the last committed call. A killed actor is
    restarted by Ray, reloads its newest file and the call is retried: it costs time, not an
    answer.

    The shard actors are :attr:`actors` (Ray actor handles), e.g. to kill one in a test.
    """

    def __init__(
        self,
        dim: int,
        num_shards: int,
        *,
        path: str | os.PathLike[str],
        num_cpus_per_shard: float | None = None,
        max_restarts: int = 3,
        **params: Any,
    ) -> None:
        require_cluster()
        dim = _positive(dim, "dim")
        num_shards = _positive(num_shards, "num_shards")
        params = _plain_params(params)
        template = _template(dim, params)
        folder = Path(path)
        if folder.exists() and not folder.is_dir():
            raise InvalidArgumentError(
                f"path: {os.fspath(folder)!r} is a file, not a folder for the shard files"
            )
        if (folder / MANIFEST).exists():
            raise FileExistsError(
                f"path: {os.fspath(folder)!r} already holds a sharded index; open it with "
                "ShardedIndex.load(path)"
            )
        made = []  # the folders this call creates, deepest first (removed if it fails)
        p = folder.absolute()
        while not p.exists():
            made.append(p)
            p = p.parent
        before = set(os.listdir(p)) if not made else set()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a parent that is a file, no permission, ...
            raise InvalidArgumentError(
                f"path: cannot create the folder {os.fspath(folder)!r} ({exc})"
            ) from None
        try:
            auto = _is_auto(template)
            self._setup(folder, dim, num_shards, dict(params), template, 0,
                        None if auto else dict(params), None)
            self._start(num_cpus_per_shard, max_restarts)
            if auto:  # the shards are created once the first add has made the choice
                self._all(lambda s, a: a.info.remote(), start=True)
                self._write_manifest()
            else:
                self._record(dict(enumerate(self._all(lambda s, a: a.create.remote(),
                                                      start=True))))
        except BaseException:
            with contextlib.suppress(Exception):
                self.close()
            _remove_new(folder, before, made)
            raise

    def _setup(
        self,
        folder: Path,
        dim: int,
        num_shards: int,
        params: dict[str, Any],
        template: BQGraphIndex,
        next_id: int,
        shard_params: dict[str, Any] | None,
        choice: dict[str, Any] | None,
    ) -> None:
        self._path = folder
        self._dim = dim
        self._num_shards = num_shards
        self._params = params
        self._shard_params = shard_params
        self._choice = choice
        self._template = template
        self._next_id = next_id
        self._files = [""] * num_shards  # the committed generation's file ("": none yet)
        self._counts = [0] * num_shards
        self._sums = [""] * num_shards
        self._actors: list[Any] = []

    def _start(self, num_cpus_per_shard: float | None, max_restarts: int) -> None:
        ray = require_cluster()
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, (int, np.integer)) or (
            max_restarts < 0
        ):
            raise InvalidArgumentError(f"max_restarts: must be an integer >= 0, got {max_restarts!r}")
        total = float(ray.cluster_resources().get("CPU", 1.0))
        if num_cpus_per_shard is None:
            cpus = default_shard_cpus(total, self._num_shards)
        else:
            if isinstance(num_cpus_per_shard, bool) or not isinstance(
                num_cpus_per_shard, (int, float, np.integer, np.floating)
            ) or not (math.isfinite(num_cpus_per_shard) and num_cpus_per_shard > 0):
                raise InvalidArgumentError(
                    f"num_cpus_per_shard: must be a number > 0, got {num_cpus_per_shard!r}"
                )
            cpus = float(num_cpus_per_shard)
            if cpus * self._num_shards > total:
                raise ClusterError(
                    f"num_cpus_per_shard: {self._num_shards} shards x {cpus:g} CPUs exceed the "
                    f"cluster's {total:g} CPUs; they could never all be placed"
                )
        self._cpus = cpus
        threads = max(1, math.floor(cpus))
        actor_cls = ray.remote(Shard)
        self._actors = [
            actor_cls.options(
                num_cpus=cpus,
                max_restarts=int(max_restarts),
                max_task_retries=int(max_restarts),
                scheduling_strategy="SPREAD",
            ).remote(s, str(self._path), self._dim, self._params, threads)
            for s in range(self._num_shards)
        ]

    # -- properties -------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    @property
    def num_shards(self) -> int:
        """Number of shards."""
        return self._num_shards

    @property
    def path(self) -> Path:
        """The folder holding the shard files and the manifest."""
        return self._path

    @property
    def params(self) -> dict[str, Any]:
        """The ``BQGraphIndex`` parameters as given (``bits`` may be ``"auto"``)."""
        return dict(self._params)

    @property
    def shard_params(self) -> dict[str, Any] | None:
        """The parameters every shard's index was created with: :attr:`params` with the
        chosen ``bits`` and ``rotation`` under ``bits="auto"``; ``None`` until that choice
        (the first non-empty :meth:`add`)."""
        return None if self._shard_params is None else dict(self._shard_params)

    @property
    def choice(self) -> dict[str, Any] | None:
        """With ``bits="auto"``: the ``ordcore.ann.CodeChoice`` the driver made once for all
        shards (``ordcore.ann.choose_codes`` on a sample of the first non-empty add, with
        ``base_size`` its row count); ``None`` before it and when ``bits`` was explicit."""
        return None if self._choice is None else copy.deepcopy(self._choice)

    @property
    def bits(self) -> int | str:
        """Code width of every shard, or ``"auto"`` before the choice."""
        return "auto" if self._shard_params is None else int(self._shard_params.get(
            "bits", self._template.bits))

    @property
    def rotation(self) -> str | None:
        """Rotation of every shard, or ``"auto"`` before the choice."""
        if self._shard_params is None:
            return "auto"
        rot = self._shard_params.get("rotation", self._template.rotation)
        return None if rot in (None, "auto") else str(rot)

    @property
    def num_cpus_per_shard(self) -> float:
        """CPUs each shard actor reserves."""
        return self._cpus

    @property
    def actors(self) -> list[Any]:
        """The shard actors' Ray handles, in shard order."""
        return list(self._actors)

    @property
    def shard_sizes(self) -> list[int]:
        """Live vectors per shard."""
        return list(self._counts)

    def __len__(self) -> int:
        return sum(self._counts)

    def shard_of(self, ids: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """The shard each id belongs to (``splitmix64(id) % num_shards``), e.g. to re-send
        the rows of the shards a failed ``add`` names."""
        return shard_of(id_array_arg(ids, None), self._num_shards)

    def __repr__(self) -> str:
        return (
            f"ShardedIndex(dim={self._dim}, num_shards={self._num_shards}, "
            f"path={os.fspath(self._path)!r}, len={len(self)})"
        )

    # -- plumbing ---------------------------------------------------------------------
    def _live(self) -> list[Any]:
        if not self._actors:
            raise ClusterError("the index is closed; open it again with ShardedIndex.load(path)")
        return self._actors

    def _all(self, call: Any, *, start: bool = False) -> list[Any]:
        """Runs ``call(shard, actor)`` on every shard; all are awaited, then the first error
        is raised. With ``start``, shards not placed within ``START_TIMEOUT_S`` raise
        :class:`~ordcore.ClusterError` (Ray would wait for resources forever)."""
        refs = [call(s, a) for s, a in enumerate(self._live())]
        if start:
            ray = require_cluster()
            _, waiting = ray.wait(refs, num_returns=len(refs), timeout=START_TIMEOUT_S)
            if waiting:
                late = [s for s, r in enumerate(refs) if r in set(waiting)]
                free = ray.available_resources().get("CPU", 0.0)
                self.close()
                raise ClusterError(
                    f"shards {late} were not placed within {START_TIMEOUT_S:g} s: each needs "
                    f"{self._cpus:g} CPUs and the cluster has {free:g} free (close other "
                    "indexes, add nodes, or pass a smaller num_cpus_per_shard)",
                    failed=tuple(late),
                )
        out: list[Any] = []
        first: BaseException | None = None
        for r in refs:
            try:
                out.append(get(r))
            except Exception as exc:  # noqa: BLE001 - re-raised below after all shards answer
                out.append(None)
                first = first or exc
        if first is not None:
            raise first
        return out

    def _record(self, results: dict[int, tuple[int, str, str]]) -> None:
        """Commits the shards' new files: the manifest (written atomically) names them, then
        the generations it no longer names are removed."""
        for s, (count, sha, file) in results.items():
            self._counts[s] = int(count)
            self._sums[s] = str(sha)
            self._files[s] = str(file)
        self._write_manifest()
        self._remove_old_generations()

    def _remove_old_generations(self) -> None:
        """Removes the shard files older than the generation the manifest names (newer ones
        belong to a change not committed yet, or never: :meth:`load` removes those)."""
        committed = {}
        for s, f in enumerate(self._files):
            parsed = parse_shard_file(f) if f else None
            if parsed is not None:
                committed[s] = parsed[1]
        with contextlib.suppress(OSError):
            for name in os.listdir(self._path):
                parsed = parse_shard_file(name)
                if parsed is not None and parsed[1] < committed.get(parsed[0], -1):
                    with contextlib.suppress(OSError):
                        (self._path / name).unlink()

    def _write_manifest(self) -> None:
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "dim": self._dim,
            "num_shards": self._num_shards,
            "params": self._params,
            "shard_params": self._shard_params,
            "choice": self._choice,
            "id_hash": ID_HASH,
            "next_id": self._next_id,
            "shards": [
                {"file": f, "sha256": h, "count": c}
                for f, h, c in zip(self._files, self._sums, self._counts)
            ],
        }
        _write_json_atomic(self._path / MANIFEST, manifest)

    # -- building -------------------------------------------------------------------
    def add(
        self,
        X: Any,
        ids: npt.ArrayLike | None = None,
        *,
        vector_column: str = "vector",
        id_column: str | None = None,
    ) -> None:
        """Adds vectors, each to the shard its id hashes to.

        Parameters
        ----------
        X : array_like, shape (n, dim), or ray.data.Dataset
            A NumPy array (float or small-integer dtype, as ``BQGraphIndex.add``), or a Ray
            Dataset with a fixed-shape tensor (or list) column ``vector_column``: each of
            its blocks is routed to the shards by a Ray task of its own (at most
            ``DATASET_TASKS_IN_FLIGHT`` at once, ``ROUTE_TASK_CPUS`` each) that validates
            it and sends every shard its rows in batches of ``DATASET_BATCH_ROWS``; the
            rows never pass through the driver, which sees references, row counts and the
            shards' acknowledgements.
        ids : array_like of int64, shape (n,), optional
            Distinct ids not in the index. Default: consecutive ids after the largest id
            ever added (for a Dataset, in its row order, or the ``id_column``).
        vector_column, id_column : str
            Columns of a Dataset ``X`` (two different columns). An empty Dataset (also one
            without a schema, such as ``ray.data.range(0)``) adds nothing.

        Raises
        ------
        ordcore.InvalidArgumentError
            Dimension mismatch, NaN/inf or a zero row under cosine (naming the row), a
            null or wrong-length row of ``vector_column``, ``id_column`` equal to
            ``vector_column``, ids repeated within the call or already in the index,
            automatic ids that would pass ``2**63 - 1`` (pass ids explicitly). Nothing
            changes on any shard, and under ``bits="auto"`` the choice waits for an add
            that succeeds.
        ordcore.ClusterError
            Shards failed after validation; ``applied`` names those that did apply the
            add (the manifest records them), ``failed`` the others.
        """
        token = uuid.uuid4().hex
        staged: set[int] = set()
        # Everything is validated and staged on the shards before anything is committed:
        # under bits="auto" the choice (and the shards' files) come only after that, so a
        # refused add leaves the index as it was.
        try:
            if _is_dataset(X):
                self._check_room_for_dataset_tasks()
                ds = self._dataset_columns(X, vector_column, id_column)
                if ds is None:  # an empty dataset without a schema: nothing to add
                    return
                if id_column is None:
                    n_rows = int(ds.count())
                    _default_ids(self._next_id, n_rows)
                next_id, n_rows = self._stage_dataset(token, ds, vector_column, id_column,
                                                      staged)
                if self._shard_params is None and n_rows:
                    self._choose_from_dataset(ds, vector_column, n_rows)
            else:
                a = float_matrix_arg(X, "X", self._dim)
                id_arr = (
                    _default_ids(self._next_id, a.shape[0])
                    if ids is None
                    else id_array_arg(ids, a.shape[0])
                )
                _check_rows(a, self._template.metric, 0, "X")
                _check_distinct(id_arr, 0)
                if a.shape[0]:
                    for s, r in _stage_batch(self._live(), token, "0", a, id_arr, 0, staged):
                        _get_shard(s, r, "add")
                if self._shard_params is None and a.shape[0]:
                    self._choose(a, a.shape[0])
                next_id = max(self._next_id, int(id_arr.max()) + 1) if id_arr.size else 0
        except BaseException:
            # Drop what was staged; the first error is the one to report (a dead shard's
            # abort fails too, and it has nothing committed).
            with contextlib.suppress(Exception):
                self._all(lambda s, act: act.abort.remote(token))
            raise
        self._next_id = max(self._next_id, next_id)
        actors = self._live()
        try:
            self._gather_changes({s: actors[s].commit.remote(token) for s in sorted(staged)}, "add")
        except ClusterError as exc:
            # The failed shards keep what they had: drop their staged rows too.
            with contextlib.suppress(Exception):
                for s in exc.failed:
                    get(actors[s].abort.remote(token))
            raise

    # -- bits="auto": one choice for every shard ---------------------------------------
    def _choose(self, sample: npt.NDArray[np.float32], base_size: int) -> None:
        """``ordcore.ann.choose_codes`` once, on the driver, from ``sample`` (rows of the
        first add standing for ``base_size`` rows); then every shard's index is created
        with the explicit ``bits`` / ``rotation`` chosen, and the manifest records both."""
        import ordcore.ann

        if sample.shape[0] > CHOICE_SAMPLE_ROWS:
            rng = np.random.default_rng(int(self._params.get("seed", 0)))
            rows = np.sort(rng.choice(sample.shape[0], CHOICE_SAMPLE_ROWS, replace=False))
            sample = sample[rows]
        choose: Any = getattr(ordcore.ann, "choose_codes")
        choice = dict(choose(
            sample, metric=self._template.metric, base_size=int(base_size),
            seed=int(self._params.get("seed", 0)),
            rotation=self._params.get("rotation", "auto"),
        ))
        # R / L_build not given: the chosen width's defaults (the single index's one rule),
        # recorded in the manifest.
        default_r, default_l = ordcore.ann._default_build(self._dim, int(choice["bits"]))
        shard_params = {"R": default_r, "L_build": default_l, **self._params,
                        "bits": int(choice["bits"]), "rotation": choice["rotation"]}
        created = self._all(lambda s, a: a.create.remote(shard_params))
        self._shard_params, self._choice = shard_params, choice
        self._record(dict(enumerate(created)))

    def _choose_from_dataset(self, ds: Any, vector_column: str, n: int) -> None:
        """The choice from a uniform sample of a Dataset of ``n`` rows, already staged (one
        extra pass: about ``CHOICE_SAMPLE_ROWS`` rows reach the driver; no more)."""
        frac = min(1.0, 1.2 * CHOICE_SAMPLE_ROWS / n)
        part = ds.select_columns([vector_column])
        if frac < 1.0:
            part = part.random_sample(frac, seed=int(self._params.get("seed", 0)))
        batch = part.limit(CHOICE_SAMPLE_ROWS).take_batch(CHOICE_SAMPLE_ROWS,
                                                          batch_format="numpy")
        sample = float_matrix_arg(_stack(batch[vector_column], vector_column, 0, self._dim),
                                  vector_column, self._dim)
        _check_rows(sample, self._template.metric, 0, vector_column)
        self._choose(sample, n)

    # -- Dataset add: blocks go from the source to the shards -----------------------------
    def _check_room_for_dataset_tasks(self) -> None:
        """Ray Data runs a ``Dataset``'s tasks with 1 CPU each: with less than that left
        beside the shards' reservations they would wait forever."""
        ray = require_cluster()
        total = float(ray.cluster_resources().get("CPU", 0.0))
        free = total - self._cpus * self._num_shards
        if free < SHARD_CPU_FREE - 1e-9:
            raise ClusterError(
                f"X: a ray.data.Dataset needs {SHARD_CPU_FREE:g} CPU free for Ray Data's tasks, "
                f"but the {self._num_shards} shards reserve {self._cpus:g} CPUs each of the "
                f"cluster's {total:g} ({free:g} left): pass a smaller num_cpus_per_shard, "
                f"add CPUs, or add arrays instead"
            )

    def _dataset_columns(self, ds: Any, vector_column: str, id_column: str | None) -> Any:
        """``ds`` reduced to the columns ``add`` reads; ``None`` for an empty dataset
        without a schema."""
        if id_column is not None and id_column == vector_column:
            raise InvalidArgumentError(
                f"id_column: {id_column!r} is also the vector_column; the ids and the "
                "vectors must be two different columns"
            )
        schema = ds.schema()
        if schema is None:
            if int(ds.count()) == 0:
                return None
            raise InvalidArgumentError("X: the dataset has rows but no schema (no columns)")
        names = schema.names
        for arg, col in (("vector_column", vector_column), ("id_column", id_column)):
            if col is not None and col not in names:
                raise InvalidArgumentError(
                    f"{arg}: the dataset has no column {col!r} (columns: {', '.join(names)})"
                )
        return ds.select_columns([vector_column] + ([id_column] if id_column else []))

    def _stage_dataset(
        self, token: str, ds: Any, vector_column: str, id_column: str | None, staged: set[int]
    ) -> tuple[int, int]:
        """Routes every block of ``ds`` to the shards in a Ray task of its own (the task
        reads the block where it lies, validates it, sends each shard its rows and waits
        for the shards' acknowledgements); the driver only sees object references, row
        counts and the shards each block reached. Returns the next default id and the row
        count."""
        ray = require_cluster()
        from ordcore.distributed.packing import _num_rows

        blocks = list(ds.to_arrow_refs())  # references; the rows stay in the object store
        count = ray.remote(num_cpus=ROUTE_TASK_CPUS)(_num_rows)
        sizes = [int(n) for n in get([count.remote(b) for b in blocks])]
        row0 = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        route = ray.remote(num_cpus=ROUTE_TASK_CPUS)(_route_block)
        actors = self._live()
        spec = (token, vector_column, id_column, self._dim, self._template.metric,
                self._next_id)
        next_id = self._next_id
        pending: list[Any] = []
        try:
            for i, b in enumerate(blocks):
                if not sizes[i]:  # a block filter() emptied may carry no columns
                    continue
                pending.append(route.remote(b, i, int(row0[i]), spec, actors))
                if len(pending) >= DATASET_TASKS_IN_FLIGHT:
                    shards, top = get(pending.pop(0))  # in block order: the first error
                    staged.update(shards)
                    next_id = max(next_id, top)
            while pending:
                shards, top = get(pending.pop(0))
                staged.update(shards)
                next_id = max(next_id, top)
        except BaseException:
            # let the other blocks' tasks finish before the caller drops what was staged
            with contextlib.suppress(Exception):
                ray.wait(pending, num_returns=len(pending))
            raise
        return next_id, int(row0[-1])

    def remove(self, ids: npt.ArrayLike) -> None:
        """Marks ``ids`` as removed on their shards (searches never return them).

        Raises :class:`~ordcore.UnknownIdError` naming unknown ids (every id, before the
        first add), and :class:`~ordcore.InvalidArgumentError` for repeated ones; then
        nothing is removed.
        """
        id_arr = id_array_arg(ids, None)
        _check_distinct(id_arr, 0)
        if self._shard_params is None:  # bits="auto" before the first add: no shard file
            self._live()
            if id_arr.size:
                _raise_unknown(id_arr, "; nothing was removed")
            return
        shard = shard_of(id_arr, self._num_shards)
        parts = {int(s): id_arr[shard == s] for s in np.unique(shard)}
        actors = self._live()
        for s, part in parts.items():  # validate on every shard before any changes
            _get_shard(s, actors[s].check_known.remote(part), "remove")
        refs = {s: actors[s].remove.remote(part) for s, part in parts.items()}
        self._gather_changes(refs, "remove")

    def compact(self) -> None:
        """Runs ``BQGraphIndex.compact`` on every shard (drops removed nodes); nothing to do
        before the first add under ``bits="auto"``."""
        actors = self._live()
        if self._shard_params is None:
            return
        self._gather_changes({s: a.compact.remote() for s, a in enumerate(actors)}, "compact")

    def _gather_changes(self, refs: dict[int, Any], what: str) -> None:
        done: dict[int, tuple[int, str, str]] = {}
        errors: dict[int, BaseException] = {}
        for s, r in refs.items():
            try:
                done[s] = get(r)
            except Exception as exc:  # noqa: BLE001 - reported below with the shard numbers
                errors[s] = exc
        self._record(done)
        if errors:
            failed = tuple(sorted(errors))
            first = errors[failed[0]]
            raise ClusterError(
                f"{what}: applied on shards {sorted(done)} but failed on shards "
                f"{list(failed)}, which are unchanged ({type(first).__name__}: {first}); "
                "index.shard_of(ids) says which rows went to which shard",
                applied=tuple(sorted(done)),
                failed=failed,
            ) from first

    # -- search ---------------------------------------------------------------------
    @overload
    def search(
        self,
        Q: npt.ArrayLike,
        k: int = ...,
        *,
        ef_search: int = ...,
        timeout_s: float | None = ...,
        allow_partial: Literal[False] = ...,
        **kwargs: Any,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...

    @overload
    def search(
        self,
        Q: npt.ArrayLike,
        k: int = ...,
        *,
        ef_search: int = ...,
        timeout_s: float | None = ...,
        allow_partial: Literal[True],
        **kwargs: Any,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], tuple[int, ...]]: ...

    def search(
        self,
        Q: npt.ArrayLike,
        k: int = 10,
        *,
        ef_search: int = 64,
        timeout_s: float | None = None,
        allow_partial: bool = False,
        **kwargs: Any,
    ) -> Any:
        """k nearest neighbours of each query over all shards.

        Parameters
        ----------
        Q : array_like, shape (nq, dim)
        k, ef_search, **kwargs
            As :meth:`ordcore.ann.BQGraphIndex.search` (``rerank``, ``rerank_k``, ...),
            passed to every shard.
        filter : numpy.ndarray, optional
            As ``BQGraphIndex.search``: a 1-D ``bool`` bitmap indexed by id value goes to
            every shard as it is (one copy in the object store); a 1-D integer allow-list
            of ids is split by the id-hash rule, so each shard sees only its own ids, and a
            shard whose share is empty is not asked. Ids of the allow-list not in the index
            raise :class:`~ordcore.UnknownIdError` (from their shard).
        num_threads : int, optional
            Threads of each shard's search (as ``BQGraphIndex.search``; default: the
            shard's own count, ``max(1, floor(num_cpus_per_shard))``).
        timeout_s : float, optional
            Seconds to wait for the shards (default, or ``float("inf")``: until all answer).
        allow_partial : bool
            When shards miss ``timeout_s``: ``False`` raises
            :class:`~ordcore.ShardTimeoutError`; ``True`` merges what the others found.

        Returns
        -------
        ids : numpy.ndarray of int64, shape (nq, k)
        distances : numpy.ndarray of float32, shape (nq, k)
            Merged by ``(distance, id)``; padding ``-1`` / ``+inf``. With
            ``rerank=False`` each shard returns its ``k`` best by code distance, in code
            order, with exact distances (as ``BQGraphIndex.search``): the answer of a
            single shard is returned as it is (so a 1-shard index equals the single
            index); the answers of several shards are merged by ``(exact distance, id)``
            (the shards do not return code distances), so the ``k`` results are the
            exact-distance best of the union of the shards' code-space top-``k``.
        missing : tuple of int
            Only with ``allow_partial=True``: the shards that did not answer in time.

        Raises
        ------
        ordcore.InvalidArgumentError
            As ``BQGraphIndex.search`` (checked on the driver before any shard is asked),
            a ``timeout_s`` that is not a number >= 0, an ``allow_partial`` that is not a
            bool.
        ordcore.UnknownIdError
            Allow-list ids not in the index (also before the first add).
        ordcore.ShardTimeoutError
            Shards missed ``timeout_s`` and ``allow_partial`` is false (``missing`` names
            them).
        """
        ray = require_cluster()
        if timeout_s is not None and not (
            isinstance(timeout_s, (int, float, np.integer, np.floating))
            and not isinstance(timeout_s, (bool, np.bool_))
            and timeout_s >= 0
        ):
            raise InvalidArgumentError(f"timeout_s: must be a number >= 0 or None, got {timeout_s!r}")
        if timeout_s is not None and math.isinf(timeout_s):
            timeout_s = None  # wait for every shard
        allow_partial = bool_arg("allow_partial", allow_partial)
        kwargs = dict(kwargs)
        flt = kwargs.pop("filter", None)
        if "num_threads" in kwargs:
            kwargs["num_threads"] = num_threads_arg(kwargs["num_threads"])
        rerank = kwargs.get("rerank", True)
        # The single index's checks and messages for every argument (an empty index).
        self._template.search(np.zeros((0, self._dim), np.float32), k, ef_search=ef_search, **kwargs)
        q = float_matrix_arg(Q, "Q", self._dim)
        actors = self._live()
        ask = self._filter_shares(flt)  # shard -> its filter (absent: not asked)
        if self._shard_params is None:  # nothing added yet: no shard holds a vector
            if flt is not None:
                allow, _ = filter_arg(flt)
                if allow is not None and allow.size:
                    _raise_unknown(allow, arg="filter")
            ask = {}
        q_ref = ray.put(q)  # one copy into the object store, shared by every shard
        shard_refs = {
            s: actors[s].search.remote(q_ref, k, ef_search, kwargs, f)
            for s, f in ask.items()  # f as an argument of its own: a bitmap ref is resolved
        }
        refs = list(shard_refs.values())
        waiting = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)[1] if refs else []
        late = set(waiting)
        missing = tuple(s for s, r in shard_refs.items() if r in late)
        if missing and not allow_partial:
            raise ShardTimeoutError(
                f"search: shards {list(missing)} did not answer within timeout_s={timeout_s} "
                "(pass allow_partial=True to merge what the other shards found)",
                missing=missing,
            )
        answers = []
        for s, r in shard_refs.items():
            if r in late:
                continue
            try:
                answers.append(_get_shard(s, r, "search"))
            except ClusterError:
                if not allow_partial:
                    raise
                missing += (s,)
        missing = tuple(sorted(missing))
        if not answers:
            nq, kk = q.shape[0], int(k)
            ids, dist = np.full((nq, kk), -1, np.int64), np.full((nq, kk), np.inf, np.float32)
        elif len(answers) == 1 and not rerank:  # code order, as the single index
            ids, dist = (np.ascontiguousarray(x) for x in answers[0])
        else:
            ids, dist = merge_topk([a[0] for a in answers], [a[1] for a in answers], int(k))
        return (ids, dist, missing) if allow_partial else (ids, dist)

    def _filter_shares(self, flt: Any) -> dict[int, Any]:
        """Per shard, the ``filter`` it searches with (``None``: unfiltered); shards left
        out have nothing to find."""
        shards = range(self._num_shards)
        if flt is None:
            return dict.fromkeys(shards)
        allow, bitmap = filter_arg(flt)
        if bitmap is not None:
            ref = require_cluster().put(bitmap)
            return dict.fromkeys(shards, ref)
        assert allow is not None
        owner = shard_of(allow, self._num_shards)
        return {int(s): np.ascontiguousarray(allow[owner == s]) for s in np.unique(owner)}

    def get(self, ids: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """The stored vectors of ``ids``, in their order: each id is asked of the shard it
        hashes to and the answers are put back in place.

        Parameters
        ----------
        ids : array_like of int, shape (n,)
            Ids in the index (repeats allowed: returned twice).

        Returns
        -------
        numpy.ndarray of float32, shape (n, dim)
            As ``BQGraphIndex.get`` (unit norm under cosine; dequantized from a compact
            ``rerank_dtype``).

        Raises
        ------
        ordcore.UnknownIdError
            Ids not in the index (or removed), the first few named in input order.
        ordcore.DTypeError, ordcore.InvalidArgumentError
            ``ids`` not a 1-D integer array.
        ordcore.ClusterError
            A shard is unavailable (named).
        """
        id_arr = lookup_ids_arg(ids, "ids")
        out = np.empty((id_arr.size, self._dim), dtype=np.float32)
        if id_arr.size == 0:
            return out
        if self._shard_params is None:
            _raise_unknown(id_arr)
        owner = shard_of(id_arr, self._num_shards)
        actors = self._live()
        parts = {int(s): np.flatnonzero(owner == s) for s in np.unique(owner)}
        refs = {s: actors[s].get.remote(id_arr[rows]) for s, rows in parts.items()}
        unknown = False
        for s, r in refs.items():
            try:
                out[parts[s]] = _get_shard(s, r, "get")
            except UnknownIdError:
                unknown = True
        if unknown:  # name them in the caller's order, over all shards
            gone = set()
            for s, rows in parts.items():
                gone.update(_get_shard(s, actors[s].unknown.remote(id_arr[rows]), "get").tolist())
            _raise_unknown(id_arr[np.isin(id_arr, np.fromiter(gone, np.int64, len(gone)))])
        return out

    # -- persistence ------------------------------------------------------------------
    def save(self) -> None:
        """Rewrites the manifest from the shards' current files (each shard's file is
        already up to date: every acknowledged change was saved before it answered)."""
        self._record(dict(enumerate(self._all(lambda s, a: a.checksum.remote()))))

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        num_cpus_per_shard: float | None = None,
        max_restarts: int = 3,
    ) -> ShardedIndex:
        """Opens a sharded index from its folder: reads the manifest, starts one actor per
        shard, and each verifies the file the manifest names (its SHA-256) before loading
        it. The index is the one of the last committed change: shard files newer than the
        manifest (written by a change whose driver died before it rewrote the manifest) are
        removed, as are superseded ones.

        Raises
        ------
        FileNotFoundError
            No manifest, or a shard file is missing (named).
        ordcore.IndexFormatError
            A manifest that is not JSON, lacks fields, has another format or a newer
            version, a field with a bad value (named: ``dim``, ``num_shards`` or
            ``next_id`` out of range, a ``shards`` list out of order, ``params`` or
            ``shard_params`` the index refuses), or a shard file whose checksum or
            dimension differs (named).
        ordcore.ClusterError
            Ray is not initialised.
        """
        require_cluster()
        folder = Path(path)
        mpath = folder / MANIFEST
        try:
            text = mpath.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise FileNotFoundError(
                f"path: {os.fspath(folder)!r} has no {MANIFEST}; it holds no sharded index"
            ) from None
        try:
            m = json.loads(text)
            if m.get("format") != FORMAT:
                raise IndexFormatError(f"{mpath}: not a {FORMAT} manifest")
            if int(m["format_version"]) > FORMAT_VERSION:
                raise IndexFormatError(
                    f"{mpath}: format version {m['format_version']} is newer than this "
                    f"ordcore reads ({FORMAT_VERSION}); upgrade ordcore"
                )
            if m["id_hash"] != ID_HASH:
                raise IndexFormatError(f"{mpath}: unknown id hash rule {m['id_hash']!r}")
            dim = _manifest_int(m, "dim", mpath, 1)
            n = _manifest_int(m, "num_shards", mpath, 1)
            params = dict(m["params"])
            shards = list(m["shards"])
            if len(shards) != n:
                raise IndexFormatError(
                    f"{mpath}: shards: lists {len(shards)} shards, num_shards says {n}"
                )
            files = [str(s["file"]) for s in shards]
            sums = [str(s["sha256"]) for s in shards]
            # next_id 2**63: automatic ids are used up (explicit ids still work)
            next_id = _manifest_int(m, "next_id", mpath, 0, INT64_MAX + 1)
            # version 1 (before bits="auto"): the shards were built with ``params`` and that
            # version's default bits=2
            shard_params = m["shard_params"] if "shard_params" in m else {"bits": 2, **params}
            shard_params = None if shard_params is None else dict(shard_params)
            choice = m.get("choice")
            choice = None if choice is None else dict(choice)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            if isinstance(exc, IndexFormatError):
                raise
            raise IndexFormatError(f"{mpath}: not a valid manifest ({exc!r})") from None
        for s, (f, sha) in enumerate(zip(files, sums)):
            if Path(f).name != f:
                raise IndexFormatError(
                    f"{mpath}: shards[{s}].file: {f!r} is not a plain file name"
                )
            parsed = parse_shard_file(f)
            if (f or sha) and (parsed is None or parsed[0] != s):
                raise IndexFormatError(
                    f"{mpath}: shards[{s}].file: {f!r} is not a file of shard {s} (the "
                    "shard list is out of order or names another file)"
                )
            if sha and not f:
                raise IndexFormatError(f"{mpath}: shards[{s}].file: missing for its sha256")
        template = _template_or_format_error(dim, params, mpath, "params")
        if shard_params is not None:
            _template_or_format_error(dim, shard_params, mpath, "shard_params")
            if shard_params.get("bits") == "auto":
                raise IndexFormatError(f"{mpath}: shard_params: bits 'auto' was never chosen")
        elif not _is_auto(template):
            raise IndexFormatError(
                f"{mpath}: shard_params: missing, but params do not have bits='auto'"
            )
        if shard_params is None and any(sums):
            raise IndexFormatError(
                f"{mpath}: shard_params: missing, but the shards have files"
            )
        obj = cls.__new__(cls)
        obj._setup(folder, dim, n, params, template, next_id, shard_params, choice)
        obj._files = files
        obj._start(num_cpus_per_shard, max_restarts)
        try:
            counts = obj._all(lambda s, a: a.open.remote(files[s], sums[s]), start=True)
        except BaseException:
            obj.close()
            raise
        obj._counts = [int(c) for c in counts]
        obj._sums = sums
        return obj

    def close(self) -> None:
        """Stops the shard actors (their files stay; :meth:`load` reopens them)."""
        if self._actors:
            ray = require_cluster()
            for a in self._actors:
                ray.kill(a, no_restart=True)
            self._actors = []

    def __enter__(self) -> ShardedIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _get_shard(shard: int, ref: Any, what: str) -> Any:
    """The result of one shard's call; a shard that is gone (dead after ``max_restarts``, or
    unreachable) is a :class:`~ordcore.ClusterError` naming it. Used before any shard
    applies a change (staging, validation) and by search."""
    ray = require_cluster()
    try:
        return get(ref)
    except ray.exceptions.RayActorError as exc:
        after = "; no shard applied it" if what in ("add", "remove") else ""
        raise ClusterError(
            f"{what}: shard {shard} is unavailable ({type(exc).__name__}){after}",
            failed=(shard,),
        ) from exc


def _raise_unknown(ids: npt.NDArray[np.int64], after: str = "", arg: str = "ids") -> None:
    first = list(dict.fromkeys(ids.tolist()))
    raise UnknownIdError(
        f"{arg}: {len(first)} id(s) are not in the index, first {first[:5]}{after}"
    )


def default_shard_cpus(total: float, num_shards: int) -> float:
    """CPUs each shard reserves with ``num_cpus_per_shard=None``: the cluster's ``total``
    less ``SHARD_CPU_FREE``, split among the shards (in hundredths, at least
    ``SHARD_CPU_MIN``)."""
    budget = max(total - SHARD_CPU_FREE, 0.0)
    return max(SHARD_CPU_MIN, math.floor(100 * budget / num_shards) / 100)


def _is_dataset(x: Any) -> bool:
    cls = type(x)
    return cls.__module__.startswith("ray.data") and hasattr(x, "iter_batches")


def _stack(col: Any, arg: str, row0: int, dim: int) -> npt.NDArray[Any]:
    """A tensor column as a 2-D array (list columns arrive as an object array of rows);
    a null row, or one that is not a vector of ``dim`` values, is an
    :class:`~ordcore.InvalidArgumentError` naming ``arg`` and the row (``row0 + i``)."""
    a = np.asarray(col)
    if a.dtype != object:
        return a
    if not a.size:
        return a.reshape(0, dim)
    rows = []
    for i, r in enumerate(a):
        if r is None:
            raise InvalidArgumentError(f"{arg}: row {row0 + i} is null")
        v = np.asarray(r)
        if v.ndim != 1 or v.shape[0] != dim:
            raise InvalidArgumentError(
                f"{arg}: row {row0 + i} has shape {v.shape}, expected ({dim},) (dimension "
                f"{dim})"
            )
        rows.append(v)
    try:
        return np.stack(rows)
    except (ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"{arg}: rows do not form a matrix ({exc})") from None


def _default_ids(next_id: int, n: int) -> npt.NDArray[np.int64]:
    """The automatic ids ``next_id, ..., next_id + n - 1``; past ``2**63 - 1`` they are an
    :class:`~ordcore.InvalidArgumentError`, as in ``BQGraphIndex.add``."""
    if n and next_id + n - 1 > INT64_MAX:
        raise InvalidArgumentError(
            f"ids: automatic ids after the largest stored id ({next_id - 1}) would pass "
            f"2**63 - 1 for {n} rows; pass ids explicitly"
        )
    return np.arange(next_id, next_id + n, dtype=np.int64)



def _manifest_int(m: dict[str, Any], field: str, mpath: Path, lo: int,
                  hi: int = INT64_MAX) -> int:
    v = m[field]
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise IndexFormatError(
            f"{mpath}: {field}: must be an integer in [{lo}, {hi}], got {v!r}"
        )
    return v


def _template_or_format_error(dim: int, params: dict[str, Any], mpath: Path,
                              field: str) -> BQGraphIndex:
    try:
        return _template(dim, params)
    except (InvalidArgumentError, TypeError) as exc:
        raise IndexFormatError(f"{mpath}: {field}: refused by BQGraphIndex ({exc})") from None


def _plain_params(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with NumPy scalars as Python ones (``BQGraphIndex`` accepts both; the
    manifest is JSON)."""
    return {k: v.item() if isinstance(v, np.generic) else v for k, v in params.items()}


def _template(dim: int, params: dict[str, Any]) -> BQGraphIndex:
    """An empty index with ``params``: the single index's own checks and messages validate
    them (and, later, the search arguments: an empty index answers at once)."""
    import ordcore.ann

    if params.get("bits") == "auto" and not hasattr(ordcore.ann, "choose_codes"):
        raise InvalidArgumentError(
            "bits: 'auto' needs ordcore.ann.choose_codes, which this ordcore lacks; pass "
            "bits=1, 2, 4 or 8"
        )
    return BQGraphIndex(dim, **params)


def _is_auto(template: BQGraphIndex) -> bool:
    """Whether the codes are chosen on the first add (``bits="auto"``, given or default)."""
    return bool(getattr(template, "bits", None) == "auto")


def _remove_new(folder: Path, before: set[str], made: list[Path]) -> None:
    """After a failed constructor: removes the files it wrote into ``folder`` (names not in
    ``before``) and the folders it created (``made``, deepest first), if empty."""
    with contextlib.suppress(OSError):
        for name in os.listdir(folder):
            if name in before:
                continue
            p = folder / name
            if name == MANIFEST or name.startswith(("shard-", f".{MANIFEST}.")):
                if p.is_dir():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink()
    for p in made:
        with contextlib.suppress(OSError):
            p.rmdir()


def _stage_batch(
    actors: list[Any],
    token: str,
    key: str,
    a: npt.NDArray[np.float32],
    ids: npt.NDArray[np.int64],
    row0: int,
    staged: set[int],
) -> list[tuple[int, Any]]:
    """Sends each shard its rows of one validated batch (staged under ``key``); returns
    ``(shard, ref)`` pairs."""
    num_shards = len(actors)
    shard = shard_of(ids, num_shards)
    order = np.argsort(shard, kind="stable")
    bounds = np.searchsorted(shard[order], np.arange(num_shards + 1))
    refs = []
    for s in range(num_shards):
        lo, hi = int(bounds[s]), int(bounds[s + 1])
        if lo == hi:
            continue
        rows = order[lo:hi]
        # Fancy indexing gives a fresh C-contiguous array: it reaches the actor as a
        # read-only view of the object store, without another copy.
        refs.append((s, actors[s].stage.remote(token, key, a[rows], ids[rows], rows + row0)))
        staged.add(s)
    return refs


def _route_block(block: Any, number: int, row0: int, spec: tuple[Any, ...],
                 actors: list[Any]) -> tuple[list[int], int]:
    """Ray task of a Dataset ``add``: block ``number`` (rows ``row0, ...`` of the dataset)
    validated and sent to the shards in batches of ``DATASET_BATCH_ROWS``; returns the
    shards that staged rows and the next default id. Retried by Ray, it stages the same
    keys again, which the shards take as already done."""
    from ray.data.block import BlockAccessor

    token, vector_column, id_column, dim, metric, id0 = spec
    nulls = getattr(block, "column", None)
    if nulls is not None:  # an Arrow block: a null row converts to NaN or None
        is_null = np.asarray(block.column(vector_column).is_null())
        if is_null.any():
            raise InvalidArgumentError(
                f"{vector_column}: row {row0 + int(np.argmax(is_null))} is null"
            )
    cols = BlockAccessor.for_block(block).to_batch_format("numpy")
    a = float_matrix_arg(_stack(cols[vector_column], vector_column, row0, dim),
                         vector_column, dim)
    n = a.shape[0]
    if id_column is None:
        ids = np.arange(id0 + row0, id0 + row0 + n, dtype=np.int64)
    else:
        ids = id_array_arg(cols[id_column], n, id_column)
    _check_rows(a, metric, row0, vector_column)
    _check_distinct(ids, row0)
    staged: set[int] = set()
    refs: list[tuple[int, Any]] = []
    for c, lo in enumerate(range(0, n, DATASET_BATCH_ROWS)):
        hi = min(n, lo + DATASET_BATCH_ROWS)
        refs += _stage_batch(actors, token, f"{number:08d}-{c:06d}", a[lo:hi], ids[lo:hi],
                             row0 + lo, staged)
    for s, r in refs:
        _get_shard(s, r, "add")
    return sorted(staged), int(ids.max()) + 1 if n else 0
