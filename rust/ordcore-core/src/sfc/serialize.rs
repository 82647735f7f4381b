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

/// Where the voxel grid starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The per-axis minimum over all points of the batch (Point Transformer V3's
    /// `coord - coord.min(0)`).
    Global,
    /// The per-axis minimum over the points of each cloud (batch id) separately.
    PerCloud,
}

impl Origin {
    /// Parses `"global"` or `"per_cloud"`.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "global" => Origin::Global,
            "per_cloud" => Origin::PerCloud,
            other => {
                return Err(Error::invalid(
                    "origin",
                    format!("unknown origin {other:?}; expected \"global\" or \"per_cloud\""),
                ))
            }
        })
    }
}

/// The result of [`serialize`].
pub struct Serialized {
    /// Code per point: `batch << (3 * depth) | curve code`.
    pub code: Vec<u64>,
    /// Point indices sorted by code (a stable sort: ties by index).
    pub order: Vec<i64>,
    /// The inverse permutation of `order`.
    pub inverse: Vec<i64>,
    /// Bits per axis used for the codes.
    pub depth: u32,
}

/// Largest accepted depth: `3 * depth` code bits must fit in a `u64`.
pub const MAX_DEPTH: u32 = 21;

/// Points per interrupt check and per parallel task.
const CHUNK: usize = 1 << 14;

/// Serializes `points` (row-major `(n, 3)`, `f32`), optionally with a batch id per point.
///
/// Grid coordinates are `trunc((p - min) / grid_size)` computed in `f32` as Point
/// Transformer V3 does on the CPU, with `min` the per-axis minimum over all points
/// ([`Origin::Global`], PTv3) or over the points of each batch id ([`Origin::PerCloud`]),
/// and `grid_size` rounded to `f32`. `depth = None` picks PTv3's adaptive depth,
/// `bit_length(max grid coordinate + 1)` (Pointcept `Point.serialization`).
///
/// Fails on non-finite points or `grid_size`, `grid_size <= 0` (also after rounding to
/// `f32`), `depth` outside `1..=21`, grid coordinates `>= 2^depth` (for the adaptive
/// depth, `>= 2^21 - 1`, which would make it 22), batch ids that do not fit in the
/// `64 - 3 * depth` high bits, too little memory, or an interrupt.
pub fn serialize(
    points: &[f32],
    batch: Option<&[u64]>,
    grid_size: f64,
    depth: Option<i64>,
    order: SerOrder,
    origin: Origin,
) -> Result<Serialized> {
    let gs = grid_size as f32;
    ensure!(
        grid_size.is_finite() && grid_size > 0.0 && gs.is_finite() && gs > 0.0,
        "grid_size",
        "must be a finite number > 0 (also as float32), got {grid_size}"
    );
    if let Some(d) = depth {
        ensure!(
            (1..=MAX_DEPTH as i64).contains(&d),
            "depth",
            "must be between 1 and 21 (3 * depth bits must fit in a uint64), got {d}"
        );
    }
    let n = points.len() / 3;
    if let Some(b) = batch {
        ensure!(
            b.len() == n,
            "batch",
            "has {} entries but points has {n} rows",
            b.len()
        );
    }
    // grid (12 B), code (8), sort keys (16), order (8), inverse (8), slot (8) per point.
    crate::memory::ensure_fits("points", n as u128 * 60)?;
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
    crate::interrupt::check()?;

    // Grid origins: one for the whole batch, or one per batch id (dense table when the ids
    // are small, a map otherwise).
    let (mins, slot) = origins(points, batch, origin);
    let min_of = |i: usize| -> &[f32; 3] {
        if slot.is_empty() {
            &mins[0]
        } else {
            &mins[slot[i]]
        }
    };

    // Grid coordinates, saturated at 2^21 (too large for any depth).
    let cap = 1u32 << MAX_DEPTH;
    let grid_chunk = |(ci, g): (usize, &mut [[u32; 3]])| -> Result<u32> {
        crate::interrupt::check()?;
        let mut mx = 0u32;
        for (k, gi) in g.iter_mut().enumerate() {
            let i = ci * CHUNK + k;
            let m = min_of(i);
            for a in 0..3 {
                let v = ((points[3 * i + a] - m[a]) / gs).trunc();
                let v = if v < cap as f32 { v as u32 } else { cap };
                gi[a] = v;
                mx = mx.max(v);
            }
        }
        Ok(mx)
    };
    let mut grid = vec![[0u32; 3]; n];
    let gmax = if n >= crate::PARALLEL_THRESHOLD {
        grid.par_chunks_mut(CHUNK)
            .enumerate()
            .map(grid_chunk)
            .try_reduce(|| 0, |a, b| Ok(a.max(b)))?
    } else {
        grid.chunks_mut(CHUNK)
            .enumerate()
            .map(grid_chunk)
            .try_fold(0, |a, b| b.map(|b| a.max(b)))?
    };
    let adaptive = depth.is_none();
    let depth = match depth {
        Some(d) => d as u32,
        // Pointcept: int(grid_coord.max() + 1).bit_length().
        None => (64 - (gmax as u64 + 1).leading_zeros()).min(MAX_DEPTH + 1),
    };
    if depth > MAX_DEPTH || gmax as u64 >= 1u64 << depth {
        // The first row holding a coordinate that breaks the depth: for the adaptive depth,
        // one whose bit_length(v + 1) exceeds 21 (v >= 2^21 - 1), else one >= 2^depth.
        let breaks = |v: u32| {
            if adaptive {
                v as u64 + 1 >= 1u64 << MAX_DEPTH
            } else {
                v as u64 >= 1u64 << depth
            }
        };
        let (row, v) = grid
            .iter()
            .enumerate()
            .find_map(|(i, g)| g.iter().copied().find(|&v| breaks(v)).map(|v| (i, v)))
            .expect("the largest grid coordinate is in some row");
        let m = min_of(row);
        let r = &points[3 * row..3 * row + 3];
        let value = if v < cap {
            v.to_string()
        } else {
            format!("2^{MAX_DEPTH} or more")
        };
        let why = if !adaptive {
            format!(
                "at or above 2^depth = {} (depth = {depth}); increase grid_size or depth",
                1u64 << depth
            )
        } else if v < cap {
            format!(
                "which makes the adaptive depth int(max + 1).bit_length() = {}, and the \
                 adaptive depth cannot exceed {MAX_DEPTH}; pass depth={MAX_DEPTH} (it holds \
                 coordinates up to 2^{MAX_DEPTH} - 1) or increase grid_size",
                MAX_DEPTH + 1
            )
        } else {
            format!(
                "at or above 2^{MAX_DEPTH} (the adaptive depth cannot exceed {MAX_DEPTH}); \
                 increase grid_size"
            )
        };
        return Err(Error::invalid(
            "points",
            format!(
                "row {row} = [{}, {}, {}] has a grid coordinate trunc((p - min) / grid_size) \
                 of {value} with min = [{}, {}, {}], {why}",
                r[0], r[1], r[2], m[0], m[1], m[2]
            ),
        ));
    }
    let batch_bits = 64 - 3 * depth;
    if let Some(b) = batch {
        if let Some((row, &v)) = b.iter().enumerate().find(|(_, &v)| v >> batch_bits != 0) {
            return Err(Error::invalid(
                "batch",
                format!(
                    "row {row} has batch id {v}, which does not fit in the {batch_bits} bit{} left \
                     above 3 * depth = {} code bits (use a smaller depth or grid)",
                    if batch_bits == 1 { "" } else { "s" },
                    3 * depth
                ),
            ));
        }
    }

    let table = hilbert::Table::get(3);
    let code_of = |g: &[u32; 3]| -> u64 {
        let [x, y, z] = g.map(u64::from);
        match order {
            SerOrder::Z => (part1by2(x) << 2) | (part1by2(y) << 1) | part1by2(z),
            SerOrder::ZTrans => (part1by2(y) << 2) | (part1by2(x) << 1) | part1by2(z),
            SerOrder::Hilbert => table.encode(&[x, y, z], depth),
            SerOrder::HilbertTrans => table.encode(&[y, x, z], depth),
        }
    };
    let code_chunk = |(ci, (c, g)): (usize, (&mut [u64], &[[u32; 3]]))| -> Result<()> {
        crate::interrupt::check()?;
        for (k, (ci_, gi)) in c.iter_mut().zip(g).enumerate() {
            let hi = batch.map_or(0, |b| b[ci * CHUNK + k] << (3 * depth));
            *ci_ = code_of(gi) | hi;
        }
        Ok(())
    };
    let mut code = vec![0u64; n];
    if n >= crate::PARALLEL_THRESHOLD {
        code.par_chunks_mut(CHUNK)
            .zip(grid.par_chunks(CHUNK))
            .enumerate()
            .try_for_each(code_chunk)?;
    } else {
        code.chunks_mut(CHUNK)
            .zip(grid.chunks(CHUNK))
            .enumerate()
            .try_for_each(code_chunk)?;
    }
    drop(grid);
    crate::interrupt::check()?;

    // A stable argsort: (code, index) pairs sorted, so ties keep index order.
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
    crate::interrupt::check()?;
    let mut inverse = vec![0i64; n];
    for (rank, &i) in order_idx.iter().enumerate() {
        inverse[i as usize] = rank as i64;
    }
    Ok(Serialized {
        code,
        order: order_idx,
        inverse,
        depth,
    })
}

/// Per-axis grid origins and, for [`Origin::PerCloud`] with a batch, the origin slot of
/// each point (empty when every point uses `mins[0]`).
fn origins(points: &[f32], batch: Option<&[u64]>, origin: Origin) -> (Vec<[f32; 3]>, Vec<usize>) {
    let min_into = |m: &mut [f32; 3], r: &[f32]| {
        for a in 0..3 {
            m[a] = m[a].min(r[a]);
        }
    };
    match (batch, origin) {
        (Some(b), Origin::PerCloud) => {
            let n = b.len();
            let max = b.iter().copied().max().unwrap_or(0);
            let mut ids: HashMap<u64, usize> = HashMap::new();
            let dense = max as usize <= 4 * n + 1024;
            let slot: Vec<usize> = if dense {
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
            let mut m = vec![[f32::INFINITY; 3]; groups];
            for (r, &s) in points.chunks_exact(3).zip(&slot) {
                min_into(&mut m[s], r);
            }
            (m, slot)
        }
        _ => {
            let mut m = [f32::INFINITY; 3];
            for r in points.chunks_exact(3) {
                min_into(&mut m, r);
            }
            (vec![m], Vec::new())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_bits_and_order() {
        let pts = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 5.0, 5.0, 5.0, 5.5, 5.0, 5.0];
        let b = [0u64, 0, 1, 1];
        let s = serialize(&pts, Some(&b), 1.0, Some(16), SerOrder::Z, Origin::PerCloud).unwrap();
        // Per-cloud minima: both clouds start at grid (0, 0, 0).
        assert_eq!(s.code, vec![0, 4, 1 << 48, 1 << 48]);
        assert_eq!(s.depth, 16);
        // Global minimum and adaptive depth: grid max 5 -> bit_length(6) = 3.
        let s = serialize(&pts, Some(&b), 1.0, None, SerOrder::Z, Origin::Global).unwrap();
        assert_eq!(s.depth, 3);
        assert_eq!(s.code[0], 0);
        assert_eq!(s.code[2], (1 << 9) | 0b111_000_111);
        assert_eq!(s.order, vec![0, 1, 2, 3]);
        assert_eq!(s.inverse, vec![0, 1, 2, 3]);
    }

    #[test]
    fn rejects_bad_input() {
        let g = Origin::Global;
        assert!(serialize(&[f32::NAN, 0.0, 0.0], None, 1.0, Some(16), SerOrder::Z, g).is_err());
        assert!(serialize(&[0.0; 3], None, 0.0, Some(16), SerOrder::Z, g).is_err());
        assert!(serialize(&[0.0; 3], None, 1e-60, None, SerOrder::Z, g).is_err());
        assert!(serialize(&[0.0; 3], None, 1.0, Some(22), SerOrder::Z, g).is_err());
        let far = [0.0, 0.0, 0.0, 4.0, 0.0, 0.0];
        assert!(serialize(&far, None, 1.0, Some(2), SerOrder::Z, g).is_err());
        let far = [0.0, 0.0, 0.0, 3e6, 0.0, 0.0];
        assert!(serialize(&far, None, 1.0, None, SerOrder::Z, g).is_err());
        assert!(serialize(&[0.0; 3], Some(&[1 << 16]), 1.0, Some(16), SerOrder::Z, g).is_err());
        assert!(Origin::parse("local").is_err());
        assert!(SerOrder::parse("zz").is_err());
    }
}
