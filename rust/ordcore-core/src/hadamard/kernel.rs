//! The butterflies. The generic code here is `#[inline(always)]` code that the compiler
//! vectorizes; [`pow2_rows`], [`kmix`] and [`mul_assign`] pick, once per call (a batch of
//! rows), a copy compiled for AVX2+FMA, or for power-of-two groups the hand-blocked
//! kernels of `avx512` and `avx2` (one template, `simd_kernel!`), when the CPU has them
//! (runtime detection, no `-C target-cpu`; `ORDCORE_HADAMARD_KERNEL` caps the path). Every path does the same
//! additions in the same order, with the scale and signs applied to the input, so all of
//! them give the same bits.

use std::ops::{Add, AddAssign, Mul, MulAssign, Sub};

use super::matrices::BaseMatrix;

/// The float types the transforms run in.
pub trait Real:
    Copy
    + Send
    + Sync
    + Default
    + PartialEq
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + AddAssign
    + MulAssign
    + 'static
{
    const ZERO: Self;
    const ONE: Self;
    fn from_f64(v: f64) -> Self;
    /// Whether the sign bit is set (`-1.0` in a sign vector).
    fn is_sign_negative(self) -> bool;
    /// One lane mask of [`lane_masks`]: the signs of [`Self::MASK_LANES`] elements.
    type LaneMask: Copy + Send + Sync + std::fmt::Debug + 'static;
    /// Elements per lane mask: one AVX2 vector (32 bytes) of them.
    const MASK_LANES: usize = 32 / std::mem::size_of::<Self>();
    /// The lane mask with bits `bits` (below `1 << MASK_LANES`).
    fn lane_mask(bits: u32) -> Self::LaneMask;
    /// The mixing matrix of `base`: forward (`x @ H`) or inverse (`y @ H^T`).
    fn mix(base: &BaseMatrix, inverse: bool) -> &[Self];
    /// [`pow2_rows`] by the type's hand-blocked kernel for `lvl` (AVX-512 or AVX2); false
    /// where there is none (then the caller runs the generic loops).
    #[inline(always)]
    fn rows_simd(
        _lvl: Level,
        _src: Option<&[Self]>,
        _x: &mut [Self],
        _g: usize,
        _signs: Option<Signs<'_, Self>>,
        _s: Self,
        _out_signs: Option<Signs<'_, Self>>,
    ) -> bool {
        false
    }
}

impl Real for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
    // 32 bits, so the AVX2 kernel broadcasts a mask straight from memory.
    type LaneMask = u32;
    fn lane_mask(bits: u32) -> u32 {
        bits
    }
    fn mix(base: &BaseMatrix, inverse: bool) -> &[Self] {
        if inverse {
            &base.inv_f32
        } else {
            &base.fwd_f32
        }
    }
    #[inline(always)]
    fn rows_simd(
        lvl: Level,
        src: Option<&[f32]>,
        x: &mut [f32],
        g: usize,
        signs: Option<Signs<'_, f32>>,
        s: f32,
        out_signs: Option<Signs<'_, f32>>,
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match lvl {
                // SAFETY: only called with `lvl <= level()`, i.e. when the CPU has the
                // features of that path (checked in level()).
                Level::Avx512 => unsafe { avx512::f32s::rows(src, x, g, signs, s, out_signs) },
                // SAFETY: as above.
                Level::Avx2 => unsafe { avx2::f32s::rows(src, x, g, signs, s, out_signs) },
                Level::Portable => return false,
            }
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (lvl, src, x, g, signs, s, out_signs);
            false
        }
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
    type LaneMask = u8;
    fn lane_mask(bits: u32) -> u8 {
        bits as u8
    }
    fn mix(base: &BaseMatrix, inverse: bool) -> &[Self] {
        if inverse {
            &base.inv_f64
        } else {
            &base.fwd_f64
        }
    }
    #[inline(always)]
    fn rows_simd(
        lvl: Level,
        src: Option<&[f64]>,
        x: &mut [f64],
        g: usize,
        signs: Option<Signs<'_, f64>>,
        s: f64,
        out_signs: Option<Signs<'_, f64>>,
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match lvl {
                // SAFETY: only called with `lvl <= level()`, i.e. when the CPU has the
                // features of that path (checked in level()).
                Level::Avx512 => unsafe { avx512::f64s::rows(src, x, g, signs, s, out_signs) },
                // SAFETY: as above.
                Level::Avx2 => unsafe { avx2::f64s::rows(src, x, g, signs, s, out_signs) },
                Level::Portable => return false,
            }
            true
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (lvl, src, x, g, signs, s, out_signs);
            false
        }
    }
}

/// The sign flips of [`pow2_rows`]: `vals` (`+1.0` / `-1.0`, one per element) and,
/// optionally, the same signs as lane masks (`masks`, from [`lane_masks`]), which the AVX2
/// kernels read instead of `vals` once `vals` outgrows the L1 cache (for a row of 32768
/// float64 signs: 8 KiB of masks in place of 256 KiB streamed with every row).
#[derive(Clone, Copy, Debug)]
pub struct Signs<'a, T: Real> {
    /// The signs as floats.
    pub vals: &'a [T],
    /// `lane_masks(vals)`, or `None`.
    pub masks: Option<&'a [T::LaneMask]>,
}

impl<'a, T: Real> Signs<'a, T> {
    /// Signs given as floats only.
    pub fn vals(vals: &'a [T]) -> Self {
        Signs { vals, masks: None }
    }
}

/// `vals` as lane masks: mask `v` holds the signs of elements `v * L .. v * L + L`
/// (`L` = [`Real::MASK_LANES`], the last mask padded with `+1`), bit `l` set where element
/// `v * L + l` is negative.
pub fn lane_masks<T: Real>(vals: &[T]) -> Vec<T::LaneMask> {
    vals.chunks(T::MASK_LANES)
        .map(|c| {
            let bits = c
                .iter()
                .enumerate()
                .fold(0u32, |m, (l, v)| m | u32::from(v.is_sign_negative()) << l);
            T::lane_mask(bits)
        })
        .collect()
}

/// The SIMD paths, ordered from the most portable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Plain Rust (SSE2 on x86-64).
    Portable,
    /// AVX2 + FMA.
    Avx2,
    /// AVX-512 (with the register-blocked 256-element float32 kernel).
    Avx512,
}

impl Level {
    /// The name `ORDCORE_HADAMARD_KERNEL` uses.
    pub fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }
}

/// The SIMD path in use: the best the CPU runs, capped by the environment variable
/// `ORDCORE_HADAMARD_KERNEL` (`portable`, `avx2`, `avx512`; read once).
pub fn level() -> Level {
    static L: std::sync::OnceLock<Level> = std::sync::OnceLock::new();
    *L.get_or_init(|| {
        #[allow(unused_mut)]
        let mut best = Level::Portable;
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                best = Level::Avx2;
            }
            if has!("avx512f") && has!("avx512vl") && has!("avx2") && has!("fma") {
                best = Level::Avx512;
            }
        }
        let cap = match std::env::var("ORDCORE_HADAMARD_KERNEL").as_deref() {
            Ok("portable") => Level::Portable,
            Ok("avx2") => Level::Avx2,
            _ => Level::Avx512,
        };
        best.min(cap)
    })
}

/// Above this length the power-of-two transform first finishes every stage inside
/// blocks of this many elements (L1/L2 resident), then runs the remaining large strides.
const CACHE_BLOCK: usize = 4096;

/// Stages h = 1, 2, 4 on one chunk of 8 values `x`, in registers, written to `c`.
#[inline(always)]
fn radix8_store<T: Real>(x: [T; 8], c: &mut [T]) {
    let a = [
        x[0] + x[1],
        x[0] - x[1],
        x[2] + x[3],
        x[2] - x[3],
        x[4] + x[5],
        x[4] - x[5],
        x[6] + x[7],
        x[6] - x[7],
    ];
    let b = [
        a[0] + a[2],
        a[1] + a[3],
        a[0] - a[2],
        a[1] - a[3],
        a[4] + a[6],
        a[5] + a[7],
        a[4] - a[6],
        a[5] - a[7],
    ];
    c[0] = b[0] + b[4];
    c[1] = b[1] + b[5];
    c[2] = b[2] + b[6];
    c[3] = b[3] + b[7];
    c[4] = b[0] - b[4];
    c[5] = b[1] - b[5];
    c[6] = b[2] - b[6];
    c[7] = b[3] - b[7];
}

/// Stages h = 1, 2, 4 over every chunk of 8 of `x`, reading `(src or x) * signs * s`.
/// The match is outside the loops so each loop is a plain zip the compiler vectorizes.
#[inline(always)]
fn first_pass<T: Real>(src: Option<&[T]>, x: &mut [T], signs: Option<&[T]>, s: T) {
    match (src, signs) {
        (None, None) => {
            for c in x.chunks_exact_mut(8) {
                let v: [T; 8] = std::array::from_fn(|l| c[l] * s);
                radix8_store(v, c);
            }
        }
        (Some(src), None) => {
            for (c, a) in x.chunks_exact_mut(8).zip(src.chunks_exact(8)) {
                let v: [T; 8] = std::array::from_fn(|l| a[l] * s);
                radix8_store(v, c);
            }
        }
        (None, Some(sg)) => {
            for (c, g) in x.chunks_exact_mut(8).zip(sg.chunks_exact(8)) {
                let v: [T; 8] = std::array::from_fn(|l| c[l] * g[l] * s);
                radix8_store(v, c);
            }
        }
        (Some(src), Some(sg)) => {
            for ((c, a), g) in x
                .chunks_exact_mut(8)
                .zip(src.chunks_exact(8))
                .zip(sg.chunks_exact(8))
            {
                let v: [T; 8] = std::array::from_fn(|l| a[l] * g[l] * s);
                radix8_store(v, c);
            }
        }
    }
}

/// Two stages (strides h and 2h) in one pass over contiguous quarters of each 4h block.
#[inline(always)]
fn radix4_pass<T: Real>(x: &mut [T], h: usize) {
    for blk in x.chunks_exact_mut(4 * h) {
        let (q01, q23) = blk.split_at_mut(2 * h);
        let (q0, q1) = q01.split_at_mut(h);
        let (q2, q3) = q23.split_at_mut(h);
        for (((a, b), c), d) in q0
            .iter_mut()
            .zip(q1.iter_mut())
            .zip(q2.iter_mut())
            .zip(q3.iter_mut())
        {
            let (s0, s1, s2, s3) = (*a + *b, *a - *b, *c + *d, *c - *d);
            *a = s0 + s2;
            *b = s1 + s3;
            *c = s0 - s2;
            *d = s1 - s3;
        }
    }
}

#[inline(always)]
fn radix2_pass<T: Real>(x: &mut [T], h: usize) {
    for blk in x.chunks_exact_mut(2 * h) {
        let (lo, hi) = blk.split_at_mut(h);
        for (a, b) in lo.iter_mut().zip(hi.iter_mut()) {
            let (s, d) = (*a + *b, *a - *b);
            *a = s;
            *b = d;
        }
    }
}

/// Stages with strides `h0, 2*h0, ...` below `x.len()` over the whole slice.
#[inline(always)]
fn stages_from<T: Real>(x: &mut [T], mut h: usize) {
    let n = x.len();
    while 4 * h <= n {
        radix4_pass(x, h);
        h *= 4;
    }
    if 2 * h <= n {
        radix2_pass(x, h);
    }
}

/// Sylvester-order FWHT of a power-of-two-length slice `x`, in place, of the input
/// `src` (or `x` itself) multiplied elementwise by `signs` (if any) and by `s`: the copy,
/// sign flips and scale ride along with the first (radix-8) pass. `src` and `signs`, when
/// given, have `x.len()` elements.
#[inline(always)]
fn pow2_generic<T: Real>(src: Option<&[T]>, x: &mut [T], signs: Option<&[T]>, s: T) {
    let n = x.len();
    if n < 8 {
        // The scale (and signs) apply to the input, as in every other path, so every path
        // rounds identically.
        match (src, signs) {
            (None, None) => x.iter_mut().for_each(|v| *v *= s),
            (Some(a), None) => x.iter_mut().zip(a).for_each(|(v, &a)| *v = a * s),
            (None, Some(g)) => x.iter_mut().zip(g).for_each(|(v, &g)| *v = *v * g * s),
            (Some(a), Some(g)) => x
                .iter_mut()
                .zip(a)
                .zip(g)
                .for_each(|((v, &a), &g)| *v = a * g * s),
        }
        stages_from(x, 1);
        return;
    }
    let blk = n.min(CACHE_BLOCK);
    for (bi, xb) in x.chunks_exact_mut(blk).enumerate() {
        let range = bi * blk..(bi + 1) * blk;
        first_pass(
            src.map(|v| &v[range.clone()]),
            xb,
            signs.map(|v| &v[range]),
            s,
        );
        stages_from(xb, 8);
    }
    if n > blk {
        stages_from(x, blk);
    }
}

/// `out[c*p..][..p] = sum_a mix[c*k + a] * x[a*p..][..p]` (the `H_K` factor).
#[inline(always)]
fn kmix_generic<T: Real>(x: &[T], out: &mut [T], mix: &[T], k: usize, p: usize) {
    if p == 1 {
        for (c, o) in out.iter_mut().enumerate() {
            let w = &mix[c * k..(c + 1) * k];
            let mut acc = [T::ZERO; 8];
            let mut wc = w.chunks_exact(8);
            let mut xc = x.chunks_exact(8);
            for (wv, xv) in (&mut wc).zip(&mut xc) {
                for l in 0..8 {
                    acc[l] += wv[l] * xv[l];
                }
            }
            let mut tail = T::ZERO;
            for (&wv, &xv) in wc.remainder().iter().zip(xc.remainder()) {
                tail += wv * xv;
            }
            let s =
                ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
            *o = s + tail;
        }
        return;
    }
    for (c, oc) in out.chunks_exact_mut(p).enumerate() {
        oc.fill(T::ZERO);
        for (a, xa) in x.chunks_exact(p).enumerate() {
            let w = mix[c * k + a];
            for (o, &v) in oc.iter_mut().zip(xa) {
                *o += w * v;
            }
        }
    }
}

#[inline(always)]
fn mul_assign_generic<T: Real>(x: &mut [T], by: &[T]) {
    for (a, &b) in x.iter_mut().zip(by) {
        *a *= b;
    }
}

#[inline(always)]
fn scale_generic<T: Real>(x: &mut [T], s: T) {
    for a in x.iter_mut() {
        *a *= s;
    }
}

macro_rules! dispatched {
    ($(#[$doc:meta])* $name:ident, $generic:ident, ($($arg:ident : $ty:ty),*)) => {
        $(#[$doc])*
        #[inline]
        pub fn $name<T: Real>($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                fn avx512<T: Real>($($arg: $ty),*) {
                    $generic($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2<T: Real>($($arg: $ty),*) {
                    $generic($($arg),*)
                }
                match level() {
                    // SAFETY: level() picks a path only when the CPU supports its features.
                    Level::Avx512 => return unsafe { avx512($($arg),*) },
                    // SAFETY: as above.
                    Level::Avx2 => return unsafe { avx2($($arg),*) },
                    Level::Portable => {}
                }
            }
            $generic($($arg),*)
        }
    };
}

/// [`pow2_generic`] on every length-`g` group of `x` (reading the groups of `src` when
/// given): element `e` of `x` is multiplied by `signs[e % signs.len()]` (`signs.len()` a
/// multiple of `g`, `x.len()` a multiple of `signs.len()`).
/// With `out_signs` (as long as `signs` when both are given), element `e` of the result is
/// then multiplied by `out_signs[e % out_signs.len()]`.
#[inline(always)]
fn pow2_rows_generic<T: Real>(
    src: Option<&[T]>,
    x: &mut [T],
    g: usize,
    signs: Option<&[T]>,
    s: T,
    out_signs: Option<&[T]>,
) {
    let p = signs.or(out_signs).map_or(1, |v| v.len());
    for (i, grp) in x.chunks_exact_mut(g).enumerate() {
        let e = i * g;
        let sg = signs.map(|v| &v[e % p..e % p + g]);
        pow2_generic(src.map(|v| &v[e..e + g]), grp, sg, s);
        if let Some(o) = out_signs {
            mul_assign_generic(grp, &o[e % p..e % p + g]);
        }
    }
}

/// Sylvester-order FWHT of every length-`g` group (a power of two) of `x`, of the input
/// `(src or x) * signs * s` (signs periodic, see [`pow2_rows_generic`]; `signs.masks`,
/// when given, must be `lane_masks(signs.vals)`), on the SIMD path `lvl` (at most [`level`]).
/// With `out_signs`, element `e` of the result is then multiplied by the sign
/// `out_signs[e % period]` (the same period as `signs` when both are given) in the same
/// pass: `x <- FWHT((src or x) * signs * s) * out_signs`, the last sign flip of an inverse
/// rotation.
/// Every path does the same additions in the same order, and a sign flip is exact however
/// it is applied, so the results are identical bit for bit. One dispatch per batch of rows.
#[inline]
pub fn pow2_rows_at<T: Real>(
    lvl: Level,
    src: Option<&[T]>,
    x: &mut [T],
    g: usize,
    signs: Option<Signs<'_, T>>,
    s: T,
    out_signs: Option<Signs<'_, T>>,
) {
    assert!(g.is_power_of_two() && x.len().is_multiple_of(g));
    assert!(src.is_none_or(|v| v.len() == x.len()));
    for sg in [signs, out_signs].into_iter().flatten() {
        assert!(
            !sg.vals.is_empty()
                && sg.vals.len().is_multiple_of(g)
                && x.len().is_multiple_of(sg.vals.len())
                && sg
                    .masks
                    .is_none_or(|m| m.len() == sg.vals.len().div_ceil(T::MASK_LANES))
        );
    }
    if let (Some(a), Some(b)) = (signs, out_signs) {
        assert!(a.vals.len() == b.vals.len());
    }
    assert!(lvl <= level());
    let (vals, out_vals) = (signs.map(|v| v.vals), out_signs.map(|v| v.vals));
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,fma")]
        fn avx2<T: Real>(
            src: Option<&[T]>,
            x: &mut [T],
            g: usize,
            signs: Option<&[T]>,
            s: T,
            out_signs: Option<&[T]>,
        ) {
            pow2_rows_generic(src, x, g, signs, s, out_signs)
        }
        if lvl != Level::Portable && T::rows_simd(lvl, src, x, g, signs, s, out_signs) {
            return;
        }
        if lvl != Level::Portable {
            // SAFETY: lvl <= level(), which picks a path only when the CPU supports it, and
            // AVX-512 implies AVX2 + FMA (level() checks all four).
            return unsafe { avx2(src, x, g, vals, s, out_vals) };
        }
    }
    pow2_rows_generic(src, x, g, vals, s, out_vals)
}

/// [`pow2_rows_at`] on the SIMD path in use.
#[inline]
pub fn pow2_rows<T: Real>(
    src: Option<&[T]>,
    x: &mut [T],
    g: usize,
    signs: Option<Signs<'_, T>>,
    s: T,
    out_signs: Option<Signs<'_, T>>,
) {
    pow2_rows_at(level(), src, x, g, signs, s, out_signs)
}

dispatched!(
    /// The `H_K` mixing step (see [`kmix_generic`]).
    kmix, kmix_generic, (x: &[T], out: &mut [T], mix: &[T], k: usize, p: usize));
dispatched!(
    /// `x[i] *= by[i]`.
    mul_assign, mul_assign_generic, (x: &mut [T], by: &[T]));
dispatched!(
    /// `x[i] *= s`.
    scale, scale_generic, (x: &mut [T], s: T));

/// Its tokens where the path reads lane masks (`yes`), nothing where it does not (`no`).
#[cfg(target_arch = "x86_64")]
macro_rules! with_masks {
    (yes, $($t:tt)*) => { $($t)* };
    (no, $($t:tt)*) => {};
}

/// The hand-blocked power-of-two transforms, one template for AVX-512 and AVX2, float32
/// and float64.
///
/// Groups shorter than a vector run several to a vector; groups up to `BLOCK` elements
/// (`NV` vectors: 16 on AVX-512, 8 on AVX2, which has 16 registers) run every stage in
/// registers while being loaded, sign-flipped, scaled and (out of place) copied from the
/// source; longer groups finish those blocks first, then the larger strides in radix
/// `2^max_radix` (and one smaller) passes held in registers, depth first so each pass works
/// on cache-resident data. Stage `h` of lane `l` inside a vector is
/// `fma(v[l], -1 or +1, v[l ^ h])` (exactly `v[l ^ h] -/+ v[l]`); between vectors `a + b`
/// and `fnmadd(b, 1, a)` (exactly `a - b`, on the FMA ports so the adds run on twice the
/// ports). Same additions in the same order as the generic loops. The sign flips come from
/// the float signs (`Vals`) or, on paths built with `masks = yes` (AVX2) and rows whose float
/// signs take `MASKS_FROM` bytes or more, from one lane mask per vector (`Masks`, see
/// [`lane_masks`]): flipping a sign bit is exact, so both give the same bits.
#[cfg(target_arch = "x86_64")]
macro_rules! simd_kernel {
    (
        $name:ident, $t:ty, $v:ty, log_lanes = $lg:expr, feat = $feat:literal, nv = $nv:expr,
        max_radix = $mr:expr, masks = $masks:ident,
        load = $load:ident, store = $store:ident, set1 = $set1:ident, zero = $zero:ident,
        add = $add:ident, mul = $mul:ident, fmadd = $fmadd:ident, fnmadd = $fnmadd:ident,
        { $($items:item)* }
    ) => {
        pub(super) mod $name {
            use std::arch::x86_64::*;

            type T = $t;
            type V = $v;
            const LOG_LANES: usize = $lg;
            const LANES: usize = 1 << LOG_LANES;
            /// Vectors in one register block.
            const NV: usize = $nv;
            /// Elements in one register block.
            pub(in super::super) const BLOCK: usize = NV * LANES;

            $($items)*

            /// Signs of lane `l` for the in-vector stages: `-1` where bit `i` of `l` is set.
            #[inline(always)]
            unsafe fn lane_signs() -> [V; 4] {
                std::array::from_fn(|i| {
                    let a: [T; LANES] = std::array::from_fn(|l| if l >> i & 1 == 1 { -1.0 } else { 1.0 });
                    // SAFETY: `a` holds LANES elements.
                    unsafe { $load(a.as_ptr()) }
                })
            }

            /// The butterflies of stride `H` (in vectors) between the `C` vectors of `v`.
            #[inline(always)]
            unsafe fn stage<const H: usize, const C: usize>(v: &mut [V; C], one: V) {
                for j in 0..C {
                    if j & H == 0 && j + H < C {
                        let (a, b) = (v[j], v[j + H]);
                        v[j] = $add(a, b);
                        v[j + H] = $fnmadd(b, one, a);
                    }
                }
            }

            /// The butterflies of strides 1, 2, 4, 8 (in vectors) below `m` vectors.
            #[inline(always)]
            unsafe fn stages<const C: usize>(v: &mut [V; C], m: usize) {
                // SAFETY: register arithmetic only.
                unsafe {
                    let one = $set1(1.0);
                    if m > 1 {
                        stage::<1, C>(v, one);
                    }
                    if m > 2 {
                        stage::<2, C>(v, one);
                    }
                    if m > 4 {
                        stage::<4, C>(v, one);
                    }
                    if m > 8 {
                        stage::<8, C>(v, one);
                    }
                }
            }

            /// Out of place, the register blocks fetch their source and claim their
            /// destination lines (`prefetchw`) this many bytes ahead. Without it the
            /// stores that miss the cache stall the first pass: on an AVX-512 Xeon, 32 MiB
            /// batches out of place took 1.2-1.6x (float32) and 1.2-1.9x (float64) the time
            /// of a copy for n = 256-32768, and 1.0-1.3x / 1.0-1.5x with it (8 KiB ahead
            /// measured the same).
            const PREFETCH_BYTES: usize = 4096;

            /// Prefetches the lines `PREFETCH_BYTES` past the `len` elements at `inp`
            /// (for reading) and at `out` (for writing). Addresses past the arrays are
            /// never dereferenced: a prefetch does not fault.
            #[inline(always)]
            unsafe fn prefetch_ahead(inp: *const T, out: *mut T, len: usize) {
                let (i, o) = (inp.cast::<i8>(), out.cast::<i8>().cast_const());
                let mut l = 0;
                while l < len * std::mem::size_of::<T>() {
                    // SAFETY: prefetches only.
                    unsafe {
                        _mm_prefetch::<_MM_HINT_T0>(i.wrapping_add(PREFETCH_BYTES + l));
                        _mm_prefetch::<_MM_HINT_ET0>(o.wrapping_add(PREFETCH_BYTES + l));
                    }
                    l += 64;
                }
            }

            /// Where the sign flips of a register block come from.
            trait Src: Copy {
                /// The signs `k` elements further on (`k` a multiple of LANES).
                ///
                /// # Safety
                /// The result stays inside the signs.
                unsafe fn add(self, k: usize) -> Self;
                /// `a` times the signs of the LANES elements here.
                ///
                /// # Safety
                /// LANES signs are readable here.
                unsafe fn apply(self, a: V) -> V;
            }

            /// Signs as floats, one per element.
            #[derive(Clone, Copy)]
            struct Vals(*const T);

            impl Src for Vals {
                #[inline(always)]
                unsafe fn add(self, k: usize) -> Self {
                    // SAFETY: as the trait says.
                    Vals(unsafe { self.0.add(k) })
                }
                #[inline(always)]
                unsafe fn apply(self, a: V) -> V {
                    // SAFETY: as the trait says.
                    unsafe { $mul(a, $load(self.0)) }
                }
            }

            with_masks!($masks,
                /// Signs as lane masks ([`super::super::lane_masks`]), one per vector.
                #[derive(Clone, Copy)]
                struct Masks(*const <T as super::super::Real>::LaneMask);

                const _: () = assert!(LANES == <T as super::super::Real>::MASK_LANES);

                /// Rows whose float signs take this many bytes or more read the masks
                /// instead (a quarter of a 32 KiB L1 data cache, shared with the data
                /// row; below it the floats stay in L1 and cost less than the mask
                /// arithmetic: AMD Zen, float64 n = 256 / 512 / 1024 in place 0.58 / 0.80
                /// / 0.79-0.83 ns an element with floats, 0.63 / 0.80 / 0.79-0.81 with
                /// masks; out of place at n = 1024 1.15-1.25 against 0.93-1.01).
                const MASKS_FROM: usize = 8 << 10;

                impl Src for Masks {
                    #[inline(always)]
                    unsafe fn add(self, k: usize) -> Self {
                        // SAFETY: as the trait says.
                        Masks(unsafe { self.0.add(k / LANES) })
                    }
                    #[inline(always)]
                    unsafe fn apply(self, a: V) -> V {
                        // SAFETY: as the trait says.
                        unsafe { flip(a, *self.0) }
                    }
                }
            );

            /// `v` times the output signs `k` elements on from `osg`, if any.
            #[inline(always)]
            unsafe fn flipped<S: Src>(osg: Option<S>, k: usize, v: V) -> V {
                // SAFETY: the caller keeps `k` inside the signs.
                match osg {
                    Some(o) => unsafe { o.add(k).apply(v) },
                    None => v,
                }
            }

            /// One register block of `C` vectors (a multiple of `m`, at most NV): rows
            /// of `m` vectors (`m` in 1..=NV, a power of two), every stage inside them.
            #[inline(always)]
            unsafe fn reg_block<const C: usize, S: Src>(
                inp: *const T, out: *mut T, sg: Option<S>, osg: Option<S>, s: V, c: &[V; 4],
                m: usize,
            ) {
                // SAFETY: the caller guarantees C * LANES elements at each pointer.
                unsafe {
                    if inp != out as *const T {
                        prefetch_ahead(inp, out, C * LANES);
                    }
                    let mut v = [$zero(); C];
                    match sg {
                        None => {
                            for (j, r) in v.iter_mut().enumerate() {
                                let a = $mul($load(inp.add(j * LANES)), s);
                                *r = intra::<LOG_LANES>(a, c);
                            }
                        }
                        Some(g) => {
                            for (j, r) in v.iter_mut().enumerate() {
                                let a = g.add(j * LANES).apply($load(inp.add(j * LANES)));
                                *r = intra::<LOG_LANES>($mul(a, s), c);
                            }
                        }
                    }
                    stages::<C>(&mut v, m);
                    for (j, r) in v.iter().enumerate() {
                        $store(out.add(j * LANES), flipped(osg, j * LANES, *r));
                    }
                }
            }

            /// Stages `h, 2h, ..` (log2 R of them) on every `R * h` block of the
            /// `n` elements at `x`, R vectors in registers at a time; element `e` then
            /// times the output sign `e` of `osg`, if any.
            #[inline(always)]
            unsafe fn radix_pass<const R: usize, S: Src>(x: *mut T, n: usize, h: usize, osg: Option<S>) {
                // SAFETY: the caller guarantees n elements at x, h a multiple of LANES
                // and n a multiple of R * h.
                unsafe {
                    let mut blk = 0;
                    while blk < n {
                        let mut o = 0;
                        while o < h {
                            let p = x.add(blk + o);
                            let mut v = [$zero(); R];
                            for (i, r) in v.iter_mut().enumerate() {
                                *r = $load(p.add(i * h));
                            }
                            stages::<R>(&mut v, R);
                            for (i, r) in v.iter().enumerate() {
                                $store(p.add(i * h), flipped(osg, blk + o + i * h, *r));
                            }
                            o += LANES;
                        }
                        blk += R * h;
                    }
                }
            }

            /// Groups longer than this many bytes (an L1 data cache) end with a radix-8
            /// pass, or what is left of their stages, so that the pass of fewer stages
            /// runs on L1-resident parts. Taken the other way round (smallest strides
            /// first, the rest last), float64 n = 32768 ended with a radix-8 pass over
            /// 128 KiB and a radix-2 pass over 256 KiB, each an L2 round trip: on an
            /// AVX-512 Xeon, in place on an L2-resident row 0.50-0.53 -> 0.42-0.44 ns an
            /// element, 32 MiB out of place 1.04-1.06 -> 0.96-0.99 (in place 1.00-1.06 ->
            /// 0.90-0.91); float64 65536 1.03-1.04 -> 0.97-0.99, float32 65536 0.53 -> 0.49.
            const L1_GROUP: usize = 32 << 10;

            /// log2 of the radix of the last pass of a group of `n > BLOCK` elements: 3
            /// (or what is left) for groups of more than [`L1_GROUP`] bytes; below it, the
            /// passes after the register block, from the smallest stride up, are radix 16
            /// (radix 8 once the stride reaches 4 KiB, so that the vectors of one
            /// butterfly fit the ways of one L1 set), the last one what is left.
            #[inline(always)]
            fn top_radix(n: usize) -> usize {
                if n * std::mem::size_of::<T>() > L1_GROUP {
                    return ((n / BLOCK).trailing_zeros() as usize).min(3);
                }
                let mut h = BLOCK;
                loop {
                    let most = if h * std::mem::size_of::<T>() < 4096 { $mr } else { 3usize.min($mr) };
                    let left = (n / h).trailing_zeros() as usize;
                    if left <= most {
                        return left;
                    }
                    h <<= most;
                }
            }

            /// One group of `n > BLOCK` elements (a power of two): its `2^r` parts first
            /// (register blocks in this loop, longer parts recursively, depth first), then
            /// the top `r` stages in one pass, which applies the output signs `osg`.
            #[inline(always)]
            unsafe fn big<S: Src>(
                inp: *const T, out: *mut T, n: usize, sg: Option<S>, osg: Option<S>, s: V,
                c: &[V; 4],
            ) {
                // SAFETY: the caller guarantees n elements at each pointer.
                unsafe {
                    let r = top_radix(n);
                    let sub = n >> r;
                    if sub == BLOCK {
                        // Not a call per block: that costs as much as a radix pass.
                        let mut k = 0;
                        while k < n {
                            reg_block::<NV, S>(inp.add(k), out.add(k), sg.map(|g| g.add(k)), None, s, c, NV);
                            k += BLOCK;
                        }
                    } else {
                        for i in 0..1usize << r {
                            let k = i * sub;
                            big_rec(inp.add(k), out.add(k), sub, sg.map(|g| g.add(k)), None, s, c);
                        }
                    }
                    match r {
                        1 => radix_pass::<2, S>(out, n, sub, osg),
                        2 => radix_pass::<4, S>(out, n, sub, osg),
                        3 => radix_pass::<8, S>(out, n, sub, osg),
                        _ => radix_pass::<16, S>(out, n, sub, osg),
                    }
                }
            }

            /// [`big`] as a real function (it recurses).
            #[target_feature(enable = $feat)]
            unsafe fn big_rec<S: Src>(
                inp: *const T, out: *mut T, n: usize, sg: Option<S>, osg: Option<S>, s: V,
                c: &[V; 4],
            ) {
                // SAFETY: as for big.
                unsafe { big(inp, out, n, sg, osg, s, c) }
            }

            /// Groups of `g < LANES` elements, several to a vector, `K = log2(g)`.
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn tiny<const K: usize, S: Src>(
                src: *const T, x: *mut T, len: usize, sg: Option<S>, osg: Option<S>, per: usize,
                s: V, c: &[V; 4],
            ) -> usize {
                // SAFETY: the caller guarantees len elements at x and src and that
                // every block of BLOCK signs from e % period on is readable.
                unsafe {
                    let mut e = 0;
                    while e + LANES <= len {
                        let g = sg.map(|p| p.add(e % per));
                        let o = osg.map(|p| p.add(e % per));
                        // Up to NV vectors at once, signs contiguous within a block.
                        let cnt = ((len - e) / LANES).min(NV - (e % BLOCK) / LANES);
                        if src != x as *const T {
                            prefetch_ahead(src.add(e), x.add(e), cnt * LANES);
                        }
                        match g {
                            None => {
                                for j in 0..cnt {
                                    let a = $mul($load(src.add(e + j * LANES)), s);
                                    let r = flipped(o, j * LANES, intra::<K>(a, c));
                                    $store(x.add(e + j * LANES), r);
                                }
                            }
                            Some(g) => {
                                for j in 0..cnt {
                                    let a = $load(src.add(e + j * LANES));
                                    let a = $mul(g.add(j * LANES).apply(a), s);
                                    let r = flipped(o, j * LANES, intra::<K>(a, c));
                                    $store(x.add(e + j * LANES), r);
                                }
                            }
                        }
                        e += cnt * LANES;
                    }
                    e
                }
            }

            /// `x <- FWHT((src or x) * signs * s) * out_signs` per length-`g` group; the
            /// signs of element `e` of `x` are those at `e % per` of `sg` / `osg` (`per` a
            /// multiple of BLOCK, or `x.len()`), and `vals` / `out_vals` hold the same
            /// signs as floats.
            ///
            /// # Safety
            /// The CPU has the features of this path.
            #[target_feature(enable = $feat)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn run<S: Src>(
                src: Option<&[T]>, x: &mut [T], g: usize, sg: Option<S>, osg: Option<S>,
                per: usize, vals: Option<&[T]>, out_vals: Option<&[T]>, s: T,
            ) {
                let len = x.len();
                let c = unsafe { lane_signs() };
                let sv = $set1(s);
                let xp = x.as_mut_ptr();
                let sp = src.map_or(xp as *const T, |v| v.as_ptr());
                let at = |e: usize, sg: Option<S>| sg.map(|p| unsafe { p.add(e % per) });
                // SAFETY (all blocks below): lengths asserted by pow2_rows_at and
                // the sign layout guaranteed by `rows`; every access stays inside x, src
                // and signs.
                unsafe {
                    if g < LANES {
                        let done = match g.trailing_zeros() {
                            0 => tiny::<0, S>(sp, xp, len, sg, osg, per, sv, &c),
                            1 => tiny::<1, S>(sp, xp, len, sg, osg, per, sv, &c),
                            2 => tiny::<2, S>(sp, xp, len, sg, osg, per, sv, &c),
                            _ => tiny::<3, S>(sp, xp, len, sg, osg, per, sv, &c),
                        };
                        if done < len {
                            let tail = &mut x[done..];
                            let r = done % per..done % per + tail.len();
                            super::super::pow2_rows_generic(
                                src.map(|v| &v[done..]), tail, g, vals.map(|v| &v[r.clone()]),
                                s, out_vals.map(|v| &v[r]));
                        }
                    } else if g <= BLOCK {
                        let m = g / LANES;
                        let mut e = 0;
                        while e + BLOCK <= len {
                            let (gp, op) = (at(e, sg), at(e, osg));
                            reg_block::<NV, S>(sp.add(e), xp.add(e), gp, op, sv, &c, m);
                            e += BLOCK;
                        }
                        while e < len {
                            let (ip, xq, gp, op) = (sp.add(e), xp.add(e), at(e, sg), at(e, osg));
                            match m {
                                1 => reg_block::<1, S>(ip, xq, gp, op, sv, &c, m),
                                2 => reg_block::<2, S>(ip, xq, gp, op, sv, &c, m),
                                4 => reg_block::<4, S>(ip, xq, gp, op, sv, &c, m),
                                _ => reg_block::<8, S>(ip, xq, gp, op, sv, &c, m),
                            }
                            e += g;
                        }
                    } else {
                        let mut e = 0;
                        while e < len {
                            big(sp.add(e), xp.add(e), g, at(e, sg), at(e, osg), sv, &c);
                            e += g;
                        }
                    }
                }
            }

            /// [`super::super::pow2_rows_at`] on this path (lengths checked there):
            /// tiles a short sign period to a block, or runs row by row; reads the
            /// lane masks where this path can and the float signs outgrow the L1 cache.
            ///
            /// # Safety
            /// The CPU has the features of this path.
            #[target_feature(enable = $feat)]
            pub(in super::super) unsafe fn rows(
                src: Option<&[T]>, x: &mut [T], g: usize, signs: Option<super::super::Signs<'_, T>>,
                s: T, out_signs: Option<super::super::Signs<'_, T>>,
            ) {
                let len = x.len();
                let (vals, out_vals) = (signs.map(|v| v.vals), out_signs.map(|v| v.vals));
                let Some(p) = vals.or(out_vals).map(|v| v.len()) else {
                    return unsafe { run::<Vals>(src, x, g, None, None, 1, None, None, s) };
                };
                let ptr = |v: Option<&[T]>| v.map(|v| Vals(v.as_ptr()));
                if !p.is_multiple_of(BLOCK) && p != len {
                    if BLOCK.is_multiple_of(p) {
                        let tile = |v: &[T]| -> [T; BLOCK] { std::array::from_fn(|i| v[i % p]) };
                        let (t, ot) = (vals.map(tile), out_vals.map(tile));
                        let (t, ot) = (t.as_ref().map(|v| &v[..]), ot.as_ref().map(|v| &v[..]));
                        unsafe { run(src, x, g, ptr(t), ptr(ot), BLOCK, t, ot, s) };
                    } else {
                        for (i, row) in x.chunks_exact_mut(p).enumerate() {
                            let r = src.map(|v| &v[i * p..(i + 1) * p]);
                            unsafe {
                                run(r, row, g, ptr(vals), ptr(out_vals), p, vals, out_vals, s)
                            };
                        }
                    }
                    return;
                }
                with_masks!($masks,
                    let big = p * std::mem::size_of::<T>() >= MASKS_FROM;
                    let (m, om) = (signs.map(|v| v.masks), out_signs.map(|v| v.masks));
                    // Every sign vector given has its masks.
                    if big && m.is_none_or(|m| m.is_some()) && om.is_none_or(|m| m.is_some()) {
                        let (m, om) = (m.flatten(), om.flatten());
                        let (m, om) = (m.map(|v| Masks(v.as_ptr())), om.map(|v| Masks(v.as_ptr())));
                        return unsafe { run(src, x, g, m, om, p, vals, out_vals, s) };
                    }
                );
                unsafe { run(src, x, g, ptr(vals), ptr(out_vals), p, vals, out_vals, s) }
            }
        }
    };
}

/// The AVX-512 kernels (32 registers: 16-vector blocks, radix-16 passes).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    simd_kernel!(
        f32s,
        f32,
        __m512,
        log_lanes = 4,
        feat = "avx512f,avx512vl,avx2,fma",
        nv = 16,
        max_radix = 4,
        masks = no,
        load = _mm512_loadu_ps,
        store = _mm512_storeu_ps,
        set1 = _mm512_set1_ps,
        zero = _mm512_setzero_ps,
        add = _mm512_add_ps,
        mul = _mm512_mul_ps,
        fmadd = _mm512_fmadd_ps,
        fnmadd = _mm512_fnmadd_ps,
        {
            /// The first `K` stages inside one vector.
            #[inline(always)]
            unsafe fn intra<const K: usize>(v: V, c: &[V; 4]) -> V {
                let mut v = v;
                if K > 0 {
                    v = _mm512_fmadd_ps(v, c[0], _mm512_permute_ps::<0b10_11_00_01>(v));
                }
                if K > 1 {
                    v = _mm512_fmadd_ps(v, c[1], _mm512_permute_ps::<0b01_00_11_10>(v));
                }
                if K > 2 {
                    v = _mm512_fmadd_ps(v, c[2], _mm512_shuffle_f32x4::<0b10_11_00_01>(v, v));
                }
                if K > 3 {
                    v = _mm512_fmadd_ps(v, c[3], _mm512_shuffle_f32x4::<0b01_00_11_10>(v, v));
                }
                v
            }
        }
    );

    simd_kernel!(
        f64s,
        f64,
        __m512d,
        log_lanes = 3,
        feat = "avx512f,avx512vl,avx2,fma",
        nv = 16,
        max_radix = 4,
        masks = no,
        load = _mm512_loadu_pd,
        store = _mm512_storeu_pd,
        set1 = _mm512_set1_pd,
        zero = _mm512_setzero_pd,
        add = _mm512_add_pd,
        mul = _mm512_mul_pd,
        fmadd = _mm512_fmadd_pd,
        fnmadd = _mm512_fnmadd_pd,
        {
            /// The first `K` stages inside one vector.
            #[inline(always)]
            unsafe fn intra<const K: usize>(v: V, c: &[V; 4]) -> V {
                let mut v = v;
                if K > 0 {
                    v = _mm512_fmadd_pd(v, c[0], _mm512_permute_pd::<0b0101_0101>(v));
                }
                if K > 1 {
                    v = _mm512_fmadd_pd(v, c[1], _mm512_shuffle_f64x2::<0b10_11_00_01>(v, v));
                }
                if K > 2 {
                    v = _mm512_fmadd_pd(v, c[2], _mm512_shuffle_f64x2::<0b01_00_11_10>(v, v));
                }
                v
            }
        }
    );
}

/// The AVX2 kernels (16 registers: 8-vector blocks, radix-8 passes, so that a block and its
/// constants stay in registers).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    simd_kernel!(
        f32s,
        f32,
        __m256,
        log_lanes = 3,
        feat = "avx2,fma",
        nv = 8,
        max_radix = 3,
        masks = yes,
        load = _mm256_loadu_ps,
        store = _mm256_storeu_ps,
        set1 = _mm256_set1_ps,
        zero = _mm256_setzero_ps,
        add = _mm256_add_ps,
        mul = _mm256_mul_ps,
        fmadd = _mm256_fmadd_ps,
        fnmadd = _mm256_fnmadd_ps,
        {
            /// `a` with lane `l` negated where bit `l` of `b` is set.
            #[inline(always)]
            unsafe fn flip(a: V, b: u32) -> V {
                // SAFETY: register arithmetic only.
                unsafe {
                    let m = _mm256_sllv_epi32(
                        _mm256_set1_epi32(b as i32),
                        _mm256_setr_epi32(31, 30, 29, 28, 27, 26, 25, 24),
                    );
                    let m = _mm256_and_si256(m, _mm256_set1_epi32(i32::MIN));
                    _mm256_xor_ps(a, _mm256_castsi256_ps(m))
                }
            }

            /// The first `K` stages inside one vector.
            #[inline(always)]
            unsafe fn intra<const K: usize>(v: V, c: &[V; 4]) -> V {
                let mut v = v;
                if K > 0 {
                    v = _mm256_fmadd_ps(v, c[0], _mm256_permute_ps::<0b10_11_00_01>(v));
                }
                if K > 1 {
                    v = _mm256_fmadd_ps(v, c[1], _mm256_permute_ps::<0b01_00_11_10>(v));
                }
                if K > 2 {
                    v = _mm256_fmadd_ps(v, c[2], _mm256_permute2f128_ps::<0x01>(v, v));
                }
                v
            }
        }
    );

    simd_kernel!(
        f64s,
        f64,
        __m256d,
        log_lanes = 2,
        feat = "avx2,fma",
        nv = 8,
        max_radix = 3,
        masks = yes,
        load = _mm256_loadu_pd,
        store = _mm256_storeu_pd,
        set1 = _mm256_set1_pd,
        zero = _mm256_setzero_pd,
        add = _mm256_add_pd,
        mul = _mm256_mul_pd,
        fmadd = _mm256_fmadd_pd,
        fnmadd = _mm256_fnmadd_pd,
        {
            /// `a` with lane `l` negated where bit `l` of `b` is set (bits 4-7 ignored).
            #[inline(always)]
            unsafe fn flip(a: V, b: u8) -> V {
                /// The sign-bit masks of every byte's low 4 bits. Indexed by the whole byte,
                /// so the index needs no masking (which LLVM turns into byte extracts); only
                /// the first 16 rows (512 bytes) are read for masks from `lane_masks`.
                #[repr(C, align(32))]
                struct Masks([[u64; 4]; 256]);
                static MASKS: Masks = Masks({
                    let mut t = [[0u64; 4]; 256];
                    let mut i = 0;
                    while i < 256 {
                        let mut l = 0;
                        while l < 4 {
                            if i >> l & 1 == 1 {
                                t[i][l] = 1 << 63;
                            }
                            l += 1;
                        }
                        i += 1;
                    }
                    t
                });
                // SAFETY: the rows are 32-byte aligned.
                unsafe {
                    let m = _mm256_load_pd(MASKS.0[b as usize].as_ptr() as *const f64);
                    _mm256_xor_pd(a, m)
                }
            }

            /// The first `K` stages inside one vector.
            #[inline(always)]
            unsafe fn intra<const K: usize>(v: V, c: &[V; 4]) -> V {
                let mut v = v;
                if K > 0 {
                    v = _mm256_fmadd_pd(v, c[0], _mm256_permute_pd::<0b0101>(v));
                }
                if K > 1 {
                    v = _mm256_fmadd_pd(v, c[1], _mm256_permute2f128_pd::<0x01>(v, v));
                }
                v
            }
        }
    );
}
