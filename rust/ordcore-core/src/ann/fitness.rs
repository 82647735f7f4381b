//! Code-space fitness of data: how well the code ranking recovers the exact neighbours.

use rayon::prelude::*;

use super::codes::{self, words_for};
use super::encode::{column_mean, encode_rows};
use super::metric::{float_distance, prepare_rows, validate_rows, Metric};
use super::rotation::Rotation;
use crate::{ensure, Result};

/// Recall@k of the code-space ranking against the exact ranking on `x` (each row against
/// all others), with or without a rotation seeded by `rotation_seed`.
pub fn fitness_recall(
    x: &[f32],
    dim: usize,
    metric: Metric,
    bits: usize,
    k: usize,
    rotation_seed: Option<u64>,
) -> Result<f64> {
    ensure!(bits == 1 || bits == 2, "bits", "must be 1 or 2, got {bits}");
    validate_rows(x, dim, metric, "X")?;
    let n = x.len() / dim.max(1);
    ensure!(n > k, "X", "needs more than k = {k} rows, got {n}");
    let rows = prepare_rows(x, dim, metric);
    let rot = match rotation_seed {
        Some(seed) => Some(Rotation::new(dim, seed, column_mean(&rows, dim))?),
        None => None,
    };
    let codes = encode_rows(&rows, dim, bits, metric, rot.as_ref())?;
    let code_dim = rot.as_ref().map_or(dim, |r| r.padded_dim());
    let cw = bits * words_for(code_dim);
    let hits: usize = (0..n)
        .into_par_iter()
        .map(|i| {
            let xi = &rows[i * dim..(i + 1) * dim];
            let ci = &codes[i * cw..(i + 1) * cw];
            let mut ex: Vec<(f32, u32)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    (
                        float_distance(metric, xi, &rows[j * dim..(j + 1) * dim]),
                        j as u32,
                    )
                })
                .collect();
            ex.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut cd: Vec<(u32, u32)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    (
                        codes::code_distance(ci, &codes[j * cw..(j + 1) * cw], code_dim, bits),
                        j as u32,
                    )
                })
                .collect();
            cd.sort_unstable();
            let truth: std::collections::HashSet<u32> = ex[..k].iter().map(|e| e.1).collect();
            cd[..k].iter().filter(|e| truth.contains(&e.1)).count()
        })
        .sum();
    Ok(hits as f64 / (n * k) as f64)
}
