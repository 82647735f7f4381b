//! Sign-magnitude binary codes (QuIVer, arXiv 2605.02171) and their popcount distance.
//!
//! # Layout (bit exact; the GPU path reproduces it)
//! A vector of dimension `D` packs into `words = ceil(D / 64)` `u64` words per plane. Per
//! vector, first the sign plane, then (for `bits = 2`) the magnitude plane:
//!
//! * sign plane: bit `i % 64` of word `i / 64` is 1 iff `x_i > 0` (so `0.0` and `-0.0` are 0);
//! * magnitude plane: bit `i % 64` of word `i / 64` is 1 iff `|x_i| > tau`, with
//!   `tau = (sum_i |x_i|) / D`, the sum accumulated in `f64` in index order over the `f32`
//!   values widened to `f64`, divided by `D` in `f64`, and the comparison made in `f64`
//!   (`(|x_i| as f64) > tau`).
//!
//! Bits past `D` are 0 in both planes. Under cosine the vector is L2-normalized first (see
//! [`normalize_into`]); under a rotation the rotated vector is coded.
//!
//! # Distance
//! With `s_i = +-1` the sign and `m_i = 1 + strong_i` the magnitude,
//! `d(a, b) = 4D - sum_i s_a,i s_b,i m_a,i m_b,i`, an integer in `[0, 8D]`; `bits = 1` is the
//! Hamming distance of the sign planes. It is **not a metric**: `d(a, a) = 3D - 3 |strong_a|`
//! is positive unless every coordinate is strong, and can exceed `d(a, b)`.

/// Number of 64-bit words per plane for dimension `dim`.
#[inline]
pub fn words_for(dim: usize) -> usize {
    dim.div_ceil(64)
}

/// L2-normalizes `x` into `out`: `norm = sqrt(sum (x_i as f64)^2)`, `out_i = (x_i as f64 /
/// norm) as f32`. Returns `false` (and leaves `out` unspecified) when the norm is 0.
pub fn normalize_into(x: &[f32], out: &mut [f32]) -> bool {
    let ss: f64 = x.iter().map(|&v| (v as f64) * (v as f64)).sum();
    let norm = ss.sqrt();
    if norm == 0.0 || !norm.is_finite() {
        return false;
    }
    for (o, &v) in out.iter_mut().zip(x) {
        *o = (v as f64 / norm) as f32;
    }
    true
}

/// Encodes one (already normalized / rotated) vector `x` into `out` (`bits * words_for(x.len())`
/// words), following the module-level layout.
pub fn encode_one(x: &[f32], bits: usize, out: &mut [u64]) {
    let dim = x.len();
    let w = words_for(dim);
    debug_assert_eq!(out.len(), bits * w);
    out.iter_mut().for_each(|o| *o = 0);
    let (sign, mag) = out.split_at_mut(w);
    // Branch-free: one word of 64 comparisons at a time.
    for (word, chunk) in sign.iter_mut().zip(x.chunks(64)) {
        *word = chunk
            .iter()
            .enumerate()
            .fold(0u64, |b, (j, &v)| b | (((v > 0.0) as u64) << j));
    }
    if bits == 2 {
        let tau = x.iter().map(|&v| (v.abs()) as f64).sum::<f64>() / dim as f64;
        for (word, chunk) in mag.iter_mut().zip(x.chunks(64)) {
            *word = chunk.iter().enumerate().fold(0u64, |b, (j, &v)| {
                b | ((((v.abs() as f64) > tau) as u64) << j)
            });
        }
    }
}

/// The code distance of two codes of `words` words per plane. See the module docs.
pub trait CodeDist: Copy + Send + Sync {
    /// Distance between codes `a` and `b`.
    fn dist(&self, a: &[u64], b: &[u64]) -> u32;
    /// Words per code (all planes).
    fn code_words(&self) -> usize;
    /// Distance between two stored codes. `dist` scores a query form against a code, which
    /// for the 1- and 2-bit codes is a code itself; the scalar codes
    /// ([`super::sq::SqDist`]) score a higher-precision query form there.
    #[inline(always)]
    fn sym(&self, a: &[u64], b: &[u64]) -> u32 {
        self.dist(a, b)
    }
    /// The distance a `dist` / `sym` value stands for, on a linear scale (RobustPrune's
    /// `alpha` rule compares ratios of these). The popcount distances are linear already.
    #[inline(always)]
    fn value(&self, d: u32) -> f64 {
        d as f64
    }
    /// Whether codes `a` and `b` are equal (an inlined, branch-free compare: code ties are
    /// frequent, and a slice `==` calls `memcmp`).
    #[inline(always)]
    fn same(&self, a: &[u64], b: &[u64]) -> bool {
        let w = self.code_words();
        let (a, b) = (&a[..w], &b[..w]);
        let mut acc = 0u64;
        for i in 0..w {
            acc |= a[i] ^ b[i];
        }
        acc == 0
    }
}

/// `bits = 1`: Hamming distance of the sign planes.
#[derive(Clone, Copy, Debug)]
pub struct Hamming {
    pub words: usize,
}

impl CodeDist for Hamming {
    #[inline(always)]
    fn dist(&self, a: &[u64], b: &[u64]) -> u32 {
        let mut acc = 0u32;
        for i in 0..self.words {
            acc += (a[i] ^ b[i]).count_ones();
        }
        acc
    }
    #[inline(always)]
    fn code_words(&self) -> usize {
        self.words
    }
}

/// One word of the [`SignMag`] sums: `(|e| + 3|p&q|, |x| + |x&e| + 3|x&p&q|)` for sign
/// words `sa`, `sb` and magnitude words `p`, `q` (`x = sa ^ sb`, `e = p ^ q`).
#[inline(always)]
fn signmag_word(sa: u64, sb: u64, p: u64, q: u64) -> (u32, u32) {
    let x = sa ^ sb;
    let e = p ^ q;
    let both = p & q;
    (
        e.count_ones() + 3 * both.count_ones(),
        x.count_ones() + (x & e).count_ones() + 3 * (x & both).count_ones(),
    )
}

/// `bits = 2`: `4D - sum s_a s_b m_a m_b`. With `x` the sign disagreement, `p`, `q` the
/// magnitude planes and `|.|` popcounts, `sum m_a m_b = D + |p^q| + 3|p&q|` and
/// `sum x m_a m_b = |x| + |x&(p^q)| + 3|x&p&q|`, so
/// `d = 3D - |p^q| - 3|p&q| + 2(|x| + |x&(p^q)| + 3|x&p&q|)`: five popcounts per word.
#[derive(Clone, Copy, Debug)]
pub struct SignMag {
    pub words: usize,
    pub dim: u32,
}

impl CodeDist for SignMag {
    #[inline(always)]
    fn dist(&self, a: &[u64], b: &[u64]) -> u32 {
        let w = self.words;
        let (sa, ma) = (&a[..w], &a[w..2 * w]);
        let (sb, mb) = (&b[..w], &b[w..2 * w]);
        let (mut neg, mut pos) = (0u32, 0u32);
        for i in 0..w {
            let (n, p) = signmag_word(sa[i], sb[i], ma[i], mb[i]);
            neg += n;
            pos += p;
        }
        3 * self.dim - neg + 2 * pos
    }
    #[inline(always)]
    fn code_words(&self) -> usize {
        2 * self.words
    }
}

/// [`SignMag`] with the word count fixed at compile time (fully unrolled, no bounds checks);
/// the index uses it for the common dimensions (`W` in 2, 4, 6, 8, 12, 16 words).
#[derive(Clone, Copy, Debug)]
pub struct SignMagN<const W: usize> {
    pub dim: u32,
}

impl<const W: usize> CodeDist for SignMagN<W> {
    #[inline(always)]
    fn dist(&self, a: &[u64], b: &[u64]) -> u32 {
        let (a, b) = (&a[..2 * W], &b[..2 * W]);
        let (mut neg, mut pos) = (0u32, 0u32);
        for i in 0..W {
            let (n, p) = signmag_word(a[i], b[i], a[W + i], b[W + i]);
            neg += n;
            pos += p;
        }
        3 * self.dim - neg + 2 * pos
    }
    #[inline(always)]
    fn code_words(&self) -> usize {
        2 * W
    }
}

/// The code-distance kernels, slowest first. The fastest one the CPU supports is chosen at
/// run time; the environment variable `ORDCORE_ANN_KERNEL` (`portable`, `popcnt`) caps the
/// choice, read once per process. Every kernel gives the same distances, so the same graphs
/// and results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kernel {
    /// Plain Rust, no CPU feature assumed.
    Portable,
    /// Scalar `popcnt`.
    Popcnt,
    /// AVX-512F + VPOPCNTDQ vector popcounts ([`SignMagV`], [`HammingV`]; codes of 2, 4, 6,
    /// 8, 12 or 16 words per plane, the others run on `popcnt`).
    Avx512Vpopcntdq,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::Popcnt => "popcnt",
            Kernel::Avx512Vpopcntdq => "avx512-vpopcntdq",
        }
    }
}

fn detect_kernel() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    {
        if !std::is_x86_feature_detected!("popcnt") {
            Kernel::Portable
        } else if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vpopcntdq")
        {
            Kernel::Avx512Vpopcntdq
        } else {
            Kernel::Popcnt
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Kernel::Portable
    }
}

/// The kernel in use (see [`Kernel`]).
pub fn kernel() -> Kernel {
    static KERNEL: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
    *KERNEL.get_or_init(|| {
        let cap = match std::env::var("ORDCORE_ANN_KERNEL").as_deref() {
            Ok("portable") => Kernel::Portable,
            Ok("popcnt") => Kernel::Popcnt,
            _ => Kernel::Avx512Vpopcntdq,
        };
        detect_kernel().min(cap)
    })
}

/// Whether the AVX-512 vector popcount kernel ([`SignMagV`]) is in use.
#[inline]
pub fn has_vpopcnt() -> bool {
    kernel() >= Kernel::Avx512Vpopcntdq
}

/// Whether the scalar `popcnt` instruction is in use.
#[inline]
pub fn has_popcnt() -> bool {
    kernel() >= Kernel::Popcnt
}

/// [`SignMagN`] computed with AVX-512 vector popcounts: eight words per register (masked
/// loads for the tail, so no read past the code), five `vpopcntq` and one horizontal sum per
/// distance instead of five scalar popcounts per word. Same results bit for bit. A value
/// exists only on a CPU with the features ([`SignMagV::new`] checks), which is what makes
/// its `dist` sound.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub struct SignMagV<const W: usize> {
    dim: u32,
}

#[cfg(target_arch = "x86_64")]
impl<const W: usize> SignMagV<W> {
    /// `None` unless the [`Kernel`] in use is `Avx512Vpopcntdq` (the CPU has AVX-512F and
    /// VPOPCNTDQ, and `ORDCORE_ANN_KERNEL` does not cap it).
    pub fn new(dim: u32) -> Option<Self> {
        has_vpopcnt().then_some(SignMagV { dim })
    }
}

/// `d(a, b)` for `W` words per plane with AVX-512 (see [`SignMag`] for the popcount form:
/// `d = 3D - |e| - 3|p&q| + 2|x| + 2|x&e| + 6|x&p&q|`, `e = p^q`).
///
/// # Safety
/// The CPU must support AVX-512F and VPOPCNTDQ; `a` and `b` hold at least `2W` words.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn signmag_avx512<const W: usize>(a: &[u64], b: &[u64], dim: u32) -> u32 {
    use std::arch::x86_64::*;
    let (a, b) = (&a[..2 * W], &b[..2 * W]);
    let mut acc = _mm512_setzero_si512();
    let mut i = 0;
    while i < W {
        let n = (W - i).min(8);
        let m: __mmask8 = (0xffu16 >> (8 - n)) as u8;
        // SAFETY: the mask covers words i..i + n of each plane, all inside `a` and `b`
        // (masked-off lanes are not read).
        let (sa, sb, ma, mb) = unsafe {
            (
                _mm512_maskz_loadu_epi64(m, a.as_ptr().add(i) as *const i64),
                _mm512_maskz_loadu_epi64(m, b.as_ptr().add(i) as *const i64),
                _mm512_maskz_loadu_epi64(m, a.as_ptr().add(W + i) as *const i64),
                _mm512_maskz_loadu_epi64(m, b.as_ptr().add(W + i) as *const i64),
            )
        };
        let x = _mm512_xor_si512(sa, sb);
        let e = _mm512_xor_si512(ma, mb);
        let both = _mm512_and_si512(ma, mb);
        let px = _mm512_popcnt_epi64(x);
        let pxe = _mm512_popcnt_epi64(_mm512_and_si512(x, e));
        let pxb = _mm512_popcnt_epi64(_mm512_and_si512(x, both));
        let pe = _mm512_popcnt_epi64(e);
        let pb = _mm512_popcnt_epi64(both);
        // 2(|x| + |x&e|) - |e| + 3(2|x&p&q| - |p&q|)
        let u = _mm512_sub_epi64(_mm512_slli_epi64::<1>(_mm512_add_epi64(px, pxe)), pe);
        let v = _mm512_sub_epi64(_mm512_slli_epi64::<1>(pxb), pb);
        let v3 = _mm512_add_epi64(v, _mm512_slli_epi64::<1>(v));
        acc = _mm512_add_epi64(acc, _mm512_add_epi64(u, v3));
        i += 8;
    }
    (3 * dim as i64 + _mm512_reduce_add_epi64(acc)) as u32
}

#[cfg(target_arch = "x86_64")]
impl<const W: usize> CodeDist for SignMagV<W> {
    #[inline(always)]
    fn dist(&self, a: &[u64], b: &[u64]) -> u32 {
        // SAFETY: `self` exists, so `new` found the CPU features; the slices are checked
        // (indexed to `2W`) inside.
        unsafe { signmag_avx512::<W>(a, b, self.dim) }
    }
    #[inline(always)]
    fn code_words(&self) -> usize {
        2 * W
    }
}

/// [`Hamming`] with `W` words computed with AVX-512 vector popcounts (masked loads for the
/// tail); like [`SignMagV`], a value exists only when that kernel is in use.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub struct HammingV<const W: usize> {
    _private: (),
}

#[cfg(target_arch = "x86_64")]
impl<const W: usize> HammingV<W> {
    /// `None` unless the [`Kernel`] in use is `Avx512Vpopcntdq`.
    pub fn new() -> Option<Self> {
        has_vpopcnt().then_some(HammingV { _private: () })
    }
}

/// Hamming distance of `W`-word codes with AVX-512.
///
/// # Safety
/// The CPU must support AVX-512F and VPOPCNTDQ.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
unsafe fn hamming_avx512<const W: usize>(a: &[u64], b: &[u64]) -> u32 {
    use std::arch::x86_64::*;
    let (a, b) = (&a[..W], &b[..W]);
    let mut acc = _mm512_setzero_si512();
    let mut i = 0;
    while i < W {
        let m: __mmask8 = (0xffu16 >> (8 - (W - i).min(8))) as u8;
        // SAFETY: the mask covers words i..min(i + 8, W), inside `a` and `b`.
        let (va, vb) = unsafe {
            (
                _mm512_maskz_loadu_epi64(m, a.as_ptr().add(i) as *const i64),
                _mm512_maskz_loadu_epi64(m, b.as_ptr().add(i) as *const i64),
            )
        };
        acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(_mm512_xor_si512(va, vb)));
        i += 8;
    }
    _mm512_reduce_add_epi64(acc) as u32
}

#[cfg(target_arch = "x86_64")]
impl<const W: usize> CodeDist for HammingV<W> {
    #[inline(always)]
    fn dist(&self, a: &[u64], b: &[u64]) -> u32 {
        // SAFETY: `self` exists, so the kernel (and the CPU features) are in use.
        unsafe { hamming_avx512::<W>(a, b) }
    }
    #[inline(always)]
    fn code_words(&self) -> usize {
        W
    }
}

/// The AVX-512 `bits = 2` kernel for `W` words per plane when it is in use (see [`Kernel`]).
pub fn signmag_vector<const W: usize>(dim: u32) -> Option<impl CodeDist> {
    #[cfg(target_arch = "x86_64")]
    {
        SignMagV::<W>::new(dim)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = dim;
        None::<SignMagN<W>>
    }
}

/// The AVX-512 `bits = 1` kernel for `W` words when it is in use (see [`Kernel`]).
pub fn hamming_vector<const W: usize>() -> Option<impl CodeDist> {
    #[cfg(target_arch = "x86_64")]
    {
        HammingV::<W>::new()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None::<Hamming>
    }
}

/// Distance between two codes with runtime `bits` (reference path used by tests and the
/// Python `code_distance`; the index uses the monomorphized kernels).
pub fn code_distance(a: &[u64], b: &[u64], dim: usize, bits: usize) -> u32 {
    let words = words_for(dim);
    if bits == 1 {
        Hamming { words }.dist(a, b)
    } else {
        SignMag {
            words,
            dim: dim as u32,
        }
        .dist(a, b)
    }
}

/// The first code (of `bits * words_for(dim)` words each) with a bit set past `dim` in a
/// plane: every ordcore code has them 0, and a set one would make the distance formulas wrap.
pub fn first_row_with_bits_past_dim(codes: &[u64], dim: usize, bits: usize) -> Option<usize> {
    let words = words_for(dim);
    let cw = bits * words;
    if dim.is_multiple_of(64) || cw == 0 {
        return None;
    }
    let tail = !0u64 << (dim % 64);
    codes
        .chunks_exact(cw)
        .position(|code| (0..bits).any(|p| code[p * words + words - 1] & tail != 0))
}

/// Row-wise distances between two arrays of codes of `bits * words_for(dim)` words each
/// (the public `code_distance`). Checks `dim`, `bits`, the lengths, and that no bit past
/// `dim` is set: every ordcore code has them 0, and a set one would make the formula wrap.
pub fn code_distances(a: &[u64], b: &[u64], dim: usize, bits: usize) -> crate::Result<Vec<u32>> {
    crate::ensure!(dim >= 1, "dim", "must be at least 1");
    crate::ensure!(bits == 1 || bits == 2, "bits", "must be 1 or 2, got {bits}");
    let words = words_for(dim);
    let cw = bits * words;
    crate::ensure!(
        a.len() == b.len() && a.len().is_multiple_of(cw),
        "codes_b",
        "{} words do not pair with {} words of codes_a in codes of {cw} words",
        b.len(),
        a.len()
    );
    for (arg, codes) in [("codes_a", a), ("codes_b", b)] {
        if let Some(row) = first_row_with_bits_past_dim(codes, dim, bits) {
            return Err(crate::Error::invalid(
                arg,
                format!("row {row} has bits set past dim = {dim}: not a code of this dimension"),
            ));
        }
    }
    Ok(a.chunks_exact(cw)
        .zip(b.chunks_exact(cw))
        .map(|(x, y)| code_distance(x, y, dim, bits))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(a: &[f32], b: &[f32]) -> i64 {
        let tau = |x: &[f32]| x.iter().map(|v| v.abs() as f64).sum::<f64>() / x.len() as f64;
        let (ta, tb) = (tau(a), tau(b));
        let d = a.len() as i64;
        let s: i64 = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| {
                let sx = if x > 0.0 { 1 } else { -1 };
                let sy = if y > 0.0 { 1 } else { -1 };
                let mx = 1 + ((x.abs() as f64) > ta) as i64;
                let my = 1 + ((y.abs() as f64) > tb) as i64;
                sx * sy * mx * my
            })
            .sum();
        4 * d - s
    }

    proptest! {
        #[test]
        fn signmag_matches_definition(
            (a, b) in (1usize..200).prop_flat_map(|d| (
                proptest::collection::vec(-10.0f32..10.0, d),
                proptest::collection::vec(-10.0f32..10.0, d)))
        ) {
            let w = words_for(a.len());
            let (mut ca, mut cb) = (vec![0u64; 2 * w], vec![0u64; 2 * w]);
            encode_one(&a, 2, &mut ca);
            encode_one(&b, 2, &mut cb);
            prop_assert_eq!(code_distance(&ca, &cb, a.len(), 2) as i64, naive(&a, &b));
            if w == 2 {
                let fixed = SignMagN::<2> { dim: a.len() as u32 }.dist(&ca, &cb);
                prop_assert_eq!(fixed as i64, naive(&a, &b));
            }
            #[cfg(target_arch = "x86_64")]
            {
                fn vec_dist<const W: usize>(a: &[u64], b: &[u64], dim: usize) -> Option<u32> {
                    SignMagV::<W>::new(dim as u32).map(|v| v.dist(a, b))
                }
                let got = match w {
                    1 => vec_dist::<1>(&ca, &cb, a.len()),
                    2 => vec_dist::<2>(&ca, &cb, a.len()),
                    3 => vec_dist::<3>(&ca, &cb, a.len()),
                    4 => vec_dist::<4>(&ca, &cb, a.len()),
                    _ => None,
                };
                if let Some(got) = got {
                    prop_assert_eq!(got as i64, naive(&a, &b));
                }
            }
            let (mut ha, mut hb) = (vec![0u64; w], vec![0u64; w]);
            encode_one(&a, 1, &mut ha);
            encode_one(&b, 1, &mut hb);
            let ham = a.iter().zip(&b).filter(|(x, y)| (**x > 0.0) != (**y > 0.0)).count();
            prop_assert_eq!(code_distance(&ha, &hb, a.len(), 1) as usize, ham);
        }
    }

    /// The AVX-512 kernels equal the scalar ones for every dimension the index dispatches to
    /// it (2 to 16 words per plane, with and without a partial last word), on CPUs that have it.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn vector_kernel_matches_scalar() {
        fn check<const W: usize>() {
            for dim in [64 * W - 63, 64 * W - 1, 64 * W] {
                let Some(v) = SignMagV::<W>::new(dim as u32) else {
                    return;
                };
                let s = SignMag {
                    words: W,
                    dim: dim as u32,
                };
                let vec_of = |seed: u64| -> Vec<f32> {
                    (0..dim)
                        .map(|i| {
                            let r = crate::rng::counter_u64(seed, 7, i as u64);
                            (r >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                        })
                        .collect()
                };
                for seed in 0..20u64 {
                    let (a, b) = (vec_of(2 * seed), vec_of(2 * seed + 1));
                    let (mut ca, mut cb) = (vec![0u64; 2 * W], vec![0u64; 2 * W]);
                    encode_one(&a, 2, &mut ca);
                    encode_one(&b, 2, &mut cb);
                    assert_eq!(v.dist(&ca, &cb), s.dist(&ca, &cb), "dim {dim}");
                    assert_eq!(v.dist(&ca, &ca), s.dist(&ca, &ca), "dim {dim}");
                    assert_eq!(v.dist(&ca, &cb) as i64, naive(&a, &b), "dim {dim}");
                    if let Some(h) = HammingV::<W>::new() {
                        let (ha, hb) = (&ca[..W], &cb[..W]);
                        let want = Hamming { words: W }.dist(ha, hb);
                        assert_eq!(h.dist(ha, hb), want, "dim {dim}");
                        let diff = a.iter().zip(&b).filter(|(x, y)| (**x > 0.0) != (**y > 0.0));
                        assert_eq!(want as usize, diff.count(), "dim {dim}");
                    }
                }
            }
        }
        check::<2>();
        check::<4>();
        check::<6>();
        check::<8>();
        check::<12>();
        check::<16>();
    }

    #[test]
    fn bits_past_dim_are_zero_and_self_distance_positive() {
        let x: Vec<f32> = (0..70).map(|i| i as f32 - 30.0).collect();
        let mut c = vec![0u64; 4];
        encode_one(&x, 2, &mut c);
        assert_eq!(c[1] >> 6, 0);
        assert_eq!(c[3] >> 6, 0);
        assert!(code_distance(&c, &c, 70, 2) > 0);
    }
}
