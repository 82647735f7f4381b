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
