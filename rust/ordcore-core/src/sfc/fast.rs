//! Batch kernels for Hilbert and Morton codes in 2-D and 3-D: coordinates as the rows of a
//! `(n, D)` array or as `D` separate columns, codes in any unsigned width that holds them.
//!
//! Each chunk of rows is staged through small `u64` buffers (load and range-check, compute,
//! store), so the compute step is one function per curve, compiled for AVX-512, AVX2 and
//! portable code and picked once per process ([`kernel`]; the environment variable
//! `ORDCORE_SFC_KERNEL` = `portable`, `avx2` or `avx512` caps the choice, so tests reach
//! every path).
//!
//! * 2-D Hilbert: the branch-free prefix-scan form of the Hilbert state machine
//!   (logarithmic in `nbits`, no table: the per-level states `(swap, invert)` compose as
//!   2x2 boolean matrices, so a parallel prefix over the bit levels yields every level's
//!   state at once), in 32-bit lanes for `nbits <= 16` and 64-bit lanes up to 32. It
//!   vectorizes fully. Tests check it against Skilling's loop for every `nbits`.
//! * 3-D Hilbert: the multi-level state tables of [`super::hilbert::Table`] (3 levels,
//!   9 index bits, per lookup).
//! * Morton: magic-number bit spreads, vectorized.

use std::sync::OnceLock;

use rayon::prelude::*;

use super::hilbert::Table;
use super::morton::{compact1by1, compact1by2, part1by1, part1by2};
use super::{check_width, low_mask, Coord};
use crate::{Error, Result};

/// The compute kernels, ordered from the most portable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kernel {
    /// Plain Rust (SSE2 on x86-64).
    Portable,
    /// AVX2 (x86-64).
    Avx2,
    /// AVX-512 F/BW/DQ/VL (x86-64).
    Avx512,
}

impl Kernel {
    /// The name `ORDCORE_SFC_KERNEL` uses.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Portable => "portable",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        }
    }
}

fn detect() -> Kernel {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
            return Kernel::Avx512;
        }
        if has!("avx2") {
            return Kernel::Avx2;
        }
    }
    Kernel::Portable
}

/// The kernel in use: the best this CPU runs, capped by `ORDCORE_SFC_KERNEL`.
pub fn kernel() -> Kernel {
    static K: OnceLock<Kernel> = OnceLock::new();
    *K.get_or_init(|| {
        let cap = match std::env::var("ORDCORE_SFC_KERNEL").as_deref() {
            Ok("portable") => Kernel::Portable,
            Ok("avx2") => Kernel::Avx2,
            _ => Kernel::Avx512,
        };
        detect().min(cap)
    })
}

/// Which code to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// Hilbert index (the curve of `hilbertcurve`).
    Hilbert,
    /// Morton code; `msb`: coordinate 0 most significant in each group.
    Morton { msb: bool },
}

/// An unsigned integer type a code or coordinate is written as.
pub trait Word: Copy + Send + Sync + Default + 'static {
    /// Bits of the type.
    const BITS: u32;
    /// The low bits of `v`.
    fn from_u64(v: u64) -> Self;
}

macro_rules! impl_word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            const BITS: u32 = <$t>::BITS;
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
        }
    )*};
}
impl_word!(u8, u16, u32, u64);

/// Coordinates: the rows of a row-major `(n, D)` array, or `D` columns of length `n`.
#[derive(Clone, Copy)]
pub enum Coords<'a, T> {
    /// Row-major `(n, D)`.
    Rows(&'a [T]),
    /// `D` separate arrays of equal length.
    Columns(&'a [&'a [T]]),
}

/// Rows per work item (one interrupt check, one rayon task).
const CHUNK: usize = 8192;
/// Rows per staging buffer.
const BLOCK: usize = 256;

// --- the compute step ---------------------------------------------------------------------

/// Defines the 2-D Hilbert encoder and decoder for one lane type: the prefix-scan form of the
/// state machine (see the module docs). Coordinate 0 (`x`) supplies the more significant bit
/// of each pair, as `hilbertcurve`. `$half` is the coordinate width of the lane
/// (`nbits <= $half`), `$rounds` the prefix-scan strides after the first, `$last` the final
/// one, `$spread`/`$compact` the bit (de)interleaves and `$prefix` the prefix XOR.
macro_rules! hilbert2 {
    ($enc:ident, $dec:ident, $t:ty, $half:expr, [$($rounds:expr),*], $last:expr,
     $spread:ident, $compact:ident, $prefix:ident) => {
        #[inline(always)]
        fn $enc(x: $t, y: $t, nbits: u32) -> $t {
            let x = x << ($half - nbits);
            let y = y << ($half - nbits);
            let m: $t = <$t>::MAX >> $half;
            let (mut aa, mut bb, mut cc, mut dd);
            {
                let a = x ^ y;
                let b = m ^ a;
                let c = m ^ (x | y);
                let d = x & (y ^ m);
                aa = a | (b >> 1);
                bb = (a >> 1) ^ a;
                cc = ((c >> 1) ^ (b & (d >> 1))) ^ c;
                dd = ((a & (c >> 1)) ^ (d >> 1)) ^ d;
            }
            for s in [$($rounds),*] {
                let (a, b, c, d) = (aa, bb, cc, dd);
                aa = (a & (a >> s)) ^ (b & (b >> s));
                bb = (a & (b >> s)) ^ (b & ((a ^ b) >> s));
                cc ^= (a & (c >> s)) ^ (b & (d >> s));
                dd ^= (b & (c >> s)) ^ ((a ^ b) & (d >> s));
            }
            {
                let (a, b, c, d) = (aa, bb, cc, dd);
                cc ^= (a & (c >> $last)) ^ (b & (d >> $last));
                dd ^= (b & (c >> $last)) ^ ((a ^ b) & (d >> $last));
            }
            let a = cc ^ (cc >> 1);
            let b = dd ^ (dd >> 1);
            let i0 = x ^ y;
            let i1 = b | (m ^ (i0 | a));
            let h = ($spread(i1 as _) << 1) as $t | $spread(i0 as _) as $t;
            if nbits == $half {
                h
            } else {
                h >> (2 * $half - 2 * nbits)
            }
        }

        /// Inverse of the encoder above.
        #[inline(always)]
        fn $dec(h: $t, nbits: u32) -> ($t, $t) {
            let m: $t = <$t>::MAX >> $half;
            let i = if nbits == $half { h } else { h << (2 * $half - 2 * nbits) };
            let i0 = $compact(i as _) as $t;
            let i1 = $compact((i >> 1) as _) as $t;
            let t0 = (i0 | i1) ^ m;
            let t1 = i0 & i1;
            let p0 = $prefix(t0);
            let p1 = $prefix(t1);
            let a = ((i0 ^ m) & p1) | (i0 & p0);
            let x = (a ^ i1) >> ($half - nbits);
            let y = (a ^ i0 ^ i1) >> ($half - nbits);
            (x, y)
        }
    };
}

hilbert2!(
    h2_encode32,
    h2_decode32,
    u32,
    16,
    [2u32, 4],
    8,
    spread16,
    compact16,
    prefix_xor32
);
hilbert2!(
    h2_encode64,
    h2_decode64,
    u64,
    32,
    [2u32, 4, 8],
    16,
    part1by1,
    compact1by1,
    prefix_xor64
);

/// Bit `j` of the result: XOR of bits `j..16` of `x` (16-bit values).
#[inline(always)]
fn prefix_xor32(mut x: u32) -> u32 {
    x ^= x >> 8;
    x ^= x >> 4;
    x ^= x >> 2;
    x ^ (x >> 1)
}

/// [`prefix_xor32`] for 32-bit values.
#[inline(always)]
fn prefix_xor64(mut x: u64) -> u64 {
    x ^= x >> 16;
    x ^= x >> 8;
    x ^= x >> 4;
    x ^= x >> 2;
    x ^ (x >> 1)
}

/// Spreads 16 bits to the even bits of a `u32`.
#[inline(always)]
fn spread16(x: u32) -> u32 {
    let mut x = x & 0xFFFF;
    x = (x | (x << 8)) & 0x00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333;
    (x | (x << 1)) & 0x5555_5555
}

/// Inverse of [`spread16`].
#[inline(always)]
fn compact16(x: u32) -> u32 {
    let mut x = x & 0x5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF;
    (x | (x >> 8)) & 0xFFFF
}

/// The 3-D tables widened to `u32` entries for gathers: `full_*` for 3 levels per lookup
/// (`48 states x 512`), `first_*[r]` for the leading `r = nbits % 3` levels from state 0.
struct H3 {
    full_enc: Vec<u32>,
    full_dec: Vec<u32>,
    first_enc: [Vec<u32>; 3],
    first_dec: [Vec<u32>; 3],
}

fn h3() -> &'static H3 {
    static T: OnceLock<H3> = OnceLock::new();
    T.get_or_init(|| {
        let t = Table::get(3);
        let wide = |v: &[u16]| v.iter().map(|&e| e as u32).collect::<Vec<u32>>();
        let (e3, d3) = t.level_tables(3);
        let first = |k: u32, dec: bool| -> Vec<u32> {
            if k == 0 {
                return Vec::new();
            }
            let (e, d) = t.level_tables(k);
            // State 0 occupies the first 2^(3k) entries.
            wide(&(if dec { d } else { e })[..1 << (3 * k)])
        };
        H3 {
            full_enc: wide(e3),
            full_dec: wide(d3),
            first_enc: [first(0, false), first(1, false), first(2, false)],
            first_dec: [first(0, true), first(1, true), first(2, true)],
        }
    })
}

const SB: u32 = super::hilbert::STATE_BITS;
const SM: u32 = (1 << SB) - 1;

/// 3-D Hilbert indices of one block, level-major so that each step over the block is a
/// gather loop (vectorized with AVX2/AVX-512 gathers).
#[inline(always)]
fn h3_encode_block(x: &[u64], y: &[u64], z: &[u64], out: &mut [u64], nbits: u32) {
    let t = h3();
    let n = out.len();
    let mut st = [0u32; BLOCK];
    let st = &mut st[..n];
    let r = nbits % 3;
    let mut shift = nbits;
    if r != 0 {
        shift -= r;
        let tab = &t.first_enc[r as usize];
        let m = (1u64 << r) - 1;
        for k in 0..n {
            let idx = (((x[k] >> shift) & m) << (2 * r))
                | (((y[k] >> shift) & m) << r)
                | ((z[k] >> shift) & m);
            let e = tab[idx as usize];
            out[k] = (e >> SB) as u64;
            st[k] = e & SM;
        }
    } else {
        out.fill(0);
    }
    let tab = t.full_enc.as_slice();
    assert!(tab.len() >= 48 << 9);
    while shift > 0 {
        shift -= 3;
        for k in 0..n {
            let idx = ((st[k] as u64) << 9)
                | (((x[k] >> shift) & 7) << 6)
                | (((y[k] >> shift) & 7) << 3)
                | ((z[k] >> shift) & 7);
            // SAFETY: states are < 48 (the table's reachable set) and the input is 9 bits,
            // so idx < 48 * 512 <= tab.len() (asserted above).
            let e = unsafe { *tab.get_unchecked(idx as usize) };
            out[k] = (out[k] << 9) | (e >> SB) as u64;
            st[k] = e & SM;
        }
    }
}

/// Inverse of [`h3_encode_block`].
#[inline(always)]
fn h3_decode_block(h: &[u64], x: &mut [u64], y: &mut [u64], z: &mut [u64], nbits: u32) {
    let t = h3();
    let n = h.len();
    let mut st = [0u32; BLOCK];
    let st = &mut st[..n];
    let r = nbits % 3;
    let mut shift = nbits;
    if r != 0 {
        shift -= r;
        let tab = &t.first_dec[r as usize];
        let m = (1u64 << r) - 1;
        let mi = (1u64 << (3 * r)) - 1;
        for k in 0..n {
            let e = tab[((h[k] >> (3 * shift)) & mi) as usize];
            let c = (e >> SB) as u64;
            x[k] = (c >> (2 * r)) & m;
            y[k] = (c >> r) & m;
            z[k] = c & m;
            st[k] = e & SM;
        }
    } else {
        x.fill(0);
        y.fill(0);
        z.fill(0);
    }
    let tab = t.full_dec.as_slice();
    assert!(tab.len() >= 48 << 9);
    while shift > 0 {
        shift -= 3;
        for k in 0..n {
            let idx = ((st[k] as u64) << 9) | ((h[k] >> (3 * shift)) & 511);
            // SAFETY: as in h3_encode_block.
            let e = unsafe { *tab.get_unchecked(idx as usize) };
            let c = (e >> SB) as u64;
            x[k] = (x[k] << 3) | ((c >> 6) & 7);
            y[k] = (y[k] << 3) | ((c >> 3) & 7);
            z[k] = (z[k] << 3) | (c & 7);
            st[k] = e & SM;
        }
    }
}

/// Codes of one block: `cols[i][k]` is coordinate `i` of row `k` (already masked to
/// `nbits` bits). `#[inline(always)]` so each SIMD copy below compiles it anew.
#[inline(always)]
fn encode_block(curve: Curve, d: usize, nbits: u32, cols: &[[u64; BLOCK]; 3], out: &mut [u64]) {
    let n = out.len();
    let [x, y, z] = cols;
    let (x, y, z) = (&x[..n], &y[..n], &z[..n]);
    match (curve, d) {
        (Curve::Hilbert, 2) if nbits <= 16 => {
            for k in 0..n {
                out[k] = h2_encode32(x[k] as u32, y[k] as u32, nbits) as u64;
            }
        }
        (Curve::Hilbert, 2) => {
            for k in 0..n {
                out[k] = h2_encode64(x[k], y[k], nbits);
            }
        }
        (Curve::Hilbert, _) => h3_encode_block(x, y, z, out, nbits),
        (Curve::Morton { msb }, 2) => {
            let (s0, s1) = if msb { (1, 0) } else { (0, 1) };
            for k in 0..n {
                out[k] = (part1by1(x[k]) << s0) | (part1by1(y[k]) << s1);
            }
        }
        (Curve::Morton { msb }, _) => {
            let (s0, s2) = if msb { (2, 0) } else { (0, 2) };
            for k in 0..n {
                out[k] = (part1by2(x[k]) << s0) | (part1by2(y[k]) << 1) | (part1by2(z[k]) << s2);
            }
        }
    }
}

/// Coordinates of one block of codes (`codes` already checked to fit).
#[inline(always)]
fn decode_block(curve: Curve, d: usize, nbits: u32, codes: &[u64], cols: &mut [[u64; BLOCK]; 3]) {
    let n = codes.len();
    let [x, y, z] = cols;
    let (x, y, z) = (&mut x[..n], &mut y[..n], &mut z[..n]);
    match (curve, d) {
        (Curve::Hilbert, 2) if nbits <= 16 => {
            for k in 0..n {
                let (a, b) = h2_decode32(codes[k] as u32, nbits);
                x[k] = a as u64;
                y[k] = b as u64;
            }
        }
        (Curve::Hilbert, 2) => {
            for k in 0..n {
                let (a, b) = h2_decode64(codes[k], nbits);
                x[k] = a;
                y[k] = b;
            }
        }
        (Curve::Hilbert, _) => h3_decode_block(codes, x, y, z, nbits),
        (Curve::Morton { msb }, 2) => {
            let (s0, s1) = if msb { (1, 0) } else { (0, 1) };
            for k in 0..n {
                x[k] = compact1by1(codes[k] >> s0);
                y[k] = compact1by1(codes[k] >> s1);
            }
        }
        (Curve::Morton { msb }, _) => {
            let (s0, s2) = if msb { (2, 0) } else { (0, 2) };
            for k in 0..n {
                x[k] = compact1by2(codes[k] >> s0);
                y[k] = compact1by2(codes[k] >> 1);
                z[k] = compact1by2(codes[k] >> s2);
            }
        }
    }
}

macro_rules! multiversion {
    ($name:ident, $body:ident, ($($arg:ident : $ty:ty),*)) => {
        fn $name(k: Kernel, $($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,bmi2")]
                unsafe fn avx512($($arg: $ty),*) {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,bmi2")]
                unsafe fn avx2($($arg: $ty),*) {
                    $body($($arg),*)
                }
                match k {
                    // SAFETY: `kernel()` picks a level only when the CPU supports it, and
                    // tests cap it through ORDCORE_SFC_KERNEL, never raise it.
                    Kernel::Avx512 => return unsafe { avx512($($arg),*) },
                    // SAFETY: as above.
                    Kernel::Avx2 => return unsafe { avx2($($arg),*) },
                    Kernel::Portable => {}
                }
            }
            let _ = k;
            $body($($arg),*)
        }
    };
}

multiversion!(encode_block_k, encode_block,
    (curve: Curve, d: usize, nbits: u32, cols: &[[u64; BLOCK]; 3], out: &mut [u64]));
multiversion!(decode_block_k, decode_block,
    (curve: Curve, d: usize, nbits: u32, codes: &[u64], cols: &mut [[u64; BLOCK]; 3]));

// --- drivers ------------------------------------------------------------------------------

fn check_out<O: Word>(d: usize, nbits: u32, what: &'static str) -> Result<()> {
    let need = d as u32 * nbits;
    if need > O::BITS {
        return Err(Error::invalid(
            "dtype",
            format!(
                "uint{} cannot hold {what} of D * nbits = {d} * {nbits} = {need} bits; use \
                 uint{} or wider",
                O::BITS,
                need.next_power_of_two().max(8)
            ),
        ));
    }
    Ok(())
}

fn check_dim(d: usize) -> Result<()> {
    if d == 2 || d == 3 {
        Ok(())
    } else {
        Err(Error::invalid(
            "coords",
            format!("the fast kernels take D = 2 or 3, got D = {d}"),
        ))
    }
}

/// The value at row `r`, column `i`.
#[inline(always)]
fn at<T: Coord>(c: Coords<'_, T>, d: usize, r: usize, i: usize) -> u64 {
    match c {
        Coords::Rows(s) => s[r * d + i].to_u64(),
        Coords::Columns(cols) => cols[i][r].to_u64(),
    }
}

/// Codes of `n` points in `D = 2` or `3` dimensions, written as `O` (which must hold
/// `D * nbits` bits). Fails like [`super::hilbert::encode`] (the first bad row is named),
/// when `O` is too narrow, when columns differ in length, or on an interrupt.
pub fn encode<T: Coord, O: Word>(
    coords: Coords<'_, T>,
    d: usize,
    nbits: i64,
    curve: Curve,
) -> Result<Vec<O>> {
    encode_with(kernel(), coords, d, nbits, curve)
}

/// [`encode`] on an explicit kernel (must be one the CPU runs: at most [`kernel`]'s).
pub fn encode_with<T: Coord, O: Word>(
    k: Kernel,
    coords: Coords<'_, T>,
    d: usize,
    nbits: i64,
    curve: Curve,
) -> Result<Vec<O>> {
    let k = k.min(kernel());
    check_dim(d)?;
    let nbits = check_width(d, nbits)?;
    check_out::<O>(d, nbits, "codes")?;
    let n = match coords {
        Coords::Rows(s) => s.len() / d,
        Coords::Columns(cols) => {
            let n = cols.first().map_or(0, |c| c.len());
            if let Some((i, c)) = cols.iter().enumerate().find(|(_, c)| c.len() != n) {
                return Err(Error::invalid(
                    "coords",
                    format!(
                        "the separate coordinate arrays differ in length: array 0 has {n} \
                         values, array {i} has {}",
                        c.len()
                    ),
                ));
            }
            if cols.len() != d {
                return Err(Error::invalid(
                    "coords",
                    format!("expected {d} coordinate arrays, got {}", cols.len()),
                ));
            }
            n
        }
    };
    crate::memory::ensure_array::<O>("coords", n as u128)?;
    let limit = low_mask(nbits);
    let mut out = vec![O::default(); n];
    let work = |(ci, o): (usize, &mut [O])| -> Result<bool> {
        crate::interrupt::check()?;
        let mut cols = [[0u64; BLOCK]; 3];
        let mut codes = [0u64; BLOCK];
        let mut acc = 0u64;
        for (bi, ob) in o.chunks_mut(BLOCK).enumerate() {
            let r0 = ci * CHUNK + bi * BLOCK;
            let m = ob.len();
            for (i, col) in cols.iter_mut().enumerate().take(d) {
                match coords {
                    Coords::Rows(s) => {
                        for (k, v) in col[..m].iter_mut().enumerate() {
                            let x = s[(r0 + k) * d + i].to_u64();
                            acc |= x;
                            *v = x & limit;
                        }
                    }
                    Coords::Columns(cs) => {
                        for (v, x) in col[..m].iter_mut().zip(&cs[i][r0..r0 + m]) {
                            let x = x.to_u64();
                            acc |= x;
                            *v = x & limit;
                        }
                    }
                }
            }
            encode_block_k(k, curve, d, nbits, &cols, &mut codes[..m]);
            for (slot, &c) in ob.iter_mut().zip(&codes[..m]) {
                *slot = O::from_u64(c);
            }
        }
        Ok(acc & !limit != 0)
    };
    let bad = if n >= crate::PARALLEL_THRESHOLD {
        out.par_chunks_mut(CHUNK)
            .enumerate()
            .map(work)
            .try_reduce(|| false, |a, b| Ok(a | b))?
    } else {
        out.chunks_mut(CHUNK)
            .enumerate()
            .map(work)
            .try_fold(false, |a, b| b.map(|b| a | b))?
    };
    if bad {
        let row = (0..n)
            .find(|&r| (0..d).any(|i| at(coords, d, r, i) & !limit != 0))
            .unwrap_or(0);
        let vals: Vec<String> = (0..d)
            .map(|i| match coords {
                Coords::Rows(s) => s[row * d + i].describe(),
                Coords::Columns(cs) => cs[i][row].describe(),
            })
            .collect();
        let col = (0..d)
            .position(|i| at(coords, d, row, i) & !limit != 0)
            .unwrap_or(0);
        return Err(Error::invalid(
            "coords",
            format!(
                "row {row} (column {col}) has value {}, outside the allowed range \
                 [0, 2^{nbits}) = [0, {limit}] for nbits = {nbits}; row {row} is [{}]",
                vals[col],
                vals.join(", ")
            ),
        ));
    }
    Ok(out)
}

/// Coordinates of `codes` in `D = 2` or `3` dimensions, written as `O` (which must hold
/// `nbits` bits): row-major `(n, D)` when `columns` is false, else `D` consecutive columns
/// of length `n` (`(D, n)` row-major). `arg` names the codes in errors.
pub fn decode<T: Coord, O: Word>(
    codes: &[T],
    d: usize,
    nbits: i64,
    curve: Curve,
    columns: bool,
    arg: &'static str,
) -> Result<Vec<O>> {
    decode_with(kernel(), codes, d, nbits, curve, columns, arg)
}

/// [`decode`] on an explicit kernel (capped at [`kernel`]'s).
pub fn decode_with<T: Coord, O: Word>(
    k: Kernel,
    codes: &[T],
    d: usize,
    nbits: i64,
    curve: Curve,
    columns: bool,
    arg: &'static str,
) -> Result<Vec<O>> {
    let k = k.min(kernel());
    check_dim(d)?;
    let nbits = check_width(d, nbits)?;
    check_out::<O>(1, nbits, "coordinates")?;
    let n = codes.len();
    crate::memory::ensure_array::<O>(arg, n as u128 * d as u128)?;
    let total = d as u32 * nbits;
    let limit = low_mask(total);
    let mut out = vec![O::default(); n * d];
    // Per chunk of rows: one interleaved slice (rows), or one slice per column.
    let pieces: Vec<Vec<&mut [O]>> = if columns && n > 0 {
        let mut per_col: Vec<std::slice::ChunksMut<'_, O>> =
            out.chunks_mut(n).map(|c| c.chunks_mut(CHUNK)).collect();
        (0..n.div_ceil(CHUNK))
            .map(|_| {
                per_col
                    .iter_mut()
                    .map(|it| it.next().unwrap_or_default())
                    .collect()
            })
            .collect()
    } else {
        out.chunks_mut(CHUNK * d).map(|c| vec![c]).collect()
    };
    let work = |(ci, mut o): (usize, Vec<&mut [O]>)| -> Result<bool> {
        crate::interrupt::check()?;
        let mut cols = [[0u64; BLOCK]; 3];
        let mut buf = [0u64; BLOCK];
        let mut acc = 0u64;
        let r_start = ci * CHUNK;
        let rows = (n - r_start).min(CHUNK);
        let chunk_codes = &codes[r_start..r_start + rows];
        for (bi, cb) in chunk_codes.chunks(BLOCK).enumerate() {
            let m = cb.len();
            for (v, c) in buf[..m].iter_mut().zip(cb) {
                let c = c.to_u64();
                acc |= c;
                *v = c & limit;
            }
            decode_block_k(k, curve, d, nbits, &buf[..m], &mut cols);
            let r0 = bi * BLOCK;
            if o.len() == 1 {
                let o = &mut o[0];
                for (i, col) in cols.iter().enumerate().take(d) {
                    for (kk, &v) in col[..m].iter().enumerate() {
                        o[(r0 + kk) * d + i] = O::from_u64(v);
                    }
                }
            } else {
                for (oc, col) in o.iter_mut().zip(&cols) {
                    for (slot, &v) in oc[r0..r0 + m].iter_mut().zip(&col[..m]) {
                        *slot = O::from_u64(v);
                    }
                }
            }
        }
        Ok(acc & !limit != 0)
    };
    let bad = if n >= crate::PARALLEL_THRESHOLD {
        pieces
            .into_par_iter()
            .enumerate()
            .map(work)
            .try_reduce(|| false, |a, b| Ok(a | b))?
    } else {
        pieces
            .into_iter()
            .enumerate()
            .map(work)
            .try_fold(false, |a, b| b.map(|b| a | b))?
    };
    if bad {
        let row = codes
            .iter()
            .position(|c| c.to_u64() & !limit != 0)
            .unwrap_or(0);
        return Err(Error::invalid(
            arg,
            format!(
                "row {row} has value {}, outside the allowed range [0, 2^{total}) = [0, {limit}] \
                 for D * nbits = {total}",
                codes[row].describe()
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::{hilbert, morton};
    use super::*;

    fn pts(seed: u64, n: usize, d: usize, nbits: u32) -> Vec<u64> {
        (0..(n * d) as u64)
            .map(|i| crate::rng::counter_u64(seed, nbits as u64, i) & low_mask(nbits))
            .collect()
    }

    #[test]
    fn every_kernel_matches_the_reference_loops() {
        let kernels = [Kernel::Portable, Kernel::Avx2, Kernel::Avx512];
        for d in [2usize, 3] {
            for nbits in 1..=(64 / d) as u32 {
                let mut p = pts(nbits as u64, 700, d, nbits);
                // Corners first: all zeros, all ones.
                for v in &mut p[..d] {
                    *v = 0;
                }
                for v in &mut p[d..2 * d] {
                    *v = low_mask(nbits);
                }
                let want_h = hilbert::encode_generic(&p, d, nbits).unwrap();
                let cols: Vec<Vec<u64>> = (0..d)
                    .map(|i| p.iter().skip(i).step_by(d).copied().collect())
                    .collect();
                let col_refs: Vec<&[u64]> = cols.iter().map(|c| c.as_slice()).collect();
                for k in kernels {
                    let c = Curve::Hilbert;
                    let got: Vec<u64> =
                        encode_with(k, Coords::Rows(&p), d, nbits as i64, c).unwrap();
                    assert_eq!(got, want_h, "{k:?} d={d} nbits={nbits}");
                    let got2: Vec<u64> =
                        encode_with(k, Coords::Columns(&col_refs), d, nbits as i64, c).unwrap();
                    assert_eq!(got2, want_h);
                    let back: Vec<u64> =
                        decode_with(k, &want_h, d, nbits as i64, c, false, "index").unwrap();
                    assert_eq!(back, p, "{k:?} decode d={d} nbits={nbits}");
                    for msb in [false, true] {
                        let order = if msb {
                            morton::AxisOrder::Msb
                        } else {
                            morton::AxisOrder::Lsb
                        };
                        let want: Vec<u64> = p
                            .chunks(d)
                            .map(|r| morton::tests::naive(r, nbits, order))
                            .collect();
                        let c = Curve::Morton { msb };
                        let got: Vec<u64> =
                            encode_with(k, Coords::Rows(&p), d, nbits as i64, c).unwrap();
                        assert_eq!(got, want);
                        let back: Vec<u64> =
                            decode_with(k, &want, d, nbits as i64, c, true, "code").unwrap();
                        let flat: Vec<u64> =
                            (0..p.len()).map(|j| back[(j % d) * 700 + j / d]).collect();
                        assert_eq!(flat, p);
                    }
                }
            }
        }
    }

    #[test]
    fn narrow_outputs_and_errors() {
        let p = [3u8, 1, 0, 2];
        let w: Vec<u64> = encode(Coords::Rows(&p), 2, 2, Curve::Hilbert).unwrap();
        let n: Vec<u8> = encode(Coords::Rows(&p), 2, 2, Curve::Hilbert).unwrap();
        assert_eq!(n.iter().map(|&v| v as u64).collect::<Vec<_>>(), w);
        assert!(encode::<u8, u8>(Coords::Rows(&p), 2, 5, Curve::Hilbert).is_err());
        let a = [1u8, 2];
        let b = [1u8];
        let cols: [&[u8]; 2] = [&a, &b];
        let e = encode::<u8, u64>(Coords::Columns(&cols), 2, 4, Curve::Hilbert).err();
        assert!(format!("{e:?}").contains("differ in length"));
        let e = encode::<u8, u64>(Coords::Rows(&[1, 9]), 2, 3, Curve::Hilbert).err();
        assert!(format!("{e:?}").contains("row 0 (column 1) has value 9"));
        assert!(decode::<u64, u64>(&[16], 2, 2, Curve::Hilbert, false, "index").is_err());
    }
}
