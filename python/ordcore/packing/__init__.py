"""Sequence packing for LLM training without cross-contamination.

Plan packs from sequence lengths alone (:func:`pack`), then build the arrays a training step
consumes (:func:`materialize`), or do both per buffer window over a stream
(:class:`StreamingPacker`).

Algorithms
----------
``lpfhp`` / ``spfhp`` / ``nnlshp``
    The histogram algorithms of Krell et al., "Efficient Sequence Packing without
    Cross-contamination: Accelerating Large Language Models without Impacting Performance"
    (arXiv 2107.02027). SPFHP and LPFHP are step-for-step ports of Graphcore's reference
    implementations (``spfhp.py``, ``lpfhp.py`` with ``distribute=True``) and reproduce the
    paper's pack counts exactly; NNLSHP solves the paper's weighted non-negative least squares
    problem with :func:`scipy.optimize.nnls`. They pack counts per length; real sequence indices
    are then assigned to slots by a shuffle within each length keyed by ``seed``. Faithful to
    the reference, SPFHP places a whole length group at once and never puts two sequences of
    the same length into one pack, so it packs poorly when ``max_len`` is many times the
    typical length (21% on WordNet glosses at 2048); LPFHP has no such weakness.
``bfd`` / ``ffd``
    Item-wise best-fit / first-fit decreasing in O(n log L) / O(n log n): a max segment tree
    over free capacity (the structure TRL's ``pack_dataset(strategy="bfd")`` uses) and a max
    segment tree over bins. Equal lengths keep input order; ``ffd`` ties go to the
    earliest-opened bin, ``bfd`` ties to the bin that has had that free space the longest
    (TRL's FIFO per free space, so the packs equal TRL's ``_pack_bfd``).
``nf``
    Next fit in input order, for data whose order must be kept.

Conventions
-----------
Labels follow Hugging Face ``DataCollatorWithFlattening``: ``labels`` equals ``input_ids``
(not shifted; the model shifts inside its loss), with the first token of every sequence and
every padding token set to ``label_ignore_index``, so no position predicts across a sequence
boundary. ``position_ids`` restart at ``position_ids_start`` for each sequence (use 2 for
RoBERTa-family models). ``cu_seqlens`` follow the flash-attention varlen contract
(int32, ``cu_seqlens[-1]`` equals the number of real tokens, no zero-length segment).
"""

from __future__ import annotations

from ordcore.packing._plan import (
    ALGORITHMS,
    NNLSHP_MAX_MATRIX_ENTRIES,
    OVERLONG_POLICIES,
    PackedBatch,
    Plan,
    PlanStats,
    StreamingPacker,
    attention_mask_from_segments,
    materialize,
    pack,
)

# Glue for training stacks: Hugging Face datasets (pyarrow and ``datasets`` imported lazily,
# inside the calls), rank splitting; the torch collator and IterableDataset are in
# ``ordcore.packing.torch``.
from ordcore.packing._hf import PACK_DATASET_OVERLONG, pack_dataset
from ordcore.packing._ranks import RANK_REMAINDERS, RankSplit, equalize_ranks
from ordcore.packing._stream import ShardedPackStream

__all__ = [
    "ALGORITHMS",
    "NNLSHP_MAX_MATRIX_ENTRIES",
    "OVERLONG_POLICIES",
    "PACK_DATASET_OVERLONG",
    "PackedBatch",
    "Plan",
    "PlanStats",
    "RANK_REMAINDERS",
    "RankSplit",
    "ShardedPackStream",
    "StreamingPacker",
    "attention_mask_from_segments",
    "equalize_ranks",
    "materialize",
    "pack",
    "pack_dataset",
]
