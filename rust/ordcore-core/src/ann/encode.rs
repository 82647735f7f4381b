//! Encoding float rows into codes (through the optional rotation), for the index and the
//! public encoder.

use rayon::prelude::*;

use super::codes::{encode_one, words_for};
use super::metric::{prepare_rows, validate_rows, Metric};
use super::rotation::Rotation;
use crate::{ensure, Result};

/// Encodes prepared rows (optionally through a rotation) into codes of `bits` planes.
pub(super) fn encode_rows(
    rows: &[f32],
    dim: usize,
    bits: usize,
    rot: Option<&Rotation>,
) -> Result<Vec<u64>> {
    let code_dim = rot.map_or(dim, |r| r.padded_dim());
    let cw = bits * words_for(code_dim);
    let n = rows.len() / dim.max(1);
    let mut codes = vec![0u64; n * cw];
    let work = |(row, out): (&[f32], &mut [u64])| -> Result<()> {
        match rot {
            None => encode_one(row, bits, out),
            Some(r) => {
                let mut buf = vec![0f32; code_dim];
                r.apply(row, &mut buf)?;
                encode_one(&buf, bits, out);
            }
        }
        Ok(())
    };
    if cw == 0 {
        return Ok(codes);
    }
    if n >= 1024 {
        rows.par_chunks_exact(dim)
            .zip(codes.par_chunks_exact_mut(cw))
            .try_for_each(work)?;
    } else {
        rows.chunks_exact(dim)
            .zip(codes.chunks_exact_mut(cw))
            .try_for_each(work)?;
    }
    Ok(codes)
}

/// Public encoder: `(n, dim)` rows -> `(n, bits * words)` codes (normalized first under
/// cosine; no rotation).
pub fn encode(x: &[f32], dim: usize, bits: usize, metric: Metric) -> Result<Vec<u64>> {
    ensure!(bits == 1 || bits == 2, "bits", "must be 1 or 2, got {bits}");
    ensure!(dim >= 1, "dim", "must be at least 1");
    validate_rows(x, dim, metric, "X")?;
    encode_rows(&prepare_rows(x, dim, metric), dim, bits, None)
}

pub(super) fn column_mean(rows: &[f32], dim: usize) -> Vec<f32> {
    let n = rows.len() / dim.max(1);
    let mut acc = vec![0f64; dim];
    for row in rows.chunks_exact(dim) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += v as f64;
        }
    }
    acc.into_iter()
        .map(|a| (a / n.max(1) as f64) as f32)
        .collect()
}
