"""Packing for torch training loops: a collator and a resumable, rank-aware IterableDataset.

* :class:`PackedCollator` turns packed rows (TRL's format, from
  :func:`ordcore.packing.pack_dataset` or :class:`PackedIterableDataset`) or plain tokenized
  examples (packed per batch on the fly) into the tensors transformers' models take for packed
  sequences: ``input_ids``, ``labels``, ``position_ids``, ``cu_seq_lens_q/k``,
  ``max_length_q/k``, ``seq_idx`` and, optionally, a 4-D block-diagonal ``attention_mask``.
* :class:`PackedIterableDataset` packs a token stream per window, splits it over
  data-parallel ranks and DataLoader workers with the same number of rows on each, and
  checkpoints with ``state_dict`` / ``load_state_dict`` (the protocol
  ``torchdata.stateful_dataloader.StatefulDataLoader`` calls in every worker).

Needs torch (``pip install 'ordcore[torch]'``); importing :mod:`ordcore` or
:mod:`ordcore.packing` does not import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ordcore.errors import DTypeError, InvalidArgumentError, MissingDependencyError

try:
    import torch
except ImportError as exc:  # pragma: no cover - torch is in the test environment
    raise MissingDependencyError(
        f"ordcore.packing.torch needs PyTorch ({exc}): pip install 'ordcore[torch]'"
    ) from exc

from ordcore.packing._plan import ALGORITHMS, _check_choice, _check_int, pack
from ordcore.packing._stream import ShardedPackStream, token_ids

__all__ = ["PackedCollator", "PackedIterableDataset"]

I64 = npt.NDArray[np.int64]


def _ids(value: Any, what: str, row: int) -> I64:
    return token_ids(value, f"features[{row}][{what!r}]")


class PackedCollator:
    """Collates packed rows or plain examples into tensors for packed-sequence training.

    Each feature is a mapping with ``input_ids`` (1-D integers), optionally ``labels`` (same
    length) and optionally ``seq_lengths``. A feature with ``seq_lengths`` is a packed row
    (TRL's format): its segments are those lengths. A feature without is one sequence; with
    ``max_len`` set, the batch's sequences are packed on the fly into rows of at most
    ``max_len`` tokens (:func:`ordcore.packing.pack`, ``algorithm``, ``overlong``), else each
    is its own segment. Empty sequences are skipped (as ``DataCollatorWithFlattening``).

    Labels are the feature's ``labels`` (or a copy of ``input_ids``), not shifted (the model
    shifts), with the first token of every segment and all padding set to
    ``label_ignore_index``, so no position is trained to predict across a segment boundary.
    ``position_ids`` restart at ``position_ids_start`` in every segment.

    Layouts
    -------
    ``"flat"`` (default): everything in one row, shape ``(1, T)``, no padding: the output of
    ``transformers.DataCollatorWithFlattening(return_flash_attn_kwargs=True,
    return_seq_idx=True)`` on the same sequences, key for key and dtype for dtype (and of
    TRL's ``DataCollatorForLanguageModeling(padding_free=True)`` on packed rows).
    ``"rows"``: one row per packed row (or per pack made on the fly), right-padded with
    ``pad_id`` to ``max_len`` (or the longest row), shape ``(B, L)``. The padding tail of a
    row is a segment of its own in ``cu_seq_lens``, ``seq_idx`` and the mask (positions
    ``0, 1, ...``, labels ignored), so varlen kernels and transformers' packed-sequence
    detection from ``position_ids`` never join it to a real sequence.

    Outputs (torch tensors): ``input_ids``, ``labels``, ``position_ids`` (int64, ``(B, L)``);
    with ``return_flash_attn_kwargs``: ``cu_seq_lens_q``, ``cu_seq_lens_k`` (int32,
    ``(segments + 1,)`` over the flattened ``B * L`` tokens) and ``max_length_q``,
    ``max_length_k`` (Python ints); with ``return_seq_idx``: ``seq_idx`` (int32, ``(B, L)``, the
    segment of every token, numbered over the batch); with ``return_attention_mask``:
    ``attention_mask`` (``(B, 1, L, L)``, causal and block-diagonal: ``mask_dtype=torch.bool``
    is ``True`` where attention is allowed, for SDPA; a floating dtype gives the additive form
    eager attention needs, 0 where allowed and the dtype's minimum elsewhere).

    Pass the batch to a transformers model as ``model(**batch, use_cache=False)``: without
    ``attention_mask`` the model finds the segments from ``position_ids`` (no cache only);
    flash attention uses ``cu_seq_lens_*``. With the ``transformers`` ``Trainer`` set
    ``remove_unused_columns=False`` (or keep ``seq_lengths``), else it drops ``seq_lengths``
    before the collator sees it and packed rows become single sequences.

    Parameters
    ----------
    max_len : int, optional
        Row length: plain examples are packed into rows of at most this many tokens; packed
        rows longer than it raise; ``layout="rows"`` pads to it.
    layout : {"flat", "rows"}
    pad_id : int
        Token id of padding (``"rows"``).
    label_ignore_index : int
        Label of segment starts and padding (``-100``, what transformers' losses ignore).
    position_ids_start : int
        First position of every segment (2 for RoBERTa-family models).
    return_flash_attn_kwargs, return_seq_idx, return_attention_mask : bool
    mask_dtype : torch.dtype
        dtype of the 4-D mask.
    algorithm, overlong : see :func:`ordcore.packing.pack` (on-the-fly packing only;
        ``overlong`` defaults to ``"truncate"`` as TRL's ``"bfd"``).
    token_column : str
        Key of the token ids in a feature.

    Raises
    ------
    ordcore.InvalidArgumentError
        (when called) No features, a feature that is not a mapping with the token column,
        ragged or non-1-D ids, uint64 ids beyond int64, every sequence empty (or dropped
        as longer than ``max_len`` with ``overlong="drop"``), a sequence longer than
        ``max_len`` with ``overlong="error"`` (named ``features[i]``), labels of another
        length, ``seq_lengths`` that do not add up to the row, a packed row longer than
        ``max_len``; each names the feature.
    ordcore.DTypeError
        Non-integer ids, labels or lengths.
    """

    def __init__(
        self,
        max_len: int | None = None,
        *,
        layout: str = "flat",
        pad_id: int = 0,
        label_ignore_index: int = -100,
        position_ids_start: int = 0,
        return_flash_attn_kwargs: bool = True,
        return_seq_idx: bool = True,
        return_attention_mask: bool = False,
        mask_dtype: torch.dtype = torch.bool,
        algorithm: str = "bfd",
        overlong: str = "truncate",
        token_column: str = "input_ids",
    ) -> None:
        self.max_len = None if max_len is None else _check_int("max_len", max_len, 1)
        self.layout = _check_choice("layout", layout, ("flat", "rows"))
        self.pad_id = _check_int("pad_id", pad_id, -(2**63))
        self.label_ignore_index = _check_int("label_ignore_index", label_ignore_index, -(2**63))
        self.position_ids_start = _check_int("position_ids_start", position_ids_start, 0)
        self.return_flash_attn_kwargs = bool(return_flash_attn_kwargs)
        self.return_seq_idx = bool(return_seq_idx)
        self.return_attention_mask = bool(return_attention_mask)
        if not isinstance(mask_dtype, torch.dtype):
            raise DTypeError(f"mask_dtype: expected a torch.dtype, got {mask_dtype!r}")
        self.mask_dtype = mask_dtype
        self.algorithm = _check_choice("algorithm", algorithm, ALGORITHMS)
        self.overlong = _check_choice("overlong", overlong, ("truncate", "split", "drop", "error"))
        self.token_column = token_column

    # -------------------------------------------------------------- rows of segments

    def _rows(self, features: Sequence[Mapping[str, Any]]) -> list[tuple[I64, I64, I64]]:
        """``(ids, labels, segment lengths)`` per output row (before padding)."""
        for r, f in enumerate(features):
            if not isinstance(f, Mapping) or self.token_column not in f:
                raise InvalidArgumentError(
                    f"features[{r}]: expected a mapping with {self.token_column!r}, got "
                    f"{type(f).__name__}"
                )
        packed = ["seq_lengths" in f for f in features]
        if any(packed) and not all(packed):
            raise InvalidArgumentError(
                "features: mixes packed rows (with 'seq_lengths') and plain examples"
            )
        seqs: list[tuple[I64, I64, I64]] = []
        for r, f in enumerate(features):
            ids = _ids(f[self.token_column], self.token_column, r)
            labels = ids if f.get("labels") is None else _ids(f["labels"], "labels", r)
            if labels.size != ids.size:
                raise InvalidArgumentError(
                    f"features[{r}]: has {labels.size} labels for {ids.size} tokens"
                )
            if packed[r]:
                seg = _ids(f["seq_lengths"], "seq_lengths", r)
                if np.any(seg <= 0):
                    bad = int(np.flatnonzero(seg <= 0)[0])
                    raise InvalidArgumentError(
                        f"features[{r}]: seq_lengths[{bad}] is {int(seg[bad])}; every "
                        "packed sequence has at least one token"
                    )
                if np.any(seg < 0) or int(seg.sum()) != ids.size:
                    raise InvalidArgumentError(
                        f"features[{r}]: seq_lengths add up to {int(seg.sum())}, the row has "
                        f"{ids.size} tokens"
                    )
                if self.max_len is not None and ids.size > self.max_len:
                    raise InvalidArgumentError(
                        f"features[{r}]: packed row of {ids.size} tokens is longer than "
                        f"max_len={self.max_len}"
                    )
                seg = seg[seg > 0]
            else:
                seg = np.asarray([ids.size], dtype=np.int64)
            seqs.append((ids, labels, seg))
        if not features:
            raise InvalidArgumentError("features: the batch is empty")
        if all(s[0].size == 0 for s in seqs):
            raise InvalidArgumentError("features: every sequence in the batch is empty")
        if all(packed) or self.max_len is None:
            return [s for s in seqs if s[0].size > 0]
        # Plain examples, packed on the fly.
        lengths = np.asarray([s[0].size for s in seqs], dtype=np.int64)
        if self.overlong == "error" and int(lengths.max()) > self.max_len:
            r = int(np.argmax(lengths > self.max_len))
            raise InvalidArgumentError(
                f"features[{r}]: has {int(lengths[r])} tokens, more than max_len="
                f"{self.max_len}; pass overlong='split', 'truncate' or 'drop'"
            )
        plan = pack(lengths, self.max_len, algorithm=self.algorithm, overlong=self.overlong,
                    allow_empty=True)
        if plan.num_packs == 0:
            raise InvalidArgumentError(
                f"features: every sequence in the batch is empty or longer than max_len="
                f"{self.max_len} and dropped (overlong='drop')"
            )
        out = []
        off, seq_index, start, stop = plan.pack_offsets, plan.seq_index, plan.start, plan.stop
        for p in range(plan.num_packs):
            sl = range(int(off[p]), int(off[p + 1]))
            ids = np.concatenate([seqs[seq_index[s]][0][start[s] : stop[s]] for s in sl])
            lab = np.concatenate([seqs[seq_index[s]][1][start[s] : stop[s]] for s in sl])
            out.append((ids, lab, (stop[sl.start : sl.stop] - start[sl.start : sl.stop])))
        return out

    # -------------------------------------------------------------- call

    def __call__(self, features: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        rows = self._rows(features)
        if self.layout == "flat" and len(rows) > 1:
            rows = [(np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows]),
                     np.concatenate([r[2] for r in rows]))]
        if self.layout == "rows":
            width = max(r[0].size for r in rows) if self.max_len is None else self.max_len
        else:
            width = rows[0][0].size
        b = len(rows)
        ids = np.full((b, width), self.pad_id, dtype=np.int64)
        labels = np.full((b, width), self.label_ignore_index, dtype=np.int64)
        seg_lens: list[I64] = []
        for i, (r_ids, r_lab, r_seg) in enumerate(rows):
            n = r_ids.size
            ids[i, :n] = r_ids
            labels[i, :n] = r_lab
            tail = width - n
            seg_lens.append(np.concatenate([r_seg, [tail]]) if tail else r_seg)
        seg = np.concatenate(seg_lens).astype(np.int64)
        cu = np.zeros(seg.size + 1, dtype=np.int64)
        np.cumsum(seg, out=cu[1:])
        seg_id = np.repeat(np.arange(seg.size, dtype=np.int64), seg)
        position = np.arange(cu[-1], dtype=np.int64) - cu[:-1][seg_id]
        flat_labels = labels.reshape(-1)
        flat_labels[cu[:-1]] = self.label_ignore_index  # segment starts (and pad tails)
        out: dict[str, Any] = {
            "input_ids": torch.from_numpy(ids),
            "labels": torch.from_numpy(labels),
            "position_ids": torch.from_numpy(
                (position + self.position_ids_start).reshape(b, width)
            ),
        }
        if self.return_flash_attn_kwargs:
            cu32 = torch.from_numpy(cu.astype(np.int32))
            out["cu_seq_lens_q"] = cu32
            out["cu_seq_lens_k"] = cu32
            out["max_length_q"] = out["max_length_k"] = int(seg.max()) if seg.size else 0
        if self.return_seq_idx:
            out["seq_idx"] = torch.from_numpy(seg_id.astype(np.int32).reshape(b, width))
        if self.return_attention_mask:
            out["attention_mask"] = self._mask(torch.from_numpy(seg_id.reshape(b, width)))
        return out

    def _mask(self, seg_id: torch.Tensor) -> torch.Tensor:
        n = seg_id.shape[-1]
        causal = torch.ones((n, n), dtype=torch.bool).tril_()
        allowed = (seg_id[:, :, None] == seg_id[:, None, :]) & causal
        allowed = allowed[:, None]
        if self.mask_dtype == torch.bool:
            return allowed
        if not self.mask_dtype.is_floating_point:
            raise DTypeError(f"mask_dtype: must be torch.bool or floating, got {self.mask_dtype}")
        zero = torch.zeros((), dtype=self.mask_dtype)
        return torch.where(allowed, zero, torch.finfo(self.mask_dtype).min)


class PackedIterableDataset(torch.utils.data.IterableDataset[dict[str, Any]]):
    """A token stream packed per window, split over ranks and DataLoader workers, resumable.

    Yields packed rows in TRL's format (``input_ids``, ``labels``, ``seq_lengths``: NumPy
    int64; batch them with ``DataLoader(ds, batch_size=B, collate_fn=PackedCollator(...))``).
    The stream is shard ``rank * num_workers + worker_id`` of ``world_size * num_workers``
    (see :class:`ordcore.packing.ShardedPackStream` for the windowing, the carry-over
    that gives every shard the same number of rows without losing or repeating a sequence,
    and ``remainder`` at the end of the stream). Every worker reads the whole source (it
    needs every length to plan the shared windows) and builds only its own rows.

    ``state_dict()`` / ``load_state_dict()`` follow ``torch.distributed.checkpoint.Stateful``:
    ``torchdata.stateful_dataloader.StatefulDataLoader`` calls them in each worker (or in the
    main process with ``num_workers=0``), so that ``loader.state_dict()`` taken after N
    batches and loaded into a new loader resumes with batch N + 1 exactly. A state from
    another configuration (settings, rank, world size, worker count) raises
    :class:`ordcore.InvalidArgumentError`. A new ``iter()`` without a loaded state starts the
    stream over (a new epoch).

    Parameters
    ----------
    source : iterable, or callable returning an iterator
        Re-iterable token sequences, or mappings with ``token_column`` (and optionally
        ``labels``), e.g. a ``datasets.IterableDataset`` (not split by node: this class does
        the split; it is read whole in every worker through its ``iter``, not the
        per-worker shards its own iteration yields there).
    max_len : int
    rank, world_size : int, optional
        Data-parallel position; default from ``torch.distributed`` when it is initialized,
        else 0 and 1.
    remainder : {"drop", "pad"}
        End of stream (at most ``world_size * num_workers - 1`` packs): drop them or deal
        them out with label-masked repeats so every rank gets the same count.
    algorithm, buffer_size, overlong, max_seqs_per_pack, seed, token_column,
    label_ignore_index : see :class:`~ordcore.packing.ShardedPackStream`.
    """

    def __init__(
        self,
        source: Iterable[Any] | Callable[[], Iterator[Any]],
        max_len: int,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        remainder: str = "drop",
        algorithm: str = "bfd",
        buffer_size: int = 10_000,
        overlong: str = "split",
        max_seqs_per_pack: int | None = None,
        seed: int = 0,
        token_column: str = "input_ids",
        label_ignore_index: int = -100,
    ) -> None:
        super().__init__()
        if rank is None or world_size is None:
            dist = torch.distributed
            initialized = dist.is_available() and dist.is_initialized()
            rank = (dist.get_rank() if initialized else 0) if rank is None else rank
            world_size = (
                (dist.get_world_size() if initialized else 1) if world_size is None else world_size
            )
        from ordcore.packing._ranks import _validate_rank

        self.rank, self.world_size = _validate_rank(rank, world_size)
        self._kwargs: dict[str, Any] = {
            "algorithm": algorithm,
            "buffer_size": buffer_size,
            "overlong": overlong,
            "max_seqs_per_pack": max_seqs_per_pack,
            "seed": seed,
            "remainder": remainder,
            "token_column": token_column,
            "label_ignore_index": label_ignore_index,
        }
        self.source = source
        self.max_len = max_len
        # Validates every setting now (the worker count is known only when iterating).
        self._stream = self._make_stream(1, 0)
        self._pending: Mapping[str, Any] | None = None

    def _make_stream(self, num_workers: int, worker_id: int) -> ShardedPackStream:
        return ShardedPackStream(
            self.source,
            self.max_len,
            num_shards=self.world_size * num_workers,
            shard=self.rank * num_workers + worker_id,
            **self._kwargs,
        )

    def _worker(self) -> tuple[int, int]:
        info = torch.utils.data.get_worker_info()
        return (1, 0) if info is None else (info.num_workers, info.id)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        num_workers, worker_id = self._worker()
        stream = self._stream
        if stream.num_shards != self.world_size * num_workers or stream.shard != (
            self.rank * num_workers + worker_id
        ):
            stream = self._stream = self._make_stream(num_workers, worker_id)
        if self._pending is not None:
            state, self._pending = self._pending, None
            stream.load_state_dict(state)
        return iter(stream)

    def state_dict(self) -> dict[str, Any]:
        """The position of this worker's stream after its last yielded row."""
        num_workers, worker_id = self._worker()
        return {**self._stream.state_dict(), "rank": self.rank, "world_size": self.world_size,
                "num_workers": num_workers, "worker_id": worker_id}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Loads a state saved by :meth:`state_dict`; the next ``iter()`` resumes from it.

        Raises
        ------
        ordcore.InvalidArgumentError
            The state was saved by another rank, world size, worker count or configuration,
            or is damaged (see :meth:`ordcore.packing.ShardedPackStream.load_state_dict`).
        """
        num_workers, worker_id = self._worker()
        mine = {"rank": self.rank, "world_size": self.world_size, "num_workers": num_workers,
                "worker_id": worker_id}
        if not isinstance(state, Mapping):
            raise InvalidArgumentError("state: expected the mapping state_dict() returned")
        diff = [f"{k}={state.get(k)!r} (this loader has {v!r})" for k, v in mine.items()
                if state.get(k) != v]
        if diff:
            raise InvalidArgumentError(
                "state: was saved with another configuration: " + ", ".join(diff)
            )
        stream = self._make_stream(num_workers, worker_id)
        stream.load_state_dict(state)  # validates now, not at the next iter()
        self._stream = stream
        self._pending = state
