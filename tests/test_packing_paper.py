"""Krell et al. (arXiv 2107.02027), Table 1 and Section 4, on the published Wikipedia
sequence-length histogram (16,279,552 sequences at 512 tokens): exact pack counts and
efficiencies of SPFHP, LPFHP and NNLSHP."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ordcore.packing import pack


@pytest.fixture(scope="module")
def wikipedia_lengths(shared_data: Path) -> np.ndarray:
    with open(shared_data / "packing" / "graphcore_histograms.json") as f:
        hist = np.asarray(json.load(f)["wikipedia_512"], dtype=np.int64)
    assert hist.sum() == 16_279_552
    return np.repeat(np.arange(1, hist.size + 1, dtype=np.int64), hist)


@pytest.mark.parametrize(
    ("algorithm", "depth", "packs", "efficiency", "places"),
    [
        ("spfhp", 3, 9_094_695, 0.89441, 5),
        ("spfhp", 12, None, 0.99604, 5),
        ("lpfhp", 12, None, 0.998129, 6),
        ("nnlshp", 3, 8_155_059, 0.99746, 5),
    ],
)
def test_paper_table(
    wikipedia_lengths: np.ndarray,
    algorithm: str,
    depth: int,
    packs: int | None,
    efficiency: float,
    places: int,
) -> None:
    plan = pack(wikipedia_lengths, 512, algorithm=algorithm, max_seqs_per_pack=depth)
    s = plan.stats
    if packs is not None:
        assert s.num_packs == packs
    assert round(s.efficiency, places) == efficiency
    assert s.deepest_pack <= depth
    assert s.real_tokens == int(wikipedia_lengths.sum())
    assert s.dropped_tokens == 0
    # Every sequence appears in exactly one slot.
    counts = np.bincount(plan.seq_index, minlength=wikipedia_lengths.size)
    assert counts.min() == counts.max() == 1
    assert s.num_packs >= s.lower_bound_l2 >= s.lower_bound_sum
