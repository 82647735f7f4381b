"""``pack_dataset`` for ``ray.data.Dataset``: one plan over the whole dataset, or one per
block, with the rows built by the same Arrow code as :func:`ordcore.packing.pack_dataset`.

How the work is split (``scope="global"``; tokens move once, from their source block to the
block that builds their pack):

1. one task per source block validates it and returns its token lengths (item-wise
   algorithms ``bfd``, ``ffd``, ``nf``: 8 bytes a sequence reach the driver) or its
   histogram of planned sizes (``lpfhp``, ``spfhp``, ``nnlshp``: ``max_len`` counts a block,
   no length leaves it; with ``overlong="split"`` the sizes are those of the block's
   fragments, cut in the block exactly as :func:`ordcore.packing.pack` cuts them);
2. the driver plans once. For the histogram algorithms the plan is made on the histogram
   alone: :func:`ordcore.packing.pack` groups items by size (stably, in input order) and
   shuffles each group by a generator keyed by ``(seed, size)``, so a sequence's (or
   fragment's: a split sequence's fragments are consecutive items) slot depends only on its
   size and its rank among the items of that size. Each block receives its per-size offsets
   (items of that size in earlier blocks) and places its own rows;
3. each source block cuts its rows into one part per output block (a range of packs), and
   each output block concatenates its parts and builds its rows with
   ``ordcore.packing._arrow.pack_table`` over a sub-plan. The packs equal
   ``ordcore.packing.pack`` on the whole dataset's lengths, in order.

``scope="block"`` packs each block on its own (no data moves between blocks); blocks too small
to pack well are merged with their neighbours first (see ``MIN_PACKS_PER_BLOCK``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ordcore.distributed._ray import get, require_cluster
from ordcore.errors import InvalidArgumentError

__all__ = ["pack_dataset", "split_ranks", "MIN_PACKS_PER_BLOCK", "HISTOGRAM_ALGORITHMS"]

#: Algorithms planned from per-block histograms under ``scope="global"``.
HISTOGRAM_ALGORITHMS = ("lpfhp", "spfhp", "nnlshp")
#: ``scope="block"`` merges consecutive blocks until each is expected to fill at least this
#: many packs: on the 16.3M Wikipedia lengths of Krell et al., best fit per block costs 0.05 %
#: (one block) to 0.10 % (4,096 blocks) over the lower bound, but below about 100 packs a
#: block the loss grows to several percent (a block's last, part-filled packs weigh more).
MIN_PACKS_PER_BLOCK = 100
#: CPUs each packing task reserves (room for shard actors or other work on small clusters).
TASK_CPUS = 0.5
SCOPES = ("global", "block")


def pack_dataset(
    dataset: Any,
    max_len: int,
    *,
    algorithm: str = "bfd",
    overlong: str = "truncate",
    token_column: str = "input_ids",
    max_seqs_per_pack: int | None = None,
    seed: int = 0,
    scope: str = "global",
    length_column: str | None = None,
) -> Any:
    """Packs a ``ray.data.Dataset`` of tokenized rows into rows of at most ``max_len``
    tokens.

    Same parameters, defaults and output schema as :func:`ordcore.packing.pack_dataset`
    (TRL's packed columns: every list column concatenated per pack, plus ``seq_lengths``;
    and per pack what :func:`ordcore.packing.materialize` gives for it: ``position_ids``,
    ``segment_ids``, ``cu_seqlens``, ``cu_seqlens_padded``, ``max_seqlen``,
    ``num_real_tokens``, ``seq_index`` counted over the whole dataset, ``labels`` when the
    source has none; and each segment's ``start`` / ``stop`` in its row: see
    :mod:`ordcore.packing._arrow`), so :class:`ordcore.packing.torch.PackedCollator` takes
    its rows; plus:

    Parameters
    ----------
    scope : {"global", "block"}
        ``"global"``: one plan over the whole dataset, identical to
        :func:`ordcore.packing.pack` on its lengths in dataset order (module docs for how no
        tokens reach the driver). ``"block"``: each block packed on its own (no shuffle),
        blocks expected to fill fewer than ``MIN_PACKS_PER_BLOCK`` packs merged with their
        successors first.
    length_column : str, optional
        Pack from lengths alone: an integer column of token counts (no token column is
        read). Each output row then says which sequences and token ranges the pack holds,
        with the per-pack fields of the schema: ``seq_lengths`` and
        :data:`ordcore.packing._arrow.SEGMENT_FIELDS` (``cu_seqlens``,
        ``cu_seqlens_padded``, ``max_seqlen``, ``num_real_tokens``, ``seq_index`` counting
        rows in dataset order, ``start``, ``stop``).

    Returns
    -------
    ray.data.Dataset
        One row per pack, in plan order (block order for ``scope="block"``), materialized.
        An empty dataset (or one of empty rows) gives 0 rows with the packed columns, with
        either ``scope``; an empty dataset without a schema (``ray.data.from_items([])``)
        is taken as an empty ``list<int64>`` ``token_column``.

    Raises
    ------
    ordcore.InvalidArgumentError
        As :func:`ordcore.packing.pack_dataset`, an unknown ``scope``, a missing
        ``length_column``, negative lengths.
    ordcore.ClusterError
        Ray is not initialised.
    """
    from ordcore.packing import ALGORITHMS
    from ordcore.packing._plan import _check_choice, _check_int
    from ordcore.packing._hf import check_overlong

    ray = require_cluster()
    max_len = _check_int("max_len", max_len, 1)
    _check_choice("algorithm", algorithm, ALGORITHMS)
    check_overlong(overlong)
    _check_choice("scope", scope, SCOPES)
    if max_seqs_per_pack is not None:
        _check_int("max_seqs_per_pack", max_seqs_per_pack, 1)
    _check_int("seed", seed, 0)
    if not hasattr(dataset, "to_arrow_refs"):
        from ordcore.errors import DTypeError

        raise DTypeError(f"dataset: expected a ray.data.Dataset, got {type(dataset).__name__}")
    col = length_column if length_column is not None else token_column
    schema = dataset.schema()
    if schema is None:  # an empty dataset without columns (ray.data.from_items([]))
        if int(dataset.count()):
            raise InvalidArgumentError("dataset: has rows but no schema (no columns)")
        import pyarrow as pa
        import ray.data

        kind = pa.int64() if length_column is not None else pa.list_(pa.int64())
        dataset = ray.data.from_arrow(pa.table({col: pa.array([], kind)}))
        schema = dataset.schema()
    names = list(schema.names)
    if col not in names:
        arg = "length_column" if length_column is not None else "token_column"
        raise InvalidArgumentError(
            f"{arg}: the dataset has no column {col!r} (columns: {', '.join(map(repr, names))})"
        )
    kw: dict[str, Any] = {
        "algorithm": algorithm,
        "overlong": overlong,
        "token_column": col,
        "max_seqs_per_pack": max_seqs_per_pack,
        "seed": seed,
    }
    if length_column is not None:
        dataset = dataset.select_columns([length_column])
    blocks = list(dataset.to_arrow_refs())
    task = ray.remote(num_cpus=TASK_CPUS)
    rows = _in_order([task(_num_rows).remote(b) for b in blocks])
    # blocks a filter emptied carry no columns: drop them, keeping one typed empty block
    blocks = [b for b, n in zip(blocks, rows) if n] or [ray.put(_empty_table(dataset))]
    if scope == "block":
        refs = _pack_blocks(task, blocks, max_len, length_column, kw)
    else:
        refs = _pack_global(ray, task, blocks, max_len, length_column, kw)
    import ray.data

    return ray.data.from_arrow_refs(refs)


def _empty_table(dataset: Any) -> Any:
    """An empty table with the dataset's columns (what an emptied dataset packs from)."""
    import pyarrow as pa

    schema = dataset.schema()
    base = getattr(schema, "base_schema", schema)
    if not isinstance(base, pa.Schema):
        base = pa.schema(list(zip(schema.names, schema.types)))
    return base.empty_table()


# -- tasks (one per block) --------------------------------------------------------------
def _lengths_of(table: Any, token_column: str, length_column: str | None) -> Any:
    """Token count per row: the length column, or the validated token column."""
    from ordcore.packing import _arrow
    from ordcore.packing._plan import _as_lengths

    if length_column is None:
        return _arrow.token_lengths(table, token_column)
    c = table.column(length_column)
    if c.null_count:
        raise InvalidArgumentError(f"length_column {length_column!r}: holds nulls")
    lengths = _as_lengths(c.to_numpy())
    if lengths.size and int(lengths.min()) < 0:
        row = int(np.argmax(lengths < 0))
        raise InvalidArgumentError(
            f"length_column {length_column!r}: holds a negative length ({int(lengths[row])})"
        )
    return lengths


def _scan(table: Any, column: str, length_column: str | None, max_len: int, overlong: str,
          mode: str, block: int) -> Any:
    """What the driver plans from: ``lengths``; the ``histogram`` of planned sizes (index
    ``s``: sequences of ``min(len, max_len)`` tokens, empty ones not counted); or ``tokens``
    (rows and planned tokens, for grouping blocks)."""
    lengths = _lengths_of(table, column, length_column)
    if mode == "lengths":
        return lengths
    if mode == "tokens":
        return int(lengths.size), int(np.minimum(lengths, max_len).sum())
    if overlong == "error" and lengths.size and int(lengths.max()) > max_len:
        row = int(np.argmax(lengths > max_len))
        raise InvalidArgumentError(
            f"{column!r}: row {row} of block {block} has {int(lengths[row])} tokens, more than "
            f"max_len={max_len}; pass overlong='truncate' or overlong='split'"
        )
    _, start, stop, _ = _items(lengths, max_len, overlong)
    return np.bincount(stop - start, minlength=max_len + 1), int(lengths.size)


def _items(lengths: Any, max_len: int, overlong: str) -> tuple[Any, Any, Any, Any]:
    """The items :func:`ordcore.packing.pack` plans from ``lengths``, in its order: per
    item its row, token range and fragment flag. Empty rows have none; an overlong row is
    cut into ``ceil(len / max_len)`` consecutive fragments (``"split"``) or keeps its first
    ``max_len`` tokens."""
    if overlong != "split":
        row = np.flatnonzero(lengths > 0)
        stop = np.minimum(lengths[row], max_len)
        return row, np.zeros_like(stop), stop, np.zeros(row.size, dtype=bool)
    count = -(-lengths // max_len)  # 0 for empty rows
    row = np.repeat(np.arange(lengths.size), count)
    piece = np.arange(row.size) - np.repeat(np.cumsum(count) - count, count)
    start = piece * max_len
    stop = np.minimum(start + max_len, lengths[row])
    return row, start, stop, lengths[row] > max_len


def _length_table(plan: Any, row0: int) -> Any:
    """Packed rows from lengths alone: the per-pack fields of the packed-row schema (which
    sequences, as dataset rows, and which token ranges each pack holds)."""
    import pyarrow as pa

    from ordcore.packing._arrow import SEGMENT_FIELDS, SEQ_LENGTHS, segment_fields

    off = pa.array(plan.pack_offsets, type=pa.int32())
    fields = segment_fields(plan.seq_index + row0, plan.start, plan.stop, plan.pack_offsets)
    seq_lengths = pa.ListArray.from_arrays(off, pa.array(plan.stop - plan.start, pa.int32()))
    return pa.table({SEQ_LENGTHS: seq_lengths, **{n: fields[n] for n in SEGMENT_FIELDS}})


def _pack_group(row0: int, max_len: int, length_column: str | None, kw: dict[str, Any],
                *tables: Any) -> Any:
    """``scope="block"``: consecutive blocks concatenated, planned and packed on their own."""
    import pyarrow as pa

    from ordcore.packing import _arrow
    from ordcore.packing._hf import plan_for_lengths

    # promote: a block of only empty rows has list<null> columns
    table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
    lengths = _lengths_of(table, kw["token_column"], length_column)
    plan = plan_for_lengths(lengths, max_len, row_offset=row0, **kw)
    if length_column is not None:
        return _length_table(plan, row0)
    col = kw["token_column"]
    return _arrow.pack_table(table, plan, _arrow.packed_columns(table.schema, col),
                             row_index=row0 + np.arange(table.num_rows, dtype=np.int64),
                             token_column=col)


def _cut(table: Any, row0: int, row: Any, pack: Any, pos: Any, start: Any, stop: Any,
         fragment: Any, bounds: Any) -> Any:
    """A block's slots and the rows they read, cut into one part per output block (output
    block ``j`` builds packs ``bounds[j]:bounds[j + 1]``); each part also carries the
    dataset row (``row0 +`` block row) of every row it takes."""
    which = np.searchsorted(bounds, pack, side="right") - 1
    parts = []
    for j in range(len(bounds) - 1):
        sel = np.flatnonzero(which == j)
        rows = np.unique(row[sel])
        sub = table.take(rows) if rows.size else table.slice(0, 0)
        parts.append((sub, np.searchsorted(rows, row[sel]), pack[sel], pos[sel],
                      start[sel], stop[sel], fragment[sel], rows + row0))
    return parts if len(parts) > 1 else parts[0]


def _route_slots(table: Any, row0: int, slots: Any, bounds: Any) -> Any:
    """Item-wise plans: the driver sent this block's slots ``(row, pack, pos, start, stop,
    fragment)``."""
    row, pack, pos, start, stop, fragment = slots
    return _cut(table, row0, row, pack, pos, start, stop, fragment, bounds)


def _route_histogram(table: Any, row0: int, column: str, max_len: int, overlong: str,
                     first: Any, slot_of: Any, pack_offsets: Any, bounds: Any) -> Any:
    """Histogram plans: the block places its own rows. An item (a sequence, or a fragment
    of a split one) of planned size ``l`` and rank ``r`` among the dataset's items of that
    size takes the slot of canonical item ``first[l] + r``; ``first`` already counts the
    items of earlier blocks."""
    row, start, stop, fragment = _items(_lengths_of(table, column, None), max_len, overlong)
    l = stop - start
    order = np.argsort(l, kind="stable")
    sorted_l = l[order]
    rank = np.empty(row.size, dtype=np.int64)
    rank[order] = np.arange(row.size) - np.searchsorted(sorted_l, sorted_l, side="left")
    slot = slot_of[first[l] + rank]
    pack = np.searchsorted(pack_offsets, slot, side="right") - 1
    pos = slot - pack_offsets[pack]
    return _cut(table, row0, row, pack, pos, start, stop, fragment, bounds)


def _build(p0: int, max_len: int, column: str, *parts: Any) -> Any:
    """Output block: packs ``p0, p0 + 1, ...`` from the parts every source block sent, with
    the packed-table builder of :func:`ordcore.packing.pack_dataset` over a sub-plan."""
    import pyarrow as pa

    from ordcore.packing import _arrow, Plan

    tables = [p[0] for p in parts]
    base = np.cumsum([0] + [t.num_rows for t in tables])
    row = np.concatenate([p[1] + b for p, b in zip(parts, base)])
    pack, pos, start, stop, fragment, dataset_row = (
        np.concatenate([p[i] for p in parts]) for i in range(2, 8))
    # promote: a block of only empty rows has list<null> columns
    table = pa.concat_tables(tables, promote_options="default")
    order = np.lexsort((pos, pack))
    offsets = np.zeros(int(pack.max()) - p0 + 2 if pack.size else 1, dtype=np.int64)
    np.cumsum(np.bincount(pack - p0), out=offsets[1:])
    lengths = _arrow.token_lengths(table, column)
    plan = Plan.from_dict({
        "pack_offsets": offsets,
        "seq_index": row[order],
        "start": start[order],
        "stop": stop[order],
        "fragment": fragment[order],
        "lengths": lengths,
        "max_len": np.int64(max_len),
        "pad_to_multiple_of": np.int64(1),
    })
    return _arrow.pack_table(table, plan, _arrow.packed_columns(table.schema, column),
                             row_index=dataset_row, token_column=column)


# -- drivers ---------------------------------------------------------------------------
def _in_order(refs: list[Any]) -> list[Any]:
    """Results in block order; an error is the first failing block's (deterministic)."""
    return [get(r) for r in refs]


def _pack_blocks(task: Any, blocks: list[Any], max_len: int, length_column: str | None,
                 kw: dict[str, Any]) -> list[Any]:
    scan = task(_scan)
    col = kw["token_column"]
    sizes = _in_order([scan.remote(b, col, length_column, max_len, kw["overlong"], "tokens", i)
                       for i, b in enumerate(blocks)])
    need = MIN_PACKS_PER_BLOCK * max_len
    groups: list[list[int]] = [[]]
    filled = 0
    for i, (_, tokens) in enumerate(sizes):
        groups[-1].append(i)
        filled += tokens
        if filled >= need:
            groups.append([])
            filled = 0
    if not groups[-1]:
        groups.pop()
    elif len(groups) > 1:
        tail = groups.pop()  # too small to pack well: it joins the group before
        groups[-1] += tail
    row0 = np.concatenate([[0], np.cumsum([n for n, _ in sizes])]).astype(np.int64)
    group = task(_pack_group)
    return [group.remote(int(row0[g[0]]), max_len, length_column, kw, *[blocks[i] for i in g])
            for g in groups]


def _output_bounds(num_packs: int, num_blocks: int) -> npt.NDArray[np.int64]:
    m = max(1, min(num_blocks, num_packs))
    return (np.arange(m + 1, dtype=np.int64) * num_packs) // m


def _pack_global(ray: Any, task: Any, blocks: list[Any], max_len: int,
                 length_column: str | None, kw: dict[str, Any]) -> list[Any]:
    from ordcore.packing._hf import plan_for_lengths

    col = kw["token_column"]
    histogram = length_column is None and kw["algorithm"] in HISTOGRAM_ALGORITHMS
    mode = "histogram" if histogram else "lengths"
    scan = task(_scan)
    res = _in_order([scan.remote(b, col, length_column, max_len, kw["overlong"], mode, i)
                     for i, b in enumerate(blocks)])
    if not histogram:
        lengths = np.concatenate(res) if res else np.zeros(0, np.int64)
        plan = plan_for_lengths(lengths, max_len, **kw)
        if length_column is not None:
            return [ray.put(_length_table(plan, 0))]
        counts = [len(r) for r in res]
    else:
        hists = np.stack([h for h, _ in res])
        counts = [n for _, n in res]
        total = hists.sum(axis=0)
        canonical = np.repeat(np.arange(max_len + 1, dtype=np.int64), total)
        plan = plan_for_lengths(canonical, max_len, **kw)
    if plan.num_packs == 0:  # no tokens: one empty block with the packed columns
        return _pack_blocks(task, blocks[:1], max_len, length_column, kw)
    row0 = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    bounds = _output_bounds(plan.num_packs, len(blocks))
    m = len(bounds) - 1
    slot = np.arange(plan.seq_index.size, dtype=np.int64)
    pack_of = np.searchsorted(plan.pack_offsets, slot, side="right") - 1
    cut_opts = {"num_returns": m}
    if histogram:
        # canonical item c (sorted by size) -> its slot; per block, where its sizes start
        slot_of = np.empty_like(slot)
        slot_of[plan.seq_index] = slot
        first = np.concatenate([[0], np.cumsum(total)[:-1]]).astype(np.int64)
        before = np.cumsum(hists, axis=0) - hists
        slot_ref, off_ref = ray.put(slot_of), ray.put(plan.pack_offsets)
        route = task(_route_histogram).options(**cut_opts)
        parts = [route.remote(b, int(row0[i]), col, max_len, kw["overlong"], first + before[i],
                              slot_ref, off_ref, bounds)
                 for i, b in enumerate(blocks)]
    else:
        by_seq = np.argsort(plan.seq_index, kind="stable")
        cuts = np.searchsorted(plan.seq_index[by_seq], row0)
        route = task(_route_slots).options(**cut_opts)
        parts = []
        for i, b in enumerate(blocks):
            s = by_seq[cuts[i]:cuts[i + 1]]
            p = pack_of[s]
            slots = (plan.seq_index[s] - row0[i], p, s - plan.pack_offsets[p],
                     plan.start[s], plan.stop[s], plan.fragment[s])
            parts.append(route.remote(b, int(row0[i]), slots, bounds))
    if m == 1:
        parts = [[p] for p in parts]
    build = task(_build)
    return [build.remote(int(bounds[j]), max_len, col, *[p[j] for p in parts]) for j in range(m)
            if bounds[j + 1] > bounds[j]]


# -- ranks -----------------------------------------------------------------------------
def _take(table: Any, rows: Any, padded: Any) -> Any:
    out = table.take(rows)
    return out if padded is None else out.append_column("padded", _bool_array(padded))


def _bool_array(v: Any) -> Any:
    import pyarrow as pa

    return pa.array(np.asarray(v, dtype=bool))


def _num_rows(table: Any) -> int:
    return int(table.num_rows)


def split_ranks(packed: Any, world_size: int, *, remainder: str = "drop") -> tuple[list[Any], Any]:
    """Splits packed rows into ``world_size`` datasets with equal row counts, one per
    data-parallel rank, with :func:`ordcore.packing.equalize_ranks` (the rule the streaming
    packer's rank split uses: rank ``r`` takes rows ``r, r + world_size, ...``).

    Returns
    -------
    (list of ray.data.Dataset, ordcore.packing.RankSplit)
        The per-rank datasets and the split, which reports ``num_dropped`` (the last rows,
        on no rank) or ``num_padded`` (rows repeated from the start; with
        ``remainder="pad"`` every row carries a bool ``padded`` column to mask them out of
        the loss).

    Raises
    ------
    ordcore.DTypeError
        ``packed`` is not a ``ray.data.Dataset``.
    ordcore.InvalidArgumentError
        A bad ``world_size`` or ``remainder``.
    """
    from ordcore.packing import equalize_ranks

    ray = require_cluster()
    if not hasattr(packed, "to_arrow_refs"):
        from ordcore.errors import DTypeError

        raise DTypeError(f"packed: expected a ray.data.Dataset, got {type(packed).__name__}")
    blocks = list(packed.to_arrow_refs())
    count = ray.remote(num_cpus=TASK_CPUS)(_num_rows)
    sizes = _in_order([count.remote(b) for b in blocks])
    row0 = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    split = equalize_ranks(int(row0[-1]), world_size, remainder=remainder)
    take = ray.remote(num_cpus=TASK_CPUS)(_take)
    import ray.data

    out = []
    for idx, pad in zip(split.indices, split.padded):
        blk = np.searchsorted(row0, idx, side="right") - 1
        runs = np.flatnonzero(np.diff(blk)) + 1
        refs = [
            take.remote(blocks[int(blk[a])], idx[a:b] - row0[blk[a]],
                        pad[a:b] if remainder == "pad" else None)
            for a, b in zip(np.concatenate([[0], runs]), np.concatenate([runs, [idx.size]]))
            if b > a
        ]
        out.append(ray.data.from_arrow_refs(refs) if refs else packed.limit(0))
    return out, split
