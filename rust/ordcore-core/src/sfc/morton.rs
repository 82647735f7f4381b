//! Morton (Z-order) codes: the bits of `D` coordinates interleaved into one `u64`.
//!
//! Bit `b` of coordinate `i` goes to bit `b * D + i` of the code ([`AxisOrder::Lsb`]:
//! coordinate 0 is the least significant bit of each `D`-bit group, the convention of
//! libmorton and pymorton) or to bit `b * D + (D - 1 - i)` ([`AxisOrder::Msb`]: coordinate 0
//! most significant, as in Point Transformer V3 / O-CNN's `xyz2key`). 2-D and 3-D run
//! the vectorized magic-number spreads of [`super::fast`]; other `D` use a byte table.

use super::{check_width, decode_rows, encode_rows, fast, Coord};
use crate::Result;

/// Where coordinate 0 goes inside each `D`-bit group of a Morton code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxisOrder {
    /// Coordinate 0 in the least significant bit (libmorton, pymorton).
    Lsb,
    /// Coordinate 0 in the most significant bit (Point Transformer V3).
    Msb,
}

/// Spreads the low 32 bits of `x` to the even bits of the result.
#[inline(always)]
pub fn part1by1(x: u64) -> u64 {
    let mut x = x & 0xFFFF_FFFF;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Inverse of [`part1by1`]: gathers the even bits of `x`.
#[inline(always)]
pub fn compact1by1(x: u64) -> u64 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) & 0xFFFF_FFFF
}

/// Spreads the low 21 bits of `x` to every third bit of the result.
#[inline(always)]
pub fn part1by2(x: u64) -> u64 {
    let mut x = x & 0x1F_FFFF;
    x = (x | (x << 32)) & 0x001F_0000_0000_FFFF;
    x = (x | (x << 16)) & 0x001F_0000_FF00_00FF;
    x = (x | (x << 8)) & 0x100F_00F0_0F00_F00F;
    x = (x | (x << 4)) & 0x10C3_0C30_C30C_30C3;
    (x | (x << 2)) & 0x1249_2492_4924_9249
}

/// Inverse of [`part1by2`].
#[inline(always)]
pub fn compact1by2(x: u64) -> u64 {
    let mut x = x & 0x1249_2492_4924_9249;
    x = (x | (x >> 2)) & 0x10C3_0C30_C30C_30C3;
    x = (x | (x >> 4)) & 0x100F_00F0_0F00_F00F;
    x = (x | (x >> 8)) & 0x001F_0000_FF00_00FF;
    x = (x | (x >> 16)) & 0x001F_0000_0000_FFFF;
    (x | (x >> 32)) & 0x1F_FFFF
}

/// Spreads bits with stride `ndim` for any dimension: `table[byte]` holds the byte's bits
/// at positions `0, ndim, 2 ndim, ...` (bits that would land beyond bit 63 are dropped:
/// they cannot be set in a valid coordinate).
pub struct Spreader {
    ndim: usize,
    table: [u64; 256],
}

impl Spreader {
    pub fn new(ndim: usize) -> Self {
        let mut table = [0u64; 256];
        for (byte, slot) in table.iter_mut().enumerate() {
            for b in 0..8 {
                let pos = b * ndim;
                if byte >> b & 1 == 1 && pos < 64 {
                    *slot |= 1u64 << pos;
                }
            }
        }
        Spreader { ndim, table }
    }

    /// `x` (at most `nbits` bits, `ndim * nbits <= 64`) with bit `b` moved to `b * ndim`.
    #[inline]
    pub fn spread(&self, x: u64, nbits: u32) -> u64 {
        let mut out = 0u64;
        let mut k = 0;
        while 8 * k < nbits as usize {
            let shift = 8 * k * self.ndim;
            if shift < 64 {
                out |= self.table[((x >> (8 * k)) & 0xFF) as usize] << shift;
            }
            k += 1;
        }
        out
    }
}

/// Gathers bits `0, ndim, 2 ndim, ...` of `code` (`nbits` of them) into one integer.
#[inline]
pub fn gather(code: u64, ndim: usize, nbits: u32) -> u64 {
    let mut x = 0u64;
    for b in 0..nbits as usize {
        x |= ((code >> (b * ndim)) & 1) << b;
    }
    x
}

/// Morton codes of the rows of a row-major `(n, ndim)` array; see the module docs for the
/// bit layout. Fails when `ndim * nbits > 64`, `nbits < 1`, or a value is outside
/// `[0, 2^nbits)` (the error names the first offending row).
pub fn encode<T: Coord>(
    coords: &[T],
    ndim: usize,
    nbits: i64,
    order: AxisOrder,
) -> Result<Vec<u64>> {
    let msb = order == AxisOrder::Msb;
    match ndim {
        2 | 3 => fast::encode::<T, u64>(
            fast::Coords::Rows(coords),
            ndim,
            nbits,
            fast::Curve::Morton { msb },
        ),
        _ => {
            let nbits = check_width(ndim, nbits)?;
            if ndim == 1 {
                return encode_rows(coords, 1, nbits, |r| r[0].to_u64());
            }
            let sp = Spreader::new(ndim);
            encode_rows(coords, ndim, nbits, move |r| {
                let mut code = 0u64;
                for (i, v) in r.iter().enumerate() {
                    let pos = if msb { ndim - 1 - i } else { i };
                    code |= sp.spread(v.to_u64(), nbits) << pos;
                }
                code
            })
        }
    }
}

/// Inverse of [`encode`]: a row-major `(n, ndim)` array of coordinates. Fails when a code
/// is `>= 2^(ndim * nbits)` (the error names the first offending row).
pub fn decode<T: Coord>(
    codes: &[T],
    nbits: i64,
    ndim: usize,
    order: AxisOrder,
) -> Result<Vec<u64>> {
    let msb = order == AxisOrder::Msb;
    if ndim == 2 || ndim == 3 {
        return fast::decode::<T, u64>(
            codes,
            ndim,
            nbits,
            fast::Curve::Morton { msb },
            false,
            "code",
        );
    }
    let nbits = check_width(ndim, nbits)?;
    let total = nbits * ndim as u32;
    match ndim {
        1 => decode_rows(codes, 1, total, "code", |h, o| o[0] = h),
        _ => decode_rows(codes, ndim, total, "code", move |h, o| {
            for (i, slot) in o.iter_mut().enumerate() {
                let pos = if msb { ndim - 1 - i } else { i };
                *slot = gather(h >> pos, ndim, nbits);
            }
        }),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn naive(row: &[u64], nbits: u32, order: AxisOrder) -> u64 {
        let d = row.len();
        let mut code = 0u64;
        for b in 0..nbits as usize {
            for (i, &v) in row.iter().enumerate() {
                let pos = if order == AxisOrder::Msb {
                    d - 1 - i
                } else {
                    i
                };
                code |= ((v >> b) & 1) << (b * d + pos);
            }
        }
        code
    }

    #[test]
    fn spreads_are_inverse() {
        for x in [0u64, 1, 0x1234_5678, 0xFFFF_FFFF] {
            assert_eq!(compact1by1(part1by1(x)), x);
        }
        for x in [0u64, 1, 0x12_3456, 0x1F_FFFF] {
            assert_eq!(compact1by2(part1by2(x)), x);
        }
        assert_eq!(part1by1(0xFFFF_FFFF), 0x5555_5555_5555_5555);
        assert_eq!(part1by2(0x1F_FFFF), 0x1249_2492_4924_9249);
    }

    #[test]
    fn large_widths_do_not_collide() {
        // S1: (65536, 0) with nbits 21 is bit 16 of x -> bit 32 of the code.
        let c = encode(
            &[65536u64, 0, (1 << 20) - 1, (1 << 16) - 1],
            2,
            21,
            AxisOrder::Lsb,
        )
        .unwrap();
        assert_eq!(c[0], 1 << 32);
        assert_ne!(c[0], c[1]);
    }

    #[test]
    fn rejects_out_of_range_and_width() {
        assert!(encode(&[4u32, 0], 2, 2, AxisOrder::Lsb).is_err());
        assert!(encode(&[-1i32, 0], 2, 2, AxisOrder::Lsb).is_err());
        assert!(encode(&[0u8; 3], 3, 22, AxisOrder::Lsb).is_err());
        assert!(decode(&[16u64], 2, 2, AxisOrder::Lsb).is_err());
        // 64-bit codes and coordinates: a negative value passes the range check as a u64;
        // it is refused by its sign, naming its row.
        let e = decode(&[1i64, -2, 3], 1, 64, AxisOrder::Lsb).err();
        assert!(format!("{e:?}").contains("row 1 has value -2"), "{e:?}");
        let e = decode(&[1i8, 2, -1], 4, 16, AxisOrder::Msb).err();
        assert!(format!("{e:?}").contains("row 2 has value -1"), "{e:?}");
        let e = encode(&[3i16, -1], 1, 64, AxisOrder::Lsb).err();
        assert!(
            format!("{e:?}").contains("row 1 (column 0) has value -1"),
            "{e:?}"
        );
    }

    proptest! {
        #[test]
        fn matches_naive_and_round_trips(
            ndim in 1usize..10,
            seed in any::<u64>(),
            msb in any::<bool>(),
        ) {
            let order = if msb { AxisOrder::Msb } else { AxisOrder::Lsb };
            for nbits in 1..=(64 / ndim) as u32 {
                let rows: Vec<u64> = (0..8 * ndim as u64)
                    .map(|i| crate::rng::counter_u64(seed, nbits as u64, i) & super::super::low_mask(nbits))
                    .collect();
                let codes = encode(&rows, ndim, nbits as i64, order).unwrap();
                for (r, &c) in rows.chunks(ndim).zip(&codes) {
                    prop_assert_eq!(c, naive(r, nbits, order));
                }
                let back = decode(&codes, nbits as i64, ndim, order).unwrap();
                prop_assert_eq!(back, rows);
            }
        }
    }
}
