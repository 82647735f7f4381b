"""ordcore.packing.pack_dataset on Hugging Face datasets, against TRL's pack_dataset on real
document lengths (token ids synthesized so that every token is unique and traceable)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ordcore
from ordcore.packing import equalize_ranks, pack, pack_dataset

datasets = pytest.importorskip("datasets", reason="pack_dataset needs 'datasets' (ordcore[hf])")
pa = pytest.importorskip("pyarrow", reason="pack_dataset needs pyarrow (ordcore[hf])")

needs_trl = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="TRL 1.16 needs Python >= 3.11 (the peer of these tests)"
)


#: What every packed row holds beyond TRL's columns (materialize's fields, token ranges).
ADDED = ["position_ids", "segment_ids", "cu_seqlens", "cu_seqlens_padded", "max_seqlen",
         "num_real_tokens", "seq_index", "start", "stop"]


def trl_columns(packed: Any, theirs: Any) -> Any:
    """Our packed rows restricted to TRL's columns (the rest is checked on its own)."""
    assert packed.column_names == theirs.column_names + ADDED
    return packed.select_columns(theirs.column_names)


def trl_pack(ds: Any, max_len: int, strategy: str) -> Any:
    trl_data_utils = pytest.importorskip("trl.data_utils", reason="TRL is a test dependency")
    datasets.disable_progress_bars()
    return trl_data_utils.pack_dataset(ds, max_len, strategy=strategy)


def token_dataset(lengths: np.ndarray, *, labels: bool = True, extra: bool = False) -> Any:
    """Rows of globally unique token ids (row i holds ``offset_i .. offset_i + len_i``), a
    ``labels`` column (the negated ids) and optionally non-list columns."""
    lengths = np.asarray(lengths, dtype=np.int64)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    values = pa.array(np.arange(int(offsets[-1]), dtype=np.int64) + 1)
    cols = {"input_ids": pa.LargeListArray.from_arrays(offsets, values).cast(pa.list_(pa.int64()))}
    if labels:
        cols["labels"] = pa.ListArray.from_arrays(
            pa.array(offsets.astype(np.int32)), pa.array(-np.asarray(values))
        )
    if extra:
        cols["text"] = pa.array([f"doc {i}" for i in range(lengths.size)])
        cols["row_id"] = pa.array(np.arange(lengths.size))
    return datasets.Dataset(datasets.table.InMemoryTable(pa.table(cols)))


def real_lengths(shared_data: Path, corpus: str, n: int | None = None) -> np.ndarray:
    lengths = np.load(shared_data / "packing" / f"doclens_cl100k_{corpus}.npy")
    return lengths if n is None else lengths[:n]


def rows(ds: Any) -> Iterator[dict[str, list[int]]]:
    table = ds.with_format("arrow")[:]
    yield from table.to_pylist()


def check_materialize_fields(packed: Any, lengths: np.ndarray, *, algorithm: str = "bfd",
                             overlong: str = "truncate", max_len: int | None = None,
                             rows_to_check: int = 40) -> None:
    """Row p holds what ``materialize(plan, tokens, layout="flat", rows=[p])`` gives, for
    the plan ``pack`` makes on the same lengths (``labels`` too when the source had none)."""
    from ordcore.packing import materialize

    t = packed.with_format("arrow")[:]
    if max_len is None:
        max_len = max(sum(r) for r in t.column("seq_lengths").to_pylist())
    plan = pack(lengths, max_len, algorithm=algorithm, overlong=overlong, allow_empty=True)
    assert t.num_rows == plan.num_packs
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = np.arange(int(offsets[-1]), dtype=np.int64) + 1  # token_dataset's ids
    own_labels = not np.array_equal(
        np.concatenate(t.column("labels").to_pylist() or [[]]),
        -np.concatenate(t.column("input_ids").to_pylist() or [[]]))
    for p in np.linspace(0, plan.num_packs - 1, min(rows_to_check, plan.num_packs)).astype(int):
        b = materialize(plan, (values, offsets), pad_id=0, layout="flat", rows=[int(p)])
        row = {c: t.column(c)[int(p)].as_py() for c in t.column_names}
        names = ["input_ids", "position_ids", "segment_ids"] + (["labels"] if own_labels else [])
        for name in names:
            assert row[name] == getattr(b, name)[0].tolist(), (p, name)
        for name in ("cu_seqlens", "cu_seqlens_padded", "seq_index"):
            assert row[name] == getattr(b, name).tolist(), (p, name)
        assert row["max_seqlen"] == b.max_seqlen and row["num_real_tokens"] == b.num_real_tokens
        a = plan.pack_offsets
        assert row["start"] == plan.start[a[p]:a[p + 1]].tolist()
        assert row["stop"] == plan.stop[a[p]:a[p + 1]].tolist()


def check_semantics(packed: Any, lengths: np.ndarray, max_len: int, overlong: str) -> None:
    """Every row fits, ``seq_lengths`` adds up, labels travel with their tokens, and every
    source row appears exactly once (split: all tokens; truncate: the first max_len)."""
    starts = np.concatenate([[0], np.cumsum(lengths)])[:-1] + 1
    seen: dict[int, list[tuple[int, int]]] = {}
    for row in rows(packed):
        ids, lab, seg = row["input_ids"], row["labels"], row["seq_lengths"]
        assert len(ids) == sum(seg) <= max_len
        assert lab == [-t for t in ids]
        assert all(s > 0 for s in seg)
        pos = 0
        for s in seg:
            frag = ids[pos : pos + s]
            pos += s
            src = int(np.searchsorted(starts, frag[0], side="right")) - 1
            assert frag == list(range(frag[0], frag[0] + s))  # one contiguous source slice
            seen.setdefault(src, []).append((frag[0] - int(starts[src]), s))
    nonempty = np.flatnonzero(lengths > 0)
    assert sorted(seen) == nonempty.tolist()  # every non-empty row, empty ones left out
    for src, frags in seen.items():
        frags.sort()
        if overlong == "truncate":
            assert frags == [(0, min(int(lengths[src]), max_len))]
        else:
            assert frags[0][0] == 0 and all(
                a[0] + a[1] == b[0] for a, b in zip(frags, frags[1:])
            )
            assert sum(f[1] for f in frags) == lengths[src]
            assert all(f[1] <= max_len for f in frags)


# ---------------------------------------------------------------- against TRL


@needs_trl
@pytest.mark.parametrize(
    ("corpus", "n", "max_len"),
    [("manpages_roff", 400, 4096), ("fortunes", 1000, 256), ("linux_doc_rst", 300, 2048)],
)
@pytest.mark.parametrize("overlong", ["truncate", "split"])
def test_one_batch_equals_trl(shared_data: Path, corpus: str, n: int, max_len: int,
                              overlong: str) -> None:
    """On at most 1,000 rows (one TRL map batch) bfd gives TRL's packs, rows and columns."""
    lengths = real_lengths(shared_data, corpus, n)
    ds = token_dataset(lengths)
    full = pack_dataset(ds, max_len, overlong=overlong)
    theirs = trl_pack(ds, max_len, "bfd" if overlong == "truncate" else "bfd_split")
    assert theirs.column_names == ["input_ids", "labels", "seq_lengths"]
    ours = trl_columns(full, theirs)
    assert ours.features == theirs.features
    a = ours.with_format("arrow")[:]
    b = theirs.with_format("arrow")[:]
    assert a.schema.equals(b.schema)
    assert a.num_rows == b.num_rows
    assert a.equals(b)
    check_semantics(ours, lengths, max_len, overlong)
    check_materialize_fields(full, lengths, overlong=overlong, max_len=max_len)


@needs_trl
@pytest.mark.parametrize(
    ("corpus", "n", "max_len", "overlong"),
    [
        ("fortunes", None, 512, "truncate"),
        ("wordnet_glosses", 40_000, 128, "truncate"),
        ("linux_doc_rst", None, 2048, "split"),
    ],
)
def test_whole_dataset_against_trl(shared_data: Path, corpus: str, n: int | None,
                                   max_len: int, overlong: str) -> None:
    """Several TRL batches: one plan needs no more packs, keeps every sequence once, same
    columns and meaning."""
    lengths = real_lengths(shared_data, corpus, n)
    ds = token_dataset(lengths)
    assert len(ds) > 1000
    theirs = trl_pack(ds, max_len, "bfd" if overlong == "truncate" else "bfd_split")
    ours = trl_columns(pack_dataset(ds, max_len, overlong=overlong), theirs)
    assert ours.features == theirs.features
    assert len(ours) <= len(theirs)
    check_semantics(ours, lengths, max_len, overlong)
    # The same tokens in all, whatever the packs.
    ta = ours.with_format("arrow")[:]
    tb = theirs.with_format("arrow")[:]
    for col in ("input_ids", "labels"):
        x = np.sort(ta.column(col).combine_chunks().flatten().to_numpy())
        y = np.sort(tb.column(col).combine_chunks().flatten().to_numpy())
        np.testing.assert_array_equal(x, y)
    # The plan is the one pack() makes over the whole dataset.
    plan = pack(lengths, max_len, algorithm="bfd", overlong=overlong, allow_empty=True)
    assert len(ours) == plan.num_packs


@needs_trl
@pytest.mark.parametrize("overlong", ["truncate", "split"])
def test_value_types_equal_trl(overlong: str) -> None:
    """Bool, float, int8 and nullable columns (the Arrow-take path) and sliced, multi-chunk
    tables (the Rust gather path) pack as TRL packs them."""
    rng = np.random.default_rng(4)
    lengths = rng.integers(0, 40, 700)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    n = int(offsets[-1])
    off = pa.array(offsets)
    labels = pa.array([None if i % 7 == 0 else int(i) for i in range(n)], type=pa.int64())
    table = pa.table({
        "input_ids": pa.ListArray.from_arrays(off, pa.array(np.arange(n, dtype=np.int32))),
        "completion_mask": pa.ListArray.from_arrays(off, pa.array(rng.random(n) < 0.5)),
        "weights": pa.ListArray.from_arrays(off, pa.array(rng.random(n).astype(np.float32))),
        "attention_mask": pa.ListArray.from_arrays(off, pa.array(np.ones(n, dtype=np.int8))),
        "labels": pa.ListArray.from_arrays(off, labels),
    })
    # Several chunks, the first a slice with a non-zero offset.
    table = pa.concat_tables([table.slice(3, 300), table.slice(303)])
    ds = datasets.Dataset(datasets.table.InMemoryTable(table))
    theirs = trl_pack(ds, 64, "bfd" if overlong == "truncate" else "bfd_split")
    ours = trl_columns(pack_dataset(ds, 64, overlong=overlong), theirs).with_format("arrow")[:]
    assert ours.equals(theirs.with_format("arrow")[:])


def test_trl_docstring_example() -> None:
    """TRL's documented example (its docstring output), truncate and split."""
    ds = datasets.Dataset.from_dict({
        "input_ids": [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10], [11]],
        "attention_mask": [[1, 1, 1, 0, 0], [1, 0], [1, 1, 0], [1]],
    })
    trl = ["input_ids", "attention_mask", "seq_lengths"]
    assert pack_dataset(ds, 4).select_columns(trl)[:] == {
        "input_ids": [[1, 2, 3, 4], [8, 9, 10, 11], [6, 7]],
        "attention_mask": [[1, 1, 1, 0], [1, 1, 0, 1], [1, 0]],
        "seq_lengths": [[4], [3, 1], [2]],
    }
    out = pack_dataset(ds, 4, overlong="split")
    assert out.select_columns(trl)[:] == {
        "input_ids": [[1, 2, 3, 4], [8, 9, 10, 5], [6, 7, 11]],
        "attention_mask": [[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 1]],
        "seq_lengths": [[4], [3, 1], [2, 1]],
    }
    # and, per row, which rows and token ranges it holds (row 0 is split at 4 tokens)
    assert out.select_columns(["seq_index", "start", "stop", "cu_seqlens"])[:] == {
        "seq_index": [[0], [2, 0], [1, 3]],
        "start": [[0], [0, 4], [0, 0]],
        "stop": [[4], [3, 5], [2, 1]],
        "cu_seqlens": [[0, 4], [0, 3, 4], [0, 2, 3]],
    }


# ---------------------------------------------------------------- semantics


@pytest.mark.parametrize("algorithm", ["bfd", "lpfhp", "nf", "ffd"])
@pytest.mark.parametrize("overlong", ["truncate", "split"])
def test_every_algorithm_keeps_every_sequence(algorithm: str, overlong: str) -> None:
    rng = np.random.default_rng(5)
    lengths = rng.integers(0, 700, 3000)
    lengths[::97] = 0
    packed = pack_dataset(token_dataset(lengths), 512, algorithm=algorithm, overlong=overlong)
    check_semantics(packed, lengths, 512, overlong)
    plan = pack(lengths, 512, algorithm=algorithm, overlong=overlong, allow_empty=True)
    assert len(packed) == plan.num_packs


@pytest.mark.parametrize("algorithm", ["bfd", "lpfhp"])
@pytest.mark.parametrize("overlong", ["truncate", "split"])
def test_rows_carry_the_materialize_fields(algorithm: str, overlong: str) -> None:
    """One schema: TRL's columns plus what materialize gives for each pack (the rows held
    TRL's columns alone)."""
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 300, 800)
    lengths[::50] = 0
    for labels in (True, False):  # without labels: materialize's (-100 at segment starts)
        packed = pack_dataset(token_dataset(lengths, labels=labels), 128, algorithm=algorithm,
                              overlong=overlong)
        check_materialize_fields(packed, lengths, algorithm=algorithm, overlong=overlong,
                                 max_len=128)
        if not labels:
            assert packed.column_names == ["input_ids", "seq_lengths", "labels", *ADDED]


def test_non_list_columns_empty_rows_format_and_order() -> None:
    lengths = np.array([3, 0, 5, 2, 0, 4])
    ds = token_dataset(lengths, extra=True).with_format("numpy", columns=["input_ids", "text"])
    packed = pack_dataset(ds, 8)
    # text, row_id left out
    assert packed.column_names == ["input_ids", "labels", "seq_lengths", *ADDED]
    assert packed.format["type"] == "numpy"
    assert packed.format["columns"] == ["input_ids", "seq_lengths", *ADDED]
    assert isinstance(packed[0]["input_ids"], np.ndarray)
    check_semantics(packed.with_format(None), lengths, 8, "truncate")
    # select/shuffle indices mappings are honoured: the packed rows come from the view.
    view = token_dataset(lengths).select([5, 2, 0])
    got = sorted(t for r in rows(pack_dataset(view, 8)) for t in r["input_ids"])
    want = sorted(t for r in rows(view) for t in r["input_ids"])
    assert got == want
    # A DatasetDict is packed split by split.
    dd = datasets.DatasetDict({"train": token_dataset(lengths), "test": token_dataset([4, 4])})
    out = pack_dataset(dd, 8)
    assert set(out) == {"train", "test"} and len(out["test"]) == 1
    # large_list token columns keep their type, and seq_lengths is int64 as TRL makes it.
    t = token_dataset(lengths).with_format("arrow")[:]
    big = datasets.Dataset(datasets.table.InMemoryTable(
        t.cast(pa.schema([("input_ids", pa.large_list(pa.int64())),
                          ("labels", pa.list_(pa.int64()))]))))
    out_t = pack_dataset(big, 8).with_format("arrow")[:]
    assert out_t.schema.field("input_ids").type == pa.large_list(pa.int64())
    assert out_t.schema.field("seq_lengths").type == pa.list_(pa.int64())


def test_empty_dataset_and_all_empty_rows() -> None:
    for lengths in ([], [0, 0]):
        out = pack_dataset(token_dataset(np.asarray(lengths, dtype=np.int64)), 8)
        assert len(out) == 0
        assert out.column_names == ["input_ids", "labels", "seq_lengths", *ADDED]


def test_input_is_not_modified() -> None:
    ds = token_dataset([5, 9, 2])
    before = ds.with_format("arrow")[:]
    pack_dataset(ds, 8, overlong="split")
    assert ds.with_format("arrow")[:].equals(before)


# ---------------------------------------------------------------- bad input


def _ds(cols: dict[str, Any]) -> Any:
    return datasets.Dataset(datasets.table.InMemoryTable(pa.table(cols)))


@pytest.mark.parametrize(
    ("cols", "kwargs", "exc", "match"),
    [
        ({"ids": [[1, 2]]}, {}, ordcore.InvalidArgumentError, "no column 'input_ids'"),
        ({"input_ids": [[[1], [2, 3]]]}, {}, ordcore.DTypeError, "nested lists"),
        ({"input_ids": [[1.5, 2.0]]}, {}, ordcore.DTypeError, "must be integers"),
        ({"input_ids": ["abc"]}, {}, ordcore.DTypeError, "list of integer token ids"),
        ({"input_ids": [[1, 2], None]}, {}, ordcore.InvalidArgumentError, "row 1 is null"),
        ({"input_ids": [[1, 2], [3, None]]}, {}, ordcore.InvalidArgumentError,
         "row 1 holds a null"),
        ({"input_ids": [[1, 2], [3, 4]], "labels": [[1, 2], [3]]}, {},
         ordcore.InvalidArgumentError, r"column 'labels': row 1 has 1 values but 'input_ids' has 2"),
        ({"input_ids": [[1, 2]], "seq_lengths": [[2]]}, {}, ordcore.InvalidArgumentError,
         "already has a 'seq_lengths'"),
        ({"input_ids": [[1, 2]]}, {"max_len": 0}, ordcore.InvalidArgumentError,
         "max_len: must be at least 1"),
        ({"input_ids": [[1, 2], [1, 2, 3, 4, 5, 6]]}, {"overlong": "error", "max_len": 4},
         ordcore.InvalidArgumentError, "row 1 has 6 tokens, more than max_len=4"),
        ({"input_ids": [[1, 2]]}, {"overlong": "drop"}, ordcore.InvalidArgumentError,
         "overlong: unknown value 'drop'"),
        ({"input_ids": [[1, 2]]}, {"algorithm": "best"}, ordcore.InvalidArgumentError,
         "algorithm: unknown value"),
    ],
)
def test_bad_input(cols: dict[str, Any], kwargs: dict[str, Any], exc: type, match: str) -> None:
    kw = {"max_len": 4, **kwargs}
    max_len = kw.pop("max_len")
    with pytest.raises(exc, match=match):
        pack_dataset(_ds(cols), max_len, **kw)


def test_not_a_dataset() -> None:
    with pytest.raises(ordcore.DTypeError, match="expected a datasets.Dataset"):
        pack_dataset({"input_ids": [[1]]}, 4)
    stream = datasets.IterableDataset.from_generator(lambda: iter([{"input_ids": [1]}]))
    with pytest.raises(ordcore.DTypeError, match="PackedIterableDataset"):
        pack_dataset(stream, 4)


def test_import_ordcore_imports_no_training_stack() -> None:
    import subprocess

    code = ("import sys, ordcore, ordcore.packing; "
            "print(sorted(m for m in ('torch', 'datasets', 'pyarrow', 'transformers') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- ranks


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 31])
@pytest.mark.parametrize("w", [1, 2, 3, 8])
def test_equalize_ranks(n: int, w: int) -> None:
    drop = equalize_ranks(n, w)
    assert {a.size for a in drop.indices} == {n // w}
    got = np.sort(np.concatenate(drop.indices))
    np.testing.assert_array_equal(got, np.arange(n // w * w))
    assert drop.num_dropped == n - n // w * w and drop.num_padded == 0
    pad = equalize_ranks(n, w, remainder="pad")
    per = -(-n // w) if n else 0
    assert {a.size for a in pad.indices} == {per} and pad.per_rank == per
    allidx = np.concatenate(pad.indices)
    flags = np.concatenate(pad.padded)
    np.testing.assert_array_equal(np.sort(allidx[~flags]), np.arange(n))  # each real item once
    assert int(flags.sum()) == pad.num_padded == per * w - n
    # DistributedSampler (no shuffle) gives the same per-rank indices.
    torch_data = pytest.importorskip("torch.utils.data")
    for remainder, split in (("drop", drop), ("pad", pad)):
        if n == 0:
            continue
        for r in range(w):
            s = torch_data.DistributedSampler(range(n), num_replicas=w, rank=r, shuffle=False,
                                              drop_last=remainder == "drop")
            assert list(s) == split.indices[r].tolist()


def test_equalize_ranks_bad_input() -> None:
    with pytest.raises(ordcore.InvalidArgumentError, match="world_size: must be at least 1"):
        equalize_ranks(4, 0)
    with pytest.raises(ordcore.InvalidArgumentError, match="num_items"):
        equalize_ranks(-1, 2)
    with pytest.raises(ordcore.InvalidArgumentError, match="remainder: unknown value"):
        equalize_ranks(4, 2, remainder="wrap")


# ---------------------------------------------------------------- ordcore pack (CLI)


def _cli(args: list[str]) -> int:
    from ordcore.cli import main

    return main(args)


def test_cli_packs_parquet_jsonl_and_saved_datasets(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    rng = np.random.default_rng(9)
    lengths = rng.integers(0, 90, 300)
    ds = token_dataset(lengths, extra=True)
    want = pack_dataset(ds, 64, overlong="split").with_format("arrow")[:]
    src = ds.with_format("arrow")[:]
    pq.write_table(src, tmp_path / "tokens.parquet")
    ds.to_json(tmp_path / "tokens.jsonl", lines=True)
    ds.save_to_disk(str(tmp_path / "saved"))
    datasets.DatasetDict({"train": ds, "test": ds.select([0])}).save_to_disk(str(tmp_path / "dd"))
    inputs = [["tokens.parquet"], ["tokens.jsonl"], ["saved"], ["dd", "--split", "train"]]
    for inp in inputs:
        out = tmp_path / "packed.parquet"
        out.unlink(missing_ok=True)
        args = ["pack", str(tmp_path / inp[0]), *inp[1:], "--max-len", "64", "--algorithm", "bfd",
                "--overlong", "split", "-o", str(out)]
        assert _cli(args) == 0, inp
        assert "saved packed rows" in capsys.readouterr().out
        got = pq.read_table(out)
        assert got.column_names == ["input_ids", "labels", "seq_lengths", *ADDED]
        for col in got.column_names:  # JSON Lines infers int64 where Parquet keeps the type
            assert got.column(col).to_pylist() == want.column(col).to_pylist(), (inp, col)
    assert not list(tmp_path.glob(".*tmp"))  # no temporary file left behind
    # The plan can still be written from tokens, and packed Parquet needs tokens.
    assert _cli(["pack", str(tmp_path / "tokens.parquet"), "--max-len", "64", "--overlong",
                 "truncate", "-o", str(tmp_path / "plan.npz")]) == 0
    assert ordcore.packing.Plan.from_npz(tmp_path / "plan.npz").num_packs == len(
        pack_dataset(ds, 64))
    np.save(tmp_path / "lengths.npy", lengths)
    assert _cli(["pack", str(tmp_path / "lengths.npy"), "--max-len", "64", "--overlong", "split",
                 "-o", str(tmp_path / "x.parquet")]) == 2
    assert "needs tokens" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("rows", "extra", "match"),
    [
        ([{"ids": [1, 2]}], [], "no column 'input_ids'"),
        ([{"input_ids": [[1], [2, 3]]}], [], "nested lists"),
        ([{"input_ids": [1.5, 2.5]}], [], "must be integers"),
        ([{"input_ids": [1, 2], "labels": [1]}], [], "column 'labels': row 0 has 1 values"),
        ([{"input_ids": [1, 2, 3, 4, 5]}], ["--overlong", "error"], "row 0 has 5 tokens"),
        ([{"input_ids": [1, 2]}], ["--split", "train"], "--split applies only"),
        ([{"input_ids": [1, [2, 3]]}], [], "not a readable JSON Lines file"),  # ragged
        ([{"input_ids": [1, 2]}, {"input_ids": "abc"}], [], "not a readable JSON Lines file"),
    ],
)
def test_cli_bad_token_files(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             rows: list[dict[str, Any]], extra: list[str], match: str) -> None:
    import json

    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "packed.parquet"
    out.write_bytes(b"old")
    assert _cli(["pack", str(src), "--max-len", "4", "-o", str(out), *extra]) == 2
    assert match in capsys.readouterr().err
    assert out.read_bytes() == b"old"  # the old output is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["packed.parquet", "t.jsonl"]


def test_cli_parquet_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A write that fails half-way (disk full, Ctrl-C) leaves the old file and no temp file."""
    import pyarrow.parquet as pq

    src = tmp_path / "t.parquet"
    pq.write_table(token_dataset([3, 4, 5]).with_format("arrow")[:], src)
    out = tmp_path / "packed.parquet"
    out.write_bytes(b"old")
    real = pq.write_table

    def half_then_fail(table: Any, where: Any, **kw: Any) -> None:
        real(table.slice(0, 1), where, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", half_then_fail)
    assert _cli(["pack", str(src), "--max-len", "8", "-o", str(out)]) == 130
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["packed.parquet", "t.parquet"]
    monkeypatch.setattr(pq, "write_table", real)
    (tmp_path / "sub.parquet").mkdir()
    assert _cli(["pack", str(src), "--max-len", "8", "-o", str(tmp_path / "sub.parquet")]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_token_ids_beyond_int64_are_refused() -> None:
    """Found by a fresh-user pass: uint64 ids above 2**63 - 1 became negative labels."""
    big = pa.array([[5, 6], [5, 2**63 + 1]], type=pa.list_(pa.uint64()))
    with pytest.raises(ordcore.InvalidArgumentError, match="row 1 holds an id beyond int64"):
        pack_dataset(datasets.Dataset(pa.table({"input_ids": big})), 4)
    ok = pa.array([[5, 2**63 - 1]], type=pa.list_(pa.uint64()))
    out = pack_dataset(datasets.Dataset(pa.table({"input_ids": ok})), 4)
    assert out["labels"] == [[-100, 2**63 - 1]]


@pytest.mark.parametrize("fmt", [None, "numpy", "arrow", "pandas", "python"])
def test_stream_reads_an_iterable_dataset_in_every_format(fmt: str | None) -> None:
    from ordcore.packing import ShardedPackStream

    items = [{"input_ids": list(range(i, i + 1 + i % 7))} for i in range(700)]
    ds = datasets.Dataset.from_list(items).to_iterable_dataset(num_shards=2)
    if fmt is not None:
        ds = ds.with_format(fmt)
    want = [r["input_ids"].tolist()
            for r in ShardedPackStream([x["input_ids"] for x in items], 16, buffer_size=100)]
    got = [r["input_ids"].tolist() for r in ShardedPackStream(ds, 16, buffer_size=100)]
    assert got == want
