//! Encoding float rows into codes (through the optional rotation), for the index and the
//! public encoder.

use rayon::prelude::*;

use super::codes::{encode_one, words_for};
use super::metric::{prepare_rows, validate_rows, Metric};
use super::rotation::Rotation;
use super::sq::{self, SqLayout, SqMetric};
use crate::{ensure, Result};

/// Words of one stored code of `bits` at code dimension `code_dim` (1 and 2 bits: planes of
/// [`words_for`] words; 4 and 8 bits: the scalar layout of [`super::sq`]).
pub(super) fn code_words(code_dim: usize, bits: usize) -> usize {
    if bits <= 2 {
        bits * words_for(code_dim)
    } else {
        SqLayout::new(code_dim, bits).code_words()
    }
}

/// The scalar codes' metric family.
pub(super) fn sq_metric(metric: Metric) -> SqMetric {
    match metric {
        Metric::L2 => SqMetric::L2,
        Metric::Cosine | Metric::Ip => SqMetric::Dot,
    }
}

/// The exact term of a scalar query form or code (`row` prepared, `t` its transform; see
/// [`super::sq`]): `|t|^2` under l2, `<m, row - m>` under cosine / ip (0 without a
/// rotation); for a query form the other `<row, m>`. A code under l2 stores the squared norm
/// of its decoded vector instead ([`encode_rows`]).
pub(super) fn sq_term(
    metric: Metric,
    row: &[f32],
    t: &[f32],
    rot: Option<&Rotation>,
    query: bool,
) -> f32 {
    let dot =
        |a: &[f32], b: &[f32]| -> f64 { a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum() };
    match (metric, rot) {
        (Metric::L2, _) => dot(t, t) as f32,
        (_, None) => 0.0,
        (_, Some(r)) => {
            let m = r.mean();
            let rm = dot(row, m);
            if query {
                rm as f32
            } else {
                (rm - dot(m, m)) as f32
            }
        }
    }
}

/// Encodes prepared rows (optionally through a rotation) into codes of `bits` (1 or 2:
/// sign-magnitude planes; 4 or 8: scalar codes).
pub(super) fn encode_rows(
    rows: &[f32],
    dim: usize,
    bits: usize,
    metric: Metric,
    rot: Option<&Rotation>,
) -> Result<Vec<u64>> {
    let code_dim = rot.map_or(dim, |r| r.padded_dim());
    let cw = code_words(code_dim, bits);
    let n = rows.len() / dim.max(1);
    let mut codes = vec![0u64; n * cw];
    let work = |(row, out): (&[f32], &mut [u64])| -> Result<()> {
        crate::interrupt::check()?;
        let mut buf = Vec::new();
        let t = match rot {
            None => row,
            Some(r) => {
                buf.resize(code_dim, 0f32);
                r.apply(row, &mut buf)?;
                &buf[..]
            }
        };
        if bits <= 2 {
            encode_one(t, bits, out);
        } else {
            let layout = SqLayout::new(code_dim, bits);
            let extra = sq_term(metric, row, t, rot, false);
            sq::encode(t, extra, layout, out);
            if metric == Metric::L2 {
                // Under l2 the code carries the squared norm of what it holds, not `|t|^2`
                // (see [`super::sq`]): known only once coded.
                let mut dec = vec![0f32; code_dim];
                sq::decode(out, layout, &mut dec);
                let norm: f64 = dec.iter().map(|&v| v as f64 * v as f64).sum();
                sq::encode(t, norm as f32, layout, out);
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
    let n = (x.len() / dim) as u128;
    // The prepared rows and the codes.
    crate::memory::ensure_fits(
        "X",
        n * (dim as u128 * 4 + (bits * words_for(dim)) as u128 * 8),
    )?;
    encode_rows(&prepare_rows(x, dim, metric), dim, bits, metric, None)
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
