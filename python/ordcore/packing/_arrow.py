"""Packing an Arrow table of token lists (pyarrow and NumPy only; no ``datasets``).

The dataset-independent steps of :func:`ordcore.packing.pack_dataset`, usable per block by a
distributed packer:

* :func:`packed_columns` picks the columns to pack (every list column, in table order);
* :func:`token_lengths` validates the token column and every other packed column and returns the
  per-row token counts a plan is built from;
* :func:`pack_table` turns a table and an ordcore :class:`~ordcore.packing.Plan` into the packed
  table in TRL's format: per column, the plan's slots as value ranges (from offsets) copied
  in plan order by one Rust gather (a ``memcpy`` per slot, no Python loop per row).

The output format (one schema for :func:`ordcore.packing.pack_dataset` and
:func:`ordcore.distributed.pack_dataset`) is one row per pack holding

* TRL's ``pack_dataset(strategy="bfd")`` columns: every packed list column (``input_ids``,
  ``labels``, ``attention_mask``, ...) the concatenation of its segments, and
  ``seq_lengths`` (the token count of each segment, in row order);
* the fields :func:`ordcore.packing.materialize` gives for that one pack
  (``layout="flat"``, ``pad_id`` unused, ``pad_to_multiple_of=1``, positions restarting in
  every segment, fragments included): ``labels`` when the source has none (``input_ids``
  with ``-100`` at every segment's first token; a source ``labels`` column is packed as it
  is, as TRL does), ``position_ids`` (``list<int64>``), ``segment_ids`` (``list<int32>``,
  1..k), ``cu_seqlens`` and ``cu_seqlens_padded`` (``list<int32>``, k + 1 entries, equal
  here), ``max_seqlen`` and ``num_real_tokens`` (int64), ``seq_index`` (``list<int64>``:
  the source row of each segment, counted over the whole dataset);
* the token range of each segment in its source row: ``start``, ``stop``
  (``list<int64>``; ``stop - start == seq_lengths``).

Per packed token that is 12 bytes more than TRL's columns (``position_ids`` and
``segment_ids``; 20 with ``labels`` added), so the rows feed a varlen attention kernel, a
model's ``position_ids`` or :class:`ordcore.packing.torch.PackedCollator` without a
recomputation. Packing from lengths alone (the distributed packer's ``length_column``) gives
the per-segment fields only: :data:`SEGMENT_FIELDS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ordcore.errors import DTypeError, InvalidArgumentError

if TYPE_CHECKING:
    from ordcore.packing._plan import Plan

__all__ = [
    "SEQ_LENGTHS", "SEGMENT_FIELDS", "TOKEN_FIELDS", "LABEL_IGNORE_INDEX", "pack_table",
    "packed_columns", "segment_fields", "token_lengths",
]

#: Name of the column of per-segment token counts in packed output (TRL's name).
SEQ_LENGTHS = "seq_lengths"
#: Per-token fields of :func:`ordcore.packing.materialize` added to every packed row.
TOKEN_FIELDS = ("position_ids", "segment_ids")
#: Per-pack fields (also the whole output when packing from lengths alone, with
#: ``seq_lengths``).
SEGMENT_FIELDS = ("cu_seqlens", "cu_seqlens_padded", "max_seqlen", "num_real_tokens",
                  "seq_index", "start", "stop")
#: Label of every segment's first token in ``labels`` added for a source without them.
LABEL_IGNORE_INDEX = -100
_RESERVED = (SEQ_LENGTHS, *TOKEN_FIELDS, *SEGMENT_FIELDS)

_INT32_MAX = 2**31 - 1


def _is_list(t: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
    )


def packed_columns(schema: pa.Schema, token_column: str) -> list[str]:
    """The columns that packing keeps: every list column, in table order.

    Non-list columns (strings, scalars) hold one value per source row; a packed row mixes
    several source rows, so they have no value there and are left out (TRL 1.16 raises
    ``TypeError`` on them instead; leaving them out spares a ``remove_columns`` step).

    Raises
    ------
    ordcore.InvalidArgumentError
        ``token_column`` is not in ``schema``, or the table already has a ``seq_lengths``
        column (it is packed already).
    ordcore.DTypeError
        ``token_column`` is not a list column.
    """
    names = list(schema.names)
    if not isinstance(token_column, str) or token_column not in names:
        raise InvalidArgumentError(
            f"token_column: the dataset has no column {token_column!r} (columns: "
            f"{', '.join(map(repr, names)) or 'none'})"
        )
    if SEQ_LENGTHS in names:
        raise InvalidArgumentError(
            f"dataset: already has a {SEQ_LENGTHS!r} column (is it packed already?); "
            f"remove it to pack again"
        )
    t = schema.field(token_column).type
    if not _is_list(t):
        hint = ""
        if "tensor" in type(t).__name__.lower():
            # Ray Data stores the NumPy arrays a map_batches function returns this way.
            hint = (
                "; a tensor column comes from NumPy arrays returned by map_batches: return "
                "lists of ids instead (e.g. [a.tolist() for a in arrays])"
            )
        raise DTypeError(
            f"token_column {token_column!r}: must hold a list of integer token ids per row, "
            f"got Arrow type {t}{hint}"
        )
    out = [n for n in names if _is_list(schema.field(n).type)]
    clash = [n for n in out if n in _RESERVED]
    if clash:
        raise InvalidArgumentError(
            f"dataset: has a list column {clash[0]!r}, a name packed rows give a field of "
            f"their own ({', '.join(_RESERVED)}); rename or remove it to pack"
        )
    return out


def _first(mask: npt.NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0])


def token_lengths(
    table: pa.Table, token_column: str, columns: Sequence[str] | None = None
) -> npt.NDArray[np.int64]:
    """Validates the token column and the other packed columns; returns tokens per row.

    Parameters
    ----------
    table : pyarrow.Table
    token_column : str
        Column of token ids: a list of integers per row (``list``, ``large_list`` or
        ``fixed_size_list`` of any integer type).
    columns : sequence of str, optional
        Columns to be packed with it (default: :func:`packed_columns`); each must have, row
        by row, as many values as the token column.

    Returns
    -------
    numpy.ndarray of int64, shape (num_rows,)

    Raises
    ------
    ordcore.InvalidArgumentError
        A missing column, a null row or null token, a packed column whose row lengths differ
        from the token column's (the first such row is named).
    ordcore.DTypeError
        Token rows that are not flat lists of integers (nested lists, floats, strings, bools).
    """
    if columns is None:
        columns = packed_columns(table.schema, token_column)
    elif token_column not in table.column_names:
        packed_columns(table.schema, token_column)  # raises the missing-column error
    col = table.column(token_column)
    vt = col.type.value_type if _is_list(col.type) else None
    if vt is None:
        raise DTypeError(
            f"token_column {token_column!r}: must hold a list of integer token ids per row, "
            f"got Arrow type {col.type}"
        )
    if _is_list(vt):
        raise DTypeError(
            f"token_column {token_column!r}: rows must be flat lists of integer token ids, "
            f"got nested lists ({col.type}); flatten them or pick another column"
        )
    if not (pa.types.is_integer(vt) or pa.types.is_null(vt)):
        raise DTypeError(
            f"token_column {token_column!r}: token ids must be integers, got {vt} "
            f"(Arrow type {col.type})"
        )
    if col.null_count:
        row = _first(np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False)))
        raise InvalidArgumentError(f"token_column {token_column!r}: row {row} is null")
    lengths = _lengths(col)
    if pc.list_flatten(col).null_count:
        flat_null = np.asarray(pc.is_null(pc.list_flatten(col)).to_numpy(zero_copy_only=False))
        pos = _first(flat_null)
        row = int(np.searchsorted(np.cumsum(lengths), pos, side="right"))
        raise InvalidArgumentError(
            f"token_column {token_column!r}: row {row} holds a null token id"
        )
    if pa.types.is_uint64(vt):  # ids must fit int64 (the labels and materialize are int64)
        flat = pc.list_flatten(col)
        if len(flat) and pc.max(flat).as_py() > 2**63 - 1:
            big = pc.greater(flat, pa.scalar(2**63 - 1, pa.uint64()))
            pos = _first(np.asarray(big.to_numpy(zero_copy_only=False)))
            row = int(np.searchsorted(np.cumsum(lengths), pos, side="right"))
            raise InvalidArgumentError(
                f"token_column {token_column!r}: row {row} holds an id beyond int64 (2**63 - 1)"
            )
    for name in columns:
        if name == token_column:
            continue
        if name not in table.column_names:
            raise InvalidArgumentError(f"columns: the dataset has no column {name!r}")
        other = table.column(name)
        if not _is_list(other.type):
            raise DTypeError(f"column {name!r}: only list columns can be packed, got {other.type}")
        olen = np.asarray(
            pc.fill_null(pc.list_value_length(other), -1).to_numpy(zero_copy_only=False),
            dtype=np.int64,
        )
        bad = olen != lengths
        if bad.any():
            row = _first(bad)
            what = "is null" if olen[row] < 0 else f"has {olen[row]} values"
            raise InvalidArgumentError(
                f"column {name!r}: row {row} {what} but {token_column!r} has {lengths[row]} "
                f"tokens; every packed column needs one value per token (drop the column with "
                f"dataset.remove_columns([{name!r}]) if it is not per-token)"
            )
    return lengths


def _lengths(col: pa.ChunkedArray | pa.Array) -> npt.NDArray[np.int64]:
    return np.asarray(
        pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False),
        dtype=np.int64,
    )


def _gather(values: pa.Array, first: npt.NDArray[np.int64],
            lens: npt.NDArray[np.int64]) -> pa.Array:
    """``values[first[i] : first[i] + lens[i]]`` concatenated over ``i``: one ``memcpy`` per
    range in Rust (GIL released) for fixed-width values without nulls, else an Arrow ``take``
    over a token index (booleans are bit-packed, nulls need their bitmap)."""
    from ordcore import _core

    t = values.type
    if values.null_count == 0 and (pa.types.is_integer(t) or pa.types.is_floating(t)):
        width = t.bit_width // 8
        data = np.frombuffer(values.buffers()[1], dtype=np.uint8)
        data = data[values.offset * width : (values.offset + len(values)) * width]
        out = np.empty(int(lens.sum()) * width, dtype=np.uint8)
        _core.packing_gather_ranges(
            np.ascontiguousarray(data), np.ascontiguousarray(first * width),
            np.ascontiguousarray(lens * width), out,
        )
        return pa.Array.from_buffers(t, len(out) // width, [None, pa.py_buffer(out)])
    seg_cum = np.zeros(lens.size + 1, dtype=np.int64)
    np.cumsum(lens, out=seg_cum[1:])
    idx = np.arange(int(seg_cum[-1]), dtype=np.int64)
    idx += np.repeat(first - seg_cum[:-1], lens)
    return pc.take(values, pa.array(idx, type=pa.int64()))


def _out_list_type(t: pa.DataType, total: int) -> pa.DataType:
    """List type of a packed column: the input's kind, ``large_list`` past int32 offsets."""
    if pa.types.is_large_list(t) or total > _INT32_MAX:
        return pa.large_list(t.value_field)
    return pa.list_(t.value_field)


def segment_fields(
    seq_index: npt.NDArray[np.int64], start: npt.NDArray[np.int64],
    stop: npt.NDArray[np.int64], pack_offsets: npt.NDArray[np.int64],
) -> dict[str, pa.Array]:
    """The per-pack fields (:data:`SEGMENT_FIELDS`) of packs whose slots are
    ``pack_offsets[p]:pack_offsets[p + 1]``; ``seq_index`` counts rows over the dataset."""
    seg_len = stop - start
    num_packs = pack_offsets.size - 1
    cum = np.zeros(seg_len.size + 1, dtype=np.int64)
    np.cumsum(seg_len, out=cum[1:])
    # cu_seqlens of pack p: its segments' running sum from 0 (k + 1 entries)
    pack_of = np.repeat(np.arange(num_packs), np.diff(pack_offsets))
    cu_off = pack_offsets + np.arange(num_packs + 1)
    cu = np.zeros(seg_len.size + num_packs, dtype=np.int64)
    ends = cum[1:] - cum[pack_offsets[:-1]][pack_of]
    cu[np.arange(seg_len.size) + pack_of + 1] = ends
    if np.any(cu > _INT32_MAX):
        raise InvalidArgumentError("plan: a pack holds more tokens than int32 cu_seqlens index")
    cu_arr = pa.ListArray.from_arrays(pa.array(cu_off, type=pa.int32()),
                                      pa.array(cu, type=pa.int32()))
    total = np.add.reduceat(seg_len, pack_offsets[:-1]) if seg_len.size else np.zeros(
        num_packs, np.int64)
    longest = np.maximum.reduceat(seg_len, pack_offsets[:-1]) if seg_len.size else np.zeros(
        num_packs, np.int64)
    off = pa.array(pack_offsets, type=pa.int32())

    def lists(v: npt.NDArray[np.int64]) -> pa.Array:
        return pa.ListArray.from_arrays(off, pa.array(v, type=pa.int64()))

    return {
        "cu_seqlens": cu_arr,
        "cu_seqlens_padded": cu_arr,
        "max_seqlen": pa.array(longest, type=pa.int64()),
        "num_real_tokens": pa.array(total, type=pa.int64()),
        "seq_index": lists(seq_index),
        "start": lists(start),
        "stop": lists(stop),
    }


def pack_table(table: pa.Table, plan: Plan, columns: Sequence[str],
               row_index: npt.NDArray[np.int64] | None = None,
               token_column: str | None = None) -> pa.Table:
    """Builds the packed table for ``plan`` (the module's format: TRL's columns and the
    fields of :func:`ordcore.packing.materialize`).

    Row ``p`` of the output holds the segments of pack ``p`` in plan order: for every column
    in ``columns`` the concatenation of ``values[seq][start:stop]`` over the pack's slots, and
    ``seq_lengths`` the list of ``stop - start``. Columns keep their value types (``list``
    stays ``list``, ``large_list`` stays ``large_list``, ``fixed_size_list`` becomes ``list``;
    ``list`` becomes ``large_list`` only past 2**31 - 1 values). ``seq_lengths`` is
    ``list<int32>`` (``list<int64>`` when the first packed column is a ``large_list``), as
    TRL's (which takes the lengths of its first column).

    Parameters
    ----------
    table : pyarrow.Table
        Source rows; row ``i`` is sequence ``i`` of the plan (``len(table) ==
        plan.lengths.size``), with the row lengths :func:`token_lengths` validated.
    plan : ordcore.packing.Plan
    columns : sequence of str
        Columns to pack (all with the plan's row lengths); the first decides the type of
        ``seq_lengths``.
    token_column : str, optional
        The token column among ``columns`` (default: the first); ``labels`` are derived
        from it when ``columns`` has none.
    row_index : numpy.ndarray of int64, shape (len(table),), optional
        Dataset row of each table row, for ``seq_index`` (default: the table's rows are the
        dataset's, from 0).

    Returns
    -------
    pyarrow.Table
        ``plan.num_packs`` rows, columns ``[*columns, "seq_lengths", ("labels",)
        *TOKEN_FIELDS, *SEGMENT_FIELDS]``.

    Raises
    ------
    ordcore.InvalidArgumentError
        ``table`` does not have the plan's number of rows, or no column is given.
    """
    if table.num_rows != plan.lengths.size:
        raise InvalidArgumentError(
            f"table: has {table.num_rows} rows but the plan was built for {plan.lengths.size}"
        )
    if not columns:
        raise InvalidArgumentError("columns: at least one column must be packed")
    seg_len = plan.stop - plan.start
    pack_off = plan.pack_offsets
    seg_cum = np.zeros(seg_len.size + 1, dtype=np.int64)
    np.cumsum(seg_len, out=seg_cum[1:])
    tok_off = seg_cum[pack_off]  # token offsets of the packs
    total = int(tok_off[-1])
    row_start = np.zeros(plan.lengths.size + 1, dtype=np.int64)
    np.cumsum(plan.lengths, out=row_start[1:])
    n_values = int(row_start[-1])
    # Every slot is the value range [first, first + len) of the flattened column.
    first = row_start[:-1][plan.seq_index] + plan.start
    out_types = {n: _out_list_type(table.schema.field(n).type, total) for n in columns}
    arrays = []
    for name in columns:
        values = pc.list_flatten(table.column(name))
        values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        if len(values) != n_values:
            raise InvalidArgumentError(
                f"column {name!r}: holds {len(values)} values, the plan's lengths sum to "
                f"{n_values}"
            )
        otype = out_types[name]
        off_type = pa.int64() if pa.types.is_large_list(otype) else pa.int32()
        out_cls: Any = pa.LargeListArray if pa.types.is_large_list(otype) else pa.ListArray
        arrays.append(out_cls.from_arrays(pa.array(tok_off, type=off_type),
                                          _gather(values, first, seg_len), type=otype))
    len_type = (
        pa.int64() if pa.types.is_large_list(table.schema.field(columns[0]).type) else pa.int32()
    )
    arrays.append(pa.ListArray.from_arrays(pa.array(pack_off, type=pa.int32()),
                                           pa.array(seg_len, type=len_type)))
    names = [*columns, SEQ_LENGTHS]
    # materialize's per-token fields, over the same token offsets
    tok_type = pa.large_list if total > _INT32_MAX else pa.list_
    tok_cls: Any = pa.LargeListArray if total > _INT32_MAX else pa.ListArray
    off_arr = pa.array(tok_off, type=pa.int64() if total > _INT32_MAX else pa.int32())
    seg_start = np.repeat(seg_cum[:-1], seg_len)
    if "labels" not in columns:
        ids = arrays[list(columns).index(token_column or columns[0])].flatten()
        labels = np.asarray(ids.to_numpy(zero_copy_only=False), dtype=np.int64).copy()
        labels[seg_cum[:-1][seg_len > 0]] = LABEL_IGNORE_INDEX
        arrays.append(tok_cls.from_arrays(off_arr, pa.array(labels, type=pa.int64()),
                                          type=tok_type(pa.int64())))
        names.append("labels")
    position = np.arange(total, dtype=np.int64) - seg_start
    pack_of_slot = np.repeat(np.arange(plan.num_packs), np.diff(pack_off))
    seg_no = (np.arange(seg_len.size) - pack_off[:-1][pack_of_slot] + 1).astype(np.int32)
    arrays.append(tok_cls.from_arrays(off_arr, pa.array(position, type=pa.int64()),
                                      type=tok_type(pa.int64())))
    arrays.append(tok_cls.from_arrays(off_arr, pa.array(np.repeat(seg_no, seg_len),
                                                        type=pa.int32()),
                                      type=tok_type(pa.int32())))
    names += list(TOKEN_FIELDS)
    rows = plan.seq_index if row_index is None else np.asarray(row_index)[plan.seq_index]
    fields = segment_fields(np.asarray(rows, dtype=np.int64), plan.start, plan.stop, pack_off)
    arrays += [fields[n] for n in SEGMENT_FIELDS]
    names += list(SEGMENT_FIELDS)
    return pa.Table.from_arrays(arrays, names=names)
