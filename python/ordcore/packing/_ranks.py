"""Splitting items evenly over data-parallel ranks (NumPy only)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ordcore._args import ensure_fits
from ordcore.errors import InvalidArgumentError

__all__ = ["RANK_REMAINDERS", "RankSplit", "equalize_ranks"]

RANK_REMAINDERS = ("drop", "pad")


@dataclass(frozen=True)
class RankSplit:
    """Item indices per rank, every rank with the same count.

    ``indices[r]`` (int64, shape ``(per_rank,)``) are the items of rank ``r``, strided as
    ``torch.utils.data.DistributedSampler`` without shuffling: rank ``r`` takes items
    ``r, r + world_size, ...``. ``num_dropped`` items (the last ones) are on no rank
    (``remainder="drop"``); ``num_padded`` entries repeat items from the start
    (``remainder="pad"``), and ``padded[r]`` (bool, ``(per_rank,)``) marks them so a
    consumer can mask them out of the loss.
    """

    indices: tuple[npt.NDArray[np.int64], ...]
    padded: tuple[npt.NDArray[np.bool_], ...]
    per_rank: int
    num_dropped: int
    num_padded: int

    @property
    def world_size(self) -> int:
        """Number of ranks."""
        return len(self.indices)


def equalize_ranks(num_items: int, world_size: int, *, remainder: str = "drop") -> RankSplit:
    """Splits ``num_items`` items over ``world_size`` ranks so that every rank gets the same
    number (data-parallel training hangs when one rank runs out of batches first).

    Parameters
    ----------
    num_items : int
        Items to split (packs, batches, shards), at least 0.
    world_size : int
        Ranks, at least 1.
    remainder : {"drop", "pad"}
        ``num_items % world_size`` items are left over: leave the last ones out (every rank
        gets ``num_items // world_size``, as ``DistributedSampler(drop_last=True)``), or
        repeat items from the start until every rank has ``ceil(num_items / world_size)``
        (as ``DistributedSampler(drop_last=False)``; with no items there is nothing to repeat
        and every rank gets none).

    Returns
    -------
    RankSplit

    Raises
    ------
    ordcore.InvalidArgumentError
        ``num_items < 0``, ``world_size < 1`` or an unknown ``remainder``.
    MemoryError
        The per-rank index arrays (about 18 bytes per item, and 256 per rank) would not fit
        in memory; raised before allocating.
    """
    from ordcore.packing._plan import _check_choice, _check_int

    n = _check_int("num_items", num_items, 0)
    w = _check_int("world_size", world_size, 1)
    remainder = _check_choice("remainder", remainder, RANK_REMAINDERS)
    per = n // w if remainder == "drop" or n == 0 else -(-n // w)
    # Two int64 index arrays and two bool flag arrays of per * w entries, plus two array
    # objects per rank: refuse what cannot be allocated before building any of it.
    ensure_fits("world_size" if w > n else "num_items", per * w * 18 + w * 256)
    if remainder == "drop" or n == 0:
        per = n // w
        order = np.arange(per * w, dtype=np.int64)
    else:
        per = -(-n // w)
        order = np.arange(per * w, dtype=np.int64) % n
    is_pad = np.arange(per * w) >= n
    idx = tuple(np.ascontiguousarray(order[r::w]) for r in range(w))
    pad = tuple(np.ascontiguousarray(is_pad[r::w]) for r in range(w))
    for a in (*idx, *pad):
        a.setflags(write=False)
    if remainder == "drop" or n == 0:
        return RankSplit(idx, pad, per, n - per * w, 0)
    return RankSplit(idx, pad, per, 0, per * w - n)


def _validate_rank(
    rank: int, world_size: int, names: tuple[str, str] = ("rank", "world_size")
) -> tuple[int, int]:
    """Checks a ``(rank, world_size)`` pair; errors use the caller's argument ``names``."""
    from ordcore.packing._plan import _check_int

    w = _check_int(names[1], world_size, 1)
    r = _check_int(names[0], rank, 0)
    if r >= w:
        raise InvalidArgumentError(f"{names[0]}: must be below {names[1]}={w}, got {r}")
    return r, w
