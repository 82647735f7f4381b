//! Distance conventions of an index ([`Metric`]), exact float distances, and the checks and
//! preparation (normalization under cosine) every float row goes through.

use rayon::prelude::*;

use super::codes::normalize_into;
use crate::{Error, Result};

/// Distance convention of an index. Returned distances: cosine `1 - cos(q, x)` in `[0, 2]`;
/// ip `1 - <q, x>` (hnswlib's convention); l2 the squared Euclidean distance (hnswlib, faiss).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Cosine,
    Ip,
    L2,
}

impl Metric {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "cosine" => Ok(Metric::Cosine),
            "ip" => Ok(Metric::Ip),
            "l2" => Ok(Metric::L2),
            _ => Err(Error::invalid(
                "metric",
                format!("unknown metric {s:?} (expected 'cosine', 'ip' or 'l2')"),
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Metric::Cosine => "cosine",
            Metric::Ip => "ip",
            Metric::L2 => "l2",
        }
    }
    pub(super) fn code(self) -> u8 {
        match self {
            Metric::Cosine => 0,
            Metric::Ip => 1,
            Metric::L2 => 2,
        }
    }
    pub(super) fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(Metric::Cosine),
            1 => Some(Metric::Ip),
            2 => Some(Metric::L2),
            _ => None,
        }
    }
}

#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

#[inline]
fn sqdist(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += (x - y) * (x - y);
    }
    s
}

/// Hints the CPU to load `vecs[start..start + len]` (every cache line of one float row).
#[inline(always)]
pub(super) fn prefetch_row(vecs: &[f32], start: usize, len: usize) {
    prefetch_lines(vecs.as_ptr().wrapping_add(start) as *const i8, len * 4);
}

/// Hints the CPU to load every cache line of `bytes`.
#[inline(always)]
pub(super) fn prefetch_bytes(bytes: &[u8]) {
    prefetch_lines(bytes.as_ptr() as *const i8, bytes.len());
}

#[inline(always)]
fn prefetch_lines(base: *const i8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..len).step_by(64) {
        // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
        unsafe {
            std::arch::x86_64::_mm_prefetch(base.wrapping_add(off), std::arch::x86_64::_MM_HINT_T0)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (base, len);
}

/// Exact distance in the metric's convention (vectors already normalized under cosine).
#[inline]
pub fn float_distance(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    match metric {
        Metric::Cosine => (1.0 - dot(a, b)).clamp(0.0, 2.0),
        Metric::Ip => 1.0 - dot(a, b),
        Metric::L2 => sqdist(a, b),
    }
}

/// Largest squared L2 norm of a row under `ip` and `l2`: a quarter of `f32::MAX`, so that
/// `|a - b|^2 <= 2|a|^2 + 2|b|^2` and `|<a, b>|` stay finite in float32.
pub const MAX_SQUARED_NORM: f64 = f32::MAX as f64 / 4.0;

/// Checks that every value is finite, under cosine that no row is zero, and under `ip` and
/// `l2` that no squared norm exceeds [`MAX_SQUARED_NORM`].
pub fn validate_rows(x: &[f32], dim: usize, metric: Metric, arg: &'static str) -> Result<()> {
    for (r, row) in x.chunks_exact(dim.max(1)).enumerate() {
        if let Some(c) = row.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(
                arg,
                format!("row {r} has a non-finite value ({}) at column {c}", row[c]),
            ));
        }
        if metric != Metric::Cosine {
            let ss: f64 = row.iter().map(|&v| (v as f64) * (v as f64)).sum();
            if ss > MAX_SQUARED_NORM {
                return Err(Error::invalid(
                    arg,
                    format!(
                        "row {r} has squared norm {ss:.3e}, too large for float32 distances \
                         (at most {MAX_SQUARED_NORM:.3e}); rescale the data"
                    ),
                ));
            }
        }
        if metric == Metric::Cosine && row.iter().all(|&v| v == 0.0) {
            return Err(Error::invalid(
                arg,
                format!("row {r} is a zero vector, which has no direction under cosine"),
            ));
        }
    }
    Ok(())
}

/// Rows as stored for reranking: normalized under cosine, as given otherwise.
pub(super) fn prepare_rows(x: &[f32], dim: usize, metric: Metric) -> Vec<f32> {
    let mut out = x.to_vec();
    if metric == Metric::Cosine {
        let f = |(src, dst): (&[f32], &mut [f32])| {
            normalize_into(src, dst);
        };
        if x.len() / dim.max(1) >= 1024 {
            x.par_chunks_exact(dim)
                .zip(out.par_chunks_exact_mut(dim))
                .for_each(f);
        } else {
            x.chunks_exact(dim)
                .zip(out.chunks_exact_mut(dim))
                .for_each(f);
        }
    }
    out
}
