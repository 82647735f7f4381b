// Host build of the per-element device functions of python/ordcore/gpu/kernels/*.cu, so
// tests/test_gpu_host.py can check the kernels' arithmetic against hilbertcurve, pymorton
// and NumPy on a machine without a GPU. Built with: g++ -O1 -shared -fPIC -I<kernels dir>.
#define ORDCORE_HOST_TEST 1
#include <cmath>
#include <vector>
#define ORDCORE_HD inline
#include "sfc.cu"
#include "hadamard.cu"
#include "ann.cu"

extern "C" {

void shim_hilbert_encode(const ord_u64* coords, ord_i64 n, int D, int nbits, int narrow,
                         ord_u64* out) {
  for (ord_i64 r = 0; r < n; ++r) {
    if (narrow) {  // the uint32 path the 2-D / 3-D kernels take when nbits <= 32
      ord_u32 x[64];
      for (int i = 0; i < D; ++i) x[i] = (ord_u32)coords[r * D + i];
      out[r] = hilbert_encode_words<ord_u32>(x, D, nbits);
    } else {
      ord_u64 x[64];
      for (int i = 0; i < D; ++i) x[i] = coords[r * D + i];
      out[r] = hilbert_encode_words<ord_u64>(x, D, nbits);
    }
  }
}

void shim_hilbert_decode(const ord_u64* h, ord_i64 n, int D, int nbits, int narrow,
                         ord_u64* coords) {
  for (ord_i64 r = 0; r < n; ++r) {
    if (narrow) {
      ord_u32 x[64];
      hilbert_decode_words<ord_u32>(h[r], x, D, nbits);
      for (int i = 0; i < D; ++i) coords[r * D + i] = x[i];
    } else {
      ord_u64 x[64];
      hilbert_decode_words<ord_u64>(h[r], x, D, nbits);
      for (int i = 0; i < D; ++i) coords[r * D + i] = x[i];
    }
  }
}

void shim_morton_encode(const ord_u64* coords, ord_i64 n, int D, int nbits, int msb_first,
                        ord_u64* out) {
  for (ord_i64 r = 0; r < n; ++r) out[r] = morton_encode_words(coords + r * D, D, nbits, msb_first);
}

void shim_morton_decode(const ord_u64* h, ord_i64 n, int D, int nbits, int msb_first,
                        ord_u64* coords) {
  for (ord_i64 r = 0; r < n; ++r) morton_decode_words(h[r], coords + r * D, D, nbits, msb_first);
}

int shim_coord_ok_i64(long long v, int nbits) { return sfc_coord_ok(v, nbits); }

void shim_counter_u64(ord_u64 seed, ord_u64 stream, ord_i64 count, ord_u64* out) {
  for (ord_i64 i = 0; i < count; ++i) out[i] = ord_counter_u64(seed, stream, (ord_u64)i);
}

// The fused sign of the fwht kernel: key per (seed, block), one mix per coordinate.
void shim_fused_signs(ord_u64 seed, ord_i64 blocks, ord_i64 n, signed char* out) {
  for (ord_i64 b = 0; b < blocks; ++b) {
    const ord_u64 key = ord_counter_key(seed, (ord_u64)b);
    for (ord_i64 i = 0; i < n; ++i)
      out[b * n + i] = (ord_mix64(key ^ ((ord_u64)i + ORDCORE_GOLDEN)) >> 63) ? -1 : 1;
  }
}

void shim_f16_to_f32(const unsigned short* h, ord_i64 n, float* out) {
  for (ord_i64 i = 0; i < n; ++i) { ord_f16 v; v.bits = h[i]; out[i] = ord_to_float(v); }
}
void shim_f32_to_f16(const float* f, ord_i64 n, unsigned short* out) {
  for (ord_i64 i = 0; i < n; ++i) out[i] = ord_from_float<ord_f16>(f[i]).bits;
}
void shim_bf16_to_f32(const unsigned short* h, ord_i64 n, float* out) {
  for (ord_i64 i = 0; i < n; ++i) { ord_bf16 v; v.bits = h[i]; out[i] = ord_to_float(v); }
}
void shim_f32_to_bf16(const float* f, ord_i64 n, unsigned short* out) {
  for (ord_i64 i = 0; i < n; ++i) out[i] = ord_from_float<ord_bf16>(f[i]).bits;
}

// In-register FWHT of one row of 16 values (the first stage of every fwht instance).
void shim_fwht16(float* v) { ord_fwht_regs<16>(v); }

void shim_code_distances(const ord_u64* a, ord_i64 na, const ord_u64* b, ord_i64 nb, int W,
                         int D, int bits, int* out) {
  for (ord_i64 i = 0; i < na; ++i)
    for (ord_i64 j = 0; j < nb; ++j)
      out[i * nb + j] = ann_code_distance(a + i * bits * W, b + j * bits * W, W, D, bits);
}

}  // extern "C"

extern "C" {
void shim_ann_normalize(const float* x, ord_i64 n, int D, float* out) {
  for (ord_i64 r = 0; r < n; ++r) ann_normalize_row(x + r * D, D, out + r * D);
}
void shim_ann_encode(const float* x, ord_i64 n, int D, int bits, int W, ord_u64* codes) {
  for (ord_i64 r = 0; r < n; ++r) ann_encode_row(x + r * D, D, bits, W, codes + r * bits * W);
}
}

// ann_code_topk emulated: every phase runs for all "threads" in turn between barriers
// (the phases are data-parallel, so a sequential schedule is one valid interleaving).
extern "C" int shim_ann_code_topk(const ord_u64* qcodes, ord_i64 B, const ord_u64* codes,
                                  ord_i64 N, int W, int D, int bits, int k, int bins, int cap,
                                  int nth, ord_u64* keys, int* overflow) {
  std::vector<unsigned int> hist(bins + 2);
  std::vector<ord_u64> cand(cap);
  AnnTopkShared sh;
  sh.hist = hist.data();
  sh.cand = cand.data();
  sh.cnt = sh.hist + bins;
  sh.thr = sh.cnt + 1;
  for (ord_i64 qi = 0; qi < B; ++qi) {
    const ord_u64* q = qcodes + qi * bits * W;
    for (int t = 0; t < nth; ++t) ann_topk_phase_a(sh, bins, t, nth);
    for (int t = 0; t < nth; ++t) ann_topk_phase_b(sh, q, codes, N, W, D, bits, t, nth);
    for (int t = 0; t < nth; ++t) ann_topk_phase_c(sh, bins, N, k, t);
    for (int t = 0; t < nth; ++t) ann_topk_phase_d(sh, q, codes, N, W, D, bits, cap, t, nth);
    if (*sh.cnt > (unsigned int)cap) { overflow[qi] = 1; continue; }
    overflow[qi] = 0;
    for (int t = 0; t < nth; ++t) ann_topk_phase_e(sh, cap, t, nth);
    for (int k2 = 2; k2 <= cap; k2 <<= 1)
      for (int j = k2 >> 1; j > 0; j >>= 1)
        for (int t = 0; t < nth; ++t) ann_bitonic_step(sh.cand, cap, k2, j, t, nth);
    for (int i = 0; i < k; ++i) keys[qi * k + i] = i < cap ? sh.cand[i] : ~0ull;
  }
  return 0;
}
