"""A stream of packed rows split over data-parallel ranks and DataLoader workers (NumPy only).

:class:`ShardedPackStream` is the engine of :class:`ordcore.packing.torch.PackedIterableDataset`;
it needs no torch, so it can be driven and tested on its own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

from ordcore._args import INT64_MAX, c_array
from ordcore.errors import DTypeError, InvalidArgumentError

__all__ = ["ShardedPackStream"]

_STATE_VERSION = 1
#: Settings a saved state must agree with (a state from another configuration is an error).
_CONFIG_KEYS = (
    "max_len", "algorithm", "buffer_size", "overlong", "max_seqs_per_pack", "seed",
    "num_shards", "shard", "remainder", "token_column",
)


def _as_item(item: Any, index: int, token_column: str) -> tuple[npt.NDArray[np.int64],
                                                                npt.NDArray[np.int64] | None]:
    """Token ids (and labels, if the item is a mapping with ``labels``) of one source item."""
    labels = None
    if isinstance(item, Mapping):
        if token_column not in item:
            raise InvalidArgumentError(
                f"source: item {index} has no {token_column!r} key (keys: "
                f"{', '.join(map(repr, item))})"
            )
        raw_labels = item.get("labels")
        item = item[token_column]
        if raw_labels is not None:
            labels = _as_ids(raw_labels, index, "labels")
    ids = _as_ids(item, index, token_column)
    if labels is not None and labels.size != ids.size:
        raise InvalidArgumentError(
            f"source: item {index} has {labels.size} labels for {ids.size} tokens"
        )
    return ids, labels


def _as_ids(value: Any, index: int, what: str) -> npt.NDArray[np.int64]:
    return token_ids(value, f"source: {what} of item {index}")


def token_ids(value: Any, name: str) -> npt.NDArray[np.int64]:
    """``value`` (a list, NumPy array or torch tensor of token ids) as a 1-D int64 array;
    errors name ``name``. Ids must fit int64 (uint64 ids above 2**63 - 1 are refused, not
    wrapped, as :meth:`ordcore.packing.Plan.materialize` does)."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged nesting
        raise InvalidArgumentError(f"{name}: must be a flat list of ids, got a ragged nesting") from None
    if arr.ndim != 1:
        raise InvalidArgumentError(f"{name}: must be a flat list of ids, got shape {arr.shape}")
    if arr.size and (arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer)):
        raise DTypeError(f"{name}: must be integers, got dtype {arr.dtype}")
    if arr.size and arr.dtype == np.uint64 and int(arr.max()) > INT64_MAX:
        raise InvalidArgumentError(f"{name}: holds ids beyond int64 (2**63 - 1)")
    return c_array(arr, np.int64)


def _hf_rows(ds: Any) -> Iterator[dict[str, Any]]:
    """Every row of a ``datasets.IterableDataset``, in order, also in a DataLoader worker.

    ``IterableDataset.iter`` (batches) reads the whole dataset (after any
    ``split_dataset_by_node``), where iterating the dataset itself inside a worker yields only
    that worker's shards.
    """
    for batch in ds.iter(batch_size=_HF_BATCH):
        if hasattr(batch, "to_pydict"):  # formatted as Arrow: a table per batch
            batch = batch.to_pydict()
        cols = list(batch)
        for i in range(len(batch[cols[0]]) if cols else 0):
            yield {c: batch[c][i] for c in cols}


_HF_BATCH = 256


class ShardedPackStream:
    """Packs a stream per window and yields shard ``shard`` of ``num_shards``'s packed rows.

    Every shard reads the whole source and plans each window identically (the plan is a pure
    function of the window), so the shards agree without talking to each other. Window ``k``
    holds the sequences carried over from window ``k - 1`` followed by the next
    ``buffer_size`` source items; its plan's packs ``0 .. P - P % num_shards`` are dealt out
    with :func:`ordcore.packing.equalize_ranks` (strided), and the sequences of the last
    ``P % num_shards`` packs are carried into window ``k + 1`` (re-planned there). Every shard
    therefore yields the same number of rows, and no sequence is lost or repeated, until the
    source ends: the last window's ``P % num_shards`` left-over packs are then dropped
    (``remainder="drop"``, at most ``num_shards - 1`` packs of the whole stream, counted in
    :attr:`num_dropped_packs`) or dealt out with repeats from that window's first packs
    whose ``labels`` are all ``label_ignore_index`` (``remainder="pad"``: no token is trained
    on twice, ``num_padded_packs``).

    Rows are dicts in TRL's packed format, NumPy int64 arrays: ``input_ids`` (the concatenated
    segments), ``labels`` (the source's ``labels`` where items are mappings that have them,
    else a copy of the ids; not yet masked at segment starts: the collator does that) and
    ``seq_lengths``.

    ``state_dict()`` after a row records the window, the source position, the carried
    sequences (as ``(item, start, stop)`` source coordinates, so the state stays small) and
    the rows of the window already yielded; :meth:`load_state_dict` followed by iteration
    continues with the next row exactly. Resuming replays the source from its start (every
    shard reads the whole stream anyway) and re-plans only the current window.

    Parameters
    ----------
    source : iterable, or callable returning an iterator
        Items are 1-D integer token sequences (lists, NumPy arrays, CPU tensors) or mappings
        with a ``token_column`` key (and optionally ``labels``), e.g. a
        ``datasets.IterableDataset``. Iterated from its start for each pass; a
        ``datasets.IterableDataset`` through its ``iter`` (batches), which reads all of it
        also in a DataLoader worker (iterating it directly there yields only that worker's
        shards). Ids must fit int64.
    max_len, algorithm, max_seqs_per_pack, seed : see :func:`ordcore.packing.pack`
    overlong : {"split", "truncate", "drop", "error"}
        Items longer than ``max_len`` (default ``"split"``: pretraining keeps every token).
    buffer_size : int
        New source items per window.
    num_shards, shard : int
        This stream is shard ``shard`` (``0 <= shard < num_shards``) of
        ``world_size * num_workers``.
    remainder : {"drop", "pad"}
        The end of the stream, as above.
    token_column : str
        Key of the token ids in mapping items.
    label_ignore_index : int
        Label of the padded repeats.
    """

    def __init__(
        self,
        source: Iterable[Any] | Callable[[], Iterator[Any]],
        max_len: int,
        *,
        algorithm: str = "bfd",
        buffer_size: int = 10_000,
        overlong: str = "split",
        max_seqs_per_pack: int | None = None,
        seed: int = 0,
        num_shards: int = 1,
        shard: int = 0,
        remainder: str = "drop",
        token_column: str = "input_ids",
        label_ignore_index: int = -100,
    ) -> None:
        from ordcore.packing._plan import ALGORITHMS, OVERLONG_POLICIES, _check_choice, _check_int
        from ordcore.packing._ranks import RANK_REMAINDERS, _validate_rank

        if not (callable(source) or isinstance(source, Iterable)):
            raise DTypeError(
                f"source: expected an iterable or a callable returning an iterator, got "
                f"{type(source).__name__}"
            )
        if isinstance(source, Iterator) and not callable(source):
            # Every pass (and every resume) reads the source from its start: a one-shot
            # iterator would silently yield nothing the second time.
            raise InvalidArgumentError(
                "source: a one-shot iterator cannot be read again from its start; pass a "
                "re-iterable (a list, a datasets.IterableDataset) or a callable returning a "
                "fresh iterator"
            )
        self.source = source
        self.max_len = _check_int("max_len", max_len, 1)
        self.algorithm = _check_choice("algorithm", algorithm, ALGORITHMS)
        self.buffer_size = _check_int("buffer_size", buffer_size, 1)
        self.overlong = _check_choice("overlong", overlong, OVERLONG_POLICIES)
        self.max_seqs_per_pack = (
            None if max_seqs_per_pack is None
            else _check_int("max_seqs_per_pack", max_seqs_per_pack, 1)
        )
        self.seed = _check_int("seed", seed, 0)
        self.shard, self.num_shards = _validate_rank(shard, num_shards, ("shard", "num_shards"))
        self.remainder = _check_choice("remainder", remainder, RANK_REMAINDERS)
        if not isinstance(token_column, str):
            raise InvalidArgumentError(f"token_column: must be a string, got {token_column!r}")
        self.token_column = token_column
        self.label_ignore_index = _check_int("label_ignore_index", label_ignore_index, -(2**63))
        self.num_dropped_packs = 0
        self.num_padded_packs = 0
        self._reset()

    # ------------------------------------------------------------------ state

    def _reset(self) -> None:
        self._window = 0
        self._next_item = 0  # source items consumed before the current window
        self._carry: list[tuple[int, int, int]] = []  # (item, start, stop) carried into it
        self._rows_done = 0
        self._resume = False

    def _config(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _CONFIG_KEYS}

    def state_dict(self) -> dict[str, Any]:
        """Position after the last yielded row, with the settings it is valid for."""
        return {
            "version": _STATE_VERSION,
            **self._config(),
            "window": self._window,
            "next_item": self._next_item,
            "carry": [list(c) for c in self._carry],
            "rows_done": self._rows_done,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restores a position saved by :meth:`state_dict`; the next iteration resumes there.

        Raises
        ------
        ordcore.InvalidArgumentError
            The state is not a stream state, is damaged (a missing key, a malformed or
            out-of-range carried sequence, each named), or was saved with other settings
            (each differing setting is named). A state that does not fit the source (fewer
            items than it had read, a carried item shorter than its carried tokens, more rows
            done than its window has) is refused when iteration resumes.
        """
        from ordcore.packing._plan import _check_int

        if not isinstance(state, Mapping) or state.get("version") != _STATE_VERSION:
            raise InvalidArgumentError(
                "state: not a state saved by ShardedPackStream / PackedIterableDataset.state_dict"
            )
        cfg = self._config()
        diff = [f"{k}={state.get(k)!r} (this stream has {cfg[k]!r})" for k in _CONFIG_KEYS
                if state.get(k) != cfg[k]]
        if diff:
            raise InvalidArgumentError(
                "state: was saved with another configuration: " + ", ".join(diff)
            )
        missing = [k for k in ("window", "next_item", "carry", "rows_done") if k not in state]
        if missing:
            raise InvalidArgumentError(
                f"state: has no {', '.join(map(repr, missing))} (a damaged stream state)"
            )
        window = _check_int("state['window']", state["window"], 0)
        next_item = _check_int("state['next_item']", state["next_item"], 0)
        rows_done = _check_int("state['rows_done']", state["rows_done"], 0)
        raw = state["carry"]
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Iterable):
            raise InvalidArgumentError(
                f"state['carry']: must be a list of [item, start, stop], got {type(raw).__name__}"
            )
        carry = []
        for n, entry in enumerate(raw):
            name = f"state['carry'][{n}]"
            if isinstance(entry, (str, bytes)) or not isinstance(entry, Iterable):
                raise InvalidArgumentError(f"{name}: must be [item, start, stop], got {entry!r}")
            entry = list(entry)
            if len(entry) != 3:
                raise InvalidArgumentError(f"{name}: must be [item, start, stop], got {entry!r}")
            a, b, c = (_check_int(name, v, 0) for v in entry)
            if not (a < next_item and b < c):
                raise InvalidArgumentError(
                    f"{name}: [{a}, {b}, {c}] is not a carried sequence (an item before "
                    f"next_item={next_item}, start < stop)"
                )
            carry.append((a, b, c))
        self._window, self._next_item, self._rows_done = window, next_item, rows_done
        self._carry = carry
        self._resume = True

    # ------------------------------------------------------------------ iteration

    def _iter_source(self) -> Iterator[Any]:
        src = self.source() if callable(self.source) else self.source
        hf = sys.modules.get("datasets")
        if hf is not None and isinstance(src, hf.IterableDataset):
            # Its own iteration hands each DataLoader worker only that worker's shards;
            # every shard of this stream must read the whole source (the class splits it).
            return _hf_rows(src)
        return iter(src)

    def __iter__(self) -> Iterator[dict[str, npt.NDArray[np.int64]]]:
        """Yields this shard's rows from the loaded state (or from the start).

        Raises
        ------
        ordcore.InvalidArgumentError
            A bad source item (named by its index), or a loaded state that does not fit the
            source (see :meth:`load_state_dict`).
        """
        from ordcore.packing._plan import _mix_seed, _refuse_overlong_item, pack
        from ordcore.packing._ranks import equalize_ranks

        if not self._resume:
            self._reset()
        self._resume = False
        self.num_dropped_packs = self.num_padded_packs = 0
        it = self._iter_source()
        wanted = {c[0] for c in self._carry}
        cache: dict[int, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64] | None]] = {}
        replayed = 0
        for i, item in enumerate(islice(it, self._next_item)):  # replay to the saved window
            replayed = i + 1
            if i in wanted:
                cache[i] = _as_item(item, i, self.token_column)
        if replayed < self._next_item:
            raise InvalidArgumentError(
                f"state: the source has {replayed} items, fewer than the {self._next_item} "
                f"the state had read; it is not the source the state was saved from"
            )
        for a, b, c in self._carry:
            if c > cache[a][0].size:
                raise InvalidArgumentError(
                    f"state: carries tokens {b}..{c} of item {a}, which has "
                    f"{cache[a][0].size}; it is not the source the state was saved from"
                )
        while True:
            new = list(islice(it, self.buffer_size))
            base = self._next_item
            exhausted = len(new) < self.buffer_size
            for j, item in enumerate(new):
                cache[base + j] = _as_item(item, base + j, self.token_column)
            coords = self._carry + [(base + j, 0, cache[base + j][0].size)
                                    for j in range(len(new))]
            if not coords:
                return
            lengths = np.asarray([c[2] - c[1] for c in coords], dtype=np.int64)
            if self.overlong == "error":
                _refuse_overlong_item(
                    lengths, self.max_len,
                    lambda i: (coords[i][0], int(cache[coords[i][0]][0].size)),
                )
            plan = pack(
                lengths,
                self.max_len,
                algorithm=self.algorithm,
                max_seqs_per_pack=self.max_seqs_per_pack,
                overlong=self.overlong,
                allow_empty=True,
                seed=_mix_seed(self.seed, self._window),
            )
            p_all = plan.num_packs
            n_deal = p_all if exhausted else p_all - p_all % self.num_shards
            split = equalize_ranks(
                n_deal, self.num_shards, remainder=self.remainder if exhausted else "drop"
            )
            if exhausted:
                self.num_dropped_packs = split.num_dropped
                self.num_padded_packs = split.num_padded
            mine, padded = split.indices[self.shard], split.padded[self.shard]
            if self._rows_done > mine.size:  # only a loaded state can get here
                raise InvalidArgumentError(
                    f"state: rows_done={self._rows_done}, but window {self._window} has "
                    f"{mine.size} rows for this shard; it is not the source the state was "
                    f"saved from"
                )
            off, seq, st, sp = plan.pack_offsets, plan.seq_index, plan.start, plan.stop
            while self._rows_done < mine.size:
                j = self._rows_done
                p = int(mine[j])
                ids_parts, lab_parts, seg = [], [], []
                for s in range(int(off[p]), int(off[p + 1])):
                    src, c0, _ = coords[int(seq[s])]
                    ids, labels = cache[src]
                    a, b = c0 + int(st[s]), c0 + int(sp[s])
                    ids_parts.append(ids[a:b])
                    lab_parts.append(ids[a:b] if labels is None else labels[a:b])
                    seg.append(b - a)
                row_ids = np.concatenate(ids_parts)
                row_labels = np.concatenate(lab_parts)
                if padded[j]:
                    row_labels = np.full_like(row_labels, self.label_ignore_index)
                self._rows_done = j + 1
                yield {
                    "input_ids": row_ids,
                    "labels": row_labels,
                    "seq_lengths": np.asarray(seg, dtype=np.int64),
                }
            if exhausted:
                return
            # Carry the sequences of the packs that were not dealt out into the next window.
            carry = []
            for s in range(int(off[n_deal]), int(off[p_all])):
                src, c0, _ = coords[int(seq[s])]
                carry.append((src, c0 + int(st[s]), c0 + int(sp[s])))
            keep = {c[0] for c in carry}
            for k in [k for k in cache if k not in keep]:
                del cache[k]
            self._carry = carry
            self._next_item = base + len(new)
            self._window += 1
            self._rows_done = 0
