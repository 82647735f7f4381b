//! Batch kernels for Hilbert and Morton codes in 2-D and 3-D: coordinates as the rows of a
//! `(n, D)` array or as `D` separate columns, codes in any unsigned width that holds them.
//!
//! Every kernel is monomorphized for its (input type, output type) pair and writes straight
//! into the output: it reads the input, ORs it into a range-check accumulator, computes in
//! lanes of the code's width (encode: the output type; decode: twice the output width in
//! 2-D, the narrowest of 16/32/64 bits that holds `3 * nbits` in 3-D) and stores, so a
//! `uint8`-in, `uint8`-out call runs 64 points per AVX-512 vector and a `uint64` one 8.
//! Signed input is read as its unsigned type of the same width (a negative value then fails
//! the range check, or, where the type is no wider than `nbits`, a separate sign test).
//! Each kernel is compiled for AVX-512, AVX2 and portable code and picked once per process
//! ([`kernel`]; the environment variable `ORDCORE_SFC_KERNEL` = `portable`, `avx2` or
//! `avx512` caps the choice, so tests reach every path).
//!
//! * 2-D Hilbert: the branch-free prefix-scan form of the Hilbert state machine
//!   (logarithmic in `nbits`, no table: the per-level states `(swap, invert)` compose as
//!   2x2 boolean matrices, so a parallel prefix over the bit levels yields every level's
//!   state at once), in lanes of 8, 16, 32 or 64 bits. It vectorizes fully. Tests check it
//!   against Skilling's loop for every `nbits`.
//! * 3-D Hilbert: Skilling's loops ("Programming the Hilbert curve", AIP Conf. Proc. 707,
//!   2004; the algorithm `hilbertcurve` implements) run branch-free in SIMD lanes, one
//!   vectorized pass over a block of points per bit level (four levels a pass), no table
//!   lookups: the Hilbert index's Morton de-interleave (coordinate 0 most significant) is
//!   Skilling's transposed index, so decoding de-interleaves, Gray-decodes and undoes the
//!   invert/exchange steps from level 1 up; encoding runs them from the top down, Gray-
//!   encodes and interleaves. Level `q` reads bit `q` and changes only the bits below it,
//!   so the levels below 8 (16) bits run on the low parts in `u8` (`u16`) lanes, two (four)
//!   times as many a vector as the `u32` lanes that nbits 17-21 need. (The state-table
//!   walk this replaced spent about 0.6 ns a level on gathers.)
//! * Morton: magic-number bit spreads, vectorized. With AVX-512 VBMI, 3-D codes of uint8
//!   coordinates of at most 6 bits (encode) and of at most 15 bits into uint8 (decode) are
//!   64-entry table lookups instead (`vpermb`, 64 points a step, tables in registers), rows
//!   of an `(n, 3)` array split and interleaved by two-source byte permutes ([`rows3`]);
//!   3-D encoding of 16- to 64-bit coordinates into 32/64-bit codes spreads each code byte
//!   from a `vpmultishiftqb` window and a 24-entry `vpermb` table (rows split into lanes
//!   of the code's width by two-source permutes), and 3-D decoding of 32/64-bit codes into
//!   uint8/uint16 (with GFNI) compacts three multishift windows by GF(2) affine steps
//!   (64-bit codes into separate uint32 arrays: three more windows for byte 2), separate
//!   arrays regrouped into full-vector stores. 3-D Hilbert decoding starts with the same
//!   kernel.
//! * On the AVX2 kernel, where the code is twice (2-D) or up to four times (3-D) as wide as
//!   the coordinates, bit interleaves are 16-entry nibble-table lookups (`vpshufb`) on
//!   32 bytes at a time ([`nib2`], [`nib3`]) instead of magic-number spreads in lanes of
//!   the code's width; 2-D Hilbert runs its prefix scan in lanes of the coordinates'
//!   width and interleaves (splits) the index bits with the same tables, except that the
//!   odd index bits of `uint32` coordinates come from a state machine stepped two levels
//!   a 16-entry lookup on byte planes ([`h2nib`]). 2-D Morton codes
//!   as wide as the coordinates (`uint8`, at most 4 bits) are one 16-entry lookup per
//!   coordinate byte ([`nib2::cols8`], [`nib2::rows8`], [`nib2::dec8`]); 3-D `uint16`
//!   codes into `uint8` look up the nibbles of the packed low and high code bytes
//!   ([`nib3::decode16`]). 3-D Hilbert decoding starts with the same de-interleave
//!   ([`nib3_decode_prefix`]) into the lanes Skilling's steps run in, and 3-D Hilbert
//!   encoding ends with the interleave ([`nib3_encode_prefix`]).
//! * With AVX-512 VBMI and GFNI, 2-D Morton codes twice as wide as the coordinates pair
//!   the coordinate bytes into 16-bit lanes by `vpermb` and interleave their bits by bit
//!   selects and one GF(2) affine step per byte ([`m2z`]); decoding runs the inverse.
//!   2-D Hilbert encoding of `uint16` and `uint32` coordinates takes its odd index bits
//!   from the state machine of [`h2nib`] in 64-entry `vpermb` tables.
use std::marker::PhantomData;
use std::sync::OnceLock;

use rayon::prelude::*;

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
        // Each level also takes the features of those below it (AVX2 and BMI2, which its
        // code is compiled with).
        let avx2 = has!("avx2") && has!("bmi2");
        if avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
            return Kernel::Avx512;
        }
        if avx2 {
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

/// Whether the CPU is AMD's (CPUID vendor `AuthenticAMD`), where some portable paths were
/// measured to run best another way than on the Intel Xeon they were first tuned on.
fn amd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AMD: OnceLock<bool> = OnceLock::new();
        *AMD.get_or_init(|| {
            let r = std::arch::x86_64::__cpuid(0);
            [r.ebx, r.edx, r.ecx] == [0x6874_7541, 0x6974_6e65, 0x444d_4163]
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Which code to compute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Curve {
    /// Hilbert index (the curve of `hilbertcurve`).
    Hilbert,
    /// Morton code; `msb`: coordinate 0 most significant in each group.
    Morton { msb: bool },
}

use super::hilbert::Table;
use super::{as_unsigned, check_width, low_mask, Coord};

/// An unsigned integer type a code or coordinate is written as, with the bit operations the
/// kernels run in its lanes.
pub trait Word:
    Coord + Default + PartialEq + std::fmt::Debug + std::ops::BitOr<Output = Self>
{
    /// Bits of the type.
    const BITS: u32;
    /// The lane type that holds two coordinates of this type (2-D decoding).
    type Wide2: Word;
    /// The low bits of `v`.
    fn from_u64(v: u64) -> Self;
    /// Bitwise or.
    fn or(self, o: Self) -> Self;
    /// Bitwise exclusive or.
    fn xor(self, o: Self) -> Self;
    /// Bitwise and.
    fn and(self, o: Self) -> Self;
    /// All ones where bit `q` of `self` is set, else zero (`q < BITS`).
    fn bit_mask(self, q: u32) -> Self;
    /// Left shift (`s < BITS`).
    fn shl(self, s: u32) -> Self;
    /// Right shift (`s < BITS`).
    fn shr(self, s: u32) -> Self;
    /// The low `BITS / 2` bits moved to the even bits.
    #[inline(always)]
    fn part1(self) -> Self {
        self.part1s::<0>()
    }
    /// [`Word::part1`] shifted left by `S` (0 or 1), the shift applied to the input and
    /// the masks, so that no shift follows the last step: LLVM turns a step's disjoint
    /// `x | x << s` into `x * (1 + 2^s)` and a shift after it into one multiply by a
    /// constant that is no `2^n + 1`, which SSE2 has no instruction for in 32-bit lanes
    /// (two `pmuludq` and four shuffles); `x * (1 + 2^s)` alone is a shift and an add.
    #[inline(always)]
    fn part1s<const S: u32>(self) -> Self {
        self.part1k::<5, S>()
    }
    /// [`Word::part1s`] in at most `K` of its steps (those of the largest shifts left
    /// out): exact for values below `2^nbits` where `K >= `[`steps2`]`(nbits)` (the same
    /// count: a step of a shift by `s` is needed where `nbits > s`).
    fn part1k<const K: u32, const S: u32>(self) -> Self;
    /// Inverse of [`Word::part1`].
    fn compact1(self) -> Self;
    /// The low `BITS / 3` bits moved to every third bit.
    #[inline(always)]
    fn part2(self) -> Self {
        self.part2k::<5, 0>()
    }
    /// Inverse of [`Word::part2`].
    #[inline(always)]
    fn compact2(self) -> Self {
        self.compact2k::<5>()
    }
    /// [`Word::part2`] in at most `K` of its steps (those of the largest shifts left
    /// out), shifted left by `S` (0-2, as [`Word::part1s`]): exact for values below
    /// `2^nbits` where `K >= `[`steps2`]`(nbits)` (bits shifted past the word are lost).
    fn part2k<const K: u32, const S: u32>(self) -> Self;
    /// [`Word::compact2`] in at most `K` steps: exact for the spread of a value below
    /// `2^nbits` where `K >= `[`steps2`]`(nbits)` (other bits of the word may give
    /// meaningless results).
    fn compact2k<const K: u32>(self) -> Self;
    /// 2-D Hilbert index of `(x, y)` (`nbits <= BITS / 2`).
    fn h2_enc(x: Self, y: Self, nbits: u32) -> Self;
    /// The even (`.0`) and odd (`.1`) bits of the 2-D Hilbert index of `(x, y)`, computed on
    /// the low `h` bits of the lanes (`nbits <= h`; `h` = `BITS` or `BITS / 2`, a
    /// constant after inlining), aligned to the top of those `h` bits: the index is their
    /// bit interleave shifted right by `2 * (h - nbits)`.
    fn h2_bits(x: Self, y: Self, nbits: u32, h: u32) -> (Self, Self);
    /// Inverse of [`Word::h2_enc`].
    fn h2_dec(self, nbits: u32) -> (Self, Self);
    /// Inverse of [`Word::h2_bits`]: `(x, y)` from the even (`i0`) and odd (`i1`) bits of
    /// the index, each aligned to the top of the low `h` bits as `h2_bits` returns them
    /// (`nbits <= h`; `h` = `BITS` or `BITS / 2`).
    fn h2_unbits(i0: Self, i1: Self, nbits: u32, h: u32) -> (Self, Self);
}

macro_rules! impl_word {
    ($($t:ty => $w2:ty);*) => {$(
        impl Word for $t {
            const BITS: u32 = <$t>::BITS;
            type Wide2 = $w2;
            #[inline(always)]
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn or(self, o: Self) -> Self {
                self | o
            }
            #[inline(always)]
            fn xor(self, o: Self) -> Self {
                self ^ o
            }
            #[inline(always)]
            fn and(self, o: Self) -> Self {
                self & o
            }
            #[inline(always)]
            fn bit_mask(self, q: u32) -> Self {
                ((self >> q) & 1).wrapping_neg()
            }
            #[inline(always)]
            fn shl(self, s: u32) -> Self {
                self.wrapping_shl(s)
            }
            #[inline(always)]
            fn shr(self, s: u32) -> Self {
                self.wrapping_shr(s)
            }
            #[inline(always)]
            fn part1k<const K: u32, const S: u32>(self) -> Self {
                const H: u32 = <$t>::BITS / 2;
                let m = |c: u64| (c as $t).wrapping_shl(S);
                let mut x = (self & (<$t>::MAX >> H)).wrapping_shl(S);
                if H > 16 && K >= 5 {
                    x = (x | x.wrapping_shl(16)) & m(0x0000_FFFF_0000_FFFF);
                }
                if H > 8 && K >= 4 {
                    x = (x | x.wrapping_shl(8)) & m(0x00FF_00FF_00FF_00FF);
                }
                if H > 4 && K >= 3 {
                    x = (x | x.wrapping_shl(4)) & m(0x0F0F_0F0F_0F0F_0F0F);
                }
                if K >= 2 {
                    x = (x | x.wrapping_shl(2)) & m(0x3333_3333_3333_3333);
                }
                if K >= 1 {
                    x = (x | x.wrapping_shl(1)) & m(0x5555_5555_5555_5555);
                }
                x
            }
            #[inline(always)]
            fn compact1(self) -> Self {
                const H: u32 = <$t>::BITS / 2;
                let mut x = self & (0x5555_5555_5555_5555_u64 as $t);
                x = (x | x.wrapping_shr(1)) & (0x3333_3333_3333_3333_u64 as $t);
                x = (x | x.wrapping_shr(2)) & (0x0F0F_0F0F_0F0F_0F0F_u64 as $t);
                if H > 4 {
                    x = (x | x.wrapping_shr(4)) & (0x00FF_00FF_00FF_00FF_u64 as $t);
                }
                if H > 8 {
                    x = (x | x.wrapping_shr(8)) & (0x0000_FFFF_0000_FFFF_u64 as $t);
                }
                if H > 16 {
                    x = (x | x.wrapping_shr(16)) & (0xFFFF_FFFF_u64 as $t);
                }
                x
            }
            #[inline(always)]
            fn part2k<const K: u32, const S: u32>(self) -> Self {
                const B: u32 = <$t>::BITS / 3;
                let m = |c: u64| (c as $t).wrapping_shl(S);
                let mut x = (self & (<$t>::MAX >> (<$t>::BITS - B))).wrapping_shl(S);
                if 2 * B > 32 && K >= 5 {
                    x = (x | x.wrapping_shl(32)) & m(0x001F_0000_0000_FFFF);
                }
                if 2 * B > 16 && K >= 4 {
                    x = (x | x.wrapping_shl(16)) & m(0x001F_0000_FF00_00FF);
                }
                if 2 * B > 8 && K >= 3 {
                    x = (x | x.wrapping_shl(8)) & m(0x100F_00F0_0F00_F00F);
                }
                if 2 * B > 4 && K >= 2 {
                    x = (x | x.wrapping_shl(4)) & m(0x10C3_0C30_C30C_30C3);
                }
                if K >= 1 {
                    x = (x | x.wrapping_shl(2)) & m(0x1249_2492_4924_9249);
                }
                x
            }
            #[inline(always)]
            fn compact2k<const K: u32>(self) -> Self {
                const B: u32 = <$t>::BITS / 3;
                let mut x = self & (0x1249_2492_4924_9249_u64 as $t);
                if K >= 1 {
                    x = (x | x.wrapping_shr(2)) & (0x10C3_0C30_C30C_30C3_u64 as $t);
                }
                if 2 * B > 4 && K >= 2 {
                    x = (x | x.wrapping_shr(4)) & (0x100F_00F0_0F00_F00F_u64 as $t);
                }
                if 2 * B > 8 && K >= 3 {
                    x = (x | x.wrapping_shr(8)) & (0x001F_0000_FF00_00FF_u64 as $t);
                }
                if 2 * B > 16 && K >= 4 {
                    x = (x | x.wrapping_shr(16)) & (0x001F_0000_0000_FFFF_u64 as $t);
                }
                if 2 * B > 32 && K >= 5 {
                    x = (x | x.wrapping_shr(32)) & (0x1F_FFFF_u64 as $t);
                }
                x & (<$t>::MAX >> (<$t>::BITS - B))
            }
            #[inline(always)]
            fn h2_enc(x: Self, y: Self, nbits: u32) -> Self {
                const H: u32 = <$t>::BITS / 2;
                let (i0, i1) = Self::h2_bits(x, y, nbits, H);
                let h = i1.part1s::<1>() | i0.part1();
                h.wrapping_shr(2 * (H - nbits))
            }
            #[inline(always)]
            fn h2_bits(x: Self, y: Self, nbits: u32, h: u32) -> (Self, Self) {
                // Coordinate 0 (`x`) supplies the more significant bit of each pair, as
                // `hilbertcurve`. The coordinates are aligned to the top of the low `h`
                // bits.
                let x = x.wrapping_shl(h - nbits);
                let y = y.wrapping_shl(h - nbits);
                let m: $t = <$t>::MAX >> (<$t>::BITS - h);
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
                // The strides 2, 4, .. below h / 2, unrolled by hand (a loop here keeps
                // LLVM from vectorizing the caller's loop over points).
                macro_rules! round {
                    ($s:expr) => {
                        if $s < h / 2 {
                            let s = $s;
                            let (a, b, c, d) = (aa, bb, cc, dd);
                            aa = (a & a.wrapping_shr(s)) ^ (b & b.wrapping_shr(s));
                            bb = (a & b.wrapping_shr(s)) ^ (b & (a ^ b).wrapping_shr(s));
                            cc ^= (a & c.wrapping_shr(s)) ^ (b & d.wrapping_shr(s));
                            dd ^= (b & c.wrapping_shr(s)) ^ ((a ^ b) & d.wrapping_shr(s));
                        }
                    };
                }
                round!(2);
                round!(4);
                round!(8);
                round!(16);
                {
                    let (a, b, c, d) = (aa, bb, cc, dd);
                    let s = h / 2;
                    cc ^= (a & c.wrapping_shr(s)) ^ (b & d.wrapping_shr(s));
                    dd ^= (b & c.wrapping_shr(s)) ^ ((a ^ b) & d.wrapping_shr(s));
                }
                let a = cc ^ (cc >> 1);
                let b = dd ^ (dd >> 1);
                let i0 = x ^ y;
                let i1 = b | (m ^ (i0 | a));
                (i0, i1)
            }
            #[inline(always)]
            fn h2_dec(self, nbits: u32) -> (Self, Self) {
                const H: u32 = <$t>::BITS / 2;
                let i = self.wrapping_shl(2 * (H - nbits));
                Self::h2_unbits(i.compact1(), (i >> 1).compact1(), nbits, H)
            }
            #[inline(always)]
            fn h2_unbits(i0: Self, i1: Self, nbits: u32, h: u32) -> (Self, Self) {
                #[inline(always)]
                fn prefix(mut x: $t, h: u32) -> $t {
                    // Bit j: XOR of bits j..h of x.
                    if h > 32 {
                        x ^= x.wrapping_shr(32);
                    }
                    if h > 16 {
                        x ^= x.wrapping_shr(16);
                    }
                    if h > 8 {
                        x ^= x.wrapping_shr(8);
                    }
                    if h > 4 {
                        x ^= x.wrapping_shr(4);
                    }
                    x ^= x >> 2;
                    x ^ (x >> 1)
                }
                let m: $t = <$t>::MAX >> (<$t>::BITS - h);
                let t0 = (i0 | i1) ^ m;
                let t1 = i0 & i1;
                let a = ((i0 ^ m) & prefix(t1, h)) | (i0 & prefix(t0, h));
                ((a ^ i1) >> (h - nbits), (a ^ i0 ^ i1) >> (h - nbits))
            }
        }
    )*};
}
impl_word!(u8 => u16; u16 => u32; u32 => u64; u64 => u64);

/// Coordinates: the rows of a row-major `(n, D)` array, or `D` columns of length `n`.
#[derive(Clone, Copy)]
pub enum Coords<'a, T> {
    /// Row-major `(n, D)`.
    Rows(&'a [T]),
    /// `D` separate arrays of equal length.
    Columns(&'a [&'a [T]]),
}

/// Where decoded coordinates go: a row-major `(n, D)` slice, or `D` column slices of
/// length `n` (the third empty for `D = 2`).
pub enum Dest<'a, O> {
    /// Row-major `(n, D)`.
    Rows(&'a mut [O]),
    /// `D` separate arrays.
    Columns(Vec<&'a mut [O]>),
}

/// Rows per work item (one interrupt check, one rayon task).
const CHUNK: usize = 8192;
/// Rows per level-major block of the 3-D Hilbert kernels.
const BLOCK: usize = 256;

/// One chunk of input: `(rows, D)` or up to three columns.
#[derive(Clone, Copy)]
enum Src<'a, U> {
    Rows(&'a [U]),
    Cols([&'a [U]; 3]),
}

impl<U> Src<'_, U> {
    /// Whether the chunk is rows.
    fn rows(&self) -> bool {
        matches!(self, Src::Rows(_))
    }
}

/// One chunk of output coordinates.
enum Dst<'a, O> {
    Rows(&'a mut [O]),
    Cols([&'a mut [O]; 3]),
}

impl<'a, O> Dst<'a, O> {
    /// Whether the chunk is rows.
    fn rows(&self) -> bool {
        matches!(self, Dst::Rows(_))
    }

    /// The byte pointers a 3-D kernel writes `n` points through (the rows at `[0]`) and
    /// whether they are rows; panics unless `n` points fit.
    fn ptrs3(&mut self, n: usize) -> ([*mut u8; 3], bool) {
        match self {
            Dst::Rows(o) => {
                assert!(o.len() >= 3 * n);
                ([o.as_mut_ptr() as *mut u8; 3], true)
            }
            Dst::Cols(c) => {
                assert!(c.iter().all(|c| c.len() >= n));
                ([0, 1, 2].map(|i| c[i].as_mut_ptr() as *mut u8), false)
            }
        }
    }

    /// The points (of `d` coordinates) after the first `done`.
    fn after(self, d: usize, done: usize) -> Self {
        match self {
            Dst::Rows(o) => Dst::Rows(&mut o[d * done..]),
            Dst::Cols([x, y, z]) => {
                let z = if d == 3 { &mut z[done..] } else { z };
                Dst::Cols([&mut x[done..], &mut y[done..], z])
            }
        }
    }
}

#[inline(always)]
fn cast<A: Word, B: Word>(a: A) -> B {
    B::from_u64(a.to_u64())
}

// --- the compute step ---------------------------------------------------------------------

// The per-point operations, as types rather than closures: a closure is a function of its
// own that LLVM may decline to inline into the SIMD copies (it then runs as one scalar call
// per point, 10x slower); these methods are `#[inline(always)]`.

/// One code from two coordinates.
trait F2<U, O>: Copy {
    fn f(&self, a: U, b: U) -> O;
}
/// One code from three coordinates.
trait F3<U, O>: Copy {
    fn f(&self, a: U, b: U, c: U) -> O;
}
/// Two coordinates from one code.
trait G2<U, O>: Copy {
    fn g(&self, c: U) -> (O, O);
}
/// Three coordinates from one code.
trait G3<U, O>: Copy {
    fn g(&self, c: U) -> [O; 3];
}

/// 2-D Hilbert encoding of `nbits` bits.
#[derive(Clone, Copy)]
struct H2E(u32);
impl<U: Word, O: Word> F2<U, O> for H2E {
    #[inline(always)]
    fn f(&self, a: U, b: U) -> O {
        O::h2_enc(cast(a), cast(b), self.0)
    }
}
/// 2-D Hilbert decoding of `nbits` bits (in lanes of `O::Wide2`).
#[derive(Clone, Copy)]
struct H2D(u32);
impl<U: Word, O: Word> G2<U, O> for H2D {
    #[inline(always)]
    fn g(&self, c: U) -> (O, O) {
        let (a, b) = cast::<U, O::Wide2>(c).h2_dec(self.0);
        (cast(a), cast(b))
    }
}
/// 2-D Hilbert coding seven levels a table lookup, for the portable kernel (whose lane
/// code runs its prefix scans at 2-4 lanes a vector). The curve's machine has four states
/// (the 8 of [`super::hilbert::Table`] merged where they act alike). Two layouts of a
/// table: indexed by the state (at bit 14) and the 14 input bits, each entry the 14
/// output bits below the next state, already at bit 14, so that one AND gives the next
/// index's high part (hilbertsfc's 3-D layout); or indexed by the 14 input bits alone,
/// packing the result for every state (16 bits each), so that the lookups of one point do
/// not wait for one another, only the shift that picks the state's field does
/// (hilbertsfc's 2-D layout). Decoding takes the first (nbits 17-21 2.30-2.45 against
/// 2.99-3.18 ns a point), encoding too up to three steps (nbits 9-16 1.34-2.23 against
/// 1.51-2.44) and the second from four (nbits 22-28 4.78-4.95 against 4.98-5.13, 29-32
/// 6.04-6.07 against 6.87-6.88, a busier run; Rust harness, 1M points, minimum of four
/// or five alternating runs). A width that is no multiple of 7 starts above the point,
/// in a state from which the missing levels of zero coordinates give index bits 0 and
/// lead to the initial state.
mod h2tile {
    use super::*;

    /// The `nbits` the portable kernel decodes by the tiles: two to four steps, except
    /// nbits 15-16, where the lane code runs in 32-bit lanes. Rust harness, 1M points, ns
    /// a point, tiles against lane code: nbits 9-14 1.28-1.39 against 1.64-1.70; 15-16
    /// 2.97-3.08 against 2.35-2.38; 22-27 3.48-3.54 against 3.64-3.67; 29-32 6.36-6.39
    /// against 5.19-5.21; nbits 8, in 16-bit lanes, 1.59 against 0.84-1.03; at one step,
    /// nbits 1-7, 0.87-0.92 against 0.84-0.90 (the figures at nbits 1-8, 15-16 and 29-32
    /// from a busier run). With [`DecWide`] (three and four steps), against hilbertsfc
    /// (both held to SSE2): nbits 15-16 0.87-0.93x (lane code 0.72-0.76x), 28 0.95-0.96x
    /// (1.04-1.07x), 30-32 0.94-0.97x (0.86-0.89x).
    pub(super) fn decodes(nbits: u32) -> bool {
        (9..=14).contains(&nbits) || (17..=28).contains(&nbits)
    }

    pub(super) struct Tiles {
        /// `s << 14 | x7 << 7 | y7` -> `next << 14 | h14`.
        enc: Box<[u16; 1 << 16]>,
        /// `x7 << 7 | y7` -> for each state `s`, at bits `16 s`: `h14 << 2 | next`.
        enc_wide: Box<[u64; 1 << 14]>,
        /// `s << 14 | h14` -> `next << 14 | x7 << 7 | y7`.
        dec: Box<[u16; 1 << 16]>,
        /// `h14` -> for each state `s`, at bits `16 s`: `next << 14 | x7 << 7 | y7`.
        dec_wide: Box<[u64; 1 << 14]>,
        /// Eight levels a step: `s << 16 | x8 << 8 | y8` -> `next << 16 | h16` (1 MiB).
        enc8: Box<[u32; 1 << 18]>,
        /// Per number of missing levels (0-6): the state to start from (those levels give
        /// index bits 0, so a code needs no bits above its own).
        start: [u32; 7],
        /// [`Tiles::start`] for steps of eight levels (0-7 missing).
        start8: [u32; 8],
    }

    /// The tables; `None` if the machine does not reduce to four states (never for this
    /// curve: the portable kernel's tests run every nbits through them), leaving the
    /// caller on the lane code.
    pub(super) fn tiles() -> Option<&'static Tiles> {
        static T: OnceLock<Option<Tiles>> = OnceLock::new();
        T.get_or_init(build).as_ref()
    }

    fn build() -> Option<Tiles> {
        // m[s][v] = (index bits, next state).
        let m = Table::get(2).machine();
        if m.len() != 4 {
            return None;
        }
        let dm = Table::inverse(&m);
        let mut enc = Box::new([0u16; 1 << 16]);
        let mut enc_wide = Box::new([0u64; 1 << 14]);
        let mut dec = Box::new([0u16; 1 << 16]);
        let mut dec_wide = Box::new([0u64; 1 << 14]);
        for i in 0..1usize << 14 {
            for s0 in 0..4 {
                let (mut s, mut h) = (s0, 0usize);
                let (mut x, mut y) = (0usize, 0usize);
                let mut t = s0;
                for l in (0..7).rev() {
                    let v = ((i >> (7 + l)) & 1) << 1 | ((i >> l) & 1);
                    let (o, nx) = m[s][v];
                    h = h << 2 | o as usize;
                    s = nx as usize;
                    let (v, nx) = dm[t][(i >> (2 * l)) & 3];
                    x = x << 1 | (v >> 1) as usize;
                    y = y << 1 | (v & 1) as usize;
                    t = nx as usize;
                }
                enc[s0 << 14 | i] = (s << 14 | h) as u16;
                enc_wide[i] |= ((h << 2 | s) as u64) << (16 * s0);
                dec[s0 << 14 | i] = (t << 14 | x << 7 | y) as u16;
                dec_wide[i] |= ((t << 14 | x << 7 | y) as u64) << (16 * s0);
            }
        }
        let mut enc8 = vec![0u32; 1 << 18].into_boxed_slice();
        for (k, e) in enc8.iter_mut().enumerate() {
            let (mut s, mut h) = (k >> 16, 0u32);
            for l in (0..8).rev() {
                let (o, nx) = m[s][((k >> (8 + l)) & 1) << 1 | ((k >> l) & 1)];
                h = h << 2 | o as u32;
                s = nx as usize;
            }
            *e = (s as u32) << 16 | h;
        }
        let mut start = [0u32; 7];
        for (pad, st) in start.iter_mut().enumerate() {
            *st = Table::padded_start(&m, pad as u32)?;
        }
        let mut start8 = [0u32; 8];
        for (pad, st) in start8.iter_mut().enumerate() {
            *st = Table::padded_start(&m, pad as u32)?;
        }
        Some(Tiles {
            enc,
            enc_wide,
            dec,
            dec_wide,
            enc8: enc8.try_into().ok()?,
            start,
            start8,
        })
    }

    /// Codes of one chunk of points of `nbits` bits; returns the OR of the input values.
    /// Every width runs in two passes a block ([`encode_one`], [`two_pass`]): the steps'
    /// table indices first, in vector lanes, then the lookups. Against the lookups with the indices computed in their own loop
    /// (ratios to hilbertsfc's time, both held to SSE2, runs alternating, separate arrays
    /// of 1M points): nbits 8 0.50-0.52x -> 0.42-0.44x, 9-14 0.90-1.00x -> 0.77-0.87x,
    /// 15-16 0.67-0.71x -> 0.56-0.62x, 17-21 0.93-1.07x -> 0.96-1.03x, 25-28 1.02-1.04x
    /// -> 0.91-1.01x. The steps:
    /// - nbits 1-7: one step of seven levels by [`encode_one`] (nbits 5-7 had run the lane
    ///   code at 1.9-2.3x, the 7-bit lookup gives 0.65-0.78x; nbits 1-4 0.75-0.87x). One
    ///   step of eight levels, whose table is 1 MiB against 32 KiB a state, gave
    ///   0.78-0.96x against 0.74-0.90x; [`two_pass`] 1.04-1.23x (one run).
    /// - nbits 8-16: one or two steps of eight levels by [`Tiles::enc8`], one step fewer
    ///   than seven levels a step take at nbits 8 and 15-16, and faster at the same two
    ///   steps at nbits 9-14 (one pass: nbits 8 / 9-14 / 15-16 0.99-1.00x / 0.94-0.97x /
    ///   1.00-1.06x -> 0.53x / 0.85-0.92x / 0.62-0.65x); at nbits 9-16 only where a
    ///   core's L2 cache holds the table ([`l2_holds_enc8`]), else as from nbits 17.
    /// - nbits 17-32: three to five steps of seven levels by the packed table
    ///   [`Tiles::enc_wide`], whose loads do not wait on each other. Eight-level steps,
    ///   each looked up by the state the step before found, in two passes too: nbits
    ///   22-24 0.92-1.00x against 0.90-0.93x, 29-32 1.07-1.15x against 0.93-0.98x; in
    ///   one pass nbits 17-21 / 25-28 0.99-1.17x / 1.13-1.21x.
    ///
    /// The number of steps is a constant, so that the shifts are by constants (a shift by
    /// a variable is 2-3 instructions on x86-64 without BMI2), except the packed table's
    /// shift by the state after its first step.
    #[inline(always)]
    pub(super) fn encode_chunk<U: Word, O: Word>(
        t: &'static Tiles,
        src: Src<'_, U>,
        out: &mut [O],
        nbits: u32,
    ) -> U {
        if (1..=7).contains(&nbits) {
            return encode_one(t, src, out, t.start[(7 - nbits) as usize]);
        }
        if nbits >= 17 || (nbits >= 9 && !l2_holds_enc8()) {
            let w = &t.enc_wide;
            let g = nbits.div_ceil(7);
            // The start state a constant too (the first step's shift by one).
            return match (g, t.start[(7 * g - nbits) as usize]) {
                (2, 0) => two_pass::<U, O, 2, 7>(src, out, |i, k| wide::<2, 0>(w, i, k)),
                (2, 1) => two_pass::<U, O, 2, 7>(src, out, |i, k| wide::<2, 1>(w, i, k)),
                (2, 2) => two_pass::<U, O, 2, 7>(src, out, |i, k| wide::<2, 2>(w, i, k)),
                (2, _) => two_pass::<U, O, 2, 7>(src, out, |i, k| wide::<2, 3>(w, i, k)),
                (3, 0) => two_pass::<U, O, 3, 7>(src, out, |i, k| wide::<3, 0>(w, i, k)),
                (3, 1) => two_pass::<U, O, 3, 7>(src, out, |i, k| wide::<3, 1>(w, i, k)),
                (3, 2) => two_pass::<U, O, 3, 7>(src, out, |i, k| wide::<3, 2>(w, i, k)),
                (3, _) => two_pass::<U, O, 3, 7>(src, out, |i, k| wide::<3, 3>(w, i, k)),
                (4, 0) => two_pass::<U, O, 4, 7>(src, out, |i, k| wide::<4, 0>(w, i, k)),
                (4, 1) => two_pass::<U, O, 4, 7>(src, out, |i, k| wide::<4, 1>(w, i, k)),
                (4, 2) => two_pass::<U, O, 4, 7>(src, out, |i, k| wide::<4, 2>(w, i, k)),
                (4, _) => two_pass::<U, O, 4, 7>(src, out, |i, k| wide::<4, 3>(w, i, k)),
                (_, 0) => two_pass::<U, O, 5, 7>(src, out, |i, k| wide::<5, 0>(w, i, k)),
                (_, 1) => two_pass::<U, O, 5, 7>(src, out, |i, k| wide::<5, 1>(w, i, k)),
                (_, 2) => two_pass::<U, O, 5, 7>(src, out, |i, k| wide::<5, 2>(w, i, k)),
                (_, _) => two_pass::<U, O, 5, 7>(src, out, |i, k| wide::<5, 3>(w, i, k)),
            };
        }
        let e = &t.enc8;
        let g = nbits.div_ceil(8);
        let s = t.start8[(8 * g - nbits) as usize] << 16;
        match g {
            1 => two_pass::<U, O, 1, 8>(src, out, |i, k| eight::<1>(e, s, i, k)),
            _ => two_pass::<U, O, 2, 8>(src, out, |i, k| eight::<2>(e, s, i, k)),
        }
    }

    /// Whether a core's L2 cache holds [`Tiles::enc8`] (1 MiB) with room to spare: at
    /// least 2 MiB (CPUID leaf `0x8000_0006`, which Intel and AMD both fill; other
    /// architectures: assumed, as measured only on x86-64). Where it does not, encoding at
    /// nbits 9-16 takes 7-level steps in [`Tiles::enc_wide`] (128 KiB), one step more
    /// but each lookup an L2 hit: on an AMD EPYC (Zen 3, 512 KiB L2 a core) nbits 9-14
    /// 1.20-1.36x -> 0.92-0.95x hilbertsfc's time, 15-16 0.92-1.09x -> 0.85-0.96x (both
    /// held to SSE2, runs alternating); on the Intel Xeon (2 MiB L2) where the 8-level
    /// steps were chosen they ran nbits 9-14 at 0.85-0.92x.
    fn l2_holds_enc8() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            static L2: OnceLock<u32> = OnceLock::new();
            // A leaf past the CPU's maximum returns another leaf's data: checked first.
            let kib = *L2.get_or_init(|| {
                use std::arch::x86_64::__cpuid;
                if __cpuid(0x8000_0000).eax < 0x8000_0006 {
                    return 0;
                }
                __cpuid(0x8000_0006).ecx >> 16
            });
            kib >= 2048
        }
        #[cfg(not(target_arch = "x86_64"))]
        true
    }

    /// The index of a point in `G` steps of seven levels by [`Tiles::enc_wide`] from
    /// state `S`, the steps' table indices in `idx[..][k]` ([`two_pass`]).
    #[inline(always)]
    fn wide<const G: usize, const S: u32>(
        tab: &[u64; 1 << 14],
        idx: &[[u16; BLOCK]; G],
        k: usize,
    ) -> u64 {
        let (mut s, mut h) = (S, 0u64);
        for c in (0..G).rev() {
            let v = (tab[(idx[c][k] & 0x3fff) as usize] >> (16 * s)) as u32;
            h = h.wrapping_shl(14) | ((v >> 2) & 0x3fff) as u64;
            s = v & 3;
        }
        h
    }

    /// The index of a point in `G` steps of eight levels by [`Tiles::enc8`] from state
    /// `s0` (at bit 16), as [`wide`]; each step's lookup takes the state the step before
    /// found.
    #[inline(always)]
    fn eight<const G: usize>(
        tab: &[u32; 1 << 18],
        s0: u32,
        idx: &[[u16; BLOCK]; G],
        k: usize,
    ) -> u64 {
        let (mut s, mut h) = (s0, 0u64);
        for c in (0..G).rev() {
            // The mask keeps the index in the table's range (no bounds check).
            let e = tab[((s | idx[c][k] as u32) & 0x3ffff) as usize];
            h = h << 16 | (e & 0xffff) as u64;
            s = e & !0xffff;
        }
        h
    }

    /// Bits `sh..sh + W` of `a` above those of `b`: a step's table index (0 where `sh`
    /// is past the type).
    #[inline(always)]
    fn key<U: Word, const W: u32>(a: U, b: U, sh: u32) -> u16 {
        if sh >= U::BITS {
            return 0;
        }
        let m = U::from_u64((1u64 << W) - 1);
        if U::BITS < 16 {
            let m = m.to_u64();
            return ((a.to_u64() >> sh & m) << W | (b.to_u64() >> sh & m)) as u16;
        }
        (a.shr(sh).and(m).shl(W).or(b.shr(sh).and(m))).to_u64() as u16
    }

    /// Codes of one chunk in two passes a block of [`BLOCK`] points: the `G` steps'
    /// table indices (`W` bits of each coordinate, [`key`]) into a buffer a step, and the
    /// inputs' OR, in loops LLVM vectorizes; then `look(&buf, k)`, point `k`'s code, in a
    /// loop of the lookups alone. A coordinate of more than `nbits` bits gives a
    /// meaningless code its caller discards (the range check on the OR).
    #[inline(always)]
    fn two_pass<U: Word, O: Word, const G: usize, const W: u32>(
        src: Src<'_, U>,
        out: &mut [O],
        look: impl Fn(&[[u16; BLOCK]; G], usize) -> u64,
    ) -> U {
        let mut acc = U::default();
        let mut idx = [[0u16; BLOCK]; G];
        match src {
            Src::Cols([x, y, _]) => {
                let n = out.len().min(x.len()).min(y.len());
                let it = out[..n]
                    .chunks_mut(BLOCK)
                    .zip(x[..n].chunks(BLOCK))
                    .zip(y[..n].chunks(BLOCK));
                for ((o, x), y) in it {
                    for (c, ic) in idx.iter_mut().enumerate() {
                        for ((i, &a), &b) in ic.iter_mut().zip(x).zip(y) {
                            *i = key::<U, W>(a, b, W * c as u32);
                        }
                    }
                    acc = acc.or(or_all(x)).or(or_all(y));
                    for (k, o) in o.iter_mut().enumerate() {
                        *o = O::from_u64(look(&idx, k));
                    }
                }
            }
            Src::Rows(r) => {
                let n = out.len().min(r.len() / 2);
                for (o, r) in out[..n].chunks_mut(BLOCK).zip(r[..2 * n].chunks(2 * BLOCK)) {
                    for (c, ic) in idx.iter_mut().enumerate() {
                        for (i, p) in ic.iter_mut().zip(r.chunks_exact(2)) {
                            *i = key::<U, W>(p[0], p[1], W * c as u32);
                        }
                    }
                    acc = acc.or(or_all(r));
                    for (k, o) in o.iter_mut().enumerate() {
                        *o = O::from_u64(look(&idx, k));
                    }
                }
            }
        }
        acc
    }

    /// Codes of one chunk at one step (nbits 1-7) from state `s`, in two passes a block:
    /// the table indices and the inputs' OR in lanes (a loop LLVM vectorizes), then one
    /// lookup a point, a loop of four instructions. In one pass (the lookup in the index
    /// loop) nbits 5 / 6 / 7 ran at 1.07-1.14x / 0.87-1.04x / 0.94-1.00x hilbertsfc's
    /// time, in two 0.74-0.77x / 0.68-0.72x / 0.68-0.70x (both held to SSE2, runs
    /// alternating). Its own loops, not [`two_pass`] with one step: that, with the OR in
    /// a pass of its own, ran at 1.04-1.23x against 0.74-0.90x here (one every-nbits run).
    #[inline(always)]
    fn encode_one<U: Word, O: Word>(
        t: &'static Tiles,
        src: Src<'_, U>,
        out: &mut [O],
        s: u32,
    ) -> U {
        let s = (s << 14) as usize;
        let tab: &[u16; 1 << 14] = t.enc[s..s + (1 << 14)].try_into().expect("2^14");
        let mut acc = U::default();
        let mut idx = [0u16; BLOCK];
        let key = |a: U, b: U| (a.to_u64() << 7 | b.to_u64()) as u16 & 0x3fff;
        let look = |o: &mut [O], idx: &[u16; BLOCK]| {
            for (o, &i) in o.iter_mut().zip(idx) {
                *o = O::from_u64((tab[(i & 0x3fff) as usize] & 0x3fff) as u64);
            }
        };
        match src {
            Src::Cols([x, y, _]) => {
                let n = out.len().min(x.len()).min(y.len());
                let it = out[..n]
                    .chunks_mut(BLOCK)
                    .zip(x[..n].chunks(BLOCK))
                    .zip(y[..n].chunks(BLOCK));
                for ((o, x), y) in it {
                    for ((i, &a), &b) in idx.iter_mut().zip(x).zip(y) {
                        acc = acc.or(a).or(b);
                        *i = key(a, b);
                    }
                    look(o, &idx);
                }
            }
            Src::Rows(r) => {
                let n = out.len().min(r.len() / 2);
                for (o, r) in out[..n].chunks_mut(BLOCK).zip(r[..2 * n].chunks(2 * BLOCK)) {
                    for (i, p) in idx.iter_mut().zip(r.chunks_exact(2)) {
                        acc = acc.or(p[0]).or(p[1]);
                        *i = key(p[0], p[1]);
                    }
                    look(o, &idx);
                }
            }
        }
        acc
    }

    /// Points of one chunk of codes of `nbits` bits ([`decodes`]: two to four steps);
    /// returns the OR of the codes.
    #[inline(always)]
    pub(super) fn decode_chunk<U: Word, O: Word>(
        t: &'static Tiles,
        codes: &[U],
        dst: &mut Dst<'_, O>,
        nbits: u32,
    ) -> U {
        assert!(decodes(nbits));
        let g = nbits.div_ceil(7);
        let s = (t.start[(7 * g - nbits) as usize] << 14) as usize;
        let top: &'static [u16; 1 << 14] = t.dec[s..s + (1 << 14)].try_into().expect("2^14");
        // From three steps the packed table, as in encoding: nbits 20 / 24 0.99-1.02x /
        // 1.01-1.07x -> 0.90-0.93x / 0.87-0.95x hilbertsfc's time, nbits 28 1.04-1.07x
        // (lane code) -> 0.95-0.96x; at two steps the first step's own entries (L1) win.
        let w = &t.dec_wide;
        match (g, s >> 14) {
            (2, _) => put2(codes, dst, Dec::<2>(top, &t.dec)),
            (3, 0) => put2(codes, dst, DecWide::<3, 0>(w)),
            (3, 1) => put2(codes, dst, DecWide::<3, 1>(w)),
            (3, 2) => put2(codes, dst, DecWide::<3, 2>(w)),
            (3, _) => put2(codes, dst, DecWide::<3, 3>(w)),
            (_, 0) => put2(codes, dst, DecWide::<4, 0>(w)),
            (_, 1) => put2(codes, dst, DecWide::<4, 1>(w)),
            (_, 2) => put2(codes, dst, DecWide::<4, 2>(w)),
            (_, _) => put2(codes, dst, DecWide::<4, 3>(w)),
        }
    }

    /// The point of an index in `G` steps by [`Tiles::dec_wide`] from state `S`: each
    /// step's lookup is indexed by the code alone (the state picks the entry's 16 bits),
    /// so the `G` loads do not wait on each other as by [`Dec`].
    #[derive(Clone, Copy)]
    struct DecWide<const G: u32, const S: u32>(&'static [u64; 1 << 14]);
    impl<U: Word, O: Word, const G: u32, const S: u32> G2<U, O> for DecWide<G, S> {
        #[inline(always)]
        fn g(&self, c: U) -> (O, O) {
            let h = c.to_u64();
            let (mut s, mut x, mut y) = (S, 0u64, 0u64);
            for c in (0..G).rev() {
                let q = (h >> (14 * c)) & 0x3fff;
                let e = (self.0[q as usize] >> (16 * s)) as u32 & 0xffff;
                x = x << 7 | ((e >> 7) & 127) as u64;
                y = y << 7 | (e & 127) as u64;
                s = e >> 14;
            }
            (O::from_u64(x), O::from_u64(y))
        }
    }

    /// The point of an index in `G` steps by [`Tiles::dec`] (`.1`), as [`eight`]; the
    /// first step by `.0`, the table's entries for the start state. Used at two steps;
    /// from three, [`DecWide`].
    #[derive(Clone, Copy)]
    struct Dec<const G: u32>(&'static [u16; 1 << 14], &'static [u16; 1 << 16]);
    impl<U: Word, O: Word, const G: u32> G2<U, O> for Dec<G> {
        #[inline(always)]
        fn g(&self, c: U) -> (O, O) {
            let h = c.to_u64();
            let e = self.0[((h >> (14 * (G - 1))) & 0x3fff) as usize] as u64;
            let (mut s, mut x, mut y) = (e & !0x3fff, (e >> 7) & 127, e & 127);
            for c in (0..G - 1).rev() {
                let q = (h >> (14 * c)) & 0x3fff;
                let e = self.1[(s | q) as u16 as usize] as u64;
                x = x << 7 | ((e >> 7) & 127);
                y = y << 7 | (e & 127);
                s = e & !0x3fff;
            }
            (O::from_u64(x), O::from_u64(y))
        }
    }
}

/// 3-D Hilbert coding three levels a table lookup, for the portable kernel (whose lane
/// code runs Skilling's levels at 2-16 lanes a vector). The curve's machine is reduced to
/// its 24 distinct states ([`Table::machine`]); a table entry is indexed by the state (at
/// bits 9 and up) and the level's nine input bits, and holds the nine output bits below
/// the next state, already at bit 9, so that one AND gives the next index's high part
/// (the layout of hilbertsfc's 3-bit tables; 24 KiB, in L1). Decoding moves a level's
/// coordinate bits into three fields of one word by a second table (up to 4 KiB) and one
/// shift a level: 4.9 against 6.3 ns a point at nbits 21 for three shifts and masks, 5.4
/// for a table from the entry's index (120 KiB with the states', past L1), 5.6 for a
/// multiply. The fields are the narrowest that hold the coordinates (8, 16 or 21 bits),
/// so that storing a coordinate needs no mask: with the first step's table below, nbits
/// 6 / 8 1.21 / 1.77 -> 1.01 / 1.57 ns a point (Rust harness, 1M points). A width that
/// is no multiple of 3 starts above the point, as [`h2tile`] does.
mod h3tile {
    use super::*;

    /// Whether the portable kernel encodes by the tiles: rows always (its lane code
    /// transposes them first); separate arrays at nbits 3 and 6-8 (since taken by
    /// [`enc_cols`] at nbits 3 and 6; measured with [`EncGet`]: 0.67 /
    /// 1.26 / 1.79 / 1.80 ns a point against 0.75 / 1.62 / 1.76 / 1.89 for the lane code)
    /// and from nbits 11. Elsewhere the lane code, in 8- or 16-bit lanes, costs less:
    /// nbits 1 / 2 / 4 / 5 0.51 / 0.62 / 0.90 / 1.06 against 0.69 / 0.66 / 1.11 / 1.13,
    /// nbits 10 2.99 against 3.2-3.9 (an older build); nbits 12 / 16 / 21 4.9-6.2 /
    /// 6.0-6.7 / 10.2 for the lane code against 3.3-3.4 / 5.2 / 6.2 (Rust harness, 1M
    /// points).
    pub(super) fn encodes(nbits: u32, rows: bool) -> bool {
        rows || nbits == 3 || (6..=8).contains(&nbits) || nbits > 10
    }

    /// Whether the portable kernel decodes by the tiles: rows always, separate arrays
    /// from nbits 3 ([`dec_cols`]: nbits 3 / 4 / 5 1.09 / 1.27 / 1.32 ns a point
    /// against 1.31 / 1.54 / 1.63 for the lane code, which wins at nbits 2: 0.56 against
    /// 0.85; Rust harness, 1M points, minimum of alternating runs).
    pub(super) fn decodes(nbits: u32, rows: bool) -> bool {
        rows || nbits >= 3
    }

    pub(super) struct Tiles {
        /// `s << 9 | x3 << 6 | y3 << 3 | z3` -> `next << 9 | h9`.
        enc: Box<[u16; 1 << 16]>,
        /// `s << 9 | h9` -> `next << 9 | x3 << 6 | y3 << 3 | z3`.
        dec: Box<[u16; 1 << 16]>,
        /// `x3 << 6 | y3 << 3 | z3` -> `x3 << 16 | y3 << 8 | z3` (nbits <= 8).
        put8: Box<[u32; 512]>,
        /// `x3 << 6 | y3 << 3 | z3` -> `x3 << 32 | y3 << 16 | z3` (nbits <= 16).
        put16: Box<[u64; 512]>,
        /// `x3 << 6 | y3 << 3 | z3` -> `x3 << 42 | y3 << 21 | z3`.
        put21: Box<[u64; 512]>,
        /// Per axis, a coordinate of up to 8 bits -> its bits at their places in the
        /// indices of the three steps (step `k` at bits `9 k`).
        get: Box<[[u32; 256]; 3]>,
        /// Per number of missing levels (0-2): the state to start from, at bit 9.
        start: [u32; 3],
        /// For 1 and 2 missing levels: the first two steps of decoding as one, from
        /// [`Tiles::start`]: `h` of `3 L` bits (`L` = 5 or 4 levels) -> `next << 16 | x << 10 |
        /// y << 5 | z` (`next` at bit 9).
        dec2: [Box<[u32]>; 2],
    }

    /// The tables; `None` if the machine has more than 128 states (never for this curve,
    /// which has 24: the portable kernel's tests run every nbits through them, rows and
    /// columns), leaving the caller on the lane code.
    pub(super) fn tiles() -> Option<&'static Tiles> {
        static T: OnceLock<Option<Tiles>> = OnceLock::new();
        T.get_or_init(build).as_ref()
    }

    fn build() -> Option<Tiles> {
        let m = Table::get(3).machine();
        if m.len() > 128 {
            return None;
        }
        let dm = Table::inverse(&m);
        let mut enc = Box::new([0u16; 1 << 16]);
        let mut dec = Box::new([0u16; 1 << 16]);
        for s0 in 0..m.len() {
            for i in 0..512usize {
                let (mut s, mut h) = (s0, 0usize);
                let (mut t, mut p) = (s0, 0usize);
                for l in (0..3).rev() {
                    let v = ((i >> (6 + l)) & 1) << 2 | ((i >> (3 + l)) & 1) << 1 | ((i >> l) & 1);
                    let (o, nx) = m[s][v];
                    h = h << 3 | o as usize;
                    s = nx as usize;
                    let (v, nx) = dm[t][(i >> (3 * l)) & 7];
                    for a in 0..3 {
                        p |= ((v as usize >> (2 - a)) & 1) << (3 * (2 - a) + l);
                    }
                    t = nx as usize;
                }
                enc[s0 << 9 | i] = (s << 9 | h) as u16;
                dec[s0 << 9 | i] = (t << 9 | p) as u16;
            }
        }
        let mut start = [0u32; 3];
        for (pad, st) in start.iter_mut().enumerate() {
            *st = Table::padded_start(&m, pad as u32)? << 9;
        }
        let dec2 = [1usize, 2].map(|pad| {
            let lv = 6 - pad;
            (0..1usize << (3 * lv))
                .map(|q| {
                    let e1 = dec[start[pad] as usize | q >> 9] as u32;
                    let e2 = dec[(e1 & !511) as usize | (q & 511)] as u32;
                    let f = |sh: u32| ((e1 >> sh) & 7) << 3 | ((e2 >> sh) & 7);
                    (e2 & !511) << 16 | f(6) << 10 | f(3) << 5 | f(0)
                })
                .collect::<Box<[u32]>>()
        });
        Some(Tiles {
            dec2,
            enc,
            dec,
            put8: put_table::<_, 8>(),
            put16: put_table::<_, 16>(),
            put21: put_table::<_, 21>(),
            get: {
                let mut g = Box::new([[0u32; 256]; 3]);
                for (a, ga) in g.iter_mut().enumerate() {
                    for (v, e) in ga.iter_mut().enumerate() {
                        for l in 0..8 {
                            *e |=
                                ((v as u32 >> l) & 1) << (9 * (l / 3) + 3 * (2 - a as u32) + l % 3);
                        }
                    }
                }
                g
            },
            start,
        })
    }

    /// A `put` table of `F`-bit fields ([`Tiles::put8`] ...).
    fn put_table<A: Word, const F: u32>() -> Box<[A; 512]> {
        let mut put = Box::new([A::default(); 512]);
        for (i, e) in put.iter_mut().enumerate() {
            let i = i as u64;
            *e = A::from_u64((i >> 6 & 7) << (2 * F) | (i >> 3 & 7) << F | (i & 7));
        }
        put
    }

    /// The 512 entries of [`Tiles::dec`] or [`Tiles::enc`] for state `s` (at bit 9):
    /// the first step's table, indexed without the state.
    fn top(t: &'static [u16; 1 << 16], s: u32) -> &'static [u16; 512] {
        let s = s as usize;
        t[s..s + 512].try_into().expect("512 entries")
    }

    /// Codes of one chunk of points of `nbits` bits; returns the OR of the input values.
    #[inline(always)]
    pub(super) fn encode_chunk<U: Word, O: Word>(
        t: &'static Tiles,
        src: Src<'_, U>,
        out: &mut [O],
        nbits: u32,
    ) -> U {
        let g = nbits.div_ceil(3);
        let s = t.start[(3 * g - nbits) as usize];
        // Separate arrays at nbits 3, 6 and 11-16 by [`enc_cols`] (both held to SSE2, AMD
        // EPYC Zen 3, Rust harness, 1M points, ns a point, alternating runs: nbits 3 1.24
        // -> 0.75, 6 1.84 -> 1.74, 11 5.46 -> 3.9, 13 7.1 -> 6.4, 16 8.2 -> 7.9). Not at
        // nbits 7-8 (2.8 -> 3.5), whose indices [`EncGet`] builds by three lookups, nor
        // in `u32` lanes from nbits 17 (8.7 -> 8.7, 19 10.2 -> 11.0).
        if let Src::Cols(xyz) = src {
            let e = &*t.enc;
            match nbits {
                3 => return enc_cols::<U, O, 1>(e, s, xyz, out),
                6 => return enc_cols::<U, O, 2>(e, s, xyz, out),
                11..=12 => return enc_cols::<U, O, 4>(e, s, xyz, out),
                13..=15 => return enc_cols::<U, O, 5>(e, s, xyz, out),
                16 => return enc_cols::<U, O, 6>(e, s, xyz, out),
                _ => {}
            }
        }
        // Up to 8 bits a coordinate: the steps' indices built by three lookups (rows:
        // nbits 3 / 6 / 8 0.90 / 1.71 / 2.34 -> 0.76 / 1.22 / 1.78 ns a point).
        if nbits <= 8 {
            let (top, e) = (top(&t.enc, s), &*t.enc);
            return match g {
                1 => map3_or_first(src, out, EncGet::<1>(top, e, &t.get)),
                2 => map3_or_first(src, out, EncGet::<2>(top, e, &t.get)),
                _ => map3_or_first(src, out, EncGet::<3>(top, e, &t.get)),
            };
        }
        // A constant number of steps, as in [`h2tile`].
        match g {
            1 => map3(src, out, Enc::<1>(&t.enc, s)),
            2 => map3(src, out, Enc::<2>(&t.enc, s)),
            3 => map3(src, out, Enc::<3>(&t.enc, s)),
            4 => map3(src, out, Enc::<4>(&t.enc, s)),
            5 => map3(src, out, Enc::<5>(&t.enc, s)),
            6 => map3(src, out, Enc::<6>(&t.enc, s)),
            _ => map3(src, out, Enc::<7>(&t.enc, s)),
        }
    }

    /// Encoding of separate arrays in `G` steps from state `s` (at bit 9) by `enc`
    /// ([`Tiles::enc`]), in two passes a block of [`BLOCK`] points: each step's 9-bit
    /// index out of the coordinates, in 16-bit lanes (nbits <= 16), which vectorize; then
    /// the steps' lookups, eight points at a time, step by step across them (as
    /// [`dec_cols`]). Coordinates wider than `nbits` give meaningless codes the caller
    /// discards (the range check on the returned OR).
    #[inline(always)]
    fn enc_cols<U: Word, O: Word, const G: usize>(
        enc: &'static [u16; 1 << 16],
        s: u32,
        [x, y, z]: [&[U]; 3],
        out: &mut [O],
    ) -> U {
        let n = out.len().min(x.len()).min(y.len()).min(z.len());
        let (x, y, z) = (&x[..n], &y[..n], &z[..n]);
        let mut buf = [[0u16; BLOCK]; G];
        for (bi, ob) in out[..n].chunks_mut(BLOCK).enumerate() {
            let r0 = bi * BLOCK;
            let m = ob.len();
            let it = x[r0..r0 + m].iter().zip(&y[r0..r0 + m]).zip(&z[r0..r0 + m]);
            for (j, ((&a, &b), &c)) in it.enumerate() {
                let (a, b, c): (u16, u16, u16) = (cast(a), cast(b), cast(c));
                for (k, bk) in buf.iter_mut().enumerate() {
                    let q = 3 * k as u32;
                    bk[j % BLOCK] = (a >> q & 7) << 6 | (b >> q & 7) << 3 | (c >> q & 7);
                }
            }
            let done = m - m % 8;
            let mut octs = ob.chunks_exact_mut(8);
            for (q, o8) in (&mut octs).enumerate() {
                steps::<O, G, 8>(enc, s, &buf, 8 * q, o8);
            }
            for (i, o) in octs.into_remainder().iter_mut().enumerate() {
                steps::<O, G, 1>(enc, s, &buf, done + i, std::slice::from_mut(o));
            }
        }
        or_all(x).or(or_all(y)).or(or_all(z))
    }

    /// [`enc_cols`]' second pass: the codes of points `j..j + N` of the block into `out`.
    #[inline(always)]
    fn steps<O: Word, const G: usize, const N: usize>(
        enc: &'static [u16; 1 << 16],
        s: u32,
        buf: &[[u16; BLOCK]; G],
        j: usize,
        out: &mut [O],
    ) {
        let mut st = [s as usize; N];
        let mut h = [0u64; N];
        for k in (0..G).rev() {
            for i in 0..N {
                let e = enc[(st[i] | buf[k][(j + i) % BLOCK] as usize) & 0xffff];
                h[i] = h[i] << 9 | (e & 511) as u64;
                st[i] = (e & !511) as usize;
            }
        }
        for (o, &v) in out.iter_mut().zip(&h) {
            *o = O::from_u64(v);
        }
    }

    /// Points of one chunk of codes of `nbits` bits; returns the OR of the codes.
    #[inline(always)]
    pub(super) fn decode_chunk<U: Word, O: Word>(
        t: &'static Tiles,
        codes: &[U],
        dst: &mut Dst<'_, O>,
        nbits: u32,
    ) -> U {
        let g = nbits.div_ceil(3);
        let s = t.start[(3 * g - nbits) as usize];
        let (top, d) = (top(&t.dec, s), &*t.dec);
        // Separate arrays: the table entries first, then their fields in vector lanes;
        // with missing levels, the first two steps by one lookup in [`Tiles::dec2`]
        // (one lookup fewer a point: both held to SSE2, runs alternating, nbits 4-5 /
        // 7-8 / 10 / 11-16 1.02-1.24x / 0.90-1.19x / 0.96x / 0.42-0.84x -> 0.59-0.73x /
        // 0.65-0.71x / 0.44-0.76x / 0.59-0.70x hilbertsfc's time; nbits 17-20, in 32-bit
        // lanes, 0.78-0.88x -> 0.80-0.92x).
        if let Dst::Cols([x, y, z]) = dst {
            let xyz = [&mut **x, &mut **y, &mut **z];
            let pad = 3 * g - nbits;
            if g >= 2 && pad > 0 {
                let m: &'static [u32] = &t.dec2[pad as usize - 1];
                return match g {
                    2 => dec_cols::<U, O, u16, 1, true>(top, m, d, s, codes, xyz),
                    3 => dec_cols::<U, O, u16, 2, true>(top, m, d, s, codes, xyz),
                    4 => dec_cols::<U, O, u16, 3, true>(top, m, d, s, codes, xyz),
                    5 => dec_cols::<U, O, u16, 4, true>(top, m, d, s, codes, xyz),
                    6 if nbits <= 16 => dec_cols::<U, O, u16, 5, true>(top, m, d, s, codes, xyz),
                    6 => dec_cols::<U, O, u32, 5, true>(top, m, d, s, codes, xyz),
                    _ => dec_cols::<U, O, u32, 6, true>(top, m, d, s, codes, xyz),
                };
            }
            let m: &'static [u32] = &[];
            return match g {
                1 => dec_cols::<U, O, u16, 1, false>(top, m, d, s, codes, xyz),
                2 => dec_cols::<U, O, u16, 2, false>(top, m, d, s, codes, xyz),
                3 => dec_cols::<U, O, u16, 3, false>(top, m, d, s, codes, xyz),
                4 => dec_cols::<U, O, u16, 4, false>(top, m, d, s, codes, xyz),
                5 => dec_cols::<U, O, u16, 5, false>(top, m, d, s, codes, xyz),
                6 => dec_cols::<U, O, u32, 6, false>(top, m, d, s, codes, xyz),
                _ => dec_cols::<U, O, u32, 7, false>(top, m, d, s, codes, xyz),
            };
        }
        // Rows: the narrowest fields that hold the coordinates; bytes and 16-bit words
        // are stored without a mask (and the byte at bit 8 by x86's `mov %bh`).
        match g {
            1 => m3_decode(codes, dst, Dec::<1, 8, _>(top, d, &t.put8, s)),
            2 => m3_decode(codes, dst, Dec::<2, 8, _>(top, d, &t.put8, s)),
            3 if nbits <= 8 => m3_decode(codes, dst, Dec::<3, 8, _>(top, d, &t.put8, s)),
            3 => m3_decode(codes, dst, Dec::<3, 16, _>(top, d, &t.put16, s)),
            4 => m3_decode(codes, dst, Dec::<4, 16, _>(top, d, &t.put16, s)),
            5 => m3_decode(codes, dst, Dec::<5, 16, _>(top, d, &t.put16, s)),
            6 => m3_decode(codes, dst, Dec::<6, 21, _>(top, d, &t.put21, s)),
            _ => m3_decode(codes, dst, Dec::<7, 21, _>(top, d, &t.put21, s)),
        }
    }

    /// Decoding of separate arrays in `G` steps from state `s` (at bit 9; the first step
    /// by `top`, its entries, where `G <= 3`, as in [`Dec`]; where `M`, by `m`, one of
    /// [`Tiles::dec2`], whose 5-bit fields then start each coordinate), in two passes a block of
    /// [`BLOCK`] codes: the steps' [`Tiles::dec`] entries, as looked up, into a buffer a
    /// step; then each coordinate's 3-bit fields out of them, in lanes of `L` (`u16` up
    /// to nbits 16, else `u32`), which vectorize (SSE2: 8 or 4 points an instruction)
    /// where one point at a time took a `put` lookup a step and a store a coordinate.
    /// Rust harness, 1M points, ns a point, minimum of alternating runs, old -> new:
    /// nbits 6 1.56 -> 1.37, 8 2.52 -> 2.04, 10 3.30 -> 2.51, 14 4.54 -> 3.60, 16 6.17
    /// -> 4.41, 18 6.21 -> 5.38, 21 7.54 -> 6.47. Values of `L` that wrap above a
    /// coordinate's `nbits` bits come only from codes the caller rejects (the range
    /// check on the returned OR).
    #[inline(always)]
    fn dec_cols<U: Word, O: Word, L: Word, const G: usize, const M: bool>(
        top: &'static [u16; 512],
        m: &'static [u32],
        dec: &'static [u16; 1 << 16],
        s: u32,
        codes: &[U],
        [x, y, z]: [&mut [O]; 3],
    ) -> U {
        let mut acc = U::default();
        let mut buf = [[0u16; BLOCK]; G];
        for (bi, cb) in codes.chunks(BLOCK).enumerate() {
            let r0 = bi * BLOCK;
            let n = cb.len();
            // Eight codes an iteration, step by step across them: their lookup chains
            // then overlap in the core's window, where one code after another took a
            // chain the window only partly overlapped (both held to SSE2, AMD EPYC Zen 3,
            // Rust harness, 1M points, ns a point: nbits 6 1.83 -> 1.30, 9 2.51 -> 1.84,
            // 12 3.68 -> 2.6-3.0, 16 4.56 -> 3.2-3.4, 21 6.80 -> 5.6-5.9; four codes
            // an iteration, step by step, 1.49 / 1.96 / 3.04 / 3.74 / 5.5; sixteen spill).
            let mut octs = cb.chunks_exact(8);
            for (q, c8) in (&mut octs).enumerate() {
                for &c in c8 {
                    acc = acc.or(c);
                }
                let h: [u64; 8] = std::array::from_fn(|i| c8[i].to_u64());
                look::<G, M, 8>(top, m, dec, s, h, &mut buf, 8 * q);
            }
            let done = n - octs.remainder().len();
            for (i, &c) in octs.remainder().iter().enumerate() {
                acc = acc.or(c);
                look::<G, M, 1>(top, m, dec, s, [c.to_u64()], &mut buf, done + i);
            }
            let it = x[r0..r0 + n]
                .iter_mut()
                .zip(y[r0..r0 + n].iter_mut())
                .zip(z[r0..r0 + n].iter_mut());
            for (j, ((xo, yo), zo)) in it.enumerate() {
                let (mut a, mut b, mut c) = (L::default(), L::default(), L::default());
                let seven = L::from_u64(7);
                for (k, bk) in buf.iter().enumerate() {
                    let e = L::from_u64(bk[j % BLOCK] as u64);
                    if M && k == 0 {
                        let f = L::from_u64(31);
                        (a, b, c) = (e.shr(10).and(f), e.shr(5).and(f), e.and(f));
                        continue;
                    }
                    a = a.shl(3).or(e.shr(6).and(seven));
                    b = b.shl(3).or(e.shr(3).and(seven));
                    c = c.shl(3).or(e.and(seven));
                }
                *xo = cast(a);
                *yo = cast(b);
                *zo = cast(c);
            }
        }
        acc
    }

    /// [`dec_cols`]' first pass for the `N` codes `h`: their steps' entries into
    /// `buf[..][j..j + N]`, each step for every code before the next step.
    #[inline(always)]
    fn look<const G: usize, const M: bool, const N: usize>(
        top: &'static [u16; 512],
        m: &'static [u32],
        dec: &'static [u16; 1 << 16],
        s: u32,
        h: [u64; N],
        buf: &mut [[u16; BLOCK]; G],
        j: usize,
    ) {
        let mut st = [s as usize; N];
        let k0 = if M {
            for i in 0..N {
                let e = m[((h[i] >> (9 * (G - 1))) as usize) & (m.len() - 1)];
                buf[0][(j + i) % BLOCK] = e as u16;
                st[i] = (e >> 16) as usize;
            }
            1
        } else if G <= 3 {
            for i in 0..N {
                let e = top[((h[i] >> (9 * (G - 1))) & 511) as usize];
                buf[0][(j + i) % BLOCK] = e;
                st[i] = (e & !511) as usize;
            }
            1
        } else {
            0
        };
        for k in k0..G {
            for i in 0..N {
                let e = dec[(st[i] | ((h[i] >> (9 * (G - 1 - k))) & 511) as usize) & 0xffff];
                buf[k][(j + i) % BLOCK] = e;
                st[i] = (e & !511) as usize;
            }
        }
    }

    /// Encoding of coordinates of up to 8 bits (`G <= 3`) by [`Tiles::enc`] (`.1`): the
    /// three steps' indices are gathered by one lookup an axis in [`Tiles::get`] (`.2`)
    /// rather than by shifts and masks of each coordinate, and the first step is taken
    /// from `.0`, the table's entries for the start state. A coordinate of more bits
    /// gives a meaningless index its caller discards (the range check).
    #[derive(Clone, Copy)]
    struct EncGet<const G: u32>(
        &'static [u16; 512],
        &'static [u16; 1 << 16],
        &'static [[u32; 256]; 3],
    );
    impl<U: Word, O: Word, const G: u32> F3<U, O> for EncGet<G> {
        #[inline(always)]
        fn f(&self, a: U, b: U, c: U) -> O {
            let w = self.2[0][(a.to_u64() & 255) as usize]
                | self.2[1][(b.to_u64() & 255) as usize]
                | self.2[2][(c.to_u64() & 255) as usize];
            let e = self.0[((w >> (9 * (G - 1))) & 511) as usize] as u32;
            let (mut s, mut h) = (e & !511, e & 511);
            for k in (0..G - 1).rev() {
                let e = self.1[(s | ((w >> (9 * k)) & 511)) as u16 as usize] as u32;
                h = h << 9 | (e & 511);
                s = e & !511;
            }
            O::from_u64(h as u64)
        }
    }

    /// Encoding in `G` steps from state `.1` (at bit 9), by [`Tiles::enc`] (the table
    /// itself rather than the `Tiles`, so that it is not reloaded after every store).
    #[derive(Clone, Copy)]
    struct Enc<const G: u32>(&'static [u16; 1 << 16], u32);
    impl<U: Word, O: Word, const G: u32> F3<U, O> for Enc<G> {
        #[inline(always)]
        fn f(&self, a: U, b: U, c: U) -> O {
            let (x, y, z) = (a.to_u64(), b.to_u64(), c.to_u64());
            let (mut s, mut h) = (self.1, 0u64);
            for k in (0..G).rev() {
                let i =
                    ((x >> (3 * k)) & 7) << 6 | ((y >> (3 * k)) & 7) << 3 | ((z >> (3 * k)) & 7);
                let e = self.0[(s | i as u32) as u16 as usize] as u32;
                h = h << 9 | (e & 511) as u64;
                s = e & !511;
            }
            O::from_u64(h)
        }
    }

    /// Decoding in `G` steps by [`Tiles::dec`] from state `.3` (at bit 9), the first
    /// by `.0`, its entries for that state, into the `F`-bit fields of the `put` table
    /// `.2` ([`Tiles::put8`] ...; `F >= nbits`).
    #[derive(Clone, Copy)]
    struct Dec<const G: u32, const F: u32, A: 'static>(
        &'static [u16; 512],
        &'static [u16; 1 << 16],
        &'static [A; 512],
        u32,
    );
    impl<U: Word, O: Word, A: Word, const G: u32, const F: u32> G3<U, O> for Dec<G, F, A> {
        #[inline(always)]
        fn g(&self, c: U) -> [O; 3] {
            let h = c.to_u64();
            // The first step by `.0` saves an OR and a register; at nbits 6 1.51-1.61 ->
            // 1.31 ns a point, at 7-9 a few percent. From four steps LLVM's code for it
            // is slower: nbits 10 2.79 -> 3.04, 21 6.51 -> 7.10 (Rust harness, 1M points,
            // minimum of alternating runs; the 2-D tiles alike: nbits 12-14 1.30-1.39 ->
            // 1.19-1.27, 17-21 unchanged, 22-24 3.33-3.35 -> 3.48).
            let (mut s, mut a, g) = if G <= 3 {
                let e = self.0[((h >> (9 * (G - 1))) & 511) as usize] as u64;
                (e & !511, self.2[(e & 511) as usize], G - 1)
            } else {
                (self.3 as u64, A::default(), G)
            };
            for k in (0..g).rev() {
                let e = self.1[(s | ((h >> (9 * k)) & 511)) as u16 as usize] as u64;
                a = a.shl(3).or(self.2[(e & 511) as usize]);
                s = e & !511;
            }
            let m = A::from_u64((1 << F) - 1);
            [cast(a.shr(2 * F)), cast(a.shr(F).and(m)), cast(a.and(m))]
        }
    }
}

/// 2-D Morton encoding: coordinate 0 at the odd bits (`MSB`) or the even ones. The
/// shifts are constants: by a run-time amount, the portable kernel's vector code shifted
/// 32-bit lanes by multiplies (SSE2 has no 32-bit lane multiply either).
#[derive(Clone, Copy)]
struct M2E<const MSB: bool, const K: u32 = 5>;
impl<U: Word, O: Word, const MSB: bool, const K: u32> F2<U, O> for M2E<MSB, K> {
    #[inline(always)]
    fn f(&self, a: U, b: U) -> O {
        let (a, b) = if MSB { (a, b) } else { (b, a) };
        cast::<U, O>(a).part1k::<K, 1>() | cast::<U, O>(b).part1k::<K, 0>()
    }
}
/// Inverse of [`M2E`] (in lanes of `O::Wide2`). `NARROW` (`2 * nbits + 2 <=` the lanes'
/// bits): the lanes' top two bits are dropped first, so that each coordinate is known to
/// have a clear top bit and the narrowing to `O` is a signed pack (SSE2 `packssdw`: 2-D
/// nbits 9-15 into `uint16`) rather than shuffles.
#[derive(Clone, Copy)]
struct M2D<const MSB: bool, const NARROW: bool>;
impl<U: Word, O: Word, const MSB: bool, const NARROW: bool> G2<U, O> for M2D<MSB, NARROW> {
    #[inline(always)]
    fn g(&self, c: U) -> (O, O) {
        let mut c: O::Wide2 = cast(c);
        if NARROW {
            c = c.shl(2).shr(2);
        }
        let (s0, s1) = if MSB { (1, 0) } else { (0, 1) };
        (cast(c.shr(s0).compact1()), cast(c.shr(s1).compact1()))
    }
}
/// 2-D Morton decoding by an unshuffle in lanes of `W` (Hacker's Delight 7-2: delta swaps
/// of 1, 2, 4, .. bits), which gathers the even bits in the lanes' low half and the odd
/// ones in the high half, both coordinates at once; coordinate 0 at the odd bits (`MSB`)
/// or the even ones.
#[derive(Clone, Copy)]
struct M2U<W, const MSB: bool>(PhantomData<W>);
impl<U: Word, O: Word, W: Word, const MSB: bool> G2<U, O> for M2U<W, MSB> {
    #[inline(always)]
    fn g(&self, c: U) -> (O, O) {
        let mut x: W = cast(c);
        let mut swap = |s: u32, m: u64| {
            let t = x.xor(x.shr(s)).and(W::from_u64(m));
            x = x.xor(t).xor(t.shl(s));
        };
        swap(1, 0x2222_2222_2222_2222);
        swap(2, 0x0C0C_0C0C_0C0C_0C0C);
        if W::BITS >= 16 {
            swap(4, 0x00F0_00F0_00F0_00F0);
        }
        if W::BITS >= 32 {
            swap(8, 0x0000_FF00_0000_FF00);
        }
        if W::BITS >= 64 {
            swap(16, 0x0000_0000_FFFF_0000);
        }
        let h = W::BITS / 2;
        let (e, o) = (x.and(W::from_u64((1u64 << h) - 1)), x.shr(h));
        if MSB {
            (cast(o), cast(e))
        } else {
            (cast(e), cast(o))
        }
    }
}
/// 3-D Morton encoding: each coordinate spread (in `K` steps, [`steps2`]), coordinate 0
/// most significant (`MSB`) or least; constant shifts, as [`M2E`].
#[derive(Clone, Copy)]
struct M3E<const K: u32, const MSB: bool>;
impl<U: Word, O: Word, const K: u32, const MSB: bool> F3<U, O> for M3E<K, MSB> {
    #[inline(always)]
    fn f(&self, a: U, b: U, c: U) -> O {
        let (a, c) = if MSB { (a, c) } else { (c, a) };
        cast::<U, O>(a).part2k::<K, 2>()
            | cast::<U, O>(b).part2k::<K, 1>()
            | cast::<U, O>(c).part2k::<K, 0>()
    }
}
/// [`Word::part2`] of every byte (256 entries of 24 bits), for [`M3L`].
fn m3_spread() -> &'static [u32; 256] {
    static T: OnceLock<Box<[u32; 256]>> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Box::new([0u32; 256]);
        for (v, e) in t.iter_mut().enumerate() {
            *e = (v as u32).part2();
        }
        t
    })
}
/// 3-D Morton encoding of coordinates of up to `8 K` bits by one lookup a byte in
/// [`m3_spread`], coordinate 0 most significant (`MSB`) or least; for the portable kernel,
/// whose spreads in 32- and 64-bit lanes cost more: separate arrays nbits 6-8 / 11-16 /
/// 17-21 0.88-0.89 / 2.69 / 2.43 -> 0.69 / 1.48 / 2.24-2.25 ns a point, rows 1.02 / 2.66 /
/// 3.20 -> 0.69 / 1.52 / 2.20; the spreads stay at nbits 1-5 (0.33-0.40 against 0.68
/// for the lookups) and 9-10, in 16-bit lanes (1.00 against 1.37; Rust harness, 1M
/// points, minimum of alternating runs). A coordinate of more bits gives a meaningless
/// code its caller discards (the range check).
#[derive(Clone, Copy)]
struct M3L<const MSB: bool, const K: u32>(&'static [u32; 256]);
impl<U: Word, O: Word, const MSB: bool, const K: u32> F3<U, O> for M3L<MSB, K> {
    #[inline(always)]
    fn f(&self, a: U, b: U, c: U) -> O {
        let (a, c) = if MSB { (a, c) } else { (c, a) };
        let t = |v: U| {
            let v = v.to_u64();
            let mut s = self.0[(v & 255) as usize] as u64;
            for k in 1..K {
                s |= (self.0[((v >> (8 * k)) & 255) as usize] as u64) << (24 * k);
            }
            s
        };
        if K == 1 {
            let t = |v: U| self.0[(v.to_u64() & 255) as usize];
            return O::from_u64(((t(a) << 1 | t(b)) << 1 | t(c)) as u64);
        }
        O::from_u64((t(a) << 1 | t(b)) << 1 | t(c))
    }
}

/// Per code byte `k mod 3` (`k` from the lowest), each byte's bits at their places in
/// 16- and 21-bit coordinate fields (coordinate 0 at `2 F`), for [`M3DL`].
type Unspread = (Box<[[u64; 256]; 3]>, Box<[[u64; 256]; 3]>);
fn m3_unspread() -> (&'static [[u64; 256]; 3], &'static [[u64; 256]; 3]) {
    static T: OnceLock<Unspread> = OnceLock::new();
    fn build(f: u32) -> Box<[[u64; 256]; 3]> {
        let mut t = Box::new([[0u64; 256]; 3]);
        for (r, tr) in t.iter_mut().enumerate() {
            for (b, e) in tr.iter_mut().enumerate() {
                for j in 0..8 {
                    let p = 8 * r as u32 + j;
                    *e |= ((b as u64 >> j) & 1) << ((p % 3) * f + p / 3);
                }
            }
        }
        t
    }
    let t = T.get_or_init(|| (build(16), build(21)));
    (&t.0, &t.1)
}
/// 3-D Morton decoding of codes of `NB` bytes by one lookup a byte in [`m3_unspread`]'s
/// `F`-bit fields (`F >= nbits`), coordinate 0 most significant (`MSB`) or least; for
/// the portable kernel at nbits 9-21, whose de-interleave in 32- and 64-bit lanes costs
/// more: separate arrays nbits 10 / 14 / 18-21 1.21 / 2.16 / 2.62-2.63 -> 1.10 / 1.43 /
/// 1.91-1.92 ns a point, rows nbits 9-10 / 12-14 / 21 1.48 / 2.41-2.42 / 2.72 -> 1.13 /
/// 1.37-1.38 / 1.85; at nbits 6-8 a tie, at 3 0.33 against 0.88 (Rust harness, 1M points,
/// minimum of alternating runs). A code of more bits gives meaningless coordinates its
/// caller discards (the range check).
#[derive(Clone, Copy)]
struct M3DL<const MSB: bool, const F: u32, const NB: u32>(&'static [[u64; 256]; 3]);
impl<U: Word, O: Word, const MSB: bool, const F: u32, const NB: u32> G3<U, O> for M3DL<MSB, F, NB> {
    #[inline(always)]
    fn g(&self, c: U) -> [O; 3] {
        let c = c.to_u64();
        let mut a = 0u64;
        for k in 0..NB {
            a |= self.0[(k % 3) as usize][((c >> (8 * k)) & 255) as usize] << (8 * (k / 3));
        }
        let m = (1u64 << F) - 1;
        let (x, y, z) = (
            O::from_u64(a >> (2 * F)),
            O::from_u64((a >> F) & m),
            O::from_u64(a & m),
        );
        if MSB {
            [x, y, z]
        } else {
            [z, y, x]
        }
    }
}

/// Each byte's even bits at bits 0-3 and odd bits at 32-35 (2 KiB), for [`M2DL`].
fn m2_unspread() -> &'static [u64; 256] {
    static T: OnceLock<Box<[u64; 256]>> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Box::new([0u64; 256]);
        for (b, e) in t.iter_mut().enumerate() {
            for j in 0..8u32 {
                *e |= ((b as u64 >> j) & 1) << ((j % 2) * 32 + j / 2);
            }
        }
        t
    })
}
/// 2-D Morton decoding of codes of `NB` bytes by one lookup a byte in [`m2_unspread`],
/// coordinate 0 at the odd bits (`MSB`) or the even ones; for the portable kernel at
/// nbits 17-24, whose de-interleave in 64-bit lanes costs more: separate arrays nbits
/// 17-20 / 21-24 1.78 -> 1.39 / 1.64 ns a point, rows nbits 20 / 24 1.69-1.70 -> 1.21 /
/// 1.46; at nbits 16 / 25-32 the lanes are faster (0.79 / 1.78 against 0.99 / 1.89-2.10;
/// Rust harness, 1M points, minimum of alternating runs). A code of more bits gives
/// meaningless coordinates its caller discards (the range check).
#[derive(Clone, Copy)]
struct M2DL<const MSB: bool, const NB: u32>(&'static [u64; 256]);
impl<U: Word, O: Word, const MSB: bool, const NB: u32> G2<U, O> for M2DL<MSB, NB> {
    #[inline(always)]
    fn g(&self, c: U) -> (O, O) {
        let c = c.to_u64();
        let mut a = 0u64;
        for k in 0..NB {
            a |= self.0[((c >> (8 * k)) & 255) as usize] << (4 * k);
        }
        let (x, y) = (O::from_u64(a >> 32), O::from_u64(a & 0xffff_ffff));
        if MSB {
            (x, y)
        } else {
            (y, x)
        }
    }
}

/// [`M3E`] for either axis order.
#[inline(always)]
fn morton3_map<U: Word, O: Word, const K: u32>(src: Src<'_, U>, out: &mut [O], msb: bool) -> U {
    if msb {
        map3(src, out, M3E::<K, true>)
    } else {
        map3(src, out, M3E::<K, false>)
    }
}
/// Inverse of [`M3E`], in lanes of `L` (which must hold the code).
struct M3D<L, const K: u32 = 5>(u32, u32, u32, std::marker::PhantomData<L>);
impl<L, const K: u32> Clone for M3D<L, K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L, const K: u32> Copy for M3D<L, K> {}
impl<U: Word, O: Word, L: Word, const K: u32> G3<U, O> for M3D<L, K> {
    #[inline(always)]
    fn g(&self, c: U) -> [O; 3] {
        let c: L = cast(c);
        [
            cast(c.shr(self.0).compact2k::<K>()),
            cast(c.shr(self.1).compact2k::<K>()),
            cast(c.shr(self.2).compact2k::<K>()),
        ]
    }
}

/// 3-D Morton decoding of codes of up to 15 bits (`nbits <= 5`) in 16-bit lanes, each
/// coordinate's bits gathered by multiplies in place of [`M3D`]'s shift steps, coordinate
/// 0 most significant (`MSB`) or least. A coordinate's bits at `s`, `s + 3` and `s + 6`,
/// masked, times `2^(13 - s) + 2^(11 - s) + 2^(9 - s)` land at bits 13, 14 and 15 (every
/// other product at a place of its own, so no carries), where a shift takes them down;
/// bits `s + 9` and `s + 12` (`NB = 5`) likewise by the high half of a product (SSE2
/// `pmulhuw`). Separate arrays, the portable kernel: nbits 3 / 4 / 5 1.03-1.12x /
/// 1.07-1.16x / 1.02-1.08x -> 0.53-0.59x / 0.77-0.93x / 0.64-0.69x hilbertsfc's time (both
/// held to SSE2, alternating runs); slower at nbits 2 (in bytes, one shift step) and, on
/// the code's 16-bit windows, at 6-10 (0.96-1.11x -> 1.12-1.24x).
#[derive(Clone, Copy)]
struct M3DM<const MSB: bool, const NB: u32>;
/// [`M3DM`]'s masks and multipliers for the coordinate at bits `3 j + s` (`s` at most 2):
/// bits `s`, `s + 3`, `s + 6` to bits 13-15 of the low product (`[0]`, `[1]`); bit `s + 9`
/// to bit 3 of the high product, alone there where `nb` is 4, and with `s + 12` to bit 4
/// where `nb` is 5, beside other bits that a mask by 24 drops (`[2]`, `[3]`).
const fn m3dm_consts(s: u32, nb: u32) -> [u16; 4] {
    let (mb, kb) = if nb == 4 {
        (0x200, 1 << (10 - s))
    } else {
        (0x1200, (1 << (10 - s)) + (1 << (8 - s)))
    };
    [
        0x49 << s,
        (1 << (13 - s)) + (1 << (11 - s)) + (1 << (9 - s)),
        mb << s,
        kb,
    ]
}
impl<U: Word, O: Word, const MSB: bool, const NB: u32> G3<U, O> for M3DM<MSB, NB> {
    #[inline(always)]
    fn g(&self, c: U) -> [O; 3] {
        let c = c.to_u64() as u16;
        let f = |s: u32| -> O {
            let k = m3dm_consts(s, NB);
            let lo = (c & k[0]).wrapping_mul(k[1]) >> 13;
            let v = match NB {
                ..=3 => lo,
                4 => lo | ((c >> (s + 6)) & 8),
                _ => lo | ((((c & k[2]) as u32 * k[3] as u32) >> 16) as u16 & 24),
            };
            O::from_u64(v as u64)
        };
        let (s0, s2) = if MSB { (2, 0) } else { (0, 2) };
        [f(s0), f(1), f(s2)]
    }
}

/// The steps of [`Word::part2`] / [`Word::compact2`] (and of [`Word::part1k`]) that values
/// of `nbits` bits need (one per shift `2 s`, `s` in 16, 8, 4, 2, 1, below `nbits`): the
/// step of a shift by `2 s` joins groups of `s` bits.
const fn steps2(nbits: u32) -> u32 {
    (nbits > 16) as u32
        + (nbits > 8) as u32
        + (nbits > 4) as u32
        + (nbits > 2) as u32
        + (nbits > 1) as u32
}

/// `out[k] = f(x[k], y[k])` over a 2-D chunk; returns the OR of every input value.
#[inline(always)]
fn map2<U: Word, O: Word>(src: Src<'_, U>, out: &mut [O], f: impl F2<U, O>) -> U {
    let mut acc = U::default();
    match src {
        Src::Rows(s) => {
            for (o, r) in out.iter_mut().zip(s.chunks_exact(2)) {
                acc = acc.or(r[0]).or(r[1]);
                *o = f.f(r[0], r[1]);
            }
        }
        Src::Cols([x, y, _]) => {
            for ((o, &a), &b) in out.iter_mut().zip(x).zip(y) {
                acc = acc.or(a).or(b);
                *o = f.f(a, b);
            }
        }
    }
    acc
}

/// `out[k] = f(x[k], y[k], z[k])` over a 3-D chunk; returns the OR of every input value.
#[inline(always)]
fn map3<U: Word, O: Word>(src: Src<'_, U>, out: &mut [O], f: impl F3<U, O>) -> U {
    let mut acc = U::default();
    match src {
        Src::Rows(s) => {
            for (o, r) in out.iter_mut().zip(s.chunks_exact(3)) {
                acc = acc.or(r[0]).or(r[1]).or(r[2]);
                *o = f.f(r[0], r[1], r[2]);
            }
        }
        Src::Cols([x, y, z]) => {
            for (((o, &a), &b), &c) in out.iter_mut().zip(x).zip(y).zip(z) {
                acc = acc.or(a).or(b).or(c);
                *o = f.f(a, b, c);
            }
        }
    }
    acc
}

/// The OR of `v` (a loop LLVM vectorizes).
#[inline(always)]
fn or_all<U: Word>(v: &[U]) -> U {
    v.iter().fold(U::default(), |a, &b| a.or(b))
}

/// [`map3`] with the OR of the inputs taken in passes of their own, for `f` that does not
/// vectorize (table lookups): in its loop the OR cost two instructions a point and, with
/// the registers all taken, a load and a store of the spilled accumulator. The 3-D tiles'
/// per-axis lookups, nbits 6: 0.81-0.82x -> 0.73-0.75x hilbertsfc's time (both libraries
/// held to SSE2, alternating runs). (The 2-D tiles had it at two steps, nbits 12
/// 1.05-1.23x -> 0.97-0.98x, and were slower with it from three, nbits 20 1.00-1.01x ->
/// 1.04-1.07x; they now take [`h2tile`]'s two passes.)
#[inline(always)]
fn map3_or_first<U: Word, O: Word>(src: Src<'_, U>, out: &mut [O], f: impl F3<U, O>) -> U {
    match src {
        Src::Rows(s) => {
            let s = &s[..(3 * out.len()).min(s.len())];
            for (o, r) in out.iter_mut().zip(s.chunks_exact(3)) {
                *o = f.f(r[0], r[1], r[2]);
            }
            or_all(s)
        }
        Src::Cols([x, y, z]) => {
            let n = out.len().min(x.len()).min(y.len()).min(z.len());
            let (x, y, z) = (&x[..n], &y[..n], &z[..n]);
            for (((o, &a), &b), &c) in out.iter_mut().zip(x).zip(y).zip(z) {
                *o = f.f(a, b, c);
            }
            or_all(x).or(or_all(y)).or(or_all(z))
        }
    }
}

/// Writes `f(code)` (two coordinates) for each code of a chunk; returns the OR of the codes.
#[inline(always)]
fn put2<U: Word, O: Word>(codes: &[U], dst: &mut Dst<'_, O>, f: impl G2<U, O>) -> U {
    let mut acc = U::default();
    match dst {
        Dst::Rows(o) => {
            for (r, &c) in o.chunks_exact_mut(2).zip(codes) {
                acc = acc.or(c);
                let (a, b) = f.g(c);
                r[0] = a;
                r[1] = b;
            }
        }
        Dst::Cols([x, y, _]) => {
            for ((xo, yo), &c) in x.iter_mut().zip(y.iter_mut()).zip(codes) {
                acc = acc.or(c);
                let (a, b) = f.g(c);
                *xo = a;
                *yo = b;
            }
        }
    }
    acc
}

/// Writes `f(v)` (three coordinates) for each `v` of a block, starting at row `r0`;
/// returns the OR of the values (in the same pass, for the callers' range checks).
#[inline(always)]
fn put3<V: Word, O: Word>(vals: &[V], r0: usize, dst: &mut Dst<'_, O>, f: impl G3<V, O>) -> V {
    let n = vals.len();
    let mut acc = V::default();
    match dst {
        Dst::Rows(o) => {
            for (r, &v) in o[3 * r0..3 * (r0 + n)].chunks_exact_mut(3).zip(vals) {
                acc = acc.or(v);
                let [a, b, c] = f.g(v);
                r[0] = a;
                r[1] = b;
                r[2] = c;
            }
        }
        Dst::Cols([x, y, z]) => {
            let it = x[r0..r0 + n]
                .iter_mut()
                .zip(y[r0..r0 + n].iter_mut())
                .zip(z[r0..r0 + n].iter_mut());
            for (((xo, yo), zo), &v) in it.zip(vals) {
                acc = acc.or(v);
                let [a, b, c] = f.g(v);
                *xo = a;
                *yo = b;
                *zo = c;
            }
        }
    }
    acc
}

/// Skilling's transpose-to-axes step in lanes of `L` ("Programming the Hilbert curve", AIP
/// Conf. Proc. 707, 2004, the algorithm `hilbertcurve` implements): `x, y, z` hold the
/// transposed index (the code's Morton de-interleave, coordinate 0 most significant) and
/// become the point. A Gray decode, then one branch-free pass of invert/exchange steps per
/// bit level above the lowest, level-major so that each pass is one vectorized loop over
/// the block.
///
/// Level `q` reads bit `q` and changes only the bits below it, so the levels below
/// `T::BITS` run on the low parts in lanes of `T`, those below `S::BITS` in lanes of `S`
/// (wider types hold fewer lanes a vector), the rest in lanes of `L`; pass `S = L` or
/// `T = S` to skip a tier.
#[inline(always)]
fn h3_skilling<L: Word, S: Word, T: Word>(
    x: &mut [L],
    y: &mut [L],
    z: &mut [L],
    nbits: u32,
    scratch: &mut HiScratch,
    avx2: bool,
) {
    let n = x.len();
    let (y, z) = (&mut y[..n], &mut z[..n]);
    for ((a, b), c) in x.iter_mut().zip(y.iter_mut()).zip(z.iter_mut()) {
        let t = c.shr(1);
        *c = c.xor(*b);
        *b = b.xor(*a);
        *a = a.xor(t);
    }
    if L::BITS == 32 && nbits >= HI_FROM {
        h3_skilling_hi(x, y, z, nbits, scratch, avx2);
        return;
    }
    let t_to = nbits.min(T::BITS);
    let s_to = nbits.min(S::BITS);
    sk_levels_in::<L, T, true>(x, y, z, 1, t_to);
    sk_levels_in::<L, S, true>(x, y, z, t_to, s_to);
    sk_levels(x, y, z, s_to, nbits);
}

/// The `nbits` from which [`h3_skilling`] runs [`h3_skilling_hi`] (up to 21) where the
/// codes do not go straight into split axes ([`SPLIT_FROM`]): below it,
/// splitting the axes costs more than the levels it takes out of 32-bit lanes (AVX2,
/// 1M points: nbits 17 3.9 -> 4.3 ns a point, 19 4.7 -> 4.6, 21 5.5 -> 4.7).
const HI_FROM: u32 = 19;

/// The bit ranges of the byte planes of [`h3_skilling_hi`]: plane 0 holds bits 0-7 of
/// each axis, plane `k` (1 to 3) bits `TIERS[k - 1] .. TIERS[k]` (at most 5) at its bits
/// 3-7, above a 3-bit tag.
const TIERS: [u32; 4] = [8, 13, 18, 21];

/// The levels of [`h3_skilling`] for `16 < nbits <= 21` (after the Gray decode), every
/// one in lanes of `u8`: each axis split into byte planes ([`TIERS`]), each plane running
/// the levels of its own bits.
///
/// Level `q` reads bit `q` and, by the three axes' bits `q` alone, exchanges or inverts
/// the axes' bits below `q` as whole words, so the levels of a plane do one and the same
/// exchange-and-invert to every bit of the planes below it. The planes above the lowest
/// run their levels shifted up above a one-hot tag of their axis (bits 0-2), which stands
/// in for the bits below the plane and is exchanged and inverted with them: each axis's
/// final tag names the axis whose lower bits it receives (one bit set) or the complement
/// of them (two set, the clear one naming it). The planes are then routed from the top
/// down ([`route8`]): plane `k - 1` by the tags of plane `k`, tags included, so that
/// plane `k - 1`'s tags become the composition of every route above it.
#[inline(always)]
fn h3_skilling_hi<L: Word>(
    x: &mut [L],
    y: &mut [L],
    z: &mut [L],
    nbits: u32,
    scratch: &mut HiScratch,
    avx2: bool,
) {
    debug_assert!(L::BITS == 32 && (17..=21).contains(&nbits));
    let n = x.len();
    for (a, v) in [&*x, &*y, &*z].into_iter().enumerate() {
        let [p0, p1, p2, p3] = &mut scratch.planes;
        let it = (p0[a][..n].iter_mut().zip(p1[a][..n].iter_mut()))
            .zip(p2[a][..n].iter_mut().zip(p3[a][..n].iter_mut()));
        for (((b0, b1), (b2, b3)), &w) in it.zip(v) {
            let w: u32 = cast(w);
            [*b0, *b1, *b2, *b3] = split_planes(w as u16, (w >> 16) as u8, a);
        }
    }
    hi_levels(scratch, n, nbits, avx2);
    hi_out(scratch, n, &mut Dst::Cols([x, y, z]), 0, avx2);
}

/// The byte planes ([`TIERS`]) of axis `a` from its low 16 bits `l` and its bits from 16
/// up `h`, each plane above the lowest with the axis's one-hot tag.
#[inline(always)]
fn split_planes(l: u16, h: u8, a: usize) -> [u8; 4] {
    let tag = 1u8 << a;
    [
        l as u8,
        ((l >> 5) as u8 & 0xf8) | tag,
        ((l >> 10) as u8 & 0x38) | (h << 6) | tag,
        ((h << 1) & 0xf8) | tag,
    ]
}

/// The levels of [`h3_skilling_hi`] on the first `n` points of its byte planes, then the
/// routes (see there). `avx2`: route by [`route8_avx2`] (the CPU has AVX2).
#[inline(always)]
fn hi_levels(scratch: &mut HiScratch, n: usize, nbits: u32, avx2: bool) {
    let planes = &mut scratch.planes;
    // The planes holding levels: 3 for nbits up to 18, else 4.
    let used = TIERS.iter().take_while(|&&t| t < nbits).count() + 1;
    for (k, plane) in planes[..used].iter_mut().enumerate() {
        let [px, py, pz] = plane;
        let (px, py, pz) = (&mut px[..n], &mut py[..n], &mut pz[..n]);
        if k == 0 {
            sk_levels(px, py, pz, 1, TIERS[0]);
        } else {
            // Constant levels, so that each level's bit tests compile to shifts by
            // constants (byte lanes have no variable shift; 2-4% at nbits 18-21, AVX2).
            match TIERS[k].min(nbits) - TIERS[k - 1] {
                5 => sk_levels(px, py, pz, 3, 8),
                4 => sk_levels(px, py, pz, 3, 7),
                3 => sk_levels(px, py, pz, 3, 6),
                2 => sk_levels(px, py, pz, 3, 5),
                _ => sk_levels(px, py, pz, 3, 4),
            }
        }
    }
    for k in (1..used).rev() {
        let (below, above) = planes.split_at_mut(k);
        route8(&mut below[k - 1], &above[0], n, avx2);
    }
}

/// The nbits from which [`h3_decode_sk`] de-interleaves `uint64` codes on AVX2 straight
/// into the split axes of [`h3_skilling_hi`] ([`h3_split_in`]): no axes in lanes of 32
/// bits, no split pass, and the tags routed by [`route8_avx2`], so it pays from the first
/// level above 16 (AMD Zen 3, 1M points, 1 thread: nbits 17 / 18 / 19 / 21 4.1-4.4 /
/// 4.3-4.6 / 4.6-4.9 / 4.8-5.0 -> 3.5-3.7 / 3.6-3.7 / 3.7-3.8 / 3.9 ns a point).
#[cfg(target_arch = "x86_64")]
const SPLIT_FROM: u32 = 17;

/// Whether [`h3_decode_sk`] takes [`h3_split_in`] for these types.
#[cfg(target_arch = "x86_64")]
fn h3_splits<U: Word, L: Word>(step: MortonStep, nbits: u32) -> bool {
    step == MortonStep::Nib && U::BITS == 64 && L::BITS == 32 && nbits >= SPLIT_FROM
}

/// The transposed index of `uint64` codes of `16 < nbits <= 21` as the byte planes of
/// [`h3_skilling_hi`], Gray-decoded: the low 48 code bits de-interleaved into `lo` (the
/// axes' low 16 bits) by [`nib3::decode`], the bits from 48 up into `hi` by
/// [`nib3::decode16`], then split ([`gray_planes`]), with no pass over the axes in lanes
/// of 32 bits. Returns the OR of the codes.
///
/// # Safety
/// AVX2; `U` is 64 bits wide; `codes.len() <= BLOCK`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn h3_split_in<U: Word>(codes: &[U], scratch: &mut HiScratch) -> U {
    debug_assert!(U::BITS == 64 && codes.len() <= BLOCK);
    let n = codes.len();
    let HiScratch {
        lo,
        hi,
        planes,
        top,
    } = scratch;
    let sh = [2u32, 1, 0];
    let lp = [0, 1, 2].map(|a| lo[a].as_mut_ptr() as *mut u8);
    // SAFETY: AVX2 and 64-bit codes as the caller guarantees; each column holds BLOCK.
    let (d, a) = unsafe { nib3::decode::<8, 2, false>(codes.as_ptr().cast(), n, lp, sh) };
    let mut acc = U::from_u64(a);
    for (k, &c) in codes.iter().enumerate() {
        top[k] = (c.to_u64() >> 48) as u16;
    }
    // The tails by the generic de-interleave (the low 16 bits of each axis kept).
    for &c in &codes[d..] {
        acc = acc.or(c);
    }
    let m3d = M3D::<u64>(2, 1, 0, PhantomData);
    let [l0, l1, l2] = &mut *lo;
    put3(
        &codes[d..n],
        d,
        &mut Dst::Cols([&mut l0[..], &mut l1[..], &mut l2[..]]),
        m3d,
    );
    let hp = [0, 1, 2].map(|a| hi[a].as_mut_ptr());
    // SAFETY: as above; `top` holds n codes of at most 16 bits.
    let (d, _) = unsafe { nib3::decode16::<4, false>(top.as_ptr().cast(), n, hp, sh) };
    let [h0, h1, h2] = &mut *hi;
    put3(
        &top[d..n],
        d,
        &mut Dst::Cols([&mut h0[..], &mut h1[..], &mut h2[..]]),
        m3d,
    );
    for a in 0..3 {
        gray_planes(lo, hi, planes, n, a);
    }
    acc
}

/// Axis `a` of the halves `lo`, `hi` of a transposed index (see [`h3_split_in`])
/// Gray-decoded into its byte planes ([`split_planes`]): axis 0 takes bit `q + 1` of axis
/// 2, the others the axis before them (as in [`h3_skilling`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn gray_planes(
    lo: &[[u16; BLOCK]; 3],
    hi: &[[u8; BLOCK]; 3],
    planes: &mut [[[u8; BLOCK]; 3]; 4],
    n: usize,
    a: usize,
) {
    let s = if a == 0 { 2 } else { a - 1 };
    let [p0, p1, p2, p3] = planes;
    let out = (p0[a][..n].iter_mut().zip(p1[a][..n].iter_mut()))
        .zip(p2[a][..n].iter_mut().zip(p3[a][..n].iter_mut()));
    let src = (lo[a][..n].iter().zip(&hi[a][..n])).zip(lo[s][..n].iter().zip(&hi[s][..n]));
    for (((b0, b1), (b2, b3)), ((&l, &h), (&ls, &hs))) in out.zip(src) {
        // Bit 15 of the source's `>> 1` is bit 0 of its high half.
        let (t, th) = if a == 0 {
            ((ls >> 1) | ((hs as u16 & 1) << 15), hs >> 1)
        } else {
            (ls, hs)
        };
        [*b0, *b1, *b2, *b3] = split_planes(l ^ t, h ^ th, a);
    }
}

/// Writes the first `n` points of the byte planes after [`hi_levels`] to `dst` from row
/// `r0`; `avx2`: `uint32` coordinates by [`planes_out_avx2`] (the CPU has AVX2).
#[inline(always)]
fn hi_out<O: Word>(scratch: &HiScratch, n: usize, dst: &mut Dst<'_, O>, r0: usize, avx2: bool) {
    let planes = &scratch.planes;
    #[cfg(target_arch = "x86_64")]
    let done = if avx2 && O::BITS == 32 {
        let mut part = match dst {
            Dst::Rows(o) => Dst::Rows(&mut o[3 * r0..3 * (r0 + n)]),
            Dst::Cols([x, y, z]) => {
                Dst::Cols([&mut x[r0..r0 + n], &mut y[r0..r0 + n], &mut z[r0..r0 + n]])
            }
        };
        let (ptrs, rows) = part.ptrs3(n);
        // SAFETY: the caller says the CPU has AVX2; `ptrs3` checked that `n` points of
        // 4-byte coordinates fit.
        unsafe {
            if rows {
                planes_out_avx2::<true>(planes, n, ptrs)
            } else {
                planes_out_avx2::<false>(planes, n, ptrs)
            }
        }
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = {
        let _ = avx2;
        0
    };
    let [p0, p1, p2, p3] = planes;
    // Axis `a`'s values, the planes' tags shifted out.
    let axis = |a: usize| {
        let it = (p0[a][done..n].iter().zip(&p1[a][done..n]))
            .zip(p2[a][done..n].iter().zip(&p3[a][done..n]));
        it.map(|((&b0, &b1), (&b2, &b3))| {
            let w = b0 as u32
                | (b1 as u32 >> 3) << TIERS[0]
                | (b2 as u32 >> 3) << TIERS[1]
                | (b3 as u32 >> 3) << TIERS[2];
            O::from_u64(w as u64)
        })
    };
    let (r0, n) = (r0 + done, n - done);
    match dst {
        Dst::Rows(o) => {
            let it = axis(0).zip(axis(1)).zip(axis(2));
            for (r, ((a, b), c)) in o[3 * r0..3 * (r0 + n)].chunks_exact_mut(3).zip(it) {
                r[0] = a;
                r[1] = b;
                r[2] = c;
            }
        }
        Dst::Cols(c) => {
            for (a, col) in c.iter_mut().enumerate() {
                for (o, v) in col[r0..r0 + n].iter_mut().zip(axis(a)) {
                    *o = v;
                }
            }
        }
    }
}

/// [`hi_out`] of the leading multiple of 32 of the first `n` points as `uint32`
/// coordinates into three columns at `dst`, or rows at `dst[0]` where `ROWS`; returns the
/// points done. Per 32 points and axis, the value's bytes 1 and 2 are gathered from the
/// planes in byte lanes, then the bytes interleaved into words.
///
/// # Safety
/// AVX2; `n <= BLOCK`; each column writable for `4 * n` bytes (rows: `12 * n`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn planes_out_avx2<const ROWS: bool>(
    planes: &[[[u8; BLOCK]; 3]; 4],
    n: usize,
    dst: [*mut u8; 3],
) -> usize {
    use std::arch::x86_64::*;
    assert!(n <= BLOCK);
    let sc = const { nib3::scatter(4) };
    let mut i = 0;
    // SAFETY: AVX2 as the caller guarantees; every load lies within the first `n` bytes
    // of a plane, every store within the bounds the caller gives.
    unsafe {
        let sca: [[__m256i; 3]; 3] = sc.map(|v| v.map(|c| _mm256_loadu_si256(c.as_ptr().cast())));
        let set = _mm256_set1_epi8;
        let (m1f, me0, m03, m7c) = (set(0x1f), set(-0x20), set(0x03), set(0x7c));
        let zero = _mm256_setzero_si256();
        while i + 32 <= n {
            let mut words = [[zero; 3]; 4];
            for a in 0..3 {
                let b0 = _mm256_loadu_si256(planes[0][a].as_ptr().add(i).cast());
                let b1 = _mm256_loadu_si256(planes[1][a].as_ptr().add(i).cast());
                let b2 = _mm256_loadu_si256(planes[2][a].as_ptr().add(i).cast());
                let b3 = _mm256_loadu_si256(planes[3][a].as_ptr().add(i).cast());
                // Bits 8-12 from plane 1 (its bits 3-7), 13-15 from plane 2 (bits 3-5).
                let c1 = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16::<3>(b1), m1f),
                    _mm256_and_si256(_mm256_slli_epi16::<2>(b2), me0),
                );
                // Bits 16-17 from plane 2 (bits 6-7), 18-22 from plane 3 (bits 3-7).
                let c2 = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16::<6>(b2), m03),
                    _mm256_and_si256(_mm256_srli_epi16::<1>(b3), m7c),
                );
                // Per 128-bit lane: points 0-7 and 8-15 of the lane as bytes 0-1, 2.
                let lo = [_mm256_unpacklo_epi8(b0, c1), _mm256_unpackhi_epi8(b0, c1)];
                let hi = [
                    _mm256_unpacklo_epi8(c2, zero),
                    _mm256_unpackhi_epi8(c2, zero),
                ];
                // Words of points 0-3 | 16-19, 4-7 | 20-23, 8-11 | 24-27, 12-15 | 28-31.
                let w = [
                    _mm256_unpacklo_epi16(lo[0], hi[0]),
                    _mm256_unpackhi_epi16(lo[0], hi[0]),
                    _mm256_unpacklo_epi16(lo[1], hi[1]),
                    _mm256_unpackhi_epi16(lo[1], hi[1]),
                ];
                words[0][a] = _mm256_permute2x128_si256::<0x20>(w[0], w[1]);
                words[1][a] = _mm256_permute2x128_si256::<0x20>(w[2], w[3]);
                words[2][a] = _mm256_permute2x128_si256::<0x31>(w[0], w[1]);
                words[3][a] = _mm256_permute2x128_si256::<0x31>(w[2], w[3]);
            }
            for (k, v) in words.iter().enumerate() {
                nib3::store3::<ROWS>(v, &sca, dst, 4 * (i + 8 * k));
            }
            i += 32;
        }
    }
    i
}

/// Work space of [`h3_skilling_hi`] for one block: the byte planes of the axes
/// ([`TIERS`]), and the de-interleaved halves [`h3_split_in`] splits them from.
struct HiScratch {
    /// The axes' low 16 bits ([`h3_split_in`], x86-64 only).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    lo: [[u16; BLOCK]; 3],
    /// The axes' bits from 16 up ([`h3_split_in`], x86-64 only).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    hi: [[u8; BLOCK]; 3],
    /// `planes[k][a]`: plane `k` of axis `a`.
    planes: [[[u8; BLOCK]; 3]; 4],
    /// The codes' bits from 48 up ([`h3_split_in`], x86-64 only).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    top: [u16; BLOCK],
}

impl HiScratch {
    fn new() -> Self {
        HiScratch {
            lo: [[0; BLOCK]; 3],
            hi: [[0; BLOCK]; 3],
            planes: [[[0; BLOCK]; 3]; 4],
            top: [0; BLOCK],
        }
    }
}

/// Exchanges and inverts the first `n` bytes of the three axes' `data` planes as the tags
/// (bits 0-2) of the planes `tags` say (see [`h3_skilling_hi`]); `avx2`: the leading
/// multiples of 32 by [`route8_avx2`] (the CPU has AVX2).
#[inline(always)]
fn route8(data: &mut [[u8; BLOCK]; 3], tags: &[[u8; BLOCK]; 3], n: usize, avx2: bool) {
    #[cfg(target_arch = "x86_64")]
    let done = if avx2 {
        // SAFETY: the caller says the CPU has AVX2; `n <= BLOCK`.
        unsafe { route8_avx2(data, tags, n) }
    } else {
        0
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = {
        let _ = avx2;
        0
    };
    let [d0, d1, d2] = data;
    let it = (d0[done..n].iter_mut().zip(d1[done..n].iter_mut())).zip(d2[done..n].iter_mut());
    let tg = (tags[0][done..n].iter().zip(&tags[1][done..n])).zip(&tags[2][done..n]);
    for (((x, y), z), ((&tx, &ty), &tz)) in it.zip(tg) {
        let v = [*x, *y, *z];
        let route = |t: u8| -> u8 {
            let m = [1u8, 2, 4].map(|bit| if t & bit != 0 { 0xff } else { 0 });
            // Two tag bits set: the complement of the axis whose bit is clear.
            let neg = (m[0] & m[1]) | (m[0] & m[2]) | (m[1] & m[2]);
            ((v[0] & (m[0] ^ neg)) | (v[1] & (m[1] ^ neg)) | (v[2] & (m[2] ^ neg))) ^ neg
        };
        (*x, *y, *z) = (route(tx), route(ty), route(tz));
    }
}

/// [`route8`] on AVX2 for the leading multiple of 32 of the first `n` points; returns the
/// points done. Each tag selects its axis's source and complement by byte shuffles (one
/// table lookup a mask).
///
/// # Safety
/// AVX2; `n <= BLOCK`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn route8_avx2(data: &mut [[u8; BLOCK]; 3], tags: &[[u8; BLOCK]; 3], n: usize) -> usize {
    use std::arch::x86_64::*;
    /// Per tag value (bits 0-2): the mask selecting axis `j` (`j` < 3) or complementing
    /// (`j` = 3), as [`route8`] reads the tag; both 128-bit lanes alike.
    const fn table(j: usize) -> [u8; 32] {
        let mut r = [0u8; 32];
        let mut t = 0;
        while t < 32 {
            let v = t & 7;
            let neg = (v & 1) + (v >> 1 & 1) + (v >> 2 & 1) == 2;
            let sel = if neg { !v & 7 } else { v };
            let on = if j == 3 { neg } else { sel >> j & 1 == 1 };
            r[t] = if on { 0xff } else { 0 };
            t += 1;
        }
        r
    }
    const TABLES: [[u8; 32]; 4] = [table(0), table(1), table(2), table(3)];
    assert!(n <= BLOCK);
    let mut i = 0;
    // SAFETY: AVX2 as the caller guarantees; every load and store lies within the first
    // `n` bytes of each plane.
    unsafe {
        let tab = TABLES.map(|t| _mm256_loadu_si256(t.as_ptr().cast()));
        let seven = _mm256_set1_epi8(7);
        while i + 32 <= n {
            let v = [0, 1, 2].map(|a| _mm256_loadu_si256(data[a].as_ptr().add(i).cast()));
            for (a, t) in tags.iter().enumerate() {
                let t = _mm256_and_si256(_mm256_loadu_si256(t.as_ptr().add(i).cast()), seven);
                let m = tab.map(|tb| _mm256_shuffle_epi8(tb, t));
                let r = _mm256_or_si256(
                    _mm256_and_si256(v[0], m[0]),
                    _mm256_or_si256(_mm256_and_si256(v[1], m[1]), _mm256_and_si256(v[2], m[2])),
                );
                _mm256_storeu_si256(
                    data[a].as_mut_ptr().add(i).cast(),
                    _mm256_xor_si256(r, m[3]),
                );
            }
            i += 32;
        }
    }
    i
}

/// Levels `from .. to` (`to <= S::BITS`) of [`h3_skilling`] (`DEC`, upward) or of
/// [`h3_skilling_enc`] (downward), run on the low `S::BITS` bits of each value in lanes of
/// `S`.
#[inline(always)]
fn sk_levels_in<L: Word, S: Word, const DEC: bool>(
    x: &mut [L],
    y: &mut [L],
    z: &mut [L],
    from: u32,
    to: u32,
) {
    #[inline(always)]
    fn levels<S: Word, const DEC: bool>(x: &mut [S], y: &mut [S], z: &mut [S], from: u32, to: u32) {
        if DEC {
            sk_levels(x, y, z, from, to)
        } else {
            ske_levels(x, y, z, from, to)
        }
    }
    if from >= to {
        return;
    }
    if S::BITS >= L::BITS {
        levels::<L, DEC>(x, y, z, from, to);
        return;
    }
    let n = x.len();
    let mut lo = [[S::default(); BLOCK]; 3];
    let [lx, ly, lz] = &mut lo;
    let (lx, ly, lz) = (&mut lx[..n], &mut ly[..n], &mut lz[..n]);
    for (l, v) in [(&mut *lx, &*x), (&mut *ly, &*y), (&mut *lz, &*z)] {
        for (o, &w) in l.iter_mut().zip(v.iter()) {
            *o = cast(w);
        }
    }
    levels::<S, DEC>(lx, ly, lz, from, to);
    let high = L::from_u64(u64::MAX << S::BITS);
    for (v, l) in [(x, &*lx), (y, &*ly), (z, &*lz)] {
        for (o, &w) in v.iter_mut().zip(l.iter()) {
            *o = o.and(high).or(cast(w));
        }
    }
}

/// One step of Skilling's loops at level `q` (`p`: the bits below `q`) for axis `v`: where
/// its bit `q` is set, invert the low bits of axis 0 (`a`), else exchange the low bits of
/// `a` and `v`.
#[inline(always)]
fn sk_step<L: Word>(a: &mut L, v: &mut L, p: L, q: u32) {
    let m = v.bit_mask(q);
    let t = a.xor(*v).and(p).and(m.xor(p));
    *a = a.xor(t).xor(p.and(m));
    *v = v.xor(t);
}

/// Levels `from .. to` of [`h3_skilling`]: four a pass (one load and store of the block
/// per four levels), then the rest.
#[inline(always)]
fn sk_levels<L: Word>(x: &mut [L], y: &mut [L], z: &mut [L], from: u32, to: u32) {
    let mut q = from;
    while q + 4 <= to {
        sk_pass::<L, 4>(x, y, z, q);
        q += 4;
    }
    match to - q {
        3 => sk_pass::<L, 3>(x, y, z, q),
        2 => sk_pass::<L, 2>(x, y, z, q),
        1 => sk_pass::<L, 1>(x, y, z, q),
        _ => {}
    }
}

/// Levels `q0 .. q0 + K` of [`h3_skilling`] over a block.
#[inline(always)]
fn sk_pass<L: Word, const K: usize>(x: &mut [L], y: &mut [L], z: &mut [L], q0: u32) {
    let n = x.len();
    let (y, z) = (&mut y[..n], &mut z[..n]);
    for ((a, b), c) in x.iter_mut().zip(y.iter_mut()).zip(z.iter_mut()) {
        let (mut a0, mut b0, mut c0) = (*a, *b, *c);
        for k in 0..K as u32 {
            let q = q0 + k;
            let p = L::from_u64((1u64 << q) - 1);
            // Axis 2, then 1, then 0 (whose exchange with itself is nothing).
            sk_step(&mut a0, &mut c0, p, q);
            sk_step(&mut a0, &mut b0, p, q);
            a0 = a0.xor(p.and(a0.bit_mask(q)));
        }
        (*a, *b, *c) = (a0, b0, c0);
    }
}

/// Skilling's axes-to-transpose step in lanes of `L` (the inverse of [`h3_skilling`]):
/// `x, y, z` hold a point and become the transposed index, whose Morton interleave
/// (coordinate 0 most significant) is the Hilbert index. One branch-free pass of
/// invert/exchange steps per bit level from the top down to level 1, then the Gray encode.
/// Level `q` reads bit `q` and changes only the bits below it, so the levels below
/// `S::BITS` (then `T::BITS`) run on the low parts in the narrower lanes, as in
/// [`h3_skilling`].
#[inline(always)]
fn h3_skilling_enc<L: Word, S: Word, T: Word>(x: &mut [L], y: &mut [L], z: &mut [L], nbits: u32) {
    let n = x.len();
    let (y, z) = (&mut y[..n], &mut z[..n]);
    let s_from = nbits.min(S::BITS);
    let t_from = nbits.min(T::BITS);
    sk_levels_in::<L, L, false>(x, y, z, s_from, nbits);
    sk_levels_in::<L, S, false>(x, y, z, t_from, s_from);
    sk_levels_in::<L, T, false>(x, y, z, 1, t_from);
    for ((a, b), c) in x.iter_mut().zip(y.iter_mut()).zip(z.iter_mut()) {
        *b = b.xor(*a);
        *c = c.xor(*b);
        // Bit j of t: the parity of the bits of c above j.
        let mut p = *c;
        let mut sh = 1;
        while sh < L::BITS {
            p = p.xor(p.shr(sh));
            sh <<= 1;
        }
        let t = p.shr(1);
        *a = a.xor(t);
        *b = b.xor(t);
        *c = c.xor(t);
    }
}

/// Levels `to - 1` down to `from` of [`h3_skilling_enc`]: four a pass, then the rest.
#[inline(always)]
fn ske_levels<L: Word>(x: &mut [L], y: &mut [L], z: &mut [L], from: u32, to: u32) {
    let mut hi = to;
    while hi >= from + 4 {
        ske_pass::<L, 4>(x, y, z, hi - 1);
        hi -= 4;
    }
    match hi - from {
        3 => ske_pass::<L, 3>(x, y, z, hi - 1),
        2 => ske_pass::<L, 2>(x, y, z, hi - 1),
        1 => ske_pass::<L, 1>(x, y, z, hi - 1),
        _ => {}
    }
}

/// Levels `q0, q0 - 1, .., q0 + 1 - K` of [`h3_skilling_enc`] over a block.
#[inline(always)]
fn ske_pass<L: Word, const K: usize>(x: &mut [L], y: &mut [L], z: &mut [L], q0: u32) {
    let n = x.len();
    let (y, z) = (&mut y[..n], &mut z[..n]);
    for ((a, b), c) in x.iter_mut().zip(y.iter_mut()).zip(z.iter_mut()) {
        let (mut a0, mut b0, mut c0) = (*a, *b, *c);
        for k in 0..K as u32 {
            let q = q0 - k;
            let p = L::from_u64((1u64 << q) - 1);
            // Axis 0, then 1, then 2, as in [`sk_pass`].
            a0 = a0.xor(p.and(a0.bit_mask(q)));
            sk_step(&mut a0, &mut b0, p, q);
            sk_step(&mut a0, &mut c0, p, q);
        }
        (*a, *b, *c) = (a0, b0, c0);
    }
}

/// 3-D Hilbert indices of one chunk by [`h3_skilling_enc`] in lanes of `L` (which must
/// hold `nbits` bits), then the Morton interleave into `O`. Returns the OR of every input
/// value.
#[inline(always)]
fn h3_encode_sk<U: Word, O: Word, L: Word, S: Word, T: Word>(
    src: Src<'_, U>,
    out: &mut [O],
    nbits: u32,
    step: MortonStep,
) -> U {
    let mut acc = U::default();
    let mut xb = [L::default(); BLOCK];
    let mut yb = [L::default(); BLOCK];
    let mut zb = [L::default(); BLOCK];
    for (bi, ob) in out.chunks_mut(BLOCK).enumerate() {
        let n = ob.len();
        let r0 = bi * BLOCK;
        let (x, y, z) = (&mut xb[..n], &mut yb[..n], &mut zb[..n]);
        match src {
            Src::Rows(s) => {
                let it = x.iter_mut().zip(y.iter_mut()).zip(z.iter_mut());
                for (((a, b), c), r) in it.zip(s[3 * r0..3 * (r0 + n)].chunks_exact(3)) {
                    acc = acc.or(r[0]).or(r[1]).or(r[2]);
                    (*a, *b, *c) = (cast(r[0]), cast(r[1]), cast(r[2]));
                }
            }
            Src::Cols([sx, sy, sz]) => {
                for (l, v) in [(&mut *x, sx), (&mut *y, sy), (&mut *z, sz)] {
                    for (o, &w) in l.iter_mut().zip(&v[r0..r0 + n]) {
                        acc = acc.or(w);
                        *o = cast(w);
                    }
                }
            }
        }
        h3_skilling_enc::<L, S, T>(x, y, z, nbits);
        // Skilling's transposed index has coordinate 0 most significant.
        #[cfg(target_arch = "x86_64")]
        let done = match step {
            MortonStep::Nib if nib3_encodes::<L, O>() => {
                let ptrs = [x.as_ptr(), y.as_ptr(), z.as_ptr()].map(|p| p as *const u8);
                let o: *mut u8 = ob.as_mut_ptr().cast();
                // SAFETY: `Nib` means AVX2; `nib3_encodes` checked the types; each column
                // holds `n` values and `ob` `n` codes.
                unsafe { nib3_encode_prefix::<L, O>(ptrs, false, n, o, [2, 1, 0]).0 }
            }
            _ => 0,
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = {
            let _ = step;
            0
        };
        let cols = Src::Cols([&x[done..], &y[done..], &z[done..]]);
        map3(cols, &mut ob[done..], M3E::<5, true>);
    }
    acc
}

/// Coordinates of one chunk of 3-D Hilbert indices by [`h3_skilling`] in lanes of `L`
/// (which must hold `nbits` bits), the Morton de-interleave in lanes of `W` (which must
/// hold the code) or by the SIMD kernel of `step` where it takes these
/// types. Returns the OR of the codes.
#[inline(always)]
fn h3_decode_sk<U: Word, O: Word, L: Word, S: Word, T: Word, W: Word>(
    codes: &[U],
    dst: &mut Dst<'_, O>,
    nbits: u32,
    step: MortonStep,
) -> U {
    let mut acc = U::default();
    let mut xb = [L::default(); BLOCK];
    let mut yb = [L::default(); BLOCK];
    let mut zb = [L::default(); BLOCK];
    let mut scratch = HiScratch::new();
    for (bi, cb) in codes.chunks(BLOCK).enumerate() {
        let n = cb.len();
        #[cfg(target_arch = "x86_64")]
        if h3_splits::<U, L>(step, nbits) {
            // SAFETY: `Nib` means AVX2; `h3_splits` checked the code width; chunks of
            // BLOCK.
            acc = acc.or(unsafe { h3_split_in(cb, &mut scratch) });
            hi_levels(&mut scratch, n, nbits, true);
            hi_out(&scratch, n, dst, bi * BLOCK, true);
            continue;
        }
        let (x, y, z) = (&mut xb[..n], &mut yb[..n], &mut zb[..n]);
        let mut cols = Dst::Cols([x, y, z]);
        // Skilling's transposed index has coordinate 0 most significant.
        #[cfg(target_arch = "x86_64")]
        let done = match step {
            MortonStep::Vbmi if morton3_dec_fits::<U, L>(nbits, false) => {
                // SAFETY: `Vbmi` means AVX-512 F/BW and VBMI; `morton3_dec_fits` checked
                // the types.
                let (d, a) = unsafe { morton3_dec_prefix(cb, 0, &mut cols, [2, 1, 0], nbits) };
                acc = acc.or(U::from_u64(a));
                d
            }
            MortonStep::Nib if morton3_simd_decodes::<U, L>(Kernel::Avx2, nbits, false) => {
                let Dst::Cols(c) = &mut cols else {
                    unreachable!()
                };
                let ptrs = [0, 1, 2].map(|i| c[i].as_mut_ptr() as *mut u8);
                // SAFETY: `Nib` means AVX2; `morton3_simd_decodes` checked the types; each
                // column holds `cb.len()` values.
                let (d, a) =
                    unsafe { nib3_decode_prefix::<U, L>(cb, nbits, ptrs, false, [2, 1, 0]) };
                acc = acc.or(U::from_u64(a));
                d
            }
            _ => 0,
        };
        #[cfg(not(target_arch = "x86_64"))]
        let done = {
            let _ = step;
            0
        };
        for &c in &cb[done..] {
            acc = acc.or(c);
        }
        put3(&cb[done..], done, &mut cols, M3D::<W>(2, 1, 0, PhantomData));
        let Dst::Cols([x, y, z]) = cols else {
            unreachable!()
        };
        h3_skilling::<L, S, T>(x, y, z, nbits, &mut scratch, step.avx2());
        let r0 = bi * BLOCK;
        match dst {
            Dst::Rows(o) => {
                let it = x.iter().zip(y.iter()).zip(z.iter());
                for (r, ((&a, &b), &c)) in o[3 * r0..3 * (r0 + n)].chunks_exact_mut(3).zip(it) {
                    r[0] = cast(a);
                    r[1] = cast(b);
                    r[2] = cast(c);
                }
            }
            Dst::Cols([xo, yo, zo]) => {
                for (o, v) in xo[r0..r0 + n].iter_mut().zip(x.iter()) {
                    *o = cast(*v);
                }
                for (o, v) in yo[r0..r0 + n].iter_mut().zip(y.iter()) {
                    *o = cast(*v);
                }
                for (o, v) in zo[r0..r0 + n].iter_mut().zip(z.iter()) {
                    *o = cast(*v);
                }
            }
        }
    }
    acc
}

/// 3-D Morton coordinates of one chunk of codes; returns the OR of the codes.
#[inline(always)]
fn m3_decode<U: Word, O: Word>(codes: &[U], dst: &mut Dst<'_, O>, f: impl G3<U, O>) -> U {
    put3(codes, 0, dst, f)
}

/// Codes of one chunk; returns the OR of every input value. `step`: the 3-D Hilbert
/// encoder's interleave kernel. `#[inline(always)]` so each SIMD copy below compiles it
/// anew.
#[inline(always)]
fn encode_chunk<U: Word, O: Word>(
    curve: Curve,
    d: usize,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
    step: MortonStep,
) -> U {
    match (curve, d) {
        (Curve::Hilbert, 2) => match h2tile::tiles() {
            Some(t) if step == MortonStep::Generic => h2tile::encode_chunk(t, src, out, nbits),
            _ => map2(src, out, H2E(nbits)),
        },
        (Curve::Hilbert, _) => match h3tile::tiles() {
            Some(t) if step == MortonStep::Generic && h3tile::encodes(nbits, src.rows()) => {
                h3tile::encode_chunk(t, src, out, nbits)
            }
            // Skilling's steps as in decoding.
            _ if nbits <= 8 => h3_encode_sk::<U, O, u8, u8, u8>(src, out, nbits, step),
            _ if nbits <= 16 => h3_encode_sk::<U, O, u16, u8, u8>(src, out, nbits, step),
            _ => h3_encode_sk::<U, O, u32, u16, u8>(src, out, nbits, step),
        },
        // Only the steps the width needs where the output type has room for more: nbits 1
        // / 2 1.11-1.18x hilbertsfc's time (the portable kernel, both held to SSE2) with
        // the two steps of uint8 lanes.
        (Curve::Morton { msb }, 2) => match (msb, steps2(nbits)) {
            (true, 0) => map2(src, out, M2E::<true, 0>),
            (true, 1) => map2(src, out, M2E::<true, 1>),
            (true, _) => map2(src, out, M2E::<true>),
            (false, 0) => map2(src, out, M2E::<false, 0>),
            (false, 1) => map2(src, out, M2E::<false, 1>),
            (false, _) => map2(src, out, M2E::<false>),
        },
        // The steps the width needs (nbits 3 / 6 / 14: 2 / 3 / 4 of the lanes' 3 / 4 / 5),
        // in classes that keep the copies few.
        // The portable kernel's spreads in 32- and 64-bit lanes (nbits 6-8, 11-21) cost
        // more than byte lookups; on AMD only at nbits 6-16 (EPYC Zen 3, Rust harness,
        // 1M points, alternating runs: nbits 17-21 3.5 -> 2.6 ns a point by the spreads,
        // 11-16 2.2 against 4.5-7.0).
        (Curve::Morton { msb }, _)
            if step == MortonStep::Generic
                && ((6..=8).contains(&nbits) || (nbits > 10 && (nbits <= 16 || !amd()))) =>
        {
            let t = m3_spread();
            match (msb, nbits.div_ceil(8)) {
                (true, 1) => map3(src, out, M3L::<true, 1>(t)),
                (true, 2) => map3(src, out, M3L::<true, 2>(t)),
                (true, _) => map3(src, out, M3L::<true, 3>(t)),
                (false, 1) => map3(src, out, M3L::<false, 1>(t)),
                (false, 2) => map3(src, out, M3L::<false, 2>(t)),
                (false, _) => map3(src, out, M3L::<false, 3>(t)),
            }
        }
        (Curve::Morton { msb }, _) => match steps2(nbits) {
            0..=2 => morton3_map::<U, O, 2>(src, out, msb),
            3 => morton3_map::<U, O, 3>(src, out, msb),
            4 => morton3_map::<U, O, 4>(src, out, msb),
            _ => morton3_map::<U, O, 5>(src, out, msb),
        },
    }
}

/// The kernel the 3-D Hilbert encoder interleaves (decoder de-interleaves) its transposed
/// index with (a Morton code, coordinate 0 most significant) where the types fit, before
/// the generic loop; all but `Generic` also tell the decoder's split levels
/// ([`h3_skilling_hi`]) that the CPU has AVX2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MortonStep {
    /// The generic loop only.
    Generic,
    /// The generic loop, on the AVX-512 kernel without VBMI.
    GenericAvx512,
    /// The AVX-512 VBMI/GFNI kernels ([`morton3_dec_prefix`]; decoding only).
    Vbmi,
    /// The AVX2 nibble-table kernels ([`nib3_encode_prefix`], [`nib3_decode_prefix`]).
    Nib,
}

impl MortonStep {
    /// The (de-)interleave for kernel `k`.
    fn of(k: Kernel) -> Self {
        match k {
            _ if fast9(k) => MortonStep::Vbmi,
            Kernel::Avx512 => MortonStep::GenericAvx512,
            Kernel::Avx2 => MortonStep::Nib,
            Kernel::Portable => MortonStep::Generic,
        }
    }

    /// Whether the CPU has AVX2 (every kernel but the portable one).
    fn avx2(self) -> bool {
        self != MortonStep::Generic
    }
}

/// Coordinates of one chunk of codes; returns the OR of the codes. `step`: the 3-D Hilbert
/// decoder's de-interleave kernel.
#[inline(always)]
fn decode_chunk<U: Word, O: Word>(
    curve: Curve,
    d: usize,
    nbits: u32,
    codes: &[U],
    mut dst: Dst<'_, O>,
    step: MortonStep,
) -> U {
    match (curve, d) {
        (Curve::Hilbert, 2) => match h2tile::tiles() {
            Some(t) if step == MortonStep::Generic && h2tile::decodes(nbits) => {
                h2tile::decode_chunk(t, codes, &mut dst, nbits)
            }
            _ => put2(codes, &mut dst, H2D(nbits)),
        },
        (Curve::Hilbert, _) => match h3tile::tiles() {
            Some(t) if step == MortonStep::Generic && h3tile::decodes(nbits, dst.rows()) => {
                h3tile::decode_chunk(t, codes, &mut dst, nbits)
            }
            // Skilling's steps in the narrowest lanes that hold the coordinates (each tier
            // below in narrower ones), the Morton de-interleave in lanes that hold the code.
            _ if nbits <= 5 => h3_decode_sk::<U, O, u8, u8, u8, u16>(codes, &mut dst, nbits, step),
            _ if nbits <= 8 => h3_decode_sk::<U, O, u8, u8, u8, u32>(codes, &mut dst, nbits, step),
            _ if nbits <= 10 => {
                h3_decode_sk::<U, O, u16, u8, u8, u32>(codes, &mut dst, nbits, step)
            }
            _ if nbits <= 16 => {
                h3_decode_sk::<U, O, u16, u8, u8, u64>(codes, &mut dst, nbits, step)
            }
            _ => h3_decode_sk::<U, O, u32, u16, u8, u64>(codes, &mut dst, nbits, step),
        },
        // The portable kernel's de-interleave in 64-bit lanes (nbits 17-24) costs more
        // than byte lookups.
        // The portable kernel's de-interleave at nbits 16 and 25-32 by [`M2U`] (1.02-1.03x /
        // 0.98-0.99x hilbertsfc's time at nbits 16 / 32 against 1.05-1.09x / 1.04-1.06x by
        // [`M2D`]; `benches/sfc.py`-style runs alternating, both libraries held to SSE2).
        (Curve::Morton { msb }, 2)
            if step == MortonStep::Generic && (nbits == 16 || nbits > 24) =>
        {
            match (msb, nbits) {
                (true, 16) => put2(codes, &mut dst, M2U::<u32, true>(PhantomData)),
                (true, _) => put2(codes, &mut dst, M2U::<u64, true>(PhantomData)),
                (false, 16) => put2(codes, &mut dst, M2U::<u32, false>(PhantomData)),
                (false, _) => put2(codes, &mut dst, M2U::<u64, false>(PhantomData)),
            }
        }
        (Curve::Morton { msb }, 2) if step == MortonStep::Generic && (17..=24).contains(&nbits) => {
            let t = m2_unspread();
            match (msb, nbits) {
                (true, 17..=20) => put2(codes, &mut dst, M2DL::<true, 5>(t)),
                (true, _) => put2(codes, &mut dst, M2DL::<true, 6>(t)),
                (false, 17..=20) => put2(codes, &mut dst, M2DL::<false, 5>(t)),
                (false, _) => put2(codes, &mut dst, M2DL::<false, 6>(t)),
            }
        }
        (Curve::Morton { msb }, 2) => match (msb, 2 * nbits + 2 <= O::Wide2::BITS) {
            (true, true) => put2(codes, &mut dst, M2D::<true, true>),
            (true, false) => put2(codes, &mut dst, M2D::<true, false>),
            (false, true) => put2(codes, &mut dst, M2D::<false, true>),
            (false, false) => put2(codes, &mut dst, M2D::<false, false>),
        },
        // The portable kernel's de-interleave in 32- and 64-bit lanes (nbits 9-21)
        // costs more than byte lookups, except on AMD (EPYC Zen 3, Rust harness, 1M
        // points, alternating runs, ns a point, lookups -> lanes: nbits 11-14 2.8-3.9 ->
        // 2.3, 16 3.2-4.3 -> 2.3, 17-21 3.1-4.6 -> 2.7-2.8; `uint32` codes at nbits 9-10
        // take [`m3w`] first, `uint64` ones there were not timed).
        (Curve::Morton { msb }, _) if step == MortonStep::Generic && nbits > 8 && !amd() => {
            let (t16, t21) = m3_unspread();
            match (msb, nbits) {
                (true, 9..=10) => m3_decode(codes, &mut dst, M3DL::<true, 16, 4>(t16)),
                (true, 11..=13) => m3_decode(codes, &mut dst, M3DL::<true, 16, 5>(t16)),
                (true, 14..=16) => m3_decode(codes, &mut dst, M3DL::<true, 16, 6>(t16)),
                (true, 17..=18) => m3_decode(codes, &mut dst, M3DL::<true, 21, 7>(t21)),
                (true, _) => m3_decode(codes, &mut dst, M3DL::<true, 21, 8>(t21)),
                (false, 9..=10) => m3_decode(codes, &mut dst, M3DL::<false, 16, 4>(t16)),
                (false, 11..=13) => m3_decode(codes, &mut dst, M3DL::<false, 16, 5>(t16)),
                (false, 14..=16) => m3_decode(codes, &mut dst, M3DL::<false, 16, 6>(t16)),
                (false, 17..=18) => m3_decode(codes, &mut dst, M3DL::<false, 21, 7>(t21)),
                (false, _) => m3_decode(codes, &mut dst, M3DL::<false, 21, 8>(t21)),
            }
        }
        (Curve::Morton { msb }, _) => {
            let (s0, s2) = if msb { (2, 0) } else { (0, 2) };
            // As in encoding: the lanes that hold the code, the steps the width needs;
            // nbits 3-5 by multiplies.
            match (msb, nbits) {
                // The shifts as literals: byte lanes have no shift by a variable count.
                (true, 0..=2) => m3_decode(codes, &mut dst, M3D::<u16, 1>(2, 1, 0, PhantomData)),
                (false, 0..=2) => m3_decode(codes, &mut dst, M3D::<u16, 1>(0, 1, 2, PhantomData)),
                (true, 3) => m3_decode(codes, &mut dst, M3DM::<true, 3>),
                (true, 4) => m3_decode(codes, &mut dst, M3DM::<true, 4>),
                (true, 5) => m3_decode(codes, &mut dst, M3DM::<true, 5>),
                (false, 3) => m3_decode(codes, &mut dst, M3DM::<false, 3>),
                (false, 4) => m3_decode(codes, &mut dst, M3DM::<false, 4>),
                (false, 5) => m3_decode(codes, &mut dst, M3DM::<false, 5>),
                (_, 6..=8) => m3_decode(codes, &mut dst, M3D::<u32, 3>(s0, 1, s2, PhantomData)),
                (_, 9..=10) => m3_decode(codes, &mut dst, M3D::<u32, 4>(s0, 1, s2, PhantomData)),
                (_, 11..=16) => m3_decode(codes, &mut dst, M3D::<u64, 4>(s0, 1, s2, PhantomData)),
                (_, _) => m3_decode(codes, &mut dst, M3D::<u64, 5>(s0, 1, s2, PhantomData)),
            }
        }
    }
}

/// 3-D decoding of codes of at most 9 bits (`nbits <= 3`) into `uint8` coordinates by
/// byte permutes: each coordinate's value for every code is a 512-byte table held in eight
/// AVX-512 registers, indexed 64 codes at a time with `vpermi2b` (AVX-512 VBMI). Scalar
/// table lookups cost about 0.4 ns a point and AVX-512 gathers more; this costs well under
/// 0.1 ns. The tables come from [`decode_chunk`] on every 9-bit code, so both paths agree
/// by construction.
#[cfg(target_arch = "x86_64")]
mod perm9 {
    use super::*;
    use std::arch::x86_64::*;

    /// Coordinate `i` of code `c` at `t[i][c]`.
    pub(super) type Tables = [[u8; 512]; 3];

    /// Whether this CPU has AVX-512 VBMI (on top of the [`Kernel::Avx512`] set).
    pub(super) fn available() -> bool {
        static V: OnceLock<bool> = OnceLock::new();
        *V.get_or_init(|| std::arch::is_x86_feature_detected!("avx512vbmi"))
    }

    /// The tables of `curve` at `nbits <= 3` (entries past `2^(3 nbits)` belong to codes
    /// the range check rejects).
    pub(super) fn tables(curve: Curve, nbits: u32) -> &'static Tables {
        static T: [[OnceLock<Tables>; 4]; 3] = [const { [const { OnceLock::new() }; 4] }; 3];
        let ci = match curve {
            Curve::Hilbert => 0,
            Curve::Morton { msb: false } => 1,
            Curve::Morton { msb: true } => 2,
        };
        T[ci][nbits as usize].get_or_init(|| {
            let codes: Vec<u16> = (0..512).collect();
            let mut t = [[0u8; 512]; 3];
            let [a, b, c] = &mut t;
            for (i, cb) in codes.chunks(BLOCK).enumerate() {
                let r = i * BLOCK..(i + 1) * BLOCK;
                let dst = Dst::Cols([&mut a[r.clone()], &mut b[r.clone()], &mut c[r]]);
                decode_chunk::<u16, u8>(curve, 3, nbits, cb, dst, super::MortonStep::Generic);
            }
            t
        })
    }

    /// 64 byte lookups in a 512-entry table `t` (eight registers): `lo` holds index bits
    /// 0-7 of each lane, `m8` bit 8.
    #[inline(always)]
    unsafe fn look(t: &[__m512i; 8], lo: __m512i, m8: u64) -> __m512i {
        let m7 = _mm512_movepi8_mask(lo);
        let r0 = _mm512_permutex2var_epi8(t[0], lo, t[1]);
        let r1 = _mm512_permutex2var_epi8(t[2], lo, t[3]);
        let r2 = _mm512_permutex2var_epi8(t[4], lo, t[5]);
        let r3 = _mm512_permutex2var_epi8(t[6], lo, t[7]);
        let s0 = _mm512_mask_blend_epi8(m7, r0, r1);
        let s1 = _mm512_mask_blend_epi8(m7, r2, r3);
        _mm512_mask_blend_epi8(m8, s0, s1)
    }

    /// `(x/y index, z index, z mask)` of one output vector of [`interleave_idx`].
    type Interleave = ([u8; 64], [u8; 64], u64);

    /// Row-major `(n, 3)` interleave of three 64-byte columns: for output vector `j`
    /// (bytes `64 j ..`), the `vpermi2b` index taking `x`/`y` bytes, and the `z` index and
    /// mask.
    fn interleave_idx() -> &'static [Interleave; 3] {
        static I: OnceLock<[Interleave; 3]> = OnceLock::new();
        I.get_or_init(|| {
            let mut v = [([0u8; 64], [0u8; 64], 0u64); 3];
            for (j, (xy, zi, zm)) in v.iter_mut().enumerate() {
                for q in 0..64 {
                    let g = 64 * j + q;
                    let (p, i) = ((g / 3) as u8, g % 3);
                    match i {
                        0 => xy[q] = p,
                        1 => xy[q] = 64 + p,
                        _ => {
                            zi[q] = p;
                            *zm |= 1 << q;
                        }
                    }
                }
            }
            v
        })
    }

    /// Decodes `codes` (`u8` or `u16` in `U`) into `dst` (`u8` in `O`); returns the OR of
    /// the codes.
    ///
    /// # Safety
    /// The CPU must support AVX-512 F/BW and VBMI; `U` must be 8 or 16 bits and `O` 8 bits
    /// wide (unsigned, as every [`Word`]).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn decode<U: Word, O: Word>(
        codes: &[U],
        dst: &mut Dst<'_, O>,
        t: &Tables,
    ) -> U {
        debug_assert!(O::BITS == 8 && (U::BITS == 8 || U::BITS == 16));
        let n = codes.len();
        let (out, rows): ([*mut u8; 3], bool) = match dst {
            Dst::Rows(o) => {
                assert!(o.len() >= 3 * n);
                ([o.as_mut_ptr() as *mut u8; 3], true)
            }
            Dst::Cols([x, y, z]) => {
                assert!(x.len() >= n && y.len() >= n && z.len() >= n);
                let p = |s: &mut [O]| s.as_mut_ptr() as *mut u8;
                ([p(x), p(y), p(z)], false)
            }
        };
        let tab: [[__m512i; 8]; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|j| unsafe {
                _mm512_loadu_si512(t[i].as_ptr().add(64 * j) as *const _)
            })
        });
        let il = interleave_idx();
        let ild: [(__m512i, __m512i, u64); 3] = std::array::from_fn(|j| unsafe {
            (
                _mm512_loadu_si512(il[j].0.as_ptr() as *const _),
                _mm512_loadu_si512(il[j].1.as_ptr() as *const _),
                il[j].2,
            )
        });
        let even: [u8; 64] = std::array::from_fn(|k| (2 * k) as u8);
        let odd: [u8; 64] = std::array::from_fn(|k| (2 * k + 1) as u8);
        let even = _mm512_loadu_si512(even.as_ptr() as *const _);
        let odd = _mm512_loadu_si512(odd.as_ptr() as *const _);
        let one = _mm512_set1_epi8(1);
        let mut acc = _mm512_setzero_si512();
        let src = codes.as_ptr() as *const u8;
        let mut k = 0;
        while k + 64 <= n {
            // SAFETY (whole loop body): k + 64 <= n, and every output holds n (columns) or
            // 3 n (rows) bytes (asserted above).
            let (lo, hi) = if U::BITS == 16 {
                let a = _mm512_loadu_si512(src.add(2 * k) as *const _);
                let b = _mm512_loadu_si512(src.add(2 * k + 64) as *const _);
                acc = _mm512_or_si512(acc, _mm512_or_si512(a, b));
                (
                    _mm512_permutex2var_epi8(a, even, b),
                    _mm512_permutex2var_epi8(a, odd, b),
                )
            } else {
                let a = _mm512_loadu_si512(src.add(k) as *const _);
                acc = _mm512_or_si512(acc, a);
                (a, _mm512_setzero_si512())
            };
            let m8 = _mm512_test_epi8_mask(hi, one);
            let c: [__m512i; 3] = std::array::from_fn(|i| unsafe { look(&tab[i], lo, m8) });
            if rows {
                for (j, &(xy, zi, zm)) in ild.iter().enumerate() {
                    let v = _mm512_permutex2var_epi8(c[0], xy, c[1]);
                    let v = _mm512_mask_permutexvar_epi8(v, zm, zi, c[2]);
                    _mm512_storeu_si512(out[0].add(3 * k + 64 * j) as *mut _, v);
                }
            } else {
                for (o, v) in out.iter().zip(c) {
                    _mm512_storeu_si512(o.add(k) as *mut _, v);
                }
            }
            k += 64;
        }
        let mut lanes = [0u8; 64];
        _mm512_storeu_si512(lanes.as_mut_ptr() as *mut _, acc);
        let mut a = 0u64;
        for (i, &l) in lanes.iter().enumerate() {
            a |= if U::BITS == 16 && i % 2 == 1 {
                (l as u64) << 8
            } else {
                l as u64
            };
        }
        let mut acc = U::from_u64(a);
        for (r, &c) in codes.iter().enumerate().skip(k) {
            acc = acc.or(c);
            let ci = c.to_u64() as usize & 511;
            for (i, o) in out.iter().enumerate() {
                let at = if rows { 3 * r + i } else { r };
                // SAFETY: r < n; as in the loop above.
                *o.add(at) = t[i][ci];
            }
        }
        acc
    }
}

/// 3-D Hilbert decoding of codes of at most 9 bits (`nbits <= 3`) into `uint8`
/// coordinates on AVX2 by byte-table lookups (`vpshufb`), 32 codes a step, from the
/// curve's self-similarity: each axis's bits above the lowest level are a function of the
/// code's top 6 bits `p` (one 64-entry table for the three axes), and the lowest level
/// is the curve's one-level pattern `g` under a signed permutation of the axes:
/// `perm(g[o]) ^ flip` for the low 3 code bits `o`, `(perm, flip)` a second 64-entry
/// table of `p` (a cell run backwards needs no more: reversing the Gray-code pattern
/// inverts one axis). Every table is read off the generic decoder's output for each
/// 9-bit code ([`perm9::tables`]), so the two agree by construction. 12 byte shuffles
/// and 8 blends per 32 codes, where the Morton de-interleave and Skilling's loops in byte
/// lanes ran about twice the steps.
#[cfg(target_arch = "x86_64")]
mod hil9 {
    use super::*;
    use std::arch::x86_64::*;

    /// The axis permutations: bit `j` of [`apply`]`(s, w)` is bit `PERMS[s][j]` of `w`
    /// (bit 2 for axis 0, bit 1 for axis 1, bit 0 for axis 2).
    const PERMS: [[u8; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];

    fn apply(s: usize, w: u8) -> u8 {
        (0..3).fold(0, |o, j| o | ((w >> PERMS[s][j]) & 1) << j)
    }

    /// The lookup tables of one `nbits`.
    pub(super) struct Tables {
        /// `p` -> the axes' bits above the lowest level: axis 0 at bits 4-5, axis 1 at
        /// 2-3, axis 2 at 0-1.
        top: [u8; 64],
        /// `p` -> `perm << 3 | flip`.
        low: [u8; 64],
        /// `o` -> `g[o]` (entries 8-15 unused).
        g: [u8; 16],
        /// `perm << 3 | w` -> [`apply`]`(perm, w)`.
        perm: [u8; 48],
    }

    /// The tables of `nbits` (1 to 3); `None` if the decoder's output does not factor as
    /// above (never for this curve: a unit test checks every `nbits`), leaving the
    /// caller on its general path.
    pub(super) fn tables(nbits: u32) -> Option<&'static Tables> {
        static T: [OnceLock<Option<Tables>>; 4] = [const { OnceLock::new() }; 4];
        T[nbits as usize].get_or_init(|| build(nbits)).as_ref()
    }

    fn build(nbits: u32) -> Option<Tables> {
        let full = perm9::tables(Curve::Hilbert, nbits);
        let lowest = |c: usize| (full[0][c] & 1) << 2 | (full[1][c] & 1) << 1 | (full[2][c] & 1);
        let g: [u8; 8] = std::array::from_fn(lowest);
        let mut t = Tables {
            top: [0; 64],
            low: [0; 64],
            g: std::array::from_fn(|i| g[i & 7]),
            perm: std::array::from_fn(|i| apply(i >> 3, (i & 7) as u8)),
        };
        // Rows past the valid codes (nbits < 3) hold codes the range check rejects.
        for p in 0..1usize << (3 * nbits - 3) {
            let c0 = p << 3;
            let high = |c: usize| [0, 1, 2].map(|i| full[i][c] >> 1);
            if (1..8).any(|o| high(c0 | o) != high(c0)) {
                return None;
            }
            let [a, b, c] = high(c0);
            t.top[p] = a << 4 | b << 2 | c;
            let row: [u8; 8] = std::array::from_fn(|o| lowest(c0 | o));
            let fit = |s: usize, f: u8| (0..8).all(|o| apply(s, g[o]) ^ f == row[o]);
            let (s, f) = (0..6)
                .flat_map(|s| (0..8u8).map(move |f| (s, f)))
                .find(|&(s, f)| fit(s, f))?;
            t.low[p] = (s as u8) << 3 | f;
        }
        Some(t)
    }

    /// Whether [`decode`] runs on kernel `k` for codes `U` into coordinates `O`.
    pub(super) fn fits<U: Word, O: Word>(k: Kernel, curve: Curve, d: usize, nbits: u32) -> bool {
        k == Kernel::Avx2
            && curve == Curve::Hilbert
            && d == 3
            && nbits <= 3
            && O::BITS == 8
            && U::BITS <= 16
    }

    /// 64-entry lookup in the four 16-byte vectors of `t` of the index whose bits 0-3
    /// are those of `p` (bit 7 clear) and bits 4 and 5 the top bits of `b4` and `b5`.
    #[inline(always)]
    unsafe fn look64(t: &[__m256i; 4], p: __m256i, b4: __m256i, b5: __m256i) -> __m256i {
        let a = _mm256_blendv_epi8(
            _mm256_shuffle_epi8(t[0], p),
            _mm256_shuffle_epi8(t[1], p),
            b4,
        );
        let b = _mm256_blendv_epi8(
            _mm256_shuffle_epi8(t[2], p),
            _mm256_shuffle_epi8(t[3], p),
            b4,
        );
        _mm256_blendv_epi8(a, b, b5)
    }

    /// Coordinates of the leading `n / 32 * 32` codes of `CB` bytes (1 or 2) at `codes`
    /// into three columns at `dst`, or rows at `dst[0]` where `ROWS`. Returns the codes
    /// done and the OR of them.
    ///
    /// # Safety
    /// AVX2; `codes` readable for `n * CB` bytes, each column writable for `n` bytes
    /// (rows: `3 * n` at `dst[0]`).
    #[target_feature(enable = "avx2")]
    unsafe fn prefix<const CB: usize, const ROWS: bool>(
        codes: *const u8,
        n: usize,
        dst: [*mut u8; 3],
        t: &Tables,
    ) -> (usize, u64) {
        const { assert!(CB == 1 || CB == 2) };
        let sc = const { nib3::scatter(1) };
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let b16 = |a: &[u8]| nib3::bcast(a.try_into().unwrap());
            let t64 = |a: &[u8; 64]| -> [__m256i; 4] {
                std::array::from_fn(|k| b16(&a[16 * k..16 * k + 16]))
            };
            let (top, low) = (t64(&t.top), t64(&t.low));
            let g = b16(&t.g);
            let perm: [__m256i; 3] = std::array::from_fn(|k| b16(&t.perm[16 * k..16 * k + 16]));
            let sca: [[__m256i; 3]; 3] =
                sc.map(|v| v.map(|c| _mm256_loadu_si256(c.as_ptr().cast())));
            let set = _mm256_set1_epi8;
            let (c1, c6, c7, c15, c56) = (set(1), set(6), set(7), set(15), set(56));
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + 32 <= n {
                // The 32 codes' low bytes and high bytes in order; `p` (code bits 3-8)
                // has its bit 4 (code bit 7) as the low byte's top bit and bit 5 (code
                // bit 8) as the high byte's lowest: `b4`, `b5` carry them in each byte's
                // top bit for the blends, `p` itself only the nibble `vpshufb` reads.
                let (lo, b5) = if CB == 2 {
                    let (lo, hi, or) = nib3::bytes16(codes.add(2 * i));
                    acc = _mm256_or_si256(acc, or);
                    (lo, _mm256_slli_epi16(hi, 7))
                } else {
                    let lo = _mm256_loadu_si256(codes.add(i).cast());
                    acc = _mm256_or_si256(acc, lo);
                    (lo, _mm256_setzero_si256())
                };
                let (p, b4) = (_mm256_and_si256(_mm256_srli_epi16(lo, 3), c15), lo);
                let st = look64(&low, p, b4, b5);
                let gw = _mm256_shuffle_epi8(g, _mm256_and_si256(lo, c7));
                let w = _mm256_or_si256(_mm256_and_si256(st, c56), gw);
                let (w4, w5) = (_mm256_slli_epi16(w, 3), _mm256_slli_epi16(w, 2));
                let pw = _mm256_blendv_epi8(
                    _mm256_blendv_epi8(
                        _mm256_shuffle_epi8(perm[0], w),
                        _mm256_shuffle_epi8(perm[1], w),
                        w4,
                    ),
                    _mm256_shuffle_epi8(perm[2], w),
                    w5,
                );
                let b = _mm256_xor_si256(pw, _mm256_and_si256(st, c7));
                let hb = look64(&top, p, b4, b5);
                let bit = |v: __m256i| _mm256_and_si256(v, c1);
                let v = [
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16(hb, 3), c6),
                        bit(_mm256_srli_epi16(b, 2)),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16(hb, 1), c6),
                        bit(_mm256_srli_epi16(b, 1)),
                    ),
                    _mm256_or_si256(_mm256_and_si256(_mm256_add_epi8(hb, hb), c6), bit(b)),
                ];
                nib3::store3::<ROWS>(&v, &sca, dst, i);
                i += 32;
            }
            let mut a = [0u8; 32];
            _mm256_storeu_si256(a.as_mut_ptr().cast(), acc);
            (i, nib3::fold(a, CB))
        }
    }

    /// Coordinates of one chunk of codes: [`prefix`], the tail on the general path of
    /// kernel `k`. Returns the OR of the codes.
    pub(super) fn decode<U: Word, O: Word>(
        k: Kernel,
        nbits: u32,
        codes: &[U],
        dst: Dst<'_, O>,
        t: &Tables,
    ) -> U {
        assert!(fits::<U, O>(k, Curve::Hilbert, 3, nbits));
        let n = codes.len();
        let mut dst = dst;
        let (ptrs, rows) = dst.ptrs3(n);
        let cp: *const u8 = codes.as_ptr().cast();
        // SAFETY: `fits` checked the kernel (AVX2, picked only where the CPU has it) and
        // the widths; lengths asserted above.
        let (done, a) = unsafe {
            match (U::BITS, rows) {
                (16, true) => prefix::<2, true>(cp, n, ptrs, t),
                (16, false) => prefix::<2, false>(cp, n, ptrs, t),
                (_, true) => prefix::<1, true>(cp, n, ptrs, t),
                (_, false) => prefix::<1, false>(cp, n, ptrs, t),
            }
        };
        let tail = decode_chunk_k::<U, O>(
            k,
            Curve::Hilbert,
            3,
            nbits,
            &codes[done..],
            dst.after(3, done),
            MortonStep::of(k),
        );
        tail.or(U::from_u64(a))
    }
}

/// 3-D Morton kernels by AVX-512 VBMI byte permutes, with `(n, 3)` rows split into
/// columns and back by two-source permutes: 64 rows of bytes (three vectors `a, b, c`)
/// give each column as one `vpermt2b` of `a, b` and one masked `vpermb` of `c`; back,
/// each row vector is one `vpermt2b` of two columns and one masked `vpermb` of the third.
/// (Splitting wider lanes this way, then running the compiler's column loops, measured
/// slower than its strided loops; the wider kernels here instead split rows straight into
/// the lanes they compute in, zero-extending, and replace the magic-number steps.)
#[cfg(target_arch = "x86_64")]
mod rows3 {
    use std::arch::x86_64::*;

    /// One permute step: the lane indices (little-endian lanes of `64 / w` bytes) and the
    /// mask of the lanes the third vector supplies.
    type Step = ([u8; 64], u64);

    /// Column `j` of `w` rows in three vectors: lane `k` is element `3k + j` (the
    /// two-source permute reads it mod `2w`, the one-source permute mod `w`).
    const fn split_step(w: usize, j: usize) -> Step {
        let (mut idx, mut mask, mut k) = ([0u8; 64], 0u64, 0);
        while k < w {
            let e = 3 * k + j;
            idx[k * (64 / w)] = e as u8;
            if e >= 2 * w {
                mask |= 1 << k;
            }
            k += 1;
        }
        (idx, mask)
    }

    /// Row vector `v` of `w` rows from columns `x, y` (two-source, `y` at `w..`) and `z`
    /// (masked): lane `l` is element `e = v w + l`, row `e / 3`, column `e % 3`.
    const fn merge_step(w: usize, v: usize) -> Step {
        let (mut idx, mut mask, mut l) = ([0u8; 64], 0u64, 0);
        while l < w {
            let e = v * w + l;
            let (row, col) = (e / 3, e % 3);
            idx[l * (64 / w)] = (row + if col == 1 { w } else { 0 }) as u8;
            if col == 2 {
                mask |= 1 << l;
            }
            l += 1;
        }
        (idx, mask)
    }

    /// Byte `j` of the 3-D Morton spread of every 6-bit value shifted left by `s`.
    const fn spread_byte(s: u32, j: usize) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut v = 0;
        while v < 64 {
            let mut p = 0u32;
            let mut b = 0;
            while b < 6 {
                p |= ((v as u32 >> b) & 1) << (3 * b);
                b += 1;
            }
            t[v] = ((p << s) >> (8 * j)) as u8;
            v += 1;
        }
        t
    }

    /// `SPREAD[s][j]`: [`spread_byte`]`(s, j)`.
    const SPREAD: [[[u8; 64]; 3]; 3] = {
        let mut t = [[[0u8; 64]; 3]; 3];
        let mut s = 0;
        while s < 3 {
            let mut j = 0;
            while j < 3 {
                t[s][j] = spread_byte(s as u32, j);
                j += 1;
            }
            s += 1;
        }
        t
    };

    /// Lanes of output vector `v` of `ob`-byte codes (2 or 4) from byte planes `B0, B1`
    /// (two-source index; `B1` at 64..) and `B2` (mask `m2`); `m01` marks the lanes of
    /// `B0, B1` (the others, byte 3 of 4-byte codes and `B2`'s, start at zero).
    const fn planes_step(ob: usize, v: usize) -> ([u8; 64], u64, u64) {
        let (mut idx, mut m01, mut m2, mut q) = ([0u8; 64], 0u64, 0u64, 0);
        while q < 64 {
            let (p, j) = ((64 * v + q) / ob, q % ob);
            idx[q] = (p + if j == 1 { 64 } else { 0 }) as u8;
            if j < 2 {
                m01 |= 1 << q;
            } else if j == 2 {
                m2 |= 1 << q;
            }
            q += 1;
        }
        (idx, m01, m2)
    }
    const PLANES2: [([u8; 64], u64, u64); 2] = [planes_step(2, 0), planes_step(2, 1)];
    const PLANES4: [([u8; 64], u64, u64); 4] = [
        planes_step(4, 0),
        planes_step(4, 1),
        planes_step(4, 2),
        planes_step(4, 3),
    ];

    /// 3-D Morton codes of `uint8` coordinates below 64 (rows, or three columns, `n` points
    /// at `src`) into `ob`-byte codes (2: `uint16`, for at most 5 bits a coordinate; 4:
    /// `uint32`) at `out`, coordinate `i` shifted left by `sh[i]`: 64 points a step, each
    /// code byte the OR of three 64-entry table lookups (`vpermb`), the coordinates split
    /// out of rows by two-source permutes. Returns the points done (a multiple of 64) and
    /// the OR of their coordinates.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW and VBMI; `src` holds `3n` values (`rows`) or each column
    /// `n`, `out` `n` codes; `ob` is 2 or 4 and `sh` a permutation of 0, 1, 2.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn morton3_u8(
        src: [*const u8; 3],
        rows: bool,
        n: usize,
        out: *mut u8,
        ob: usize,
        sh: [u32; 3],
    ) -> (usize, u8) {
        // SAFETY: as the caller guarantees.
        unsafe { morton3_u8_body::<false>(src, rows, n, out, ob, sh) }
    }

    /// [`morton3_u8`] for coordinates of up to 8 bits into `uint32` (`ob = 4`): bits 6
    /// and 7 of each coordinate land in code byte 2 only, placed there by one GF(2)
    /// affine step (`vgf2p8affineqb`) a coordinate.
    ///
    /// # Safety
    /// As [`morton3_u8`], with GFNI and `ob = 4`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    pub(super) unsafe fn morton3_u8_gfni(
        src: [*const u8; 3],
        rows: bool,
        n: usize,
        out: *mut u8,
        sh: [u32; 3],
    ) -> (usize, u8) {
        // SAFETY: as the caller guarantees.
        unsafe { morton3_u8_body::<true>(src, rows, n, out, 4, sh) }
    }

    /// The GF(2) affine matrix (`vgf2p8affineqb`: result bit `i` is the parity of the
    /// input byte ANDed with matrix byte `7 - i`) taking coordinate bits 6 and 7 to their
    /// places in code byte 2 (code bits `18 + s` and `21 + s`), every other bit to zero.
    const fn high_bits(s: u32) -> i64 {
        ((1u64 << 6) << (8 * (7 - (2 + s))) | (1u64 << 7) << (8 * (7 - (5 + s)))) as i64
    }

    /// # Safety
    /// As [`morton3_u8`]; with `HI`, GFNI and `ob = 4`.
    #[inline(always)]
    unsafe fn morton3_u8_body<const HI: bool>(
        src: [*const u8; 3],
        rows: bool,
        n: usize,
        out: *mut u8,
        ob: usize,
        sh: [u32; 3],
    ) -> (usize, u8) {
        const S: [Step; 3] = [split_step(64, 0), split_step(64, 1), split_step(64, 2)];
        // SAFETY: in bounds as the caller guarantees (k + 64 <= n).
        unsafe {
            let ld = |p: *const u8| _mm512_loadu_si512(p as *const _);
            let ix: [__m512i; 3] = std::array::from_fn(|j| ld(S[j].0.as_ptr()));
            let nb = if ob == 2 { 2 } else { 3 };
            let t: [[__m512i; 3]; 3] = std::array::from_fn(|i| {
                std::array::from_fn(|j| ld(SPREAD[sh[i] as usize][j].as_ptr()))
            });
            let p2: [__m512i; 2] = std::array::from_fn(|v| ld(PLANES2[v].0.as_ptr()));
            let p4: [__m512i; 4] = std::array::from_fn(|v| ld(PLANES4[v].0.as_ptr()));
            let hm: [__m512i; 3] = std::array::from_fn(|i| _mm512_set1_epi64(high_bits(sh[i])));
            let mut acc = _mm512_setzero_si512();
            let mut k = 0;
            while k + 64 <= n {
                let c: [__m512i; 3] = if rows {
                    let p = src[0].add(3 * k);
                    let (a, b, c) = (ld(p), ld(p.add(64)), ld(p.add(128)));
                    std::array::from_fn(|j| {
                        let v = _mm512_permutex2var_epi8(a, ix[j], b);
                        _mm512_mask_permutexvar_epi8(v, S[j].1, ix[j], c)
                    })
                } else {
                    std::array::from_fn(|i| ld(src[i].add(k)))
                };
                acc = _mm512_ternarylogic_epi64::<0xFE>(acc, c[0], _mm512_or_si512(c[1], c[2]));
                let mut b = [_mm512_setzero_si512(); 3];
                for (j, bj) in b.iter_mut().enumerate().take(nb) {
                    *bj = _mm512_ternarylogic_epi64::<0xFE>(
                        _mm512_permutexvar_epi8(c[0], t[0][j]),
                        _mm512_permutexvar_epi8(c[1], t[1][j]),
                        _mm512_permutexvar_epi8(c[2], t[2][j]),
                    );
                }
                if HI {
                    // `vpermb` reads the low 6 bits of each coordinate; bits 6 and 7.
                    let h: [__m512i; 3] =
                        std::array::from_fn(|i| _mm512_gf2p8affine_epi64_epi8::<0>(c[i], hm[i]));
                    b[2] =
                        _mm512_ternarylogic_epi64::<0xFE>(b[2], h[0], _mm512_or_si512(h[1], h[2]));
                }
                let o = out.add(ob * k);
                if ob == 2 {
                    for (v, &pi) in p2.iter().enumerate() {
                        let r = _mm512_permutex2var_epi8(b[0], pi, b[1]);
                        _mm512_storeu_si512(o.add(64 * v) as *mut _, r);
                    }
                } else {
                    for (v, &pi) in p4.iter().enumerate() {
                        let r = _mm512_maskz_permutex2var_epi8(PLANES4[v].1, b[0], pi, b[1]);
                        let r = _mm512_mask_permutexvar_epi8(r, PLANES4[v].2, pi, b[2]);
                        _mm512_storeu_si512(o.add(64 * v) as *mut _, r);
                    }
                }
                k += 64;
            }
            let mut lanes = [0u8; 64];
            _mm512_storeu_si512(lanes.as_mut_ptr() as *mut _, acc);
            (k, lanes.iter().fold(0, |a, &l| a | l))
        }
    }

    /// Multishift controls and table offsets that spread field `f` of 3-D Morton codes in
    /// lanes of `so` bytes (4 or 8): output byte `k` of a lane holds code bits
    /// `8k..8k + 8`, i.e. coordinate bits `i0, i0 + 1, i0 + 2` (at `3 i + f`) with
    /// `i0 = ceil((8k - f) / 3)`, landing from bit `p = 3 i0 + f - 8k` (0, 1 or 2; at 2
    /// the third bit belongs to the next byte). `ctrl[q]` is the bit offset of that window
    /// in its qword (`vpmultishiftqb`), `pk[q] = 8 p` (the table row).
    const fn spread_ctrl(so: usize, f: usize) -> ([u8; 64], [u8; 64]) {
        let (mut ctrl, mut pk, mut q) = ([0u8; 64], [0u8; 64], 0);
        while q < 64 {
            let (lane, k) = (q / so, q % so);
            let i0 = if 8 * k <= f {
                0
            } else {
                (8 * k - f).div_ceil(3)
            };
            ctrl[q] = ((lane * so * 8) % 64 + i0) as u8;
            pk[q] = (8 * (3 * i0 + f - 8 * k)) as u8;
            q += 1;
        }
        (ctrl, pk)
    }

    /// `SPREAD3[8 p + b]`: the three bits of `b` at bits `p, p + 3, p + 6` (those below 8).
    const SPREAD3: [u8; 64] = {
        let mut t = [0u8; 64];
        let mut i = 0;
        while i < 24 {
            let (p, b) = (i / 8, i % 8);
            let v = (b & 1) | (b & 2) << 2 | (b & 4) << 4;
            t[i] = ((v << p) & 0xFF) as u8;
            i += 1;
        }
        t
    };

    /// One deinterleave step of [`morton3_ms`]: the lane indices (elements of `si`
    /// bytes), the zero mask of the lanes they fill from source vectors `v0, v0 + 1`, and
    /// the mask of the lanes a third vector (`v0 + 2`, one-source) fills.
    struct Split {
        idx: [u8; 64],
        keep: u64,
        v0: usize,
        m3: u64,
    }

    /// Step `gi` of coordinate `j` with `si`-byte input and `so`-byte lanes: lane `t` of
    /// the step is point `gi * (64 / so) + t`, its element `3 (..) + j` of three row
    /// vectors (`rows`) or element `(..)` of column vector `j`, zero-extended.
    const fn split(si: usize, so: usize, rows: bool, j: usize, gi: usize) -> Split {
        let (e, l, r) = (64 / si, 64 / so, so / si);
        if gi >= r {
            // No such step (callers compile it out).
            return Split {
                idx: [0; 64],
                keep: 0,
                v0: 0,
                m3: 0,
            };
        }
        let v0 = if rows { (3 * gi * l + j) / e } else { 0 };
        let (mut idx, mut keep, mut m3, mut t) = ([0u8; 64], 0u64, 0u64, 0);
        while t < l {
            let el = if rows {
                3 * (gi * l + t) + j
            } else {
                gi * l + t
            };
            let mut rel = el - v0 * e;
            let pos = t * r;
            if rel >= 2 * e {
                assert!(v0 == 0);
                m3 |= 1 << pos;
                rel -= 2 * e;
            } else {
                keep |= 1 << pos;
            }
            let mut b = 0;
            while b < si {
                idx[pos * si + b] = (rel >> (8 * b)) as u8;
                b += 1;
            }
            t += 1;
        }
        Split { idx, keep, v0, m3 }
    }

    /// Code bytes of coordinate `J` for step `GI` of [`morton3_ms`] (all layout data
    /// compile-time constants): its lanes split out of the three input vectors `v`, a
    /// `vpmultishiftqb` window per byte, the table row or-ed in, one `vpermb`.
    #[inline(always)]
    unsafe fn coord<
        const SI: usize,
        const SO: usize,
        const ROWS: bool,
        const J: usize,
        const GI: usize,
    >(
        v: &[__m512i; 3],
        ctl: (__m512i, __m512i),
        seven: __m512i,
        table: __m512i,
    ) -> __m512i {
        let idx: &'static [u8; 64] = const { &split(SI, SO, ROWS, J, GI).idx };
        let keep = const { split(SI, SO, ROWS, J, GI).keep };
        let v0 = const { split(SI, SO, ROWS, J, GI).v0 };
        let m3 = const { split(SI, SO, ROWS, J, GI).m3 };
        // SAFETY: register operations and a load of a 64-byte constant (the caller has
        // AVX-512 F/BW and VBMI).
        unsafe {
            let idx = ld64(idx.as_ptr());
            let lanes = if ROWS {
                let x = perm2(SI, keep, v[v0], idx, v[(v0 + 1).min(2)]);
                if m3 != 0 {
                    perm1(SI, x, m3, idx, v[2])
                } else {
                    x
                }
            } else {
                perm2(SI, keep, v[J], idx, v[J])
            };
            let w = _mm512_multishift_epi64_epi8(ctl.0, lanes);
            let ix = _mm512_ternarylogic_epi64::<0xEA>(w, seven, ctl.1);
            _mm512_permutexvar_epi8(ix, table)
        }
    }

    /// Output vector `GI` of one step of [`morton3_ms`], stored at `out`.
    #[inline(always)]
    unsafe fn step<const SI: usize, const SO: usize, const ROWS: bool, const GI: usize>(
        v: &[__m512i; 3],
        ctl: &[(__m512i, __m512i); 3],
        seven: __m512i,
        table: __m512i,
        out: *mut u8,
    ) {
        // SAFETY: as for `coord`; the caller guarantees 64 writable bytes at `out`.
        unsafe {
            let b0 = coord::<SI, SO, ROWS, 0, GI>(v, ctl[0], seven, table);
            let b1 = coord::<SI, SO, ROWS, 1, GI>(v, ctl[1], seven, table);
            let b2 = coord::<SI, SO, ROWS, 2, GI>(v, ctl[2], seven, table);
            let code = _mm512_ternarylogic_epi64::<0xFE>(b0, b1, b2);
            _mm512_storeu_si512(out as *mut _, code);
        }
    }

    /// [`spread_ctrl`] for 4- and 8-byte lanes and each field.
    const CTRL: [[([u8; 64], [u8; 64]); 3]; 2] = {
        const fn row(so: usize) -> [([u8; 64], [u8; 64]); 3] {
            [spread_ctrl(so, 0), spread_ctrl(so, 1), spread_ctrl(so, 2)]
        }
        [row(4), row(8)]
    };

    /// An unaligned 64-byte load.
    #[inline(always)]
    unsafe fn ld64(p: *const u8) -> __m512i {
        // SAFETY: the caller guarantees 64 readable bytes at `p` and AVX-512 F.
        unsafe { _mm512_loadu_si512(p as *const _) }
    }

    /// Two-source permute of `si`-byte elements, zeroing lanes outside `keep`.
    #[inline(always)]
    unsafe fn perm2(si: usize, keep: u64, a: __m512i, idx: __m512i, b: __m512i) -> __m512i {
        // SAFETY: register operations (the caller has AVX-512 F/BW).
        unsafe {
            match si {
                2 => _mm512_maskz_permutex2var_epi16(keep as u32, a, idx, b),
                4 => _mm512_maskz_permutex2var_epi32(keep as u16, a, idx, b),
                _ => _mm512_maskz_permutex2var_epi64(keep as u8, a, idx, b),
            }
        }
    }

    /// One-source permute of `si`-byte elements into `src`'s lanes under `m`.
    #[inline(always)]
    unsafe fn perm1(si: usize, src: __m512i, m: u64, idx: __m512i, c: __m512i) -> __m512i {
        // SAFETY: register operations (the caller has AVX-512 F/BW).
        unsafe {
            match si {
                2 => _mm512_mask_permutexvar_epi16(src, m as u32, idx, c),
                4 => _mm512_mask_permutexvar_epi32(src, m as u16, idx, c),
                _ => _mm512_mask_permutexvar_epi64(src, m as u8, idx, c),
            }
        }
    }

    /// 3-D Morton codes of `SI`-byte coordinates (2, 4 or 8; rows, or three columns, `n`
    /// points at `src`) into `SO`-byte codes (4 or 8, `SO >= SI`) at `out`, coordinate `i`
    /// at field `sh[i]` (shifted left by it): the rows of three vectors split into lanes of
    /// the code's width by two-source permutes (zero-extending), then each code byte of
    /// each coordinate a `vpmultishiftqb` window of 3 bits and a 24-entry `vpermb`
    /// lookup, the three ORed (3 ops per coordinate and vector instead of 2 per
    /// magic-number step, of which 64-bit lanes need 5). Returns the points done (a
    /// multiple of `64 / SI`) and the OR of their coordinates (as a `u64` of `SI` bytes).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW and VBMI; `src` holds `3n` values (`rows`) or each column
    /// `n`, `out` `n` codes; `sh` a permutation of 0, 1, 2.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn morton3_ms<const SI: usize, const SO: usize, const ROWS: bool>(
        src: [*const u8; 3],
        n: usize,
        out: *mut u8,
        sh: [u32; 3],
    ) -> (usize, u64) {
        let e = 64 / SI; // elements per vector = rows per step
        let g = SO / SI; // output vectors per step
                         // SAFETY: in bounds as the caller guarantees (k + e <= n).
        unsafe {
            let ld = |p: *const u8| ld64(p);
            let cs = &CTRL[(SO == 8) as usize];
            let ctl: [(__m512i, __m512i); 3] = [0, 1, 2].map(|j| {
                let (c, p) = &cs[sh[j] as usize];
                (ld(c.as_ptr()), ld(p.as_ptr()))
            });
            let table = ld(SPREAD3.as_ptr());
            let seven = _mm512_set1_epi8(7);
            let mut acc = _mm512_setzero_si512();
            let mut k = 0;
            while k + e <= n {
                let v: [__m512i; 3] = if ROWS {
                    let p = src[0].add(SI * 3 * k);
                    [ld64(p), ld64(p.add(64)), ld64(p.add(128))]
                } else {
                    [
                        ld64(src[0].add(SI * k)),
                        ld64(src[1].add(SI * k)),
                        ld64(src[2].add(SI * k)),
                    ]
                };
                acc = _mm512_ternarylogic_epi64::<0xFE>(acc, v[0], _mm512_or_si512(v[1], v[2]));
                let o = out.add(SO * k);
                step::<SI, SO, ROWS, 0>(&v, &ctl, seven, table, o);
                if g > 1 {
                    step::<SI, SO, ROWS, 1>(&v, &ctl, seven, table, o.add(64));
                }
                if g > 2 {
                    step::<SI, SO, ROWS, 2>(&v, &ctl, seven, table, o.add(128));
                    step::<SI, SO, ROWS, 3>(&v, &ctl, seven, table, o.add(192));
                }
                k += e;
            }
            let mut q = [0u64; 8];
            _mm512_storeu_si512(q.as_mut_ptr() as *mut _, acc);
            let a = q.iter().fold(0, |a, &x| a | x);
            let fold = (0..8 / SI).fold(0u64, |f, i| f | (a >> (64 / (8 / SI) * i)));
            (k, fold & (u64::MAX >> (64 - 8 * SI)))
        }
    }

    /// `vpmultishiftqb` controls of window `m` for [`morton3_dec_gf`]: in each `sc`-byte
    /// code lane, byte `ob j + b` (`j < 3`, `b < ob`) is the code from bit
    /// `f_j + 24 b + 9 m` (field `f_j = sh[j]`), whose bits 0, 3 and 6 are bits
    /// `8 b + 3 m, .. + 1, .. + 2` of coordinate `j`.
    const fn window_ctrl(sc: usize, ob: usize, sh: [u32; 3], m: usize) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut q = 0;
        while q < 64 {
            let (lane, i) = (q / sc, q % sc);
            let (j, b) = (i / ob, i % ob);
            let f = if j < 3 {
                sh[j] as usize + 24 * b + 9 * m
            } else {
                0
            };
            t[q] = ((lane * sc * 8) % 64 + f) as u8;
            q += 1;
        }
        t
    }

    /// [`window_ctrl`] of the three windows for fields `sh`.
    const fn windows(sc: usize, ob: usize, sh: [u32; 3]) -> [[u8; 64]; 3] {
        [
            window_ctrl(sc, ob, sh, 0),
            window_ctrl(sc, ob, sh, 1),
            window_ctrl(sc, ob, sh, 2),
        ]
    }

    /// GF(2) affine matrix (`vgf2p8affineqb`) moving bits 0, 3, 6 of each byte to bits
    /// `3m, 3m + 1, 3m + 2` (those below 8), the others cleared: bit `i` of the result is
    /// the parity of `x & A.byte[7 - i]`.
    const fn window_matrix(m: u32) -> i64 {
        let mut a = 0u64;
        let mut t = 0;
        while t < 3 {
            let i = 3 * m + t;
            if i < 8 {
                a |= (1u64 << (3 * t)) << (8 * (7 - i));
            }
            t += 1;
        }
        a as i64
    }

    /// [`morton3_dec_gf`]'s `vpermb` packing one vector of compacted lanes (`c = 64 / sc`
    /// codes, coordinate `j` byte `b` at lane byte `sc r + ob j + b`): rows put byte
    /// `3 ob r + i` from lane byte `sc r + i`; column `col` byte `ob r + b` from
    /// `sc r + ob col + b`.
    const fn pack_idx(sc: usize, ob: usize, rows: bool, col: usize) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut q = 0;
        while q < 64 {
            let (r, i) = if rows {
                (q / (3 * ob), q % (3 * ob))
            } else {
                (q / ob, ob * col + q % ob)
            };
            if r < 64 / sc {
                t[q] = (r * sc + i) as u8;
            }
            q += 1;
        }
        t
    }

    /// Two-source `vpermt2b` index gathering coordinates from a pair of vectors whose
    /// coordinate `j` byte `b` of code `r` sits at byte `rs r + js j + b` (`bpv` bytes a
    /// coordinate in each): the result has `nseg` segments of `seg` bytes, segment `s`
    /// holding coordinate `j0 + s` of the first vector's codes, then the second's.
    const fn pair_idx(
        seg: usize,
        j0: usize,
        nseg: usize,
        rs: usize,
        js: usize,
        ob: usize,
        bpv: usize,
    ) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut q = 0;
        while q < 64 {
            let s = q / seg;
            if s < nseg {
                let p = q % seg;
                let (v, u) = (p / bpv, p % bpv);
                t[q] = (64 * v + (u / ob) * rs + (j0 + s) * js + u % ob) as u8;
            }
            q += 1;
        }
        t
    }

    /// Three column vectors (64 bytes of each coordinate) from four vectors holding 16
    /// bytes of each coordinate (layout as [`pair_idx`] with `xy`, `z` its indices for
    /// coordinates 0-1 and 2): two-source permutes put coordinates 0 and 1 of a pair of
    /// vectors into the two 32-byte halves of one vector (2 in the low half of another),
    /// 128-bit shuffles join the pairs.
    #[inline(always)]
    unsafe fn planar4(b: [__m512i; 4], xy: __m512i, z: __m512i) -> [__m512i; 3] {
        // SAFETY: register operations (the caller has AVX-512 F/BW and VBMI).
        unsafe {
            let lo = _mm512_permutex2var_epi8(b[0], xy, b[1]);
            let hi = _mm512_permutex2var_epi8(b[2], xy, b[3]);
            let zl = _mm512_permutex2var_epi8(b[0], z, b[1]);
            let zh = _mm512_permutex2var_epi8(b[2], z, b[3]);
            [
                _mm512_shuffle_i64x2::<0x44>(lo, hi),
                _mm512_shuffle_i64x2::<0xEE>(lo, hi),
                _mm512_shuffle_i64x2::<0x44>(zl, zh),
            ]
        }
    }

    /// Coordinates of 3-D Morton codes (`CI`-byte codes, 4 or 8; `n` at `codes`) as
    /// `OB`-byte values (1: at most 8 bits, `SC = CI`; 2: at most 16 bits, `SC = 8`, 4-byte
    /// codes zero-extended), coordinate `i` from field `sh[i]` (`[0, 1, 2]` or
    /// `[2, 1, 0]`), into rows (`out[0]`, `3n` values, with `ROWS`) or three columns: per
    /// vector of codes (in `SC`-byte lanes), three `vpmultishiftqb` windows put the code
    /// bits of byte `b` of coordinate `j` at byte `OB j + b` of each lane, a GF(2) affine
    /// step per window compacts them in place, and one `vpermb` packs each lane's first
    /// `3 OB` bytes into rows. Columns take `SC / OB` vectors a step (64 values of each
    /// coordinate), regrouped by two-source permutes and 128-bit shuffles ([`planar4`])
    /// into one full store per column (one `vpermb` and a masked 8- or 16-byte store per
    /// column and vector measured slower than the compiler's loops). Returns the codes
    /// done (a multiple of `64 / SC`) and the OR of them.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW, VBMI and GFNI; `codes` holds `n` codes and the output `3n`
    /// values (rows) or `n` per column; `sh` is `[0, 1, 2]` or `[2, 1, 0]`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    pub(super) unsafe fn morton3_dec_gf<
        const CI: usize,
        const SC: usize,
        const OB: usize,
        const ROWS: bool,
    >(
        codes: *const u8,
        n: usize,
        out: [*mut u8; 3],
        sh: [u32; 3],
    ) -> (usize, u64) {
        // Codes per vector.
        let c = 64 / SC;
        let w: &[[u8; 64]; 3] = if sh[0] == 0 {
            const { &windows(SC, OB, [0, 1, 2]) }
        } else {
            const { &windows(SC, OB, [2, 1, 0]) }
        };
        let pack: &[[u8; 64]; 3] = const {
            &[
                pack_idx(SC, OB, ROWS, 0),
                pack_idx(SC, OB, ROWS, 1),
                pack_idx(SC, OB, ROWS, 2),
            ]
        };
        // Column regrouping: vectors a step, and the [`pair_idx`] tables. With 16 bytes
        // of each coordinate a vector (`SC / OB = 4`), [`planar4`] on the compacted
        // vectors; with 8 (`SC / OB = 8`: 8-byte codes into uint8), pairs of vectors
        // first into 16 bytes a coordinate (coordinate `j` at byte `16 j`), then
        // [`planar4`] on those.
        let g = SC / OB;
        let xyz: &[[u8; 64]; 3] = const {
            let (rs, js) = if SC / OB == 8 { (OB, 16) } else { (SC, OB) };
            &[
                pair_idx(32, 0, 2, rs, js, OB, 16),
                pair_idx(32, 2, 1, rs, js, OB, 16),
                pair_idx(16, 0, 3, SC, OB, OB, OB * 64 / SC),
            ]
        };
        // SAFETY: in bounds as the caller guarantees (k + c <= n, k + g c <= n).
        unsafe {
            let ctl: [__m512i; 3] = [0, 1, 2].map(|m| ld64(w[m].as_ptr()));
            let a = [
                _mm512_set1_epi64(window_matrix(0)),
                _mm512_set1_epi64(window_matrix(1)),
                _mm512_set1_epi64(window_matrix(2)),
            ];
            let pk = [
                ld64(pack[0].as_ptr()),
                ld64(pack[1].as_ptr()),
                ld64(pack[2].as_ptr()),
            ];
            let load = |k: usize| -> __m512i {
                if CI == SC {
                    ld64(codes.add(CI * k))
                } else {
                    _mm512_cvtepu32_epi64(_mm256_loadu_si256(codes.add(CI * k) as *const _))
                }
            };
            let compact = |v: __m512i| -> __m512i {
                let w0 = _mm512_multishift_epi64_epi8(ctl[0], v);
                let w1 = _mm512_multishift_epi64_epi8(ctl[1], v);
                let w2 = _mm512_multishift_epi64_epi8(ctl[2], v);
                _mm512_ternarylogic_epi64::<0xFE>(
                    _mm512_gf2p8affine_epi64_epi8::<0>(w0, a[0]),
                    _mm512_gf2p8affine_epi64_epi8::<0>(w1, a[1]),
                    _mm512_gf2p8affine_epi64_epi8::<0>(w2, a[2]),
                )
            };
            let mut acc = _mm512_setzero_si512();
            let mut k = 0;
            if !ROWS {
                let (ixy, iz, i16) = (
                    ld64(xyz[0].as_ptr()),
                    ld64(xyz[1].as_ptr()),
                    ld64(xyz[2].as_ptr()),
                );
                while k + g * c <= n {
                    let mut b = [_mm512_setzero_si512(); 4];
                    for (i, bi) in b.iter_mut().enumerate() {
                        if g == 8 {
                            let (v0, v1) = (load(k + 2 * i * c), load(k + (2 * i + 1) * c));
                            acc = _mm512_ternarylogic_epi64::<0xFE>(acc, v0, v1);
                            *bi = _mm512_permutex2var_epi8(compact(v0), i16, compact(v1));
                        } else {
                            let v = load(k + i * c);
                            acc = _mm512_or_si512(acc, v);
                            *bi = compact(v);
                        }
                    }
                    for (o, col) in out.iter().zip(planar4(b, ixy, iz)) {
                        _mm512_storeu_si512(o.add(OB * k) as *mut _, col);
                    }
                    k += g * c;
                }
            }
            while k + c <= n {
                let v = load(k);
                acc = _mm512_or_si512(acc, v);
                let b = compact(v);
                if ROWS {
                    let p = _mm512_permutexvar_epi8(pk[0], b);
                    let m = (1u64 << (3 * OB * c)) - 1;
                    _mm512_mask_storeu_epi8(out[0].add(3 * OB * k) as *mut _, m, p);
                } else {
                    let m = (1u64 << (OB * c)) - 1;
                    for (o, &pj) in out.iter().zip(&pk) {
                        let p = _mm512_permutexvar_epi8(pj, b);
                        _mm512_mask_storeu_epi8(o.add(OB * k) as *mut _, m, p);
                    }
                }
                k += c;
            }
            let mut q = [0u64; 8];
            _mm512_storeu_si512(q.as_mut_ptr() as *mut _, acc);
            let a = q.iter().fold(0, |a, &x| a | x);
            (
                k,
                if CI == 4 {
                    (a | a >> 32) & 0xFFFF_FFFF
                } else {
                    a
                },
            )
        }
    }

    /// `vpmultishiftqb` controls of window `m` for byte 2 of each coordinate in
    /// [`morton3_dec_gf32`]: lane byte `j < 3` is the code from bit `f_j + 48 + 9 m`
    /// (mod 64: the bits that wrap around are masked off afterwards), the others 0.
    const fn window_ctrl_hi(sh: [u32; 3], m: usize) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut q = 0;
        while q < 64 {
            let i = q % 8;
            if i < 3 {
                t[q] = ((sh[i] as usize + 48 + 9 * m) % 64) as u8;
            }
            q += 1;
        }
        t
    }

    /// [`window_ctrl_hi`] of the three windows for fields `sh`.
    const fn windows_hi(sh: [u32; 3]) -> [[u8; 64]; 3] {
        [
            window_ctrl_hi(sh, 0),
            window_ctrl_hi(sh, 1),
            window_ctrl_hi(sh, 2),
        ]
    }

    /// [`planar4`] indices for [`morton3_dec_gf32`]: from a pair (bytes 0-1 of every
    /// coordinate at lane byte `8 r + 2 j`, byte 2 at `64 + 8 r + j`, zero at `64 + 8 r + 3`),
    /// `nseg` 32-byte segments of `uint32` coordinates `j0 + s`.
    const fn u32_idx(j0: usize, nseg: usize) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut q = 0;
        while q < 64 {
            let s = q / 32;
            if s < nseg {
                let j = j0 + s;
                let (r, b) = ((q % 32) / 4, q % 4);
                t[q] = match b {
                    0 | 1 => 8 * r + 2 * j + b,
                    2 => 64 + 8 * r + j,
                    _ => 64 + 8 * r + 3,
                } as u8;
            }
            q += 1;
        }
        t
    }

    /// Coordinates of 3-D Morton codes (`uint64`, `n` at `codes`) as three `uint32`
    /// columns (at most 21 bits: `nbits`), coordinate `i` from field `sh[i]` (`[0, 1, 2]`
    /// or `[2, 1, 0]`): as [`morton3_dec_gf`] with `OB = 2` for bytes 0-1 of each
    /// coordinate, plus three windows for byte 2 (masked to its `nbits - 16` bits),
    /// 16 codes a step regrouped by [`planar4`] into one full store per column. Returns the
    /// codes done (a multiple of 16) and the OR of them.
    ///
    /// # Safety
    /// As [`morton3_dec_gf`]; `nbits <= 21`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    pub(super) unsafe fn morton3_dec_gf32(
        codes: *const u8,
        n: usize,
        out: [*mut u8; 3],
        sh: [u32; 3],
        nbits: u32,
    ) -> (usize, u64) {
        let (w, wh): (&[[u8; 64]; 3], &[[u8; 64]; 3]) = if sh[0] == 0 {
            (
                const { &windows(8, 2, [0, 1, 2]) },
                const { &windows_hi([0, 1, 2]) },
            )
        } else {
            (
                const { &windows(8, 2, [2, 1, 0]) },
                const { &windows_hi([2, 1, 0]) },
            )
        };
        let idx: &[[u8; 64]; 2] = const { &[u32_idx(0, 2), u32_idx(2, 1)] };
        let hb = nbits.saturating_sub(16);
        let mbyte = ((1u64 << hb) - 1) * 0x0001_0101;
        // SAFETY: in bounds as the caller guarantees (k + 16 <= n).
        unsafe {
            let ctl: [__m512i; 3] = [0, 1, 2].map(|m| ld64(w[m].as_ptr()));
            let ctlh: [__m512i; 3] = [0, 1, 2].map(|m| ld64(wh[m].as_ptr()));
            let a = [
                _mm512_set1_epi64(window_matrix(0)),
                _mm512_set1_epi64(window_matrix(1)),
                _mm512_set1_epi64(window_matrix(2)),
            ];
            let keep = _mm512_set1_epi64(mbyte as i64);
            let (ixy, iz) = (ld64(idx[0].as_ptr()), ld64(idx[1].as_ptr()));
            let compact = |c: &[__m512i; 3], v: __m512i| -> __m512i {
                let w0 = _mm512_multishift_epi64_epi8(c[0], v);
                let w1 = _mm512_multishift_epi64_epi8(c[1], v);
                let w2 = _mm512_multishift_epi64_epi8(c[2], v);
                _mm512_ternarylogic_epi64::<0xFE>(
                    _mm512_gf2p8affine_epi64_epi8::<0>(w0, a[0]),
                    _mm512_gf2p8affine_epi64_epi8::<0>(w1, a[1]),
                    _mm512_gf2p8affine_epi64_epi8::<0>(w2, a[2]),
                )
            };
            let mut acc = _mm512_setzero_si512();
            let mut k = 0;
            while k + 16 <= n {
                let v0 = ld64(codes.add(8 * k));
                let v1 = ld64(codes.add(8 * k + 64));
                acc = _mm512_ternarylogic_epi64::<0xFE>(acc, v0, v1);
                let b = [
                    compact(&ctl, v0),
                    _mm512_and_si512(compact(&ctlh, v0), keep),
                    compact(&ctl, v1),
                    _mm512_and_si512(compact(&ctlh, v1), keep),
                ];
                for (o, col) in out.iter().zip(planar4(b, ixy, iz)) {
                    _mm512_storeu_si512(o.add(4 * k) as *mut _, col);
                }
                k += 16;
            }
            let mut q = [0u64; 8];
            _mm512_storeu_si512(q.as_mut_ptr() as *mut _, acc);
            (k, q.iter().fold(0, |a, &x| a | x))
        }
    }

    /// Bits of coordinate `(c >> s)` (every third bit of it, compacted) contributed by
    /// 6-bit group `g` of a code, for every group value.
    const fn gather_byte(s: u32, g: u32) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut v = 0;
        while v < 64 {
            let c = ((v as u32) << (6 * g)) >> s;
            let (mut x, mut b) = (0u32, 0);
            while b < 8 {
                x |= ((c >> (3 * b)) & 1) << b;
                b += 1;
            }
            t[v] = x as u8;
            v += 1;
        }
        t
    }

    /// `GATHER[s][g]`: [`gather_byte`]`(s, g)`.
    const GATHER: [[[u8; 64]; 3]; 3] = {
        let mut t = [[[0u8; 64]; 3]; 3];
        let mut s = 0;
        while s < 3 {
            let mut g = 0;
            while g < 3 {
                t[s][g] = gather_byte(s as u32, g as u32);
                g += 1;
            }
            s += 1;
        }
        t
    };

    /// Coordinates of 3-D Morton codes of at most 15 bits (`uint16`, `n` at `codes`) as
    /// `uint8`, coordinate `i` read from the code shifted right by `sh[i]`, into rows
    /// (`out[0]`, `3n` bytes) or three columns: 64 codes a step, split into their 6-bit
    /// groups (bytes), each coordinate the OR of three 64-entry table lookups (`vpermb`),
    /// rows interleaved by two-source permutes. Returns the codes done (a multiple of 64)
    /// and the OR of them.
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW and VBMI; `codes` holds `n` values and the output `3n`
    /// bytes (rows) or `n` per column; `sh` a permutation of 0, 1, 2.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    pub(super) unsafe fn morton3_dec_u16(
        codes: *const u16,
        n: usize,
        out: [*mut u8; 3],
        rows: bool,
        sh: [u32; 3],
    ) -> (usize, u16) {
        const M: [Step; 3] = [merge_step(64, 0), merge_step(64, 1), merge_step(64, 2)];
        // SAFETY: in bounds as the caller guarantees (k + 64 <= n).
        unsafe {
            let ld = |p: *const u8| _mm512_loadu_si512(p as *const _);
            let ix: [__m512i; 3] = std::array::from_fn(|j| ld(M[j].0.as_ptr()));
            let t: [[__m512i; 3]; 3] = std::array::from_fn(|i| {
                std::array::from_fn(|g| ld(GATHER[sh[i] as usize][g].as_ptr()))
            });
            let even: [u8; 64] = std::array::from_fn(|k| (2 * k) as u8);
            let odd: [u8; 64] = std::array::from_fn(|k| (2 * k + 1) as u8);
            let (even, odd) = (ld(even.as_ptr()), ld(odd.as_ptr()));
            let (m3, m15) = (_mm512_set1_epi8(3), _mm512_set1_epi8(15));
            let mut acc = _mm512_setzero_si512();
            let mut k = 0;
            while k + 64 <= n {
                let a = ld(codes.add(k) as *const u8);
                let b = ld(codes.add(k + 32) as *const u8);
                acc = _mm512_ternarylogic_epi64::<0xFE>(acc, a, b);
                // Low and high bytes of the 64 codes; bits 6-7 of an index are ignored.
                let lo = _mm512_permutex2var_epi8(a, even, b);
                let hi = _mm512_permutex2var_epi8(a, odd, b);
                // Group 1: bits 6-7 of lo (where m3 is set) and 0-3 of hi; group 2: bits 4-7
                // of hi.
                let g1 = _mm512_ternarylogic_epi64::<0xAC>(
                    m3,
                    _mm512_slli_epi16::<2>(hi),
                    _mm512_srli_epi16::<6>(lo),
                );
                let g2 = _mm512_and_si512(_mm512_srli_epi16::<4>(hi), m15);
                let c: [__m512i; 3] = std::array::from_fn(|i| {
                    _mm512_ternarylogic_epi64::<0xFE>(
                        _mm512_permutexvar_epi8(lo, t[i][0]),
                        _mm512_permutexvar_epi8(g1, t[i][1]),
                        _mm512_permutexvar_epi8(g2, t[i][2]),
                    )
                });
                if rows {
                    for (v, &iv) in ix.iter().enumerate() {
                        let r = _mm512_permutex2var_epi8(c[0], iv, c[1]);
                        let r = _mm512_mask_permutexvar_epi8(r, M[v].1, iv, c[2]);
                        _mm512_storeu_si512(out[0].add(3 * k + 64 * v) as *mut _, r);
                    }
                } else {
                    for (o, v) in out.iter().zip(c) {
                        _mm512_storeu_si512(o.add(k) as *mut _, v);
                    }
                }
                k += 64;
            }
            let mut lanes = [0u16; 32];
            _mm512_storeu_si512(lanes.as_mut_ptr() as *mut _, acc);
            (k, lanes.iter().fold(0, |a, &l| a | l))
        }
    }
}

/// Whether kernel `k` runs the AVX-512 VBMI byte-permute steps ([`perm9`]).
fn fast9(k: Kernel) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        k == Kernel::Avx512 && perm9::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = k;
        false
    }
}

macro_rules! multiversion {
    ($name:ident, $body:ident, ($($arg:ident : $ty:ty),*)) => {
        fn $name<U: Word, O: Word>(k: Kernel, $($arg: $ty),*) -> U {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,bmi2")]
                unsafe fn avx512<U: Word, O: Word>($($arg: $ty),*) -> U {
                    $body($($arg),*)
                }
                #[target_feature(enable = "avx2,bmi2")]
                unsafe fn avx2<U: Word, O: Word>($($arg: $ty),*) -> U {
                    $body($($arg),*)
                }
                match k {
                    // SAFETY: `kernel()` picks a level only when the CPU supports it, and
                    // tests cap it through ORDCORE_SFC_KERNEL, never raise it.
                    Kernel::Avx512 => return unsafe { avx512::<U, O>($($arg),*) },
                    // SAFETY: as above.
                    Kernel::Avx2 => return unsafe { avx2::<U, O>($($arg),*) },
                    Kernel::Portable => {}
                }
            }
            let _ = k;
            $body($($arg),*)
        }
    };
}

multiversion!(encode_chunk_k, encode_chunk,
    (curve: Curve, d: usize, nbits: u32, src: Src<'_, U>, out: &mut [O], step: MortonStep));
multiversion!(decode_chunk_k, decode_chunk,
    (curve: Curve, d: usize, nbits: u32, codes: &[U], dst: Dst<'_, O>, step: MortonStep));

/// 3-D Morton codes of one chunk by the AVX-512 VBMI kernels of [`rows3`], the tail on
/// kernel `k`: `uint8` coordinates of at most 6 bits into `uint16` (at most 5 bits) or
/// `uint32` by table lookups ([`rows3::morton3_u8`]; of 7-8 bits into `uint32` with GFNI,
/// [`rows3::morton3_u8_gfni`]); `uint16` coordinates into
/// `uint32`/`uint64`, `uint32` into `uint32`/`uint64` and `uint64` into `uint64` by
/// multishift windows ([`rows3::morton3_ms`]). `None` where neither applies. Returns the
/// OR of the input values.
#[cfg(target_arch = "x86_64")]
fn morton3_lut_encode<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
) -> Option<U> {
    let lut = U::BITS == 8
        && ((O::BITS == 32 && (nbits <= 6 || gfni())) || (O::BITS == 16 && nbits <= 5));
    let ms = U::BITS >= 16 && O::BITS >= 32 && O::BITS >= U::BITS;
    if !(fast9(k) && (lut || ms)) {
        return None;
    }
    let (s0, s2) = if msb { (2, 0) } else { (0, 2) };
    let n = out.len();
    let (ptrs, rows) = match src {
        Src::Rows(s) => {
            assert!(s.len() >= 3 * n);
            ([s.as_ptr() as *const u8; 3], true)
        }
        Src::Cols(c) => {
            assert!(c.iter().all(|c| c.len() >= n));
            (c.map(|c| c.as_ptr() as *const u8), false)
        }
    };
    let ob = (O::BITS / 8) as usize;
    let sh = [s0, 1, s2];
    let o = out.as_mut_ptr() as *mut u8;
    // SAFETY: `fast9` means AVX-512 F/BW and VBMI (`lut` checked GFNI for nbits > 6); U
    // and O are the unsigned types of their widths (every Word is), within the widths each
    // kernel takes (checked above); lengths asserted above.
    let (done, a) = unsafe {
        match (U::BITS, O::BITS) {
            (8, _) => {
                let (d, a) = if nbits > 6 {
                    rows3::morton3_u8_gfni(ptrs, rows, n, o, sh)
                } else {
                    rows3::morton3_u8(ptrs, rows, n, o, ob, sh)
                };
                (d, a as u64)
            }
            (16, 32) if rows => rows3::morton3_ms::<2, 4, true>(ptrs, n, o, sh),
            (16, 32) => rows3::morton3_ms::<2, 4, false>(ptrs, n, o, sh),
            (16, _) if rows => rows3::morton3_ms::<2, 8, true>(ptrs, n, o, sh),
            (16, _) => rows3::morton3_ms::<2, 8, false>(ptrs, n, o, sh),
            (32, 32) if rows => rows3::morton3_ms::<4, 4, true>(ptrs, n, o, sh),
            (32, 32) => rows3::morton3_ms::<4, 4, false>(ptrs, n, o, sh),
            (32, _) if rows => rows3::morton3_ms::<4, 8, true>(ptrs, n, o, sh),
            (32, _) => rows3::morton3_ms::<4, 8, false>(ptrs, n, o, sh),
            _ if rows => rows3::morton3_ms::<8, 8, true>(ptrs, n, o, sh),
            _ => rows3::morton3_ms::<8, 8, false>(ptrs, n, o, sh),
        }
    };
    let curve = Curve::Morton { msb };
    Some(encode_tail(k, curve, 3, nbits, src, out, done, a))
}

/// Whether this CPU has GFNI (with the AVX-512 VBMI set of [`fast9`]).
#[cfg(target_arch = "x86_64")]
fn gfni() -> bool {
    static V: OnceLock<bool> = OnceLock::new();
    *V.get_or_init(|| std::arch::is_x86_feature_detected!("gfni"))
}

/// Whether [`morton3_dec_prefix`] takes 3-D Morton codes of type `U` into coordinates of
/// type `O` (rows, or columns) for this `nbits`, given the AVX-512 VBMI set of [`fast9`].
#[cfg(target_arch = "x86_64")]
fn morton3_dec_fits<U: Word, O: Word>(nbits: u32, rows: bool) -> bool {
    (U::BITS == 16 && O::BITS == 8 && nbits <= 5)
        || (U::BITS >= 32 && O::BITS <= 16 && gfni())
        || (U::BITS == 64 && O::BITS == 32 && !rows && gfni())
}

/// Whether [`morton3_lut_decode`] runs on kernel `k` for these types and `nbits`.
#[cfg(target_arch = "x86_64")]
fn morton3_lut_decodes<U: Word, O: Word>(k: Kernel, nbits: u32, rows: bool) -> bool {
    fast9(k) && morton3_dec_fits::<U, O>(nbits, rows)
}

/// Coordinates of a prefix of the 3-D Morton codes `codes` (fields `sh`) into `dst` from
/// row `r0` by the AVX-512 VBMI kernels of [`rows3`]: `uint16` codes (at most 15 bits)
/// into `uint8` by table lookups ([`rows3::morton3_dec_u16`]), `uint32`/`uint64` codes
/// into `uint8`/`uint16` by multishift windows and GF(2) affine steps
/// ([`rows3::morton3_dec_gf`]), `uint64` codes into `uint32` columns likewise
/// ([`rows3::morton3_dec_gf32`]). Returns the codes done and the OR of them.
///
/// # Safety
/// The CPU has AVX-512 F/BW and VBMI, [`morton3_dec_fits`] holds for `U`, `O` and the
/// codes' width, and `sh` is `[0, 1, 2]` or `[2, 1, 0]`.
#[cfg(target_arch = "x86_64")]
unsafe fn morton3_dec_prefix<U: Word, O: Word>(
    codes: &[U],
    r0: usize,
    dst: &mut Dst<'_, O>,
    sh: [u32; 3],
    nbits: u32,
) -> (usize, u64) {
    let n = codes.len();
    let (ptrs, rows) = match dst {
        Dst::Rows(o) => {
            assert!(o.len() >= 3 * (r0 + n));
            ([o[3 * r0..].as_mut_ptr() as *mut u8; 3], true)
        }
        Dst::Cols(c) => {
            assert!(c.iter().all(|c| c.len() >= r0 + n));
            ([0, 1, 2].map(|i| c[i][r0..].as_mut_ptr() as *mut u8), false)
        }
    };
    let cp = codes.as_ptr();
    let cb = cp as *const u8;
    // SAFETY: the caller guarantees the CPU features and that U is u16 (O u8), u32 or
    // u64 (O u8 or u16; every Word is the unsigned type of its width); lengths asserted
    // above.
    unsafe {
        match (U::BITS, O::BITS, rows) {
            (16, _, _) => {
                let (d, a) = rows3::morton3_dec_u16(cp as *const u16, n, ptrs, rows, sh);
                (d, a as u64)
            }
            (_, 32, _) => rows3::morton3_dec_gf32(cb, n, ptrs, sh, nbits),
            (32, 8, true) => rows3::morton3_dec_gf::<4, 4, 1, true>(cb, n, ptrs, sh),
            (32, 8, false) => rows3::morton3_dec_gf::<4, 4, 1, false>(cb, n, ptrs, sh),
            (32, _, true) => rows3::morton3_dec_gf::<4, 8, 2, true>(cb, n, ptrs, sh),
            (32, _, false) => rows3::morton3_dec_gf::<4, 8, 2, false>(cb, n, ptrs, sh),
            (_, 8, true) => rows3::morton3_dec_gf::<8, 8, 1, true>(cb, n, ptrs, sh),
            (_, 8, false) => rows3::morton3_dec_gf::<8, 8, 1, false>(cb, n, ptrs, sh),
            (_, _, true) => rows3::morton3_dec_gf::<8, 8, 2, true>(cb, n, ptrs, sh),
            (_, _, false) => rows3::morton3_dec_gf::<8, 8, 2, false>(cb, n, ptrs, sh),
        }
    }
}

/// Coordinates of one chunk of 3-D Morton codes by [`morton3_dec_prefix`], the tail on
/// kernel `k`, where [`morton3_lut_decodes`]. Returns the OR of the codes.
#[cfg(target_arch = "x86_64")]
fn morton3_lut_decode<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    codes: &[U],
    dst: Dst<'_, O>,
) -> U {
    assert!(morton3_lut_decodes::<U, O>(
        k,
        nbits,
        matches!(dst, Dst::Rows(_))
    ));
    let sh = if msb { [2, 1, 0] } else { [0, 1, 2] };
    let mut dst = dst;
    // SAFETY: `morton3_lut_decodes` checked the CPU features and the types.
    let (done, a) = unsafe { morton3_dec_prefix(codes, 0, &mut dst, sh, nbits) };
    let curve = Curve::Morton { msb };
    decode_tail(k, curve, 3, nbits, codes, dst, done, a)
}

/// 2-D bit interleaves on AVX2 by 16-entry nibble tables (`vpshufb`): each byte of the two
/// inputs gives two code bytes, the spread of its low and of its high nibble, so a code
/// of `2 * w` bytes takes its bytes from the `w` bytes of each coordinate in order and the
/// interleave is a byte stream transform whatever the lane width (`uint8` to `uint32`
/// coordinates). LLVM's AVX2 code for the magic-number spreads runs 10-15 shift/mask steps
/// in lanes of the code's width (4 lanes of `uint64`); this is about 6 steps per 32 input
/// bytes. The 2-D Hilbert encoder of [`hilbert2_avx2`] ends with it.
#[cfg(target_arch = "x86_64")]
mod nib2 {
    use std::arch::x86_64::*;

    /// `EVEN[v]`: the 4 bits of `v` on the even bits of a byte.
    const EVEN: [u8; 16] = {
        let mut t = [0u8; 16];
        let mut v = 0;
        while v < 16 {
            t[v] = ((v & 1) | (v & 2) << 1 | (v & 4) << 2 | (v & 8) << 3) as u8;
            v += 1;
        }
        t
    };

    /// The nibble tables: `(even, odd, low-nibble mask)`.
    #[inline(always)]
    unsafe fn tables() -> (__m256i, __m256i, __m256i) {
        // SAFETY (callers): AVX2; `EVEN` has 16 bytes.
        unsafe {
            let even = _mm256_broadcastsi128_si256(_mm_loadu_si128(EVEN.as_ptr().cast()));
            // Every entry is below 0x80: the 16-bit shift carries nothing across bytes.
            (even, _mm256_slli_epi16(even, 1), _mm256_set1_epi8(0x0F))
        }
    }

    /// Per byte of `v`, table `t` at its low nibble and at its high nibble.
    #[inline(always)]
    unsafe fn look(t: __m256i, v: __m256i, low: __m256i) -> [__m256i; 2] {
        // SAFETY (callers): AVX2.
        unsafe {
            [
                _mm256_shuffle_epi8(t, _mm256_and_si256(v, low)),
                _mm256_shuffle_epi8(t, _mm256_and_si256(_mm256_srli_epi16(v, 4), low)),
            ]
        }
    }

    use super::nib3::fold;

    /// Interleaves the first `n / 32 * 32` bytes of `a` (even bits) and `b` (odd bits),
    /// words of `w` bytes, into `2 * w`-byte codes at `out`. Returns the bytes of each
    /// input done and the OR of their words.
    ///
    /// # Safety
    /// AVX2; `a` and `b` readable for `n` bytes, `out` writable for `2 * n`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn cols(
        a: *const u8,
        b: *const u8,
        n: usize,
        w: usize,
        out: *mut u8,
    ) -> (usize, u64) {
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let (even, odd, low) = tables();
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + 32 <= n {
                let x = _mm256_loadu_si256(a.add(i).cast());
                let y = _mm256_loadu_si256(b.add(i).cast());
                acc = _mm256_or_si256(acc, _mm256_or_si256(x, y));
                let [xl, xh] = look(even, x, low);
                let [yl, yh] = look(odd, y, low);
                let (l, h) = (_mm256_or_si256(xl, yl), _mm256_or_si256(xh, yh));
                // Per 128-bit lane: `lo` spreads input bytes 0-7 (16-23), `hi` 8-15
                // (24-31).
                let lo = _mm256_unpacklo_epi8(l, h);
                let hi = _mm256_unpackhi_epi8(l, h);
                let o = out.add(2 * i);
                _mm256_storeu_si256(o.cast(), _mm256_permute2x128_si256(lo, hi, 0x20));
                _mm256_storeu_si256(o.add(32).cast(), _mm256_permute2x128_si256(lo, hi, 0x31));
                i += 32;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, w))
        }
    }

    /// The `vpshufb` control that gathers, per 16-byte lane, the first words of the rows
    /// (`2 * w` bytes each) into bytes 0-7 and the second words into bytes 8-15.
    const fn split(w: usize) -> [u8; 32] {
        let mut c = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            let (half, q) = (i % 16 / 8, i % 8);
            c[i] = ((q / w) * 2 * w + half * w + q % w) as u8;
            i += 1;
        }
        c
    }

    /// Codes of the `(n / 32 * 32) / (2 * w)` leading rows of `w`-byte words at `r`
    /// (row-major pairs), first word on the even bits (odd where `swap`), into `out`.
    /// Returns the bytes done and the OR of their words.
    ///
    /// # Safety
    /// AVX2; `r` readable and `out` writable for `n` bytes; `w` is 1, 2 or 4.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rows(
        r: *const u8,
        n: usize,
        w: usize,
        swap: bool,
        out: *mut u8,
    ) -> (usize, u64) {
        const C: [[u8; 32]; 3] = [split(1), split(2), split(4)];
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let c = _mm256_loadu_si256(C[w.trailing_zeros() as usize].as_ptr().cast());
            let (even, odd, low) = tables();
            let (first, second) = if swap { (odd, even) } else { (even, odd) };
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + 32 <= n {
                let v = _mm256_loadu_si256(r.add(i).cast());
                acc = _mm256_or_si256(acc, v);
                // Bytes 0-7 of a lane: first words; 8-15: second words, in row order.
                let s = _mm256_shuffle_epi8(v, c);
                let [al, ah] = look(first, s, low);
                let [bl, bh] = look(second, s, low);
                let l = _mm256_or_si256(al, _mm256_bsrli_epi128(bl, 8));
                let h = _mm256_or_si256(ah, _mm256_bsrli_epi128(bh, 8));
                _mm256_storeu_si256(out.add(i).cast(), _mm256_unpacklo_epi8(l, h));
                i += 32;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, w))
        }
    }

    /// `SPLIT[v]`: the even bits of nibble `v` in bits 0-1, its odd bits in bits 4-5.
    const SPLIT: [u8; 16] = {
        let mut t = [0u8; 16];
        let mut v = 0;
        while v < 16 {
            t[v] = ((v & 1) | (v >> 1 & 2) | (v << 3 & 0x10) | (v << 2 & 0x20)) as u8;
            v += 1;
        }
        t
    };

    /// The coordinate bytes of 32 code bytes, one per 16-bit lane: the even bits of code
    /// bytes `2j` and `2j + 1` (low nibble, high nibble) in lane `j` of `.0`, the odd bits
    /// in `.1`.
    #[inline(always)]
    unsafe fn unspread(v: __m256i, lo: __m256i, hi: __m256i, low: __m256i) -> [__m256i; 2] {
        // SAFETY (callers): AVX2.
        unsafe {
            let [a, _] = look(lo, v, low);
            let [_, b] = look(hi, v, low);
            // Byte 2j: even bits of code byte 2j in bits 0-3, odd bits in 4-7; byte 2j + 1
            // likewise for code byte 2j + 1.
            let t = _mm256_or_si256(a, b);
            let (m0, m1) = (_mm256_set1_epi16(0x000F), _mm256_set1_epi16(0x00F0));
            let t4 = _mm256_srli_epi16(t, 4);
            [
                _mm256_or_si256(_mm256_and_si256(t, m0), _mm256_and_si256(t4, m1)),
                _mm256_or_si256(
                    _mm256_and_si256(t4, m0),
                    _mm256_and_si256(_mm256_srli_epi16(t, 8), m1),
                ),
            ]
        }
    }

    /// The tables of [`unspread`]: `SPLIT` for low nibbles, shifted by 2 for high ones.
    #[inline(always)]
    unsafe fn split_tables() -> (__m256i, __m256i, __m256i) {
        // SAFETY (callers): AVX2; `SPLIT` has 16 bytes.
        unsafe {
            let lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(SPLIT.as_ptr().cast()));
            // Every entry is below 0x40: the 16-bit shift carries nothing across bytes.
            (lo, _mm256_slli_epi16(lo, 2), _mm256_set1_epi8(0x0F))
        }
    }

    /// Inverse of [`cols`]: the even bits of the first `n / 64 * 64` bytes of codes of
    /// `2 * w` bytes at `c` to `a`, the odd bits to `b` (words of `w` bytes). Returns the
    /// code bytes done and the OR of their codes.
    ///
    /// # Safety
    /// AVX2; `c` readable for `n` bytes, `a` and `b` writable for `n / 2`; `w` is 1, 2 or
    /// 4.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn cols_dec(
        c: *const u8,
        n: usize,
        w: usize,
        a: *mut u8,
        b: *mut u8,
    ) -> (usize, u64) {
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let (lo, hi, low) = split_tables();
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + 64 <= n {
                let v0 = _mm256_loadu_si256(c.add(i).cast());
                let v1 = _mm256_loadu_si256(c.add(i + 32).cast());
                acc = _mm256_or_si256(acc, _mm256_or_si256(v0, v1));
                let [x0, y0] = unspread(v0, lo, hi, low);
                let [x1, y1] = unspread(v1, lo, hi, low);
                // The packs interleave 64-bit quarters: (0, 2, 1, 3) restores the order.
                let x = _mm256_permute4x64_epi64(_mm256_packus_epi16(x0, x1), 0xD8);
                let y = _mm256_permute4x64_epi64(_mm256_packus_epi16(y0, y1), 0xD8);
                _mm256_storeu_si256(a.add(i / 2).cast(), x);
                _mm256_storeu_si256(b.add(i / 2).cast(), y);
                i += 64;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, 2 * w))
        }
    }

    /// The `vpshufb` control that takes 16-bit lanes `(first word byte, second word byte)`
    /// to rows of two `w`-byte words.
    const fn merge(w: usize) -> [u8; 32] {
        let mut c = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            let (q, r) = (i % 16 / (2 * w), i % (2 * w));
            c[i] = (2 * (q * w + r % w) + r / w) as u8;
            i += 1;
        }
        c
    }

    /// Inverse of [`rows`]: the first `n / 32 * 32` bytes of codes of `2 * w` bytes at
    /// `c` as rows of two `w`-byte words (the even bits first, the odd bits first where
    /// `swap`) at `out`. Returns the code bytes done and the OR of their codes.
    ///
    /// # Safety
    /// AVX2; `c` readable and `out` writable for `n` bytes; `w` is 1, 2 or 4.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rows_dec(
        c: *const u8,
        n: usize,
        w: usize,
        swap: bool,
        out: *mut u8,
    ) -> (usize, u64) {
        const M: [[u8; 32]; 3] = [merge(1), merge(2), merge(4)];
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let ctl = _mm256_loadu_si256(M[w.trailing_zeros() as usize].as_ptr().cast());
            let (lo, hi, low) = split_tables();
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + 32 <= n {
                let v = _mm256_loadu_si256(c.add(i).cast());
                acc = _mm256_or_si256(acc, v);
                let [x, y] = unspread(v, lo, hi, low);
                let (f, s) = if swap { (y, x) } else { (x, y) };
                let xy = _mm256_or_si256(f, _mm256_slli_epi16(s, 8));
                _mm256_storeu_si256(out.add(i).cast(), _mm256_shuffle_epi8(xy, ctl));
                i += 32;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, 2 * w))
        }
    }

    /// `uint8` codes of `uint8` coordinates of at most 4 bits (same width in and out):
    /// `EVEN[x] | ODD[y]`, one table lookup per coordinate byte, 32 points a step (the
    /// lookups need no nibble split: a value of at most 4 bits is its own index, and a
    /// wider one, whose code is then discarded, is caught by the returned OR).
    /// Interleaves the first `n / 32 * 32` bytes of `a` (even bits) and `b` (odd bits)
    /// into `out`. Returns the bytes done and the OR of the inputs.
    ///
    /// # Safety
    /// AVX2; `a` and `b` readable and `out` writable for `n` bytes.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn cols8(a: *const u8, b: *const u8, n: usize, out: *mut u8) -> (usize, u64) {
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let (even, odd, _) = tables();
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + 32 <= n {
                let x = _mm256_loadu_si256(a.add(i).cast());
                let y = _mm256_loadu_si256(b.add(i).cast());
                acc = _mm256_or_si256(acc, _mm256_or_si256(x, y));
                let c = _mm256_or_si256(_mm256_shuffle_epi8(even, x), _mm256_shuffle_epi8(odd, y));
                _mm256_storeu_si256(out.add(i).cast(), c);
                i += 32;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, 1))
        }
    }

    /// [`cols8`] on the rows of an `(n, 2)` `uint8` array at `r` (first byte of a row on
    /// the even bits, on the odd bits where `swap`): the first `n / 64 * 64` bytes (32
    /// rows a step) into `n / 2` codes at `out`. Returns the bytes done and the OR of
    /// them.
    ///
    /// # Safety
    /// AVX2; `r` readable for `n` bytes and `out` writable for `n / 2`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rows8(r: *const u8, n: usize, swap: bool, out: *mut u8) -> (usize, u64) {
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let (even, _, _) = tables();
            let m = _mm256_set1_epi16(0x00FF);
            let mut acc = _mm256_setzero_si256();
            // One 16-bit lane holds a row; `e` its two bytes' spreads on the even bits
            // (each at most 0x55, so no shift below carries a set bit across a byte).
            let code = |e: __m256i| {
                if swap {
                    // ODD[first] | EVEN[second].
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_slli_epi16(e, 1), m),
                        _mm256_srli_epi16(e, 8),
                    )
                } else {
                    // EVEN[first] | ODD[second].
                    _mm256_or_si256(_mm256_and_si256(e, m), _mm256_srli_epi16(e, 7))
                }
            };
            let mut i = 0;
            while i + 64 <= n {
                let v0 = _mm256_loadu_si256(r.add(i).cast());
                let v1 = _mm256_loadu_si256(r.add(i + 32).cast());
                acc = _mm256_or_si256(acc, _mm256_or_si256(v0, v1));
                let c0 = code(_mm256_shuffle_epi8(even, v0));
                let c1 = code(_mm256_shuffle_epi8(even, v1));
                // Every lane is below 0x100; the pack interleaves 64-bit quarters.
                let c = _mm256_permute4x64_epi64(_mm256_packus_epi16(c0, c1), 0xD8);
                _mm256_storeu_si256(out.add(i / 2).cast(), c);
                i += 64;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, 1))
        }
    }

    /// `[EVEN⁻¹ of low nibble, EVEN⁻¹ of high nibble << 2, the same for the odd bits]`:
    /// the coordinate bits a code nibble holds, at their places in a 4-bit coordinate.
    const UN8: [[u8; 16]; 4] = {
        let mut t = [[0u8; 16]; 4];
        let mut v = 0;
        while v < 16 {
            let e = (v & 1) | (v >> 1 & 2);
            let o = (v >> 1 & 1) | (v >> 2 & 2);
            t[0][v] = e as u8;
            t[1][v] = (e << 2) as u8;
            t[2][v] = o as u8;
            t[3][v] = (o << 2) as u8;
            v += 1;
        }
        t
    };

    /// The even-bit and odd-bit coordinates of 32 `uint8` codes by [`UN8`].
    #[inline(always)]
    unsafe fn split8(c: __m256i, t: &[__m256i; 4], low: __m256i) -> [__m256i; 2] {
        // SAFETY (callers): AVX2.
        unsafe {
            let l = _mm256_and_si256(c, low);
            let h = _mm256_and_si256(_mm256_srli_epi16(c, 4), low);
            [
                _mm256_or_si256(_mm256_shuffle_epi8(t[0], l), _mm256_shuffle_epi8(t[1], h)),
                _mm256_or_si256(_mm256_shuffle_epi8(t[2], l), _mm256_shuffle_epi8(t[3], h)),
            ]
        }
    }

    /// Inverse of [`cols8`] (codes of at most 8 bits into `uint8` coordinates): the even
    /// bits of the first `n / 32 * 32` codes at `c` to `a`, the odd bits to `b`, or the
    /// rows `(even, odd)` (`(odd, even)` where `swap`) to `a` when `b` is null. Returns the
    /// codes done and the OR of them.
    ///
    /// # Safety
    /// AVX2; `c` readable for `n` bytes; `a` and `b` writable for `n` bytes, or `b` null
    /// and `a` writable for `2 * n`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn dec8(
        c: *const u8,
        n: usize,
        swap: bool,
        a: *mut u8,
        b: *mut u8,
    ) -> (usize, u64) {
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let t = UN8.map(|t| _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast())));
            let low = _mm256_set1_epi8(0x0F);
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            if !b.is_null() {
                // Columns: 64 codes a step, so each column gets a whole 64-byte line from
                // two consecutive stores. Alternating 32-byte stores between the columns
                // measured 10-20% slower into cache-line-aligned columns (10**6 codes,
                // AVX2 on an AVX-512 Xeon, nbits 3 / 4: 0.109-0.116 / 0.099-0.104 against
                // 0.089-0.093 / 0.093-0.094 ns a code).
                while i + 64 <= n {
                    let v0 = _mm256_loadu_si256(c.add(i).cast());
                    let v1 = _mm256_loadu_si256(c.add(i + 32).cast());
                    acc = _mm256_or_si256(acc, _mm256_or_si256(v0, v1));
                    let [x0, y0] = split8(v0, &t, low);
                    let [x1, y1] = split8(v1, &t, low);
                    _mm256_storeu_si256(a.add(i).cast(), x0);
                    _mm256_storeu_si256(a.add(i + 32).cast(), x1);
                    _mm256_storeu_si256(b.add(i).cast(), y0);
                    _mm256_storeu_si256(b.add(i + 32).cast(), y1);
                    i += 64;
                }
            }
            while i + 32 <= n {
                let v = _mm256_loadu_si256(c.add(i).cast());
                acc = _mm256_or_si256(acc, v);
                let [x, y] = split8(v, &t, low);
                if b.is_null() {
                    let (f, s) = if swap { (y, x) } else { (x, y) };
                    // Per 128-bit lane: rows 0-7 (16-23) in `lo`, 8-15 (24-31) in `hi`.
                    let lo = _mm256_unpacklo_epi8(f, s);
                    let hi = _mm256_unpackhi_epi8(f, s);
                    let o = a.add(2 * i);
                    _mm256_storeu_si256(o.cast(), _mm256_permute2x128_si256(lo, hi, 0x20));
                    _mm256_storeu_si256(o.add(32).cast(), _mm256_permute2x128_si256(lo, hi, 0x31));
                } else {
                    _mm256_storeu_si256(a.add(i).cast(), x);
                    _mm256_storeu_si256(b.add(i).cast(), y);
                }
                i += 32;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, 1))
        }
    }
}

/// The odd bits of 2-D Hilbert indices of `uint32` coordinates on AVX2 as a 4-state
/// machine stepped two bit levels a `vpshufb` (the even bits are `x ^ y`), 32 points a
/// vector: the coordinates transposed into byte planes (byte `b` of 32 points in one
/// register), the state in byte lanes. With `p = x ^ y` (a level's even index bit) and the
/// state `(swap, complement)`, a level's odd index bit is `x' = x ^ (swap & p) ^
/// complement`, and the level swaps where `(x', p)` is `(0, 0)` and swaps and complements
/// where it is `(1, 1)` (`hilbertcurve`'s curve, Skilling 2004). One 16-entry table gives
/// the two odd bits of a pair of levels from `(x', p)` transformed by the state on entry,
/// two more the state change: 8 vector steps a pair of levels for 32 points (and the
/// transposes), where the prefix scan of [`Word::h2_bits`] takes about 90 for 8 points in
/// lanes of 32 bits. Each step waits for the one before, so two groups of 32 points run
/// side by side. AVX2 kernel on an AVX-512 Xeon, 10**6 points from columns, 1 thread:
/// nbits 20 1.43 -> 0.95 ns a point, 32 1.43 -> 1.17 (one group at a time: 1.14-1.21 /
/// 1.40-1.47; four: as two). With AVX-512 VBMI ([`h2nib::odd512`], and
/// [`h2nib::odd512_16`] for `uint16` coordinates) the state and the raw pair of levels
/// index 64-entry `vpermb` tables, 64 points a vector: 3 steps a pair of levels; uint32
/// nbits 16-32 1.04-1.09 -> 0.65-0.82 ns a point on the AVX-512 kernel (its scan in
/// 512-bit lanes before).
#[cfg(target_arch = "x86_64")]
mod h2nib {
    use std::arch::x86_64::*;

    /// Rule of one level: `(x', p)` -> `(swap, complement)` changes.
    const fn rule(x: usize, p: usize) -> (usize, usize) {
        match (x, p) {
            (0, 0) => (1, 0),
            (1, 1) => (1, 1),
            _ => (0, 0),
        }
    }

    /// Tables indexed by a pair of levels: `x'_hi x'_lo` (bits 1, 0; transformed by the
    /// state on entry) and `p_hi p_lo` (bits 3, 2). `[odd bits (x'_hi, and x'_lo as the
    /// second level sees it), swap change, complement change]`, the changes as masks 0x03.
    const fn tables() -> [[u8; 16]; 3] {
        let mut t = [[0u8; 16]; 3];
        let mut v = 0;
        while v < 16 {
            let (xh, xl, pl, ph) = (v >> 1 & 1, v & 1, v >> 2 & 1, v >> 3 & 1);
            let (s1, c1) = rule(xh, ph);
            let xl = xl ^ (s1 & pl) ^ c1;
            let (s2, c2) = rule(xl, pl);
            t[0][v] = (xh << 1 | xl) as u8;
            t[1][v] = ((s1 ^ s2) * 0x03) as u8;
            t[2][v] = ((c1 ^ c2) * 0x03) as u8;
            v += 1;
        }
        t
    }

    /// Per 16-byte lane, the 4x4 byte transpose of four 32-bit words (an involution).
    const TP: [u8; 32] = {
        let mut c = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            c[i] = ((i % 4) * 4 + i % 16 / 4) as u8;
            i += 1;
        }
        c
    };

    /// Per 128-bit lane, the 4x4 transpose of the 32-bit words of four registers (an
    /// involution): `words` in 256-bit vectors, `words512` in 512-bit ones.
    macro_rules! words {
        ($name:ident, $v:ty, $lo32:ident, $hi32:ident, $lo64:ident, $hi64:ident) => {
            #[inline(always)]
            unsafe fn $name(t: [$v; 4]) -> [$v; 4] {
                // SAFETY (callers): the features of the vector width.
                unsafe {
                    let (a0, a1) = ($lo32(t[0], t[1]), $hi32(t[0], t[1]));
                    let (a2, a3) = ($lo32(t[2], t[3]), $hi32(t[2], t[3]));
                    [$lo64(a0, a2), $hi64(a0, a2), $lo64(a1, a3), $hi64(a1, a3)]
                }
            }
        };
    }
    words!(
        words,
        __m256i,
        _mm256_unpacklo_epi32,
        _mm256_unpackhi_epi32,
        _mm256_unpacklo_epi64,
        _mm256_unpackhi_epi64
    );
    words!(
        words512,
        __m512i,
        _mm512_unpacklo_epi32,
        _mm512_unpackhi_epi32,
        _mm512_unpacklo_epi64,
        _mm512_unpackhi_epi64
    );

    /// Byte planes of 32 words in four registers: plane `b` holds byte `b` of every word,
    /// in an order that [`unplanes`] undoes.
    #[inline(always)]
    unsafe fn planes(mut v: [__m256i; 4], tp: __m256i) -> [__m256i; 4] {
        // SAFETY (callers): AVX2.
        unsafe {
            for r in &mut v {
                *r = _mm256_shuffle_epi8(*r, tp);
            }
            words(v)
        }
    }

    /// Inverse of [`planes`].
    #[inline(always)]
    unsafe fn unplanes(p: [__m256i; 4], tp: __m256i) -> [__m256i; 4] {
        // SAFETY (callers): AVX2.
        unsafe {
            let mut v = words(p);
            for r in &mut v {
                *r = _mm256_shuffle_epi8(*r, tp);
            }
            v
        }
    }

    /// The byte-lane operations of one vector width (callers have its features).
    trait Bytes: Copy {
        unsafe fn xor(self, o: Self) -> Self;
        unsafe fn and(self, o: Self) -> Self;
        unsafe fn or(self, o: Self) -> Self;
        /// Each 16-bit lane shifted left by 2.
        unsafe fn shl2(self) -> Self;
        /// Each 16-bit lane shifted right by 2.
        unsafe fn shr2(self) -> Self;
        /// Each 16-bit lane shifted right by 4.
        unsafe fn shr4(self) -> Self;
    }

    macro_rules! bytes {
        ($v:ty, $xor:ident, $and:ident, $or:ident, $sl:ident, $sr:ident) => {
            impl Bytes for $v {
                #[inline(always)]
                unsafe fn xor(self, o: Self) -> Self {
                    // SAFETY (all): the callers have the features.
                    unsafe { $xor(self, o) }
                }
                #[inline(always)]
                unsafe fn and(self, o: Self) -> Self {
                    unsafe { $and(self, o) }
                }
                #[inline(always)]
                unsafe fn or(self, o: Self) -> Self {
                    unsafe { $or(self, o) }
                }
                #[inline(always)]
                unsafe fn shl2(self) -> Self {
                    unsafe { $sl::<2>(self) }
                }
                #[inline(always)]
                unsafe fn shr2(self) -> Self {
                    unsafe { $sr::<2>(self) }
                }
                #[inline(always)]
                unsafe fn shr4(self) -> Self {
                    unsafe { $sr::<4>(self) }
                }
            }
        };
    }
    bytes!(
        __m256i,
        _mm256_xor_si256,
        _mm256_and_si256,
        _mm256_or_si256,
        _mm256_slli_epi16,
        _mm256_srli_epi16
    );
    bytes!(
        __m512i,
        _mm512_xor_si512,
        _mm512_and_si512,
        _mm512_or_si512,
        _mm512_slli_epi16,
        _mm512_srli_epi16
    );

    /// The four pairs of levels of byte planes `xb`, `yb` (`m33`, `mcc`: bytes 0x33,
    /// 0xCC), pair `g` in the low nibble of element `g` (the high nibbles hold other
    /// bits): `x` bits 1-0 and `p = x ^ y` bits 3-2.
    #[inline(always)]
    unsafe fn level_pairs<V: Bytes>(xb: V, yb: V, m33: V, mcc: V) -> [V; 4] {
        // SAFETY (callers): the features of `V`.
        unsafe {
            let pb = xb.xor(yb);
            let c0 = xb.and(m33).or(pb.and(m33).shl2());
            let c1 = xb.shr2().and(m33).or(pb.and(mcc));
            [c0, c1, c0.shr4(), c1.shr4()]
        }
    }

    /// A driver of `$groups::<G>` (`$pts` points a group): two groups at a time, then one.
    macro_rules! driver {
        ($(#[$m:meta])* $name:ident, $groups:ident, $t:ty, $pts:expr, $feat:literal) => {
            $(#[$m])*
            #[target_feature(enable = $feat)]
            pub(super) unsafe fn $name(
                x: *const $t,
                y: *const $t,
                n: usize,
                nbits: u32,
                od: *mut $t,
            ) -> usize {
                let mut i = 0;
                // SAFETY: as the caller promises, for the points from `i` on.
                unsafe {
                    while i + 2 * $pts <= n {
                        $groups::<2>(x.add(i), y.add(i), nbits, od.add(i));
                        i += 2 * $pts;
                    }
                    if i + $pts <= n {
                        $groups::<1>(x.add(i), y.add(i), nbits, od.add(i));
                        i += $pts;
                    }
                }
                i
            }
        };
    }

    driver!(
        /// The odd bits of the 2-D Hilbert indices of `nbits`-bit points `(x[i], y[i])`
        /// (bit `k` of `od[i]`: the index's bit `2k + 1`), for the leading multiple of 32
        /// of `n` points. Returns the points done. Values of `nbits` bits or more give
        /// unspecified bits (the caller's range check refuses them).
        ///
        /// # Safety
        /// AVX2; `x`, `y` readable and `od` writable for `n` words; `1 <= nbits <= 32`.
        odd, groups, u32, 32, "avx2"
    );

    /// [`odd`] on `32 * G` points, the `G` groups of 32 stepped together (each level
    /// pair's steps depend on the one before: independent groups fill the wait).
    ///
    /// # Safety
    /// AVX2; `x`, `y` readable and `od` writable for `32 * G` words; `1 <= nbits <= 32`.
    #[inline(always)]
    unsafe fn groups<const G: usize>(x: *const u32, y: *const u32, nbits: u32, od: *mut u32) {
        const T: [[u8; 16]; 3] = tables();
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            // No closures here or in the helpers: a closure does not take the function's
            // target features, so its intrinsics would not inline (the AVX-512 version
            // ran 8x slower with them).
            let mut t = [_mm256_setzero_si256(); 3];
            for (r, v) in t.iter_mut().zip(&T) {
                *r = _mm256_broadcastsi128_si256(_mm_loadu_si128(v.as_ptr().cast()));
            }
            let [tx, ts, tc] = t;
            // The odd bits of level pair `g` of a byte land at bits `2g + 1`, `2g`.
            let tx = [
                tx,
                _mm256_slli_epi16(tx, 2),
                _mm256_slli_epi16(tx, 4),
                _mm256_slli_epi16(tx, 6),
            ];
            let tp = _mm256_loadu_si256(TP.as_ptr().cast());
            let (low, m33) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x33));
            let mcc = _mm256_set1_epi8(0xCC_u8 as i8);
            // Odd `nbits` run one more level, a zero one at the bottom, dropped at the end.
            let up = _mm_cvtsi32_si128((nbits & 1) as i32);
            let pairs = nbits.div_ceil(2) as usize;
            let mut xp = [[_mm256_setzero_si256(); 4]; G];
            let mut yp = [[_mm256_setzero_si256(); 4]; G];
            for j in 0..G {
                for k in 0..4 {
                    let at = 32 * j + 8 * k;
                    xp[j][k] = _mm256_sll_epi32(_mm256_loadu_si256(x.add(at).cast()), up);
                    yp[j][k] = _mm256_sll_epi32(_mm256_loadu_si256(y.add(at).cast()), up);
                }
                xp[j] = planes(xp[j], tp);
                yp[j] = planes(yp[j], tp);
            }
            // The state: swap and complement masks (0x03 or 0) of every point.
            let (mut sw, mut cm) = ([_mm256_setzero_si256(); G], [_mm256_setzero_si256(); G]);
            let mut o = [[_mm256_setzero_si256(); 4]; G];
            for b in (0..4).rev() {
                if 4 * b >= pairs {
                    continue;
                }
                let mut q = [[_mm256_setzero_si256(); 4]; G];
                for j in 0..G {
                    q[j] = level_pairs(xp[j][b], yp[j][b], m33, mcc);
                    for v in &mut q[j] {
                        *v = _mm256_and_si256(*v, low);
                    }
                }
                for g in (0..4).rev() {
                    if 4 * b + g >= pairs {
                        continue;
                    }
                    for j in 0..G {
                        // x' = x ^ (swap & p) ^ complement on both levels (the shifted p
                        // takes a neighbour's bits into bits 6-7, which the mask clears).
                        let q = q[j][g];
                        let p = _mm256_and_si256(_mm256_srli_epi16(q, 2), sw[j]);
                        let t = _mm256_xor_si256(_mm256_xor_si256(q, cm[j]), p);
                        o[j][b] = _mm256_or_si256(o[j][b], _mm256_shuffle_epi8(tx[g], t));
                        sw[j] = _mm256_xor_si256(sw[j], _mm256_shuffle_epi8(ts, t));
                        cm[j] = _mm256_xor_si256(cm[j], _mm256_shuffle_epi8(tc, t));
                    }
                }
            }
            for (j, o) in o.into_iter().enumerate() {
                for (k, r) in unplanes(o, tp).into_iter().enumerate() {
                    _mm256_storeu_si256(od.add(32 * j + 8 * k).cast(), _mm256_srl_epi32(r, up));
                }
            }
        }
    }

    /// 64-entry `vpermb` tables indexed by the state (bits 4-5: swap, complement) and a
    /// raw pair of levels (`x` bits 1-0, `p` bits 3-2): the odd bits of level pair `g`
    /// at bits `2g + 1`, `2g` (tables 0-3), and the next state (table 4).
    const fn tables64() -> [[u8; 64]; 5] {
        const T: [[u8; 16]; 3] = tables();
        let mut t = [[0u8; 64]; 5];
        let mut i = 0;
        while i < 64 {
            let (s, c, x, p) = (i >> 4 & 1, i >> 5 & 1, i & 3, i >> 2 & 3);
            let tn = (x ^ ((s * 3) & p) ^ (c * 3)) | p << 2;
            let mut g = 0;
            while g < 4 {
                t[g][i] = T[0][tn] << (2 * g);
                g += 1;
            }
            let (s, c) = (s ^ (T[1][tn] & 1) as usize, c ^ (T[2][tn] & 1) as usize);
            t[4][i] = (s << 4 | c << 5) as u8;
            i += 1;
        }
        t
    }

    driver!(
        /// [`odd`] on AVX-512 VBMI, 64 points a vector (multiples of 64): the state and a
        /// raw pair of levels index one `vpermb` table for the odd bits and one for the
        /// next state, with no steps to transform the bits by the state.
        ///
        /// # Safety
        /// AVX-512 F/BW/VBMI; as [`odd`].
        odd512, groups512, u32, 64, "avx512f,avx512bw,avx512vbmi"
    );

    driver!(
        /// [`odd512`] for `uint16` coordinates (`nbits <= 16`), 64 points a vector: the
        /// two byte planes are two `vpermt2b` of the words, and back.
        ///
        /// # Safety
        /// AVX-512 F/BW/VBMI; as [`odd`], `1 <= nbits <= 16`.
        odd512_16, groups512_16, u16, 64, "avx512f,avx512bw,avx512vbmi"
    );

    /// [`groups`] on AVX-512 VBMI, 64 points a group.
    ///
    /// # Safety
    /// AVX-512 F/BW/VBMI; `x`, `y` readable and `od` writable for `64 * G` words;
    /// `1 <= nbits <= 32`.
    #[inline(always)]
    unsafe fn groups512<const G: usize>(x: *const u32, y: *const u32, nbits: u32, od: *mut u32) {
        const TP4: [u8; 64] = {
            let mut c = [0u8; 64];
            let mut i = 0;
            while i < 64 {
                c[i] = TP[i % 32];
                i += 1;
            }
            c
        };
        // SAFETY: AVX-512 F/BW/VBMI; every load and store lies within the bounds the
        // caller gives.
        unsafe {
            let tp = _mm512_loadu_si512(TP4.as_ptr().cast());
            let up = _mm_cvtsi32_si128((nbits & 1) as i32);
            let mut xp = [[_mm512_setzero_si512(); 4]; G];
            let mut yp = [[_mm512_setzero_si512(); 4]; G];
            for j in 0..G {
                for k in 0..4 {
                    let at = 64 * j + 16 * k;
                    let (a, b) = (
                        _mm512_loadu_si512(x.add(at).cast()),
                        _mm512_loadu_si512(y.add(at).cast()),
                    );
                    xp[j][k] = _mm512_shuffle_epi8(_mm512_sll_epi32(a, up), tp);
                    yp[j][k] = _mm512_shuffle_epi8(_mm512_sll_epi32(b, up), tp);
                }
                xp[j] = words512(xp[j]);
                yp[j] = words512(yp[j]);
            }
            let o = machine512(&xp, &yp, nbits);
            for (j, o) in o.into_iter().enumerate() {
                for (k, r) in words512(o).into_iter().enumerate() {
                    let r = _mm512_shuffle_epi8(r, tp);
                    _mm512_storeu_si512(od.add(64 * j + 16 * k).cast(), _mm512_srl_epi32(r, up));
                }
            }
        }
    }

    /// [`groups512`] for `uint16` words, 64 points a group.
    ///
    /// # Safety
    /// AVX-512 F/BW/VBMI; `x`, `y` readable and `od` writable for `64 * G` words;
    /// `1 <= nbits <= 16`.
    #[inline(always)]
    unsafe fn groups512_16<const G: usize>(x: *const u16, y: *const u16, nbits: u32, od: *mut u16) {
        /// `vpermt2b` indices: the low (`[0]`) and high (`[1]`) bytes of 64 words in two
        /// registers; the first (`[2]`) and last (`[3]`) 32 words back from two planes.
        const IX: [[u8; 64]; 4] = {
            let mut c = [[0u8; 64]; 4];
            let mut i = 0;
            while i < 64 {
                c[0][i] = (2 * i) as u8;
                c[1][i] = (2 * i + 1) as u8;
                let (k, j) = (i / 2, i % 2);
                c[2][i] = (k + 64 * j) as u8;
                c[3][i] = (32 + k + 64 * j) as u8;
                i += 1;
            }
            c
        };
        // SAFETY: AVX-512 F/BW/VBMI; every load and store lies within the bounds the
        // caller gives.
        unsafe {
            let mut ix = [_mm512_setzero_si512(); 4];
            for (r, v) in ix.iter_mut().zip(&IX) {
                *r = _mm512_loadu_si512(v.as_ptr().cast());
            }
            let up = _mm_cvtsi32_si128((nbits & 1) as i32);
            let mut xp = [[_mm512_setzero_si512(); 2]; G];
            let mut yp = [[_mm512_setzero_si512(); 2]; G];
            for j in 0..G {
                for (p, src) in [(&mut xp[j], x), (&mut yp[j], y)] {
                    let a = _mm512_sll_epi16(_mm512_loadu_si512(src.add(64 * j).cast()), up);
                    let b = _mm512_sll_epi16(_mm512_loadu_si512(src.add(64 * j + 32).cast()), up);
                    *p = [
                        _mm512_permutex2var_epi8(a, ix[0], b),
                        _mm512_permutex2var_epi8(a, ix[1], b),
                    ];
                }
            }
            let o = machine512(&xp, &yp, nbits);
            for (j, [lo, hi]) in o.into_iter().enumerate() {
                for k in 0..2 {
                    let w = _mm512_permutex2var_epi8(lo, ix[2 + k], hi);
                    _mm512_storeu_si512(od.add(64 * j + 32 * k).cast(), _mm512_srl_epi16(w, up));
                }
            }
        }
    }

    /// The state machine of [`odd512`] over `B` byte planes of `G` groups of 64 points
    /// (plane `b`: byte `b` of every word): the odd index bits, as byte planes.
    ///
    /// # Safety
    /// AVX-512 F/BW/VBMI.
    #[inline(always)]
    unsafe fn machine512<const G: usize, const B: usize>(
        xp: &[[__m512i; B]; G],
        yp: &[[__m512i; B]; G],
        nbits: u32,
    ) -> [[__m512i; B]; G] {
        const T: [[u8; 64]; 5] = tables64();
        // SAFETY: AVX-512 F/BW/VBMI, register arithmetic only.
        unsafe {
            let mut tx = [_mm512_setzero_si512(); 4];
            for (r, v) in tx.iter_mut().zip(&T) {
                *r = _mm512_loadu_si512(v.as_ptr().cast());
            }
            let ts = _mm512_loadu_si512(T[4].as_ptr().cast());
            let (low, m33) = (_mm512_set1_epi8(0x0F), _mm512_set1_epi8(0x33));
            let mcc = _mm512_set1_epi8(0xCC_u8 as i8);
            let pairs = nbits.div_ceil(2) as usize;
            let mut st = [_mm512_setzero_si512(); G];
            let mut o = [[_mm512_setzero_si512(); B]; G];
            for b in (0..B).rev() {
                if 4 * b >= pairs {
                    continue;
                }
                // Bits 4-7 are cleared as the state is ORed in.
                let mut c = [[_mm512_setzero_si512(); 4]; G];
                for j in 0..G {
                    c[j] = level_pairs(xp[j][b], yp[j][b], m33, mcc);
                }
                for g in (0..4).rev() {
                    if 4 * b + g >= pairs {
                        continue;
                    }
                    for j in 0..G {
                        // (c & 0x0F) | st
                        let idx = _mm512_ternarylogic_epi32::<0xEA>(c[j][g], low, st[j]);
                        o[j][b] = _mm512_or_si512(o[j][b], _mm512_permutexvar_epi8(idx, tx[g]));
                        st[j] = _mm512_permutexvar_epi8(idx, ts);
                    }
                }
            }
            o
        }
    }
}

/// The even and odd bits of the 2-D Hilbert index of `(x, y)` in lanes of their own
/// width, shifted down to the index's bits ([`Word::h2_bits`] on all `BITS`).
#[inline(always)]
fn h2_halves<U: Word>(x: U, y: U, nbits: u32) -> (U, U) {
    let (e, o) = U::h2_bits(x, y, nbits, U::BITS);
    (e.shr(U::BITS - nbits), o.shr(U::BITS - nbits))
}

/// 2-D Hilbert codes of one chunk, codes twice as wide as the coordinates: per block of
/// 256 points, the prefix scan of [`Word::h2_bits`] in lanes of the coordinates' width
/// (twice as many lanes per vector as in the code's width), then the bit interleave by
/// `inter(even, odd, m, out)`, which interleaves the leading of `m` points and returns how
/// many it did (the rest here). With `odd`, the block's columns `(x, y)` go to
/// `odd(x, y, od)` instead, which writes the odd index bits of the leading points to `od`
/// and returns how many it did (the scan takes the rest; the even bits are `x ^ y`).
/// Inlined into a caller with the target features `inter` and `odd` need. Returns the OR
/// of the input values.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn hilbert2_split<U: Word, O: Word>(
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
    inter: impl Fn(*const U, *const U, usize, *mut O) -> usize,
    odd: Option<impl Fn(&[U], &[U], &mut [U]) -> usize>,
) -> U {
    const B: usize = 256;
    let mut ev = [U::default(); B];
    let mut od = [U::default(); B];
    let (mut xs, mut ys) = ([U::default(); B], [U::default(); B]);
    let mut acc = U::default();
    for (bi, ob) in out.chunks_mut(B).enumerate() {
        let (r0, m) = (bi * B, ob.len());
        let halves = ev[..m].iter_mut().zip(od[..m].iter_mut());
        match (src, &odd) {
            (Src::Rows(s), None) => {
                for ((e, o), r) in halves.zip(s[2 * r0..2 * (r0 + m)].chunks_exact(2)) {
                    acc = acc.or(r[0]).or(r[1]);
                    (*e, *o) = h2_halves(r[0], r[1], nbits);
                }
            }
            (Src::Cols([x, y, _]), None) => {
                for ((e, o), (&a, &b)) in halves.zip(x[r0..r0 + m].iter().zip(&y[r0..r0 + m])) {
                    acc = acc.or(a).or(b);
                    (*e, *o) = h2_halves(a, b, nbits);
                }
            }
            (_, Some(odd)) => {
                let (x, y): (&[U], &[U]) = match src {
                    Src::Rows(s) => {
                        let rows = s[2 * r0..2 * (r0 + m)].chunks_exact(2);
                        for ((a, b), r) in xs.iter_mut().zip(ys.iter_mut()).zip(rows) {
                            (*a, *b) = (r[0], r[1]);
                        }
                        (&xs[..m], &ys[..m])
                    }
                    Src::Cols([x, y, _]) => (&x[r0..r0 + m], &y[r0..r0 + m]),
                };
                for ((e, &a), &b) in ev.iter_mut().zip(x).zip(y) {
                    acc = acc.or(a).or(b);
                    *e = a.xor(b);
                }
                for j in odd(x, y, &mut od[..m])..m {
                    od[j] = h2_halves(x[j], y[j], nbits).1;
                }
            }
        }
        let done = inter(ev.as_ptr(), od.as_ptr(), m, ob.as_mut_ptr());
        for j in done..m {
            ob[j] = cast::<U, O>(od[j]).part1s::<1>() | cast::<U, O>(ev[j]).part1();
        }
    }
    acc
}

/// [`hilbert2_split`] on AVX2, the interleave by [`nib2::cols`], the odd index bits of
/// `uint32` coordinates by [`h2nib::odd`].
///
/// # Safety
/// The CPU has AVX2 and BMI2; `O::BITS == 2 * U::BITS <= 64`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
unsafe fn hilbert2_avx2<U: Word, O: Word>(nbits: u32, src: Src<'_, U>, out: &mut [O]) -> U {
    let w = (U::BITS / 8) as usize;
    let inter = |e: *const U, o: *const U, m: usize, out: *mut O| {
        // SAFETY: AVX2; `e` and `o` hold `m` words of `w` bytes, `out` `m` codes of
        // `2 * w` bytes.
        let (done, _) = unsafe { nib2::cols(e.cast(), o.cast(), m * w, w, out.cast()) };
        done / w
    };
    let odd = (U::BITS == 32).then_some(|x: &[U], y: &[U], od: &mut [U]| {
        // SAFETY: AVX2; the words are 32 bits wide, `x` and `y` as long as `od`.
        unsafe {
            h2nib::odd(
                x.as_ptr().cast(),
                y.as_ptr().cast(),
                od.len(),
                nbits,
                od.as_mut_ptr().cast(),
            )
        }
    });
    hilbert2_split(nbits, src, out, inter, odd)
}

/// [`hilbert2_split`] on AVX-512, the interleave by [`m2z::encode`] (VBMI byte permutes
/// and a GFNI bit shuffle); the odd index bits of `uint16` and `uint32` coordinates by
/// [`h2nib::odd512_16`] / [`h2nib::odd512`], of `uint8` ones by the scan in 512-bit
/// vectors.
///
/// # Safety
/// [`m2z_fits`] for `U`, `O` (AVX-512 F/BW/VBMI, GFNI; `O::BITS == 2 * U::BITS <= 64`).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vbmi,gfni,avx2,bmi2")]
unsafe fn hilbert2_avx512<U: Word, O: Word>(nbits: u32, src: Src<'_, U>, out: &mut [O]) -> U {
    let inter = |e: *const U, o: *const U, m: usize, out: *mut O| {
        let halves = [e as *const u8, o as *const u8];
        let out: *mut u8 = out.cast();
        // SAFETY: as the caller promises; `e` and `o` hold `m` coordinates, `out` `m`
        // codes of twice their width.
        let (done, _) = unsafe {
            match U::BITS {
                8 => m2z::encode::<1, false>(halves, m, false, out),
                16 => m2z::encode::<2, false>(halves, m, false, out),
                _ => m2z::encode::<4, false>(halves, m, false, out),
            }
        };
        done
    };
    let odd = (U::BITS == 16 || U::BITS == 32).then_some(|x: &[U], y: &[U], od: &mut [U]| {
        let (xp, yp, n, op) = (x.as_ptr(), y.as_ptr(), od.len(), od.as_mut_ptr());
        // SAFETY: AVX-512 F/BW/VBMI, as the caller promises; the words are 16 or 32 bits
        // wide as matched, `x` and `y` as long as `od`, `nbits` within the word.
        unsafe {
            match U::BITS {
                16 => h2nib::odd512_16(xp.cast(), yp.cast(), n, nbits, op.cast()),
                _ => h2nib::odd512(xp.cast(), yp.cast(), n, nbits, op.cast()),
            }
        }
    });
    hilbert2_split(nbits, src, out, inter, odd)
}

/// 2-D codes of one chunk on the AVX2 kernel where the code is twice as wide as the
/// coordinates (`uint8`, `uint16`, `uint32` into `uint16`, `uint32`, `uint64`): Morton by
/// [`nib2`] straight from the input (the tail on the generic loop), Hilbert by
/// [`hilbert2_avx2`]. `None` for other kernels and widths. Returns the OR of the input
/// values.
#[cfg(target_arch = "x86_64")]
fn encode2_avx2<U: Word, O: Word>(
    k: Kernel,
    curve: Curve,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
) -> Option<U> {
    // Same width (uint8): on the AVX-512 kernel too (measured faster than its
    // magic-number steps in byte lanes), and on the portable one for rows (SSE2 shifts;
    // its generic loop reads them strided: 0.83-0.96 -> 0.14 ns a point, nbits 1-4; into
    // separate arrays the generic loop's steps in byte lanes stay faster, 0.07-0.12
    // against 0.15).
    let same8 = k >= Kernel::Avx2 || (k == Kernel::Portable && matches!(src, Src::Rows(_)));
    if let (Curve::Morton { msb }, 8, 8, true) = (curve, U::BITS, O::BITS, same8) {
        return Some(morton2_same8(k, msb, nbits, src, out));
    }
    if k != Kernel::Avx2 || O::BITS != 2 * U::BITS || U::BITS > 32 {
        return None;
    }
    let n = out.len();
    let w = (U::BITS / 8) as usize;
    let o: *mut u8 = out.as_mut_ptr().cast();
    let msb = match curve {
        // SAFETY: `kernel()` picks AVX2 only where the CPU has it (with BMI2, as for
        // `multiversion!`); the widths are checked above.
        Curve::Hilbert => return Some(unsafe { hilbert2_avx2(nbits, src, out) }),
        Curve::Morton { msb } => msb,
    };
    // SAFETY (both): AVX2 as above; the input holds `2 * n` words of `w` bytes and the
    // output `n` codes of `2 * w` bytes (asserted).
    let (done, a) = match src {
        Src::Rows(s) => {
            assert!(s.len() >= 2 * n);
            let (b, a) = unsafe { nib2::rows(s.as_ptr().cast(), 2 * n * w, w, msb, o) };
            (b / (2 * w), a)
        }
        Src::Cols([x, y, _]) => {
            assert!(x.len() >= n && y.len() >= n);
            let (x, y) = if msb { (y, x) } else { (x, y) };
            let (b, a) = unsafe { nib2::cols(x.as_ptr().cast(), y.as_ptr().cast(), n * w, w, o) };
            (b / w, a)
        }
    };
    Some(encode_tail(k, curve, 2, nbits, src, out, done, a))
}

/// The points of a chunk after its first `done`, which a SIMD kernel coded, on the
/// generic loop; returns the OR of their input values and `acc` (the first `done`'s).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn encode_tail<U: Word, O: Word>(
    k: Kernel,
    curve: Curve,
    d: usize,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
    done: usize,
    acc: u64,
) -> U {
    let rest = match src {
        Src::Rows(s) => Src::Rows(&s[d * done..]),
        Src::Cols([x, y, z]) => {
            Src::Cols([&x[done..], &y[done..], if d == 3 { &z[done..] } else { z }])
        }
    };
    let tail = encode_chunk_k::<U, O>(
        k,
        curve,
        d,
        nbits,
        rest,
        &mut out[done..],
        MortonStep::Generic,
    );
    tail.or(U::from_u64(acc))
}

/// [`encode_tail`] for decoding: the codes after the first `done`; returns the OR of the
/// codes.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn decode_tail<U: Word, O: Word>(
    k: Kernel,
    curve: Curve,
    d: usize,
    nbits: u32,
    codes: &[U],
    dst: Dst<'_, O>,
    done: usize,
    acc: u64,
) -> U {
    let tail = decode_chunk_k::<U, O>(
        k,
        curve,
        d,
        nbits,
        &codes[done..],
        dst.after(d, done),
        MortonStep::Generic,
    );
    tail.or(U::from_u64(acc))
}

/// 2-D Morton coding for the portable kernel on x86-64, in SSE2 (which every x86-64 CPU
/// has). As in [`nib2`], the code of two `w`-byte coordinates is a byte stream transform:
/// `punpcklbw` / `punpckhbw` pair the coordinates' bytes (the magic-number spreads' steps by
/// 16 and 8 bits, for both coordinates in one instruction), then three delta swaps in each
/// 16-bit lane interleave the pair's bits (the outer perfect shuffle of Hacker's Delight,
/// 7-2). Decoding gathers each 16-bit lane's even and odd bits by multiplies
/// (`split_bits`: 14 instructions for 8 codes against 20 by the three swaps in reverse;
/// portable kernel, 2-D nbits 5-8 into `uint8`, 0.45-0.48 -> 0.38-0.45 ns a point,
/// 1.00-1.07x -> 0.86-0.96x hilbertsfc's time; nbits 12 / 16 0.84x / 0.73-0.75x ->
/// 0.70-0.73x / 0.64-0.69x; three alternating runs, both libraries held to SSE2) and
/// splits the lanes by `packuswb`. LLVM's SSE2 code for the spreads runs up to five
/// shift/mask steps on each coordinate in lanes of the code's width (two `uint64` lanes a
/// register).
#[cfg(target_arch = "x86_64")]
mod swar2 {
    use std::arch::x86_64::*;

    /// One delta swap: the bits of `m` exchanged with those `S` above them.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn swap<const S: i32>(v: __m128i, m: i16) -> __m128i {
        let t = _mm_and_si128(_mm_xor_si128(v, _mm_srli_epi16::<S>(v)), _mm_set1_epi16(m));
        _mm_xor_si128(v, _mm_xor_si128(t, _mm_slli_epi16::<S>(t)))
    }

    /// Per 16-bit lane: bit `j` of the low byte to bit `2 j`, of the high byte to `2 j + 1`.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn shuffle(v: __m128i) -> __m128i {
        swap::<1>(swap::<2>(swap::<4>(v, 0x00F0), 0x0C0C), 0x2222)
    }

    /// Inverse of [`shuffle`], its halves in lanes of their own: per 16-bit lane, its even
    /// bits gathered (bit `2 j` to bit `j`) and its odd bits (`2 j + 1` to `j`), each lane
    /// below 256. Each coordinate takes a mask and three 16-bit multiplies, each multiply
    /// joining neighbouring groups of 1, 2 and then 4 bits: `3` (`x + 2 x`), `5`
    /// (`x + 4 x`) and last `2^13 + 2^9` (high half, `pmulhuw`) or `17`. A group and its
    /// shifted copy never share a bit, so no product carries, and a mask keeps the joined
    /// groups. That is 7 instructions a coordinate for 8 codes, against 20 for both by the
    /// three swaps in reverse and a split of the bytes (the module's doc has the times).
    #[inline]
    #[target_feature(enable = "sse2")]
    fn split_bits(v: __m128i) -> (__m128i, __m128i) {
        let set = _mm_set1_epi16;
        let (a, b) = nibbles(v);
        let a = _mm_and_si128(_mm_mulhi_epu16(a, set(0x2200)), set(0x00FF));
        let b = _mm_srli_epi16::<8>(_mm_mullo_epi16(b, set(17)));
        (a, b)
    }

    /// [`split_bits`] but for its last step: per 16-bit lane, the even bits of each byte
    /// gathered at bits 3-6 of that byte, the odd bits at bits 4-7.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn nibbles(v: __m128i) -> (__m128i, __m128i) {
        let set = _mm_set1_epi16;
        let a = _mm_and_si128(v, set(0x5555));
        let a = _mm_and_si128(_mm_mullo_epi16(a, set(3)), set(0x6666));
        let a = _mm_and_si128(_mm_mullo_epi16(a, set(5)), set(0x7878));
        let b = _mm_and_si128(v, set(0xAAAAu16 as i16));
        let b = _mm_and_si128(_mm_mullo_epi16(b, set(3)), set(0xCCCCu16 as i16));
        let b = _mm_and_si128(_mm_mullo_epi16(b, set(5)), set(0xF0F0u16 as i16));
        (a, b)
    }

    /// De-interleaves the first `n / 16 * 16` one-byte codes at `c`: their even bits to
    /// `x` and odd bits to `y` (one byte each), or, where `y` is null, rows of both at `x`
    /// (the odd bits first where `swap`). Two codes a 16-bit lane: [`nibbles`] and a shift
    /// leave each code's coordinates in its own byte. Returns the codes done and the OR of
    /// them.
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); `c` readable for `n` bytes; `x` and `y` writable for `n`
    /// bytes each, or `x` for `2 * n` where `y` is null.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn dec8(
        c: *const u8,
        n: usize,
        swap: bool,
        x: *mut u8,
        y: *mut u8,
    ) -> (usize, u64) {
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: `i + 16 <= n`: the loads and stores lie within the caller's bounds.
            unsafe {
                let v = _mm_loadu_si128(c.add(i).cast());
                acc = _mm_or_si128(acc, v);
                let (a, b) = nibbles(v);
                let (xs, ys) = (_mm_srli_epi16::<3>(a), _mm_srli_epi16::<4>(b));
                if y.is_null() {
                    let (p, q) = if swap { (ys, xs) } else { (xs, ys) };
                    _mm_storeu_si128(x.add(2 * i).cast(), _mm_unpacklo_epi8(p, q));
                    _mm_storeu_si128(x.add(2 * i + 16).cast(), _mm_unpackhi_epi8(p, q));
                } else {
                    _mm_storeu_si128(x.add(i).cast(), xs);
                    _mm_storeu_si128(y.add(i).cast(), ys);
                }
            }
            i += 16;
        }
        (i, fold(acc, 1))
    }

    /// Per 16-bit lane of two coordinates of at most 4 bits (`x` the low byte, `y` the
    /// high byte; at most 2 where `SHORT`): their one-byte code in the lane's low byte, `x`
    /// on the even bits (on the odd bits where `SWAP`), the high byte zero. One or two
    /// spread steps, each a shift, an OR and a mask, and a shift and an OR to join the
    /// bytes.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn code8<const SWAP: bool, const SHORT: bool>(v: __m128i) -> __m128i {
        let set = _mm_set1_epi16;
        let v = if SHORT {
            v
        } else {
            _mm_and_si128(_mm_or_si128(v, _mm_slli_epi16::<2>(v)), set(0x3333))
        };
        let v = _mm_and_si128(_mm_or_si128(v, _mm_slli_epi16::<1>(v)), set(0x5555));
        let c = if SWAP {
            _mm_or_si128(_mm_srli_epi16::<8>(v), _mm_slli_epi16::<1>(v))
        } else {
            _mm_or_si128(v, _mm_srli_epi16::<7>(v))
        };
        _mm_and_si128(c, set(0x00FF))
    }

    /// One-byte codes of the rows of an `(n / 2, 2)` `uint8` array at `r` (coordinates of
    /// at most 4 bits, at most 2 where `short`; first byte of a row on the even bits, on
    /// the odd bits where `swap`) by [`code8`], a row a 16-bit lane: the first
    /// `n / 32 * 32` bytes (16 rows a step) into `n / 2` codes at `out`; the portable
    /// kernel's mirror of [`super::nib2::rows8`]. Returns the bytes done and the OR of
    /// them (a wider coordinate gives a code its caller discards).
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); `r` readable for `n` bytes and `out` writable for `n / 2`.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn rows8(
        r: *const u8,
        n: usize,
        swap: bool,
        short: bool,
        out: *mut u8,
    ) -> (usize, u64) {
        // SAFETY: as the caller guarantees.
        unsafe {
            match (swap, short) {
                (false, false) => rows8_in::<false, false>(r, n, out),
                (false, true) => rows8_in::<false, true>(r, n, out),
                (true, false) => rows8_in::<true, false>(r, n, out),
                (true, true) => rows8_in::<true, true>(r, n, out),
            }
        }
    }

    /// [`rows8`] for one `(swap, short)`.
    ///
    /// # Safety
    /// As [`rows8`].
    #[target_feature(enable = "sse2")]
    unsafe fn rows8_in<const SWAP: bool, const SHORT: bool>(
        r: *const u8,
        n: usize,
        out: *mut u8,
    ) -> (usize, u64) {
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: `i + 32 <= n`: the loads and the store lie within the caller's bounds.
            unsafe {
                let v0 = _mm_loadu_si128(r.add(i).cast());
                let v1 = _mm_loadu_si128(r.add(i + 16).cast());
                acc = _mm_or_si128(acc, _mm_or_si128(v0, v1));
                let c = _mm_packus_epi16(code8::<SWAP, SHORT>(v0), code8::<SWAP, SHORT>(v1));
                _mm_storeu_si128(out.add(i / 2).cast(), c);
            }
            i += 32;
        }
        (i, fold(acc, 1))
    }

    /// The OR of `acc`'s words of `w` bytes (also for [`super::m3e`] and [`super::m3w`]).
    #[target_feature(enable = "sse2")]
    pub(super) fn fold(acc: __m128i, w: usize) -> u64 {
        let mut v = [0u8; 32];
        // SAFETY: `v` has room for 16 bytes.
        unsafe { _mm_storeu_si128(v.as_mut_ptr().cast(), acc) };
        super::nib3::fold(v, w)
    }

    /// Interleaves the first `n / 16 * 16` bytes of `a` (even bits) and `b` (odd bits),
    /// words of `w` bytes, into `2 * w`-byte codes at `out`. Returns the bytes of each
    /// input done and the OR of their words.
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); `a` and `b` readable for `n` bytes, `out` writable for
    /// `2 * n`; `w` is 1, 2 or 4.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn cols(
        a: *const u8,
        b: *const u8,
        n: usize,
        w: usize,
        out: *mut u8,
    ) -> (usize, u64) {
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: `i + 16 <= n`: the loads and stores lie within the caller's bounds.
            unsafe {
                let x = _mm_loadu_si128(a.add(i).cast());
                let y = _mm_loadu_si128(b.add(i).cast());
                acc = _mm_or_si128(acc, _mm_or_si128(x, y));
                _mm_storeu_si128(out.add(2 * i).cast(), shuffle(_mm_unpacklo_epi8(x, y)));
                _mm_storeu_si128(out.add(2 * i + 16).cast(), shuffle(_mm_unpackhi_epi8(x, y)));
            }
            i += 16;
        }
        (i, fold(acc, w))
    }

    /// De-interleaves the first `n / 32 * 32` bytes of `2 * w`-byte codes at `c`: their
    /// even bits to `x`, odd bits to `y`, words of `w` bytes. Returns the code bytes done
    /// and the OR of the codes.
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); `c` readable for `n` bytes; `x` and `y` writable for
    /// `n / 2`; `w` is 1, 2 or 4.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn cols_dec(
        c: *const u8,
        n: usize,
        w: usize,
        x: *mut u8,
        y: *mut u8,
    ) -> (usize, u64) {
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: `i + 32 <= n`: the loads and stores lie within the caller's bounds.
            unsafe {
                let v0 = _mm_loadu_si128(c.add(i).cast());
                let v1 = _mm_loadu_si128(c.add(i + 16).cast());
                acc = _mm_or_si128(acc, _mm_or_si128(v0, v1));
                let ((x0, y0), (x1, y1)) = (split_bits(v0), split_bits(v1));
                // Every lane below 256 as the packs read it (signed): no saturation.
                let (xs, ys) = (_mm_packus_epi16(x0, x1), _mm_packus_epi16(y0, y1));
                _mm_storeu_si128(x.add(i / 2).cast(), xs);
                _mm_storeu_si128(y.add(i / 2).cast(), ys);
            }
            i += 32;
        }
        (i, fold(acc, 2 * w))
    }

    /// Per `2 * w`-byte row of `v`: its first word's bytes in bytes 0-7 (row order), its
    /// second word's in bytes 8-15.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn split(v: __m128i, w: usize) -> __m128i {
        const O: i32 = 0b11_01_10_00; // words 0, 2, 1, 3
        match w {
            // Rows of two bytes: the lanes' low bytes, then their high bytes.
            1 => {
                let low = _mm_set1_epi16(0x00FF);
                _mm_packus_epi16(_mm_and_si128(v, low), _mm_srli_epi16::<8>(v))
            }
            2 => _mm_shuffle_epi32::<O>(_mm_shufflehi_epi16::<O>(_mm_shufflelo_epi16::<O>(v))),
            _ => _mm_shuffle_epi32::<O>(v),
        }
    }

    /// Codes of the `n / 16 * 16 / (2 * w)` leading rows of `w`-byte words at `r`
    /// (row-major pairs), first word on the even bits (odd where `swap`), into `out`.
    /// Returns the bytes done and the OR of their words.
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); `r` readable and `out` writable for `n` bytes; `w` is 1,
    /// 2 or 4.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn rows(
        r: *const u8,
        n: usize,
        w: usize,
        swap: bool,
        out: *mut u8,
    ) -> (usize, u64) {
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: `i + 16 <= n`: the load and store lie within the caller's bounds.
            unsafe {
                let v = _mm_loadu_si128(r.add(i).cast());
                acc = _mm_or_si128(acc, v);
                let f = split(v, w);
                let (a, b) = (f, _mm_srli_si128::<8>(f));
                let (a, b) = if swap { (b, a) } else { (a, b) };
                _mm_storeu_si128(out.add(i).cast(), shuffle(_mm_unpacklo_epi8(a, b)));
            }
            i += 16;
        }
        (i, fold(acc, w))
    }

    /// Rows (row-major pairs of `w`-byte words) of the first `n / 32 * 32` bytes of
    /// `2 * w`-byte codes at `c`: their even bits first (odd where `swap`). Returns the
    /// code bytes done and the OR of the codes.
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); `c` readable and `out` writable for `n` bytes; `w` is 1,
    /// 2 or 4.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn rows_dec(
        c: *const u8,
        n: usize,
        w: usize,
        swap: bool,
        out: *mut u8,
    ) -> (usize, u64) {
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 32 <= n {
            // SAFETY: `i + 32 <= n`: the loads and stores lie within the caller's bounds.
            unsafe {
                let v0 = _mm_loadu_si128(c.add(i).cast());
                let v1 = _mm_loadu_si128(c.add(i + 16).cast());
                acc = _mm_or_si128(acc, _mm_or_si128(v0, v1));
                let ((x0, y0), (x1, y1)) = (split_bits(v0), split_bits(v1));
                let (xs, ys) = (_mm_packus_epi16(x0, x1), _mm_packus_epi16(y0, y1));
                let (a, b) = if swap { (ys, xs) } else { (xs, ys) };
                let (lo, hi) = match w {
                    1 => (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b)),
                    2 => (_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b)),
                    _ => (_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b)),
                };
                _mm_storeu_si128(out.add(i).cast(), lo);
                _mm_storeu_si128(out.add(i + 16).cast(), hi);
            }
            i += 32;
        }
        (i, fold(acc, 2 * w))
    }
}

/// Whether the portable kernel codes 2-D Morton by [`swar2`] (x86-64): coordinates
/// (`U`) half as wide as the code (`O`), `uint8` to `uint32`.
#[cfg(target_arch = "x86_64")]
fn swar2_fits<U: Word, O: Word>(k: Kernel) -> bool {
    k == Kernel::Portable && O::BITS == 2 * U::BITS && U::BITS <= 32
}

/// 2-D Morton codes of one chunk on the portable kernel by [`swar2::cols`] /
/// [`swar2::rows`], the tail on the generic loop; `None` unless [`swar2_fits`]. Returns
/// the OR of the input values.
#[cfg(target_arch = "x86_64")]
fn morton2_swar_encode<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
) -> Option<U> {
    if !swar2_fits::<U, O>(k) {
        return None;
    }
    let n = out.len();
    let w = (U::BITS / 8) as usize;
    let o: *mut u8 = out.as_mut_ptr().cast();
    // SAFETY (both): SSE2 is part of x86-64; the input holds `2 * n` words of `w` bytes
    // and the output `n` codes of `2 * w` bytes (asserted, and `swar2_fits`).
    let (done, acc) = match src {
        Src::Rows(s) => {
            assert!(s.len() >= 2 * n);
            let (b, a) = unsafe { swar2::rows(s.as_ptr().cast(), 2 * n * w, w, msb, o) };
            (b / (2 * w), a)
        }
        Src::Cols([x, y, _]) => {
            assert!(x.len() >= n && y.len() >= n);
            let (a, b) = if msb { (y, x) } else { (x, y) };
            let (b, a) = unsafe { swar2::cols(a.as_ptr().cast(), b.as_ptr().cast(), n * w, w, o) };
            (b / w, a)
        }
    };
    let curve = Curve::Morton { msb };
    Some(encode_tail(k, curve, 2, nbits, src, out, done, acc))
}

/// 2-D Morton coordinates of one chunk of codes on the portable kernel by
/// [`swar2::cols_dec`] / [`swar2::rows_dec`], the tail on the generic loop. Returns the
/// OR of the codes.
///
/// # Panics
/// Unless [`swar2_fits`] for `(O, U)`.
#[cfg(target_arch = "x86_64")]
fn morton2_swar_decode<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    codes: &[U],
    mut dst: Dst<'_, O>,
) -> U {
    assert!(swar2_fits::<O, U>(k));
    let n = codes.len();
    let w = (O::BITS / 8) as usize;
    let c: *const u8 = codes.as_ptr().cast();
    // SAFETY (both): SSE2 is part of x86-64; the codes are `n` words of `2 * w` bytes and
    // the output holds `2 * n` words of `w` bytes (asserted, and `swar2_fits`).
    let (done, acc) = match &mut dst {
        Dst::Rows(o) => {
            assert!(o.len() >= 2 * n);
            let (b, a) = unsafe { swar2::rows_dec(c, 2 * n * w, w, msb, o.as_mut_ptr().cast()) };
            (b / (2 * w), a)
        }
        Dst::Cols([x, y, _]) => {
            assert!(x.len() >= n && y.len() >= n);
            let (x, y) = if msb { (y, x) } else { (x, y) };
            let (xp, yp) = (x.as_mut_ptr().cast(), y.as_mut_ptr().cast());
            let (b, a) = unsafe { swar2::cols_dec(c, 2 * n * w, w, xp, yp) };
            (b / (2 * w), a)
        }
    };
    let curve = Curve::Morton { msb };
    decode_tail(k, curve, 2, nbits, codes, dst, done, acc)
}

/// 2-D Morton codes of one chunk of `uint8` coordinates into `uint8` (at most 4 bits) on
/// the AVX2 or AVX-512 kernel by [`nib2::cols8`] / [`nib2::rows8`] (one table lookup per
/// coordinate byte), of rows on the portable kernel by [`swar2::rows8`], the tail on the
/// generic loop. Returns the OR of the input values.
///
/// # Panics
/// Unless `U` and `O` are 8 bits wide and `k` is AVX2 or AVX-512, or the portable kernel
/// with rows.
#[cfg(target_arch = "x86_64")]
fn morton2_same8<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
) -> U {
    let portable = k == Kernel::Portable && matches!(src, Src::Rows(_));
    assert!(U::BITS == 8 && O::BITS == 8 && (k >= Kernel::Avx2 || portable));
    let n = out.len();
    let o: *mut u8 = out.as_mut_ptr().cast();
    // SAFETY (all): `k` is AVX2 or AVX-512 (asserted), which `kernel()` picks only where
    // the CPU has AVX2 (every AVX-512 CPU has it; `multiversion!` assumes so too), or the
    // portable kernel with rows, whose `swar2::rows8` wants SSE2 alone (part of x86-64);
    // `U` and `O` are one byte wide (asserted), the input holds `2 * n` bytes and the
    // output `n` (asserted).
    let (done, a) = match src {
        Src::Rows(s) => {
            assert!(s.len() >= 2 * n);
            let r = s.as_ptr().cast();
            let (b, a) = if portable {
                unsafe { swar2::rows8(r, 2 * n, msb, nbits <= 2, o) }
            } else {
                unsafe { nib2::rows8(r, 2 * n, msb, o) }
            };
            (b / 2, a)
        }
        Src::Cols([x, y, _]) => {
            assert!(x.len() >= n && y.len() >= n);
            let (x, y) = if msb { (y, x) } else { (x, y) };
            unsafe { nib2::cols8(x.as_ptr().cast(), y.as_ptr().cast(), n, o) }
        }
    };
    let curve = Curve::Morton { msb };
    encode_tail(k, curve, 2, nbits, src, out, done, a)
}

/// 2-D Morton coordinates of one chunk of `uint8` codes into `uint8` on the AVX2 kernel
/// (AVX-512: rows) by [`nib2::dec8`], on the portable one by [`swar2::dec8`], the tail
/// on the generic loop. Returns the OR of the codes.
///
/// # Panics
/// Unless `U` and `O` are 8 bits wide and `k` is AVX2, AVX-512 or the portable kernel.
#[cfg(target_arch = "x86_64")]
fn morton2_dec8<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    codes: &[U],
    mut dst: Dst<'_, O>,
) -> U {
    assert!(U::BITS == 8 && O::BITS == 8 && (k >= Kernel::Avx2 || k == Kernel::Portable));
    let n = codes.len();
    let c: *const u8 = codes.as_ptr().cast();
    let dec8 = if k == Kernel::Portable {
        swar2::dec8
    } else {
        nib2::dec8
    };
    // SAFETY (both): `k` is AVX2 or AVX-512 (asserted), which `kernel()` picks only where
    // the CPU has AVX2 (every AVX-512 CPU has it; `multiversion!` assumes so too), or the
    // portable kernel, whose `swar2::dec8` wants SSE2 alone (part of x86-64); `U` and `O`
    // are one byte wide (asserted), the codes are `n` bytes, the output holds `2 * n`
    // bytes (asserted).
    let (done, a) = match &mut dst {
        Dst::Rows(o) => {
            assert!(o.len() >= 2 * n);
            unsafe { dec8(c, n, msb, o.as_mut_ptr().cast(), std::ptr::null_mut()) }
        }
        Dst::Cols([x, y, _]) => {
            assert!(x.len() >= n && y.len() >= n);
            let (x, y) = if msb { (y, x) } else { (x, y) };
            let (xp, yp) = (x.as_mut_ptr().cast(), y.as_mut_ptr().cast());
            unsafe { dec8(c, n, false, xp, yp) }
        }
    };
    let curve = Curve::Morton { msb };
    decode_tail(k, curve, 2, nbits, codes, dst, done, a)
}

/// Whether [`decode2_avx2`] takes 2-D codes of type `U` into coordinates of type `O` on
/// kernel `k`: AVX2, codes twice as wide as the coordinates.
#[cfg(target_arch = "x86_64")]
fn decode2_fits<U: Word, O: Word>(k: Kernel) -> bool {
    k == Kernel::Avx2 && U::BITS == 2 * O::BITS && O::BITS <= 32
}

/// Inverse of [`h2_halves`].
#[inline(always)]
fn h2_point<O: Word>(e: O, o: O, nbits: u32) -> (O, O) {
    let up = O::BITS - nbits;
    O::h2_unbits(e.shl(up), o.shl(up), nbits, O::BITS)
}

/// 2-D Hilbert coordinates of one chunk on AVX2, codes twice as wide as the coordinates:
/// per block of 256 codes, the even and odd bits split by [`nib2::cols_dec`], then the
/// prefix scan of [`Word::h2_unbits`] in lanes of the coordinates' width. Returns the OR
/// of the codes.
///
/// # Safety
/// The CPU has AVX2 and BMI2; `U::BITS == 2 * O::BITS <= 64`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,bmi2")]
unsafe fn hilbert2_dec_avx2<U: Word, O: Word>(nbits: u32, codes: &[U], dst: &mut Dst<'_, O>) -> U {
    const B: usize = 256;
    let w = (O::BITS / 8) as usize;
    let mut ev = [O::default(); B];
    let mut od = [O::default(); B];
    let mut acc = U::default();
    for (bi, cb) in codes.chunks(B).enumerate() {
        let (r0, m) = (bi * B, cb.len());
        // SAFETY: AVX2; `cb` holds `m` codes of `2 * w` bytes, `ev` and `od` `B >= m`
        // words of `w` bytes.
        let (done, a) = unsafe {
            nib2::cols_dec(
                cb.as_ptr().cast(),
                2 * m * w,
                w,
                ev.as_mut_ptr().cast(),
                od.as_mut_ptr().cast(),
            )
        };
        acc = acc.or(U::from_u64(a));
        for j in done / (2 * w)..m {
            acc = acc.or(cb[j]);
            ev[j] = cast(cb[j].compact1());
            od[j] = cast(cb[j].shr(1).compact1());
        }
        match dst {
            Dst::Rows(out) => {
                for ((r, &e), &o) in out[2 * r0..2 * (r0 + m)]
                    .chunks_exact_mut(2)
                    .zip(&ev[..m])
                    .zip(&od[..m])
                {
                    (r[0], r[1]) = h2_point(e, o, nbits);
                }
            }
            Dst::Cols([x, y, _]) => {
                let it = x[r0..r0 + m].iter_mut().zip(y[r0..r0 + m].iter_mut());
                for (((xo, yo), &e), &o) in it.zip(&ev[..m]).zip(&od[..m]) {
                    (*xo, *yo) = h2_point(e, o, nbits);
                }
            }
        }
    }
    acc
}

/// 2-D coordinates of one chunk of codes on AVX2 where [`decode2_fits`]: Morton by
/// [`nib2`] straight into the output (the tail on the generic loop), Hilbert by
/// [`hilbert2_dec_avx2`]. Returns the OR of the codes.
#[cfg(target_arch = "x86_64")]
fn decode2_avx2<U: Word, O: Word>(
    k: Kernel,
    curve: Curve,
    nbits: u32,
    codes: &[U],
    mut dst: Dst<'_, O>,
) -> U {
    assert!(decode2_fits::<U, O>(k));
    let n = codes.len();
    let w = (O::BITS / 8) as usize;
    let c: *const u8 = codes.as_ptr().cast();
    let msb = match curve {
        // SAFETY: `kernel()` picks AVX2 only where the CPU has it (with BMI2, as for
        // `multiversion!`); `decode2_fits` checked the widths.
        Curve::Hilbert => return unsafe { hilbert2_dec_avx2(nbits, codes, &mut dst) },
        Curve::Morton { msb } => msb,
    };
    // SAFETY (both): AVX2 as above; the codes are `n * 2 * w` bytes, the output holds
    // `2 * n` words of `w` bytes (asserted).
    let (done, a) = match &mut dst {
        Dst::Rows(o) => {
            assert!(o.len() >= 2 * n);
            let (b, a) = unsafe { nib2::rows_dec(c, 2 * n * w, w, msb, o.as_mut_ptr().cast()) };
            (b / (2 * w), a)
        }
        Dst::Cols([x, y, _]) => {
            assert!(x.len() >= n && y.len() >= n);
            let (x, y) = if msb { (y, x) } else { (x, y) };
            let (xp, yp) = (x.as_mut_ptr().cast(), y.as_mut_ptr().cast());
            let (b, a) = unsafe { nib2::cols_dec(c, 2 * n * w, w, xp, yp) };
            (b / (2 * w), a)
        }
    };
    decode_tail(k, curve, 2, nbits, codes, dst, done, a)
}

/// 3-D Morton encoding on AVX2 by 16-entry nibble tables (`vpshufb`): byte `j` of the
/// three coordinates makes code bytes `3j`, `3j + 1`, `3j + 2` (their 24 interleaved
/// bits), each the OR of table lookups at the coordinates' low and high nibbles (12 tables
/// in all), 32 coordinate bytes a step; per-lane byte permutes then place the code bytes
/// in lanes of the code's width. Rows of an `(n, 3)` array are split into the three
/// coordinates by byte permutes first (48 bytes per 128-bit lane).
#[cfg(target_arch = "x86_64")]
mod nib3 {
    use std::arch::x86_64::*;

    /// The 12-bit spread of nibble `v` (its bits on every third bit).
    const fn spread(v: usize) -> usize {
        (v & 1) | (v & 2) << 2 | (v & 4) << 4 | (v & 8) << 6
    }

    /// [`tables`] for `s` = 0, 1, 2, built at compile time.
    const TABLES: [[[u8; 16]; 4]; 3] = [tables(0), tables(1), tables(2)];

    /// The tables of the coordinate shifted by `s`: byte 0 and byte 1 of the triple from
    /// its low nibble, byte 1 and byte 2 from its high nibble.
    const fn tables(s: usize) -> [[u8; 16]; 4] {
        let mut t = [[0u8; 16]; 4];
        let mut v = 0;
        while v < 16 {
            let lo = spread(v) << s;
            let hi = lo << 12;
            t[0][v] = lo as u8;
            t[1][v] = (lo >> 8) as u8;
            t[2][v] = (hi >> 8) as u8;
            t[3][v] = (hi >> 16) as u8;
            v += 1;
        }
        t
    }

    /// The `vpshufb` controls that place, per 128-bit lane, triple byte `s` of coordinate
    /// byte `p * w + j` (the lane's point `p`) at byte `3j + s` of that point's `ob`-byte
    /// code, for the `ob / w` output vectors: `[vector][s]`.
    const fn place(w: usize, ob: usize) -> [[[u8; 32]; 3]; 4] {
        let mut c = [[[0x80u8; 32]; 3]; 4];
        let mut i = 0;
        while i < ob / w {
            let mut b = 0;
            while b < 32 {
                let (p, t) = (i * (16 / ob) + b % 16 / ob, b % ob);
                let (j, s) = (t / 3, t % 3);
                if j < w {
                    c[i][s][b] = (p * w + j) as u8;
                }
                b += 1;
            }
            i += 1;
        }
        c
    }

    /// The `vpshufb` controls that gather, per 128-bit lane of 48 row bytes held as three
    /// 16-byte chunks, coordinate `c`'s words: `[c][chunk]`.
    const fn gather(w: usize) -> [[[u8; 32]; 3]; 3] {
        let mut g = [[[0x80u8; 32]; 3]; 3];
        let mut c = 0;
        while c < 3 {
            let mut b = 0;
            while b < 32 {
                let (q, j) = (b % 16 / w, b % w);
                let off = 3 * w * q + c * w + j;
                g[c][off / 16][b] = (off % 16) as u8;
                b += 1;
            }
            c += 1;
        }
        g
    }

    #[inline(always)]
    pub(super) unsafe fn bcast(t: &[u8; 16]) -> __m256i {
        // SAFETY (callers): AVX2.
        unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr().cast())) }
    }

    /// The low bytes and the high bytes of the 32 `uint16` codes at `p`, each in code
    /// order, and the OR of the codes as two 16-bit halves.
    ///
    /// # Safety
    /// AVX2; 64 bytes readable at `p`.
    #[inline(always)]
    pub(super) unsafe fn bytes16(p: *const u8) -> (__m256i, __m256i, __m256i) {
        // SAFETY: as the caller guarantees.
        unsafe {
            let m = _mm256_set1_epi16(0x00FF);
            let v0 = _mm256_loadu_si256(p.cast());
            let v1 = _mm256_loadu_si256(p.add(32).cast());
            // The packs interleave 64-bit quarters: (0, 2, 1, 3) restores the order.
            let lo = _mm256_packus_epi16(_mm256_and_si256(v0, m), _mm256_and_si256(v1, m));
            let hi = _mm256_packus_epi16(_mm256_srli_epi16(v0, 8), _mm256_srli_epi16(v1, 8));
            (
                _mm256_permute4x64_epi64(lo, 0xD8),
                _mm256_permute4x64_epi64(hi, 0xD8),
                _mm256_or_si256(v0, v1),
            )
        }
    }

    /// Stores the three coordinate vectors `v` (32 bytes each, lane 0 the first half of
    /// the points) at byte `at` of three columns at `dst`, or at byte `3 * at` of the rows
    /// at `dst[0]` where `ROWS`, through the [`scatter`] controls `sca` of their width.
    ///
    /// # Safety
    /// AVX2; each column writable for `at + 32` bytes (rows: `3 * (at + 32)`).
    #[inline(always)]
    pub(super) unsafe fn store3<const ROWS: bool>(
        v: &[__m256i; 3],
        sca: &[[__m256i; 3]; 3],
        dst: [*mut u8; 3],
        at: usize,
    ) {
        // SAFETY: as the caller guarantees.
        unsafe {
            if ROWS {
                let o = dst[0].add(3 * at);
                for (k, sk) in sca.iter().enumerate() {
                    let ch = _mm256_or_si256(
                        _mm256_or_si256(
                            _mm256_shuffle_epi8(v[0], sk[0]),
                            _mm256_shuffle_epi8(v[1], sk[1]),
                        ),
                        _mm256_shuffle_epi8(v[2], sk[2]),
                    );
                    _mm256_storeu2_m128i(o.add(48 + 16 * k).cast(), o.add(16 * k).cast(), ch);
                }
            } else {
                for c in 0..3 {
                    _mm256_storeu_si256(dst[c].add(at).cast(), v[c]);
                }
            }
        }
    }

    /// The OR of the `w`-byte little-endian words of `v` (`w` = 1, 2, 4 or 8): the OR of
    /// its four 8-byte words, folded down to `w` bytes.
    pub(super) fn fold(v: [u8; 32], w: usize) -> u64 {
        debug_assert!(w.is_power_of_two() && w <= 8);
        let mut x = v
            .chunks_exact(8)
            .fold(0, |a, c| a | u64::from_le_bytes(c.try_into().unwrap()));
        let mut s = 32;
        while s >= 8 * w {
            x |= x >> s;
            s /= 2;
        }
        if w < 8 {
            x & ((1 << (8 * w)) - 1)
        } else {
            x
        }
    }

    /// Codes (`OB` bytes) of the leading `n / (32 / W) * (32 / W)` points of `W`-byte
    /// coordinates: three columns at `src`, or rows at `src[0]` where `ROWS`; coordinate
    /// `i` shifted left by `sh[i]`. Returns the points done and the OR of their
    /// coordinates.
    ///
    /// # Safety
    /// AVX2; `(W, OB)` one of (1, 2), (1, 4), (2, 4), (2, 8), (4, 8); each column readable
    /// for `n * W` bytes (rows: `3 * n * W`), `out` writable for `n * OB`; `sh` a
    /// permutation of `[0, 1, 2]`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn encode<const W: usize, const OB: usize, const ROWS: bool>(
        src: [*const u8; 3],
        n: usize,
        out: *mut u8,
        sh: [u32; 3],
    ) -> (usize, u64) {
        const { assert!(OB / W == 2 || OB / W == 4) };
        let pl = const { place(W, OB) };
        let ga = const { gather(W) };
        let step = 32 / W;
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let t: [[__m256i; 4]; 3] = sh.map(|s| TABLES[s as usize].map(|t| bcast(&t)));
            let low = _mm256_set1_epi8(0x0F);
            let ld = |a: &[[u8; 32]; 3]| a.map(|c| _mm256_loadu_si256(c.as_ptr().cast()));
            let place: [[__m256i; 3]; 4] = pl.map(|v| ld(&v));
            let gath: [[__m256i; 3]; 3] = ga.map(|v| ld(&v));
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + step <= n {
                let v: [__m256i; 3] = if ROWS {
                    // Lane 0: row bytes 0-47, lane 1: 48-95, as three 16-byte chunks.
                    let r = src[0].add(3 * W * i);
                    let chunk = |k: usize| {
                        _mm256_loadu2_m128i(r.add(48 + 16 * k).cast(), r.add(16 * k).cast())
                    };
                    let ch = [chunk(0), chunk(1), chunk(2)];
                    gath.map(|g| {
                        _mm256_or_si256(
                            _mm256_or_si256(
                                _mm256_shuffle_epi8(ch[0], g[0]),
                                _mm256_shuffle_epi8(ch[1], g[1]),
                            ),
                            _mm256_shuffle_epi8(ch[2], g[2]),
                        )
                    })
                } else {
                    src.map(|p| _mm256_loadu_si256(p.add(W * i).cast()))
                };
                acc = _mm256_or_si256(acc, _mm256_or_si256(v[0], _mm256_or_si256(v[1], v[2])));
                let mut b = [_mm256_setzero_si256(); 3];
                for c in 0..3 {
                    let lo = _mm256_and_si256(v[c], low);
                    let hi = _mm256_and_si256(_mm256_srli_epi16(v[c], 4), low);
                    let tc = &t[c];
                    b[0] = _mm256_or_si256(b[0], _mm256_shuffle_epi8(tc[0], lo));
                    b[1] = _mm256_or_si256(
                        b[1],
                        _mm256_or_si256(
                            _mm256_shuffle_epi8(tc[1], lo),
                            _mm256_shuffle_epi8(tc[2], hi),
                        ),
                    );
                    b[2] = _mm256_or_si256(b[2], _mm256_shuffle_epi8(tc[3], hi));
                }
                let mut a = [_mm256_setzero_si256(); 4];
                for (k, a) in a.iter_mut().enumerate().take(OB / W) {
                    *a = _mm256_or_si256(
                        _mm256_or_si256(
                            _mm256_shuffle_epi8(b[0], place[k][0]),
                            _mm256_shuffle_epi8(b[1], place[k][1]),
                        ),
                        _mm256_shuffle_epi8(b[2], place[k][2]),
                    );
                }
                // Lane 0 of the vectors holds the first half of the points, in order.
                let o = out.add(OB * i);
                let r = OB / W;
                for k in 0..r / 2 {
                    let (p, q) = (a[2 * k], a[2 * k + 1]);
                    _mm256_storeu_si256(
                        o.add(32 * k).cast(),
                        _mm256_permute2x128_si256(p, q, 0x20),
                    );
                    _mm256_storeu_si256(
                        o.add(32 * (k + r / 2)).cast(),
                        _mm256_permute2x128_si256(p, q, 0x31),
                    );
                }
                i += step;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, W))
        }
    }

    /// [`untables`] for `s` = 0, 1, 2, built at compile time (a `const fn` called with a
    /// run-time argument runs at run time: about 1,000 loop steps a call).
    const UNTABLES: [[[u8; 16]; 6]; 3] = [untables(0), untables(1), untables(2)];

    /// Per nibble `k` (bits `4k..4k + 4`) of a code byte triple, the bits of the
    /// coordinate shifted by `s` that it holds, at their places in the coordinate byte.
    const fn untables(s: usize) -> [[u8; 16]; 6] {
        let mut t = [[0u8; 16]; 6];
        let mut k = 0;
        while k < 6 {
            let mut v = 0;
            while v < 16 {
                let mut b = 0;
                while b < 4 {
                    let q = 4 * k + b;
                    if (v >> b) & 1 == 1 && q % 3 == s {
                        t[k][v] |= 1 << ((q - s) / 3);
                    }
                    b += 1;
                }
                v += 1;
            }
            k += 1;
        }
        t
    }

    /// The `vpshufb` controls that gather, per 128-bit lane, byte `s` of the code byte
    /// triple of coordinate byte `j` of the lane's point `p` (at `p * w + j`) from the
    /// lane's `cb / w` 16-byte chunks of `cb`-byte codes: `[chunk][s]`.
    const fn triples(cb: usize, w: usize) -> [[[u8; 32]; 3]; 4] {
        let mut c = [[[0x80u8; 32]; 3]; 4];
        let mut s = 0;
        while s < 3 {
            let mut b = 0;
            while b < 32 {
                let (p, j) = (b % 16 / w, b % w);
                let t = 3 * j + s;
                if t < cb {
                    let off = p * cb + t;
                    c[off / 16][s][b] = (off % 16) as u8;
                }
                b += 1;
            }
            s += 1;
        }
        c
    }

    /// The `vpshufb` controls that place, per 128-bit lane, coordinate `c`'s words into
    /// three 16-byte chunks of rows of `3 * w` bytes: `[chunk][c]` (inverse of
    /// [`gather`]).
    pub(super) const fn scatter(w: usize) -> [[[u8; 32]; 3]; 3] {
        let mut g = [[[0x80u8; 32]; 3]; 3];
        let mut c = 0;
        while c < 3 {
            let mut b = 0;
            while b < 32 {
                let (q, j) = (b % 16 / w, b % w);
                let off = 3 * w * q + c * w + j;
                g[off / 16][c][off % 16 + b / 16 * 16] = (b % 16) as u8;
                b += 1;
            }
            c += 1;
        }
        g
    }

    /// Inverse of [`encode`]: the coordinates (`W` bytes) of the leading
    /// `n / (32 / W) * (32 / W)` codes of `CB` bytes at `codes`, into three columns at
    /// `dst`, or rows at `dst[0]` where `ROWS`; coordinate `i` from the code bits at
    /// `3k + sh[i]`. Returns the codes done and the OR of them.
    ///
    /// # Safety
    /// AVX2; `(CB, W)` one of (2, 1), (4, 1), (4, 2), (8, 2), (8, 4); `codes` readable for
    /// `n * CB` bytes, each column writable for `n * W` (rows: `3 * n * W`); `sh` a
    /// permutation of `[0, 1, 2]`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn decode<const CB: usize, const W: usize, const ROWS: bool>(
        codes: *const u8,
        n: usize,
        dst: [*mut u8; 3],
        sh: [u32; 3],
    ) -> (usize, u64) {
        const { assert!(CB / W == 2 || CB / W == 4) };
        let tr = const { triples(CB, W) };
        let sc = const { scatter(W) };
        let step = 32 / W;
        let r = CB / W;
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let t: [[__m256i; 6]; 3] = sh.map(|s| UNTABLES[s as usize].map(|t| bcast(&t)));
            let low = _mm256_set1_epi8(0x0F);
            let ld = |a: &[[u8; 32]; 3]| a.map(|c| _mm256_loadu_si256(c.as_ptr().cast()));
            let tri: [[__m256i; 3]; 4] = tr.map(|v| ld(&v));
            let sca: [[__m256i; 3]; 3] = sc.map(|v| ld(&v));
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + step <= n {
                // Lane 0: the codes of the first half of the points, lane 1 the rest.
                let c0 = codes.add(CB * i);
                let mut b = [_mm256_setzero_si256(); 3];
                for (k, tk) in tri.iter().enumerate().take(r) {
                    let v = _mm256_loadu2_m128i(c0.add(16 * (r + k)).cast(), c0.add(16 * k).cast());
                    acc = _mm256_or_si256(acc, v);
                    for s in 0..3 {
                        b[s] = _mm256_or_si256(b[s], _mm256_shuffle_epi8(v, tk[s]));
                    }
                }
                let nib = b.map(|v| {
                    [
                        _mm256_and_si256(v, low),
                        _mm256_and_si256(_mm256_srli_epi16(v, 4), low),
                    ]
                });
                let v: [__m256i; 3] = [0, 1, 2].map(|c| {
                    let tc = &t[c];
                    let mut x = _mm256_setzero_si256();
                    for k in 0..6 {
                        x = _mm256_or_si256(x, _mm256_shuffle_epi8(tc[k], nib[k / 2][k % 2]));
                    }
                    x
                });
                store3::<ROWS>(&v, &sca, dst, W * i);
                i += step;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, CB))
        }
    }

    /// [`decode`] of `uint16` codes into `uint8` coordinates, 32 codes a step: the codes'
    /// low and high bytes packed into one vector each, then per coordinate one table
    /// lookup ([`untables`]) per code nibble: the low `NIB` nibbles (3 where the codes
    /// have at most 9 bits: the fourth is then zero in every valid code, and a code with
    /// more bits, whose coordinates are then discarded, is caught by the returned OR).
    /// About half the steps of `decode::<2, 1, _>`, which gathers byte triples first.
    ///
    /// # Safety
    /// As for `decode::<2, 1, ROWS>`; `NIB` is 3 or 4, and 3 only for codes of at most
    /// 9 bits.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn decode16<const NIB: usize, const ROWS: bool>(
        codes: *const u8,
        n: usize,
        dst: [*mut u8; 3],
        sh: [u32; 3],
    ) -> (usize, u64) {
        const { assert!(NIB == 3 || NIB == 4) };
        let sc = const { scatter(1) };
        // SAFETY: AVX2; every load and store lies within the bounds the caller gives.
        unsafe {
            let t: [[__m256i; 6]; 3] = sh.map(|s| UNTABLES[s as usize].map(|t| bcast(&t)));
            let low = _mm256_set1_epi8(0x0F);
            let ld = |a: &[[u8; 32]; 3]| a.map(|c| _mm256_loadu_si256(c.as_ptr().cast()));
            let sca: [[__m256i; 3]; 3] = sc.map(|v| ld(&v));
            let mut acc = _mm256_setzero_si256();
            let mut i = 0;
            while i + 32 <= n {
                let (lo, hi, or) = bytes16(codes.add(2 * i));
                acc = _mm256_or_si256(acc, or);
                let nib = [
                    _mm256_and_si256(lo, low),
                    _mm256_and_si256(_mm256_srli_epi16(lo, 4), low),
                    _mm256_and_si256(hi, low),
                    _mm256_and_si256(_mm256_srli_epi16(hi, 4), low),
                ];
                let v: [__m256i; 3] = [0, 1, 2].map(|c| {
                    let tc = &t[c];
                    let mut x = _mm256_shuffle_epi8(tc[0], nib[0]);
                    for k in 1..NIB {
                        // Nibble 2 of a code of at most 9 bits is bit 8, a field-2 bit.
                        if NIB == 4 || k < 2 || sh[c] == 2 {
                            x = _mm256_or_si256(x, _mm256_shuffle_epi8(tc[k], nib[k]));
                        }
                    }
                    x
                });
                store3::<ROWS>(&v, &sca, dst, i);
                i += 32;
            }
            let mut v = [0u8; 32];
            _mm256_storeu_si256(v.as_mut_ptr().cast(), acc);
            (i, fold(v, 2))
        }
    }
}

/// Whether [`nib3::encode`] takes coordinates of type `U` into codes of type `O`.
#[cfg(target_arch = "x86_64")]
fn nib3_encodes<U: Word, O: Word>() -> bool {
    matches!(
        (U::BITS, O::BITS),
        (8, 16) | (8, 32) | (16, 32) | (16, 64) | (32, 64)
    )
}

/// The 3-D Morton codes of the leading of `n` points (columns `ptrs`, or rows at
/// `ptrs[0]` where `rows`) by [`nib3::encode`] into `o`, coordinate `i` on the bits at
/// `3 * j + sh[i]`. Returns the points done and the OR of their coordinates.
///
/// # Safety
/// AVX2; [`nib3_encodes`] for `(U, O)`; each column readable for `n` values of `U` (rows:
/// `3 * n` at `ptrs[0]`), `o` writable for `n` values of `O`.
#[cfg(target_arch = "x86_64")]
unsafe fn nib3_encode_prefix<U: Word, O: Word>(
    ptrs: [*const u8; 3],
    rows: bool,
    n: usize,
    o: *mut u8,
    sh: [u32; 3],
) -> (usize, u64) {
    // SAFETY: as the caller guarantees.
    unsafe {
        match (U::BITS, O::BITS, rows) {
            (8, 16, true) => nib3::encode::<1, 2, true>(ptrs, n, o, sh),
            (8, 16, false) => nib3::encode::<1, 2, false>(ptrs, n, o, sh),
            (8, _, true) => nib3::encode::<1, 4, true>(ptrs, n, o, sh),
            (8, _, false) => nib3::encode::<1, 4, false>(ptrs, n, o, sh),
            (16, 32, true) => nib3::encode::<2, 4, true>(ptrs, n, o, sh),
            (16, 32, false) => nib3::encode::<2, 4, false>(ptrs, n, o, sh),
            (16, _, true) => nib3::encode::<2, 8, true>(ptrs, n, o, sh),
            (16, _, false) => nib3::encode::<2, 8, false>(ptrs, n, o, sh),
            (_, _, true) => nib3::encode::<4, 8, true>(ptrs, n, o, sh),
            (_, _, false) => nib3::encode::<4, 8, false>(ptrs, n, o, sh),
        }
    }
}

/// 3-D Morton codes of one chunk by [`nib3::encode`] on the AVX2 kernel, the tail on the
/// generic loop: `uint8` coordinates into `uint16`/`uint32`, `uint16` into
/// `uint32`/`uint64`, `uint32` into `uint64`. `None` for other kernels and widths.
/// Returns the OR of the input values.
#[cfg(target_arch = "x86_64")]
fn morton3_avx2_encode<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
) -> Option<U> {
    if k != Kernel::Avx2 || !nib3_encodes::<U, O>() {
        return None;
    }
    let sh = if msb { [2, 1, 0] } else { [0, 1, 2] };
    let n = out.len();
    let (ptrs, rows) = match src {
        Src::Rows(s) => {
            assert!(s.len() >= 3 * n);
            ([s.as_ptr() as *const u8; 3], true)
        }
        Src::Cols(c) => {
            assert!(c.iter().all(|c| c.len() >= n));
            (c.map(|c| c.as_ptr() as *const u8), false)
        }
    };
    let o: *mut u8 = out.as_mut_ptr().cast();
    // SAFETY: `kernel()` picks AVX2 only where the CPU has it; the widths are one of the
    // kernel's pairs (checked above); lengths asserted above.
    let (done, a) = unsafe { nib3_encode_prefix::<U, O>(ptrs, rows, n, o, sh) };
    let curve = Curve::Morton { msb };
    Some(encode_tail(k, curve, 3, nbits, src, out, done, a))
}

/// Whether [`morton3_simd_decode`] takes 3-D Morton codes of type `U` (`nbits` bits) into
/// coordinates of type `O` on kernel `k`: AVX2's pairs, and on the portable kernel
/// [`m3w::cols`]'s (separate arrays only).
#[cfg(target_arch = "x86_64")]
fn morton3_simd_decodes<U: Word, O: Word>(k: Kernel, nbits: u32, rows: bool) -> bool {
    match (k, U::BITS, O::BITS) {
        (Kernel::Avx2, b, o) => {
            matches!((b, o), (16, 8) | (32, 8) | (32, 16) | (64, 16) | (64, 32))
        }
        (Kernel::Portable, 32, 8) => !rows && (6..=8).contains(&nbits),
        (Kernel::Portable, 32, 16) => !rows && (9..=10).contains(&nbits),
        _ => false,
    }
}

/// The leading 3-D Morton codes of `codes` de-interleaved by [`nib3::decode`] (or
/// [`nib3::decode16`]) into `ptrs` (rows at `ptrs[0]` where `rows`), coordinate `i` from
/// the bits at `3 * j + sh[i]`. Returns the codes done and the OR of them.
///
/// # Safety
/// AVX2; `(U, O)` one of the AVX2 pairs of [`morton3_simd_decodes`]; each pointer writable for
/// `codes.len()` values of `O` (rows: `3 * codes.len()` at `ptrs[0]`).
#[cfg(target_arch = "x86_64")]
unsafe fn nib3_decode_prefix<U: Word, O: Word>(
    codes: &[U],
    nbits: u32,
    ptrs: [*mut u8; 3],
    rows: bool,
    sh: [u32; 3],
) -> (usize, u64) {
    let (cp, n): (*const u8, usize) = (codes.as_ptr().cast(), codes.len());
    // SAFETY: as the caller guarantees.
    unsafe {
        match (U::BITS, O::BITS, rows) {
            (16, _, true) if nbits <= 3 => nib3::decode16::<3, true>(cp, n, ptrs, sh),
            (16, _, false) if nbits <= 3 => nib3::decode16::<3, false>(cp, n, ptrs, sh),
            (16, _, true) => nib3::decode16::<4, true>(cp, n, ptrs, sh),
            (16, _, false) => nib3::decode16::<4, false>(cp, n, ptrs, sh),
            (32, 8, true) => nib3::decode::<4, 1, true>(cp, n, ptrs, sh),
            (32, 8, false) => nib3::decode::<4, 1, false>(cp, n, ptrs, sh),
            (32, _, true) => nib3::decode::<4, 2, true>(cp, n, ptrs, sh),
            (32, _, false) => nib3::decode::<4, 2, false>(cp, n, ptrs, sh),
            (_, 16, true) => nib3::decode::<8, 2, true>(cp, n, ptrs, sh),
            (_, 16, false) => nib3::decode::<8, 2, false>(cp, n, ptrs, sh),
            (_, _, true) => nib3::decode::<8, 4, true>(cp, n, ptrs, sh),
            (_, _, false) => nib3::decode::<8, 4, false>(cp, n, ptrs, sh),
        }
    }
}

/// Coordinates of one chunk of 3-D Morton codes by [`nib3::decode`] on the AVX2 kernel
/// or [`m3w::cols`] on the portable one, the tail on the generic loop, where
/// [`morton3_simd_decodes`]. Returns the OR of the codes.
#[cfg(target_arch = "x86_64")]
fn morton3_simd_decode<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    codes: &[U],
    dst: Dst<'_, O>,
) -> U {
    let sh = if msb { [2, 1, 0] } else { [0, 1, 2] };
    let mut dst = dst;
    let (ptrs, rows) = dst.ptrs3(codes.len());
    assert!(morton3_simd_decodes::<U, O>(k, nbits, rows));
    let (done, a) = if k == Kernel::Avx2 {
        // SAFETY: `kernel()` picks AVX2 only where the CPU has it; the widths are one of
        // the kernel's pairs (checked above); lengths asserted by `ptrs3`.
        unsafe { nib3_decode_prefix::<U, O>(codes, nbits, ptrs, rows, sh) }
    } else {
        let (cp, n): (*const u8, usize) = (codes.as_ptr().cast(), codes.len());
        // SAFETY: SSE2 is part of x86-64; the codes are `uint32` and the coordinates
        // `uint8` (nbits 6-8, `NB = 4`) or `uint16` (9-10, `NB = 5`), separate arrays
        // (checked above); `ptrs3` asserted the arrays' lengths.
        unsafe {
            match O::BITS {
                8 => m3w::cols::<4>(cp, n, ptrs, sh),
                _ => m3w::cols::<5>(cp, n, ptrs, sh),
            }
        }
    };
    let curve = Curve::Morton { msb };
    decode_tail(k, curve, 3, nbits, codes, dst, done, a)
}

/// 3-D Morton encoding for the portable kernel on x86-64, in SSE2 (which every x86-64 CPU
/// has), of `uint8` coordinates of at most 5 bits: into `uint16` codes, or into `uint8`
/// codes where the coordinates have at most 2 bits. The spread steps run on the
/// coordinate bytes while they fit there, two bytes a 16-bit multiply, and only the last
/// in 16-bit lanes; the generic loop widened first and ran all three in 16-bit lanes.
/// Rows are de-interleaved by byte unpacks first ([`rows`]). ordcore / hilbertsfc, both
/// held to SSE2, separate arrays, two alternating runs: nbits 1 1.08-1.24x -> 0.78-0.83x,
/// 2 0.72x -> 0.50x, 3-4 1.00-1.05x -> 0.68-0.70x, 5 1.09-1.12x -> 0.62-0.63x; `(N, 3)`
/// rows 0.87-1.36 -> 0.26-0.44 ns a point.
#[cfg(target_arch = "x86_64")]
mod m3e {
    use std::arch::x86_64::*;

    /// Per byte of `x` (a value of at most 2 bits): its bits at `3 j + S`, by `x * 5`
    /// (`x + 4 x`, whose bits never meet) shifted by `S`; below 64 for such a value, so
    /// a 16-bit multiply carries nothing across bytes.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn spread2<const S: u32>(x: __m128i) -> __m128i {
        let m = _mm_set1_epi16(5 << S);
        _mm_and_si128(_mm_mullo_epi16(x, m), _mm_set1_epi8(0x09 << S))
    }

    /// Per byte of `x` (a value of at most 5 bits, bit 4 used where `B5`): its bits at
    /// `3 j + S` in a 16-bit lane, bytes 0-7 in the first vector, 8-15 in the second.
    /// Bits 2-3 move to 6-7 within the byte (`x + 16 x` on the low nibble, two bytes a
    /// multiply), bit 4 goes to the lane's bit 12 as the high byte of the unpack, and one
    /// 16-bit multiply by `5 << S` (`v + 4 v`) moves bits 1 and 7 to 3 and 9 and shifts
    /// the lot by `S`. No step's shifted copy meets its source, so no product carries.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn spread5<const S: u32, const B5: bool>(x: __m128i) -> (__m128i, __m128i) {
        let set = _mm_set1_epi16;
        let lo = _mm_and_si128(x, set(0x0F0F));
        let lo = _mm_and_si128(_mm_mullo_epi16(lo, set(17)), set(0xC3C3u16 as i16));
        let hi = if B5 {
            _mm_and_si128(x, set(0x1010))
        } else {
            _mm_setzero_si128()
        };
        let (a, b) = (_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi));
        let (m, k) = (set(5 << S), set(0x1249 << S));
        let a = _mm_and_si128(_mm_mullo_epi16(a, m), k);
        let b = _mm_and_si128(_mm_mullo_epi16(b, m), k);
        (a, b)
    }

    /// Stores at `out` the codes of 16 points whose coordinates are the bytes of `a` (on
    /// the bits at `3 j + 2`), `b` (`3 j + 1`) and `c` (`3 j`): `uint16` codes, or `uint8`
    /// unless `WIDE` (coordinates of at most 2 bits).
    ///
    /// # Safety
    /// SSE2; `out` writable for 16 codes.
    #[inline]
    #[target_feature(enable = "sse2")]
    unsafe fn put<const WIDE: bool, const B5: bool>(
        a: __m128i,
        b: __m128i,
        c: __m128i,
        out: *mut u8,
    ) {
        // SAFETY: as the caller guarantees.
        unsafe {
            if WIDE {
                let (a0, a1) = spread5::<2, B5>(a);
                let (b0, b1) = spread5::<1, B5>(b);
                let (c0, c1) = spread5::<0, B5>(c);
                let lo = _mm_or_si128(_mm_or_si128(a0, b0), c0);
                let hi = _mm_or_si128(_mm_or_si128(a1, b1), c1);
                _mm_storeu_si128(out.cast(), lo);
                _mm_storeu_si128(out.add(16).cast(), hi);
            } else {
                let ab = _mm_or_si128(spread2::<2>(a), spread2::<1>(b));
                _mm_storeu_si128(out.cast(), _mm_or_si128(ab, spread2::<0>(c)));
            }
        }
    }

    /// Codes of the first `n / 16 * 16` points of columns `p` (`uint8`): `p[0]` on the bits
    /// at `3 j + 2`, `p[1]` at `3 j + 1`, `p[2]` at `3 j`, into codes at `out` as [`put`]
    /// writes them. Returns the points done and the OR of their coordinates. A coordinate
    /// of more bits (of more than 4 unless `B5`) gives a meaningless code its caller
    /// discards (the range check).
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); each of `p` readable for `n` bytes, `out` writable for
    /// `n` codes.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn cols<const WIDE: bool, const B5: bool>(
        p: [*const u8; 3],
        n: usize,
        out: *mut u8,
    ) -> (usize, u64) {
        let w = if WIDE { 2 } else { 1 };
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: `i + 16 <= n`: the loads and stores lie within the caller's bounds.
            unsafe {
                let [a, b, c] = p.map(|p| _mm_loadu_si128(p.add(i).cast()));
                acc = _mm_or_si128(acc, _mm_or_si128(_mm_or_si128(a, b), c));
                put::<WIDE, B5>(a, b, c, out.add(w * i));
            }
            i += 16;
        }
        (i, super::swar2::fold(acc, 1))
    }

    /// [`cols`] on the rows of an `(n, 3)` `uint8` array at `r` (first byte of a row on the
    /// bits at `3 j + 2`, at `3 j` where `swap`), 16 rows a step. Four rounds of byte
    /// unpacks take the 48 bytes of 16 rows, as vectors `(A, B, C)`, to `(A.lo | B.hi,
    /// A.hi | C.lo, B.lo | C.hi)` (`|` interleaving the bytes of two 8-byte halves), which
    /// leaves byte `3 i + j` in lane `i` of vector `j`. Returns the rows done and the OR
    /// of their coordinates.
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); `r` readable for `3 * n` bytes, `out` writable for `n`
    /// codes.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn rows<const WIDE: bool, const B5: bool>(
        r: *const u8,
        n: usize,
        swap: bool,
        out: *mut u8,
    ) -> (usize, u64) {
        let w = if WIDE { 2 } else { 1 };
        let high = |x: __m128i| _mm_unpackhi_epi64(x, x);
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: `i + 16 <= n`: the loads and stores lie within the caller's bounds.
            unsafe {
                let mut v = [0, 16, 32].map(|o| _mm_loadu_si128(r.add(3 * i + o).cast()));
                acc = _mm_or_si128(acc, _mm_or_si128(_mm_or_si128(v[0], v[1]), v[2]));
                for _ in 0..4 {
                    v = [
                        _mm_unpacklo_epi8(v[0], high(v[1])),
                        _mm_unpacklo_epi8(high(v[0]), v[2]),
                        _mm_unpacklo_epi8(v[1], high(v[2])),
                    ];
                }
                let [a, b, c] = if swap { [v[2], v[1], v[0]] } else { v };
                put::<WIDE, B5>(a, b, c, out.add(w * i));
            }
            i += 16;
        }
        (i, super::swar2::fold(acc, 1))
    }
}

/// 3-D Morton codes of one chunk of `uint8` coordinates (at most 5 bits, separate arrays)
/// into `uint16` (`uint8`: at most 2 bits) on the portable kernel by [`m3e::cols`] /
/// [`m3e::rows`], the tail on the generic loop. `None` for other kernels, types and
/// widths. Returns the OR of the input values.
#[cfg(target_arch = "x86_64")]
fn morton3_swar_encode<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
) -> Option<U> {
    let fits = match O::BITS {
        8 => nbits <= 2,
        16 => nbits <= 5,
        _ => false,
    };
    if k != Kernel::Portable || U::BITS != 8 || !fits {
        return None;
    }
    let n = out.len();
    let o: *mut u8 = out.as_mut_ptr().cast();
    // SAFETY (all): SSE2 is part of x86-64; the input holds `n` points of one-byte
    // coordinates (`U` is one byte wide; asserted) and the output `n` codes of `O`
    // (checked above).
    let (done, a) = match src {
        Src::Rows(s) => {
            assert!(s.len() >= 3 * n);
            let (r, swap) = (s.as_ptr().cast(), !msb);
            unsafe {
                match (O::BITS, nbits > 4) {
                    (8, _) => m3e::rows::<false, false>(r, n, swap, o),
                    (_, true) => m3e::rows::<true, true>(r, n, swap, o),
                    _ => m3e::rows::<true, false>(r, n, swap, o),
                }
            }
        }
        Src::Cols(c) => {
            assert!(c.iter().all(|c| c.len() >= n));
            let p = c.map(|c| c.as_ptr() as *const u8);
            let p = if msb { p } else { [p[2], p[1], p[0]] };
            unsafe {
                match (O::BITS, nbits > 4) {
                    (8, _) => m3e::cols::<false, false>(p, n, o),
                    (_, true) => m3e::cols::<true, true>(p, n, o),
                    _ => m3e::cols::<true, false>(p, n, o),
                }
            }
        }
    };
    Some(encode_tail(
        k,
        Curve::Morton { msb },
        3,
        nbits,
        src,
        out,
        done,
        a,
    ))
}

/// 3-D Morton decoding for the portable kernel on x86-64, in SSE2 (which every x86-64 CPU
/// has), of `uint32` codes into separate arrays: nbits 6-8 into `uint8` (`NB = 4`), 9-10
/// into `uint16` (`NB = 5`). A code's low and high `3 * NB` bits are windows that hold
/// `NB` bits of each coordinate at the same places (`3 j + s`); the windows of 8 codes
/// are packed into 16-bit lanes (`packssdw`), where [`M3DM`]'s multiplies gather each
/// coordinate's bits, 8 codes an instruction, and a shift and an OR join the two halves.
/// In `uint32` lanes, 4 codes an instruction, LLVM's code for [`M3D`]'s shift steps took
/// about twice the instructions: nbits 6-8 1.00-1.08x -> 0.64-0.81x hilbertsfc's time
/// (1.38-1.45 -> 0.86-1.16 ns a point), and against [`M3DL`]'s byte lookups nbits 9-10
/// 0.92-0.95x -> 0.57-0.60x (three alternating runs, both libraries held to SSE2). Rows
/// keep the generic loop (a 3-way byte interleave has no SSE2 instruction).
#[cfg(target_arch = "x86_64")]
mod m3w {
    use std::arch::x86_64::*;

    /// Per 16-bit lane of `w` (`3 * NB` code bits): the `NB` bits at `3 j + s`, gathered
    /// as [`super::M3DM`] does.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn gather<const NB: u32>(w: __m128i, k: &[__m128i; 4]) -> __m128i {
        let lo = _mm_srli_epi16::<13>(_mm_mullo_epi16(_mm_and_si128(w, k[0]), k[1]));
        let hi = _mm_mulhi_epu16(_mm_and_si128(w, k[2]), k[3]);
        if NB == 4 {
            _mm_or_si128(lo, hi)
        } else {
            _mm_or_si128(lo, _mm_and_si128(hi, _mm_set1_epi16(24)))
        }
    }

    /// De-interleaves the first `n / 16 * 16` codes at `c` (`uint32`, at most `6 * NB`
    /// bits): coordinate `i` from the bits at `3 j + sh[i]`, into `ptrs[i]` (`uint8` where
    /// `NB` is 4, `uint16` where 5). Returns the codes done and the OR of them. A code of
    /// more bits gives meaningless coordinates its caller discards (the range check).
    ///
    /// # Safety
    /// SSE2 (every x86-64 CPU); `c` readable for `n` codes, each of `ptrs` writable for
    /// `n` values; `NB` is 4 or 5; each `sh[i]` at most 2.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn cols<const NB: u32>(
        c: *const u8,
        n: usize,
        ptrs: [*mut u8; 3],
        sh: [u32; 3],
    ) -> (usize, u64) {
        let win = _mm_set1_epi32((1 << (3 * NB)) - 1);
        // Per coordinate: [`super::m3dm_consts`] in every lane.
        let k = sh.map(|s| super::m3dm_consts(s, NB).map(|v| _mm_set1_epi16(v as i16)));
        let mut acc = _mm_setzero_si128();
        let mut i = 0;
        while i + 16 <= n {
            // SAFETY: `i + 16 <= n`: the loads and stores lie within the caller's bounds.
            unsafe {
                let v = [0, 1, 2, 3].map(|r| _mm_loadu_si128(c.add(4 * (i + 4 * r)).cast()));
                acc = _mm_or_si128(
                    acc,
                    _mm_or_si128(_mm_or_si128(v[0], v[1]), _mm_or_si128(v[2], v[3])),
                );
                // The windows of codes 0-7 and 8-15, every lane below 2^15 for a code of
                // at most `6 * NB` bits (no saturation).
                let low = |a: __m128i, b: __m128i| {
                    _mm_packs_epi32(_mm_and_si128(a, win), _mm_and_si128(b, win))
                };
                let high = |a: __m128i, b: __m128i| {
                    if NB == 4 {
                        _mm_packs_epi32(_mm_srli_epi32::<12>(a), _mm_srli_epi32::<12>(b))
                    } else {
                        _mm_packs_epi32(_mm_srli_epi32::<15>(a), _mm_srli_epi32::<15>(b))
                    }
                };
                let w = [
                    low(v[0], v[1]),
                    high(v[0], v[1]),
                    low(v[2], v[3]),
                    high(v[2], v[3]),
                ];
                for (p, k) in ptrs.iter().zip(&k) {
                    let join = |lo: __m128i, hi: __m128i| {
                        let hi = gather::<NB>(hi, k);
                        let hi = if NB == 4 {
                            _mm_slli_epi16::<4>(hi)
                        } else {
                            _mm_slli_epi16::<5>(hi)
                        };
                        _mm_or_si128(gather::<NB>(lo, k), hi)
                    };
                    let (a, b) = (join(w[0], w[1]), join(w[2], w[3]));
                    if NB == 4 {
                        _mm_storeu_si128(p.add(i).cast(), _mm_packus_epi16(a, b));
                    } else {
                        _mm_storeu_si128(p.add(2 * i).cast(), a);
                        _mm_storeu_si128(p.add(2 * i + 16).cast(), b);
                    }
                }
            }
            i += 16;
        }
        (i, super::swar2::fold(acc, 4))
    }
}

/// 2-D Morton kernels on AVX-512 VBMI with GFNI, codes twice as wide as the coordinates
/// (`uint8`, `uint16`, `uint32` into `uint16`, `uint32`, `uint64`): a 2-D code of `2 * w`
/// bytes is `w` 16-bit words, word `k` the interleave of byte `k` of each coordinate, so
/// the transform is a byte stream one whatever the width. Encoding pairs the coordinate
/// bytes into 16-bit lanes (one two-source `vpermb`), moves the nibbles into place with
/// three bit selects (`vpternlogd`) and interleaves the bits of each byte by one GF(2)
/// affine step (`vgf2p8affineqb`); decoding runs the inverse. About 7 steps per 64 code
/// bytes, where the compiler's magic-number spreads run 4 shift/mask steps per
/// coordinate in lanes of the code's width (8 lanes of `uint64`).
#[cfg(target_arch = "x86_64")]
mod m2z {
    use std::arch::x86_64::*;

    /// The `vgf2p8affineqb` matrix giving result bit `i` from input bit `p(i)`: bit `i`
    /// of the result is the parity of `x & A.byte[7 - i]`.
    const fn matrix(dec: bool) -> i64 {
        let mut a = 0u64;
        let mut i = 0;
        while i < 8 {
            // Decode: even bits to bits 0-3, odd bits to 4-7; encode: the inverse.
            let p = if dec {
                if i < 4 {
                    2 * i
                } else {
                    2 * (i - 4) + 1
                }
            } else if i % 2 == 0 {
                i / 2
            } else {
                4 + i / 2
            };
            a |= (1u64 << p) << (8 * (7 - i));
            i += 1;
        }
        a as i64
    }

    /// Encoding, columns: the 16-bit lanes `(x byte, y byte)` of words `32h .. 32h + 32`
    /// from `x` (first source) and `y` (second).
    const fn pair_cols(h: usize) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut k = 0;
        while k < 32 {
            t[2 * k] = (32 * h + k) as u8;
            t[2 * k + 1] = (64 + 32 * h + k) as u8;
            k += 1;
        }
        t
    }

    /// Encoding, rows of two `w`-byte words (the first on the even bits, on the odd bits
    /// where `swap`): the 16-bit lanes `(even byte, odd byte)` of each code word. Decoding
    /// rows: the inverse permute (`inv`).
    const fn pair_rows(w: usize, swap: bool, inv: bool) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut k = 0;
        while k < 32 {
            let base = (k / w) * 2 * w + k % w;
            let (e, o) = if swap {
                (base + w, base)
            } else {
                (base, base + w)
            };
            if inv {
                t[e] = (2 * k) as u8;
                t[o] = (2 * k + 1) as u8;
            } else {
                t[2 * k] = e as u8;
                t[2 * k + 1] = o as u8;
            }
            k += 1;
        }
        t
    }

    /// Decoding, columns: byte `j` of 64 from byte `2j + odd` of the first source (`j <
    /// 32`) or the second.
    const fn unpair(odd: usize) -> [u8; 64] {
        let mut t = [0u8; 64];
        let mut j = 0;
        while j < 64 {
            t[j] = (2 * (j % 32) + odd + 64 * (j / 32)) as u8;
            j += 1;
        }
        t
    }

    /// The OR of the `w`-byte little-endian words of `v`.
    fn fold(v: [u8; 64], w: usize) -> u64 {
        v.chunks_exact(w).fold(0, |a, c| {
            a | c.iter().rev().fold(0u64, |x, &b| (x << 8) | b as u64)
        })
    }

    #[inline(always)]
    unsafe fn ld(p: *const u8) -> __m512i {
        // SAFETY (callers): AVX-512 F; 64 readable bytes at `p`.
        unsafe { _mm512_loadu_si512(p.cast()) }
    }

    /// Bit select: `m ? a : b`.
    #[inline(always)]
    unsafe fn sel(m: __m512i, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY (callers): AVX-512 F.
        unsafe { _mm512_ternarylogic_epi32::<0xCA>(m, a, b) }
    }

    /// 64 code bytes from 32 lanes `(even byte a, odd byte b)`.
    #[inline(always)]
    unsafe fn enc64(w: __m512i) -> __m512i {
        // SAFETY (callers): AVX-512 F/BW and GFNI.
        unsafe {
            let (m0f, mf00, mff) = (
                _mm512_set1_epi16(0x000F),
                _mm512_set1_epi16(0x0F00),
                _mm512_set1_epi16(0x00FF),
            );
            // Low byte: low nibbles of a, b; high byte: high nibbles of a, b.
            let lo = sel(m0f, w, _mm512_srli_epi16(w, 4));
            let hi = sel(mf00, _mm512_slli_epi16(w, 4), w);
            let nib = sel(mff, lo, hi);
            _mm512_gf2p8affine_epi64_epi8::<0>(nib, _mm512_set1_epi64(matrix(false)))
        }
    }

    /// 32 lanes `(even byte, odd byte)` from 64 code bytes (inverse of [`enc64`]).
    #[inline(always)]
    unsafe fn dec64(c: __m512i) -> __m512i {
        // SAFETY (callers): AVX-512 F/BW and GFNI.
        unsafe {
            let (m0f, mf00, mff) = (
                _mm512_set1_epi16(0x000F),
                _mm512_set1_epi16(0x0F00),
                _mm512_set1_epi16(0x00FF),
            );
            // Per byte: its even bits in bits 0-3, odd bits in 4-7.
            let t = _mm512_gf2p8affine_epi64_epi8::<0>(c, _mm512_set1_epi64(matrix(true)));
            let x = sel(m0f, t, _mm512_srli_epi16(t, 4));
            let y = sel(mf00, _mm512_slli_epi16(t, 4), t);
            sel(mff, x, y)
        }
    }

    /// 2-D Morton codes (`2 * W` bytes) of the leading points of `W`-byte coordinates:
    /// columns `src[0]` (even bits) and `src[1]`, `64 / W` points a step, or rows at
    /// `src[0]` (first word on the even bits, odd where `swap`), `32 / W` a step, of `n`
    /// points. Returns the points done and the OR of their coordinates.
    ///
    /// # Safety
    /// AVX-512 F/BW/VBMI and GFNI; `W` 1, 2 or 4; columns readable for `n * W` bytes each
    /// (rows: `2 * n * W`), `out` writable for `2 * n * W`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    pub(super) unsafe fn encode<const W: usize, const ROWS: bool>(
        src: [*const u8; 2],
        n: usize,
        swap: bool,
        out: *mut u8,
    ) -> (usize, u64) {
        // SAFETY: AVX-512 F/BW/VBMI and GFNI; every load and store lies within the bounds
        // the caller gives.
        unsafe {
            let mut acc = _mm512_setzero_si512();
            let mut i = 0;
            if ROWS {
                let pr = [pair_rows(W, false, false), pair_rows(W, true, false)];
                let idx = ld(pr[swap as usize].as_ptr());
                let step = 32 / W;
                while i + step <= n {
                    let r = ld(src[0].add(2 * W * i));
                    acc = _mm512_or_si512(acc, r);
                    let c = enc64(_mm512_permutexvar_epi8(idx, r));
                    _mm512_storeu_si512(out.add(2 * W * i).cast(), c);
                    i += step;
                }
            } else {
                let pc = [pair_cols(0), pair_cols(1)];
                let (i0, i1) = (ld(pc[0].as_ptr()), ld(pc[1].as_ptr()));
                let step = 64 / W;
                while i + step <= n {
                    let x = ld(src[0].add(W * i));
                    let y = ld(src[1].add(W * i));
                    acc = _mm512_ternarylogic_epi32::<0xFE>(acc, x, y);
                    let o = out.add(2 * W * i);
                    let c0 = enc64(_mm512_permutex2var_epi8(x, i0, y));
                    let c1 = enc64(_mm512_permutex2var_epi8(x, i1, y));
                    _mm512_storeu_si512(o.cast(), c0);
                    _mm512_storeu_si512(o.add(64).cast(), c1);
                    i += step;
                }
            }
            let mut v = [0u8; 64];
            _mm512_storeu_si512(v.as_mut_ptr().cast(), acc);
            (i, fold(v, W))
        }
    }

    /// Inverse of [`encode`]: the coordinates (`W` bytes) of the leading of `n` codes of
    /// `2 * W` bytes at `codes`, into columns `dst[0]` (even bits) and `dst[1]`, or rows at
    /// `dst[0]` (the even bits first, the odd bits first where `swap`). Returns the codes
    /// done and the OR of them.
    ///
    /// # Safety
    /// AVX-512 F/BW/VBMI and GFNI; `W` 1, 2 or 4; `codes` readable for `2 * n * W` bytes,
    /// each column writable for `n * W` (rows: `2 * n * W`).
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi,gfni")]
    pub(super) unsafe fn decode<const W: usize, const ROWS: bool>(
        codes: *const u8,
        n: usize,
        swap: bool,
        dst: [*mut u8; 2],
    ) -> (usize, u64) {
        // SAFETY: AVX-512 F/BW/VBMI and GFNI; every load and store lies within the bounds
        // the caller gives.
        unsafe {
            let mut acc = _mm512_setzero_si512();
            let mut i = 0;
            if ROWS {
                let pr = [pair_rows(W, false, true), pair_rows(W, true, true)];
                let idx = ld(pr[swap as usize].as_ptr());
                let step = 32 / W;
                while i + step <= n {
                    let c = ld(codes.add(2 * W * i));
                    acc = _mm512_or_si512(acc, c);
                    let r = _mm512_permutexvar_epi8(idx, dec64(c));
                    _mm512_storeu_si512(dst[0].add(2 * W * i).cast(), r);
                    i += step;
                }
            } else {
                let (ie, io) = (ld(unpair(0).as_ptr()), ld(unpair(1).as_ptr()));
                let step = 64 / W;
                while i + step <= n {
                    let c0 = ld(codes.add(2 * W * i));
                    let c1 = ld(codes.add(2 * W * i + 64));
                    acc = _mm512_ternarylogic_epi32::<0xFE>(acc, c0, c1);
                    let (p0, p1) = (dec64(c0), dec64(c1));
                    let x = _mm512_permutex2var_epi8(p0, ie, p1);
                    let y = _mm512_permutex2var_epi8(p0, io, p1);
                    _mm512_storeu_si512(dst[0].add(W * i).cast(), x);
                    _mm512_storeu_si512(dst[1].add(W * i).cast(), y);
                    i += step;
                }
            }
            let mut v = [0u8; 64];
            _mm512_storeu_si512(v.as_mut_ptr().cast(), acc);
            (i, fold(v, 2 * W))
        }
    }
}

/// Whether the [`m2z`] kernels run on kernel `k` for 2-D Morton coordinates of type `C`
/// and codes of type `D`: AVX-512 VBMI ([`fast9`]) with GFNI, codes twice as wide as the
/// coordinates.
#[cfg(target_arch = "x86_64")]
fn m2z_fits<C: Word, D: Word>(k: Kernel) -> bool {
    D::BITS == 2 * C::BITS && C::BITS <= 32 && fast9(k) && gfni()
}

/// 2-D codes of one chunk where [`m2z_fits`] (codes twice as wide as the coordinates, on
/// AVX-512 VBMI with GFNI): Morton by [`m2z::encode`] (the tail on the generic loop),
/// Hilbert by [`hilbert2_avx512`]; `None` elsewhere. Returns the OR of the input values.
#[cfg(target_arch = "x86_64")]
fn encode2_avx512<U: Word, O: Word>(
    k: Kernel,
    curve: Curve,
    nbits: u32,
    src: Src<'_, U>,
    out: &mut [O],
) -> Option<U> {
    if !m2z_fits::<U, O>(k) {
        return None;
    }
    let msb = match curve {
        // SAFETY: `m2z_fits` checked the CPU features and the widths.
        Curve::Hilbert => return Some(unsafe { hilbert2_avx512(nbits, src, out) }),
        Curve::Morton { msb } => msb,
    };
    let n = out.len();
    let o: *mut u8 = out.as_mut_ptr().cast();
    let (ptrs, rows) = match src {
        Src::Rows(s) => {
            assert!(s.len() >= 2 * n);
            ([s.as_ptr() as *const u8; 2], true)
        }
        Src::Cols([x, y, _]) => {
            assert!(x.len() >= n && y.len() >= n);
            let (x, y) = if msb { (y, x) } else { (x, y) };
            ([x.as_ptr() as *const u8, y.as_ptr() as *const u8], false)
        }
    };
    // SAFETY: `m2z_fits` checked the CPU features (AVX-512 F/BW/VBMI, GFNI) and the
    // widths; the lengths are asserted above.
    let (done, a) = unsafe {
        match (U::BITS, rows) {
            (8, true) => m2z::encode::<1, true>(ptrs, n, msb, o),
            (8, false) => m2z::encode::<1, false>(ptrs, n, msb, o),
            (16, true) => m2z::encode::<2, true>(ptrs, n, msb, o),
            (16, false) => m2z::encode::<2, false>(ptrs, n, msb, o),
            (_, true) => m2z::encode::<4, true>(ptrs, n, msb, o),
            (_, false) => m2z::encode::<4, false>(ptrs, n, msb, o),
        }
    };
    Some(encode_tail(k, curve, 2, nbits, src, out, done, a))
}

/// 2-D Morton coordinates of one chunk of codes by [`m2z::decode`] where [`m2z_fits`]
/// (for `O`, `U`), the tail on the generic loop. Returns the OR of the codes.
#[cfg(target_arch = "x86_64")]
fn morton2_avx512_decode<U: Word, O: Word>(
    k: Kernel,
    msb: bool,
    nbits: u32,
    codes: &[U],
    mut dst: Dst<'_, O>,
) -> U {
    assert!(m2z_fits::<O, U>(k));
    let n = codes.len();
    let c: *const u8 = codes.as_ptr().cast();
    let (ptrs, rows) = match &mut dst {
        Dst::Rows(o) => {
            assert!(o.len() >= 2 * n);
            ([o.as_mut_ptr() as *mut u8; 2], true)
        }
        Dst::Cols([x, y, _]) => {
            assert!(x.len() >= n && y.len() >= n);
            let (x, y) = (x.as_mut_ptr() as *mut u8, y.as_mut_ptr() as *mut u8);
            (if msb { [y, x] } else { [x, y] }, false)
        }
    };
    // SAFETY: `m2z_fits` checked the CPU features and the widths; the lengths are
    // asserted above.
    let (done, a) = unsafe {
        match (O::BITS, rows) {
            (8, true) => m2z::decode::<1, true>(c, n, msb, ptrs),
            (8, false) => m2z::decode::<1, false>(c, n, msb, ptrs),
            (16, true) => m2z::decode::<2, true>(c, n, msb, ptrs),
            (16, false) => m2z::decode::<2, false>(c, n, msb, ptrs),
            (_, true) => m2z::decode::<4, true>(c, n, msb, ptrs),
            (_, false) => m2z::decode::<4, false>(c, n, msb, ptrs),
        }
    };
    let curve = Curve::Morton { msb };
    decode_tail(k, curve, 2, nbits, codes, dst, done, a)
}

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
fn cell<T: Coord>(c: Coords<'_, T>, d: usize, r: usize, i: usize) -> T {
    match c {
        Coords::Rows(s) => s[r * d + i],
        Coords::Columns(cols) => cols[i][r],
    }
}

/// Checks an encoding call's arguments (dimension, width, output type, equal column
/// lengths, memory for `n` codes of type `O`) and returns `(n, nbits)`.
pub fn plan_encode<T: Coord, O: Word>(
    coords: Coords<'_, T>,
    d: usize,
    nbits: i64,
) -> Result<(usize, u32)> {
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
    Ok((n, nbits))
}

/// Whether a signed input holds a negative value the kernels' range check cannot see (it
/// sees the unsigned reading, which a negative value passes when the type has at most
/// `bits` bits).
fn hidden_negative<T: Coord>(s: &[T], bits: u32) -> bool {
    T::SIGNED
        && 8 * std::mem::size_of::<T>() as u32 <= bits
        && s.iter().any(|v| v.to_u64() >> 63 != 0)
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
    let (n, _) = plan_encode::<T, O>(coords, d, nbits)?;
    let mut out = vec![O::default(); n];
    encode_into(k, coords, d, nbits, curve, &mut out, false)?;
    Ok(out)
}

/// [`encode_with`] writing into `out` (length `n`). `serial`: run on the calling thread
/// only (else on rayon from [`crate::PARALLEL_THRESHOLD`] points). On error `out` holds
/// partial results the caller must discard.
pub fn encode_into<T: Coord, O: Word>(
    k: Kernel,
    coords: Coords<'_, T>,
    d: usize,
    nbits: i64,
    curve: Curve,
    out: &mut [O],
    serial: bool,
) -> Result<()> {
    let k = k.min(kernel());
    let (n, nbits) = plan_encode::<T, O>(coords, d, nbits)?;
    if out.len() != n {
        return Err(Error::invalid(
            "out",
            format!("has {} slots for {n} codes", out.len()),
        ));
    }
    let limit = low_mask(nbits);
    let empty: &[T::Unsigned] = &[];
    let src = match coords {
        Coords::Rows(s) => Src::Rows(as_unsigned(&s[..n * d])),
        Coords::Columns(cs) => Src::Cols([
            as_unsigned(cs[0]),
            as_unsigned(cs[1]),
            if d == 3 { as_unsigned(cs[2]) } else { empty },
        ]),
    };
    let work = |(ci, o): (usize, &mut [O])| -> Result<bool> {
        crate::interrupt::check()?;
        let r0 = ci * CHUNK;
        let m = o.len();
        let part = match src {
            Src::Rows(s) => Src::Rows(&s[r0 * d..(r0 + m) * d]),
            Src::Cols([x, y, z]) => Src::Cols([
                &x[r0..r0 + m],
                &y[r0..r0 + m],
                if d == 3 { &z[r0..r0 + m] } else { empty },
            ]),
        };
        // 2-D codes twice as wide as the coordinates on AVX-512 VBMI with GFNI.
        #[cfg(target_arch = "x86_64")]
        if d == 2 {
            if let Some(acc) = encode2_avx512(k, curve, nbits, part, o) {
                return Ok(acc.to_u64() & !limit != 0);
            }
        }
        // 2-D codes twice as wide as the coordinates on AVX2: nibble-table interleaves.
        #[cfg(target_arch = "x86_64")]
        if d == 2 {
            if let Some(acc) = encode2_avx2(k, curve, nbits, part, o) {
                return Ok(acc.to_u64() & !limit != 0);
            }
        }
        // 2-D Morton on the portable kernel: SSE2 unpacks and swaps.
        #[cfg(target_arch = "x86_64")]
        if let (Curve::Morton { msb }, 2) = (curve, d) {
            if let Some(acc) = morton2_swar_encode(k, msb, nbits, part, o) {
                return Ok(acc.to_u64() & !limit != 0);
            }
        }
        // uint8 coordinates of at most 6 bits, 3-D Morton: the table-lookup kernel.
        #[cfg(target_arch = "x86_64")]
        if let (Curve::Morton { msb }, 3) = (curve, d) {
            if let Some(acc) = morton3_lut_encode(k, msb, nbits, part, o) {
                return Ok(acc.to_u64() & !limit != 0);
            }
            if let Some(acc) = morton3_avx2_encode(k, msb, nbits, part, o) {
                return Ok(acc.to_u64() & !limit != 0);
            }
            if let Some(acc) = morton3_swar_encode(k, msb, nbits, part, o) {
                return Ok(acc.to_u64() & !limit != 0);
            }
        }
        let acc = encode_chunk_k::<T::Unsigned, O>(k, curve, d, nbits, part, o, MortonStep::of(k));
        Ok(acc.to_u64() & !limit != 0)
    };
    let mut bad = if n >= crate::PARALLEL_THRESHOLD && !serial {
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
    if !bad {
        bad = match coords {
            Coords::Rows(s) => hidden_negative(s, nbits),
            Coords::Columns(cs) => cs.iter().any(|c| hidden_negative(c, nbits)),
        };
    }
    if bad {
        let row = (0..n)
            .find(|&r| (0..d).any(|i| cell(coords, d, r, i).outside(limit)))
            .unwrap_or(0);
        let vals: Vec<String> = (0..d)
            .map(|i| match coords {
                Coords::Rows(s) => s[row * d + i].describe(),
                Coords::Columns(cs) => cs[i][row].describe(),
            })
            .collect();
        let col = (0..d)
            .position(|i| cell(coords, d, row, i).outside(limit))
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
    Ok(())
}

/// Checks a decoding call's arguments (dimension, width, output type, memory for `n * D`
/// coordinates of type `O`) and returns `nbits`.
pub fn plan_decode<O: Word>(n: usize, d: usize, nbits: i64, arg: &'static str) -> Result<u32> {
    check_dim(d)?;
    let nbits = check_width(d, nbits)?;
    check_out::<O>(1, nbits, "coordinates")?;
    crate::memory::ensure_array::<O>(arg, n as u128 * d as u128)?;
    Ok(nbits)
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
    let n = codes.len();
    plan_decode::<O>(n, d, nbits, arg)?;
    let mut out = vec![O::default(); n * d];
    let dest = if columns {
        Dest::Columns(if n == 0 {
            Vec::new()
        } else {
            out.chunks_mut(n).collect()
        })
    } else {
        Dest::Rows(&mut out)
    };
    decode_into(k, codes, d, nbits, curve, dest, arg, false)?;
    Ok(out)
}

/// [`decode_with`] writing into `dest` (`n * D` values, or `D` columns of `n`; with
/// `n = 0` any empty destination); `serial` as in [`encode_into`]. On error `dest` holds
/// partial results the caller must discard.
#[allow(clippy::too_many_arguments)]
pub fn decode_into<T: Coord, O: Word>(
    k: Kernel,
    codes: &[T],
    d: usize,
    nbits: i64,
    curve: Curve,
    dest: Dest<'_, O>,
    arg: &'static str,
    serial: bool,
) -> Result<()> {
    let k = k.min(kernel());
    let n = codes.len();
    let nbits = plan_decode::<O>(n, d, nbits, arg)?;
    let total = d as u32 * nbits;
    let limit = low_mask(total);
    // Per chunk of rows: one interleaved slice (rows), or one slice per column.
    let pieces: Vec<Dst<'_, O>> = match dest {
        Dest::Rows(o) => {
            if o.len() != n * d {
                return Err(Error::invalid("out", "has the wrong length"));
            }
            o.chunks_mut(CHUNK * d).map(Dst::Rows).collect()
        }
        Dest::Columns(cols) => {
            if n == 0 {
                Vec::new()
            } else {
                if cols.len() != d || cols.iter().any(|c| c.len() != n) {
                    return Err(Error::invalid("out", "has the wrong shape"));
                }
                let mut it: Vec<std::slice::ChunksMut<'_, O>> =
                    cols.into_iter().map(|c| c.chunks_mut(CHUNK)).collect();
                (0..n.div_ceil(CHUNK))
                    .map(|_| {
                        let x = it[0].next().unwrap_or_default();
                        let y = it[1].next().unwrap_or_default();
                        let z = if d == 3 {
                            it[2].next().unwrap_or_default()
                        } else {
                            &mut [][..]
                        };
                        Dst::Cols([x, y, z])
                    })
                    .collect()
            }
        }
    };
    let ucodes = as_unsigned(codes);
    // 3-D codes of at most 9 bits into uint8: the byte-permute kernel.
    #[cfg(target_arch = "x86_64")]
    let perm9_fits = k == Kernel::Avx512
        && d == 3
        && nbits <= 3
        && O::BITS == 8
        && <T::Unsigned as Word>::BITS <= 16
        && fast9(k);
    // 3-D Hilbert codes of at most 9 bits into uint8 on AVX2: byte-table lookups.
    #[cfg(target_arch = "x86_64")]
    let hil9 = if hil9::fits::<T::Unsigned, O>(k, curve, d, nbits) {
        hil9::tables(nbits)
    } else {
        None
    };
    let work = |(ci, o): (usize, Dst<'_, O>)| -> Result<bool> {
        crate::interrupt::check()?;
        let r0 = ci * CHUNK;
        let rows = (n - r0).min(CHUNK);
        let part = &ucodes[r0..r0 + rows];
        // 3-D Morton codes into uint8 (uint16 of at most 15 bits, uint32/uint64 of at most
        // 24): the AVX-512 VBMI kernels (the uint16 one measured faster than the 9-bit
        // byte permutes below at nbits 3 too).
        #[cfg(target_arch = "x86_64")]
        let o = match (curve, d) {
            (Curve::Morton { msb }, 3)
                if morton3_lut_decodes::<T::Unsigned, O>(k, nbits, matches!(o, Dst::Rows(_))) =>
            {
                let a = morton3_lut_decode(k, msb, nbits, part, o);
                return Ok(a.to_u64() & !limit != 0);
            }
            // AVX2, and the portable kernel's uint32 codes into separate arrays (nbits 6-10).
            (Curve::Morton { msb }, 3)
                if morton3_simd_decodes::<T::Unsigned, O>(k, nbits, matches!(o, Dst::Rows(_))) =>
            {
                let a = morton3_simd_decode(k, msb, nbits, part, o);
                return Ok(a.to_u64() & !limit != 0);
            }
            _ => o,
        };
        // 2-D Morton codes into coordinates half as wide on AVX-512 VBMI with GFNI.
        #[cfg(target_arch = "x86_64")]
        if let (Curve::Morton { msb }, 2) = (curve, d) {
            if m2z_fits::<O, T::Unsigned>(k) {
                let a = morton2_avx512_decode(k, msb, nbits, part, o);
                return Ok(a.to_u64() & !limit != 0);
            }
        }
        // 2-D Morton codes of at most 8 bits into uint8 on AVX2 (on AVX-512, rows only:
        // into separate arrays its magic-number steps on 64 bytes measured faster, 0.050
        // against 0.057 ns a point): nibble tables; on the portable kernel, SSE2
        // multiplies (rows 0.30-0.48 -> 0.17-0.18 ns a point, separate arrays within
        // noise of the generic loop's 0.17-0.31, both about a memory pass; nbits 1-4).
        #[cfg(target_arch = "x86_64")]
        let same8 = k == Kernel::Avx2
            || (k == Kernel::Avx512 && matches!(o, Dst::Rows(_)))
            || k == Kernel::Portable;
        #[cfg(target_arch = "x86_64")]
        if let (Curve::Morton { msb }, 2, true, 8, 8) =
            (curve, d, same8, <T::Unsigned as Word>::BITS, O::BITS)
        {
            let a = morton2_dec8(k, msb, nbits, part, o);
            return Ok(a.to_u64() & !limit != 0);
        }
        // 2-D Morton on the portable kernel: SSE2 swaps and packs.
        #[cfg(target_arch = "x86_64")]
        if let (Curve::Morton { msb }, 2, true) = (curve, d, swar2_fits::<O, T::Unsigned>(k)) {
            let a = morton2_swar_decode(k, msb, nbits, part, o);
            return Ok(a.to_u64() & !limit != 0);
        }
        // 2-D codes twice as wide as the coordinates on AVX2: nibble-table compactions.
        #[cfg(target_arch = "x86_64")]
        if d == 2 && decode2_fits::<T::Unsigned, O>(k) {
            let a = decode2_avx2(k, curve, nbits, part, o);
            return Ok(a.to_u64() & !limit != 0);
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = hil9 {
            let a = hil9::decode(k, nbits, part, o, t);
            return Ok(a.to_u64() & !limit != 0);
        }
        #[cfg(target_arch = "x86_64")]
        if perm9_fits {
            let mut o = o;
            let t = perm9::tables(curve, nbits);
            // SAFETY: `perm9_fits` checked the CPU features and the type widths.
            let acc = unsafe { perm9::decode(part, &mut o, t) };
            return Ok(acc.to_u64() & !limit != 0);
        }
        let acc = decode_chunk_k::<T::Unsigned, O>(k, curve, d, nbits, part, o, MortonStep::of(k));
        Ok(acc.to_u64() & !limit != 0)
    };
    let mut bad = if n >= crate::PARALLEL_THRESHOLD && !serial {
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
    if !bad {
        bad = hidden_negative(codes, total);
    }
    if bad {
        let row = codes.iter().position(|c| c.outside(limit)).unwrap_or(0);
        return Err(Error::invalid(
            arg,
            format!(
                "row {row} has value {}, outside the allowed range [0, 2^{total}) = [0, {limit}] \
                 for D * nbits = {total}",
                codes[row].describe()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::morton::{compact1by1, compact1by2, part1by1, part1by2};
    use super::super::{hilbert, morton};
    use super::*;

    fn pts(seed: u64, n: usize, d: usize, nbits: u32) -> Vec<u64> {
        (0..(n * d) as u64)
            .map(|i| crate::rng::counter_u64(seed, nbits as u64, i) & low_mask(nbits))
            .collect()
    }

    fn conv<T: TryFrom<u64>>(v: &[u64]) -> Option<Vec<T>> {
        v.iter().map(|&x| T::try_from(x).ok()).collect()
    }

    /// Every (input type, output type) pair of one case, rows and columns, encode and
    /// decode, against the reference codes `want` of points `p` (row-major `(n, d)`).
    fn check_pair<T: Coord + TryFrom<u64>, O: Word>(
        k: Kernel,
        c: Curve,
        d: usize,
        nbits: u32,
        p: &[u64],
        want: &[u64],
    ) {
        if O::BITS < d as u32 * nbits {
            return;
        }
        let Some(pt) = conv::<T>(p) else {
            return;
        };
        let n = want.len();
        let cols: Vec<Vec<T>> = (0..d)
            .map(|i| pt.iter().skip(i).step_by(d).copied().collect())
            .collect();
        let col_refs: Vec<&[T]> = cols.iter().map(|c| c.as_slice()).collect();
        let tag = format!(
            "{k:?} {c:?} d={d} nbits={nbits} in={} out={}",
            std::any::type_name::<T>(),
            O::BITS
        );
        let got: Vec<O> = encode_with(k, Coords::Rows(&pt), d, nbits as i64, c).unwrap();
        assert!(
            got.iter().map(|v| v.to_u64()).eq(want.iter().copied()),
            "{tag}"
        );
        let got: Vec<O> = encode_with(k, Coords::Columns(&col_refs), d, nbits as i64, c).unwrap();
        assert!(
            got.iter().map(|v| v.to_u64()).eq(want.iter().copied()),
            "{tag} columns"
        );
        // Decode from codes of type T when they fit, and as O.
        let codes: Vec<O> = want.iter().map(|&v| O::from_u64(v)).collect();
        for cl in [false, true] {
            let back: Vec<O> = decode_with(k, &codes, d, nbits as i64, c, cl, "code").unwrap();
            let flat = as_rows(&back, n, d, cl);
            assert_eq!(flat, p, "{tag} decode columns={cl}");
        }
        if let Some(ct) = conv::<T>(want) {
            let back: Vec<O> = decode_with(k, &ct, d, nbits as i64, c, false, "code")
                .unwrap_or_else(|e| panic!("{tag}: {e:?}"));
            assert!(
                back.iter().map(|v| v.to_u64()).eq(p.iter().copied()),
                "{tag} decode from T"
            );
        }
    }

    /// Decoded coordinates as `u64` rows (`n x d`), read from columns when `columns`.
    fn as_rows<O: Word>(back: &[O], n: usize, d: usize, columns: bool) -> Vec<u64> {
        if columns {
            (0..n * d)
                .map(|j| back[(j % d) * n + j / d].to_u64())
                .collect()
        } else {
            back.iter().map(|v| v.to_u64()).collect()
        }
    }

    /// Decoding codes of type `T` into coordinates of type `O` (which need only hold
    /// `nbits`, so e.g. 9-bit `u16` codes into `u8`), rows and columns.
    fn check_decode<T: Coord + TryFrom<u64>, O: Word>(
        k: Kernel,
        c: Curve,
        d: usize,
        nbits: u32,
        p: &[u64],
        want: &[u64],
    ) {
        if O::BITS < nbits {
            return;
        }
        let Some(ct) = conv::<T>(want) else {
            return;
        };
        let n = want.len();
        for cl in [false, true] {
            let back: Vec<O> = decode_with(k, &ct, d, nbits as i64, c, cl, "code").unwrap();
            let flat = as_rows(&back, n, d, cl);
            assert_eq!(
                flat,
                p,
                "{k:?} {c:?} d={d} nbits={nbits} codes {} -> coordinates uint{} columns={cl}",
                std::any::type_name::<T>(),
                O::BITS
            );
        }
    }

    fn check_all<T: Coord + TryFrom<u64>>(
        k: Kernel,
        c: Curve,
        d: usize,
        nbits: u32,
        p: &[u64],
        want: &[u64],
    ) {
        check_decode::<T, u8>(k, c, d, nbits, p, want);
        check_decode::<T, u16>(k, c, d, nbits, p, want);
        check_decode::<T, u32>(k, c, d, nbits, p, want);
        check_decode::<T, u64>(k, c, d, nbits, p, want);
        check_pair::<T, u8>(k, c, d, nbits, p, want);
        check_pair::<T, u16>(k, c, d, nbits, p, want);
        check_pair::<T, u32>(k, c, d, nbits, p, want);
        check_pair::<T, u64>(k, c, d, nbits, p, want);
    }

    #[test]
    fn the_portable_hilbert_tiles_are_built() {
        // Without them the portable kernel would silently keep its lane code, and the
        // tests below would not reach the tiles.
        assert!(h2tile::tiles().is_some());
        assert!(h3tile::tiles().is_some());
        assert_eq!(Table::get(3).machine().len(), 24);
        for k in [Kernel::Portable, kernel()] {
            let step = MortonStep::of(k);
            assert_eq!(step == MortonStep::Generic, k == Kernel::Portable, "{k:?}");
        }
    }

    #[test]
    fn every_kernel_matches_the_reference_loops() {
        let kernels = [Kernel::Portable, Kernel::Avx2, Kernel::Avx512];
        for d in [2usize, 3] {
            for nbits in 1..=(64 / d) as u32 {
                // 300 rows: a partial 256-row block of the 3-D kernels follows a full one.
                let mut p = pts(nbits as u64, 300, d, nbits);
                // Corners first: all zeros, all ones, one axis at its maximum.
                for v in &mut p[..d] {
                    *v = 0;
                }
                for v in &mut p[d..2 * d] {
                    *v = low_mask(nbits);
                }
                p[2 * d] = low_mask(nbits);
                p[4 * d - 1] = low_mask(nbits);
                let want_h = hilbert::encode_generic(&p, d, nbits).unwrap();
                let mut curves = vec![(Curve::Hilbert, want_h)];
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
                    curves.push((Curve::Morton { msb }, want));
                }
                for k in kernels {
                    for (c, want) in &curves {
                        check_all::<u8>(k, *c, d, nbits, &p, want);
                        check_all::<u16>(k, *c, d, nbits, &p, want);
                        check_all::<u32>(k, *c, d, nbits, &p, want);
                        check_all::<u64>(k, *c, d, nbits, &p, want);
                        check_all::<i8>(k, *c, d, nbits, &p, want);
                        check_all::<i64>(k, *c, d, nbits, &p, want);
                    }
                }
            }
        }
    }

    /// 2-D and 3-D kernels on rows and columns over several 256-point blocks and a ragged
    /// tail (2,125 points; the AVX-512 VBMI Morton kernels run 8 to 64 a step: table
    /// lookups, multishift windows for 16- to 64-bit coordinates and GF(2) steps for
    /// 32/64-bit codes into `uint8`; the 2-D Hilbert kernels scan 256-point blocks and
    /// interleave 8 to 64 points a step), every lane width, both Morton axis orders, on
    /// every kernel.
    #[test]
    fn rows_and_columns_across_blocks_match_the_reference_loops() {
        let n = 2125;
        let sweep = [
            1u32, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 16, 17, 18, 20, 21, 24, 25, 31, 32,
        ];
        for (d, nbits) in [2usize, 3]
            .into_iter()
            .flat_map(|d| sweep.into_iter().map(move |b| (d, b)))
            .filter(|&(d, b)| d as u32 * b <= 64)
        {
            let mut p = pts(100 + nbits as u64, n, d, nbits);
            // Edge rows: all ones, one axis at its maximum (and zeros below).
            for v in &mut p[d..2 * d] {
                *v = low_mask(nbits);
            }
            p[2 * d] = low_mask(nbits);
            p[2 * d + 1..4 * d].fill(0);
            let want_h = hilbert::encode_generic(&p, d, nbits).unwrap();
            let morton_of = |order| -> Vec<u64> {
                p.chunks(d)
                    .map(|r| morton::tests::naive(r, nbits, order))
                    .collect()
            };
            let want_m = morton_of(morton::AxisOrder::Lsb);
            let want_msb = morton_of(morton::AxisOrder::Msb);
            for k in [Kernel::Portable, Kernel::Avx2, Kernel::Avx512] {
                for (c, want) in [
                    (Curve::Hilbert, &want_h),
                    (Curve::Morton { msb: false }, &want_m),
                    (Curve::Morton { msb: true }, &want_msb),
                ] {
                    check_all::<u8>(k, c, d, nbits, &p, want);
                    check_all::<u16>(k, c, d, nbits, &p, want);
                    check_all::<u32>(k, c, d, nbits, &p, want);
                    check_all::<u64>(k, c, d, nbits, &p, want);
                }
            }
        }
    }

    /// Every 3-D Hilbert code of at most 9 bits (each at least twice, scrambled, with a
    /// ragged tail), `uint8` and `uint16` codes into `uint8` rows and columns, on every
    /// kernel against the portable loops (the AVX2 byte-table kernel and the AVX-512
    /// VBMI byte permutes read all 512); the AVX2 tables factor for every `nbits`.
    #[test]
    fn every_small_3d_hilbert_code_decodes_alike_on_every_kernel() {
        for nbits in 1..=3u32 {
            #[cfg(target_arch = "x86_64")]
            assert!(hil9::tables(nbits).is_some(), "nbits {nbits}");
            let m = 1u64 << (3 * nbits);
            let codes: Vec<u64> = (0..2 * m + 100).map(|i| (i * 37 + 5) % m).collect();
            // uint8 codes: those below 256 (all of them below nbits 3).
            let low: Vec<u64> = codes.iter().copied().filter(|&c| c < 256).collect();
            let c16: Vec<u16> = codes.iter().map(|&c| c as u16).collect();
            let c8: Vec<u8> = low.iter().map(|&c| c as u8).collect();
            let p16 = hilbert::decode_generic(&codes, nbits, 3).unwrap();
            let p8 = hilbert::decode_generic(&low, nbits, 3).unwrap();
            let nb = nbits as i64;
            for k in [Kernel::Portable, Kernel::Avx2, Kernel::Avx512] {
                for cl in [false, true] {
                    let got: Vec<u8> =
                        decode_with(k, &c16, 3, nb, Curve::Hilbert, cl, "c").unwrap();
                    let got = as_rows(&got, c16.len(), 3, cl);
                    assert_eq!(got, p16, "{k:?} uint16 codes, nbits {nbits}, columns {cl}");
                    let got: Vec<u8> = decode_with(k, &c8, 3, nb, Curve::Hilbert, cl, "c").unwrap();
                    let got = as_rows(&got, c8.len(), 3, cl);
                    assert_eq!(got, p8, "{k:?} uint8 codes, nbits {nbits}, columns {cl}");
                }
            }
            // A code past the range is still caught on the table path (its bit 8 / 6 / 3).
            let mut bad = c16.clone();
            bad[40] = m as u16;
            let e = decode_with::<u16, u8>(Kernel::Avx2, &bad, 3, nb, Curve::Hilbert, true, "c");
            assert!(format!("{:?}", e.err()).contains("row 40"), "nbits {nbits}");
        }
    }

    /// A code wider than `3 * nbits` bits is reported with its row where `uint64` codes
    /// go straight into split axes (`16 < nbits`, AVX2), in a block's vector part and its
    /// tail, as on the portable kernel.
    #[test]
    fn out_of_range_codes_of_split_axes_name_their_row() {
        for nbits in [17u32, 18, 21] {
            for row in [40usize, 299] {
                let m = 1u64 << (3 * nbits);
                let mut codes: Vec<u64> = (0..300u64).map(|i| i * 0x9E37_79B9 % m).collect();
                codes[row] = m | 5;
                for k in [Kernel::Portable, Kernel::Avx2] {
                    for cl in [false, true] {
                        let e = decode_with::<u64, u32>(
                            k,
                            &codes,
                            3,
                            nbits as i64,
                            Curve::Hilbert,
                            cl,
                            "c",
                        );
                        let e = format!("{:?}", e.err());
                        assert!(
                            e.contains(&format!("row {row} ")),
                            "{k:?} nbits {nbits}: {e}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn lane_bit_operations_are_exact() {
        // part/compact against the u64 reference on every value of the narrow lanes.
        for v in 0..=u16::MAX as u64 {
            let v8 = v & 0xFF;
            assert_eq!((v8 as u8 & 0xF).part1() as u64, part1by1(v8 & 0xF));
            assert_eq!((v8 as u8).compact1() as u64, compact1by1(v8));
            assert_eq!((v8 as u8 & 3).part2() as u64, part1by2(v8 & 3));
            assert_eq!(
                (v8 as u8 & 0b1001).compact2() as u64,
                compact1by2(v8 & 0b1001)
            );
            assert_eq!((v as u16 & 0xFF).part1() as u64, part1by1(v & 0xFF));
            assert_eq!((v as u16).compact1() as u64, compact1by1(v));
            assert_eq!((v as u16 & 0x1F).part2() as u64, part1by2(v & 0x1F));
            assert_eq!(
                (v as u16 & 0x7FFF).compact2() as u64,
                compact1by2(v & 0x7FFF)
            );
            let w = crate::rng::counter_u64(1, 2, v);
            assert_eq!((w as u32 & 0xFFFF).part1() as u64, part1by1(w & 0xFFFF));
            assert_eq!((w as u32).compact1() as u64, compact1by1(w & 0xFFFF_FFFF));
            assert_eq!((w as u32 & 0x3FF).part2() as u64, part1by2(w & 0x3FF));
            assert_eq!(
                (w as u32 & 0x3FFF_FFFF).compact2() as u64,
                compact1by2(w & 0x3FFF_FFFF)
            );
            assert_eq!(w.part1(), part1by1(w));
            assert_eq!(w.compact1(), compact1by1(w));
            assert_eq!(w.part2(), part1by2(w));
            assert_eq!((w >> 1).compact2(), compact1by2(w >> 1));
        }
    }

    #[test]
    fn signed_inputs_as_wide_as_nbits_reject_negatives() {
        // i8 with nbits = 8: -1 reads as 255 unsigned, which the range check alone passes.
        let p = [0i8, -1];
        let e = encode::<i8, u16>(Coords::Rows(&p), 2, 8, Curve::Hilbert).err();
        assert!(
            format!("{e:?}").contains("row 0 (column 1) has value -1"),
            "{e:?}"
        );
        let c = [-1i16];
        let e = decode::<i16, u8>(&c, 2, 8, Curve::Morton { msb: false }, false, "code").err();
        assert!(format!("{e:?}").contains("row 0 has value -1"), "{e:?}");
        // Codes of D * nbits = 64 bits: every u64 passes the range check, so the row of the
        // negative value is found by its sign (it was reported as row 0).
        for c in [[1i64, 2, -1, 3].as_slice(), &[7, 0, -1, 5]] {
            for curve in [Curve::Hilbert, Curve::Morton { msb: false }] {
                let e = decode::<i64, u32>(c, 2, 32, curve, true, "code").err();
                assert!(format!("{e:?}").contains("row 2 has value -1"), "{e:?}");
            }
        }
        let p = [1i32, 2, 3, 4, -5, 6];
        let e = encode::<i32, u64>(Coords::Rows(&p), 2, 32, Curve::Hilbert).err();
        assert!(
            format!("{e:?}").contains("row 2 (column 0) has value -5"),
            "{e:?}"
        );
    }

    /// An out-of-range coordinate in any one column, on every kernel, curve, D and nbits,
    /// rows and separate arrays, is named by its row (each kernel takes the range check
    /// its own way: in its loop, or in passes of its own).
    #[test]
    fn an_out_of_range_value_in_any_column_is_named_on_every_kernel() {
        let curves = [
            Curve::Hilbert,
            Curve::Morton { msb: true },
            Curve::Morton { msb: false },
        ];
        for k in [Kernel::Portable, Kernel::Avx2, Kernel::Avx512] {
            for curve in curves {
                for d in 2..=3usize {
                    for nbits in 1..=(64 / d as u32).min(63) {
                        let n = 600;
                        let mask = (1u64 << nbits) - 1;
                        let good: Vec<u64> = (0..n * d)
                            .map(|i| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 7 & mask)
                            .collect();
                        for (c, r) in [(0, 599), (d - 1, 300), (1, 0)] {
                            let mut m = good.clone();
                            m[r * d + c] = 1u64 << nbits;
                            let cols: Vec<Vec<u64>> = (0..d)
                                .map(|j| (0..n).map(|i| m[i * d + j]).collect())
                                .collect();
                            let refs: Vec<&[u64]> = cols.iter().map(|v| v.as_slice()).collect();
                            for coords in [Coords::Rows(&m), Coords::Columns(&refs)] {
                                let mut out = vec![0u64; n];
                                let e =
                                    encode_into(k, coords, d, nbits as i64, curve, &mut out, true)
                                        .err();
                                let msg = format!("{e:?}");
                                assert!(
                                    msg.contains(&format!("row {r} ")),
                                    "{k:?} {curve:?} d={d} nbits={nbits} column {c}: {msg}"
                                );
                            }
                        }
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
