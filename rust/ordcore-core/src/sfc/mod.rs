//! Space-filling curves, scan orders of 2-D grids and point-cloud serialization.
//!
//! * [`hilbert`]: Hilbert index <-> coordinates in any dimension, bit for bit the curve of
//!   the `hilbertcurve` package (Skilling, "Programming the Hilbert curve", AIP Conf. Proc.
//!   707, 2004), with table-driven state machines for 2-D and 3-D.
//! * [`morton`]: Morton (Z-order) codes by bit interleaving.
//! * [`fast`]: the 2-D and 3-D batch kernels behind both (rows or separate coordinate
//!   arrays, narrow output types, AVX-512 / AVX2 / portable copies).
//! * [`scan`]: permutations that visit an `height x width` grid (raster, snake, generalized
//!   Hilbert, ...).
//! * [`serialize`]: Point Transformer V3 style serialization of batched point clouds.
//!
//! Every batch routine validates its input in the same pass that computes the result (an
//! OR-reduction per chunk, then a search for the first bad row only on failure) and runs on
//! rayon when the batch has at least [`crate::PARALLEL_THRESHOLD`] items.

pub mod fast;
pub mod hilbert;
pub mod morton;
pub mod scan;
pub mod serialize;

use rayon::prelude::*;

use crate::{Error, Result};

/// An integer element type accepted for coordinates and codes. Signed values are
/// reinterpreted as `u64` (two's complement), so a negative value looks huge and fails the
/// same range check as a too-large one; [`Coord::describe`] prints the original value.
pub trait Coord: Copy + Send + Sync + 'static {
    /// The unsigned type of the same width (the fast kernels read signed input as it).
    type Unsigned: fast::Word;
    /// Whether the type is signed.
    const SIGNED: bool;
    /// The value as `u64` (negative values wrap to large ones).
    fn to_u64(self) -> u64;
    /// The value as the user wrote it, for error messages.
    fn describe(self) -> String;
    /// Whether the value lies outside `[0, limit]`: above it, or negative (a negative value
    /// reads as a large `u64`, which passes a check against `limit = 2^64 - 1`).
    #[inline(always)]
    fn outside(self, limit: u64) -> bool {
        let v = self.to_u64();
        v & !limit != 0 || (Self::SIGNED && (v as i64) < 0)
    }
}

/// Whether the OR `acc` of some values of type `T` shows one outside `[0, limit]` (see
/// [`Coord::outside`]; a negative value sets the top bit).
#[inline(always)]
fn any_outside<T: Coord>(acc: u64, limit: u64) -> bool {
    acc & !limit != 0 || (T::SIGNED && (acc as i64) < 0)
}

macro_rules! impl_coord {
    ($($t:ty => $u:ty, $signed:expr);*) => {$(
        impl Coord for $t {
            type Unsigned = $u;
            const SIGNED: bool = $signed;
            #[inline(always)]
            fn to_u64(self) -> u64 {
                self as u64
            }
            fn describe(self) -> String {
                self.to_string()
            }
        }
    )*};
}
impl_coord!(u8 => u8, false; u16 => u16, false; u32 => u32, false; u64 => u64, false;
    i8 => u8, true; i16 => u16, true; i32 => u32, true; i64 => u64, true);

/// `s` read as its unsigned type of the same width (two's complement bits).
pub(crate) fn as_unsigned<T: Coord>(s: &[T]) -> &[T::Unsigned] {
    assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<T::Unsigned>());
    assert_eq!(
        std::mem::align_of::<T>(),
        std::mem::align_of::<T::Unsigned>()
    );
    // SAFETY: `T` and `T::Unsigned` are primitive integers of the same size and alignment
    // (asserted above, fixed by `impl_coord!`), and every bit pattern is valid for both.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), s.len()) }
}

/// Number of rows one work item handles (serial or as one rayon task).
const CHUNK: usize = 4096;

/// The largest value with `bits` bits (`bits <= 64`).
#[inline]
pub(crate) fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Checks `1 <= ndim`, `1 <= nbits` and `ndim * nbits <= 64`; returns `nbits` as `u32`.
pub fn check_width(ndim: usize, nbits: i64) -> Result<u32> {
    if ndim < 1 {
        return Err(Error::invalid(
            "coords",
            "need at least one dimension (D >= 1), got D = 0",
        ));
    }
    if nbits < 1 {
        return Err(Error::invalid(
            "nbits",
            format!("must be at least 1, got {nbits}"),
        ));
    }
    if (ndim as i128) * (nbits as i128) > 64 {
        let fits = if ndim > 64 {
            format!("D = {ndim} axes exceed it even at nbits = 1")
        } else {
            format!("with D = {ndim}, nbits can be at most {}", 64 / ndim)
        };
        return Err(Error::invalid(
            "nbits",
            format!(
                "D * nbits = {ndim} * {nbits} = {} exceeds the 64-bit limit of a uint64 code \
                 ({fits})",
                (ndim as i128) * (nbits as i128)
            ),
        ));
    }
    Ok(nbits as u32)
}

/// The first bad row over the chunks' findings (`None`: all rows valid).
fn first_bad(found: Vec<Option<usize>>) -> Option<usize> {
    found.into_iter().flatten().min()
}

/// Runs `kernel` over the rows of a row-major `(n, ndim)` array, writing one `u64` per row,
/// and fails with an error naming the first row whose values do not fit in `nbits` bits.
///
/// `kernel` receives one row and returns its code; it may assume nothing about the values
/// (rows that fail validation are computed too, then discarded).
pub(crate) fn encode_rows<T, K>(
    coords: &[T],
    ndim: usize,
    nbits: u32,
    kernel: K,
) -> Result<Vec<u64>>
where
    T: Coord,
    K: Fn(&[T]) -> u64 + Sync,
{
    let n = coords.len() / ndim;
    debug_assert_eq!(n * ndim, coords.len());
    crate::memory::ensure_array::<u64>("coords", n as u128)?;
    let mut out = vec![0u64; n];
    let limit = low_mask(nbits);
    let work = |(ci, (o, c)): (usize, (&mut [u64], &[T]))| -> Result<Option<usize>> {
        crate::interrupt::check()?;
        let mut acc = 0u64;
        for (slot, row) in o.iter_mut().zip(c.chunks_exact(ndim)) {
            for &v in row {
                acc |= v.to_u64();
            }
            *slot = kernel(row);
        }
        if !any_outside::<T>(acc, limit) {
            return Ok(None);
        }
        Ok(c.chunks_exact(ndim)
            .position(|row| row.iter().any(|v| v.outside(limit)))
            .map(|r| ci * CHUNK + r))
    };
    let bad = first_bad(if n >= crate::PARALLEL_THRESHOLD {
        out.par_chunks_mut(CHUNK)
            .zip(coords.par_chunks(CHUNK * ndim))
            .enumerate()
            .map(work)
            .collect::<Result<Vec<_>>>()?
    } else {
        out.chunks_mut(CHUNK)
            .zip(coords.chunks(CHUNK * ndim))
            .enumerate()
            .map(work)
            .collect::<Result<Vec<_>>>()?
    });
    match bad {
        None => Ok(out),
        Some(row) => {
            let vals = &coords[row * ndim..(row + 1) * ndim];
            let col = vals.iter().position(|v| v.outside(limit)).unwrap_or(0);
            Err(Error::invalid(
                "coords",
                format!(
                    "row {row} (column {col}) has value {}, outside the allowed range \
                     [0, 2^{nbits}) = [0, {}] for nbits = {nbits}; row {row} is [{}]",
                    vals[col].describe(),
                    limit,
                    vals.iter()
                        .map(|v| v.describe())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ))
        }
    }
}

/// Runs `kernel` over a batch of codes, writing `ndim` values per code, and fails with an
/// error naming the first code that does not fit in `total_bits` bits.
pub(crate) fn decode_rows<T, K>(
    codes: &[T],
    ndim: usize,
    total_bits: u32,
    arg: &'static str,
    kernel: K,
) -> Result<Vec<u64>>
where
    T: Coord,
    K: Fn(u64, &mut [u64]) + Sync,
{
    let n = codes.len();
    crate::memory::ensure_array::<u64>(arg, n as u128 * ndim as u128)?;
    let mut out = vec![0u64; n * ndim];
    let limit = low_mask(total_bits);
    let work = |(ci, (o, c)): (usize, (&mut [u64], &[T]))| -> Result<Option<usize>> {
        crate::interrupt::check()?;
        let mut acc = 0u64;
        for (row, &h) in o.chunks_exact_mut(ndim).zip(c) {
            let h = h.to_u64();
            acc |= h;
            kernel(h, row);
        }
        if !any_outside::<T>(acc, limit) {
            return Ok(None);
        }
        Ok(c.iter()
            .position(|v| v.outside(limit))
            .map(|r| ci * CHUNK + r))
    };
    let bad = first_bad(if n >= crate::PARALLEL_THRESHOLD {
        out.par_chunks_mut(CHUNK * ndim)
            .zip(codes.par_chunks(CHUNK))
            .enumerate()
            .map(work)
            .collect::<Result<Vec<_>>>()?
    } else {
        out.chunks_mut(CHUNK * ndim)
            .zip(codes.chunks(CHUNK))
            .enumerate()
            .map(work)
            .collect::<Result<Vec<_>>>()?
    });
    match bad {
        None => Ok(out),
        Some(row) => Err(Error::invalid(
            arg,
            format!(
                "row {row} has value {}, outside the allowed range [0, 2^{total_bits}) = [0, {}] \
                 for D * nbits = {total_bits}",
                codes[row].describe(),
                limit
            ),
        )),
    }
}
