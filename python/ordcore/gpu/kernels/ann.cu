// ordcore GPU kernels: binary codes, code-space distances and float rerank (ordcore/gpu/ann.py).
//
// Code layout (as ordcore.ann.encode): uint64 (N, bits * W), W = ceil(D / 64); the sign
// plane first (bit i % 64 of word i / 64 set iff x_i > 0), then for bits = 2 the magnitude
// plane (set iff |x_i| > tau). Padding bits past D are zero in every plane.
//
// Code distance, 2 bits: d(a, b) = 4 D - sum_i s_a,i s_b,i m_a,i m_b,i with s = +-1 from the
// sign bit and m = 1 + magnitude bit; per coordinate 4 - s s' m m' is one of
// {3, 2, 0} (signs agree; both weak, one strong, both strong) or {5, 6, 8} (signs differ).
// 1 bit: Hamming distance of the sign planes.
//
// Self-contained: no #include, so NVRTC compiles it without toolkit headers.

#ifndef ORDCORE_HD
#define ORDCORE_HD __device__ __forceinline__
#endif

typedef unsigned long long ord_u64;
typedef long long ord_i64;
typedef unsigned int ord_u32;

ORDCORE_HD int ord_popc(ord_u64 v) {
#ifdef __CUDA_ARCH__
  return __popcll(v);
#else
  return __builtin_popcountll(v);
#endif
}

// Sum over one word of the per-coordinate 2-bit terms 4 - s s' m m' (padding bits count 3).
ORDCORE_HD int ann_word_term2(ord_u64 sa, ord_u64 ma, ord_u64 sb, ord_u64 mb) {
  const ord_u64 dis = sa ^ sb;
  const ord_u64 both = ma & mb;
  const ord_u64 one = ma ^ mb;
  const ord_u64 none = ~(ma | mb);
  return 3 * ord_popc(none) + 2 * ord_popc(one) + 2 * ord_popc(dis & none) +
         4 * ord_popc(dis & one) + 8 * ord_popc(dis & both);
}

// Distance between two codes (each bits * W words).
ORDCORE_HD int ann_code_distance(const ord_u64* a, const ord_u64* b, int W, int D, int bits) {
  int d = 0;
  if (bits == 1) {
    for (int w = 0; w < W; ++w) d += ord_popc(a[w] ^ b[w]);
    return d;
  }
  for (int w = 0; w < W; ++w) d += ann_word_term2(a[w], a[W + w], b[w], b[W + w]);
  return d - 3 * (64 * W - D);
}

#ifndef ORDCORE_HOST_TEST
#define ANN_QB 8  // queries per thread in ann_code_distances

// dist[q, j] = d(qcodes[q], codes[j]) for q < B, j < N; int32 (B, N) row-major with row
// stride ld (ld >= N lets the wrapper write straight into a wider key buffer).
// Block: blockDim.x threads over j; blockIdx.y selects ANN_QB queries, staged in shared memory.
__global__ void ann_code_distances(const ord_u64* __restrict__ qcodes, ord_i64 B,
                                   const ord_u64* __restrict__ codes, ord_i64 N, int W, int D,
                                   int bits, int* __restrict__ dist, ord_i64 ld) {
  extern __shared__ ord_u64 qs[];  // ANN_QB * bits * W words
  const int L = bits * W;
  const ord_i64 q0 = (ord_i64)blockIdx.y * ANN_QB;
  const int nq = (B - q0) < ANN_QB ? (int)(B - q0) : ANN_QB;
  for (int i = threadIdx.x; i < nq * L; i += blockDim.x) qs[i] = qcodes[q0 * L + i];
  __syncthreads();
  for (ord_i64 j = (ord_i64)blockIdx.x * blockDim.x + threadIdx.x; j < N;
       j += (ord_i64)blockDim.x * gridDim.x) {
    const ord_u64* c = codes + j * L;
    int acc[ANN_QB];
#pragma unroll
    for (int q = 0; q < ANN_QB; ++q) acc[q] = 0;
    if (bits == 1) {
      for (int w = 0; w < W; ++w) {
        const ord_u64 cs = c[w];
#pragma unroll
        for (int q = 0; q < ANN_QB; ++q) {
          if (q < nq) acc[q] += ord_popc(cs ^ qs[q * L + w]);
        }
      }
    } else {
      for (int w = 0; w < W; ++w) {
        const ord_u64 cs = c[w];
        const ord_u64 cm = c[W + w];
#pragma unroll
        for (int q = 0; q < ANN_QB; ++q) {
          if (q < nq) acc[q] += ann_word_term2(qs[q * L + w], qs[q * L + W + w], cs, cm);
        }
      }
#pragma unroll
      for (int q = 0; q < ANN_QB; ++q) acc[q] -= 3 * (64 * W - D);
    }
#pragma unroll
    for (int q = 0; q < ANN_QB; ++q) {
      if (q < nq) dist[(q0 + q) * ld + j] = acc[q];
    }
  }
}

// Float distances of candidates: out[q, c] for cand[q, c] (int64, -1 = padding -> +inf).
// metric 0: squared L2; 1: negative inner product; 2: cosine distance 1 - <q, x>/(|q||x|).
// One warp per (q, c) pair; float32 accumulation.
__global__ void ann_rerank(const float* __restrict__ queries, ord_i64 B,
                           const float* __restrict__ base, ord_i64 N, int D,
                           const ord_i64* __restrict__ cand, ord_i64 C, int metric,
                           float* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  const ord_i64 warps = ((ord_i64)blockDim.x * gridDim.x) >> 5;
  for (ord_i64 p = ((ord_i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5; p < B * C; p += warps) {
    const ord_i64 q = p / C;
    const ord_i64 id = cand[p];
    if (id < 0 || id >= N) {
      if (lane == 0) out[p] = __int_as_float(0x7F800000);
      continue;
    }
    const float* a = queries + q * D;
    const float* x = base + id * D;
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f;
    for (int i = lane; i < D; i += 32) {
      const float av = a[i];
      const float xv = x[i];
      if (metric == 0) {
        const float t = av - xv;
        s0 = fmaf(t, t, s0);
      } else {
        s0 = fmaf(av, xv, s0);
        s1 = fmaf(av, av, s1);
        s2 = fmaf(xv, xv, s2);
      }
    }
    for (int o = 16; o > 0; o >>= 1) {
      s0 += __shfl_xor_sync(0xFFFFFFFFu, s0, o);
      s1 += __shfl_xor_sync(0xFFFFFFFFu, s1, o);
      s2 += __shfl_xor_sync(0xFFFFFFFFu, s2, o);
    }
    if (lane == 0) {
      float r;
      if (metric == 0) r = s0;
      else if (metric == 1) r = -s0;
      else r = 1.0f - s0 / (sqrtf(s1) * sqrtf(s2));
      out[p] = r;
    }
  }
}
#endif  // ORDCORE_HOST_TEST
