// ordcore GPU kernels: fast Walsh-Hadamard transform along the last axis (ordcore/gpu/hadamard.py).
//
// Sylvester order: y = x @ H_n with H_1 = [1], H_2m = [[H_m, H_m], [H_m, -H_m]]; computed in
// float32 for every storage type (float32, float16, bfloat16), scaled in float32 before the
// result is rounded to the storage type (so 2 * ones(32768) in float16 does not overflow).
// Sizes n = 2^LOG_N, LOG_N in 1..15, one template instance per size. For n = K * 2^k the
// wrapper runs this kernel on the K sub-rows into a float32 buffer and hadamard_kmix applies
// H_K (y = z @ kron(H_K, I)), as H = kron(H_K, H_{2^k}).
//
// Random signs (RandomizedHadamard): coordinate i of block b is negated iff
// counter_u64(seed, b, i) >> 63 == 1 (rust/ordcore-core/src/rng.rs), applied before the
// transform (stream = the block b of the rotation; see the fwht kernel for the indexing).
//
// Self-contained: no #include, so NVRTC compiles it without toolkit headers.

#ifndef ORDCORE_HD
#define ORDCORE_HD __device__ __forceinline__
#endif

typedef unsigned long long ord_u64;
typedef long long ord_i64;
typedef unsigned int ord_u32;
typedef unsigned short ord_u16;

// ---------------------------------------------------------------- counter-based generator
#define ORDCORE_GOLDEN 0x9E3779B97F4A7C15ull

ORDCORE_HD ord_u64 ord_mix64(ord_u64 z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Key of (seed, stream): the first two of the three mixing rounds of counter_u64.
ORDCORE_HD ord_u64 ord_counter_key(ord_u64 seed, ord_u64 stream) {
  return ord_mix64(ord_mix64(seed + ORDCORE_GOLDEN) ^ (stream + ORDCORE_GOLDEN));
}

ORDCORE_HD ord_u64 ord_counter_u64(ord_u64 seed, ord_u64 stream, ord_u64 index) {
  return ord_mix64(ord_counter_key(seed, stream) ^ (index + ORDCORE_GOLDEN));
}

// ---------------------------------------------------------------- storage types
// Half and bfloat16 travel as raw 16-bit patterns (struct wrappers pick the conversion).
struct ord_f16 { ord_u16 bits; };
struct ord_bf16 { ord_u16 bits; };

ORDCORE_HD float ord_bits_to_float(ord_u32 u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
#endif
}

ORDCORE_HD ord_u32 ord_float_to_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  ord_u32 u;
  __builtin_memcpy(&u, &f, 4);
  return u;
#endif
}

ORDCORE_HD float ord_to_float(float v) { return v; }
ORDCORE_HD float ord_to_float(ord_bf16 v) { return ord_bits_to_float(((ord_u32)v.bits) << 16); }
ORDCORE_HD float ord_to_float(ord_f16 v) {
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
#else
  const ord_u32 sign = (ord_u32)(v.bits & 0x8000u) << 16;
  ord_u32 exp = (v.bits >> 10) & 0x1Fu;
  ord_u32 man = v.bits & 0x3FFu;
  if (exp == 0x1Fu) return ord_bits_to_float(sign | 0x7F800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return ord_bits_to_float(sign);
    exp = 113;  // normalize the subnormal
    while ((man & 0x400u) == 0) { man <<= 1; --exp; }
    man &= 0x3FFu;
    return ord_bits_to_float(sign | (exp << 23) | (man << 13));
  }
  return ord_bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
#endif
}

template <typename T> ORDCORE_HD T ord_from_float(float f);
template <> ORDCORE_HD float ord_from_float<float>(float f) { return f; }
template <> ORDCORE_HD ord_bf16 ord_from_float<ord_bf16>(float f) {
  // round to nearest even, NaN stays a (quiet) NaN
  const ord_u32 u = ord_float_to_bits(f);
  ord_bf16 r;
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    r.bits = (ord_u16)((u >> 16) | 0x40u);
  } else {
    r.bits = (ord_u16)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  }
  return r;
}
template <> ORDCORE_HD ord_f16 ord_from_float<ord_f16>(float f) {
  ord_f16 r;
#ifdef __CUDA_ARCH__
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
#else
  // round to nearest even (host test path only)
  const ord_u32 u = ord_float_to_bits(f);
  const ord_u32 sign = (u >> 16) & 0x8000u;
  const ord_u32 a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) { r.bits = (ord_u16)(sign | 0x7E00u); return r; }
  if (a >= 0x477FF000u) { r.bits = (ord_u16)(sign | 0x7C00u); return r; }  // rounds to inf
  if (a < 0x38800000u) {  // subnormal half (or zero)
    if (a < 0x33000000u) { r.bits = (ord_u16)sign; return r; }
    const ord_u32 e = a >> 23;
    const ord_u32 m = (a & 0x7FFFFFu) | 0x800000u;
    const ord_u32 shift = 126u - e;  // 14 + (112 - e) + ... : value = m * 2^(e-150)
    const ord_u32 q = m >> (shift - 0);
    const ord_u32 rem = m & ((1u << shift) - 1u);
    const ord_u32 half = 1u << (shift - 1u);
    ord_u32 res = q;
    if (rem > half || (rem == half && (q & 1u))) ++res;
    r.bits = (ord_u16)(sign | res);
    return r;
  }
  ord_u32 res = ((a - 0x38000000u) >> 13);
  const ord_u32 rem = a & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (res & 1u))) ++res;
  r.bits = (ord_u16)(sign | res);
#endif
  return r;
}

// ---------------------------------------------------------------- per-row helpers
// In-register FWHT of E values (E a power of two), Sylvester order.
template <int E>
ORDCORE_HD void ord_fwht_regs(float* v) {
#pragma unroll
  for (int h = 1; h < E; h <<= 1) {
#pragma unroll
    for (int j = 0; j < E; ++j) {
      if ((j & h) == 0) {
        const float a = v[j];
        const float b = v[j + h];
        v[j] = a + b;
        v[j + h] = a - b;
      }
    }
  }
}

// Launch geometry of one size: E values per thread (in registers), TR threads per row,
// butterflies across the low 5 thread bits with warp shuffles, across the remaining
// (warp) bits through shared memory, in passes of at most LOG_E bits.
template <int LOG_N>
struct FwhtCfg {
  static const int LOG_E = LOG_N <= 4 ? LOG_N : (LOG_N - 10 > 4 ? LOG_N - 10 : 4);
  static const int E = 1 << LOG_E;
  static const int LOG_TR = LOG_N - LOG_E;
  static const int TR = 1 << LOG_TR;
  static const int LOG_LANE = LOG_TR < 5 ? LOG_TR : 5;
  static const int LOG_WARP = LOG_TR - LOG_LANE;
  static const int BLOCK = TR >= 128 ? TR : 128;
  static const int ROWS = BLOCK / TR;
  static const int SMEM_FLOATS = LOG_WARP > 0 ? (1 << LOG_N) : 0;
};

#ifndef ORDCORE_HOST_TEST
template <typename T, int E>
__device__ __forceinline__ void ord_load(const T* __restrict__ p, float* v, bool vec) {
  if (vec && (E * sizeof(T)) % 16 == 0) {
    const uint4* q = reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int c = 0; c < (int)(E * sizeof(T) / 16); ++c) {
      const uint4 w = q[c];
      const T* t = reinterpret_cast<const T*>(&w);
#pragma unroll
      for (int j = 0; j < (int)(16 / sizeof(T)); ++j) v[c * (16 / sizeof(T)) + j] = ord_to_float(t[j]);
    }
  } else {
#pragma unroll
    for (int j = 0; j < E; ++j) v[j] = ord_to_float(p[j]);
  }
}

template <typename T, int E>
__device__ __forceinline__ void ord_store(T* __restrict__ p, const float* v, bool vec) {
  if (vec && (E * sizeof(T)) % 16 == 0) {
    uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int c = 0; c < (int)(E * sizeof(T) / 16); ++c) {
      uint4 w;
      T* t = reinterpret_cast<T*>(&w);
#pragma unroll
      for (int j = 0; j < (int)(16 / sizeof(T)); ++j) t[j] = ord_from_float<T>(v[c * (16 / sizeof(T)) + j]);
      q[c] = w;
    }
  } else {
#pragma unroll
    for (int j = 0; j < E; ++j) p[j] = ord_from_float<T>(v[j]);
  }
}

// x, y: (rows, n) C-contiguous, n = 2^LOG_N. vec: both pointers are 16-byte aligned.
// Signs (use_signs != 0): coordinate j of row r is multiplied, before the transform, by the
// sign of (seed, stream, (r % sub_k) * n + j): rows are sub-rows of user rows of length
// sub_k * n, and the generator's index is the coordinate in the user row.
template <typename IN, typename OUT, int LOG_N>
__global__ void __launch_bounds__(FwhtCfg<LOG_N>::BLOCK)
fwht(const IN* __restrict__ x, OUT* __restrict__ y, ord_i64 rows, float scale, int vec,
     int use_signs, ord_u64 seed, ord_u64 stream, ord_i64 sub_k) {
  typedef FwhtCfg<LOG_N> C;
  extern __shared__ float smem[];
  const int tid = threadIdx.x;
  const int t = tid & (C::TR - 1);
  const ord_i64 row = (ord_i64)blockIdx.x * C::ROWS + (tid >> C::LOG_TR);
  const bool active = row < rows;
  const ord_i64 base = row * ((ord_i64)1 << LOG_N) + (ord_i64)t * C::E;
  float v[C::E];
  if (active) {
    ord_load<IN, C::E>(x + base, v, vec != 0);
    if (use_signs) {
      const ord_u64 key = ord_counter_key(seed, stream);
      const ord_u64 off = (ord_u64)((row % sub_k) << LOG_N) + (ord_u64)t * C::E;
#pragma unroll
      for (int j = 0; j < C::E; ++j) {
        if (ord_mix64(key ^ (off + j + ORDCORE_GOLDEN)) >> 63) v[j] = -v[j];
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < C::E; ++j) v[j] = 0.0f;
  }
  ord_fwht_regs<C::E>(v);
#pragma unroll
  for (int s = 0; s < C::LOG_LANE; ++s) {
    const int m = 1 << s;
    const bool upper = (t & m) != 0;
#pragma unroll
    for (int j = 0; j < C::E; ++j) {
      const float o = __shfl_xor_sync(0xFFFFFFFFu, v[j], m);
      v[j] = upper ? (o - v[j]) : (v[j] + o);
    }
  }
  if (C::LOG_WARP > 0) {
    // Shared layout: element (t, j) at j * TR + t (conflict-free for consecutive t).
#pragma unroll
    for (int j = 0; j < C::E; ++j) smem[j * C::TR + t] = v[j];
    // Warp bits are address bits [5, LOG_TR); butterflies over them in chunks.
#pragma unroll
    for (int c0 = 0; c0 < C::LOG_WARP; c0 += C::LOG_E) {
      const int cb = (C::LOG_WARP - c0) < C::LOG_E ? (C::LOG_WARP - c0) : C::LOG_E;
      const int G = 1 << cb;
      const int P = 5 + c0;
      __syncthreads();
#pragma unroll
      for (int g = 0; g < (C::E >> cb); ++g) {
        const int o = g * C::TR + t;
        const int a0 = ((o >> P) << (P + cb)) | (o & ((1 << P) - 1));
        float w[C::E];
#pragma unroll
        for (int m = 0; m < G; ++m) w[m] = smem[a0 + (m << P)];
#pragma unroll
        for (int h = 1; h < G; h <<= 1) {
#pragma unroll
          for (int m = 0; m < G; ++m) {
            if ((m & h) == 0) {
              const float a = w[m];
              const float b = w[m + h];
              w[m] = a + b;
              w[m + h] = a - b;
            }
          }
        }
#pragma unroll
        for (int m = 0; m < G; ++m) smem[a0 + (m << P)] = w[m];
      }
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < C::E; ++j) v[j] = smem[j * C::TR + t];
  }
  if (active) {
#pragma unroll
    for (int j = 0; j < C::E; ++j) v[j] *= scale;
    ord_store<OUT, C::E>(y + base, v, vec != 0);
  }
}

// y[r, a', b] = scale * sum_a HK[a, a'] * z[r, a, b] (z: (rows, K, m) float32, HK: (K, K)).
template <typename OUT>
__global__ void hadamard_kmix(const float* __restrict__ z, OUT* __restrict__ y,
                              const float* __restrict__ hk, int K, ord_i64 m, ord_i64 rows,
                              float scale) {
  const ord_i64 total = rows * m;
  for (ord_i64 i = (ord_i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (ord_i64)blockDim.x * gridDim.x) {
    const ord_i64 r = i / m;
    const ord_i64 b = i - r * m;
    const float* zr = z + r * K * m + b;
    OUT* yr = y + r * K * m + b;
    for (int ap = 0; ap < K; ++ap) {
      float acc = 0.0f;
      for (int a = 0; a < K; ++a) acc += hk[a * K + ap] * zr[(ord_i64)a * m];
      yr[(ord_i64)ap * m] = ord_from_float<OUT>(acc * scale);
    }
  }
}

// signs[b, i] = (counter_u64(seed, b, i) >> 63) ? -1 : +1, as int8; (blocks, n) C-contiguous.
__global__ void random_signs(ord_u64 seed, ord_i64 blocks, ord_i64 n, signed char* __restrict__ out) {
  const ord_i64 total = blocks * n;
  for (ord_i64 i = (ord_i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (ord_i64)blockDim.x * gridDim.x) {
    const ord_i64 b = i / n;
    out[i] = (ord_counter_u64(seed, (ord_u64)b, (ord_u64)(i - b * n)) >> 63) ? -1 : 1;
  }
}

// counter_u64 for index in [0, count): the raw generator, for tests.
__global__ void counter_u64_kernel(ord_u64 seed, ord_u64 stream, ord_i64 count,
                                   ord_u64* __restrict__ out) {
  for (ord_i64 i = (ord_i64)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (ord_i64)blockDim.x * gridDim.x) {
    out[i] = ord_counter_u64(seed, stream, (ord_u64)i);
  }
}
#endif  // ORDCORE_HOST_TEST
