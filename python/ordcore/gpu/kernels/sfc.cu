// ordcore GPU kernels: Hilbert indexes and Morton codes (see ordcore/gpu/sfc.py).
//
// Self-contained (no #include) so that NVRTC compiles it with no CUDA toolkit headers, and
// so that tests/test_gpu_host.py can compile the per-point functions as plain C++ on the
// host (ORDCORE_HOST_TEST) and check them against hilbertcurve / pymorton without a GPU.
//
// Conventions (bit-identical to the CPU path):
// * Hilbert: Skilling's transpose algorithm ("Programming the Hilbert curve", AIP Conf.
//   Proc. 707, 2004), exactly hilbertcurve.HilbertCurve(p=nbits, n=D).distances_from_points:
//   in the transpose-to-integer step coordinate 0 supplies the most significant bit of each
//   D-bit group. D * nbits <= 64, indexes are uint64.
// * Morton: bit interleave; coordinate 0 in the least significant bit of each D-bit group
//   (msb_first = 0), or in the most significant bit (msb_first = 1).
// * Coordinates outside [0, 2^nbits) and indexes outside [0, 2^(D*nbits)) are not encoded:
//   the kernel records the smallest offending row in *bad_row (atomicMin) and the Python
//   wrapper raises InvalidArgumentError naming it.

#ifndef ORDCORE_HD
#define ORDCORE_HD __device__ __forceinline__
#endif

typedef unsigned long long ord_u64;
typedef long long ord_i64;
typedef unsigned int ord_u32;

// ---------------------------------------------------------------- per-point functions

// Coordinate value check: true when v is a valid coordinate for nbits.
template <typename T>
ORDCORE_HD bool sfc_coord_ok(T v, int nbits) {
  if (v < T(0)) return false;                       // (always false for unsigned T)
  if (nbits >= 64) return true;
  return (((ord_u64)v) >> nbits) == 0ull;
}

// Spread the low 32 bits of v so that bit k lands at bit 2k.
ORDCORE_HD ord_u64 morton_spread2(ord_u64 v) {
  v &= 0xFFFFFFFFull;
  v = (v | (v << 16)) & 0x0000FFFF0000FFFFull;
  v = (v | (v << 8)) & 0x00FF00FF00FF00FFull;
  v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0Full;
  v = (v | (v << 2)) & 0x3333333333333333ull;
  v = (v | (v << 1)) & 0x5555555555555555ull;
  return v;
}

ORDCORE_HD ord_u64 morton_compact2(ord_u64 v) {
  v &= 0x5555555555555555ull;
  v = (v | (v >> 1)) & 0x3333333333333333ull;
  v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0Full;
  v = (v | (v >> 4)) & 0x00FF00FF00FF00FFull;
  v = (v | (v >> 8)) & 0x0000FFFF0000FFFFull;
  v = (v | (v >> 16)) & 0x00000000FFFFFFFFull;
  return v;
}

// Spread the low 21 bits of v so that bit k lands at bit 3k.
ORDCORE_HD ord_u64 morton_spread3(ord_u64 v) {
  v &= 0x1FFFFFull;
  v = (v | (v << 32)) & 0x001F00000000FFFFull;
  v = (v | (v << 16)) & 0x001F0000FF0000FFull;
  v = (v | (v << 8)) & 0x100F00F00F00F00Full;
  v = (v | (v << 4)) & 0x10C30C30C30C30C3ull;
  v = (v | (v << 2)) & 0x1249249249249249ull;
  return v;
}

ORDCORE_HD ord_u64 morton_compact3(ord_u64 v) {
  v &= 0x1249249249249249ull;
  v = (v | (v >> 2)) & 0x10C30C30C30C30C3ull;
  v = (v | (v >> 4)) & 0x100F00F00F00F00Full;
  v = (v | (v >> 8)) & 0x001F0000FF0000FFull;
  v = (v | (v >> 16)) & 0x001F00000000FFFFull;
  v = (v | (v >> 32)) & 0x00000000001FFFFFull;
  return v;
}

// Skilling AxestoTranspose followed by the transpose-to-integer step, on D words of type U
// (U = ord_u32 when nbits <= 32). x is modified.
template <typename U>
ORDCORE_HD ord_u64 hilbert_encode_words(U* x, int D, int nbits) {
  if (nbits <= 0) return 0ull;
  const U M = (U)1 << (nbits - 1);
  for (U Q = M; Q > 1; Q >>= 1) {
    const U P = Q - 1;
    for (int i = 0; i < D; ++i) {
      if (x[i] & Q) {
        x[0] ^= P;
      } else {
        const U t = (x[0] ^ x[i]) & P;
        x[0] ^= t;
        x[i] ^= t;
      }
    }
  }
  for (int i = 1; i < D; ++i) x[i] ^= x[i - 1];
  U t = 0;
  for (U Q = M; Q > 1; Q >>= 1) {
    if (x[D - 1] & Q) t ^= Q - 1;
  }
  for (int i = 0; i < D; ++i) x[i] ^= t;
  // transpose to integer: coordinate 0 is the most significant bit of each D-bit group
  if (D == 2) return (morton_spread2((ord_u64)x[0]) << 1) | morton_spread2((ord_u64)x[1]);
  if (D == 3 && nbits <= 21) {
    return (morton_spread3((ord_u64)x[0]) << 2) | (morton_spread3((ord_u64)x[1]) << 1) |
           morton_spread3((ord_u64)x[2]);
  }
  ord_u64 h = 0ull;
  for (int b = nbits - 1; b >= 0; --b) {
    for (int i = 0; i < D; ++i) h = (h << 1) | (ord_u64)((x[i] >> b) & 1);
  }
  return h;
}

// Integer-to-transpose followed by Skilling TransposetoAxes (hilbertcurve.point_from_distance).
template <typename U>
ORDCORE_HD void hilbert_decode_words(ord_u64 h, U* x, int D, int nbits) {
  for (int i = 0; i < D; ++i) x[i] = 0;
  if (nbits <= 0) return;
  if (D == 2) {
    x[0] = (U)morton_compact2(h >> 1);
    x[1] = (U)morton_compact2(h);
  } else if (D == 3 && nbits <= 21) {
    x[0] = (U)morton_compact3(h >> 2);
    x[1] = (U)morton_compact3(h >> 1);
    x[2] = (U)morton_compact3(h);
  } else {
    int pos = D * nbits - 1;
    for (int b = nbits - 1; b >= 0; --b) {
      for (int i = 0; i < D; ++i, --pos) x[i] |= (U)((h >> pos) & 1ull) << b;
    }
  }
  // Gray decode by H ^ (H / 2)
  const U t0 = x[D - 1] >> 1;
  for (int i = D - 1; i > 0; --i) x[i] ^= x[i - 1];
  x[0] ^= t0;
  // Undo excess work
  for (int q = 1; q < nbits; ++q) {
    const U Q = (U)1 << q;
    const U P = Q - 1;
    for (int i = D - 1; i >= 0; --i) {
      if (x[i] & Q) {
        x[0] ^= P;
      } else {
        const U t = (x[0] ^ x[i]) & P;
        x[0] ^= t;
        x[i] ^= t;
      }
    }
  }
}

// Bit-plane position of coordinate i inside each D-bit group.
ORDCORE_HD int morton_slot(int i, int D, int msb_first) { return msb_first ? (D - 1 - i) : i; }

ORDCORE_HD ord_u64 morton_encode_words(const ord_u64* x, int D, int nbits, int msb_first) {
  if (D == 2) {
    return morton_spread2(x[morton_slot(0, 2, msb_first)]) |
           (morton_spread2(x[morton_slot(1, 2, msb_first)]) << 1);
  }
  if (D == 3) {
    return morton_spread3(x[morton_slot(0, 3, msb_first)]) |
           (morton_spread3(x[morton_slot(1, 3, msb_first)]) << 1) |
           (morton_spread3(x[morton_slot(2, 3, msb_first)]) << 2);
  }
  ord_u64 h = 0ull;
  for (int b = 0; b < nbits; ++b) {
    for (int i = 0; i < D; ++i) {
      h |= ((x[i] >> b) & 1ull) << (b * D + morton_slot(i, D, msb_first));
    }
  }
  return h;
}

ORDCORE_HD void morton_decode_words(ord_u64 h, ord_u64* x, int D, int nbits, int msb_first) {
  if (D == 2) {
    x[morton_slot(0, 2, msb_first)] = morton_compact2(h);
    x[morton_slot(1, 2, msb_first)] = morton_compact2(h >> 1);
    return;
  }
  if (D == 3) {
    x[morton_slot(0, 3, msb_first)] = morton_compact3(h);
    x[morton_slot(1, 3, msb_first)] = morton_compact3(h >> 1);
    x[morton_slot(2, 3, msb_first)] = morton_compact3(h >> 2);
    return;
  }
  for (int i = 0; i < D; ++i) x[i] = 0ull;
  for (int b = 0; b < nbits; ++b) {
    for (int i = 0; i < D; ++i) {
      x[i] |= ((h >> (b * D + morton_slot(i, D, msb_first))) & 1ull) << b;
    }
  }
}

ORDCORE_HD bool sfc_index_ok(ord_u64 h, int total_bits) {
  return total_bits >= 64 || (h >> total_bits) == 0ull;
}

#ifndef ORDCORE_HOST_TEST
// ---------------------------------------------------------------- kernels
// Layout: coords (n, D) C-contiguous of type T, indexes (n,) uint64.
// DS > 0: the dimension is a compile-time constant (2, 3); DS == 0: runtime D <= 64.

#define ORDCORE_GRID_STRIDE(i, n) \
  for (ord_i64 i = (ord_i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (ord_i64)blockDim.x * gridDim.x)

template <typename T, int DS>
__global__ void hilbert_encode(const T* __restrict__ coords, ord_i64 n, int D_rt, int nbits,
                               ord_u64* __restrict__ out, ord_u64* __restrict__ bad_row) {
  const int D = DS > 0 ? DS : D_rt;
  ORDCORE_GRID_STRIDE(row, n) {
    bool ok = true;
    if (nbits <= 32 && DS > 0) {
      ord_u32 x[DS > 0 ? DS : 1];
      for (int i = 0; i < D; ++i) {
        const T v = coords[row * D + i];
        ok = ok && sfc_coord_ok(v, nbits);
        x[i] = (ord_u32)v;
      }
      out[row] = ok ? hilbert_encode_words<ord_u32>(x, D, nbits) : 0ull;
    } else {
      ord_u64 x[DS > 0 ? DS : 64];
      for (int i = 0; i < D; ++i) {
        const T v = coords[row * D + i];
        ok = ok && sfc_coord_ok(v, nbits);
        x[i] = (ord_u64)v;
      }
      out[row] = ok ? hilbert_encode_words<ord_u64>(x, D, nbits) : 0ull;
    }
    if (!ok) atomicMin(bad_row, (ord_u64)row);
  }
}

template <int DS>
__global__ void hilbert_decode(const ord_u64* __restrict__ h, ord_i64 n, int D_rt, int nbits,
                               ord_u64* __restrict__ coords, ord_u64* __restrict__ bad_row) {
  const int D = DS > 0 ? DS : D_rt;
  ORDCORE_GRID_STRIDE(row, n) {
    const ord_u64 v = h[row];
    if (!sfc_index_ok(v, D * nbits)) {
      atomicMin(bad_row, (ord_u64)row);
      for (int i = 0; i < D; ++i) coords[row * D + i] = 0ull;
      continue;
    }
    if (nbits <= 32 && DS > 0) {
      ord_u32 x[DS > 0 ? DS : 1];
      hilbert_decode_words<ord_u32>(v, x, D, nbits);
      for (int i = 0; i < D; ++i) coords[row * D + i] = x[i];
    } else {
      ord_u64 x[DS > 0 ? DS : 64];
      hilbert_decode_words<ord_u64>(v, x, D, nbits);
      for (int i = 0; i < D; ++i) coords[row * D + i] = x[i];
    }
  }
}

template <typename T, int DS>
__global__ void morton_encode(const T* __restrict__ coords, ord_i64 n, int D_rt, int nbits,
                              int msb_first, ord_u64* __restrict__ out,
                              ord_u64* __restrict__ bad_row) {
  const int D = DS > 0 ? DS : D_rt;
  ORDCORE_GRID_STRIDE(row, n) {
    bool ok = true;
    ord_u64 x[DS > 0 ? DS : 64];
    for (int i = 0; i < D; ++i) {
      const T v = coords[row * D + i];
      ok = ok && sfc_coord_ok(v, nbits);
      x[i] = (ord_u64)v;
    }
    out[row] = ok ? morton_encode_words(x, D, nbits, msb_first) : 0ull;
    if (!ok) atomicMin(bad_row, (ord_u64)row);
  }
}

template <int DS>
__global__ void morton_decode(const ord_u64* __restrict__ h, ord_i64 n, int D_rt, int nbits,
                              int msb_first, ord_u64* __restrict__ coords,
                              ord_u64* __restrict__ bad_row) {
  const int D = DS > 0 ? DS : D_rt;
  ORDCORE_GRID_STRIDE(row, n) {
    const ord_u64 v = h[row];
    ord_u64 x[DS > 0 ? DS : 64];
    if (!sfc_index_ok(v, D * nbits)) {
      atomicMin(bad_row, (ord_u64)row);
      for (int i = 0; i < D; ++i) coords[row * D + i] = 0ull;
      continue;
    }
    morton_decode_words(v, x, D, nbits, msb_first);
    for (int i = 0; i < D; ++i) coords[row * D + i] = x[i];
  }
}
#endif  // ORDCORE_HOST_TEST
