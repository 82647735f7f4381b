//! The butterflies. Everything here is `#[inline(always)]` generic code that the compiler
//! vectorizes; [`pow2`], [`kmix`] and [`mul_assign`] pick, once per call, a copy compiled
//! for AVX-512 or AVX2+FMA when the CPU has it (runtime detection, no `-C target-cpu`).

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
    /// The mixing matrix of `base`: forward (`x @ H`) or inverse (`y @ H^T`).
    fn mix(base: &BaseMatrix, inverse: bool) -> &[Self];
    /// The whole power-of-two transform of [`pow2`] by a type-specific SIMD kernel when
    /// one applies (returns false otherwise, leaving `x` untouched).
    #[inline(always)]
    fn pow2_simd(
        _src: Option<&[Self]>,
        _x: &mut [Self],
        _signs: Option<&[Self]>,
        _s: Self,
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
    fn mix(base: &BaseMatrix, inverse: bool) -> &[Self] {
        if inverse {
            &base.inv_f32
        } else {
            &base.fwd_f32
        }
    }
    #[inline(always)]
    fn pow2_simd(src: Option<&[f32]>, x: &mut [f32], signs: Option<&[f32]>, s: f32) -> bool {
        #[cfg(target_arch = "x86_64")]
        if x.len() >= avx512::BLOCK && level() == Level::Avx512 {
            // SAFETY: level() is Avx512 only when the CPU has AVX-512F (checked there).
            unsafe { avx512::pow2(src, x, signs, s) };
            return true;
        }
        let _ = (src, signs, s);
        false
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn from_f64(v: f64) -> Self {
        v
    }
    fn mix(base: &BaseMatrix, inverse: bool) -> &[Self] {
        if inverse {
            &base.inv_f64
        } else {
            &base.fwd_f64
        }
    }
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
    if T::pow2_simd(src, x, signs, s) {
        return;
    }
    let n = x.len();
    if n < 8 {
        if let Some(src) = src {
            x.copy_from_slice(src);
        }
        if let Some(sg) = signs {
            mul_assign_generic(x, sg);
        }
        stages_from(x, 1);
        scale_generic(x, s);
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

dispatched!(
    /// Sylvester-order FWHT of `(src or x) * signs * s` into `x` (length a power of two).
    pow2, pow2_generic, (src: Option<&[T]>, x: &mut [T], signs: Option<&[T]>, s: T));
/// [`pow2_generic`] on every length-`n` row of `x` (reading the rows of `src` when given):
/// one dispatch per batch of rows instead of one per row.
#[inline(always)]
fn pow2_rows_generic<T: Real>(src: Option<&[T]>, x: &mut [T], n: usize, s: T) {
    for (i, row) in x.chunks_exact_mut(n).enumerate() {
        pow2_generic(src.map(|v| &v[i * n..(i + 1) * n]), row, None, s);
    }
}

dispatched!(
    /// The power-of-two transform of every length-`n` row of `x` (see [`pow2_rows_generic`]).
    pow2_rows, pow2_rows_generic, (src: Option<&[T]>, x: &mut [T], n: usize, s: T));
dispatched!(
    /// The `H_K` mixing step (see [`kmix_generic`]).
    kmix, kmix_generic, (x: &[T], out: &mut [T], mix: &[T], k: usize, p: usize));
dispatched!(
    /// `x[i] *= by[i]`.
    mul_assign, mul_assign_generic, (x: &mut [T], by: &[T]));
dispatched!(
    /// `x[i] *= s`.
    scale, scale_generic, (x: &mut [T], s: T));

/// The float32 AVX-512 power-of-two transform: every 256-element block runs its first 8
/// stages in 16 registers (4 inside each vector by permutes and masked subtractions, 4
/// between vectors) while it is loaded, scaled, sign-flipped and (out of place) copied;
/// the larger strides then run as in [`stages_from`], cache-blocked.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// Elements per register block.
    pub(super) const BLOCK: usize = 256;

    /// Stages h = 1, 2, 4, 8 inside one vector: lane `l` becomes `v[l] + v[l ^ h]` when
    /// bit `h` of `l` is clear, else `v[l ^ h] - v[l]`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn intra(v: __m512) -> __m512 {
        let p = _mm512_permute_ps::<0b10_11_00_01>(v);
        let v = _mm512_mask_sub_ps(_mm512_add_ps(v, p), 0xAAAA, p, v);
        let p = _mm512_permute_ps::<0b01_00_11_10>(v);
        let v = _mm512_mask_sub_ps(_mm512_add_ps(v, p), 0xCCCC, p, v);
        let p = _mm512_shuffle_f32x4::<0b10_11_00_01>(v, v);
        let v = _mm512_mask_sub_ps(_mm512_add_ps(v, p), 0xF0F0, p, v);
        let p = _mm512_shuffle_f32x4::<0b01_00_11_10>(v, v);
        _mm512_mask_sub_ps(_mm512_add_ps(v, p), 0xFF00, p, v)
    }

    /// Stages h = 1..=128 of one 256-element block read from `inp` (scaled by `s`, times
    /// `signs` when given), written to `out`.
    ///
    /// # Safety
    /// `inp`, `out` (and `signs`) point to 256 valid `f32`; `inp` may equal `out`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn block(inp: *const f32, out: *mut f32, signs: Option<*const f32>, s: __m512) {
        let mut v = [_mm512_setzero_ps(); 16];
        for (j, r) in v.iter_mut().enumerate() {
            // SAFETY: j * 16 + 16 <= 256 elements of each pointer.
            let a = unsafe { _mm512_loadu_ps(inp.add(16 * j)) };
            let a = match signs {
                // SAFETY: as above.
                Some(g) => _mm512_mul_ps(a, unsafe { _mm512_loadu_ps(g.add(16 * j)) }),
                None => a,
            };
            *r = intra(_mm512_mul_ps(a, s));
        }
        for h in [1usize, 2, 4, 8] {
            for j in 0..16 {
                if j & h == 0 {
                    let (a, b) = (v[j], v[j + h]);
                    v[j] = _mm512_add_ps(a, b);
                    v[j + h] = _mm512_sub_ps(a, b);
                }
            }
        }
        for (j, r) in v.iter().enumerate() {
            // SAFETY: as above.
            unsafe { _mm512_storeu_ps(out.add(16 * j), *r) };
        }
    }

    /// The power-of-two transform of `x` (length a power of two, at least [`BLOCK`]) of
    /// `(src or x) * signs * s`, as [`super::pow2_generic`].
    ///
    /// # Safety
    /// The CPU supports AVX-512F. `src` and `signs`, when given, have `x.len()` elements.
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub(super) unsafe fn pow2(src: Option<&[f32]>, x: &mut [f32], signs: Option<&[f32]>, s: f32) {
        let n = x.len();
        debug_assert!(n >= BLOCK && n.is_power_of_two());
        assert!(src.is_none_or(|v| v.len() == n) && signs.is_none_or(|v| v.len() == n));
        let sv = _mm512_set1_ps(s);
        let cb = n.min(super::CACHE_BLOCK);
        for (bi, xb) in x.chunks_exact_mut(cb).enumerate() {
            let base = bi * cb;
            for k in (0..cb).step_by(BLOCK) {
                let out = xb[k..].as_mut_ptr();
                let inp = src.map_or(out as *const f32, |v| v[base + k..].as_ptr());
                let g = signs.map(|v| v[base + k..].as_ptr());
                // SAFETY: every pointer has at least BLOCK elements left (the lengths are
                // equal multiples of BLOCK, asserted above).
                unsafe { block(inp, out, g, sv) };
            }
            super::stages_from(xb, BLOCK);
        }
        if n > cb {
            super::stages_from(x, cb);
        }
    }
}
