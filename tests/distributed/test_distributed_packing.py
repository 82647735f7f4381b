"""ordcore.distributed.pack_dataset and split_ranks on a real local Ray cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ordcore
from ordcore.packing import _arrow, equalize_ranks, pack
from ordcore.packing._hf import plan_for_lengths

pa = pytest.importorskip("pyarrow")
pytestmark = pytest.mark.usefixtures("ray_cluster")


def _table(lengths: Any) -> Any:
    """Token ids that name their sequence and position (``seq * 1000 + pos``), a labels
    column packed alongside (``-id``), and a string column packing leaves out."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    seq = np.repeat(np.arange(lengths.size), lengths)
    tok = seq * 1000 + (np.arange(offsets[-1]) - offsets[seq])
    lists = lambda v: pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(v))  # noqa: E731
    return pa.table({
        "input_ids": lists(tok),
        "labels": lists(-tok),
        "text": pa.array([f"s{i}" for i in range(lengths.size)]),
        "n": pa.array(lengths),
    })


def _dataset(table: Any, blocks: int) -> Any:
    import ray.data

    cuts = np.linspace(0, table.num_rows, blocks + 1).astype(int)
    return ray.data.from_arrow([table.slice(a, b - a) for a, b in zip(cuts[:-1], cuts[1:])])


def _collect(ds: Any) -> Any:
    import ray

    return pa.concat_tables(ray.get(list(ds.to_arrow_refs())))


@pytest.fixture(scope="module")
def fortunes(shared_data: Path) -> Any:
    return np.load(shared_data / "packing" / "doclens_cl100k_fortunes.npy")


#: The packed-row schema shared with ordcore.packing.pack_dataset (TRL's columns first).
SCHEMA = ["input_ids", "labels", "seq_lengths", *_arrow.TOKEN_FIELDS, *_arrow.SEGMENT_FIELDS]


@pytest.mark.parametrize(
    ("algorithm", "overlong", "max_len"),
    [("bfd", "truncate", 256), ("lpfhp", "truncate", 256), ("spfhp", "truncate", 512),
     ("bfd", "split", 64), ("lpfhp", "split", 64), ("nnlshp", "split", 128)],
)
def test_global_scope_equals_one_plan(fortunes: Any, algorithm: str, overlong: str,
                                      max_len: int, monkeypatch: Any) -> None:
    from ordcore.distributed import pack_dataset
    from ordcore.packing import _hf

    lengths = fortunes[:8000].copy()
    lengths[::97] = 0  # empty rows are left out, as by the single-process packer
    table = _table(lengths)
    planned: list[Any] = []
    real = _hf.plan_for_lengths

    def spy(lens: Any, *a: Any, **k: Any) -> Any:
        planned.append(np.array(lens))
        return real(lens, *a, **k)

    monkeypatch.setattr(_hf, "plan_for_lengths", spy)
    out = _collect(pack_dataset(_dataset(table, 5), max_len, algorithm=algorithm,
                                overlong=overlong, seed=7))
    plan = pack(lengths, max_len, algorithm=algorithm, overlong=overlong, allow_empty=True,
                seed=7)
    assert out.num_rows == plan.num_packs
    assert out.column_names == SCHEMA
    # the same packs, segments in the same order, holding the same tokens; every field as
    # the single-process builder makes it (one schema for both)
    seg = np.concatenate(out.column("seq_lengths").to_pylist())
    np.testing.assert_array_equal(seg, plan.stop - plan.start)
    want = _arrow.pack_table(table, plan, ["input_ids", "labels"])
    assert want.column_names == SCHEMA
    for name in SCHEMA:
        assert out.column(name).to_pylist() == want.column(name).to_pylist(), name
    # what the driver planned from: the histogram algorithms (split ones too) never see a
    # length, only the per-size counts of the items (sizes in canonical, sorted order)
    assert len(planned) == 1
    if algorithm in ("lpfhp", "spfhp", "nnlshp"):
        assert np.all(np.diff(planned[0]) >= 0) and planned[0].size == plan.seq_index.size
        assert planned[0].max() <= max_len
    else:
        np.testing.assert_array_equal(planned[0], lengths)


def test_global_scope_from_lengths_alone(fortunes: Any) -> None:
    import ray.data

    from ordcore.distributed import pack_dataset

    ds = ray.data.from_arrow([pa.table({"n": pa.array(fortunes[i:i + 4000])})
                              for i in range(0, fortunes.size, 4000)])
    for algorithm in ("bfd", "lpfhp"):
        out = _collect(pack_dataset(ds, 256, algorithm=algorithm, length_column="n"))
        plan = pack(fortunes, 256, algorithm=algorithm, overlong="truncate", allow_empty=True)
        assert out.num_rows == plan.num_packs
        flat = lambda c: np.concatenate(out.column(c).to_pylist())  # noqa: E731
        assert out.column_names == ["seq_lengths", *_arrow.SEGMENT_FIELDS]
        np.testing.assert_array_equal(flat("seq_index"), plan.seq_index)
        np.testing.assert_array_equal(flat("start"), plan.start)
        np.testing.assert_array_equal(flat("stop"), plan.stop)
        np.testing.assert_array_equal(flat("seq_lengths"), plan.stop - plan.start)
        # the per-pack fields materialize gives (it needs tokens; any of the right lengths)
        from ordcore.packing import materialize

        toks = (np.zeros(int(fortunes.sum()), np.int64),
                np.concatenate([[0], np.cumsum(fortunes)]))
        for p in (0, plan.num_packs // 2, plan.num_packs - 1):
            b = materialize(plan, toks, pad_id=0, layout="flat", rows=[p])
            assert out.column("cu_seqlens")[p].as_py() == b.cu_seqlens.tolist()
            assert out.column("max_seqlen")[p].as_py() == b.max_seqlen
            assert out.column("num_real_tokens")[p].as_py() == b.num_real_tokens


def test_block_scope_packs_each_block_within_the_documented_loss(fortunes: Any) -> None:
    from ordcore.distributed import pack_dataset
    from ordcore.distributed.packing import MIN_PACKS_PER_BLOCK

    table = _table(fortunes)
    max_len = 256
    one = pack(fortunes, max_len, algorithm="bfd", overlong="truncate")
    for blocks in (4, 60):  # 60 blocks of ~250 rows fill ~40 packs each: merged first
        out = _collect(pack_dataset(_dataset(table, blocks), max_len, scope="block"))
        ids = np.concatenate(out.column("input_ids").to_pylist())
        # every token at most max_len per row, every kept token exactly once
        assert max(map(sum, out.column("seq_lengths").to_pylist())) <= max_len
        kept = np.minimum(fortunes, max_len).sum()
        assert ids.size == kept and np.unique(ids).size == kept
        assert out.num_rows <= one.num_packs * 1.02, (blocks, out.num_rows, one.num_packs)
    # blocks were merged until each holds at least MIN_PACKS_PER_BLOCK packs' worth
    import ray

    ds = pack_dataset(_dataset(table, 60), max_len, scope="block")
    groups = [t.num_rows for t in ray.get(list(ds.to_arrow_refs()))]
    assert len(groups) < 60 and min(groups) >= MIN_PACKS_PER_BLOCK


def test_block_scope_matches_the_single_packer_per_block(fortunes: Any) -> None:
    from ordcore.distributed import pack_dataset

    lengths = fortunes[:6000]
    table = _table(lengths)
    out = _collect(pack_dataset(_dataset(table, 2), 128, scope="block", algorithm="lpfhp"))
    want = [
        _arrow.pack_table(t, plan_for_lengths(_arrow.token_lengths(t, "input_ids"), 128,
                                              algorithm="lpfhp", overlong="truncate",
                                              max_seqs_per_pack=None, seed=0,
                                              token_column="input_ids"),
                          ["input_ids", "labels"])
        for t in (table.slice(0, 3000), table.slice(3000))
    ]
    assert out.column("input_ids").to_pylist() == sum(
        (w.column("input_ids").to_pylist() for w in want), []
    )
    # seq_index counts dataset rows, not the block's
    assert out.column("seq_index").to_pylist() == sum(
        (w.column("seq_index").to_pylist() for w in want[:1]), []
    ) + [[i + 3000 for i in r] for r in want[1].column("seq_index").to_pylist()]


def test_split_ranks_equal_counts(fortunes: Any) -> None:
    from ordcore.distributed import pack_dataset, split_ranks

    packed = pack_dataset(_dataset(_table(fortunes[:3000]), 3), 128)
    rows = _collect(packed).column("seq_lengths").to_pylist()
    world = next(w for w in (3, 5, 7, 11) if len(rows) % w)  # a remainder to drop or pad
    for remainder in ("drop", "pad"):
        parts, split = split_ranks(packed, world, remainder=remainder)
        ref = equalize_ranks(len(rows), world, remainder=remainder)
        assert split.num_dropped == ref.num_dropped and split.num_padded == ref.num_padded
        assert split.num_dropped + split.num_padded > 0
        for r, part in enumerate(parts):
            got = _collect(part)
            assert got.num_rows == split.per_rank
            assert got.column("seq_lengths").to_pylist() == [rows[i] for i in ref.indices[r]]
            if remainder == "pad":
                assert got.column("padded").to_pylist() == ref.padded[r].tolist()


def test_collator_takes_the_rows(fortunes: Any) -> None:
    torch_mod = pytest.importorskip("torch")
    from ordcore.distributed import pack_dataset
    from ordcore.packing.torch import PackedCollator

    packed = pack_dataset(_dataset(_table(fortunes[:500]), 2), 128)
    rows = packed.take(4)
    batch = PackedCollator(128)(rows)
    segs = sum(len(r["seq_lengths"]) for r in rows)
    assert batch["cu_seq_lens_q"].numel() == segs + 1
    assert isinstance(batch["input_ids"], torch_mod.Tensor)
    # the rows' own cu_seqlens and position_ids are the collator's, row by row
    one = PackedCollator(128)([rows[0]])
    assert one["cu_seq_lens_q"].tolist() == list(rows[0]["cu_seqlens"])
    assert one["position_ids"][0].tolist() == list(rows[0]["position_ids"])


def test_bad_input(fortunes: Any) -> None:
    from ordcore.distributed import pack_dataset

    ds = _dataset(_table(fortunes[:200]), 2)
    with pytest.raises(ordcore.InvalidArgumentError, match="token_column: the dataset has no column 'ids'"):
        pack_dataset(ds, 128, token_column="ids")
    with pytest.raises(ordcore.InvalidArgumentError, match="scope"):
        pack_dataset(ds, 128, scope="node")
    with pytest.raises(ordcore.InvalidArgumentError, match="max_len"):
        pack_dataset(ds, 0)
    with pytest.raises(ordcore.InvalidArgumentError, match="row 3 has 242 tokens"):
        pack_dataset(ds, 128, overlong="error")  # the first fortune over 128 tokens
    with pytest.raises(ordcore.InvalidArgumentError, match="row 3 of block 0 has 242 tokens"):
        pack_dataset(ds, 128, overlong="error", algorithm="lpfhp")
    with pytest.raises(ordcore.DTypeError, match="ray.data.Dataset"):
        pack_dataset([[1, 2]], 128)
    # NumPy arrays returned by map_batches become a tensor column: the error says what to do.
    tensors = ds.map_batches(
        lambda b: {"input_ids": [np.arange(3) + 1 for _ in b["input_ids"]]}, batch_format="numpy"
    )
    with pytest.raises(ordcore.DTypeError, match=r"tensor column .*tolist\(\)"):
        pack_dataset(tensors, 128)


@pytest.mark.parametrize("scope", ["global", "block"])
def test_a_block_of_only_empty_rows_is_left_out(scope: str) -> None:
    """Its list<null> column made concat_tables raise ArrowInvalid inside a Ray task."""
    import ray.data

    from ordcore.distributed import pack_dataset

    ds = ray.data.from_items([{"input_ids": [1, 2, 3]}, {"input_ids": []}], override_num_blocks=2)
    rows = pack_dataset(ds, 4, scope=scope).take_all()
    assert [list(r["input_ids"]) for r in rows] == [[1, 2, 3]]
    assert [list(r["seq_lengths"]) for r in rows] == [[3]]


@pytest.mark.parametrize("scope", ["global", "block"])
@pytest.mark.parametrize("keep", [2, 0])
@pytest.mark.filterwarnings("ignore:Use 'expr' instead of 'fn':UserWarning")
def test_blocks_a_filter_emptied_are_left_out(scope: str, keep: int) -> None:
    """A block that filter() emptied has no columns: its task said the dataset had no
    token column."""
    import ray.data

    from ordcore.distributed import pack_dataset

    ds = ray.data.from_items([{"input_ids": list(range(1, i + 2))} for i in range(6)],
                             override_num_blocks=3)
    kept = ds.filter(lambda r: len(r["input_ids"]) <= keep)
    rows = pack_dataset(kept, 4, scope=scope).take_all()
    assert sorted(list(s) for r in rows for s in np.split(
        r["input_ids"], np.cumsum(r["seq_lengths"])[:-1])) == [
        list(range(1, i + 2)) for i in range(keep)]


def test_an_empty_dataset_packs_to_no_rows_with_the_packed_columns() -> None:
    """scope="global" returned a dataset with no blocks (no schema); a dataset without a
    schema (ray.data.from_items([])) raised AttributeError."""
    import ray.data

    from ordcore.distributed import pack_dataset

    empty = ray.data.from_arrow(pa.table({"input_ids": pa.array([], pa.list_(pa.int64()))}))
    want = pack_dataset(empty, 8, scope="block").schema().names
    assert "seq_lengths" in want and "cu_seqlens" in want
    for ds in (empty, ray.data.from_items([]), ray.data.range(0)):
        for scope in ("global", "block"):
            if ds is not empty:  # range(0) has no schema either
                assert ds.schema() is None
            out = pack_dataset(ds, 8, scope=scope)
            assert out.count() == 0 and out.schema().names == want, (ds, scope)


def test_split_ranks_refuses_what_is_not_a_dataset() -> None:
    from ordcore.distributed import split_ranks

    with pytest.raises(ordcore.DTypeError, match="packed: expected a ray.data.Dataset"):
        split_ranks([1, 2], 2)
