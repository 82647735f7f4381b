"""Limits of the rank split and the sharded stream (no torch, no datasets needed)."""

from __future__ import annotations

import numpy as np
import pytest

import ordcore
from ordcore.packing import ShardedPackStream, equalize_ranks


@pytest.mark.parametrize(
    ("num_items", "world_size", "remainder", "arg"),
    [(2**62, 2, "drop", "num_items"), (3, 2**62, "pad", "world_size"),
     (2**63 - 1, 2**62, "pad", "num_items")],
)
def test_equalize_ranks_refuses_what_cannot_be_allocated(
    num_items: int, world_size: int, remainder: str, arg: str
) -> None:
    """These gave NumPy's bare 'array is too big' or ran until killed."""
    with pytest.raises(MemoryError, match=f"^{arg}: needs about"):
        equalize_ranks(num_items, world_size, remainder=remainder)


def test_sharded_stream_refuses_a_one_shot_iterator() -> None:
    """Every pass and every resume reads the source from its start: a generator silently lost
    the rows of the second pass (12 of 18 rows after a resume)."""
    src = [np.arange(3)] * 6
    with pytest.raises(ordcore.InvalidArgumentError, match="source: a one-shot iterator"):
        ShardedPackStream(iter(src), 16, buffer_size=4)
    again = ShardedPackStream(lambda: iter(src), 16, buffer_size=4)
    first, second = list(again), list(again)
    assert len(first) == len(second) == 2  # 18 tokens in packs of at most 16, both passes


def test_sharded_stream_overlong_error_names_the_source_item() -> None:
    """It named pack's window-local argument ('lengths: sequence 0'), not the item."""
    src = [np.arange(2), np.arange(3), np.arange(9), np.arange(1)]
    stream = ShardedPackStream(lambda: iter(src), 4, buffer_size=2, overlong="error")
    with pytest.raises(ordcore.InvalidArgumentError,
                       match=r"^source: item 2 has 9 tokens, more than max_len=4"):
        list(stream)


def test_streaming_packer_overlong_error_names_the_source_item() -> None:
    """It named pack's window-local argument for items past the first window."""
    src = [np.arange(2), np.arange(3), np.arange(1), np.arange(9)]
    packer = ordcore.packing.StreamingPacker(4, buffer_size=2, overlong="error")
    with pytest.raises(ordcore.InvalidArgumentError,
                       match=r"^source: item 3 has 9 tokens, more than max_len=4"):
        list(packer(src))


def test_streaming_packer_empty_item_error_names_the_source_item() -> None:
    """It named the position inside the window ('lengths: sequence 37')."""
    seqs = [np.arange(1, 10)] * 300
    seqs[137] = np.array([], np.int64)
    with pytest.raises(ordcore.InvalidArgumentError, match=r"^source: item 137 is empty"):
        list(ordcore.packing.StreamingPacker(64, buffer_size=50)(seqs))


def test_sharded_stream_names_shard_and_num_shards() -> None:
    """A bad shard was reported as 'rank: must be below world_size=2'."""
    with pytest.raises(ordcore.InvalidArgumentError, match=r"^shard: must be below num_shards=2"):
        ShardedPackStream([[1, 2]], 64, num_shards=2, shard=2)
    with pytest.raises(ordcore.InvalidArgumentError, match=r"^num_shards"):
        ShardedPackStream([[1, 2]], 64, num_shards=0, shard=0)


_DROP = object()  # a key left out of a state


def _state_after(items: list[list[int]], rows: int, **kw: object) -> dict[str, object]:
    s = ShardedPackStream(items, 8, **kw)  # type: ignore[arg-type]
    it = iter(s)
    for _ in range(rows):
        next(it)
    return s.state_dict()


def test_sharded_stream_refuses_damaged_states_naming_the_key() -> None:
    """Found by a fresh-user pass: bare KeyError / ValueError / TypeError, or silent acceptance
    (a carried stop past its item gave rows whose seq_lengths did not add up)."""
    items = [[i] * (3 + i % 5) for i in range(40)]
    kw = {"buffer_size": 10, "num_shards": 3, "shard": 0}
    state = _state_after(items, 3, **kw)
    assert state["window"] == 1 and state["carry"]

    def load(**change: object) -> ShardedPackStream:
        s = ShardedPackStream(items, 8, **kw)  # type: ignore[arg-type]
        s.load_state_dict({k: v for k, v in {**state, **change}.items() if v is not _DROP})
        return s

    with pytest.raises(ordcore.InvalidArgumentError, match="has no 'rows_done'"):
        load(rows_done=_DROP)
    for bad, what in ((None, "must be a list"), ("abc", "must be a list"), ([[1]], r"\[0\]")):
        with pytest.raises(ordcore.InvalidArgumentError, match=f"state\\['carry'\\].*{what}"):
            load(carry=bad)
    with pytest.raises(ordcore.DTypeError, match=r"state\['carry'\]\[0\]"):
        load(carry=[[0.7, 0, 1]])
    with pytest.raises(ordcore.InvalidArgumentError, match="not a carried sequence"):
        load(carry=[[39, 0, 1]])  # an item the state had not read
    # Out of range for the source only shows when it is read: refused at iteration.
    with pytest.raises(ordcore.InvalidArgumentError, match="carries tokens 0..40 of item 1, which has 4"):
        list(load(carry=[[1, 0, 40]]))  # item 1 has 4 tokens
    with pytest.raises(ordcore.InvalidArgumentError, match="rows_done=1000"):
        list(load(rows_done=1000))
    # A source shorter than what the state had read, or an item re-tokenized shorter.
    for n in (0, 5):
        s = ShardedPackStream(items[:n], 8, **kw)  # type: ignore[arg-type]
        s.load_state_dict(state)
        with pytest.raises(ordcore.InvalidArgumentError, match=f"the source has {n} items"):
            list(s)
    changed = list(items)
    a = state["carry"][0][0]  # type: ignore[index]
    changed[a] = [99]
    s = ShardedPackStream(changed, 8, **kw)  # type: ignore[arg-type]
    s.load_state_dict(state)
    with pytest.raises(ordcore.InvalidArgumentError, match=f"of item {a}, which has 1"):
        list(s)
    # The intact state still resumes exactly.
    full = list(ShardedPackStream(items, 8, **kw))  # type: ignore[arg-type]
    s = ShardedPackStream(items, 8, **kw)  # type: ignore[arg-type]
    s.load_state_dict(state)
    rest = list(s)
    assert [r["input_ids"].tolist() for r in rest] == [r["input_ids"].tolist() for r in full[3:]]


def test_sharded_stream_items_must_be_flat_int64_ids() -> None:
    with pytest.raises(ordcore.InvalidArgumentError, match="item 1: must be a flat list of ids"):
        list(ShardedPackStream([[1, 2], [[1, 2], [3]]], 8))
    big = np.array([5, 2**63 + 1], dtype=np.uint64)
    with pytest.raises(ordcore.InvalidArgumentError, match="item 0: holds ids beyond int64"):
        list(ShardedPackStream([big], 8))
    ok = np.array([5, 2**63 - 1], dtype=np.uint64)
    assert list(ShardedPackStream([ok], 8))[0]["input_ids"].tolist() == [5, 2**63 - 1]
