//! Scan orders of a `height x width` grid: permutations `p` of `0..height*width` such that
//! `tokens.reshape(-1, C)[p]` visits the cells (row-major indices `r * width + c`) in order.

use super::morton::part1by1;
use crate::{ensure, Error, Result};

/// The scan orders; see `ordcore.sfc.scan_order` for the precise definitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanKind {
    /// Row by row, left to right.
    Raster,
    /// Column by column, top to bottom.
    Column,
    /// Boustrophedon by rows: even rows left to right, odd rows right to left.
    Snake,
    /// Boustrophedon by columns: even columns top to bottom, odd columns bottom to top.
    SnakeColumn,
    /// Generalized Hilbert curve ("gilbert", J. Červený) for any rectangle.
    Hilbert,
    /// Cells sorted by the Morton code of `(column, row)` (column in the low bit).
    Morton,
    /// Clockwise spiral from the top-left corner inwards.
    Spiral,
    /// Anti-diagonals `r + c = 0, 1, ...`; even diagonals upwards (row decreasing), odd
    /// diagonals downwards (the JPEG zigzag).
    Diagonal,
}

impl ScanKind {
    /// Parses a kind name as used by the Python API.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "raster" => ScanKind::Raster,
            "column" => ScanKind::Column,
            "snake" => ScanKind::Snake,
            "snake_column" => ScanKind::SnakeColumn,
            "hilbert" => ScanKind::Hilbert,
            "morton" => ScanKind::Morton,
            "spiral" => ScanKind::Spiral,
            "diagonal" => ScanKind::Diagonal,
            other => {
                return Err(Error::invalid(
                    "kind",
                    format!(
                        "unknown scan order {other:?}; expected one of raster, column, snake, \
                         snake_column, hilbert, morton, spiral, diagonal"
                    ),
                ))
            }
        })
    }
}

/// The permutation for `kind` on a `height x width` grid (both at least 1).
pub fn scan_order(height: i64, width: i64, kind: ScanKind) -> Result<Vec<i64>> {
    ensure!(height >= 1, "height", "must be at least 1, got {height}");
    ensure!(width >= 1, "width", "must be at least 1, got {width}");
    let n = height
        .checked_mul(width)
        .filter(|&n| n <= 1 << 40)
        .ok_or_else(|| {
            Error::invalid(
                "height",
                format!("height * width = {height} * {width} is too large (limit 2^40 cells)"),
            )
        })?;
    let (h, w) = (height, width);
    let mut out: Vec<i64> = Vec::new();
    // Fallible reservation: an impossible size is an error, not an allocation abort.
    out.try_reserve_exact(n as usize).map_err(|_| {
        Error::invalid(
            "height",
            format!("cannot allocate the order of a {height} x {width} grid"),
        )
    })?;
    match kind {
        ScanKind::Raster => out.extend(0..n),
        ScanKind::Column => {
            for c in 0..w {
                out.extend((0..h).map(|r| r * w + c));
            }
        }
        ScanKind::Snake => {
            for r in 0..h {
                if r % 2 == 0 {
                    out.extend((0..w).map(|c| r * w + c));
                } else {
                    out.extend((0..w).rev().map(|c| r * w + c));
                }
            }
        }
        ScanKind::SnakeColumn => {
            for c in 0..w {
                if c % 2 == 0 {
                    out.extend((0..h).map(|r| r * w + c));
                } else {
                    out.extend((0..h).rev().map(|r| r * w + c));
                }
            }
        }
        ScanKind::Hilbert => gilbert(w, h, |x, y| out.push(y * w + x)),
        ScanKind::Morton => {
            ensure!(
                h <= 1 << 32 && w <= 1 << 32,
                "height",
                "morton scan needs height and width <= 2^32, got {h} x {w}"
            );
            let mut keyed: Vec<(u64, i64)> = (0..n)
                .map(|i| {
                    let (r, c) = ((i / w) as u64, (i % w) as u64);
                    (part1by1(c) | (part1by1(r) << 1), i)
                })
                .collect();
            keyed.sort_unstable();
            out.extend(keyed.into_iter().map(|(_, i)| i));
        }
        ScanKind::Spiral => {
            let (mut top, mut bottom, mut left, mut right) = (0i64, h - 1, 0i64, w - 1);
            while top <= bottom && left <= right {
                out.extend((left..=right).map(|c| top * w + c));
                out.extend((top + 1..=bottom).map(|r| r * w + right));
                if top < bottom {
                    out.extend((left..right).rev().map(|c| bottom * w + c));
                }
                if left < right {
                    out.extend((top + 1..bottom).rev().map(|r| r * w + left));
                }
                top += 1;
                bottom -= 1;
                left += 1;
                right -= 1;
            }
        }
        ScanKind::Diagonal => {
            for d in 0..(h + w - 1) {
                let rmin = (d - (w - 1)).max(0);
                let rmax = d.min(h - 1);
                if d % 2 == 0 {
                    out.extend((rmin..=rmax).rev().map(|r| r * w + (d - r)));
                } else {
                    out.extend((rmin..=rmax).map(|r| r * w + (d - r)));
                }
            }
        }
    }
    debug_assert_eq!(out.len() as i64, n);
    Ok(out)
}

/// Floor division by 2, as Python's `//` (the reference gilbert2d is written in Python and
/// its halving of negative extents rounds towards minus infinity).
#[inline]
fn half(v: i64) -> i64 {
    v.div_euclid(2)
}

/// Generalized Hilbert curve of a `width x height` rectangle ("gilbert2d", Jakub Červený,
/// 2019, https://github.com/jakubcerveny/gilbert), calling `visit(x, y)` for every cell in
/// curve order (`x` = column, `y` = row). The recursive construction runs on an explicit
/// stack, so no size can overflow the call stack, and there is no iteration cap.
///
/// It starts at `(0, 0)` and runs along the longer side first. All steps are between
/// 4-neighbours except one diagonal step when the longer side is odd and the shorter side
/// even and greater than 2: the path then ends at the far corner `(L-1, 0)`, which has the
/// colour of `(0, 0)` in the grid's checkerboard colouring while an even number of cells
/// needs ends of different colours. (A 2-wide strip ends at `(L-2, 0)` instead.)
pub fn gilbert(width: i64, height: i64, mut visit: impl FnMut(i64, i64)) {
    // A frame is (x, y, ax, ay, bx, by): origin, major axis vector, minor axis vector.
    let mut stack: Vec<[i64; 6]> = Vec::with_capacity(64);
    if width >= height {
        stack.push([0, 0, width, 0, 0, height]);
    } else {
        stack.push([0, 0, 0, height, width, 0]);
    }
    while let Some([x, y, ax, ay, bx, by]) = stack.pop() {
        let w = (ax + ay).abs();
        let h = (bx + by).abs();
        let (dax, day) = (ax.signum(), ay.signum());
        let (dbx, dby) = (bx.signum(), by.signum());
        if h == 1 {
            for i in 0..w {
                visit(x + i * dax, y + i * day);
            }
            continue;
        }
        if w == 1 {
            for i in 0..h {
                visit(x + i * dbx, y + i * dby);
            }
            continue;
        }
        let (mut ax2, mut ay2) = (half(ax), half(ay));
        let (mut bx2, mut by2) = (half(bx), half(by));
        let w2 = (ax2 + ay2).abs();
        let h2 = (bx2 + by2).abs();
        if 2 * w > 3 * h {
            if w2 % 2 == 1 && w > 2 {
                // Prefer even steps.
                ax2 += dax;
                ay2 += day;
            }
            // Long case: split in two parts only (pushed in reverse order).
            stack.push([x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by]);
            stack.push([x, y, ax2, ay2, bx, by]);
        } else {
            if h2 % 2 == 1 && h > 2 {
                bx2 += dbx;
                by2 += dby;
            }
            // Standard case: one step up, one long horizontal, one step down.
            stack.push([
                x + (ax - dax) + (bx2 - dbx),
                y + (ay - day) + (by2 - dby),
                -bx2,
                -by2,
                -(ax - ax2),
                -(ay - ay2),
            ]);
            stack.push([x + bx2, y + by2, ax, ay, bx - bx2, by - by2]);
            stack.push([x, y, bx2, by2, ax2, ay2]);
        }
    }
}

/// The inverse of a permutation `p` of `0..n` (`q[p[i]] = i`); fails naming the argument
/// `arg` and the first position where `p` is out of range or repeats a value.
pub fn inverse_permutation(p: &[i64], arg: &'static str) -> Result<Vec<i64>> {
    let n = p.len();
    let mut q = vec![-1i64; n];
    for (i, &v) in p.iter().enumerate() {
        ensure!(
            v >= 0 && (v as u64) < n as u64,
            arg,
            "{arg}[{i}] = {v} is outside [0, {n}): not a permutation"
        );
        ensure!(
            q[v as usize] < 0,
            arg,
            "value {v} appears twice (at positions {} and {i}): not a permutation",
            q[v as usize]
        );
        q[v as usize] = i as i64;
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [ScanKind; 8] = [
        ScanKind::Raster,
        ScanKind::Column,
        ScanKind::Snake,
        ScanKind::SnakeColumn,
        ScanKind::Hilbert,
        ScanKind::Morton,
        ScanKind::Spiral,
        ScanKind::Diagonal,
    ];

    #[test]
    fn every_kind_is_a_permutation() {
        for (h, w) in [
            (1, 1),
            (1, 9),
            (9, 1),
            (2, 3),
            (7, 5),
            (13, 17),
            (14, 14),
            (16, 16),
        ] {
            for k in KINDS {
                let p = scan_order(h, w, k).unwrap();
                let q = inverse_permutation(&p, "p").unwrap();
                assert_eq!(q.len() as i64, h * w, "{k:?} {h}x{w}");
            }
        }
    }

    #[test]
    fn small_examples() {
        assert_eq!(
            scan_order(2, 3, ScanKind::Snake).unwrap(),
            [0, 1, 2, 5, 4, 3]
        );
        assert_eq!(
            scan_order(2, 3, ScanKind::Column).unwrap(),
            [0, 3, 1, 4, 2, 5]
        );
        assert_eq!(
            scan_order(3, 3, ScanKind::Spiral).unwrap(),
            [0, 1, 2, 5, 8, 7, 6, 3, 4]
        );
        assert_eq!(
            scan_order(3, 3, ScanKind::Diagonal).unwrap(),
            [0, 1, 3, 6, 4, 2, 5, 7, 8]
        );
        assert_eq!(scan_order(2, 2, ScanKind::Morton).unwrap(), [0, 1, 2, 3]);
    }

    #[test]
    fn hilbert_is_long_and_thin_safe() {
        let p = scan_order(1, 100_000, ScanKind::Hilbert).unwrap();
        assert!(p.iter().copied().eq(0..100_000));
        let p = scan_order(100_000, 1, ScanKind::Hilbert).unwrap();
        assert!(p.iter().copied().eq(0..100_000));
    }

    #[test]
    fn rejects_bad_sizes_and_permutations() {
        assert!(scan_order(0, 3, ScanKind::Raster).is_err());
        assert!(scan_order(3, -1, ScanKind::Raster).is_err());
        assert!(inverse_permutation(&[0, 0], "p").is_err());
        let e = inverse_permutation(&[0, 2], "order")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("order: order[1] = 2 is outside"), "{e}");
        assert!(ScanKind::parse("zigzag").is_err());
    }
}
