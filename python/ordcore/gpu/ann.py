"""GPU paths of :mod:`ordcore.ann`: binary codes, brute-force code-space top-k, float rerank.

Inputs are CuPy arrays or CUDA torch tensors; outputs come back in the same kind on the same
device. The graph search itself stays on the CPU.

* :func:`encode` is bit-identical to ``ordcore.ann.encode`` (same layout, same float64
  normalization and threshold rule, sequential sums per row).
* :func:`code_distances` / :func:`code_search`: the exact integer code distance (2 bits:
  ``4D - sum s_a s_b m_a m_b``; 1 bit: Hamming) and its exact top-k per query, ties to the
  smaller row, one fused kernel per batch (histogram threshold, then a bitonic sort of the
  survivors; a query whose ties overflow the buffer is redone with a full sort).
* :func:`rerank`, :func:`exact_search`, :func:`candidate_search`: float distances in the
  CPU's conventions (cosine ``1 - cos`` in [0, 2], ip ``1 - <q, x>``, l2 squared). They are
  float32 sums in another order than the CPU's, so the last bits (and the order of exact
  near-ties) may differ. Missing results are ``-1`` / ``+inf``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore.gpu._runtime import Boundary, enter, get_kernel, grid_for, launch

__all__ = [
    "METRICS",
    "encode",
    "code_distance",
    "code_distances",
    "code_search",
    "rerank",
    "exact_search",
    "candidate_search",
]

METRICS: dict[str, int] = {"cosine": 0, "ip": 1, "l2": 2}
_PAD = 0xFFFFFFFFFFFFFFFF
_LOW32 = 0xFFFFFFFF
_MAX_SHARED = 160 * 1024
_TOPK_THREADS = 512
# keys per temporary chunk of the sort-based paths (8 bytes each, sorted with CuPy)
_CHUNK_KEYS = 1 << 26


def _metric(metric: str) -> int:
    if metric not in METRICS:
        raise InvalidArgumentError(f"metric: unknown metric {metric!r} (expected 'cosine', 'ip' or 'l2')")
    return METRICS[metric]


def _bits(bits: int) -> int:
    if bits in (4, 8):
        raise InvalidArgumentError(
            f"bits: the {bits}-bit scalar codes have no GPU path (ordcore.gpu.ann covers the "
            "1- and 2-bit codes); build and search them on the CPU with ordcore.ann.BQGraphIndex"
        )
    if bits not in (1, 2) or isinstance(bits, bool):
        raise InvalidArgumentError(
            f"bits: must be 1 or 2 on the GPU, got {bits!r} (bits='auto' is a BQGraphIndex "
            "setting: pass the index's chosen bits)"
        )
    return bits


def _rows(bnd: Boundary, x: object, arg: str) -> Any:
    cp = bnd.cp
    a = bnd.to_cupy(x)
    if a.dtype == cp.bool_ or a.dtype.kind not in "fiu" or (a.dtype.kind != "f" and a.dtype.itemsize > 2):
        raise DTypeError(
            f"{arg}: dtype {a.dtype} is not supported on the GPU (use float16/32/64 or an "
            "8/16-bit integer type)"
        )
    if a.ndim != 2:
        raise InvalidArgumentError(f"{arg}: must be a 2-D array (n, dim), got shape {a.shape}")
    return cp.ascontiguousarray(a.astype(cp.float32, copy=False))


def _validate(cp: Any, x: Any, metric: int, arg: str) -> None:
    """Finite values, and no zero row under cosine (a few reductions and one read back)."""
    if x.size == 0:
        return
    bad = ~cp.isfinite(x).all(axis=1)
    if bool(bad.any()):
        r = int(bad.argmax())
        c = int((~cp.isfinite(x[r])).argmax())
        raise InvalidArgumentError(f"{arg}: row {r} has a non-finite value ({float(x[r, c])}) at column {c}")
    if metric == 0:
        zero = (x == 0).all(axis=1)
        if bool(zero.any()):
            r = int(zero.argmax())
            raise InvalidArgumentError(f"{arg}: row {r} is a zero vector, which has no direction under cosine")


def _prepare(cp: Any, x: Any, metric: int) -> Any:
    """Rows as ordcore.ann stores them: L2-normalized (float64 rule) under cosine."""
    if metric != 0 or x.size == 0:
        return x
    out = cp.empty_like(x)
    n, d = x.shape
    launch(get_kernel("ann", "ann_normalize"), (grid_for(n, 128),), (128,), (x, np.int64(n), np.int32(d), out))
    return out


def _check_k(k: int) -> None:
    if k < 1:
        raise InvalidArgumentError(f"k: must be at least 1, got {k}")


def _check_dims(q: Any, x: Any) -> None:
    if q.shape[1] != x.shape[1]:
        raise InvalidArgumentError(f"Q: dimension {q.shape[1]} does not match the dimension {x.shape[1]} of X")


def _prepared_pair(bnd: Boundary, X: object, Q: object, m: int) -> tuple[Any, Any]:
    """Float rows of ``X`` and ``Q`` (same dimension), validated and prepared for ``m``."""
    cp = bnd.cp
    x = _rows(bnd, X, "X")
    q = _rows(bnd, Q, "Q")
    _check_dims(q, x)
    _validate(cp, x, m, "X")
    _validate(cp, q, m, "Q")
    return _prepare(cp, x, m), _prepare(cp, q, m)


def _encode_prepared(cp: Any, x: Any, bits: int) -> Any:
    n, d = x.shape
    w = (d + 63) // 64
    codes = cp.zeros((n, bits * w), dtype=cp.uint64)
    if n:
        args = (x, np.int64(n), np.int32(d), np.int32(bits), np.int32(w), codes)
        launch(get_kernel("ann", "ann_encode"), (grid_for(n, 128),), (128,), args)
    return codes


def encode(X: Any, *, bits: int = 2, metric: str = "cosine") -> Any:
    """Binary codes of the rows of ``X`` (n, dim) float on the GPU: uint64
    ``(n, bits * ceil(dim / 64))``, bit-identical to ``ordcore.ann.encode``.

    Raises
    ------
    InvalidArgumentError
        bad ``bits`` / ``metric``, a non-finite value or (cosine) a zero row, naming the row.
    """
    m, b = _metric(metric), _bits(bits)
    bnd = enter(X)
    cp = bnd.cp
    with bnd.active():
        x = _rows(bnd, X, "X")
        if x.shape[1] < 1:
            raise InvalidArgumentError("dim: must be at least 1")
        _validate(cp, x, m, "X")
        return bnd.back(_encode_prepared(cp, _prepare(cp, x, m), b))


def _code_matrix(bnd: Boundary, c: object, dim: int, bits: int, arg: str) -> Any:
    cp = bnd.cp
    a = bnd.to_cupy(c)
    w = (dim + 63) // 64
    if a.ndim != 2 or a.shape[1] != bits * w:
        raise InvalidArgumentError(
            f"{arg}: must have shape (n, {bits * w}) for dim = {dim} at {bits} bits, got {a.shape}"
        )
    if a.dtype.kind not in "iu" or a.dtype.itemsize != 8:
        raise DTypeError(f"{arg}: must be uint64 codes, got {a.dtype}")
    return cp.ascontiguousarray(a.view(cp.uint64))


def _distances(cp: Any, q: Any, c: Any, dim: int, bits: int) -> Any:
    b, n = int(q.shape[0]), int(c.shape[0])
    w = (dim + 63) // 64
    out = cp.empty((b, n), dtype=cp.int32)
    if b and n:
        qb = 8  # ANN_QB in ann.cu
        grid = (min(grid_for(n, 128), 4096), (b + qb - 1) // qb)
        args = (q, np.int64(b), c, np.int64(n), np.int32(w), np.int32(dim), np.int32(bits), out, np.int64(n))
        launch(get_kernel("ann", "ann_code_distances"), grid, (128,), args, shared_mem=qb * bits * w * 8)
    return out


def code_distance(codes_a: Any, codes_b: Any, dim: int, bits: int = 2) -> Any:
    """Row-wise code distance uint32 ``(n,)`` of two code arrays on the GPU, as
    ``ordcore.ann.code_distance``."""
    b = _bits(bits)
    bnd = enter(codes_a)
    cp = bnd.cp
    with bnd.active():
        a = _code_matrix(bnd, codes_a, dim, b, "codes_a")
        c = _code_matrix(bnd, codes_b, dim, b, "codes_b")
        if a.shape != c.shape:
            raise InvalidArgumentError(f"codes_a: shape {a.shape} differs from codes_b's {c.shape}")
        n = int(a.shape[0])
        out = cp.empty(n, dtype=cp.uint32)
        if n:
            w = (dim + 63) // 64
            args = (a, c, np.int64(n), np.int32(w), np.int32(dim), np.int32(b), out)
            launch(get_kernel("ann", "ann_code_distance_rows"), (grid_for(n, 256),), (256,), args)
        return bnd.back(out)


def code_distances(qcodes: Any, codes: Any, *, dim: int, bits: int = 2) -> Any:
    """Code distance matrix int32 ``(len(qcodes), len(codes))`` on the GPU (the integer
    distance of ``ordcore.ann``; ``ordcore.gpu.reference.code_distances`` on the CPU)."""
    b = _bits(bits)
    bnd = enter(qcodes)
    with bnd.active():
        q = _code_matrix(bnd, qcodes, dim, b, "qcodes")
        c = _code_matrix(bnd, codes, dim, b, "codes")
        return bnd.back(_distances(bnd.cp, q, c, dim, b))


def _float_order_keys(cp: Any, d: Any) -> Any:
    """float32 -> uint64 whose unsigned order is the float's total order, shifted to the
    high 32 bits."""
    u = d.view(cp.uint32).astype(cp.uint64)
    neg = (u >> 31) == 1
    ordered = cp.where(neg, (~u) & _LOW32, u | 0x80000000)
    return ordered << 32


def _keys_to_float(cp: Any, hi: Any) -> Any:
    u = hi.astype(cp.uint64)
    pos = (u >> 31) == 1
    bits = cp.where(pos, u & 0x7FFFFFFF, (~u) & _LOW32).astype(cp.uint32)
    return bits.view(cp.float32)


def _merge_topk(cp: Any, best: Any, keys: Any, k: int) -> Any:
    cand = keys if best is None else cp.concatenate([best, keys], axis=1)
    cand = cp.sort(cand, axis=1)
    if cand.shape[1] < k:
        pad = cp.full((cand.shape[0], k - cand.shape[1]), _PAD, dtype=cp.uint64)
        cand = cp.concatenate([cand, pad], axis=1)
    return cand[:, :k]


def _split_keys(cp: Any, keys: Any, integer: bool) -> tuple[Any, Any]:
    pad = keys == _PAD
    ids = (keys & _LOW32).astype(cp.int64)
    ids[pad] = -1
    hi = keys >> 32
    d = hi.astype(cp.float32) if integer else _keys_to_float(cp, hi)
    d[pad] = cp.inf
    return ids, d


def _code_search_sort(cp: Any, q: Any, c: Any, k: int, dim: int, bits: int) -> Any:
    b, n = int(q.shape[0]), int(c.shape[0])
    chunk = max(1, _CHUNK_KEYS // max(b, 1))
    best = None
    for s in range(0, max(n, 1), chunk):
        e = min(n, s + chunk)
        d = _distances(cp, q, c[s:e], dim, bits)
        keys = (d.astype(cp.uint64) << 32) | cp.arange(s, e, dtype=cp.uint64)[None, :]
        best = _merge_topk(cp, best, keys, k)
    assert best is not None
    return best


def _code_topk_keys(cp: Any, q: Any, c: Any, k: int, dim: int, bits: int) -> Any:
    b, n = int(q.shape[0]), int(c.shape[0])
    w = (dim + 63) // 64
    bins = 8 * dim + 1 if bits == 2 else dim + 1
    cap = 1 << max(10, (2 * k - 1).bit_length())
    shared = cap * 8 + (bins + 2) * 4
    if n >= 1 << 32 or shared > _MAX_SHARED:
        return _code_search_sort(cp, q, c, k, dim, bits)
    keys = cp.empty((b, k), dtype=cp.uint64)
    overflow = cp.zeros(b, dtype=cp.int32)
    if b:
        kern = get_kernel("ann", "ann_code_topk", shared)
        args = (q, c, np.int64(n), np.int32(w), np.int32(dim), np.int32(bits), np.int32(k),
                np.int32(bins), np.int32(cap), keys, overflow)
        launch(kern, (b,), (_TOPK_THREADS,), args, shared_mem=shared)
        redo = cp.nonzero(overflow)[0]
        if int(redo.size):
            keys[redo] = _code_search_sort(cp, q[redo], c, k, dim, bits)
    return keys


def code_search(qcodes: Any, codes: Any, k: int, *, dim: int, bits: int = 2) -> tuple[Any, Any]:
    """Exact code-space top-k of every query code among ``codes`` on the GPU.

    Returns ``(ids, distances)``: int64 and float32 ``(len(qcodes), k)``, ascending
    distance, ties to the smaller row, padded with ``-1`` / ``+inf`` past ``len(codes)``.
    """
    b = _bits(bits)
    _check_k(k)
    bnd = enter(qcodes)
    cp = bnd.cp
    with bnd.active():
        q = _code_matrix(bnd, qcodes, dim, b, "qcodes")
        c = _code_matrix(bnd, codes, dim, b, "codes")
        ids, d = _split_keys(cp, _code_topk_keys(cp, q, c, k, dim, b), integer=True)
        return bnd.back(ids), bnd.back(d)


def _rerank_prepared(cp: Any, q: Any, x: Any, cand: Any, k: int, metric: int) -> tuple[Any, Any]:
    b, c = cand.shape
    n, dim = x.shape
    dist = cp.empty((b, c), dtype=cp.float32)
    if b and c:
        args = (q, np.int64(b), x, np.int64(n), np.int32(dim), cand, np.int64(c), np.int32(metric), dist)
        launch(get_kernel("ann", "ann_rerank"), (grid_for(b * c * 32, 256),), (256,), args)
    ids = cp.where((cand >= 0) & (cand < n), cand, -1)
    # (distance, id) order; padding and duplicates of -1 sort last
    key = _float_order_keys(cp, dist) | (ids.astype(cp.uint64) & _LOW32)
    key[ids < 0] = _PAD
    return _split_keys(cp, _merge_topk(cp, None, key, k), integer=False)


def rerank(Q: Any, X: Any, candidates: Any, k: int, *, metric: str = "cosine") -> tuple[Any, Any]:
    """Float rerank on the GPU: the ``k`` nearest of each query's ``candidates`` (int64
    rows of ``X``, ``-1`` for none) by the exact float distance in ``metric``'s convention.

    Returns ``(ids, distances)`` int64 / float32 ``(len(Q), k)``, ascending, ties to the
    smaller id, padded with ``-1`` / ``+inf``. Under cosine, ``Q`` and ``X`` are normalized
    on the device first (pass them raw, as to the CPU API).
    """
    m = _metric(metric)
    _check_k(k)
    bnd = enter(Q)
    cp = bnd.cp
    with bnd.active():
        q = _rows(bnd, Q, "Q")
        x = _rows(bnd, X, "X")
        _check_dims(q, x)
        cand = cp.ascontiguousarray(bnd.to_cupy(candidates).astype(cp.int64, copy=False))
        if cand.ndim != 2 or cand.shape[0] != q.shape[0]:
            raise InvalidArgumentError(f"candidates: must have shape ({q.shape[0]}, C), got {cand.shape}")
        _validate(cp, q, m, "Q")
        _validate(cp, x, m, "X")
        ids, d = _rerank_prepared(cp, _prepare(cp, q, m), _prepare(cp, x, m), cand, k, m)
        return bnd.back(ids), bnd.back(d)


def exact_search(X: Any, Q: Any, k: int, *, metric: str = "cosine") -> tuple[Any, Any]:
    """Brute-force float k-NN on the GPU (the GPU path of ``ordcore.ann.exact_search``).

    Candidates come from a float32 matmul (cuBLAS) over chunks of ``X`` with a running
    top-k; the returned distances are recomputed directly (differences for l2) by the rerank
    kernel. ``(ids, distances)`` int64 / float32 ``(len(Q), k)``, ties to the smaller row,
    padding ``-1`` / ``+inf``.
    """
    m = _metric(metric)
    _check_k(k)
    bnd = enter(X)
    cp = bnd.cp
    with bnd.active():
        x, q = _prepared_pair(bnd, X, Q, m)
        b, n = int(q.shape[0]), int(x.shape[0])
        qq = (q * q).sum(axis=1)[:, None] if m == 2 else None
        chunk = max(1, _CHUNK_KEYS // max(b, 1))
        best = None
        for s in range(0, max(n, 1), chunk):
            e = min(n, s + chunk)
            xs = x[s:e]
            dot = q @ xs.T
            if m == 2:
                d = cp.maximum(qq + (xs * xs).sum(axis=1)[None, :] - 2 * dot, 0)
            elif m == 1:
                d = 1 - dot
            else:
                d = cp.clip(1 - dot, 0, 2)
            keys = _float_order_keys(cp, d.astype(cp.float32)) | cp.arange(s, e, dtype=cp.uint64)[None, :]
            best = _merge_topk(cp, best, keys, k)
        assert best is not None
        ids, _ = _split_keys(cp, best, integer=False)
        ids, d = _rerank_prepared(cp, q, x, ids, k, m)
        return bnd.back(ids), bnd.back(d)


def candidate_search(
    X: Any, Q: Any, k: int, *, metric: str = "cosine", bits: int = 2, n_candidates: int | None = None,
    codes: Any = None,
) -> tuple[Any, Any]:
    """Code-space candidate generation plus float rerank on the GPU: encode ``Q`` (and
    ``X``, unless its ``codes`` are given), take the ``n_candidates`` (default ``4 k``)
    nearest codes per query, return the ``k`` nearest of them by float distance."""
    m, b = _metric(metric), _bits(bits)
    _check_k(k)
    nc = max(k, 4 * k if n_candidates is None else int(n_candidates))
    bnd = enter(X)
    cp = bnd.cp
    with bnd.active():
        x, q = _prepared_pair(bnd, X, Q, m)
        dim = int(x.shape[1])
        c = _encode_prepared(cp, x, b) if codes is None else _code_matrix(bnd, codes, dim, b, "codes")
        if c.shape[0] != x.shape[0]:
            raise InvalidArgumentError(f"codes: {c.shape[0]} rows for {x.shape[0]} vectors")
        keys = _code_topk_keys(cp, _encode_prepared(cp, q, b), c, nc, dim, b)
        cand, _ = _split_keys(cp, keys, integer=True)
        ids, d = _rerank_prepared(cp, q, x, cand, k, m)
        return bnd.back(ids), bnd.back(d)
