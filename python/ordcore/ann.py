"""Binary-quantized graph search: ``ordcore.ann``.

A training-free approximate-nearest-neighbour index after QuIVer ("Quantized Index for
Vector Retrieval", arXiv 2605.02171): every vector becomes a 2-bit sign-magnitude binary code
(or a 1-bit sign code), a Vamana graph (DiskANN, Subramanya et al., NeurIPS 2019) is built
and searched entirely in code space with popcounts, and only the final candidates are
reranked with exact float32 distances.

Beyond the paper: ``rotation="hadamard"`` centers the data and applies a seeded randomized
Hadamard rotation before coding, which makes Euclidean-native data (SIFT-like, all-positive
coordinates) codable; 4- and 8-bit scalar codes scored against the int8 query serve
low-dimensional data; :func:`bq_fitness` measures how well each code ranks a data set, and
``bits="auto"`` (the default) picks the cheapest code that serves it (:func:`choose_codes`).
Searches take a ``filter`` (allow-list or bitmap of ids); :meth:`BQGraphIndex.get` returns
stored vectors.

Conventions (hnswlib / faiss)
-----------------------------
* ids are int64 user labels; missing results are padded with id ``-1`` and distance ``+inf``.
* distances: ``"cosine"`` returns ``1 - cos(q, x)`` in ``[0, 2]`` (vectors are L2-normalized
  on add and search); ``"ip"`` returns ``1 - <q, x>`` (hnswlib's ``"ip"``); ``"l2"`` returns
  the squared Euclidean distance (hnswlib and faiss). Smaller is always nearer.
* Input arrays are 2-D; float16/float32/float64 and small integer dtypes (exactly
  representable in float32) are accepted and converted to float32; inputs are never modified.

Ctrl-C: ``add``, ``compact``, ``search``, :func:`exact_search` and :func:`encode` check for an
interrupt while they run (with the GIL released) and raise ``KeyboardInterrupt`` within a
fraction of a second; an index is left exactly as it was before the interrupted call (``add``
and ``compact`` stage their work and publish it only at the end). No function here writes into
a caller-provided buffer, so nothing is left half-written.

Memory: ``add``, ``search``, :func:`exact_search` and :func:`encode` estimate the memory they
need from their arguments before allocating and raise ``MemoryError`` naming the argument when
it exceeds what the process can use (physical memory, or the address space left under
``RLIMIT_AS``), instead of being killed.

CPU kernels: the code distance uses AVX-512 vector popcounts (VPOPCNTDQ) when the CPU has them
and scalar ``popcnt`` otherwise (:func:`cpu_kernel` names it). All kernels produce identical
graphs and results; setting the environment variable ``ORDCORE_ANN_KERNEL`` to ``popcnt`` or
``portable`` before the first index operation caps the choice.
"""

from __future__ import annotations

import copy
import errno
import json
import math
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Literal, TypedDict, cast

import numpy as np
import numpy.typing as npt

from ordcore import _core
from ordcore import gpu as _gpu
from ordcore._args import (
    bool_arg,
    filter_arg,
    lookup_ids_arg,
    float_matrix_arg,
    id_array_arg,
    UINT64_MAX,
    int_arg,
    num_threads_arg,
    size_arg,
    warn_unknown_kernel_cap,
)
from ordcore.errors import (
    BQFitnessWarning,
    DTypeError,
    IndexFormatError,
    InvalidArgumentError,
)

__all__ = [
    "BQGraphIndex",
    "choose_codes",
    "CodeChoice",
    "CHOICE_TARGET",
    "WidthFitness",
    "encode",
    "code_distance",
    "exact_search",
    "recall_at_k",
    "bq_fitness",
    "FitnessReport",
    "FITNESS_THRESHOLD",
    "cpu_kernel",
    "sq_kernel",
]

Metric = Literal["cosine", "ip", "l2"]
_METRICS = ("cosine", "ip", "l2")

#: Code-space recall@10 (see :func:`bq_fitness`) below which data counts as unfit for the
#: chosen settings: graph search then needs a very wide beam to reach high recall.
FITNESS_THRESHOLD = 0.3

#: ``add`` checks fitness on the first build of at least this many rows, with sampled
#: queries against every row added, as many as about this many distance terms allow.
_FITNESS_MIN_ROWS = 1000
_FITNESS_ADD_BUDGET = 2 * 10**9

def _check_bits(bits: object, other: str) -> int:
    """``bits`` as one of the code widths; ``other`` names the non-width value the caller
    also accepts (checked before), for the message."""
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or bits not in _WIDTHS:
        raise InvalidArgumentError(f"bits: must be {other}, 1, 2, 4 or 8, got {bits!r}")
    return int(bits)


def _check_metric(metric: str) -> None:
    if metric not in _METRICS:
        raise InvalidArgumentError(
            f"metric: unknown metric {metric!r} (expected 'cosine', 'ip' or 'l2')"
        )


def _positive_int(value: Any, arg: str) -> int:
    return size_arg(arg, value, 1)


#: Largest ``dim``, ``R`` and ``L_build`` an index accepts (what the file format stores:
#: ``L_build`` is a 32-bit field).
_MAX_DIM = 2**20
_MAX_R = 4096
_MAX_L_BUILD = 2**32 - 1


#: Below this many dimensions the 4/8-bit defaults are :data:`_LOW_DIM_SCALAR_BUILD` (see
#: :class:`BQGraphIndex`).
_LOW_DIM = 64
#: ``(R, L_build)`` of 1- and 2-bit codes at every dimension: the graphs of earlier releases.
_BINARY_BUILD = (64, 128)
#: ``(R, L_build)`` of 4/8-bit codes from :data:`_LOW_DIM` dimensions on (see
#: :class:`BQGraphIndex` for the measurements that kept them), and below.
_SCALAR_BUILD = (64, 128)
_LOW_DIM_SCALAR_BUILD = (56, 64)
#: An index whose first build has fewer rows than this, known when its defaults are
#: resolved (``bits="auto"``), takes a narrower construction beam: ``L_build`` 64, and 48
#: for 4/8-bit codes below :data:`_LOW_DIM` dimensions. On a small base it gives the same
#: recall for much less build time (see :class:`BQGraphIndex`).
_SMALL_BASE = 50_000
_SMALL_L_BUILD = 64
_SMALL_LOW_DIM_SCALAR_L_BUILD = 48


def _default_build(dim: int, bits: int, rows: int | None = None) -> tuple[int, int]:
    """The default ``(R, L_build)`` of an index of dimension ``dim`` with ``bits``-bit codes
    whose first build has ``rows`` rows (``None``: not known, the full-size defaults; an
    explicit ``bits=1``/``2`` so keeps the graphs of earlier releases): the one rule the
    single index, its automatic choice, ``ShardedIndex`` and the CLI all resolve through."""
    scalar = bits > 2
    low = scalar and dim < _LOW_DIM
    if not scalar:
        r, l_build = _BINARY_BUILD
    else:
        r, l_build = _LOW_DIM_SCALAR_BUILD if low else _SCALAR_BUILD
    if rows is not None and rows < _SMALL_BASE:
        l_build = _SMALL_LOW_DIM_SCALAR_L_BUILD if low else _SMALL_L_BUILD
    return r, l_build


def encode(x: npt.ArrayLike, *, bits: int = 2, metric: Metric = "cosine") -> npt.NDArray[np.uint64]:
    """Sign-magnitude binary codes of the rows of ``x`` (QuIVer, arXiv 2605.02171).

    Parameters
    ----------
    x : array_like, shape (n, D)
        Vectors (float or small-integer dtype; converted to float32).
    bits : {1, 2}
        ``1``: sign plane only; ``2``: sign then magnitude plane.
    metric : {"cosine", "ip", "l2"}
        Under ``"cosine"`` rows are L2-normalized first (norm accumulated in float64,
        ``x_i / norm`` rounded to float32); zero rows are then an error.

    Returns
    -------
    numpy.ndarray of uint64, shape (n, bits * ceil(D / 64))
        Per row, the sign plane (bit ``i % 64`` of word ``i // 64`` is 1 iff ``x_i > 0``),
        then for ``bits=2`` the magnitude plane (1 iff ``|x_i| > tau`` with
        ``tau = mean(|x_i|)``: the float32 values widened to float64, summed in index order
        in float64, divided by ``D`` in float64, compared in float64). Bits past ``D`` are 0.
        No rotation is applied here (an index with ``rotation="hadamard"`` codes rotated
        vectors).

    Raises
    ------
    InvalidArgumentError
        Bad ``bits``/``metric``, non-2-D input, NaN/inf, or a zero row under cosine.
    DTypeError
        A dtype that is not a real number type.
    """
    if _gpu.is_device_array(x):
        return _gpu.ann.encode(x, bits=bits, metric=metric)  # type: ignore[no-any-return]
    _check_metric(metric)
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or bits not in (1, 2):
        raise InvalidArgumentError(f"bits: must be 1 or 2, got {bits!r}")
    a = float_matrix_arg(x, "x")
    if a.shape[1] < 1:
        raise InvalidArgumentError("x: dimension must be at least 1")
    return _core.ann_encode(a, int(bits), metric)


def code_distance(
    codes_a: npt.ArrayLike, codes_b: npt.ArrayLike, dim: int, bits: int = 2
) -> npt.NDArray[np.uint32]:
    """Row-wise code distance between two arrays of codes from :func:`encode`.

    ``bits=2``: ``d(a, b) = 4D - sum_i s_a,i s_b,i m_a,i m_b,i`` with ``s = +-1`` the sign and
    ``m = 1 + strong`` the magnitude; ``bits=1``: Hamming distance of the sign planes.
    This is **not a metric**: ``d(a, a) = 3D - 3 * |strong_a| > 0`` in general, and a code can
    be nearer to another code than to itself.

    Parameters
    ----------
    codes_a, codes_b : array_like of uint64, shape (n, bits * ceil(dim / 64))
    dim : int
        The vector dimension ``D`` the codes were built from.
    bits : {1, 2}

    Returns
    -------
    numpy.ndarray of uint32, shape (n,)

    Raises
    ------
    DTypeError
        Codes that are not 64-bit integer words.
    InvalidArgumentError
        Shapes that differ or do not match ``dim`` and ``bits``, or bits set past ``dim``.
    """
    if _gpu.is_device_array(codes_a):
        return _gpu.ann.code_distance(codes_a, codes_b, dim, bits)  # type: ignore[no-any-return]
    arrays = []
    for name, codes in (("codes_a", codes_a), ("codes_b", codes_b)):
        c = np.asarray(codes)
        if c.dtype.kind not in "iu" or c.dtype.itemsize != 8:
            raise DTypeError(
                f"{name}: codes are uint64 words (from ordcore.ann.encode), got dtype {c.dtype}"
            )
        if c.ndim != 2:
            raise InvalidArgumentError(
                f"{name}: codes must be 2-D (n, words), got shape {c.shape}"
            )
        # Native byte order, then int64 words reinterpreted bit for bit.
        native = c.astype(c.dtype.newbyteorder("="), copy=False).view(np.uint64)
        arrays.append(np.require(native, requirements=["C", "A"]))
    a, b = arrays
    return _core.ann_code_distance(a, b, size_arg("dim", dim), int_arg("bits", bits, 0))


def exact_search(
    X: npt.ArrayLike,
    Q: npt.ArrayLike,
    k: int,
    metric: Metric = "cosine",
    *,
    num_threads: int | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Brute-force k nearest rows of ``X`` for each query (parallel over queries).

    Returns ``(ids int64 (nq, k), distances float32 (nq, k))`` in the module's distance
    conventions, nearest first, ties broken by the smaller row index; when ``k > len(X)`` the
    tail is padded with ``-1`` / ``+inf``. Same errors as :meth:`BQGraphIndex.search`.
    """
    if _gpu.is_device_array(X):
        return _gpu.ann.exact_search(X, Q, _positive_int(k, "k"), metric=metric)
    _check_metric(metric)
    k = _positive_int(k, "k")
    xa = float_matrix_arg(X, "X")
    qa = float_matrix_arg(Q, "Q", xa.shape[1], "the dimension of X,")
    return _core.ann_exact_search(xa, qa, k, metric, num_threads_arg(num_threads))


_KERNELS = ("portable", "popcnt", "avx512-vpopcntdq")
warn_unknown_kernel_cap("ORDCORE_ANN_KERNEL", _KERNELS)


def cpu_kernel() -> str:
    """Name of the code-distance kernel in use: ``"avx512-vpopcntdq"``, ``"popcnt"`` or
    ``"portable"``.

    Chosen once per process from the CPU's features (AVX-512F with VPOPCNTDQ, then scalar
    ``popcnt``); the environment variable ``ORDCORE_ANN_KERNEL`` set to ``"popcnt"`` or
    ``"portable"`` before the first index operation caps the choice. Every kernel gives the
    same graphs and search results; only the speed differs.
    """
    return _core.ann_kernel()


_SQ_KERNELS = ("scalar", "avx2", "avx512-vnni")
warn_unknown_kernel_cap("ORDCORE_ANN_SQ_KERNEL", _SQ_KERNELS)


def sq_kernel() -> str:
    """Name of the kernel of the 4- and 8-bit scalar codes: ``"avx512-vnni"`` (AVX-512BW +
    VNNI), ``"avx2"`` or ``"scalar"``.

    Chosen once per process from the CPU's features; ``ORDCORE_ANN_SQ_KERNEL`` set to
    ``"avx2"`` or ``"scalar"`` (or ``ORDCORE_ANN_KERNEL="portable"``) before the first index
    operation caps the choice. The query is scored in int8 lanes and every integer dot product
    is exact, so every kernel gives the same graphs and search results bit for bit.
    """
    return _core.ann_sq_kernel()


def recall_at_k(found: npt.ArrayLike, truth: npt.ArrayLike, k: int | None = None) -> float:
    """Mean recall@k: ``|found[i, :k] & truth[i, :k]| / k`` averaged over queries.

    ``found`` and ``truth`` are (nq, >= k) integer arrays (padding ids ``-1`` in ``found``
    never match). ``k`` defaults to ``found.shape[1]``.
    """
    f = np.asarray(found)
    t = np.asarray(truth)
    if f.ndim != 2 or t.ndim != 2 or f.shape[0] != t.shape[0]:
        raise InvalidArgumentError(
            f"found: shapes {f.shape} and {t.shape} must be 2-D with equal rows"
        )
    kk = f.shape[1] if k is None else _positive_int(k, "k")
    if kk == 0:
        raise InvalidArgumentError("found: has no columns, so k defaults to 0 (recall@0 is undefined)")
    if kk > f.shape[1] or kk > t.shape[1]:
        raise InvalidArgumentError(f"k: {kk} exceeds the columns of found or truth")
    if f.shape[0] == 0:
        return 0.0
    hits: int = 0
    for a, b in zip(f[:, :kk], t[:, :kk]):
        hits += len(set(a[a >= 0].tolist()) & set(b.tolist()))
    return float(hits) / float(f.shape[0] * kk)


class WidthFitness(TypedDict):
    """The estimates of :func:`bq_fitness` for one code width."""

    recall: float
    recall_rotated: float
    stderr: float
    stderr_rotated: float


class FitnessReport(TypedDict):
    """What :func:`bq_fitness` returns."""

    recall: float
    recall_rotated: float
    stderr: float
    stderr_rotated: float
    bits: int
    metric: str
    k: int
    sample: int
    base: int
    threshold: float
    fit: bool
    fit_rotated: bool
    recommendation: str
    recommended_rotation: str | None
    per_bits: dict[int, WidthFitness]


def _code_recall(
    a: npt.NDArray[np.float32],
    metric: str,
    codes: list[tuple[int, int | None]],
    k: int,
    queries: int,
    seed: int,
    num_threads: int | None,
    depth: int | None = None,
) -> list[tuple[float, float]]:
    """Per entry ``(bits, rotation seed or None)`` of ``codes``, the estimated share of the
    exact top-``k`` among the code-space top-``depth`` (default ``k``: the code-space
    recall@k) of an index holding all rows of ``a``, and its standard error: ``queries`` rows
    drawn with ``seed``, each scored against every other row the way the index's search
    scores it (the one estimator of ``rust/ordcore-core/src/ann/fitness.rs``; the exact
    neighbours are computed once)."""
    n = a.shape[0]
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, size=min(queries, n), replace=False)).astype(np.uint64)
    per_query = _core.ann_fitness_recall(a, metric, k, depth, codes, rows, num_threads)
    m = per_query.shape[1]
    out = []
    for r in per_query:
        se = float(r.std(ddof=1) / math.sqrt(m)) if m > 1 else float("inf")
        out.append((float(r.mean()), se))
    return out


def _fmt(value: float) -> str:
    """A recall for messages, rounded **down** to 3 decimals, so a value below the threshold
    never prints as the threshold (0.2996 prints 0.299, not 0.30)."""
    return f"{math.floor(value * 1000) / 1000:.3f}"


def bq_fitness(
    X: npt.ArrayLike,
    *,
    metric: Metric,
    sample: int = 500,
    k: int = 10,
    seed: int = 0,
    bits: int | None = None,
    num_threads: int | None = None,
) -> FitnessReport:
    """How well binary codes rank this data, with and without the Hadamard rotation,
    estimated for an index that holds **all** rows of ``X``.

    ``sample`` query rows drawn with ``seed`` are each scored against every other row of
    ``X``: the code-space top-``k`` (the scoring the index uses: the query's code against each
    row's code, :func:`code_distance`) is compared with the exact top-``k`` in ``metric``, and
    the mean recall@k is reported, rows tied at the ``k``-th code distance sharing the
    remaining places evenly (the expected recall of a random tie-break). Recall of a code
    falls as the base grows, so the figure is that of the base's real size; ``sample`` only
    sets the precision (``stderr``). Graph search and reranking recover much of what the codes
    miss, but when this figure is below :data:`FITNESS_THRESHOLD` (0.3) a code-space graph
    needs a very wide beam: the data is reported unfit. Cost: ``sample * len(X)`` exact and
    code distances (about a second for 500 queries on 200,000 x 50).

    Parameters
    ----------
    X : array_like, shape (n, D)
        The data the index would hold (n > k).
    metric : {"cosine", "ip", "l2"}
        Required: the metric the index will use (the ranking differs per metric).
    sample : int
        Query rows drawn from ``X`` (all rows when ``n <= sample``).
    k, seed, num_threads
        Recall depth, sampling and rotation seed, threads.
    bits : {None, 1, 2, 4, 8}
        The code width of the top-level fields (``None``: every width in ``per_bits``, the
        top-level fields for 2 bits). Each width is scored as the index's search scores it:
        1 and 2 bits code to code, 4 and 8 bits the query's int8 form against the codes.

    Returns
    -------
    FitnessReport
        ``recall`` and ``recall_rotated`` (estimated code-space recall@k without / with
        centering and the randomized Hadamard rotation) with their standard errors
        ``stderr`` / ``stderr_rotated``, ``sample`` (queries) and ``base`` (rows scored
        against), ``fit`` / ``fit_rotated``, and a ``recommendation`` sentence with
        ``recommended_rotation`` (``None`` or ``"hadamard"``; rotation is recommended when it
        raises recall by more than 0.05). Figures in the sentence are rounded down.
        ``per_bits`` maps each width scored to its ``recall``, ``recall_rotated``,
        ``stderr`` and ``stderr_rotated``. For the automatic choice of a code see
        :func:`choose_codes`.

    Raises
    ------
    InvalidArgumentError
        Fewer than ``k + 1`` rows, NaN/inf, zero rows under cosine, bad arguments.
    """
    _check_metric(metric)
    if bits is not None:
        _check_bits(bits, "None")
    sample = _positive_int(sample, "sample")
    k = _positive_int(k, "k")
    seed = int_arg("seed", seed, 0, UINT64_MAX)
    a = float_matrix_arg(X, "X")
    if a.shape[0] <= k:
        raise InvalidArgumentError(f"X: needs more than k = {k} rows, got {a.shape[0]}")
    num_threads = num_threads_arg(num_threads)
    widths = _WIDTHS if bits is None else (int(bits),)
    bits = 2 if bits is None else int(bits)
    codes = [(b, r) for b in widths for r in (None, int(seed))]
    est = _code_recall(a, metric, codes, k, sample, seed, num_threads)
    per_bits = {
        b: WidthFitness(
            recall=est[2 * i][0],
            recall_rotated=est[2 * i + 1][0],
            stderr=est[2 * i][1],
            stderr_rotated=est[2 * i + 1][1],
        )
        for i, b in enumerate(widths)
    }
    mine = per_bits[bits]
    plain, se = mine["recall"], mine["stderr"]
    rotated, se_rot = mine["recall_rotated"], mine["stderr_rotated"]
    rec: str | None = "hadamard" if rotated > plain + 0.05 else None
    fit, fit_rot = plain >= FITNESS_THRESHOLD, rotated >= FITNESS_THRESHOLD
    p, r, t = _fmt(plain), _fmt(rotated), _fmt(FITNESS_THRESHOLD)
    if fit and rec is None:
        text = f"fit: code-space recall@{k} {p} (threshold {t}); no rotation needed"
    elif rec == "hadamard" and fit_rot:
        text = f"use rotation='hadamard': code-space recall@{k} rises from {p} to {r}"
    elif rec == "hadamard":
        text = (
            f"unfit even rotated (recall@{k} {p} -> {r}, threshold {t}); use "
            "rotation='hadamard', a wide ef_search, or a float index"
        )
    else:
        text = (
            f"unfit: code-space recall@{k} {p} (rotated {r}, threshold {t}); use a wide "
            "ef_search or a float index"
        )
    return FitnessReport(
        recall=plain,
        recall_rotated=rotated,
        stderr=se,
        stderr_rotated=se_rot,
        bits=int(bits),
        metric=metric,
        k=k,
        sample=min(sample, int(a.shape[0])),
        base=int(a.shape[0]),
        threshold=FITNESS_THRESHOLD,
        fit=fit,
        fit_rotated=fit_rot,
        recommendation=text,
        recommended_rotation=rec,
        per_bits=per_bits,
    )


#: Code widths in order of cost (memory of the codes and time of a distance).
_WIDTHS = (1, 2, 4, 8)

#: The automatic choice's estimate reranks this many code-space candidates: the default
#: ``ef_search`` (and so ``rerank_k``) of :meth:`BQGraphIndex.search`.
_CHOICE_DEPTH = 64

#: Default ``target`` of :func:`choose_codes` (see its calibration notes).
CHOICE_TARGET = 0.97

#: Query rows the choice samples, and the budget of distance terms that bounds them on ``add``.
_CHOICE_SAMPLE = 200
_CHOICE_MIN_SAMPLE = 50


class _CodeChoiceKeys(TypedDict):
    """The keys every :class:`CodeChoice` has."""

    bits: int
    rotation: str | None
    target: float
    base: int
    sample: int
    estimates: dict[str, float]
    reason: str


class CodeChoice(_CodeChoiceKeys, total=False):
    """What :func:`choose_codes` returns and ``BQGraphIndex(bits="auto").choice`` holds."""

    #: The rerank store ``rerank_dtype="auto"`` picked with the codes (``BQGraphIndex.choice``
    #: only; absent when ``rerank_dtype`` was given, whose store is not widened on later
    #: adds, and in files written before it; see :func:`_lossless_rerank_dtype`).
    rerank_dtype: str


#: ``bits="auto"`` takes 8-bit codes instead of the 4-bit ones it would pick when the 8-bit
#: index's hot path per row (:func:`_hot_bytes_per_row`) is at most this factor of the
#: 4-bit one's (see :func:`choose_codes`).
_PREFER_8_BITS = 1.25


def _hot_bytes_per_row(dim: int, bits: int, rotation: str | None, rows: int) -> int:
    """Bytes per row of the search hot path of an index with ``bits``-bit (4 or 8) codes and the
    default ``R`` for a first build of ``rows`` rows: the code (scalar codes: a 16-byte
    header and ``bits`` bits per coordinate, padded to a multiple of 64 coordinates after the
    rotation's padding) plus the ``4 * R`` bytes of a full neighbour list."""
    r = _default_build(dim, bits, rows)[0]
    coded = dim
    if rotation is not None:
        coded = _core.BQGraphIndex(dim, "l2", bits, r, r, 1.2, True, 0, "float32").code_dim()
    return 16 + -(-coded // 64) * 64 * bits // 8 + 4 * r


def _config_key(bits: int, rotation: str | None) -> str:
    return f"{bits}/{rotation or 'none'}"


def _estimates(
    a: npt.NDArray[np.float32],
    metric: str,
    configs: list[tuple[int, str | None]],
    *,
    base_size: int,
    seed: int,
    k: int = 10,
    sample: int = _CHOICE_SAMPLE,
    num_threads: int | None = None,
) -> tuple[list[float], int]:
    """Per ``(bits, rotation)`` in ``configs`` (rotation ``None``/``"none"`` or
    ``"hadamard"``), the estimated recall@k after an exact rerank of the code-space top
    :data:`_CHOICE_DEPTH` in an index of ``base_size`` rows like ``a``; and the queries used.

    ``a`` stands for the base: when ``base_size`` exceeds ``len(a)``, ``k`` and the depth are
    scaled by ``len(a) / base_size`` (a row ranked ``r``-th among ``base_size`` rows ranks
    about ``r * len(a) / base_size``-th in the sample), at least 1 and ``k``; when it is
    smaller, a random ``base_size`` rows are scored."""
    n = a.shape[0]
    if base_size < n:
        keep = np.sort(np.random.default_rng(seed).choice(n, size=base_size, replace=False))
        a = np.ascontiguousarray(a[keep])
        n = base_size
    scale = n / base_size
    kk = max(1, round(k * scale))
    depth = min(n - 1, max(kk, round(_CHOICE_DEPTH * scale)))
    codes = [(int(b), None if r in (None, "none") else int(seed)) for b, r in configs]
    queries = min(sample, n)
    est = _code_recall(a, metric, codes, kk, queries, seed, num_threads, depth)
    return [e for e, _ in est], queries


def choose_codes(
    X: npt.ArrayLike,
    *,
    metric: Metric,
    base_size: int | None = None,
    target: float | None = None,
    k: int = 10,
    seed: int = 0,
    rotation: Literal["auto", "hadamard"] | None = "auto",
    num_threads: int | None = None,
    prefer_8_bits: bool = True,
) -> CodeChoice:
    """The code ``BQGraphIndex(bits="auto")`` picks for data like the rows of ``X``: the
    cheapest width (1 < 2 < 4 < 8 bits; at equal width no rotation before
    ``"hadamard"``) whose estimated recall@``k`` reaches ``target``, except that 8 bits
    replace 4 when an 8-bit code reaches the target too and the 8-bit index's hot path
    (code bytes + ``4 * R`` graph bytes a row at the default ``R``) is within 25 % of the
    4-bit one's (up to 128 dimensions at ``R`` = 64: on SIFT 400 against 336 bytes).

    The estimate is :func:`bq_fitness`'s estimator (``sample`` query rows scored against
    every row, the way the index's search scores them: code to code for 1 and 2 bits, the
    query's int8 form against the codes for 4 and 8 bits), read at the depth of a search at
    the default ``ef_search`` = 64: the share of the exact top-``k`` among the 64 best
    candidates in code space, which an exact rerank of those candidates recovers. Its query
    rows are 50 to 200 (as a budget of ``2e9`` distance terms allows).

    Calibration (``python benches/ann_choice.py DATASET --n N``, 300 queries; the estimate
    vs. the recall@10 of a ``BQGraphIndex`` of that code at ``ef_search`` 64 / 128):

    ===========================  ================  ========  ===============
    data                         code              estimate  graph @64 / 128
    ===========================  ================  ========  ===============
    glosses 100k x 384, cosine   1 bit, hadamard   0.955     0.940 / 0.980
    glosses 100k x 384, cosine   **2 bits**        0.994     0.989 / 0.997
    glosses 20k x 384, cosine    **2 bits**        0.996     0.993 / 0.998
    SIFT 200k x 128, l2          2 bits            0.644     0.263 / 0.394
    SIFT 200k x 128, l2          2 bits, hadamard  0.942     0.887 / 0.958
    SIFT 200k x 128, l2          4 bits            1.000     0.984 / 0.992
    SIFT 200k x 128, l2          4 bits, hadamard  0.982     0.968 / 0.995
    SIFT 200k x 128, l2          **8 bits**        1.000     0.989 / 0.997
    glosses PCA-50 100k, cosine  2 bits, hadamard  0.814     0.830 / 0.924
    glosses PCA-50 100k, cosine  **4 bits**        1.000     0.999 / 1.000
    Gaussian 100k x 64, l2       2 bits            0.399     0.322 / 0.460
    Gaussian 100k x 64, l2       **4 bits**        1.000     0.822 / 0.904
    ===========================  ================  ========  ===============

    (bold: the pick; on PCA-50 glosses and the Gaussian data the 8-bit preference below
    takes 8 bits now. The SIFT graph rows are of builds whose prunes score pairs with the
    query form, ``R`` 64, ``L_build`` 128, 1000 queries; before that change 4 bits gave
    0.930 / 0.984, 4 bits with rotation 0.918 / 0.976 and 8 bits 0.991 / 0.995. The 4- and
    8-bit rows without rotation are of codes that carry the decoded norm under l2, 300
    queries; with the exact norm 4 bits estimated 0.992, graph 0.970 / 0.996, and 8 bits
    0.989 / 0.996; the rotated row is of the exact norm.) The
    estimate tracks the graph at ``ef_search`` 64 within about 0.06 on
    real data (the graph loses what its navigation misses), so the default ``target``
    :data:`CHOICE_TARGET` = 0.97 keeps a margin: every pick on the real sets reaches recall@10
    0.95 by ``ef_search`` 128, and each cheaper code's index falls short of 0.95 at 64. On
    i.i.d. Gaussian data the codes are not the limit (8 bits: 0.825 / 0.902 too); the graph
    is, and a wider ``ef_search`` is the remedy.

    Why 8 bits over a close 4: the cheapest code in memory is not always the fastest at a
    recall. On SIFT 200k the 4-bit index reached recall@10 0.95 at 28k QPS and the 8-bit
    one (no rotation, same ``R`` / ``L_build``) at 66k, 2.3x, because the 4-bit graph lost
    more than its estimate says (0.929 at ``ef_search`` 64 against 0.992); on SIFT 20k the
    gap was 1.08x, on GloVe-50 200k 1.07x (1 search thread, CPU time, best of 5 interleaved
    runs). Construction now prunes the scalar codes with the query form of one candidate
    against the code of the other, which raised the 4-bit graph to recall@10 0.970 / 0.996
    at ``ef_search`` 64 / 128 (table), but at recall 0.95 it still runs at 0.55x the 8-bit
    graph's QPS: SIFT 200k, 1 search thread, CPU time, QPS interpolated between the
    ``ef_search`` around 0.95, 4 bits 39k (0.945 at 48, 0.970 at 64), 8 bits 71k (0.921 at
    16, 0.954 at 24), for 19 % more hot-path memory (``python benches/ann_build.py
    --dataset sift --n 200000 --reps 1 --settings "bits=4;bits=8" --efs 16,24,48,64``).
    With the decoded norm under l2 (both widths gained) the gap is 1.28x at 0.95 and about
    1.0x at 0.98: 4 bits 70k (0.921 at 16, 0.959 at 24), 8 bits 90k (0.948 at 16, 0.967 at
    24; ``--nq 1000 --reps 2 --no-hnswlib --efs 12,16,24,32,48,64``, load 4.5). Above 128 dimensions (glosses: 2 bits anyway) the 4-bit codes stay. Pass
    ``bits=4`` where code memory matters more than speed.

    Parameters
    ----------
    X : array_like, shape (n, D)
        Rows standing for the index's data (float or small-integer dtype).
    metric : {"cosine", "ip", "l2"}
    base_size : int, optional
        Rows of the index the choice is for (default ``len(X)``). Recall of a code falls as
        the base grows: for ``base_size > len(X)`` the estimate reads ``k`` and the depth
        scaled by ``len(X) / base_size`` (ranks scale with the base size; at least 1), for
        ``base_size < len(X)`` it scores a random ``base_size`` rows.
    target : float, optional
        Estimated recall@``k`` to reach, in ``(0, 1]`` (default :data:`CHOICE_TARGET`).
    k, seed, num_threads
        Recall depth, sampling and rotation seed (an index must use the same seed for the
        rotation to be the one scored), threads.
    rotation : {"auto", None, "hadamard"}
        ``"auto"``: choose it jointly; ``None`` / ``"hadamard"``: keep it.
    prefer_8_bits : bool
        Apply the 8-bit preference above (default). ``False`` keeps the cheapest code that
        reaches ``target``: what ``BQGraphIndex(bits="auto", rerank_dtype="int8")`` asks
        for, since a caller who gives up exact rerank distances for memory would not want
        the codes to grow for speed (GloVe-50 200k: total memory 0.95x hnswlib's index
        with 4 bits against 1.04x with 8).

    Returns
    -------
    CodeChoice
        ``bits``, ``rotation``, ``target``, ``base`` (``base_size``), ``sample`` (query rows),
        ``estimates`` (``"bits/rotation"`` -> estimate, e.g. ``"2/none"``) and ``reason`` (a
        sentence). When no code reaches ``target``, 8 bits with the best-scoring rotation.
        With fewer than 1000 rows (or ``k + 1``) the estimate says nothing about the index
        they start (every code finds most of a small base's top 64): 8 bits, no rotation
        unless asked, ``sample`` 0 and no ``estimates``.

    Raises
    ------
    InvalidArgumentError
        Bad arguments, NaN/inf, zero rows under cosine.
    """
    _check_metric(metric)
    k = _positive_int(k, "k")
    seed = int_arg("seed", seed, 0, UINT64_MAX)
    if rotation not in ("auto", None, "hadamard"):
        raise InvalidArgumentError(
            f"rotation: must be 'auto', None or 'hadamard', got {rotation!r}"
        )
    bool_arg("prefer_8_bits", prefer_8_bits)
    if target is None:
        target = CHOICE_TARGET
    if (
        isinstance(target, bool)
        or not isinstance(target, (int, float, np.floating))
        or not 0 < float(target) <= 1
    ):
        raise InvalidArgumentError(f"target: must be a number in (0, 1], got {target!r}")
    target = float(target)
    a = float_matrix_arg(X, "X")
    n = int(a.shape[0])
    if n == 0:
        raise InvalidArgumentError("X: has no rows; codes are chosen from at least one row")
    base = n if base_size is None else size_arg("base_size", base_size, 1)
    rots: tuple[str | None, ...] = (None, "hadamard") if rotation == "auto" else (rotation,)
    configs = [(b, r) for b in _WIDTHS for r in rots]
    if min(n, base) < max(_FITNESS_MIN_ROWS, k + 1):
        # The estimate reads the top 64 of the rows: on a few hundred rows every code finds
        # nearly all of them, which says nothing about the index those rows start.
        rot = None if rotation == "auto" else rotation
        return CodeChoice(
            bits=8, rotation=rot, target=target, base=base, sample=0, estimates={},
            reason=(
                f"8 bits{' with rotation=hadamard' if rot else ''}: {min(n, base)} row{'s are' if min(n, base) != 1 else ' is'} "
                f"too few to estimate recall@{k} (fewer than {max(_FITNESS_MIN_ROWS, k + 1)}), "
                "so the most accurate code"
            ),
        )
    queries = int(min(_CHOICE_SAMPLE, max(_CHOICE_MIN_SAMPLE,
                                          _FITNESS_ADD_BUDGET // max(1, n * a.shape[1]))))
    est, used = _estimates(
        a, metric, configs, base_size=base, seed=seed, k=k, sample=queries,
        num_threads=num_threads_arg(num_threads),
    )
    estimates = {_config_key(b, r): e for (b, r), e in zip(configs, est)}
    chosen = next(((b, r, e) for (b, r), e in zip(configs, est) if e >= target), None)
    where = f"{used} sampled queries standing for {base} rows"
    if chosen is not None:
        b, r, e = chosen
        cheaper = [
            f"{_config_key(cb, cr)} {_fmt(ce)}"
            for (cb, cr), ce in zip(configs[: configs.index((b, r))], est)
        ]
        reason = (
            f"{b} bit{'s' if b != 1 else ''}{' with rotation=hadamard' if r else ''}: the cheapest code whose "
            f"estimated recall@{k} at ef_search={max(_CHOICE_DEPTH, k)} ({_fmt(e)}) reaches the target "
            f"{target:g} ({where}"
            + (f"; cheaper codes: {', '.join(cheaper)}" if cheaper else "")
            + ")"
        )
        eight = next(((cr, ce) for (cb, cr), ce in zip(configs, est) if cb == 8 and ce >= target),
                     None)
        if b == 4 and eight is not None and not prefer_8_bits:
            reason += "; the 8-bit preference is off (a memory-first index)"
        elif b == 4 and eight is not None:
            dim = int(a.shape[1])
            hot4 = _hot_bytes_per_row(dim, 4, r, base)
            hot8 = _hot_bytes_per_row(dim, 8, eight[0], base)
            if hot8 <= _PREFER_8_BITS * hot4:
                r8, e8 = eight
                reason = (
                    f"8 bits{' with rotation=hadamard' if r8 else ''} (estimated recall@{k} "
                    f"{_fmt(e8)}) instead of {_config_key(b, r)}, the cheapest code whose "
                    f"estimate ({_fmt(e)}) reaches the target {target:g} ({where}"
                    + (f"; cheaper codes: {', '.join(cheaper)}" if cheaper else "")
                    + f"): its hot path, {hot8} bytes a row (codes + graph), is within "
                    f"{_PREFER_8_BITS - 1:.0%} of the 4-bit index's {hot4}, and 8-bit graphs "
                    "reach a recall faster (SIFT 200k: 1.3x the QPS at recall@10 0.95)"
                )
                b, r = 8, r8
    else:
        best = max((e, -i) for i, ((cb, _), e) in enumerate(zip(configs, est)) if cb == 8)
        b, r = configs[-best[1]]
        e = best[0]
        reason = (
            f"8 bits{' with rotation=hadamard' if r else ''}: no code reaches the target "
            f"{target:g} (best estimated recall@{k} at ef_search={max(_CHOICE_DEPTH, k)}: "
            f"{_fmt(e)}, {where}); "
            "expect to need a wide ef_search"
        )
    return CodeChoice(
        bits=b, rotation=r, target=target, base=base, sample=used, estimates=estimates,
        reason=reason,
    )


_ERRNO = {
    FileNotFoundError: errno.ENOENT,
    PermissionError: errno.EACCES,
    IsADirectoryError: errno.EISDIR,
    NotADirectoryError: errno.ENOTDIR,
    FileExistsError: errno.EEXIST,
}


def _os_error(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` as the same ``OSError`` subclass with ``errno``, ``strerror`` and ``filename``
    set (``str()`` reads ``[Errno 2] No such file or directory: 'path'``)."""
    code = exc.errno if exc.errno is not None else _ERRNO.get(type(exc))
    if code is None:
        return type(exc)(f"{exc}: {os.fspath(path)!r}")
    return type(exc)(code, os.strerror(code), os.fspath(path))


def _valid_given(value: Any, lo: int, hi: int) -> bool:
    """A pending ``R`` / ``L_build``: ``None`` (the chosen width's default) or an int in range."""
    return value is None or (
        isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
    )


def _parse_meta(text: str, path: str | os.PathLike[str]) -> dict[str, Any]:
    """The index metadata saved as JSON (``{}`` when none); a malformed text is an
    ``IndexFormatError`` naming ``path``."""
    if not text:
        return {}
    try:
        meta = json.loads(text)
    except ValueError:
        meta = None
    ok = isinstance(meta, dict) and len(meta) == 1 and (
        isinstance(meta.get("pending"), dict)
        and meta["pending"].get("rotation") in ("auto", None, "hadamard")
        and set(meta["pending"]) <= {"rotation", "R", "L_build", "rerank_dtype"}
        and _valid_given(meta["pending"].get("R"), 2, _MAX_R)
        and _valid_given(meta["pending"].get("L_build"), 1, _MAX_L_BUILD)
        and meta["pending"].get("rerank_dtype", "auto") in ("auto", *_RERANK_DTYPES)
        or isinstance(meta.get("choice"), dict)
        # Files written before the automatic rerank store have no "rerank_dtype".
        and set(CodeChoice.__required_keys__) <= set(meta["choice"])
        and set(meta["choice"]) <= set(CodeChoice.__annotations__)
        and meta["choice"].get("rerank_dtype", "float32") in _RERANK_DTYPES
    )
    if not ok:
        raise IndexFormatError(
            f"{os.fspath(path)}: the index metadata is not a valid code choice"
        )
    assert isinstance(meta, dict)
    return meta


class MemoryUsage(TypedDict):
    """Bytes held by an index (see :meth:`BQGraphIndex.memory_usage`)."""

    codes: int
    graph: int
    float_vectors: int
    float_vectors_mapped: bool


RerankDtype = Literal["float32", "float16", "bfloat16", "int8"]
_RERANK_DTYPES = ("float32", "float16", "bfloat16", "int8")


def _holds_exactly(dtype: str, a: npt.NDArray[np.float32]) -> bool:
    """Whether a ``dtype`` (float16 or bfloat16) rerank store holds every value of ``a``
    exactly: float16 values (integers up to 2048 among them), or float32 values whose low
    16 bits are zero (bfloat16 values)."""
    if dtype == "bfloat16":
        return bool(np.isfinite(a).all() and not (a.view(np.uint32) & 0xFFFF).any())
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.array_equal(a.astype(np.float16).astype(np.float32), a))


def _lossless_rerank_dtype(a: npt.NDArray[np.float32], metric: str) -> tuple[str, str]:
    """The rerank store ``rerank_dtype="auto"`` picks for an index whose first ``add`` has the
    rows ``a``, and why: float16, else bfloat16, when it holds every value exactly (integer
    data such as SIFT's 0-255 counts, embeddings shipped as float16 or bfloat16), so that
    every exact distance and result is that of a float32 store, at half its memory and with
    fewer cache misses per rerank; else float32. Under cosine the stored rows are the
    normalized ones, which are neither: float32."""
    if metric != "cosine":
        for dtype in ("float16", "bfloat16"):
            if _holds_exactly(dtype, a):
                return dtype, (
                    f"rerank store {dtype}: it holds every value of these rows exactly, so "
                    "the results of a float32 store at half its memory"
                )
    why = "normalized rows" if metric == "cosine" else "these rows"
    return "float32", (
        f"rerank store float32: neither float16 nor bfloat16 holds the {why} exactly"
    )


def _check_rerank_dtype(dtype: object) -> str:
    if not isinstance(dtype, str) or dtype not in _RERANK_DTYPES:
        raise InvalidArgumentError(
            f"rerank_dtype: unknown rerank dtype {dtype!r} (expected 'auto', 'float32', "
            "'float16', 'bfloat16' or 'int8')"
        )
    return dtype


class BQGraphIndex:
    """Binary-quantized Vamana graph index (QuIVer, arXiv 2605.02171).

    Parameters
    ----------
    dim : int
        Vector dimension ``D``, in ``[1, 2**20]``.
    metric : {"cosine", "ip", "l2"}
        Distance convention (see the module docs); cosine normalizes on add and search.
    bits : {"auto", 1, 2, 4, 8}
        ``"auto"`` (default): chosen on the first non-empty ``add`` from its rows by
        :func:`choose_codes` (the cheapest width whose estimated recall@10 at
        ``ef_search=64`` reaches :data:`CHOICE_TARGET`), recorded with its reason in
        :attr:`choice` and saved with the index; until then ``bits`` and (with
        ``rotation="auto"``) ``rotation`` read ``"auto"``. Later adds keep the choice, so
        make the first add representative: a first add of fewer than 1,000 rows is too
        small to estimate from and gets 8 bits for good, and data whose distribution shifts
        after the first add is coded as the first add's data was (pass ``bits`` explicitly,
        or call :func:`choose_codes` on a sample of the whole, when that is the case).
        2: sign-magnitude codes (the paper's); 1: sign codes with Hamming distance; both
        compare codes with codes. 4 and 8: scalar codes (per-vector ``lo + delta * c``,
        ``c`` in ``[0, 2**bits - 1]``, of the rotated vector when ``rotation="hadamard"``),
        scored asymmetrically: the query, quantized to int8 lanes, against the codes, in
        search and in construction. They cost ``bits / 2`` times the memory of 2-bit codes
        and rank low-dimensional data far better (brute-force top-20 by code score + exact
        rerank, recall@10 on 50-d PCA-reduced glosses: 0.997 at 4 bits with the rotation).
        Distances are the same on every SIMD kernel.
    R : int, optional
        Maximum out-degree, in ``[2, 4096]``. Default by code width and dimension: 64 for
        1- and 2-bit codes at every dimension (the graphs of earlier releases); for 4- and
        8-bit codes 64 from 64 dimensions on and 56 below (see below). With ``bits="auto"``
        the default of the width chosen on the first ``add`` (saved with the index).
    L_build : int, optional
        Beam width of the construction searches, in ``[1, 2**32 - 1]`` (the file stores it in
        32 bits; beams never grow past the number of vectors). The first of the two passes,
        which only seeds the second, searches with ``max(L_build // 2, 1)``; the second
        pass, later adds and repairs search with ``max(L_build, R)`` (the :attr:`L_build`
        property and saved files keep the value given). Default, as for ``R``: 128 for 1-
        and 2-bit codes; for 4- and 8-bit codes 128 from 64 dimensions on and 64 below.
        With ``bits="auto"`` the default is resolved on the first ``add`` from the width
        chosen and the rows added: below 50,000 rows a narrower beam, 64 (48 for 4- and
        8-bit codes below 64 dimensions). An explicit width, whose rows are not known when
        the index is created, keeps the full-size defaults (so ``bits=2`` alone is the
        index of earlier releases).

        The small-base beams: on 20k rows (``benches/ann_build.py``, 2 build threads, CPU
        time, ordcore / hnswlib M=16 / ef_construction=200 build time, recall@10 at
        ``ef_search`` 64 / 128) SIFT (4 bits) builds at 0.73x with ``L_build=64`` against
        1.27x with 128, recall 0.9990 / 1.0000 against 0.9986 / 0.9998; GloVe-50 (4 bits)
        at 0.75x with 48 against 0.87x with 64, 0.9934 / 0.9986 against 0.9942 / 0.9990;
        glosses (2 bits) at 0.57x with 64 against 0.85x with 128, 0.9926 / 0.9976 against
        0.9928 / 0.9976. Up to 50,000 rows the narrow beams keep recall: on 100k SIFT
        ``L_build=64`` still gives 0.9766 / 0.9887 (128: 0.9711 / 0.9890) and on 100k
        glosses 0.9878 / 0.9962 (0.9865 / 0.9960), but on 100k GloVe-50 ``L_build=48``
        starts to lose (0.9741 / 0.9937 against 0.9802 / 0.9954), and on 200k SIFT 64 costs
        recall (below).

        The low-dimensional 4/8-bit defaults (``R=56``, ``L_build=64``): there the neighbour
        lists dominate the memory (a 50-d 4-bit code is 48 bytes, a list of 64 links 260)
        and the distances are cheap, so the construction searches dominate the build. On
        GloVe-50 (``benches/ann_build.py``, 2 build threads, CPU time, these defaults at
        every size) the build takes 1.01x the time of hnswlib M=16 / ef_construction=200
        at 20k rows and 0.56x at 200k (with ``R=64``, ``L_build=128``: 1.94x at 20k, 1.66x
        at 100k), recall@10 at ``ef_search`` 64 / 128 is 0.9795 / 0.9953 at 100k rows
        (0.9864 / 0.9974), and with an int8 rerank store the index takes 0.95x hnswlib's
        memory (1.04x with ``R=64``). On SIFT (128-d) ``L_build=64`` would halve the build
        as well but costs recall on 200k rows (0.979 -> 0.961 at ``ef_search`` 128; 0.977 at
        most at 256, against 0.993), so the wider beam stays there from 64 dimensions on.

        From 64 dimensions on a smaller degree does not pay for 4- and 8-bit codes either
        (``benches/ann.py --build``, ``R`` in 32-64 by ``L_build`` in 64-128, CPU time, 1
        search thread): on 20k glosses ``R=32``-``48`` search 8-21% faster at recall@10 0.95
        (4 and 8 bits; on 20k SIFT the differences are within run-to-run noise), but on 100k
        glosses ``R=40`` gains 10% / 6% at 0.95 (4 / 8 bits: 53.5k / 46.6k against 48.4k /
        44.1k QPS) and loses 13% / 7% at 0.98 (32.5k / 29.0k against 37.4k / 31.1k), with
        recall@10 at ``ef_search`` 64 0.994 / 0.991 against 0.996 / 0.996, and on 200k SIFT
        ``R=48`` / ``R=40`` lose at 0.95 already (26.9k / 26.1k against 28.3k, interpolated)
        with recall@10 at ``ef_search`` 64 / 128 0.921 / 0.972 and 0.918 / 0.970 against
        0.927 / 0.979; the build time barely changes (20.2 s / 19.9 s against 20.5 s). So
        ``R=64``, ``L_build=128`` stay.
    alpha : float
        RobustPrune parameter, DiskANN convention: ``alpha >= 1``; a candidate ``p'`` is
        pruned by an already kept neighbour ``p*`` when ``alpha * d(p*, p') <= d(p, p')``, so a
        larger ``alpha`` prunes less and keeps longer edges. The first construction pass uses
        ``alpha = 1``, the second this value (Vamana's two passes).
    rotation : {"auto", None, "hadamard"}
        ``"auto"`` (default): chosen with ``bits="auto"``, ``None`` with an explicit ``bits``
        (so ``bits=2`` alone is the index of earlier releases, file bytes included, at
        every dimension).
        ``"hadamard"``: codes are built from ``H (x - mean)`` with ``mean`` the mean of the first
        ``add`` (after normalization under cosine), zero-padded to a supported Hadamard size,
        and ``H`` a randomized Hadamard rotation seeded by ``seed``; both are stored in the file.
    seed : int
        Seeds the insertion orders and the rotation. The same data, parameters and seed give
        the same graph for **any** thread count: insertions run in fixed batches (1, 2, 4, ...
        up to 2% of the data) whose parallel searches all see the graph as it was before the
        batch, and whose results are applied in insertion order.

    rerank_dtype : {"auto", "float32", "float16", "bfloat16", "int8"}
        ``"auto"`` (default): with ``bits="auto"``, picked with the codes on the first
        non-empty ``add`` and recorded in :attr:`choice` (``"rerank_dtype"``, with the reason):
        float16, else bfloat16, when it holds every value of those rows exactly
        (integer-valued data such as SIFT's, or embeddings shipped as float16 / bfloat16; not
        under cosine, whose stored rows are the normalized ones), else float32, so that every
        exact distance and result is that of a float32 store. Later adds keep that pick while
        the store holds their values exactly; the first add that brings others widens the
        store to float32 first (the same values, so the same results; also when that add
        then fails). With an explicit ``bits``:
        float32 (so ``bits=2`` alone is the index of earlier releases). On SIFT 200k
        (``bits="auto"``, 8 bits) the float16 store searched 1.05-1.09x as fast at recall@10
        0.95 as the float32 one, with the same results (1 search thread, CPU time).
        Element type of the vectors the exact rerank reads (``memory_usage()["float_vectors"]``):
        float32 (4 bytes a value), float16 / bfloat16 (2; round to nearest even, as NumPy's
        ``astype``: float16 refuses values beyond 65504 on ``add``; values below 6.1e-5 in
        magnitude become subnormals with an absolute error of at most 2**-25, about 3e-8,
        so those below that round to 0, an error no larger than the rounding of any value
        of 6.1e-5 or more), or int8 (1, plus a float32 scale per row:
        ``x ~ s * round(x / s)`` with ``s = max |x_i| / 127``). Returned distances are the exact
        distances to the stored (rounded) vectors. ``load(mmap=True)`` maps every dtype.
        With ``bits="auto"``, ``"int8"`` also turns off the choice's 8-bit preference
        (:func:`choose_codes`, ``prefer_8_bits=False``): a memory-first index keeps the
        cheapest code that reaches the target.
        The smaller stores are also faster to rerank from (fewer cache misses; float16 rows
        are decoded with the CPU's F16C conversion where it has one, exactly as the portable
        decode): glosses 20k, 4-bit codes, QPS at recall@10 0.95 (1 thread,
        ``benches/ann.py``) float32 58.8k, float16 62.1k, int8 60.0k (int8 tops out at
        recall 0.996).
    Notes
    -----
    Exact code ties are frequent, so construction breaks ties deterministically: candidates
    at equal code distance are ordered by a symmetric hash of the node pair, then by id;
    nodes with exactly the code of the node being pruned ("twins") take at most
    ``max(2, R // 8)`` edges and never prune others; and a kept neighbour prunes the
    candidates that share its code. So duplicates cannot close the graph around themselves.

    Connectivity: Vamana alone does not guarantee that every node can be reached from the
    entry point (with a small ``R``, clustered data can lose whole clusters; even the default
    ``R=64`` left 8 of 100,000 real sentence embeddings unreachable). After every ``add`` and
    ``compact`` a traversal from the entry finds the live nodes it misses, and each cut-off
    part is linked back by one edge from its nearest reachable node (found by a code-space
    search), so no vector is unfindable. A connected graph is left unchanged; for ``R`` of 2
    or 3 a few nodes can remain cut off, since every edge replaced to link one node can cut
    off another.

    Thread safety: ``search`` may run from several Python threads at once (the GIL is
    released); ``add``, ``remove`` and ``compact`` take an exclusive lock, so they are safe
    concurrently with searches, which wait for them.
    """

    def __init__(
        self,
        dim: int,
        *,
        metric: Metric = "cosine",
        bits: int | Literal["auto"] = "auto",
        R: int | None = None,
        L_build: int | None = None,
        alpha: float = 1.2,
        rotation: Literal["auto", "hadamard"] | None = "auto",
        seed: int = 0,
        rerank_dtype: RerankDtype | Literal["auto"] = "auto",
    ) -> None:
        _check_metric(metric)
        # Every range is what the file format holds (saved parameters reload unchanged).
        dim = int_arg("dim", dim, 1, _MAX_DIM)
        auto = isinstance(bits, str) and bits == "auto"
        if not auto:
            bits = _check_bits(bits, "'auto'")
        elif not isinstance(rotation, str) or rotation not in ("auto", "hadamard"):
            if rotation is not None:
                raise InvalidArgumentError(
                    f"rotation: must be 'auto', None or 'hadamard', got {rotation!r}"
                )
        # With bits="auto" the width, and so the default R / L_build, is known only after the
        # choice on the first add: until then the placeholder holds the 2-bit defaults and the
        # pending metadata what was given (None: resolve with the choice).
        given_r = None if R is None else int_arg("R", R, 2, _MAX_R)
        given_l = None if L_build is None else int_arg("L_build", L_build, 1, _MAX_L_BUILD)
        default_r, default_l = _default_build(dim, 2 if auto else int(bits))
        R = default_r if given_r is None else given_r
        L_build = default_l if given_l is None else given_l
        if (
            isinstance(alpha, (bool, np.bool_))
            or not isinstance(alpha, (int, float, np.integer, np.floating))
            or not math.isfinite(alpha)
            or alpha < 1
        ):
            raise InvalidArgumentError(
                f"alpha: must be a finite number >= 1 (DiskANN convention), got {alpha!r}"
            )
        if rotation not in (None, "hadamard", "auto"):
            raise InvalidArgumentError(
                f"rotation: must be 'auto', None or 'hadamard', got {rotation!r}"
            )
        seed = int_arg("seed", seed, 0, UINT64_MAX)
        auto_dtype = isinstance(rerank_dtype, str) and rerank_dtype == "auto"
        dtype = "float32" if auto_dtype else _check_rerank_dtype(rerank_dtype)
        # An automatic index waits for its first add: until then the core index is a
        # placeholder (2 bits) and its metadata records the pending choice.
        self._inner = _core.BQGraphIndex(
            dim, metric, 2 if auto else int(bits), int(R), L_build, float(alpha),
            rotation == "hadamard", int(seed), dtype,
        )
        self._meta: dict[str, Any] = {}
        if auto:
            self._set_meta({"pending": {"rotation": rotation, "R": given_r, "L_build": given_l,
                                        "rerank_dtype": "auto" if auto_dtype else dtype}})

    def _set_meta(self, meta: dict[str, Any]) -> None:
        self._inner.set_meta(json.dumps(meta, sort_keys=True) if meta else "")
        self._meta = meta

    @classmethod
    def _wrap(cls, inner: _core.BQGraphIndex, path: str | os.PathLike[str] = "") -> BQGraphIndex:
        obj = cls.__new__(cls)
        obj._inner = inner
        obj._meta = _parse_meta(inner.meta(), path)
        choice = obj._meta.get("choice")
        params = inner.params()
        if choice is not None and (
            choice.get("bits") != params[2]
            or choice.get("rotation") != ("hadamard" if params[6] else None)
        ):
            raise IndexFormatError(
                f"{os.fspath(path)}: the saved code choice ({choice.get('bits')!r} bits, "
                f"rotation {choice.get('rotation')!r}) does not match the index's codes"
            )
        if choice is not None and choice.get("rerank_dtype", inner.rerank_dtype()) != (
            inner.rerank_dtype()
        ):
            raise IndexFormatError(
                f"{os.fspath(path)}: the saved choice's rerank store "
                f"({choice.get('rerank_dtype')!r}) does not match the index's "
                f"({inner.rerank_dtype()!r})"
            )
        return obj

    @property
    def _pending(self) -> dict[str, Any] | None:
        """The pending automatic choice (``{"rotation": ...}``) before the first add."""
        pending = self._meta.get("pending")
        return pending if isinstance(pending, dict) else None

    @property
    def choice(self) -> CodeChoice | None:
        """What ``bits="auto"`` chose on the first non-empty ``add`` (see
        :func:`choose_codes`; saved in the index file); ``None`` with explicit ``bits`` and
        before that first ``add``."""
        choice = self._meta.get("choice")
        return cast(CodeChoice, copy.deepcopy(choice)) if isinstance(choice, dict) else None

    # -- parameters -----------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._inner.params()[0]

    @property
    def metric(self) -> str:
        """``"cosine"``, ``"ip"`` or ``"l2"``."""
        return self._inner.params()[1]

    @property
    def bits(self) -> int | Literal["auto"]:
        """Bits per coordinate of the codes (1, 2, 4 or 8); ``"auto"`` until the first
        ``add`` of an automatic index chose them."""
        if self._pending is not None:
            return "auto"
        return self._inner.params()[2]

    @property
    def R(self) -> int:  # noqa: N802 - the field's name
        """Maximum out-degree. With ``bits="auto"`` and no ``R`` given, the default of the
        chosen width once the first ``add`` chose it (saved with the index); before that,
        the 1/2-bit default 64."""
        return self._inner.params()[3]

    @property
    def L_build(self) -> int:  # noqa: N802
        """Construction beam width as given or defaulted (resolved like :attr:`R`); the
        second pass, later adds and repairs search with ``max(L_build, R)``."""
        return self._inner.params()[4]

    @property
    def alpha(self) -> float:
        """RobustPrune alpha (DiskANN convention)."""
        return self._inner.params()[5]

    @property
    def rotation(self) -> str | None:
        """``"hadamard"`` or ``None``; ``"auto"`` until the first ``add`` of an automatic
        index chose it."""
        pending = self._pending
        if pending is not None and pending.get("rotation") == "auto":
            return "auto"
        return "hadamard" if self._inner.params()[6] else None

    @property
    def seed(self) -> int:
        """Construction and rotation seed."""
        return self._inner.params()[7]

    @property
    def search_degree(self) -> int:
        """The automatic degree bound's base: twice the mean size of the neighbour lists'
        relative-neighbourhood core (see :meth:`search`); 0 for 1- and 2-bit indexes, an
        empty index, and indexes loaded from files written before the lists were ordered
        (format versions 1 to 3), whose searches expand every neighbour."""
        return self._inner.search_degree()

    @property
    def rerank_dtype(self) -> str:
        """Element type of the rerank store (``"auto"`` until the first add resolves it)."""
        pending = self._pending
        if pending is not None and pending.get("rerank_dtype") == "auto":
            return "auto"
        return self._inner.rerank_dtype()

    @property
    def ids(self) -> npt.NDArray[np.int64]:
        """The live ids, in insertion order."""
        return self._inner.ids()

    def __len__(self) -> int:
        return self._inner.__len__()

    def __contains__(self, id_: object) -> bool:
        if isinstance(id_, (bool, np.bool_)):
            return False
        if isinstance(id_, (float, np.floating)):
            if not math.isfinite(id_) or not float(id_).is_integer():
                return False
            id_ = int(id_)
        if not isinstance(id_, (int, np.integer)) or not -(2**63) <= id_ < 2**63:
            return False
        return self._inner.__contains__(int(id_))

    def __repr__(self) -> str:
        return (
            f"BQGraphIndex(dim={self.dim}, metric={self.metric!r}, bits={self.bits!r}, "
            f"R={self.R}, L_build={self.L_build}, alpha={self.alpha}, "
            f"rotation={self.rotation!r}, seed={self.seed}, len={len(self)})"
        )

    # -- building -------------------------------------------------------------------
    def add(
        self,
        X: npt.ArrayLike,
        ids: npt.ArrayLike | None = None,
        *,
        num_threads: int | None = None,
        progress: bool = False,
    ) -> None:
        """Adds the rows of ``X``.

        The first ``add`` builds the graph (two Vamana passes); later ones insert the new
        rows with the same search-and-prune (one pass at ``alpha``).

        Parameters
        ----------
        X : array_like, shape (n, dim)
        ids : array_like of int64, shape (n,), optional
            User ids (distinct, not already in the index). Default: consecutive ids after
            the largest id the index holds, removed ids included until :meth:`compact` drops
            them (0, 1, ... for a new index).
        num_threads : int, optional
            Threads for the build (default: all cores, or ``RAYON_NUM_THREADS``).
        progress : bool
            Show a tqdm progress bar (needs the ``progress`` extra: ``pip install
            'ordcore[progress]'``).

        Raises
        ------
        InvalidArgumentError
            Dimension mismatch, NaN/inf (naming the row), zero rows under cosine,
            duplicate ids, automatic ids that would pass ``2**63 - 1``, a ``progress`` that
            is not a bool. The index is unchanged after any error.
        MemoryError
            The grown index would not fit in the memory this process can use (estimated
            before anything is allocated; names ``X``).
        KeyboardInterrupt
            Ctrl-C during the build (within a fraction of a second, also with
            ``progress=True``); the index is left as it was before the call.
        DTypeError
            Non-numeric dtypes or integers that float32 cannot hold exactly.

        Warns
        -----
        BQFitnessWarning
            On the first build of at least 1000 rows, when the code-space recall@10 that
            :func:`bq_fitness` estimates for all of ``X`` (50 to 200 sampled queries, as a
            budget of distance computations allows) is below :data:`FITNESS_THRESHOLD` for
            this index's settings; the message says whether ``rotation="hadamard"`` would
            help. Only for an explicit ``bits`` of 1 or 2: with ``bits="auto"`` it warns only
            when no code reaches the choice's target (the message gives the choice's reason).

        With ``bits="auto"`` the first non-empty ``add`` first runs :func:`choose_codes` on
        ``X`` (50 to 200 sampled queries against every row, 8 codes scored; about 3 s on
        100,000 x 384 with 2 threads) and builds with its pick; a failed ``add`` leaves the
        choice pending.
        """
        num_threads = num_threads_arg(num_threads)
        a = float_matrix_arg(X, "X", self.dim)
        id_arr = None if ids is None else id_array_arg(ids, a.shape[0])
        inner = self._inner
        meta = self._meta
        pending = self._pending
        if pending is not None and a.shape[0] > 0:
            # The automatic choice, on the rows of this first add; the chosen index replaces
            # the placeholder only once the add succeeded.
            try:
                choice = choose_codes(
                    a, metric=self.metric, base_size=a.shape[0],  # type: ignore[arg-type]
                    seed=self.seed, rotation=pending.get("rotation"), num_threads=num_threads,
                    prefer_8_bits=inner.rerank_dtype() != "int8",
                )
            except InvalidArgumentError:
                # The build reports bad rows itself, naming them.
                choice = CodeChoice(bits=8, rotation=None, target=CHOICE_TARGET, base=0,
                                    sample=0, estimates={}, reason="")
            dim, metric, _, r, l_build, alpha, _, seed = inner.params()
            # The defaults of the chosen width and of the rows of this first add, for what was
            # not given (a pending choice saved before the defaults depended on the width has
            # no such keys: its R / L_build stay).
            default_r, default_l = _default_build(dim, choice["bits"], int(a.shape[0]))
            if "R" in pending:
                r = default_r if pending["R"] is None else int(pending["R"])
            if "L_build" in pending:
                l_build = default_l if pending["L_build"] is None else int(pending["L_build"])
            dtype = inner.rerank_dtype()
            if pending.get("rerank_dtype") == "auto":
                dtype, why = _lossless_rerank_dtype(a, self.metric)
                choice["rerank_dtype"] = dtype
                choice["reason"] += f"; {why}"
            inner = _core.BQGraphIndex(
                dim, metric, choice["bits"], r, l_build, alpha,
                choice["rotation"] == "hadamard", seed, dtype,
            )
            meta = {"choice": dict(choice)}
            inner.set_meta(json.dumps(meta, sort_keys=True))
            if choice["sample"] and max(choice["estimates"].values()) < choice["target"]:
                warnings.warn(
                    f"no code reaches the automatic choice's target on this data: "
                    f"{choice['reason']}; see ordcore.ann.choose_codes",
                    BQFitnessWarning,
                    stacklevel=2,
                )
        elif (
            pending is None
            and self._meta.get("choice", {}).get("rerank_dtype") in ("float16", "bfloat16")
            and inner.rerank_dtype() == self._meta["choice"]["rerank_dtype"]
            and a.shape[0] > 0
            and np.isfinite(a).all()
            and not _holds_exactly(inner.rerank_dtype(), a)
        ):
            # The automatic half-precision store holds every value added so far exactly;
            # rows it cannot hold exactly widen it to float32 first (the same values, so the
            # same results), instead of being rounded or refused.
            half = inner.rerank_dtype()
            inner.widen_rerank_store()
            widened = dict(self._meta["choice"])
            widened["rerank_dtype"] = "float32"
            widened["reason"] += (
                f"; widened to float32 when a later add brought values {half} does not hold"
            )
            meta = {**self._meta, "choice": widened}
            inner.set_meta(json.dumps(meta, sort_keys=True))
            self._meta = meta
        elif (
            pending is None
            and len(self) == 0
            and inner.n_nodes() == 0
            and a.shape[0] >= _FITNESS_MIN_ROWS
        ):
            self._check_fitness(a, num_threads)
        callback: Callable[[int, int], None] | None = None
        bars: list[Any] = []
        if bool_arg("progress", progress):
            try:
                from tqdm.auto import tqdm  # type: ignore[import-untyped]
            except ImportError as exc:
                from ordcore.errors import MissingDependencyError

                raise MissingDependencyError(
                    "progress=True needs tqdm: pip install 'ordcore[progress]'"
                ) from exc
            def callback(done: int, total: int) -> None:
                # Created on the first report, which comes after the input is validated: a
                # bad input fails without drawing a bar.
                if not bars:
                    bars.append(tqdm(total=total, desc="BQGraphIndex.add", unit="insert"))
                bar = bars[0]
                if bar.total != total:
                    bar.total = total
                    bar.refresh()
                bar.update(done - bar.n)

        try:
            inner.add(a, id_arr, num_threads, callback)
        finally:
            if progress:
                for b in bars:
                    b.close()
        self._inner, self._meta = inner, meta

    def _check_fitness(self, a: npt.NDArray[np.float32], num_threads: int | None) -> None:
        bits = self._inner.params()[2]
        if bits > 2:
            return  # scalar codes are scored against the query: no binary-code warning
        # Sampled queries against every row being added (the index's real size), as many as
        # a budget of distance computations allows (50 to 200).
        queries = int(min(200, max(50, _FITNESS_ADD_BUDGET // max(1, a.shape[0] * a.shape[1]))))
        rotated = self.rotation == "hadamard"
        # Unrotated indexes also score the rotation (the exact neighbours are shared), to say
        # whether it would help.
        seeds: list[int | None] = [self.seed] if rotated else [None, self.seed]
        try:
            estimates = _code_recall(
                a, self.metric, [(bits, r) for r in seeds], 10, queries, self.seed,
                num_threads,
            )
        except InvalidArgumentError:
            return  # the build itself reports bad rows, naming them
        recall = estimates[0][0]
        if recall >= FITNESS_THRESHOLD:
            return
        hint = ""
        if not rotated and estimates[1][0] > recall + 0.05:
            hint = f"; rotation='hadamard' raises it to {_fmt(estimates[1][0])}"
        warnings.warn(
            f"binary codes rank this data poorly: code-space recall@10 {_fmt(recall)} "
            f"estimated from {queries} sampled queries against all {a.shape[0]} rows "
            f"(threshold {_fmt(FITNESS_THRESHOLD)}){hint}. Expect low recall unless ef_search "
            "is large; see ordcore.ann.bq_fitness",
            BQFitnessWarning,
            stacklevel=3,
        )

    def remove(self, ids: npt.ArrayLike) -> None:
        """Marks ``ids`` as removed; searches never return them afterwards.

        The nodes stay in the graph for navigation until :meth:`compact`.

        Raises
        ------
        UnknownIdError
            An id is not in the index (a :class:`KeyError` and an
            :class:`InvalidArgumentError`); nothing is removed.
        InvalidArgumentError
            An id is repeated or negative; nothing is removed.
        """
        self._inner.remove(id_array_arg(ids, None))

    def compact(self, *, num_threads: int | None = None) -> None:
        """Repairs the graph around removed nodes and drops them (FreshDiskANN-style
        consolidation: each live node that pointed at a removed one is re-pruned over its
        live neighbours and the removed node's neighbours).

        The repaired index is built aside and replaces this one at the end, so a Ctrl-C
        (``KeyboardInterrupt``) leaves it as it was.
        """
        self._inner.compact(num_threads_arg(num_threads))

    # -- search ---------------------------------------------------------------------
    def search(
        self,
        Q: npt.ArrayLike,
        k: int = 10,
        *,
        ef_search: int = 64,
        rerank: bool = True,
        rerank_k: int | None = None,
        num_threads: int | None = None,
        filter: npt.ArrayLike | None = None,  # noqa: A002 - the field's name (faiss, qdrant)
        degree: int | None = None,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """k nearest neighbours of each query row.

        Beam search in code space with beam width ``ef_search`` (raised to at least ``k``;
        with 4- and 8-bit codes the beam starts at the nearest, by code distance, of the
        graph's entry and 64 nodes spread over the index, which saves the first hops as the
        upper layers of HNSW do; 1- and 2-bit searches start at the entry), then, with
        ``rerank=True``, the best ``rerank_k`` candidates (default ``ef_search``,
        clamped to ``[k, ef_search]``) are reranked by exact float32 distance. With
        ``rerank=False`` the ``k`` best by code distance are returned in code order, with
        their exact distances.

        Guarantees: every query gets ``min(k, len(index))`` results. With ``rerank`` and
        ``max(ef_search, k) >= len(index)`` the search is an exact scan of the live vectors.
        For ``k <= ef_search`` the beam does not depend on ``k``, so the first results do
        not change with ``k``. Beam entries that share one code are capped at
        ``max(2, ef // 8)`` (so that the beam can leave a group of equal codes); the
        entries the cap turns away remain candidates: the candidates are the nearest by code
        distance of every vector the beam scored, so exact copies of a query are returned
        even when there are more of them than the cap. Removed vectors widen the beam by their share; a query for which the graph
        still yields fewer than ``min(rerank_k, len(index))`` live candidates
        (``min(k, len(index))`` without rerank) is answered by a scan of the live vectors
        (exact distances with ``rerank``, code distances without), which is slower: call
        :meth:`compact` after removing much of an index.

        Degree bound: each expansion scores the first ``degree`` neighbours of the node
        (``degree=None``: automatic). With 4- and 8-bit codes every neighbour list is ordered
        after construction (and :meth:`compact`): first the neighbours an ``alpha = 1``
        RobustPrune keeps (the relative-neighbourhood core), then the ``alpha > 1`` extras,
        each part by increasing code distance; the automatic bound is
        ``max(search_degree, 3 * beam)`` (``beam`` the search's beam width, ``ef_search``
        widened by removed and filtered-out nodes), with :attr:`search_degree` twice the
        mean core size, so narrow beams score fewer codes per hop and wide beams, which need
        the extras for recall, keep full lists. Measured (20k rows, 1 thread, QPS at
        recall@10 over ``ef_search`` 10-48 against full lists): glosses (384-d, 4 bits)
        +26 % at 0.90, +5 % at 0.95, -5 % at 0.98; SIFT (128-d, 4 bits) and GloVe-50 within
        the noise (+-4 %). 1- and 2-bit indexes, and indexes loaded from
        files written before the lists were ordered, expand every neighbour by default
        (their lists are in construction order; an explicit ``degree`` takes their first
        entries all the same). ``degree >= R`` expands every neighbour. A very small
        ``degree`` (1, 2) can leave the walk with fewer than ``rerank_k`` candidates; such a
        query then falls back to the exact scan of the live vectors, as after heavy
        removals (exact, at the cost of a scan), so recall need not fall with ``degree``.

        Filtered search: ``filter`` restricts the results to allowed ids, given as

        * an **allow-list**: a 1-D integer array of ids (any order, repeats allowed); every
          id must be in the index (else ``UnknownIdError``); 8-bit integer arrays are
          refused (``DTypeError``), since a 0/1 mask read as ids would allow only 0 and 1;
        * a **bitmap indexed by id value** (faiss's ``IDSelectorBitmap``): a 1-D ``bool``
          array, ``filter[id]`` True allowing ``id``; ids ``>= len(filter)`` are not allowed.

        Every query then gets ``min(k, allowed live ids)`` results. The beam search still
        walks through every node (so the graph stays navigable) but admits only allowed
        nodes as candidates, its width grown by the share of nodes the filter excludes
        (``ef * n / allowed``); when the allowed set is small, ``allowed**2 <= F * ef * n``
        with ``F = max(1, 4 * (384 / dim) ** 0.75)`` (``ef = max(ef_search, k)``, ``n``
        nodes; at ``ef_search=64`` and 100,000 nodes up to about 5,100 allowed ids at 384-d,
        7,600 at 128-d, 10,900 at 50-d: a scanned row's cost grows with ``dim`` faster than a
        graph step's, and these are where both paths cost about the same on glosses, SIFT
        and GloVe), the search is an exact scan of the allowed vectors instead (exact
        distances, also with ``rerank=False``). Measured recall@10 against exact filtered
        search, glosses 100k, 2-bit codes, ``ef_search=64`` (``python benches/ann_choice.py glosses --n 100000
        --filter``): 50 % allowed 0.987, 20 % 0.995, 10 % 0.998, 5 % and fewer: exact scan.
        These are random filters; a filter that excludes the region around the queries
        (e.g. allowing only the rows least similar to them) leaves the beam fewer allowed
        nodes nearby and needs a wider ``ef_search`` (0.81-0.85 at 64, 1.0 at 256 when the
        30-60 % least similar rows of glosses 10k are allowed).

        Returns
        -------
        ids : numpy.ndarray of int64, shape (nq, k)
        distances : numpy.ndarray of float32, shape (nq, k)
            In the metric's convention (module docs). When fewer than ``k`` live (allowed)
            vectors are found (``k > len(index)``, an empty index), the tail is ``-1`` /
            ``+inf``.

        Raises
        ------
        InvalidArgumentError
            ``k < 1``, ``ef_search < 1``, ``degree < 1``, a dimension mismatch (naming both dimensions),
            NaN/inf or a zero query under cosine (naming the row), a ``filter`` that is not
            1-D, a ``rerank`` that is not a bool.
        DTypeError
            A ``filter`` that is neither integers (wider than 8 bits) nor bool.
        UnknownIdError
            An allow-list id that is not in the index (or was removed).
        """
        k = _positive_int(k, "k")
        ef_search = _positive_int(ef_search, "ef_search")
        if rerank_k is not None:
            rerank_k = _positive_int(rerank_k, "rerank_k")
        if degree is not None:
            degree = _positive_int(degree, "degree")
        q = float_matrix_arg(Q, "Q", self.dim)
        ids: npt.NDArray[np.int64] | None = None
        bitmap: npt.NDArray[np.bool_] | None = None
        if filter is not None:
            ids, bitmap = filter_arg(filter)
        return self._inner.search(
            q, k, ef_search, bool_arg("rerank", rerank), rerank_k, num_threads_arg(num_threads), ids, bitmap,
            degree,
        )

    def get(self, ids: npt.ArrayLike) -> npt.NDArray[np.float32]:
        """The stored vectors of ``ids``, in the order of ``ids`` (a repeated id is returned
        each time).

        They are the vectors the exact rerank reads: L2-normalized under ``"cosine"`` (as
        ``add`` stores them), and decoded from the rerank store, so rounded as its
        ``rerank_dtype`` rounds (float16 / bfloat16 round to nearest even; int8 is
        ``s * round(x / s)`` with ``s = max |x_i| / 127`` per row, computed in float32).

        Parameters
        ----------
        ids : array_like of int, shape (m,)
            Live ids (1-D, any integer dtype; an empty list gives shape ``(0, dim)``).

        Returns
        -------
        numpy.ndarray of float32, shape (m, dim)

        Raises
        ------
        UnknownIdError
            An id is not in the index or was removed (a :class:`KeyError`; names the first
            few).
        InvalidArgumentError, DTypeError
            ``ids`` not 1-D, or not integers.
        """
        return self._inner.get(lookup_ids_arg(ids, "ids"))

    # -- introspection and persistence ----------------------------------------------
    def memory_usage(self) -> MemoryUsage:
        """Bytes held: ``codes`` and ``graph`` (the search hot path) and ``float_vectors``
        (the rerank store in ``rerank_dtype``, touched only to rerank; file-backed when loaded
        with ``mmap=True``, see ``float_vectors_mapped``)."""
        codes, graph, floats = self._inner.memory_usage()
        return MemoryUsage(
            codes=codes,
            graph=graph,
            float_vectors=floats,
            float_vectors_mapped=self._inner.vectors_mapped(),
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the index to ``path`` (format documented in ``rust/ordcore-core/src/ann/
        format.rs``: magic ``ORDCANN\\0``, version, byte-order mark, all parameters, CRC-32 of
        header and payload). It is written to a temporary file in the same folder and renamed,
        so ``path`` never holds a half-written index. 4- and 8-bit indexes store their nodes
        in graph order (renumbered breadth-first from the entry after each :meth:`add` and
        :meth:`compact`, so a search's lists and codes sit close in memory) with each node's
        insertion rank: format version 5, which ordcore releases before it refuse as newer.
        ``ids``, ``get``, filters and ``remove`` are as without the renumbering, and the
        reranked results break exact-distance ties by insertion rank. The code-space beam
        breaks its own ties by node number, so at an exact code-distance tie on the beam's
        edge (duplicate vectors) a search, and ``rerank=False`` results, can differ from
        those of an index without the renumbering; after a second ``add`` or a ``compact``
        the graphs can differ slightly too (construction breaks ties by node number).

        A symbolic link at ``path`` is followed: the file it points to is replaced (the link
        stays).

        Raises
        ------
        InvalidArgumentError
            ``path`` ends with a path separator, or names something that is neither a
            regular file nor a folder (a device, a pipe, a socket): nothing is written.
        OSError
            The folder does not exist or is not writable, the disk is full, ... (``errno``
            as the operating system reports it; ``filename`` is ``path``).
        """
        given = os.fspath(path)
        if not isinstance(given, str):
            raise InvalidArgumentError(f"path: must be a str or os.PathLike of str, got {given!r}")
        if given.endswith(("/", os.sep)):
            raise InvalidArgumentError(
                f"path: {given!r} ends with a path separator; give the index file's name"
            )
        target = os.path.realpath(given)  # write through a symbolic link, not over it
        if os.path.exists(target) and not (os.path.isfile(target) or os.path.isdir(target)):
            raise InvalidArgumentError(
                f"path: {given!r} is not a regular file (a device, pipe or socket); an index "
                f"is saved to a regular file"
            )
        try:
            self._inner.save(Path(target))
        except OSError as exc:
            raise _os_error(exc, path) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = False) -> BQGraphIndex:
        """Reads an index saved by :meth:`save`.

        With ``mmap=True`` the float vectors stay memory-mapped from the file (they are only
        read to rerank), so resident memory is about codes plus graph; the checksum is still
        verified once. The mapped file must not be truncated or rewritten in place while the
        index lives (the operating system then stops the process with SIGBUS, as for any
        memory map); :meth:`save` over it is safe (it writes a new file and renames it).

        Raises
        ------
        IndexFormatError
            A truncated, corrupted, foreign or newer-version file, or one whose contents
            ``add`` would refuse (non-finite values, out-of-range edges, ...), naming the reason.
        FileNotFoundError, IsADirectoryError, PermissionError, OSError
            As the operating system reports it; ``filename`` is ``path``.
        InvalidArgumentError
            ``mmap`` is not a bool.
        """
        try:
            inner = _core.BQGraphIndex.load(Path(path), bool_arg("mmap", mmap))
        except OSError as exc:
            raise _os_error(exc, path) from None
        return cls._wrap(inner, path)
