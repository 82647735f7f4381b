//! Compact rerank stores: the vectors the exact rerank reads, kept as float16, bfloat16 or
//! int8 instead of float32 (`rerank_dtype`).
//!
//! Row layouts (little-endian, rows back to back):
//! * `float16`: IEEE 754 binary16 per value, rounded to nearest even (as NumPy's
//!   `astype(np.float16)`); values beyond 65504 are refused when added, not turned into inf;
//! * `bfloat16`: the high 16 bits of the float32, rounded to nearest even;
//! * `int8`: a float32 scale `s = max_i |x_i| / 127`, then `round(x_i / s)` as int8 per
//!   value (`x_i ~ s q_i`).
//!
//! The rerank decodes a row to float32 and applies the index's float distance, so the
//! returned distances are the exact distances to the stored (rounded) vectors.

use crate::{Error, Result};

/// The element type of the rerank store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RerankDtype {
    Float32,
    Float16,
    Bfloat16,
    Int8,
}

impl RerankDtype {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "float32" => Ok(RerankDtype::Float32),
            "float16" => Ok(RerankDtype::Float16),
            "bfloat16" => Ok(RerankDtype::Bfloat16),
            "int8" => Ok(RerankDtype::Int8),
            _ => Err(Error::invalid(
                "rerank_dtype",
                format!(
                    "unknown rerank dtype {s:?} (expected 'float32', 'float16', 'bfloat16' or 'int8')"
                ),
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            RerankDtype::Float32 => "float32",
            RerankDtype::Float16 => "float16",
            RerankDtype::Bfloat16 => "bfloat16",
            RerankDtype::Int8 => "int8",
        }
    }
    /// The file's code for the dtype.
    pub fn code(self) -> u8 {
        match self {
            RerankDtype::Float32 => 0,
            RerankDtype::Float16 => 1,
            RerankDtype::Bfloat16 => 2,
            RerankDtype::Int8 => 3,
        }
    }
    pub fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(RerankDtype::Float32),
            1 => Some(RerankDtype::Float16),
            2 => Some(RerankDtype::Bfloat16),
            3 => Some(RerankDtype::Int8),
            _ => None,
        }
    }
    /// Bytes of one stored row of dimension `dim`.
    pub fn row_bytes(self, dim: usize) -> usize {
        match self {
            RerankDtype::Float32 => 4 * dim,
            RerankDtype::Float16 | RerankDtype::Bfloat16 => 2 * dim,
            RerankDtype::Int8 => 4 + dim,
        }
    }
}

/// Largest finite float16.
pub const F16_MAX: f32 = 65504.0;

/// `x` as binary16, rounded to nearest even (finite `x` with `|x| <= 65504`; larger values
/// give inf).
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let man = b & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // Subnormal (or zero) in binary16: shift the full mantissa, round to nearest even.
        if e < -10 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rest = m & ((1u32 << shift) - 1);
        let mut out = m >> shift;
        if rest > half || (rest == half && out & 1 == 1) {
            out += 1;
        }
        return sign | out as u16;
    }
    let mut out = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && out & 1 == 1) {
        out += 1; // a carry into the exponent is the correct rounding (up to inf)
    }
    sign | out as u16
}

/// binary16 to float32 (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h as u32) & 0x8000) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x3ff) as u32;
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: normalize.
            let lead = 31 - m.leading_zeros(); // position of the top set bit (0..9)
            let e = lead + 127 - 24;
            let m = (m << (23 - lead)) & 0x7f_ffff;
            sign | (e << 23) | m
        }
        (31, 0) => sign | 0x7f80_0000,
        (31, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// `x` as bfloat16, rounded to nearest even (finite `x`).
pub fn f32_to_bf16(x: f32) -> u16 {
    let b = x.to_bits();
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

pub fn bf16_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Checks that `x` can be stored as `dtype` (float16: every `|x_i| <= 65504`).
pub fn check_rows(dtype: RerankDtype, x: &[f32], dim: usize, arg: &'static str) -> Result<()> {
    if dtype != RerankDtype::Float16 {
        return Ok(());
    }
    for (r, row) in x.chunks_exact(dim.max(1)).enumerate() {
        if let Some(c) = row.iter().position(|v| v.abs() > F16_MAX) {
            return Err(Error::invalid(
                arg,
                format!(
                    "row {r} has the value {} at column {c}, beyond float16's range (65504); \
                     use rerank_dtype='bfloat16' or 'float32', or rescale the data",
                    row[c]
                ),
            ));
        }
    }
    Ok(())
}

/// Writes `row` in `dtype` into `out` (`dtype.row_bytes(row.len())` bytes).
pub fn encode_row(dtype: RerankDtype, row: &[f32], out: &mut [u8]) {
    match dtype {
        RerankDtype::Float32 => {
            for (o, v) in out.chunks_exact_mut(4).zip(row) {
                o.copy_from_slice(&v.to_le_bytes());
            }
        }
        RerankDtype::Float16 => {
            for (o, &v) in out.chunks_exact_mut(2).zip(row) {
                o.copy_from_slice(&f32_to_f16(v).to_le_bytes());
            }
        }
        RerankDtype::Bfloat16 => {
            for (o, &v) in out.chunks_exact_mut(2).zip(row) {
                o.copy_from_slice(&f32_to_bf16(v).to_le_bytes());
            }
        }
        RerankDtype::Int8 => {
            let amax = row.iter().fold(0f32, |a, &v| a.max(v.abs()));
            let s = amax / 127.0;
            let inv = if s > 0.0 { 1.0 / s } else { 0.0 };
            out[..4].copy_from_slice(&s.to_le_bytes());
            for (o, &v) in out[4..].iter_mut().zip(row) {
                *o = (v * inv).round().clamp(-127.0, 127.0) as i8 as u8;
            }
        }
    }
}

/// Whether float16 rows decode with the F16C conversion instruction: the CPU has it and the
/// scalar-code kernel in use is not capped at `scalar` (`ORDCORE_ANN_SQ_KERNEL`,
/// `ORDCORE_ANN_KERNEL=portable`), so that the portable path stays testable. Both give the
/// same floats: every binary16 value is exactly a float32, and `vcvtph2ps` converts exactly
/// (subnormals included; the stored rows are finite).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn has_f16c() -> bool {
    static F16C: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *F16C.get_or_init(|| {
        std::is_x86_feature_detected!("f16c")
            && std::is_x86_feature_detected!("avx")
            && super::sq::kernel() != super::sq::SqKernel::Scalar
    })
}

/// [`decode_row`] of a float16 row with F16C, 8 values per instruction. Measured on glosses
/// 20k (`benches/ann.py`, 1 thread, QPS at recall@10 0.95): 8-bit codes with the float16
/// store went from 0.84x the float32 store's QPS (48.5k against 57.5k, portable decode) to
/// 1.11x (54.2k against 48.7k, F16C) in the next run; 4-bit codes float16 62.1k against
/// float32 58.8k.
///
/// # Safety
/// The CPU supports F16C and AVX; `bytes` holds at least `2 * out.len()` bytes.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_row_f16c(bytes: &[u8], out: &mut [f32]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    let n = out.len();
    assert!(bytes.len() >= 2 * n);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: values `i..i + 8` lie inside both slices (checked above).
        unsafe {
            let h = _mm_loadu_si128(bytes.as_ptr().add(2 * i) as *const __m128i);
            _mm256_storeu_ps(out.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
        }
        i += 8;
    }
    for j in i..n {
        out[j] = f16_to_f32(u16::from_le_bytes([bytes[2 * j], bytes[2 * j + 1]]));
    }
}

/// Decodes one stored row (`dtype.row_bytes(out.len())` bytes) into `out`.
#[inline]
pub fn decode_row(dtype: RerankDtype, bytes: &[u8], out: &mut [f32]) {
    let two = |c: &[u8]| u16::from_le_bytes([c[0], c[1]]);
    match dtype {
        RerankDtype::Float32 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        RerankDtype::Float16 => {
            #[cfg(target_arch = "x86_64")]
            if has_f16c() {
                // SAFETY: the CPU supports F16C and AVX (checked at run time).
                return unsafe { f16_row_f16c(bytes, out) };
            }
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16_to_f32(two(c));
            }
        }
        RerankDtype::Bfloat16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = bf16_to_f32(two(c));
            }
        }
        RerankDtype::Int8 => {
            let s = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            for (o, &q) in out.iter_mut().zip(&bytes[4..]) {
                *o = s * q as i8 as f32;
            }
        }
    }
}

/// Compact rows: owned, or mapped from an index file.
pub enum RowBytes {
    Owned(Vec<u8>),
    Mapped {
        map: memmap2::Mmap,
        offset: usize,
        len: usize,
    },
}

/// A compact rerank store of rows of dimension `dim`.
pub struct CompactRows {
    pub dtype: RerankDtype,
    pub dim: usize,
    pub bytes: RowBytes,
}

impl CompactRows {
    pub fn new(dtype: RerankDtype, dim: usize) -> Self {
        CompactRows {
            dtype,
            dim,
            bytes: RowBytes::Owned(Vec::new()),
        }
    }
    pub fn as_bytes(&self) -> &[u8] {
        match &self.bytes {
            RowBytes::Owned(v) => v,
            RowBytes::Mapped { map, offset, len } => &map[*offset..*offset + *len],
        }
    }
    pub fn is_mapped(&self) -> bool {
        matches!(self.bytes, RowBytes::Mapped { .. })
    }
    /// The stored bytes of row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[u8] {
        let rb = self.dtype.row_bytes(self.dim);
        &self.as_bytes()[i * rb..(i + 1) * rb]
    }
    /// Row `i` decoded into `out` (length `dim`).
    #[inline]
    pub fn decode(&self, i: usize, out: &mut [f32]) {
        decode_row(self.dtype, self.row(i), out);
    }
    fn owned(&mut self) -> &mut Vec<u8> {
        if let RowBytes::Mapped { .. } = self.bytes {
            self.bytes = RowBytes::Owned(self.as_bytes().to_vec());
        }
        match &mut self.bytes {
            RowBytes::Owned(v) => v,
            RowBytes::Mapped { .. } => unreachable!(),
        }
    }
    /// Appends `rows` (row-major, `dim` per row), encoded.
    pub fn extend(&mut self, rows: &[f32]) {
        let (dtype, dim) = (self.dtype, self.dim);
        let rb = dtype.row_bytes(dim);
        let v = self.owned();
        let start = v.len();
        v.resize(start + rows.len() / dim.max(1) * rb, 0);
        for (row, out) in rows.chunks_exact(dim).zip(v[start..].chunks_exact_mut(rb)) {
            encode_row(dtype, row, out);
        }
    }
    /// A copy holding only the rows `keep` says to (in order).
    pub fn retained(&self, keep: &[bool]) -> CompactRows {
        let rb = self.dtype.row_bytes(self.dim);
        let src = self.as_bytes();
        let mut out = Vec::with_capacity(keep.iter().filter(|&&k| k).count() * rb);
        for (i, &k) in keep.iter().enumerate() {
            if k {
                out.extend_from_slice(&src[i * rb..(i + 1) * rb]);
            }
        }
        CompactRows {
            dtype: self.dtype,
            dim: self.dim,
            bytes: RowBytes::Owned(out),
        }
    }
    /// Keeps the first `n` rows.
    pub fn truncate_rows(&mut self, n: usize) {
        let len = n * self.dtype.row_bytes(self.dim);
        self.owned().truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float16_round_trips_and_rounds_to_nearest_even() {
        // Every binary16 value decodes and re-encodes to itself.
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                continue;
            }
            assert_eq!(f32_to_f16(f), h, "{h:#06x} -> {f}");
        }
        // Halfway cases go to the even neighbour; known values.
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
        assert_eq!(f32_to_f16(5.960_464_5e-8), 0x0001); // smallest subnormal
        assert_eq!(f32_to_f16(2.980_232_2e-8), 0x0000); // half of it: ties to even (0)
        assert_eq!(f32_to_f16(1e-10), 0);
    }

    /// The F16C row decode gives the bits of the portable decode for every finite binary16
    /// value (subnormals and signed zeros included), at every row length around the 8-wide
    /// step.
    #[test]
    fn float16_rows_decode_alike_with_and_without_f16c() {
        let finite: Vec<u16> = (0..=u16::MAX)
            .filter(|&h| f16_to_f32(h).is_finite())
            .collect();
        let bytes: Vec<u8> = finite.iter().flat_map(|h| h.to_le_bytes()).collect();
        let want: Vec<u32> = finite.iter().map(|&h| f16_to_f32(h).to_bits()).collect();
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("f16c") && std::is_x86_feature_detected!("avx") {
            for n in [1, 7, 8, 9, 15, 16, 17, finite.len()] {
                let mut out = vec![0f32; n];
                // SAFETY: the CPU supports F16C and AVX; `bytes` holds `2 * n` bytes or more.
                unsafe { f16_row_f16c(&bytes, &mut out) };
                let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
                assert_eq!(got, want[..n], "n = {n}");
            }
        }
        let mut out = vec![0f32; finite.len()];
        decode_row(RerankDtype::Float16, &bytes, &mut out);
        let got: Vec<u32> = out.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn bfloat16_rounds_to_nearest_even() {
        for h in 0..=u16::MAX {
            let f = bf16_to_f32(h);
            if f.is_nan() {
                continue;
            }
            assert_eq!(f32_to_bf16(f), h);
        }
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80); // tie -> even
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8001)), 0x3f81);
    }

    #[test]
    fn int8_rows_within_half_a_step() {
        let row: Vec<f32> = (0..37).map(|i| (i as f32 - 18.0) * 0.37).collect();
        let mut buf = vec![0u8; RerankDtype::Int8.row_bytes(37)];
        encode_row(RerankDtype::Int8, &row, &mut buf);
        let mut back = vec![0f32; 37];
        decode_row(RerankDtype::Int8, &buf, &mut back);
        let s = 18.0 * 0.37 / 127.0;
        for (a, b) in row.iter().zip(&back) {
            assert!((a - b).abs() <= 0.5 * s * 1.001);
        }
    }
}
