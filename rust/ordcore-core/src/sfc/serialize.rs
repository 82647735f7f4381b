//! Point-cloud serialization in the manner of Point Transformer V3 (Wu et al., CVPR 2024,
//! arXiv:2312.10035; Pointcept's `serialization/default.py`): voxel (grid) coordinates,
//! a space-filling-curve code per point with the batch id in the high bits, and the sort
//! order of the codes.

use std::collections::HashMap;

use rayon::prelude::*;

use super::hilbert;
use super::morton::part1by2;
use crate::{ensure, Error, Result};

/// The serialization orders of Point Transformer V3.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SerOrder {
    /// Z-order of `(x, y, z)`, `x` in the most significant bit of each 3-bit group.
    Z,
    /// Z-order of `(y, x, z)`.
    ZTrans,
    /// Hilbert index of `(x, y, z)` (Skilling's curve, as `hilbertcurve` with n = 3).
    Hilbert,
    /// Hilbert index of `(y, x, z)`.
    HilbertTrans,
}

impl SerOrder {
    /// Parses `"z"`, `"z-trans"`, `"hilbert"` or `"hilbert-trans"`.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "z" => SerOrder::Z,
            "z-trans" => SerOrder::ZTrans,
            "hilbert" => SerOrder::Hilbert,
            "hilbert-trans" => SerOrder::HilbertTrans,
            other => {
                return Err(Error::invalid(
                    "order",
                    format!(
                        "unknown serialization order {other:?}; expected one of \"z\", \
                         \"z-trans\", \"hilbert\", \"hilbert-trans\""
                    ),
                ))
            }
        })
    }
}

/// The result of [`serialize`].
pub struct Serialized {
    /// Code per point: `batch << (3 * depth) | curve code`.
    pub code: Vec<u64>,
    /// Point indices sorted by code (ties by index).
    pub order: Vec<i64>,
    /// The inverse permutation of `order`.
    pub inverse: Vec<i64>,
}

/// Serializes `points` (row-major `(n, 3)`), optionally with a batch id per point.
///
/// Grid coordinates are `floor((p - min_b) / grid_size)` with `min_b` the per-axis minimum
/// over the points of the same batch, computed in `f64`. Fails on non-finite points or
/// `grid_size`, `grid_size <= 0`, `depth` outside `1..=21`, grid coordinates `>= 2^depth`,
/// and batch ids that do not fit in the `64 - 3 * depth` high bits.
pub fn serialize(
    points: &[f64],
    batch: Option<&[u64]>,
    grid_size: f64,
    depth: i64,
    order: SerOrder,
) -> Result<Serialized> {
    ensure!(
        grid_size.is_finite() && grid_size > 0.0,
        "grid_size",
        "must be a finite number > 0, got {grid_size}"
    );
    ensure!(
        (1..=21).contains(&depth),
        "depth",
        "must be in 1..=21 (3 * depth bits must fit in a uint64), got {depth}"
    );
    let depth = depth as u32;
    let n = points.len() / 3;
    if let Some(b) = batch {
        ensure!(
            b.len() == n,
            "batch",
            "has {} entries but points has {n} rows",
            b.len()
        );
    }
    if let Some(row) = points
        .chunks_exact(3)
        .position(|r| !r.iter().all(|v| v.is_finite()))
    {
        let r = &points[3 * row..3 * row + 3];
        return Err(Error::invalid(
            "points",
            format!("row {row} is not finite: [{}, {}, {}]", r[0], r[1], r[2]),
        ));
    }
    let batch_bits = 64 - 3 * depth;
    if let Some(b) = batch {
        if let Some((row, &v)) = b.iter().enumerate().find(|(_, &v)| v >> batch_bits != 0) {
            return Err(Error::invalid(
                "batch",
                format!(
                    "row {row} has batch id {v}, which does not fit in the {batch_bits} bits left \
                     above 3 * depth = {} code bits (use a smaller depth)",
                    3 * depth
                ),
            ));
        }
    }

    // Per-batch minima: dense table when the ids are small, a map otherwise.
    let mins: Vec<[f64; 3]>;
    let slot: Vec<usize>;
    match batch {
        None => {
            let mut m = [f64::INFINITY; 3];
            for r in points.chunks_exact(3) {
                for a in 0..3 {
                    m[a] = m[a].min(r[a]);
                }
            }
            mins = vec![m];
            slot = Vec::new();
        }
        Some(b) => {
            let max = b.iter().copied().max().unwrap_or(0);
            let mut ids: HashMap<u64, usize> = HashMap::new();
            let dense = max as usize <= 4 * n + 1024;
            slot = if dense {
                b.iter().map(|&v| v as usize).collect()
            } else {
                b.iter()
                    .map(|&v| {
                        let k = ids.len();
                        *ids.entry(v).or_insert(k)
                    })
                    .collect()
            };
            let groups = if dense { max as usize + 1 } else { ids.len() };
            let mut m = vec![[f64::INFINITY; 3]; groups];
            for (r, &s) in points.chunks_exact(3).zip(&slot) {
                for a in 0..3 {
                    m[s][a] = m[s][a].min(r[a]);
                }
            }
            mins = m;
        }
    }

    let limit = (1u64 << depth) as f64;
    let grid_of = |i: usize| -> std::result::Result<[u64; 3], usize> {
        let m = if slot.is_empty() {
            &mins[0]
        } else {
            &mins[slot[i]]
        };
        let mut g = [0u64; 3];
        for a in 0..3 {
            let v = ((points[3 * i + a] - m[a]) / grid_size).floor();
            if v >= limit {
                return Err(i);
            }
            g[a] = v as u64;
        }
        Ok(g)
    };
    let code_of = |g: [u64; 3]| -> u64 {
        let [x, y, z] = g;
        match order {
            SerOrder::Z => (part1by2(x) << 2) | (part1by2(y) << 1) | part1by2(z),
            SerOrder::ZTrans => (part1by2(y) << 2) | (part1by2(x) << 1) | part1by2(z),
            SerOrder::Hilbert => hilbert::Table::get(3).encode(&[x, y, z], depth),
            SerOrder::HilbertTrans => hilbert::Table::get(3).encode(&[y, x, z], depth),
        }
    };
    let one = |i: usize| -> std::result::Result<u64, usize> {
        let c = code_of(grid_of(i)?);
        Ok(match batch {
            Some(b) => c | (b[i] << (3 * depth)),
            None => c,
        })
    };
    let codes: std::result::Result<Vec<u64>, usize> = if n >= crate::PARALLEL_THRESHOLD {
        (0..n).into_par_iter().map(one).collect()
    } else {
        (0..n).map(one).collect()
    };
    let code =
        codes.map_err(|_| {
            // Report the first offending row (the parallel collect may stop at any of them).
            let row = (0..n).find(|&i| grid_of(i).is_err()).unwrap_or(0);
            let m = if slot.is_empty() {
                mins[0]
            } else {
                mins[slot[row]]
            };
            let r = &points[3 * row..3 * row + 3];
            Error::invalid(
                "points",
                format!(
                "row {row} = [{}, {}, {}] has grid coordinates floor((p - min) / grid_size) with \
                 min = [{}, {}, {}] at or above 2^depth = {} (depth = {depth}); increase \
                 grid_size or depth",
                r[0], r[1], r[2], m[0], m[1], m[2], 1u64 << depth
            ),
            )
        })?;

    let order_idx: Vec<i64> = if n <= u32::MAX as usize {
        let mut keyed: Vec<(u64, u32)> = code
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, i as u32))
            .collect();
        if n >= crate::PARALLEL_THRESHOLD {
            keyed.par_sort_unstable();
        } else {
            keyed.sort_unstable();
        }
        keyed.iter().map(|&(_, i)| i as i64).collect()
    } else {
        let mut idx: Vec<i64> = (0..n as i64).collect();
        idx.par_sort_by_key(|&i| (code[i as usize], i));
        idx
    };
    let mut inverse = vec![0i64; n];
    for (rank, &i) in order_idx.iter().enumerate() {
        inverse[i as usize] = rank as i64;
    }
    Ok(Serialized {
        code,
        order: order_idx,
        inverse,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_bits_and_order() {
        let pts = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 5.0, 5.0, 5.0, 5.5, 5.0, 5.0];
        let b = [0u64, 0, 1, 1];
        let s = serialize(&pts, Some(&b), 1.0, 16, SerOrder::Z).unwrap();
        // Per-batch minima: both batches start at grid (0, 0, 0).
        assert_eq!(s.code, vec![0, 4, 1 << 48, 1 << 48]);
        assert_eq!(s.order, vec![0, 1, 2, 3]);
        assert_eq!(s.inverse, vec![0, 1, 2, 3]);
    }

    #[test]
    fn rejects_bad_input() {
        assert!(serialize(&[f64::NAN, 0.0, 0.0], None, 1.0, 16, SerOrder::Z).is_err());
        assert!(serialize(&[0.0; 3], None, 0.0, 16, SerOrder::Z).is_err());
        assert!(serialize(&[0.0; 3], None, 1.0, 22, SerOrder::Z).is_err());
        assert!(serialize(&[0.0, 0.0, 0.0, 4.0, 0.0, 0.0], None, 1.0, 2, SerOrder::Z).is_err());
        assert!(serialize(&[0.0; 3], Some(&[1 << 16]), 1.0, 16, SerOrder::Z).is_err());
        assert!(SerOrder::parse("zz").is_err());
    }
}
