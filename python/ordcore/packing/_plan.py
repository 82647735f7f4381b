"""Planning and materializing packs: the engine behind :mod:`ordcore.packing` (see its
docstring for the algorithms and conventions); import the public names from there."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from itertools import islice
from typing import Any, Union

import numpy as np
import numpy.typing as npt

from ordcore import _core
from ordcore._args import INT64_MAX, bool_arg, c_array, int_arg
from ordcore.errors import (
    DTypeError,
    InternalError,
    InvalidArgumentError,
    MissingDependencyError,
    OrdcoreError,
)

__all__ = [
    "ALGORITHMS",
    "NNLSHP_MAX_MATRIX_ENTRIES",
    "OVERLONG_POLICIES",
    "PackedBatch",
    "Plan",
    "PlanStats",
    "StreamingPacker",
    "attention_mask_from_segments",
    "materialize",
    "pack",
]

ALGORITHMS = ("lpfhp", "spfhp", "nnlshp", "bfd", "ffd", "nf")
OVERLONG_POLICIES = ("error", "truncate", "split", "drop")
#: NNLSHP builds a dense ``max_len x strategies`` matrix; beyond this many entries it raises
#: (``max_len=512`` with 3 sequences per pack has 22,102 strategies, 11.3M entries, ~20 s).
NNLSHP_MAX_MATRIX_ENTRIES = 16_000_000

Tokens = Union[Sequence[npt.ArrayLike], tuple[npt.ArrayLike, npt.ArrayLike]]


@dataclass(frozen=True)
class PlanStats:
    """Statistics of a plan, computed from lengths alone (no tokens needed).

    ``num_packs`` is the exact number of rows the packed dataset has, so learning-rate
    schedules can be set before training starts. ``efficiency`` is real tokens divided by
    ``num_packs * max_len``. ``lower_bound_sum`` is ``ceil(sum / max_len)`` and
    ``lower_bound_l2`` the Martello-Toth bound L2 (both over the packed segments with their
    planned, padded lengths); ``packs_over_*`` divide ``num_packs`` by them.
    """

    num_packs: int
    num_sequences: int
    num_segments: int
    real_tokens: int
    padding_tokens: int
    efficiency: float
    sequences_per_pack: float
    deepest_pack: int
    lower_bound_sum: int
    lower_bound_l2: int
    packs_over_lower_bound_sum: float
    packs_over_lower_bound_l2: float
    dropped_tokens: int
    dropped_sequences: int
    truncated_sequences: int
    split_sequences: int
    num_fragments: int
    empty_sequences: int

    @property
    def lower_bound(self) -> int:
        """The simple lower bound ``ceil(sum / max_len)`` (alias of ``lower_bound_sum``)."""
        return self.lower_bound_sum


_PLAN_ARRAYS = ("pack_offsets", "seq_index", "start", "stop", "fragment", "lengths")


class Plan:
    """A packing plan: CSR over packs (``pack_offsets``, shape ``(P + 1,)``) plus one slot per
    packed segment.

    Slot arrays (all shape ``(num_segments,)``): ``seq_index`` (int64, the source sequence),
    ``start`` / ``stop`` (int64, the token range taken from it: ``0..len`` normally,
    ``0..max_len`` when truncated, consecutive ranges for fragments of a split sequence) and
    ``fragment`` (bool). ``lengths`` (int64, ``(num_sequences,)``) are the source lengths the
    plan was built for. ``len(plan)`` is the number of packs; iterating yields, per pack, the
    int64 array of its sequence indices. Plans are immutable; build them with :func:`pack`.
    """

    __slots__ = ("_arrays", "_core", "algorithm")

    def __init__(self, core: _core.PackingPlan, algorithm: str) -> None:
        self._core = core
        self.algorithm = algorithm
        self._arrays: dict[str, npt.NDArray[Any]] = {}

    def _array(self, name: str) -> npt.NDArray[Any]:
        arr = self._arrays.get(name)
        if arr is None:
            arr = np.asarray(getattr(self._core, name))
            arr.setflags(write=False)
            self._arrays[name] = arr
        return arr

    @property
    def max_len(self) -> int:
        """Pack capacity ``L`` in tokens."""
        return int(self._core.max_len)

    @property
    def pad_to_multiple_of(self) -> int:
        """Each segment was planned with its length rounded up to this multiple."""
        return int(self._core.pad_to_multiple_of)

    @property
    def num_packs(self) -> int:
        """Number of packs (rows)."""
        return int(self._core.num_packs)

    @property
    def pack_offsets(self) -> npt.NDArray[np.int64]:
        """int64 ``(P + 1,)``: pack ``p`` holds slots ``pack_offsets[p]:pack_offsets[p+1]``."""
        return self._array("pack_offsets")

    @property
    def seq_index(self) -> npt.NDArray[np.int64]:
        """int64 ``(num_segments,)``: source sequence of each slot."""
        return self._array("seq_index")

    @property
    def start(self) -> npt.NDArray[np.int64]:
        """int64 ``(num_segments,)``: first token taken from the source sequence."""
        return self._array("start")

    @property
    def stop(self) -> npt.NDArray[np.int64]:
        """int64 ``(num_segments,)``: one past the last token taken."""
        return self._array("stop")

    @property
    def fragment(self) -> npt.NDArray[np.bool_]:
        """bool ``(num_segments,)``: whether the slot is a fragment of a split sequence."""
        return self._array("fragment")

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        """int64 ``(num_sequences,)``: the source lengths the plan was built for."""
        return self._array("lengths")

    @property
    def stats(self) -> PlanStats:
        """:class:`PlanStats` of this plan."""
        return PlanStats(**self._core.stats)

    def __len__(self) -> int:
        return self.num_packs

    def __getitem__(self, p: int) -> npt.NDArray[np.int64]:
        n = self.num_packs
        p = int_arg("p", p, None, None)
        if not -n <= p < n:
            raise IndexError(f"pack {p} out of range for a plan of {n} packs")
        p %= n
        off = self.pack_offsets
        return self.seq_index[off[p] : off[p + 1]]

    def __iter__(self) -> Iterator[npt.NDArray[np.int64]]:
        off = self.pack_offsets
        idx = self.seq_index
        for p in range(self.num_packs):
            yield idx[off[p] : off[p + 1]]

    def __repr__(self) -> str:
        s = self.stats
        return (
            f"Plan(algorithm={self.algorithm!r}, max_len={self.max_len}, "
            f"num_packs={s.num_packs}, efficiency={s.efficiency:.4%})"
        )

    def to_dict(self) -> dict[str, npt.NDArray[Any]]:
        """The plan as NumPy arrays (what :meth:`to_npz` saves)."""
        out: dict[str, npt.NDArray[Any]] = {k: self._array(k) for k in _PLAN_ARRAYS}
        out["max_len"] = np.asarray(self.max_len, dtype=np.int64)
        out["pad_to_multiple_of"] = np.asarray(self.pad_to_multiple_of, dtype=np.int64)
        out["algorithm"] = np.asarray(self.algorithm)
        return out

    @classmethod
    def from_dict(cls, arrays: Any) -> Plan:
        """Rebuilds a plan from :meth:`to_dict` output, validating every array.

        Raises
        ------
        ordcore.IndexFormatError
            A key is missing.
        ordcore.InvalidArgumentError
            The arrays are inconsistent (a pack over ``max_len``, a slot out of range, two
            slots sharing a token of one sequence, ...), not 1-D, or hold a value beyond
            int64.
        ordcore.DTypeError
            An index array is not integer (floats are not truncated), or ``fragment`` is
            neither boolean nor 0/1.
        """
        from ordcore.errors import IndexFormatError

        if not (hasattr(arrays, "keys") and hasattr(arrays, "__getitem__")):
            raise InvalidArgumentError(
                f"arrays: expected a mapping of arrays (Plan.to_dict()), got {type(arrays).__name__}"
            )
        try:
            a = {k: arrays[k] for k in (*_PLAN_ARRAYS, "max_len", "pad_to_multiple_of")}
            algorithm = str(arrays["algorithm"]) if "algorithm" in arrays else "unknown"
        except KeyError as exc:
            raise IndexFormatError(f"not an ordcore packing plan: missing {exc}") from None
        def vector(k: str) -> npt.NDArray[Any]:
            try:
                v = np.asarray(a[k])
            except ValueError:
                raise InvalidArgumentError(f"arrays[{k!r}]: is not a 1-D array") from None
            if v.ndim != 1:
                raise InvalidArgumentError(f"arrays[{k!r}]: must be 1-D, got shape {v.shape}")
            return v

        def i64(k: str) -> npt.NDArray[np.int64]:
            v = vector(k)
            if v.size == 0:
                return np.zeros(0, dtype=np.int64)
            if v.dtype == object and all(
                isinstance(e, (int, np.integer)) and not isinstance(e, (bool, np.bool_))
                for e in v.tolist()
            ):  # Python ints, some beyond int64
                try:
                    return np.array(v.tolist(), dtype=np.int64)
                except OverflowError:
                    raise InvalidArgumentError(f"arrays[{k!r}]: a value does not fit int64") from None
            if v.dtype == np.bool_ or v.dtype.kind not in "iu":
                raise DTypeError(f"arrays[{k!r}]: must be integers, got dtype {v.dtype}")
            if v.dtype.kind == "u" and int(v.max()) > INT64_MAX:
                raise InvalidArgumentError(f"arrays[{k!r}]: a value does not fit int64")
            return np.ascontiguousarray(v, dtype=np.int64)

        def flags(k: str) -> npt.NDArray[np.bool_]:
            v = vector(k)
            if v.dtype != np.bool_ and v.size and not (
                v.dtype.kind in "iu" and bool(np.isin(v, (0, 1)).all())
            ):
                raise DTypeError(f"arrays[{k!r}]: must be booleans (or 0/1), got dtype {v.dtype}")
            return np.ascontiguousarray(v, dtype=np.bool_)

        core = _core.PackingPlan.from_arrays(
            int_arg("max_len", a["max_len"]),
            int_arg("pad_to_multiple_of", a["pad_to_multiple_of"]),
            i64("pack_offsets"),
            i64("seq_index"),
            i64("start"),
            i64("stop"),
            flags("fragment"),
            i64("lengths"),
        )
        return cls(core, algorithm)

    def to_npz(self, path: str | os.PathLike[str]) -> None:
        """Saves the plan to an ``.npz`` file (``numpy.savez_compressed``)."""
        np.savez_compressed(path, **self.to_dict())  # type: ignore[arg-type]

    @classmethod
    def from_npz(cls, path: str | os.PathLike[str]) -> Plan:
        """Loads a plan saved by :meth:`to_npz`."""
        with np.load(path, allow_pickle=False) as z:
            return cls.from_dict({k: z[k] for k in z.files})


def _as_lengths(lengths: npt.ArrayLike) -> npt.NDArray[np.int64]:
    try:
        arr = np.asarray(lengths)
    except ValueError:
        raise InvalidArgumentError(
            "lengths: must be a 1-D sequence of integers, got a ragged nested sequence (pass "
            "the lengths, e.g. [len(t) for t in tokens])"
        ) from None
    if arr.ndim != 1:
        raise InvalidArgumentError(f"lengths: must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise DTypeError(f"lengths: must be integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64 and int(arr.max()) > np.iinfo(np.int64).max:
        raise InvalidArgumentError("lengths: values exceed int64")
    return c_array(arr, np.int64)


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise InvalidArgumentError(
            f"{name}: unknown value {value!r}; expected one of {', '.join(map(repr, choices))}"
        )
    return value


def _check_int(name: str, value: object, minimum: int) -> int:
    return int_arg(name, value, minimum)


def pack(
    lengths: npt.ArrayLike,
    max_len: int,
    *,
    algorithm: str = "lpfhp",
    max_seqs_per_pack: int | None = None,
    overlong: str = "error",
    allow_empty: bool = False,
    pad_to_multiple_of: int = 1,
    seed: int = 0,
) -> Plan:
    """Plans packs of at most ``max_len`` tokens from sequence lengths alone.

    Parameters
    ----------
    lengths : array_like of int, shape (n,)
        Token count of each sequence.
    max_len : int
        Pack capacity ``L`` in tokens (1 .. 2**30).
    algorithm : {"lpfhp", "spfhp", "nnlshp", "bfd", "ffd", "nf"}
        See the module docstring. ``nnlshp`` needs SciPy and builds a dense
        ``max_len x strategies`` matrix: it raises beyond ``NNLSHP_MAX_MATRIX_ENTRIES``
        (about ``max_len=512`` with 3 sequences per pack, the paper's setting).
    max_seqs_per_pack : int or None
        At most this many segments per pack (``None``: unlimited; for ``nnlshp`` 3, the
        paper's default).
    overlong : {"error", "truncate", "split", "drop"}
        Sequences longer than ``max_len``: raise naming the first one; keep the first
        ``max_len`` tokens (the rest counted in ``stats.dropped_tokens``); cut into
        ``ceil(len / max_len)`` fragments flagged in ``plan.fragment``; leave out (counted).
    allow_empty : bool
        Zero-length sequences raise unless this is true; then they are skipped and never
        emitted as segments (``stats.empty_sequences`` counts them).
    pad_to_multiple_of : int
        Plan each segment with its length rounded up to this multiple, so that
        :func:`materialize` can pad every sequence to it (context parallelism needs ``2*cp``).
        ``max_len`` must be a multiple of it.
    seed : int
        Seed of the slot assignment of the histogram algorithms (the same inputs and seed give
        the same plan; item-wise algorithms are seed-free).

    Returns
    -------
    Plan

    Raises
    ------
    ordcore.DTypeError
        ``lengths`` are not integers.
    ordcore.InvalidArgumentError
        Negative lengths, ``max_len < 1``, ``max_seqs_per_pack < 1``, an unknown algorithm or
        policy, an overlong sequence under ``overlong="error"``, an empty one without
        ``allow_empty``, more than ``2**32 - 2`` segments after the overlong policy, a ragged
        nested ``lengths``, an ``allow_empty`` that is not a bool, or tokens left out by the
        overlong policy adding up to more than ``2**64 - 1``.
    MemoryError
        The plan would need more memory than this process can use (estimated before
        allocating: about 100 bytes per segment, and for ``lpfhp``/``spfhp``/``nnlshp`` 64
        bytes per token of ``max_len``; ``bfd``/``ffd``/``nf`` need no table over ``max_len``
        beyond what the number of sequences justifies).
    ordcore.MissingDependencyError
        ``nnlshp`` without SciPy.
    KeyboardInterrupt
        Ctrl-C stops the planning within a fraction of a second; nothing is returned.
    """
    algorithm = _check_choice("algorithm", algorithm, ALGORITHMS)
    overlong = _check_choice("overlong", overlong, OVERLONG_POLICIES)
    max_len = _check_int("max_len", max_len, 1)
    if max_seqs_per_pack is not None:
        max_seqs_per_pack = _check_int("max_seqs_per_pack", max_seqs_per_pack, 1)
    pad_to_multiple_of = _check_int("pad_to_multiple_of", pad_to_multiple_of, 1)
    seed = int_arg("seed", seed, 0, None) % 2**64
    allow_empty = bool_arg("allow_empty", allow_empty)
    arr = _as_lengths(lengths)
    if algorithm == "nnlshp":
        core = _nnlshp(
            arr,
            max_len,
            3 if max_seqs_per_pack is None else max_seqs_per_pack,
            overlong,
            allow_empty,
            pad_to_multiple_of,
            seed,
        )
    else:
        core = _core.packing_plan(
            arr,
            max_len,
            algorithm,
            max_seqs_per_pack,
            overlong,
            allow_empty,
            pad_to_multiple_of,
            seed,
        )
    return Plan(core, algorithm)


def _nnlshp_strategies(max_len: int, depth: int) -> tuple[npt.NDArray[np.int64], list[int]]:
    """All non-decreasing tuples of at most ``depth`` positive parts summing to ``max_len``,
    in the order of Graphcore's ``get_packing_strategies``, as CSR (offsets, flat lengths)."""
    flat: list[int] = []
    offsets = [0]

    def rec(start: int, previous: int, d: int, prefix: list[int]) -> None:
        gap = max_len - start
        if d == 1:
            if gap >= previous:
                flat.extend(prefix)
                flat.append(gap)
                offsets.append(len(flat))
            return
        for new in range(previous, gap + 1):
            if gap - new == 0:
                flat.extend(prefix)
                flat.append(new)
                offsets.append(len(flat))
            else:
                rec(start + new, new, d - 1, [*prefix, new])

    rec(0, 1, depth, [])
    return np.asarray(flat, dtype=np.int64), offsets


def _nnlshp(
    lengths: npt.NDArray[np.int64],
    max_len: int,
    depth: int,
    overlong: str,
    allow_empty: bool,
    pad_to_multiple_of: int,
    seed: int,
) -> _core.PackingPlan:
    """Non-negative least-squares histogram packing (Krell et al., arXiv 2107.02027, the
    published ``pack_using_nnlshp``): weights 0.09 on the residuals of lengths 1..8, one
    ``scipy.optimize.nnls`` solve, rounding, then the leftover of each length ``l`` is packed
    with the depth-2 strategy ``[l, max_len - l]`` (``[l]`` at depth 1)."""
    if pad_to_multiple_of != 1:
        raise InvalidArgumentError("pad_to_multiple_of: nnlshp supports only 1; use lpfhp")
    # With two or more parts per pack there are at least max_len // 2 + 1 strategies: refuse
    # a problem too large before counting (which takes max_len x depth steps).
    least = 1 if depth == 1 else max_len // 2 + 1
    count = least if least * max_len > NNLSHP_MAX_MATRIX_ENTRIES else int(
        _core.packing_count_strategies(max_len, min(depth, max_len))
    )
    if count * max_len > NNLSHP_MAX_MATRIX_ENTRIES:
        raise InvalidArgumentError(
            f"max_seqs_per_pack: nnlshp with max_len={max_len} and max_seqs_per_pack={depth} "
            f"enumerates {'at least ' if count == least else ''}{count:,} strategies, a "
            f"{max_len} x {count:,} dense NNLS problem "
            f"(limit {NNLSHP_MAX_MATRIX_ENTRIES:,} entries); use algorithm='lpfhp'"
        )
    try:
        from scipy.optimize import nnls  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:  # pragma: no cover - scipy is in the test environment
        raise MissingDependencyError(
            "algorithm='nnlshp' needs SciPy: pip install 'ordcore[packing]'"
        ) from exc
    hist = np.asarray(
        _core.packing_planned_histogram(lengths, max_len, overlong, allow_empty, 1),
        dtype=np.float64,
    )
    flat, offsets = _nnlshp_strategies(max_len, depth)
    n_strat = len(offsets) - 1
    cols = np.repeat(np.arange(n_strat), np.diff(offsets))
    a = np.zeros((max_len, n_strat), dtype=np.float64)
    np.add.at(a, (flat - 1, cols), 1.0)
    w0 = np.ones(max_len)
    w0[:8] = 0.09
    mixture, _ = nnls(w0[:, None] * a, w0 * hist)
    counts = np.rint(mixture).astype(np.int64)
    residual = hist.astype(np.int64) - (a @ counts).astype(np.int64)
    extra_flat: list[int] = []
    extra_off = [0]
    extra_counts: list[int] = []
    for length in np.flatnonzero(residual > 0) + 1:
        strategy = [int(length)] if depth == 1 or length == max_len else sorted(
            [int(length), max_len - int(length)]
        )
        extra_flat.extend(strategy)
        extra_off.append(len(extra_flat))
        extra_counts.append(int(residual[length - 1]))
    keep = np.flatnonzero(counts > 0)
    kept_lengths = [flat[offsets[j] : offsets[j + 1]] for j in keep]
    rec_lengths = np.concatenate([*kept_lengths, np.asarray(extra_flat, dtype=np.int64)])
    sizes = [len(x) for x in kept_lengths] + list(np.diff(extra_off))
    rec_offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
    rec_counts = np.concatenate([counts[keep], extra_counts]).astype(np.uint64)
    return _core.packing_plan_from_recipe(
        lengths,
        np.ascontiguousarray(rec_counts),
        np.ascontiguousarray(rec_offsets),
        np.ascontiguousarray(rec_lengths, dtype=np.int64),
        max_len,
        depth,
        overlong,
        allow_empty,
        1,
        seed,
    )


@dataclass(frozen=True)
class PackedBatch:
    """Arrays of one packed batch.

    ``input_ids`` (``dtype`` given to :func:`materialize`), ``position_ids`` (int64),
    ``segment_ids`` (int32: 1..k per row, 0 for padding), ``labels`` (int64): shape
    ``(rows, max_len)`` for ``layout="rows"``, ``(1, T)`` for ``layout="flat"``.
    ``cu_seqlens`` / ``cu_seqlens_padded`` (int32, ``(segments + 1,)``): cumulative real and
    per-sequence-padded lengths over the batch in row-major order (for ``flat`` the padded
    ones are exact offsets into the row; for ``rows`` they index the rows with the row-tail
    padding removed, i.e. ``np.flatnonzero(segment_ids.ravel())`` gathers the real tokens in
    ``cu_seqlens`` order). ``max_seqlen``: the longest segment. ``seq_index`` (int64): source
    sequence of each segment.
    """

    input_ids: npt.NDArray[np.integer[Any]]
    position_ids: npt.NDArray[np.int64]
    segment_ids: npt.NDArray[np.int32]
    labels: npt.NDArray[np.int64]
    cu_seqlens: npt.NDArray[np.int32]
    cu_seqlens_padded: npt.NDArray[np.int32]
    max_seqlen: int
    seq_index: npt.NDArray[np.int64]
    num_real_tokens: int

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict (e.g. to feed a model's keyword arguments)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _as_tokens(tokens: Tokens) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    if isinstance(tokens, tuple) and len(tokens) == 2:
        values = np.asarray(tokens[0])
        offsets = np.asarray(tokens[1])
        if offsets.ndim != 1 or (offsets.size and not np.issubdtype(offsets.dtype, np.integer)):
            raise DTypeError("tokens: offsets must be a 1-D integer array")
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if offsets.size == 0 or offsets[0] != 0 or np.any(np.diff(offsets) < 0):
            raise InvalidArgumentError("tokens: offsets must start at 0 and be non-decreasing")
        seqs = [values]
    else:
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
            raise DTypeError(
                "tokens: expected a list of 1-D integer arrays or a (values, offsets) tuple"
            )
        seqs = [np.asarray(t) for t in tokens]
        for i, s in enumerate(seqs):
            if s.ndim != 1:
                raise InvalidArgumentError(f"tokens: sequence {i} must be 1-D, got {s.shape}")
        offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum([s.size for s in seqs], out=offsets[1:])
    for i, s in enumerate(seqs):
        if s.ndim != 1:
            raise InvalidArgumentError(f"tokens: values must be 1-D, got {s.shape}")
        if s.size and (s.dtype == np.bool_ or not np.issubdtype(s.dtype, np.integer)):
            raise DTypeError(f"tokens: sequence {i} has dtype {s.dtype}, expected integers")
        if s.size and s.dtype == np.uint64 and int(s.max()) > np.iinfo(np.int64).max:
            raise InvalidArgumentError(f"tokens: sequence {i} has ids beyond int64")
    if len(seqs) == 1 and isinstance(tokens, tuple):
        values = np.ascontiguousarray(seqs[0], dtype=np.int64)
    else:
        values = (
            np.concatenate([s.astype(np.int64, copy=False) for s in seqs])
            if seqs
            else np.zeros(0, dtype=np.int64)
        )
    if int(offsets[-1]) != values.size:
        raise InvalidArgumentError(
            f"tokens: offsets end at {int(offsets[-1])} but there are {values.size} values"
        )
    return values, offsets


def materialize(
    plan: Plan,
    tokens: Tokens,
    *,
    pad_id: int,
    layout: str = "rows",
    position_ids_start: int = 0,
    pad_to_multiple_of: int = 1,
    label_ignore_index: int = -100,
    rows: npt.ArrayLike | None = None,
    fragment_positions: str = "restart",
    dtype: npt.DTypeLike = np.int64,
) -> PackedBatch:
    """Builds the training arrays of packs ``rows`` of ``plan``.

    Parameters
    ----------
    plan : Plan
    tokens : list of 1-D integer arrays, or tuple (values, offsets)
        Sequence ``i`` is ``tokens[i]`` or ``values[offsets[i]:offsets[i + 1]]``; its length
        must equal ``plan.lengths[i]``.
    pad_id : int
        Token id of padding.
    layout : {"rows", "flat"}
        ``rows``: one row of ``max_len`` per pack, padded at the end. ``flat``: the selected
        packs concatenated into one row without row padding (the form of Hugging Face's
        ``DataCollatorWithFlattening``).
    position_ids_start : int
        First position of every sequence (2 for RoBERTa-family models).
    pad_to_multiple_of : int
        Pad every sequence to a multiple of this many tokens (padding tokens get
        ``segment_ids`` 0, ``labels`` ignored, positions continuing the sequence); the result
        is in ``cu_seqlens_padded``. In ``rows`` layout the plan must have been made with a
        ``pad_to_multiple_of`` this value divides, or the padded pack may not fit.
    label_ignore_index : int
        Label of padding and of the first token of every sequence.
    rows : array_like of int, optional
        Pack indices to materialize, in order (default: all).
    fragment_positions : {"restart", "continue"}
        Positions of a fragment of a split sequence: restart at ``position_ids_start``, or
        continue from the fragment's offset in the source sequence.
    dtype : numpy integer dtype
        dtype of ``input_ids``; every used token and ``pad_id`` must fit in it.

    Returns
    -------
    PackedBatch

    Raises
    ------
    ordcore.InvalidArgumentError
        Tokens whose lengths disagree with the plan, ids outside ``dtype``, an unknown layout,
        ``pad_to_multiple_of < 1``, a padded pack longer than ``max_len``, rows out of range,
        more padded tokens than int32 ``cu_seqlens`` can index, positions past int64.
    ordcore.DTypeError
        Non-integer tokens or a non-integer ``dtype``.
    MemoryError
        The batch (28 bytes per output token) would not fit in this process's memory.
    KeyboardInterrupt
        Ctrl-C stops it within a fraction of a second; nothing is returned.
    """
    if not isinstance(plan, Plan):
        raise DTypeError(f"plan: expected an ordcore.packing.Plan, got {type(plan).__name__}")
    out_dtype = np.dtype(dtype)
    if not np.issubdtype(out_dtype, np.integer):
        raise DTypeError(f"dtype: must be an integer dtype, got {out_dtype}")
    info = np.iinfo(out_dtype)
    pad_to_multiple_of = _check_int("pad_to_multiple_of", pad_to_multiple_of, 1)
    layout = _check_choice("layout", layout, ("rows", "flat"))
    fragment_positions = _check_choice(
        "fragment_positions", fragment_positions, ("restart", "continue")
    )
    for name, v in (
        ("pad_id", pad_id),
        ("position_ids_start", position_ids_start),
        ("label_ignore_index", label_ignore_index),
    ):
        _check_int(name, v, -(2**63))
    values, offsets = _as_tokens(tokens)
    if offsets.size - 1 != plan.lengths.size:
        raise InvalidArgumentError(
            f"tokens: has {offsets.size - 1} sequences but the plan was built for "
            f"{plan.lengths.size}"
        )
    if rows is None:
        row_arr = np.arange(plan.num_packs, dtype=np.int64)
    else:
        row_arr = np.asarray(rows)
        if row_arr.ndim != 1 or (row_arr.size and not np.issubdtype(row_arr.dtype, np.integer)):
            raise DTypeError("rows: must be a 1-D array of integers")
        row_arr = np.ascontiguousarray(row_arr, dtype=np.int64)
    out = _core.packing_materialize(
        plan._core,
        values,
        offsets,
        row_arr,
        layout,
        int(pad_id),
        int(position_ids_start),
        fragment_positions,
        pad_to_multiple_of,
        int(label_ignore_index),
        max(int(info.min), -(2**63)),
        min(int(info.max), 2**63 - 1),
    )
    batch = PackedBatch(
        input_ids=out["input_ids"].astype(out_dtype, copy=False),
        position_ids=out["position_ids"],
        segment_ids=out["segment_ids"],
        labels=out["labels"],
        cu_seqlens=out["cu_seqlens"],
        cu_seqlens_padded=out["cu_seqlens_padded"],
        max_seqlen=int(out["max_seqlen"]),
        seq_index=out["seq_index"],
        num_real_tokens=int(out["num_real_tokens"]),
    )
    # The flash-attention varlen contract (the Rust core checks it too).
    if int(batch.cu_seqlens[-1]) != int(np.count_nonzero(batch.segment_ids)):
        raise InternalError("cu_seqlens[-1] differs from the number of real tokens")
    return batch


def attention_mask_from_segments(segment_ids: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Block-diagonal causal attention mask for PyTorch SDPA (``True`` = may attend).

    Parameters
    ----------
    segment_ids : array_like of int, shape (P, L) or (L,)
        As produced by :func:`materialize` (0 = padding).

    Returns
    -------
    numpy.ndarray of bool, shape (P, L, L) or (L, L)
        ``mask[p, i, j]`` is true when ``j <= i`` and tokens ``i`` and ``j`` are in the same
        non-zero segment. A padding query attends only to itself, so no softmax row is empty
        (an all-masked row makes SDPA return NaN); its output is ignored by the labels.
    """
    seg = np.asarray(segment_ids)
    if seg.ndim not in (1, 2):
        raise InvalidArgumentError(f"segment_ids: must be 1-D or 2-D, got shape {seg.shape}")
    if seg.size and not np.issubdtype(seg.dtype, np.integer):
        raise DTypeError(f"segment_ids: must be integers, got dtype {seg.dtype}")
    n = seg.shape[-1]
    causal = np.tril(np.ones((n, n), dtype=np.bool_))
    same = (seg[..., :, None] == seg[..., None, :]) & (seg[..., :, None] != 0)
    mask: npt.NDArray[np.bool_] = same & causal
    diag = np.arange(n)
    mask[..., diag, diag] = True
    return mask


def _naming_source_items(exc: OrdcoreError, base: int) -> OrdcoreError:
    """``exc`` of :func:`materialize` on one stream window (whose sequence ``i`` is source
    item ``base + i``), reworded to name the source item."""
    msg = re.sub(r"\bsequence (\d+)", lambda m: f"item {base + int(m.group(1))}", str(exc))
    if msg.startswith("tokens: "):
        msg = "source: " + msg[len("tokens: "):]
    return type(exc)(msg)


def _mix_seed(seed: int, window: int) -> int:
    """Per-window seed (SplitMix64 increment keeps windows independent)."""
    return (seed + 0x9E3779B97F4A7C15 * (window + 1)) % 2**64


def _refuse_overlong_item(
    lengths: npt.NDArray[np.int64], max_len: int, item: Callable[[int], tuple[int, int]]
) -> None:
    """Raises for the first window entry longer than ``max_len``, naming the stream's item.

    Streams plan windows with :func:`pack`, whose error would name the window-local
    ``lengths``; ``item(i)`` maps window entry ``i`` to (source item index, its token count).
    """
    if lengths.size and int(lengths.max()) > max_len:
        src, size = item(int(np.argmax(lengths > max_len)))
        raise InvalidArgumentError(
            f"source: item {src} has {size} tokens, more than max_len={max_len}; "
            f"pass overlong='split', 'truncate' or 'drop'"
        )


class StreamingPacker:
    """Packs a stream of token arrays per buffer window and yields materialized batches.

    Each window of ``buffer_size`` sequences is planned with :func:`pack` (seed mixed with
    the window number), then emitted as batches of up to ``batch_rows`` packs in plan order
    (a window's last batch may be smaller); the final partial window is flushed. Every token
    of the stream appears exactly once (or is split/truncated/dropped per ``overlong``), and
    the stream of batches is a pure function of the source and the settings.

    ``state_dict()`` after a batch records the window start (a source index), the window
    number and the packs already emitted; a packer given that state with
    :meth:`load_state_dict` and the same source continues with the next batch, exactly as an
    uninterrupted run would. The source is replayed from its beginning and the first
    ``window_start`` items are skipped; pass ``source_offset`` to :meth:`__call__` when the
    source already starts later. Each call without a newly loaded state starts from the
    beginning of the source (a second epoch yields the same batches again).

    All settings are checked when the packer is made; errors about a token name the source
    item it came from.

    Parameters
    ----------
    max_len : int
    algorithm : str
        Any of :data:`ALGORITHMS` (default ``bfd``).
    buffer_size : int
        Sequences per window.
    batch_rows : int
        Packs per yielded batch.
    seed, max_seqs_per_pack, overlong, allow_empty : see :func:`pack` (``overlong``
        defaults to ``"split"`` here: pretraining streams keep every token).
    pad_id, layout, position_ids_start, pad_to_multiple_of, label_ignore_index,
    fragment_positions, dtype : see :func:`materialize`.
    """

    def __init__(
        self,
        max_len: int,
        *,
        algorithm: str = "bfd",
        buffer_size: int = 10_000,
        batch_rows: int = 8,
        seed: int = 0,
        max_seqs_per_pack: int | None = None,
        overlong: str = "split",
        allow_empty: bool = False,
        pad_id: int = 0,
        layout: str = "rows",
        position_ids_start: int = 0,
        pad_to_multiple_of: int = 1,
        label_ignore_index: int = -100,
        fragment_positions: str = "restart",
        dtype: npt.DTypeLike = np.int64,
    ) -> None:
        self.max_len = _check_int("max_len", max_len, 1)
        self.algorithm = _check_choice("algorithm", algorithm, ALGORITHMS)
        self.buffer_size = _check_int("buffer_size", buffer_size, 1)
        self.batch_rows = _check_int("batch_rows", batch_rows, 1)
        self.seed = int_arg("seed", seed, 0, None)
        self.max_seqs_per_pack = (
            None if max_seqs_per_pack is None
            else _check_int("max_seqs_per_pack", max_seqs_per_pack, 1)
        )
        self.overlong = _check_choice("overlong", overlong, OVERLONG_POLICIES)
        self.allow_empty = bool_arg("allow_empty", allow_empty)
        multiple = _check_int("pad_to_multiple_of", pad_to_multiple_of, 1)
        if self.max_len % multiple:
            raise InvalidArgumentError(
                f"pad_to_multiple_of: {multiple} does not divide max_len={self.max_len}"
            )
        try:
            out_dtype = np.dtype(dtype)
        except TypeError:
            raise DTypeError(f"dtype: {dtype!r} is not a NumPy dtype") from None
        if not np.issubdtype(out_dtype, np.integer):
            raise DTypeError(f"dtype: must be an integer dtype, got {out_dtype}")
        self._mat: dict[str, Any] = {
            "pad_id": int_arg("pad_id", pad_id),
            "layout": _check_choice("layout", layout, ("rows", "flat")),
            "position_ids_start": int_arg("position_ids_start", position_ids_start),
            "pad_to_multiple_of": multiple,
            "label_ignore_index": int_arg("label_ignore_index", label_ignore_index),
            "fragment_positions": _check_choice(
                "fragment_positions", fragment_positions, ("restart", "continue")
            ),
            "dtype": out_dtype,
        }
        self._window = 0
        self._window_start = 0
        self._rows_done = 0
        self._resume = False

    def state_dict(self) -> dict[str, int]:
        """Position in the stream: ``window``, ``window_start`` (source index) and
        ``rows_done`` (packs of the current window already yielded)."""
        return {
            "window": self._window,
            "window_start": self._window_start,
            "rows_done": self._rows_done,
            "seed": self.seed,
            "buffer_size": self.buffer_size,
        }

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Restores a position saved by :meth:`state_dict` (same settings required).

        Raises
        ------
        ordcore.InvalidArgumentError
            ``state`` is not such a dict, or was saved with another ``seed``/``buffer_size``.
        """
        if not isinstance(state, Mapping):
            raise InvalidArgumentError(
                f"state: expected the dict of state_dict(), got {type(state).__name__}"
            )
        missing = [k for k in ("window", "window_start", "rows_done") if k not in state]
        if missing:
            raise InvalidArgumentError(f"state: missing {', '.join(missing)} (not a state_dict())")
        for key in ("seed", "buffer_size"):
            if key in state and int_arg(f"state[{key!r}]", state[key], None, None) != getattr(self, key):
                raise InvalidArgumentError(
                    f"state: was saved with {key}={state[key]}, this packer has "
                    f"{getattr(self, key)}"
                )
        self._window = _check_int("window", state["window"], 0)
        self._window_start = _check_int("window_start", state["window_start"], 0)
        self._rows_done = _check_int("rows_done", state["rows_done"], 0)
        self._resume = True

    def __call__(
        self, source: Iterable[npt.ArrayLike], *, source_offset: int = 0
    ) -> Iterator[PackedBatch]:
        """Yields batches for ``source`` (an iterable of 1-D integer token arrays): from the
        state given to :meth:`load_state_dict` just before, else from the beginning.

        Raises
        ------
        ordcore.InvalidArgumentError
            The loaded state does not fit ``source`` (it has fewer items than the saved
            window start, or that window has fewer packs than were emitted), a token array
            is not 1-D, empty without ``allow_empty`` or overlong under
            ``overlong="error"``, or a token does not fit ``dtype`` (naming the source item).
        ordcore.DTypeError
            A token array is not integer (naming the source item).
        """
        if not self._resume:
            self._window = self._window_start = self._rows_done = 0
        self._resume = False
        skip = self._window_start - _check_int("source_offset", source_offset, 0)
        if skip < 0:
            raise InvalidArgumentError(
                f"source_offset: {source_offset} is past the saved window start "
                f"{self._window_start}"
            )
        it = iter(source)
        skipped = sum(1 for _ in islice(it, skip))
        if skipped < skip:
            raise InvalidArgumentError(
                f"state: the source has {skipped + source_offset} items, fewer than the saved "
                f"window start {self._window_start}; it is not the source the state was saved "
                f"from"
            )
        while True:
            window = [np.asarray(t) for t in islice(it, self.buffer_size)]
            if not window:
                return
            lengths = np.asarray([t.size for t in window], dtype=np.int64)
            for i, t in enumerate(window):
                if t.ndim != 1:
                    raise InvalidArgumentError(
                        f"source: item {self._window_start + i} must be 1-D, got {t.shape}"
                    )
            base = self._window_start
            if not self.allow_empty and lengths.size and int(lengths.min()) == 0:
                raise InvalidArgumentError(
                    f"source: item {base + int(np.argmin(lengths))} is empty (zero-length segments crash varlen "
                    f"attention kernels); pass allow_empty=True to skip empty sequences"
                )
            if self.overlong == "error":
                _refuse_overlong_item(
                    lengths, self.max_len, lambda i: (base + i, int(lengths[i]))
                )
            plan = pack(
                lengths,
                self.max_len,
                algorithm=self.algorithm,
                max_seqs_per_pack=self.max_seqs_per_pack,
                overlong=self.overlong,
                allow_empty=self.allow_empty,
                pad_to_multiple_of=self._mat["pad_to_multiple_of"],
                seed=_mix_seed(self.seed, self._window),
            )
            if self._rows_done > plan.num_packs:
                raise InvalidArgumentError(
                    f"state: rows_done={self._rows_done} but window {self._window} (source "
                    f"items {base}..{base + len(window) - 1}) has {plan.num_packs} packs; it "
                    f"is not the source the state was saved from"
                )
            while self._rows_done < plan.num_packs:
                r0 = self._rows_done
                rows = np.arange(r0, min(r0 + self.batch_rows, plan.num_packs))
                try:
                    batch = materialize(plan, window, rows=rows, **self._mat)
                except OrdcoreError as exc:
                    raise _naming_source_items(exc, base) from None
                self._rows_done = int(rows[-1]) + 1
                yield batch
            self._window_start += len(window)
            self._window += 1
            self._rows_done = 0
