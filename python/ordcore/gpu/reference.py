"""NumPy references of what the GPU kernels compute bit for bit (run on the CPU, no CuPy).

* :func:`counter_u64` / :func:`random_signs`: the counter-based generator of
  ``rust/ordcore-core/src/rng.rs`` (SplitMix64 finalizer applied three times), which
  ``hadamard.cu`` re-implements for the ``RandomizedHadamard`` signs.
* :func:`hilbert_encode` / :func:`hilbert_decode` (Skilling's transpose algorithm, exactly
  ``hilbertcurve.HilbertCurve(p=nbits, n=D)``) and :func:`morton_encode` /
  :func:`morton_decode` (bit interleave), vectorized over rows.
* :func:`ann_normalize` / :func:`ann_encode`: the codes of ``ordcore.ann.encode``.
* :func:`code_distances`: the 2-bit / 1-bit code distance of ``ann.cu``.

They are slow but plain, and let the GPU tests run where the peers are not installed.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = [
    "GOLDEN",
    "mix64",
    "counter_u64",
    "random_signs",
    "popcount64",
    "code_distances",
    "hilbert_encode",
    "hilbert_decode",
    "morton_encode",
    "morton_decode",
    "ann_normalize",
    "ann_encode",
]

GOLDEN = 0x9E3779B97F4A7C15
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)

U64 = npt.NDArray[np.uint64]


def _u64(v: int | npt.ArrayLike) -> U64:
    if isinstance(v, int):
        return np.array([v % (1 << 64)], dtype=np.uint64)
    return np.asarray(v, dtype=np.uint64)


def mix64(z: npt.ArrayLike) -> U64:
    """SplitMix64's output function on uint64 (wrapping), elementwise."""
    v: U64 = np.array(z, dtype=np.uint64, copy=True, ndmin=1)
    with np.errstate(over="ignore"):
        v = (v ^ (v >> np.uint64(30))) * _M1
        v = (v ^ (v >> np.uint64(27))) * _M2
    return v ^ (v >> np.uint64(31))


def counter_u64(seed: int, stream: int | npt.ArrayLike, index: int | npt.ArrayLike) -> U64:
    """``counter_u64(seed, stream, index)`` of rng.rs, broadcast over stream and index."""
    g = np.uint64(GOLDEN)
    with np.errstate(over="ignore"):
        k = mix64(_u64(seed) + g)
        k = mix64(k ^ (_u64(stream) + g))
        return mix64(k ^ (_u64(index) + g))


def random_signs(seed: int, blocks: int, n: int) -> npt.NDArray[np.int8]:
    """int8 (blocks, n): -1 where ``counter_u64(seed, b, i) >> 63 == 1``, else +1."""
    b = np.arange(blocks, dtype=np.uint64)[:, None]
    i = np.arange(n, dtype=np.uint64)[None, :]
    neg = (counter_u64(seed, b, i) >> np.uint64(63)).astype(bool)
    return np.where(neg, np.int8(-1), np.int8(1)).astype(np.int8)


def popcount64(x: U64) -> npt.NDArray[np.int64]:
    """Population count of each uint64."""
    if hasattr(np, "bitwise_count"):
        out: npt.NDArray[np.int64] = np.bitwise_count(x).astype(np.int64)
        return out
    b = np.ascontiguousarray(x).view(np.uint8)  # pragma: no cover - numpy < 2
    slow: npt.NDArray[np.int64] = np.unpackbits(b).reshape(*x.shape, 64).sum(-1).astype(np.int64)
    return slow  # pragma: no cover


def code_distances(a: U64, b: U64, dim: int, bits: int) -> npt.NDArray[np.int64]:
    """Code distance matrix (len(a), len(b)) of ``ann.cu``: Hamming for ``bits=1``;
    ``4 * dim - sum_i s_a s_b m_a m_b`` for ``bits=2`` (sign plane then magnitude plane)."""
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    w = (dim + 63) // 64
    if bits == 1:
        x = a[:, None, :w] ^ b[None, :, :w]
        hamming: npt.NDArray[np.int64] = popcount64(x).sum(-1)
        return hamming
    idx = np.arange(dim)
    word, bit = idx // 64, (idx % 64).astype(np.uint64)

    def planes(c: U64) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        s = ((c[:, word] >> bit) & np.uint64(1)).astype(np.int64) * 2 - 1
        m = ((c[:, w + word] >> bit) & np.uint64(1)).astype(np.int64) + 1
        return s, m

    sa, ma = planes(a)
    sb, mb = planes(b)
    out: npt.NDArray[np.int64] = 4 * dim - (sa * ma) @ (sb * mb).T
    return out


_ONE = np.uint64(1)


def hilbert_encode(coords: npt.ArrayLike, nbits: int) -> U64:
    """Hilbert indexes (N,) of coordinates (N, D) with ``D * nbits <= 64``: Skilling's
    AxestoTranspose, then coordinate 0 as the most significant bit of each D-bit group."""
    x = np.array(coords, dtype=np.uint64, copy=True, ndmin=2)
    d = x.shape[1]
    m = 1 << (nbits - 1)
    q = m
    while q > 1:
        p = np.uint64(q - 1)
        qq = np.uint64(q)
        for i in range(d):
            hit = (x[:, i] & qq) != 0
            x[hit, 0] ^= p
            t = (x[:, 0] ^ x[:, i]) & p
            t[hit] = 0
            x[:, 0] ^= t
            x[:, i] ^= t
        q >>= 1
    for i in range(1, d):
        x[:, i] ^= x[:, i - 1]
    t = np.zeros(len(x), dtype=np.uint64)
    q = m
    while q > 1:
        t[(x[:, d - 1] & np.uint64(q)) != 0] ^= np.uint64(q - 1)
        q >>= 1
    x ^= t[:, None]
    h = np.zeros(len(x), dtype=np.uint64)
    for b in range(nbits - 1, -1, -1):
        for i in range(d):
            h = (h << _ONE) | ((x[:, i] >> np.uint64(b)) & _ONE)
    return h


def hilbert_decode(codes: npt.ArrayLike, nbits: int, ndim: int) -> U64:
    """Coordinates (N, ndim) of Hilbert indexes (N,): the inverse of :func:`hilbert_encode`."""
    h = np.array(codes, dtype=np.uint64, ndmin=1)
    x = np.zeros((len(h), ndim), dtype=np.uint64)
    pos = ndim * nbits - 1
    for b in range(nbits - 1, -1, -1):
        for i in range(ndim):
            x[:, i] |= ((h >> np.uint64(pos)) & _ONE) << np.uint64(b)
            pos -= 1
    t = x[:, ndim - 1] >> _ONE
    for i in range(ndim - 1, 0, -1):
        x[:, i] ^= x[:, i - 1]
    x[:, 0] ^= t
    for qb in range(1, nbits):
        qq = np.uint64(1 << qb)
        p = np.uint64((1 << qb) - 1)
        for i in range(ndim - 1, -1, -1):
            hit = (x[:, i] & qq) != 0
            x[hit, 0] ^= p
            tt = (x[:, 0] ^ x[:, i]) & p
            tt[hit] = 0
            x[:, 0] ^= tt
            x[:, i] ^= tt
    return x


def morton_encode(coords: npt.ArrayLike, nbits: int, *, msb_first: bool = False) -> U64:
    """Morton codes (N,): bit ``b`` of coordinate ``i`` at bit ``b * D + i``
    (``b * D + D - 1 - i`` with ``msb_first``)."""
    x = np.array(coords, dtype=np.uint64, ndmin=2)
    d = x.shape[1]
    h = np.zeros(len(x), dtype=np.uint64)
    for b in range(nbits):
        for i in range(d):
            slot = d - 1 - i if msb_first else i
            h |= ((x[:, i] >> np.uint64(b)) & _ONE) << np.uint64(b * d + slot)
    return h


def morton_decode(codes: npt.ArrayLike, nbits: int, ndim: int, *, msb_first: bool = False) -> U64:
    """Coordinates (N, ndim) of Morton codes: the inverse of :func:`morton_encode`."""
    h = np.array(codes, dtype=np.uint64, ndmin=1)
    x = np.zeros((len(h), ndim), dtype=np.uint64)
    for b in range(nbits):
        for i in range(ndim):
            slot = ndim - 1 - i if msb_first else i
            x[:, i] |= ((h >> np.uint64(b * ndim + slot)) & _ONE) << np.uint64(b)
    return x


F32 = npt.NDArray[np.float32]


def ann_normalize(x: npt.ArrayLike) -> F32:
    """Rows L2-normalized as ordcore.ann does: ``ss`` summed in float64 in index order,
    ``(x_i as f64 / sqrt(ss)) as f32``."""
    a = np.asarray(x, dtype=np.float32).astype(np.float64)
    ss = np.cumsum(a * a, axis=1)[:, -1:]  # cumsum is sequential: the CPU's order
    out: F32 = (a / np.sqrt(ss)).astype(np.float32)
    return out


def ann_encode(x: npt.ArrayLike, bits: int = 2, metric: str = "cosine") -> U64:
    """Codes (N, bits * ceil(D / 64)) of ``ordcore.ann.encode``."""
    a = np.asarray(x, dtype=np.float32)
    if metric == "cosine":
        a = ann_normalize(a)
    n, dim = a.shape
    w = (dim + 63) // 64
    codes = np.zeros((n, bits * w), dtype=np.uint64)
    mag = np.abs(a).astype(np.float64)
    tau = np.cumsum(mag, axis=1)[:, -1:] / dim
    planes = [a > 0, mag > tau][:bits]
    for p, plane in enumerate(planes):
        for i in range(dim):
            codes[plane[:, i], p * w + i // 64] |= _ONE << np.uint64(i % 64)
    return codes
