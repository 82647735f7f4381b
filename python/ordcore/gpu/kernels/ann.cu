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

// L2-normalize one row as ordcore.ann does (codes.rs normalize_into): ss = sum (x_i as f64)^2
// in index order, norm = sqrt(ss), out_i = (float)((double)x_i / norm). Sequential, with
// explicitly rounded products (no FMA contraction), so the result is the CPU's bit for bit.
ORDCORE_HD void ann_normalize_row(const float* xr, int D, float* o) {
  double ss = 0.0;
  for (int i = 0; i < D; ++i) {
    const double v = (double)xr[i];
#ifdef __CUDA_ARCH__
    ss = __dadd_rn(ss, __dmul_rn(v, v));
#else
    ss = ss + v * v;
#endif
  }
  const double norm = sqrt(ss);
  for (int i = 0; i < D; ++i) o[i] = (float)((double)xr[i] / norm);
}

// Code of one prepared row (codes.rs encode_one): sign plane, then for bits = 2 the
// magnitude plane with tau = (sum_i (double)|x_i|) / D summed in index order, compared in
// double. c has bits * W words.
ORDCORE_HD void ann_encode_row(const float* xr, int D, int bits, int W, ord_u64* c) {
  double tau = 0.0;
  if (bits == 2) {
    for (int i = 0; i < D; ++i) tau += (double)fabsf(xr[i]);
    tau = tau / (double)D;
  }
  for (int w = 0; w < W; ++w) {
    ord_u64 s = 0ull, m = 0ull;
    const int hi = (w + 1) * 64 < D ? (w + 1) * 64 : D;
    for (int i = w * 64; i < hi; ++i) {
      const float v = xr[i];
      if (v > 0.0f) s |= 1ull << (i & 63);
      if ((double)fabsf(v) > tau) m |= 1ull << (i & 63);
    }
    c[w] = s;
    if (bits == 2) c[W + w] = m;
  }
}

// ---------------------------------------------------------------- code-space top-k
// One block per query: exact top-k of the code distances to N codes, ties broken by the
// smaller row (as ordcore.ann.exact_search). Distances are small integers in [0, bins), so:
//   A. zero a histogram of distances (shared);
//   B. histogram every distance;
//   C. thread 0 finds the threshold T: the smallest distance with count(<= T) >= min(k, N);
//   D. recompute distances, append (d << 32 | row) for every d <= T to a shared buffer of
//      cap entries (cap a power of two >= k);
//   E. if count(<= T) > cap (massive ties at T) flag the query (the wrapper re-runs it with
//      a full sort); else pad the buffer with ~0 keys;
//   F. bitonic sort of the buffer; G. write the k smallest keys.
// The phases are separate functions of (tid, nthreads) so that tests/gpu_host_shim.cpp can
// run them sequentially per thread between "barriers" on the CPU.
struct AnnTopkShared {
  unsigned int* hist;  // bins
  ord_u64* cand;       // cap
  unsigned int* cnt;   // 1
  unsigned int* thr;   // 1
};

ORDCORE_HD void ann_topk_phase_a(AnnTopkShared sh, int bins, int tid, int nth) {
  for (int i = tid; i < bins; i += nth) sh.hist[i] = 0u;
  if (tid == 0) { *sh.cnt = 0u; *sh.thr = 0u; }
}

ORDCORE_HD void ann_topk_phase_b(AnnTopkShared sh, const ord_u64* q, const ord_u64* codes,
                                 ord_i64 N, int W, int D, int bits, int tid, int nth) {
  const int L = bits * W;
  for (ord_i64 j = tid; j < N; j += nth) {
    const int d = ann_code_distance(q, codes + j * L, W, D, bits);
#ifdef __CUDA_ARCH__
    atomicAdd(&sh.hist[d], 1u);
#else
    sh.hist[d] += 1u;
#endif
  }
}

ORDCORE_HD void ann_topk_phase_c(AnnTopkShared sh, int bins, ord_i64 N, int k, int tid) {
  if (tid != 0) return;
  const ord_i64 need = (ord_i64)k < N ? (ord_i64)k : N;
  ord_i64 cum = 0;
  int t = bins - 1;
  for (int d = 0; d < bins; ++d) {
    cum += sh.hist[d];
    if (cum >= need) { t = d; break; }
  }
  *sh.thr = (unsigned int)t;
}

ORDCORE_HD void ann_topk_phase_d(AnnTopkShared sh, const ord_u64* q, const ord_u64* codes,
                                 ord_i64 N, int W, int D, int bits, int cap, int tid, int nth) {
  const int L = bits * W;
  const int t = (int)*sh.thr;
  for (ord_i64 j = tid; j < N; j += nth) {
    const int d = ann_code_distance(q, codes + j * L, W, D, bits);
    if (d <= t) {
#ifdef __CUDA_ARCH__
      const unsigned int pos = atomicAdd(sh.cnt, 1u);
#else
      const unsigned int pos = (*sh.cnt)++;
#endif
      if (pos < (unsigned int)cap) sh.cand[pos] = ((ord_u64)d << 32) | (ord_u64)j;
    }
  }
}

ORDCORE_HD void ann_topk_phase_e(AnnTopkShared sh, int cap, int tid, int nth) {
  const unsigned int c = *sh.cnt;
  for (int i = tid; i < cap; i += nth) {
    if ((unsigned int)i >= c) sh.cand[i] = ~0ull;
  }
}

// One compare-exchange step (k2, j) of the bitonic sort, ascending.
ORDCORE_HD void ann_bitonic_step(ord_u64* s, int cap, int k2, int j, int tid, int nth) {
  for (int i = tid; i < cap; i += nth) {
    const int ixj = i ^ j;
    if (ixj > i) {
      const bool up = (i & k2) == 0;
      const ord_u64 a = s[i];
      const ord_u64 b = s[ixj];
      if ((a > b) == up) { s[i] = b; s[ixj] = a; }
    }
  }
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

// One thread per row (sequential sums keep the CPU's rounding). Zero rows are rejected by
// the caller before the launch.
__global__ void ann_normalize(const float* __restrict__ x, ord_i64 n, int D, float* __restrict__ out) {
  for (ord_i64 r = (ord_i64)blockIdx.x * blockDim.x + threadIdx.x; r < n;
       r += (ord_i64)blockDim.x * gridDim.x) {
    ann_normalize_row(x + r * D, D, out + r * D);
  }
}

// codes (n, bits * W) of prepared rows x (n, D); one thread per row.
__global__ void ann_encode(const float* __restrict__ x, ord_i64 n, int D, int bits, int W,
                           ord_u64* __restrict__ codes) {
  for (ord_i64 r = (ord_i64)blockIdx.x * blockDim.x + threadIdx.x; r < n;
       r += (ord_i64)blockDim.x * gridDim.x) {
    ann_encode_row(x + r * D, D, bits, W, codes + r * (ord_i64)(bits * W));
  }
}

// out[i] = d(a[i], b[i]) (ordcore.ann.code_distance: row-wise, uint32).
__global__ void ann_code_distance_rows(const ord_u64* __restrict__ a, const ord_u64* __restrict__ b,
                                       ord_i64 n, int W, int D, int bits,
                                       unsigned int* __restrict__ out) {
  const int L = bits * W;
  for (ord_i64 i = (ord_i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (ord_i64)blockDim.x * gridDim.x) {
    out[i] = (unsigned int)ann_code_distance(a + i * L, b + i * L, W, D, bits);
  }
}

// Float distances of candidates in ordcore.ann's conventions (rows already normalized under
// cosine): metric 0 cosine 1 - <q, x> clamped to [0, 2]; 1 ip 1 - <q, x>; 2 l2 squared.
// out[q, c] for cand[q, c] (int64; -1 or out of range -> +inf). One warp per pair, float32
// accumulation (the order differs from the CPU's, so the last bits may too).
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
    float s = 0.0f;
    for (int i = lane; i < D; i += 32) {
      const float av = a[i];
      const float xv = x[i];
      if (metric == 2) {
        const float t = av - xv;
        s = fmaf(t, t, s);
      } else {
        s = fmaf(av, xv, s);
      }
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);
    if (lane == 0) {
      float r = s;
      if (metric == 0) r = fminf(fmaxf(1.0f - s, 0.0f), 2.0f);
      else if (metric == 1) r = 1.0f - s;
      out[p] = r;
    }
  }
}

// keys (B, k): (distance << 32 | row), ~0 for padding; overflow[q] = 1 when the query must
// be redone by the sort path. Dynamic shared: bins * 4 + cap * 8 bytes (+ 8), cap a power
// of two. Launch: grid (B), block (nth).
__global__ void ann_code_topk(const ord_u64* __restrict__ qcodes, const ord_u64* __restrict__ codes,
                              ord_i64 N, int W, int D, int bits, int k, int bins, int cap,
                              ord_u64* __restrict__ keys, int* __restrict__ overflow) {
  extern __shared__ ord_u64 ann_smem[];
  AnnTopkShared sh;
  sh.cand = ann_smem;
  sh.hist = reinterpret_cast<unsigned int*>(ann_smem + cap);
  sh.cnt = sh.hist + bins;
  sh.thr = sh.cnt + 1;
  const int tid = threadIdx.x;
  const int nth = blockDim.x;
  const ord_i64 qi = blockIdx.x;
  const ord_u64* q = qcodes + qi * (ord_i64)(bits * W);
  ann_topk_phase_a(sh, bins, tid, nth);
  __syncthreads();
  ann_topk_phase_b(sh, q, codes, N, W, D, bits, tid, nth);
  __syncthreads();
  ann_topk_phase_c(sh, bins, N, k, tid);
  __syncthreads();
  ann_topk_phase_d(sh, q, codes, N, W, D, bits, cap, tid, nth);
  __syncthreads();
  if (*sh.cnt > (unsigned int)cap) {  // uniform across the block
    if (tid == 0) overflow[qi] = 1;
    return;
  }
  if (tid == 0) overflow[qi] = 0;
  ann_topk_phase_e(sh, cap, tid, nth);
  __syncthreads();
  for (int k2 = 2; k2 <= cap; k2 <<= 1) {
    for (int j = k2 >> 1; j > 0; j >>= 1) {
      ann_bitonic_step(sh.cand, cap, k2, j, tid, nth);
      __syncthreads();
    }
  }
  for (int i = tid; i < k; i += nth) keys[qi * k + i] = i < cap ? sh.cand[i] : ~0ull;
}
#endif  // ORDCORE_HOST_TEST
