"""NumPy references of what the GPU kernels compute bit for bit (run on the CPU, no CuPy).

* :func:`counter_u64` / :func:`random_signs`: the counter-based generator of
  ``rust/ordcore-core/src/rng.rs`` (SplitMix64 finalizer applied three times), which
  ``hadamard.cu`` re-implements for the ``RandomizedHadamard`` signs.
* :func:`code_distances`: the 2-bit / 1-bit code distance of ``ann.cu``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["GOLDEN", "mix64", "counter_u64", "random_signs", "popcount64", "code_distances"]

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
    z = np.array(z, dtype=np.uint64, copy=True, ndmin=1)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


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
        return np.bitwise_count(x).astype(np.int64)
    b = np.ascontiguousarray(x).view(np.uint8)  # pragma: no cover - numpy < 2
    return np.unpackbits(b).reshape(*x.shape, 64).sum(-1).astype(np.int64)  # pragma: no cover


def code_distances(a: U64, b: U64, dim: int, bits: int) -> npt.NDArray[np.int64]:
    """Code distance matrix (len(a), len(b)) of ``ann.cu``: Hamming for ``bits=1``;
    ``4 * dim - sum_i s_a s_b m_a m_b`` for ``bits=2`` (sign plane then magnitude plane)."""
    a = np.asarray(a, dtype=np.uint64)
    b = np.asarray(b, dtype=np.uint64)
    w = (dim + 63) // 64
    if bits == 1:
        x = a[:, None, :w] ^ b[None, :, :w]
        return popcount64(x).sum(-1)
    idx = np.arange(dim)
    word, bit = idx // 64, (idx % 64).astype(np.uint64)

    def planes(c: U64) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        s = ((c[:, word] >> bit) & np.uint64(1)).astype(np.int64) * 2 - 1
        m = ((c[:, w + word] >> bit) & np.uint64(1)).astype(np.int64) + 1
        return s, m

    sa, ma = planes(a)
    sb, mb = planes(b)
    return 4 * dim - (sa * ma) @ (sb * mb).T
