//! Scalar codes of 4 and 8 bits per coordinate and their asymmetric distance.
//!
//! A vector `x` of dimension `D` (after the index's optional centering + randomized Hadamard
//! rotation, see [`super::rotation`]) is coded per vector: `lo = min_i x_i`,
//! `delta = (max_i x_i - lo) / (2^b - 1)` (0 for a constant vector) and
//! `c_i = round((x_i - lo) / delta)` clamped to `[0, 2^b - 1]`, so `x_i ~ lo + delta c_i`.
//!
//! Per-vector scale, not per-dimension: measured as the recall@10 of brute-force top-C by
//! the asymmetric score followed by an exact rerank (30k base, 300 queries, rotation on):
//!
//! | data | bits | per vector C=10 / 20 | per dimension (min/max) C=10 / 20 | per dimension (0.1 % clip) |
//! |---|---|---|---|---|
//! | glosses PCA-50, cosine | 4 | 0.883 / 0.997 | 0.817 / 0.980 | 0.855 / 0.990 |
//! | glosses PCA-50, cosine | 8 | 0.996 / 1.000 | 0.988 / 1.000 | 0.979 / 0.999 |
//! | SIFT, l2 | 4 | 0.883 / 0.995 | 0.811 / 0.972 | 0.845 / 0.989 |
//! | SIFT, l2 | 8 | 0.993 / 1.000 | 0.986 / 1.000 | 0.979 / 1.000 |
//!
//! (clipping the per-vector range at 3 standard deviations was worse too: 0.880 / 0.874 at
//! 4 bits, 0.969 / 0.965 at 8 bits.)
//!
//! # Layout of a code (`u64` words, bytes in little-endian order)
//! * word 0: `lo` (f32 bits, low half), `delta` (f32 bits, high half);
//! * word 1: `extra` (f32 bits, low half), `sum_i c_i` (u32, high half). `extra` is
//!   `|x'|^2`, the squared norm of the decoded vector `x'_i = lo + delta c_i`, under l2, and
//!   the exact `<m, x_orig - m>` under cosine / ip (`m` the centering mean, 0 without a
//!   rotation). Under l2 the decoded norm, not the exact `|x|^2`, makes the score
//!   `|q|^2 + |x'|^2 - 2 <q', x'>` the distance of the decoded vectors, whose coding error
//!   grows with `|q - x|`; with the exact norm it grows with `|q|`, which on data far from
//!   the origin (SIFT) swamps the gaps between near neighbours. Measured on SIFT 200k
//!   (`bits=8`, R 64, L_build 128, 300 queries, 1 thread): recall@10 at `ef_search` 12 / 20 /
//!   32 0.885 / 0.942 / 0.969 with the exact norm, 0.943 / 0.972 / 0.984 with the decoded one,
//!   and QPS at recall@10 0.95 (`benches/ann.py --dataset sift --clock cpu`, `bits="auto"`)
//!   from 1.00x to 1.14x glass SQ8U (1.64x to 2.08x hnswlib); at 20k rows about the same;
//! * then the codes of `lanes = ceil(D / 64) * 64` coordinates (past `D`: 0). 8 bits: one
//!   byte per coordinate. 4 bits: 32 bytes per block of 64 coordinates, byte `j` of the block
//!   holding coordinate `j` in its low nibble and coordinate `32 + j` in its high nibble (so
//!   a vector unpack is one mask and one shift).
//!
//! # Query form
//! The query `q` (same transform) stays at higher precision: int8 lanes
//! `qi = round((q - mu) / s)` with `mu` the mean of the `D` coordinates of `q` and
//! `s = max |q_i - mu| / 127`, plus the exact query terms. Word 0: `s` (f32 bits),
//! `sum_i qi` (i32 bits); word 1: `qconst` (f32 bits: `|q|^2` under l2, `<q_orig - m, m> +
//! |m|^2` under cosine / ip), `mu` (f32 bits); then `lanes` int8 values (past `D`: 0).
//! Rounding `q` itself on one scale spends the int8 range on a common offset: on l2 data
//! offset by 100 with unit spread (3000 x 32, `rotation=None`, `ef_search` 64) recall@10
//! was 0.706 / 0.717 at 4 / 8 bits, 0.9985 / 0.999 with `q - mu` (the midrange as `mu`:
//! 0.9995 / 0.9985). Elsewhere about neutral (`benches/ann_build.py --reps 1`, the same
//! graph each time): SIFT 200k `bits=8` recall@10 at `ef_search` 12 / 16 / 24 / 32 0.924 /
//! 0.948 / 0.967 / 0.972 -> 0.929 / 0.947 / 0.965 / 0.971 (midrange 0.933 / 0.952 / 0.967 /
//! 0.972), QPS within run-to-run noise; SIFT 20k `bits=8` 0.941 / 0.965 / 0.985 / 0.990 ->
//! 0.941 / 0.966 / 0.986 / 0.990; glosses 20k `bits=4,rotation=hadamard` (cosine) 0.933 /
//! 0.976 / 0.989 / 0.994 -> 0.933 / 0.976 / 0.989 / 0.995.
//!
//! # Distances
//! The integer dot products `sum qi c_i` (asymmetric) and `sum c_i e_i` (two codes) are exact
//! on every kernel (sums of at most 16384 lanes fit in i32 and are added in i64), and the
//! rest is the same scalar float formula, so every kernel gives the same bits:
//! `<q, x> ~ s (lo sum qi + delta sum qi c_i) + mu (D lo + delta sum c_i)`; l2: `|q|^2 + |x|^2 - 2 <q, x>`; cosine / ip:
//! `1 - (<q, x> + qconst + extra)` (the same convention as the float rerank). Two codes:
//! `<x, y> ~ D lo_x lo_y + lo_x delta_y E + lo_y delta_x C + delta_x delta_y sum c_i e_i`.
//! A distance `d` is returned as the order-preserving `u32` of its f32 bits ([`key_of`]), and
//! [`value_of`] turns it back into the float, which RobustPrune's `alpha` rule needs.

/// Coordinates per block: codes and query lanes are padded to a multiple of this.
pub const LANES: usize = 64;
const HEADER_WORDS: usize = 2;
/// Lanes per exact i32 partial sum: `16384 * 255 * 255 < 2^31`.
const CHUNK: usize = 16384;

/// Shape of the codes of one index: coded dimension and bits per coordinate (4 or 8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqLayout {
    pub dim: usize,
    pub bits: usize,
}

impl SqLayout {
    pub fn new(dim: usize, bits: usize) -> Self {
        debug_assert!(bits == 4 || bits == 8);
        SqLayout { dim, bits }
    }
    /// Coordinates after padding to [`LANES`].
    pub fn lanes(&self) -> usize {
        self.dim.div_ceil(LANES) * LANES
    }
    fn code_bytes(&self) -> usize {
        self.lanes() * self.bits / 8
    }
    /// Words of one data code (header included).
    pub fn code_words(&self) -> usize {
        HEADER_WORDS + self.code_bytes() / 8
    }
    /// Words of one query form (header included).
    pub fn query_words(&self) -> usize {
        HEADER_WORDS + self.lanes() / 8
    }
}

/// How the distance combines the dot product with the exact terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqMetric {
    /// Squared Euclidean distance.
    L2,
    /// `1 - <q, x>` (cosine on normalized rows, and ip).
    Dot,
}

/// The order-preserving `u32` of a float: `a < b` iff `key_of(a) < key_of(b)` for non-NaN
/// floats (`-0.0` sorts just below `0.0`).
#[inline(always)]
pub fn key_of(d: f32) -> u32 {
    let b = d.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// The inverse of [`key_of`].
#[inline(always)]
pub fn value_of(k: u32) -> f32 {
    if k >> 31 == 1 {
        f32::from_bits(k & 0x7fff_ffff)
    } else {
        f32::from_bits(!k)
    }
}

#[inline(always)]
fn lo_hi(w: u64) -> (u32, u32) {
    (w as u32, (w >> 32) as u32)
}

#[inline(always)]
fn pack(lo: u32, hi: u32) -> u64 {
    lo as u64 | (hi as u64) << 32
}

/// The bytes of a code or query (little-endian word order).
#[inline(always)]
fn bytes_of(w: &[u64]) -> &[u8] {
    // SAFETY: u8 has alignment 1 and every bit pattern is valid; the length covers exactly
    // the words' bytes, which live as long as `w`.
    unsafe { std::slice::from_raw_parts(w.as_ptr() as *const u8, w.len() * 8) }
}

#[inline(always)]
fn bytes_of_mut(w: &mut [u64]) -> &mut [u8] {
    // SAFETY: as in `bytes_of`, and the borrow is unique.
    unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr() as *mut u8, w.len() * 8) }
}

/// `v.round() as i32` (ties away from zero) for `|v| < 2^31`, without the libm call that
/// `f32::round` compiles to: the truncation and the fraction `v - trunc(v)` are exact, so
/// the result is the same integer (NaN gives 0, as `v.round() as i32` does).
#[inline(always)]
fn round_ties_away(v: f32) -> i32 {
    let t = v as i32;
    let f = v - t as f32;
    t + (f >= 0.5) as i32 - (f <= -0.5) as i32
}

/// Encodes `x` (length `layout.dim`, already transformed) with the exact term `extra` into
/// `out` (`layout.code_words()` words). See the module docs.
pub fn encode(x: &[f32], extra: f32, layout: SqLayout, out: &mut [u64]) {
    debug_assert_eq!(x.len(), layout.dim);
    debug_assert_eq!(out.len(), layout.code_words());
    let levels = ((1u32 << layout.bits) - 1) as f32;
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for &v in x {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let delta = if hi > lo { (hi - lo) / levels } else { 0.0 };
    let inv = if delta > 0.0 { 1.0 / delta } else { 0.0 };
    let code = |v: f32| round_ties_away((v - lo) * inv).clamp(0, levels as i32) as u8;
    out.iter_mut().for_each(|w| *w = 0);
    let (head, body) = out.split_at_mut(HEADER_WORDS);
    let body = bytes_of_mut(body);
    let mut sum = 0u32;
    if layout.bits == 8 {
        for (b, &v) in body.iter_mut().zip(x) {
            *b = code(v);
            sum += *b as u32;
        }
    } else {
        for (i, &v) in x.iter().enumerate() {
            let c = code(v);
            sum += c as u32;
            let (block, j) = (i / LANES, i % LANES);
            let byte = &mut body[block * 32 + j % 32];
            *byte |= if j < 32 { c } else { c << 4 };
        }
    }
    head[0] = pack(lo.to_bits(), delta.to_bits());
    head[1] = pack(extra.to_bits(), sum);
}

/// The first of `codes` (rows of `layout.code_words()` words) that no [`encode`] writes: a
/// non-finite `lo`, `delta` or exact term, a negative `delta`, or a code set in a padding
/// lane (a crafted file; such a code would make distances NaN).
pub fn first_invalid_code(codes: &[u64], layout: SqLayout) -> Option<usize> {
    let cw = layout.code_words();
    codes.chunks_exact(cw).position(|c| {
        let (lo, delta) = lo_hi(c[0]);
        let (lo, delta) = (f32::from_bits(lo), f32::from_bits(delta));
        let extra = f32::from_bits(c[1] as u32);
        let body = bytes_of(&c[HEADER_WORDS..]);
        !lo.is_finite()
            || !delta.is_finite()
            || delta < 0.0
            || !extra.is_finite()
            || (layout.dim..layout.lanes()).any(|i| code_at(body, layout.bits, i) != 0)
    })
}

/// Decodes a code into `out` (length `layout.dim`): `lo + delta c_i` (for `get` and tests).
pub fn decode(code: &[u64], layout: SqLayout, out: &mut [f32]) {
    let (lo, delta) = lo_hi(code[0]);
    let (lo, delta) = (f32::from_bits(lo), f32::from_bits(delta));
    let body = bytes_of(&code[HEADER_WORDS..]);
    for (i, o) in out.iter_mut().enumerate() {
        *o = lo + delta * code_at(body, layout.bits, i) as f32;
    }
}

#[inline(always)]
fn code_at(body: &[u8], bits: usize, i: usize) -> u8 {
    if bits == 8 {
        body[i]
    } else {
        let (block, j) = (i / LANES, i % LANES);
        let b = body[block * 32 + j % 32];
        if j < 32 {
            b & 15
        } else {
            b >> 4
        }
    }
}

/// Writes the query form of `q` (length `layout.dim`, transformed) with the exact term
/// `qconst` into `out` (`layout.query_words()` words). See the module docs. The int8 lanes
/// round `q - mu` (`mu` the mean of the query's coordinates), so a common offset does not
/// take up the int8 range; [`SqDist::query_distance`] adds `mu sum_i x'_i` back.
pub fn encode_query(q: &[f32], qconst: f32, layout: SqLayout, out: &mut [u64]) {
    debug_assert_eq!(out.len(), layout.query_words());
    let sum: f64 = q.iter().map(|&v| v as f64).sum();
    let mu = (sum / q.len().max(1) as f64) as f32;
    let mu = if mu.is_finite() { mu } else { 0.0 };
    let amax = q.iter().fold(0f32, |a, &v| a.max((v - mu).abs()));
    let s = amax / 127.0;
    let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
    out.iter_mut().for_each(|w| *w = 0);
    let (head, body) = out.split_at_mut(HEADER_WORDS);
    let body = bytes_of_mut(body);
    let mut sum = 0i32;
    for (b, &v) in body.iter_mut().zip(q) {
        let qi = round_ties_away((v - mu) * inv).clamp(-127, 127) as i8;
        sum += qi as i32;
        *b = qi as u8;
    }
    head[0] = pack(s.to_bits(), sum as u32);
    head[1] = pack(qconst.to_bits(), mu.to_bits());
}

/// The SIMD kernels of the scalar codes, slowest first. The fastest one the CPU supports is
/// chosen once per process; `ORDCORE_ANN_SQ_KERNEL` (`scalar`, `avx2`) caps it, and so does
/// `ORDCORE_ANN_KERNEL=portable`. Every kernel gives the same distances bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SqKernel {
    Scalar,
    /// AVX2 (`vpmaddubsw` / `vpmaddwd`).
    Avx2,
    /// AVX-512BW + VNNI (`vpdpbusd` / `vpdpwssd`).
    Avx512Vnni,
}

impl SqKernel {
    pub fn name(self) -> &'static str {
        match self {
            SqKernel::Scalar => "scalar",
            SqKernel::Avx2 => "avx2",
            SqKernel::Avx512Vnni => "avx512-vnni",
        }
    }
    /// Whether this CPU can run the kernel.
    pub fn supported(self) -> bool {
        match self {
            SqKernel::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            SqKernel::Avx2 => std::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            SqKernel::Avx512Vnni => {
                std::is_x86_feature_detected!("avx2")
                    && std::is_x86_feature_detected!("avx512f")
                    && std::is_x86_feature_detected!("avx512bw")
                    && std::is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
    /// The integer dot product of a data code body and a query body (`lanes` coordinates).
    #[inline(always)]
    fn dot_query(self, bits: usize, code: &[u8], q: &[u8]) -> i64 {
        chunked(bits, 8, code, q, |c, q| match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a kernel other than `Scalar` is only in use when `supported()`.
            SqKernel::Avx512Vnni => unsafe { x86::dot_query_512(bits, c, q) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            SqKernel::Avx2 => unsafe { x86::dot_query_256(bits, c, q) },
            _ => scalar::dot_query(bits, c, q),
        })
    }
    /// The integer dot product of two data code bodies.
    #[inline]
    fn dot_codes(self, bits: usize, a: &[u8], b: &[u8]) -> i64 {
        chunked(bits, bits, a, b, |a, b| match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a kernel other than `Scalar` is only in use when `supported()`.
            SqKernel::Avx512Vnni => unsafe { x86::dot_codes_512(bits, a, b) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            SqKernel::Avx2 => unsafe { x86::dot_codes_256(bits, a, b) },
            _ => scalar::dot_codes(bits, a, b),
        })
    }
}

/// Runs `f` over chunks of [`CHUNK`] lanes (each exact in i32) and sums in i64. `a` holds
/// `bits_a` bits a lane, `b` `bits_b`.
#[inline(always)]
fn chunked(
    bits_a: usize,
    bits_b: usize,
    a: &[u8],
    b: &[u8],
    f: impl Fn(&[u8], &[u8]) -> i32,
) -> i64 {
    let lanes = a.len() * 8 / bits_a;
    if lanes <= CHUNK {
        return f(a, b) as i64;
    }
    let mut acc = 0i64;
    let mut start = 0;
    while start < lanes {
        let n = CHUNK.min(lanes - start);
        let (sa, sb) = (start * bits_a / 8, start * bits_b / 8);
        acc += f(&a[sa..sa + n * bits_a / 8], &b[sb..sb + n * bits_b / 8]) as i64;
        start += n;
    }
    acc
}

/// The kernel in use (see [`SqKernel`]).
pub fn kernel() -> SqKernel {
    static KERNEL: std::sync::OnceLock<SqKernel> = std::sync::OnceLock::new();
    *KERNEL.get_or_init(|| {
        let portable = std::env::var("ORDCORE_ANN_KERNEL").as_deref() == Ok("portable");
        let cap = match std::env::var("ORDCORE_ANN_SQ_KERNEL").as_deref() {
            _ if portable => SqKernel::Scalar,
            Ok("scalar") => SqKernel::Scalar,
            Ok("avx2") => SqKernel::Avx2,
            _ => SqKernel::Avx512Vnni,
        };
        [SqKernel::Avx512Vnni, SqKernel::Avx2, SqKernel::Scalar]
            .into_iter()
            .find(|k| *k <= cap && k.supported())
            .unwrap_or(SqKernel::Scalar)
    })
}

/// The distance of the scalar codes of one index (see the module docs): `dist` scores a
/// query form against a code, `sym` two codes.
#[derive(Clone, Copy, Debug)]
pub struct SqDist {
    pub layout: SqLayout,
    pub metric: SqMetric,
    /// `|m|^2` of the centering mean (0 without one).
    pub mean_sq: f32,
    pub kernel: SqKernel,
}

impl SqDist {
    /// The distance with the kernel in use.
    pub fn new(layout: SqLayout, metric: SqMetric, mean_sq: f32) -> Self {
        SqDist::with_kernel(layout, metric, mean_sq, kernel())
    }
    /// The distance with a given kernel (the scalar one when the CPU cannot run it).
    pub fn with_kernel(layout: SqLayout, metric: SqMetric, mean_sq: f32, k: SqKernel) -> Self {
        let kernel = if k.supported() { k } else { SqKernel::Scalar };
        SqDist {
            layout,
            metric,
            mean_sq,
            kernel,
        }
    }

    /// The estimated distance of query form `q` to code `c`.
    #[inline(always)]
    pub fn query_distance(&self, q: &[u64], c: &[u64]) -> f32 {
        let body = bytes_of(&c[HEADER_WORDS..self.layout.code_words()]);
        let qb = bytes_of(&q[HEADER_WORDS..self.layout.query_words()]);
        let dot = self.kernel.dot_query(self.layout.bits, body, qb);
        let (s, qsum) = lo_hi(q[0]);
        let (s, qsum) = (f32::from_bits(s), qsum as i32);
        let (qconst, mu) = lo_hi(q[1]);
        let (qconst, mu) = (f32::from_bits(qconst), f32::from_bits(mu));
        let (lo, delta) = lo_hi(c[0]);
        let (lo, delta) = (f32::from_bits(lo), f32::from_bits(delta));
        let (extra, csum) = lo_hi(c[1]);
        let extra = f32::from_bits(extra);
        // `sum_i x'_i` over the `dim` coordinates (padding lanes have code 0 and no `lo`).
        let xsum = self.layout.dim as f32 * lo + delta * csum as f32;
        let ip = s * (lo * qsum as f32 + delta * dot as f32) + mu * xsum;
        match self.metric {
            SqMetric::L2 => qconst + extra - 2.0 * ip,
            SqMetric::Dot => 1.0 - (ip + qconst + extra),
        }
    }

    /// The estimated distance of codes `a` and `b`.
    #[inline]
    pub fn code_distance(&self, a: &[u64], b: &[u64]) -> f32 {
        let cw = self.layout.code_words();
        let dot = self.kernel.dot_codes(
            self.layout.bits,
            bytes_of(&a[HEADER_WORDS..cw]),
            bytes_of(&b[HEADER_WORDS..cw]),
        );
        let head = |c: &[u64]| {
            let (lo, delta) = lo_hi(c[0]);
            let (extra, sum) = lo_hi(c[1]);
            (
                f32::from_bits(lo),
                f32::from_bits(delta),
                f32::from_bits(extra),
                sum as f32,
            )
        };
        let (la, da, ea, sa) = head(a);
        let (lb, db, eb, sb) = head(b);
        let ip =
            self.layout.dim as f32 * la * lb + la * db * sb + lb * da * sa + da * db * dot as f32;
        match self.metric {
            SqMetric::L2 => ea + eb - 2.0 * ip,
            SqMetric::Dot => 1.0 - (ip + ea + eb + self.mean_sq),
        }
    }
}

impl super::codes::CodeDist for SqDist {
    #[inline(always)]
    fn dist(&self, q: &[u64], c: &[u64]) -> u32 {
        key_of(self.query_distance(q, c))
    }
    #[inline(always)]
    fn code_words(&self) -> usize {
        self.layout.code_words()
    }
    #[inline(always)]
    fn sym(&self, a: &[u64], b: &[u64]) -> u32 {
        key_of(self.code_distance(a, b))
    }
    #[inline(always)]
    fn value(&self, d: u32) -> f64 {
        value_of(d) as f64
    }
}

mod scalar {
    use super::LANES;

    #[inline(always)]
    fn nibbles(block: &[u8], j: usize) -> i32 {
        let b = block[j % 32];
        (if j < 32 { b & 15 } else { b >> 4 }) as i32
    }

    /// `sum c_i q_i` over one chunk (`q` int8).
    pub fn dot_query(bits: usize, c: &[u8], q: &[u8]) -> i32 {
        if bits == 8 {
            c.iter()
                .zip(q)
                .map(|(&a, &b)| a as i32 * b as i8 as i32)
                .sum()
        } else {
            c.chunks_exact(32)
                .zip(q.chunks_exact(LANES))
                .map(|(cb, qb)| {
                    (0..LANES)
                        .map(|j| nibbles(cb, j) * qb[j] as i8 as i32)
                        .sum::<i32>()
                })
                .sum()
        }
    }

    /// `sum c_i e_i` over one chunk of two codes.
    pub fn dot_codes(bits: usize, a: &[u8], b: &[u8]) -> i32 {
        if bits == 8 {
            a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
        } else {
            // Low with low and high with high nibble: the same coordinates in both.
            a.iter()
                .zip(b)
                .map(|(&x, &y)| {
                    (x & 15) as i32 * (y & 15) as i32 + (x >> 4) as i32 * (y >> 4) as i32
                })
                .sum()
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Sum of the eight i32 lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn hsum256(v: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        _mm_cvtsi128_si32(s)
    }

    /// # Safety
    /// The CPU supports AVX2; `c` holds `bits / 8` bytes a lane and `q` one byte a lane, for
    /// a multiple of 64 lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn dot_query_256(bits: usize, c: &[u8], q: &[u8]) -> i32 {
        let mut acc = _mm256_setzero_si256();
        let ones = _mm256_set1_epi16(1);
        let lanes = q.len();
        let ld = |p: &[u8], i: usize| {
            debug_assert!(i + 32 <= p.len());
            // SAFETY: callers pass `i + 32 <= p.len()`.
            unsafe { _mm256_loadu_si256(p.as_ptr().add(i) as *const __m256i) }
        };
        if bits == 8 {
            let mut i = 0;
            while i < lanes {
                let (a, b) = (ld(c, i), ld(q, i));
                // u8 x i8 products reach 255 * 127 * 2 in an i16 pair sum: widen first.
                let a0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(a));
                let a1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256::<1>(a));
                let b0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(b));
                let b1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256::<1>(b));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(a0, b0));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(a1, b1));
                i += 32;
            }
        } else {
            let mask = _mm256_set1_epi8(15);
            let mut blk = 0;
            while blk * 64 < lanes {
                let packed = ld(c, blk * 32);
                let lo = _mm256_and_si256(packed, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(packed), mask);
                // 15 * 127 * 2 fits in i16: no saturation in vpmaddubsw.
                let p0 = _mm256_maddubs_epi16(lo, ld(q, blk * 64));
                let p1 = _mm256_maddubs_epi16(hi, ld(q, blk * 64 + 32));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones));
                blk += 1;
            }
        }
        hsum256(acc)
    }

    /// # Safety
    /// The CPU supports AVX2; `a` and `b` are code bodies of the same length (a multiple of
    /// 32 bytes).
    #[target_feature(enable = "avx2")]
    pub unsafe fn dot_codes_256(bits: usize, a: &[u8], b: &[u8]) -> i32 {
        let mut acc = _mm256_setzero_si256();
        let ones = _mm256_set1_epi16(1);
        let ld = |p: &[u8], i: usize| {
            debug_assert!(i + 32 <= p.len());
            // SAFETY: callers pass `i + 32 <= p.len()`.
            unsafe { _mm256_loadu_si256(p.as_ptr().add(i) as *const __m256i) }
        };
        let mut i = 0;
        if bits == 8 {
            while i < a.len() {
                let (x, y) = (ld(a, i), ld(b, i));
                let x0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(x));
                let x1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256::<1>(x));
                let y0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(y));
                let y1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256::<1>(y));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x0, y0));
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x1, y1));
                i += 32;
            }
        } else {
            let mask = _mm256_set1_epi8(15);
            while i < a.len() {
                let (x, y) = (ld(a, i), ld(b, i));
                let p0 = _mm256_maddubs_epi16(_mm256_and_si256(x, mask), _mm256_and_si256(y, mask));
                let p1 = _mm256_maddubs_epi16(
                    _mm256_and_si256(_mm256_srli_epi16::<4>(x), mask),
                    _mm256_and_si256(_mm256_srli_epi16::<4>(y), mask),
                );
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones));
                i += 32;
            }
        }
        hsum256(acc)
    }

    /// # Safety
    /// The CPU supports AVX2, AVX-512F, AVX-512BW and AVX-512 VNNI; as [`dot_query_256`].
    #[inline]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vnni")]
    pub unsafe fn dot_query_512(bits: usize, c: &[u8], q: &[u8]) -> i32 {
        let mut acc = _mm512_setzero_si512();
        let lanes = q.len();
        let ld = |p: &[u8], i: usize| {
            debug_assert!(i + 64 <= p.len());
            // SAFETY: callers pass `i + 64 <= p.len()`.
            unsafe { _mm512_loadu_si512(p.as_ptr().add(i) as *const _) }
        };
        let mut i = 0;
        if bits == 8 {
            while i < lanes {
                acc = _mm512_dpbusd_epi32(acc, ld(c, i), ld(q, i));
                i += 64;
            }
        } else {
            let mask = _mm256_set1_epi8(15);
            while i < lanes {
                // SAFETY: the block's 32 bytes lie inside `c` (32 bytes per 64 lanes).
                let packed = unsafe { _mm256_loadu_si256(c.as_ptr().add(i / 2) as *const __m256i) };
                let lo = _mm256_and_si256(packed, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(packed), mask);
                let codes = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
                acc = _mm512_dpbusd_epi32(acc, codes, ld(q, i));
                i += 64;
            }
        }
        _mm512_reduce_add_epi32(acc)
    }

    /// # Safety
    /// The CPU supports AVX2, AVX-512F, AVX-512BW and AVX-512 VNNI; as [`dot_codes_256`].
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vnni")]
    pub unsafe fn dot_codes_512(bits: usize, a: &[u8], b: &[u8]) -> i32 {
        let mut acc = _mm512_setzero_si512();
        let ld = |p: &[u8], i: usize| {
            debug_assert!(i + 32 <= p.len());
            // SAFETY: callers pass `i + 32 <= p.len()`.
            unsafe { _mm256_loadu_si256(p.as_ptr().add(i) as *const __m256i) }
        };
        let mut i = 0;
        if bits == 8 {
            while i < a.len() {
                // u8 x u8 does not fit vpdpbusd's signed operand: widen to i16, vpdpwssd.
                let x = _mm512_cvtepu8_epi16(ld(a, i));
                let y = _mm512_cvtepu8_epi16(ld(b, i));
                acc = _mm512_dpwssd_epi32(acc, x, y);
                i += 32;
            }
        } else {
            let mask = _mm256_set1_epi8(15);
            let unpack = |p: __m256i| {
                let lo = _mm256_and_si256(p, mask);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(p), mask);
                _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
            };
            while i < a.len() {
                acc = _mm512_dpbusd_epi32(acc, unpack(ld(a, i)), unpack(ld(b, i)));
                i += 32;
            }
        }
        _mm512_reduce_add_epi32(acc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vec_of(seed: u64, n: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let r = crate::rng::counter_u64(seed, 11, i as u64);
                ((r >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * scale
            })
            .collect()
    }

    fn kernels() -> Vec<SqKernel> {
        [SqKernel::Scalar, SqKernel::Avx2, SqKernel::Avx512Vnni]
            .into_iter()
            .filter(|k| k.supported())
            .collect()
    }

    /// The brute-force reference of the codes' own distances: decode, then float64 formulas
    /// over the decoded vector and the dequantized query.
    fn reference(
        layout: SqLayout,
        metric: SqMetric,
        q: &[u64],
        c: &[u64],
        d: &[u64],
        mean_sq: f64,
    ) -> (f64, f64) {
        let mut xc = vec![0f32; layout.dim];
        let mut xd = vec![0f32; layout.dim];
        decode(c, layout, &mut xc);
        decode(d, layout, &mut xd);
        let s = f32::from_bits(q[0] as u32) as f64;
        let qb = bytes_of(&q[HEADER_WORDS..]);
        let mu = f32::from_bits((q[1] >> 32) as u32) as f64;
        let qf: Vec<f64> = (0..layout.dim)
            .map(|i| qb[i] as i8 as f64 * s + mu)
            .collect();
        let qconst = f32::from_bits(q[1] as u32) as f64;
        let ec = f32::from_bits(c[1] as u32) as f64;
        let ed = f32::from_bits(d[1] as u32) as f64;
        let ipq: f64 = qf.iter().zip(&xc).map(|(a, &b)| a * b as f64).sum();
        let ipc: f64 = xc.iter().zip(&xd).map(|(&a, &b)| a as f64 * b as f64).sum();
        match metric {
            SqMetric::L2 => (qconst + ec - 2.0 * ipq, ec + ed - 2.0 * ipc),
            SqMetric::Dot => (1.0 - (ipq + qconst + ec), 1.0 - (ipc + ec + ed + mean_sq)),
        }
    }

    /// Each width against the brute-force reference of its own distance, every kernel
    /// bit-identical, for dimensions with and without a partial block and past one chunk.
    #[test]
    fn distances_match_reference_on_every_kernel() {
        for bits in [4, 8] {
            for dim in [1, 7, 50, 63, 64, 65, 128, 384, 1000, 16384 + 100] {
                let layout = SqLayout::new(dim, bits);
                for metric in [SqMetric::L2, SqMetric::Dot] {
                    for seed in 0..4u64 {
                        let (x, y, q) = (
                            vec_of(3 * seed, dim, 2.0),
                            vec_of(3 * seed + 1, dim, 1.0),
                            vec_of(3 * seed + 2, dim, 3.0),
                        );
                        let (mut cx, mut cy) = (
                            vec![0u64; layout.code_words()],
                            vec![0u64; layout.code_words()],
                        );
                        encode(&x, 0.25, layout, &mut cx);
                        encode(&y, -0.5, layout, &mut cy);
                        let mut qf = vec![0u64; layout.query_words()];
                        encode_query(&q, 0.75, layout, &mut qf);
                        let (want_q, want_c) = reference(layout, metric, &qf, &cx, &cy, 0.125);
                        let mut seen: Option<(u32, u32)> = None;
                        for k in kernels() {
                            let d = SqDist::with_kernel(layout, metric, 0.125, k);
                            let (a, b) = (d.query_distance(&qf, &cx), d.code_distance(&cx, &cy));
                            let tol = |w: f64| 1e-4 * (1.0 + w.abs() + dim as f64);
                            assert!(
                                (a as f64 - want_q).abs() < tol(want_q),
                                "{bits} {dim} {k:?} {a} {want_q}"
                            );
                            assert!(
                                (b as f64 - want_c).abs() < tol(want_c),
                                "{bits} {dim} {k:?} {b} {want_c}"
                            );
                            let bitsk = (a.to_bits(), b.to_bits());
                            if let Some(s) = seen {
                                assert_eq!(s, bitsk, "kernel {k:?} differs, bits {bits} dim {dim}");
                            }
                            seen = Some(bitsk);
                        }
                    }
                }
            }
        }
    }

    /// The integer dot products at their extremes (all codes 255 / 15, queries +-127) are exact
    /// on every kernel, also over more than one chunk.
    #[test]
    fn extreme_values_are_exact() {
        for bits in [4usize, 8] {
            let lanes = 3 * CHUNK;
            let top = (1u32 << bits) - 1;
            let cb = lanes * bits / 8;
            let a = vec![255u8; cb];
            for qv in [127i8, -127] {
                let q = vec![qv as u8; lanes];
                let want = lanes as i64 * top as i64 * qv as i64;
                for k in kernels() {
                    assert_eq!(k.dot_query(bits, &a, &q), want, "{k:?} {bits}");
                    assert_eq!(
                        k.dot_codes(bits, &a, &a),
                        lanes as i64 * (top * top) as i64,
                        "{k:?} {bits}"
                    );
                }
            }
        }
    }

    /// Asymmetric scores approximate the float distances of the original vectors: the error
    /// falls with the width and stays within a few quantization steps.
    #[test]
    fn asymmetric_scores_track_float_distances() {
        let dim = 128;
        for bits in [4, 8] {
            let layout = SqLayout::new(dim, bits);
            let mut worst = 0f64;
            for seed in 0..50u64 {
                let (x, q) = (vec_of(2 * seed, dim, 2.0), vec_of(2 * seed + 1, dim, 2.0));
                let xx: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
                let qq: f64 = q.iter().map(|&v| (v as f64).powi(2)).sum();
                let mut c = vec![0u64; layout.code_words()];
                encode(&x, xx as f32, layout, &mut c);
                let mut qf = vec![0u64; layout.query_words()];
                encode_query(&q, qq as f32, layout, &mut qf);
                let got = SqDist::new(layout, SqMetric::L2, 0.0).query_distance(&qf, &c) as f64;
                let want: f64 = x
                    .iter()
                    .zip(&q)
                    .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
                    .sum();
                worst = worst.max((got - want).abs() / want);
            }
            let bound = if bits == 4 { 0.05 } else { 0.01 };
            assert!(worst < bound, "bits {bits}: relative error {worst}");
        }
    }

    /// On vectors whose common offset (100) dwarfs their spread (1), the query's int8 form
    /// rounds `q - mu`, so for one query the scores of different codes differ by the
    /// distances of the decoded vectors, up to a small fraction of them (the rounding error
    /// common to every code cancels out of the order). With `q` itself rounded the int8 step
    /// is ~0.8 and the errors spread over many times the distances.
    #[test]
    fn offset_queries_order_by_the_decoded_distance() {
        let dim = 32;
        let shift = |v: Vec<f32>| v.into_iter().map(|a| a + 100.0).collect::<Vec<f32>>();
        for bits in [4, 8] {
            let layout = SqLayout::new(dim, bits);
            let mut worst = 0f64;
            for seed in 0..20u64 {
                let q = shift(vec_of(1 << 40 | seed, dim, 1.0));
                let qq: f64 = q.iter().map(|&v| (v as f64).powi(2)).sum();
                let mut qf = vec![0u64; layout.query_words()];
                encode_query(&q, qq as f32, layout, &mut qf);
                for k in kernels() {
                    let d = SqDist::with_kernel(layout, SqMetric::L2, 0.0, k);
                    let (mut errs, mut wants) = (Vec::new(), Vec::new());
                    for j in 0..20u64 {
                        let x = shift(vec_of(100 * seed + j, dim, 1.0));
                        let mut c = vec![0u64; layout.code_words()];
                        encode(&x, 0.0, layout, &mut c);
                        let mut xd = vec![0f32; dim];
                        decode(&c, layout, &mut xd);
                        let xx: f64 = xd.iter().map(|&v| (v as f64).powi(2)).sum();
                        encode(&x, xx as f32, layout, &mut c);
                        let want: f64 = xd
                            .iter()
                            .zip(&q)
                            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
                            .sum();
                        errs.push(d.query_distance(&qf, &c) as f64 - want);
                        wants.push(want);
                    }
                    let spread = errs.iter().cloned().fold(f64::MIN, f64::max)
                        - errs.iter().cloned().fold(f64::MAX, f64::min);
                    let mean = wants.iter().sum::<f64>() / wants.len() as f64;
                    worst = worst.max(spread / mean);
                }
            }
            assert!(
                worst < 0.1,
                "bits {bits}: error spread / mean distance {worst}"
            );
        }
    }

    #[test]
    fn rounding_matches_f32_round() {
        let mut vals = vec![
            0.0f32, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 126.5, -126.5, 127.49999,
        ];
        vals.extend([0.49999997f32, -0.49999997, 8388607.5, -8388607.5, 1e9, -1e9]);
        vals.extend((0..20000).map(|i| (i as f32 - 10000.0) * 0.0137));
        vals.extend((0..2000).map(|i| (i as f32 - 1000.0) * 0.5));
        for v in vals {
            assert_eq!(round_ties_away(v), v.round() as i32, "{v}");
            let b = v.to_bits();
            let (up, down) = (
                f32::from_bits(b.wrapping_add(1)),
                f32::from_bits(b.wrapping_sub(1)),
            );
            assert_eq!(round_ties_away(up), up.round() as i32, "{up}");
            assert_eq!(round_ties_away(down), down.round() as i32, "{down}");
        }
        assert_eq!(round_ties_away(f32::NAN), 0);
    }

    #[test]
    fn key_order_matches_float_order() {
        let vals = [-3.5f32, -1.0, -1e-30, -0.0, 0.0, 1e-30, 0.5, 2.0, 1e30];
        for w in vals.windows(2) {
            assert!(key_of(w[0]) < key_of(w[1]), "{} {}", w[0], w[1]);
        }
        for &v in &vals {
            assert_eq!(value_of(key_of(v)).to_bits(), v.to_bits());
        }
    }

    #[test]
    fn encode_roundtrips_within_half_a_step() {
        for bits in [4, 8] {
            let layout = SqLayout::new(100, bits);
            let x = vec_of(9, 100, 4.0);
            let mut c = vec![0u64; layout.code_words()];
            encode(&x, 0.0, layout, &mut c);
            let mut back = vec![0f32; 100];
            decode(&c, layout, &mut back);
            let delta = f32::from_bits((c[0] >> 32) as u32);
            for (a, b) in x.iter().zip(&back) {
                assert!((a - b).abs() <= 0.5 * delta * 1.0001 + 1e-6);
            }
            // A constant vector codes exactly.
            let mut k = vec![0u64; layout.code_words()];
            encode(&[1.5; 100], 0.0, layout, &mut k);
            decode(&k, layout, &mut back);
            assert!(back.iter().all(|&v| v == 1.5));
        }
    }
}
