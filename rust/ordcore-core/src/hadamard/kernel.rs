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
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                {
                    // SAFETY: the CPU supports the enabled features (checked just above).
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: as above.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $generic($($arg),*)
        }
    };
}

dispatched!(
    /// Sylvester-order FWHT of `(src or x) * signs * s` into `x` (length a power of two).
    pow2, pow2_generic, (src: Option<&[T]>, x: &mut [T], signs: Option<&[T]>, s: T));
dispatched!(
    /// The `H_K` mixing step (see [`kmix_generic`]).
    kmix, kmix_generic, (x: &[T], out: &mut [T], mix: &[T], k: usize, p: usize));
dispatched!(
    /// `x[i] *= by[i]`.
    mul_assign, mul_assign_generic, (x: &mut [T], by: &[T]));
dispatched!(
    /// `x[i] *= s`.
    scale, scale_generic, (x: &mut [T], s: T));
