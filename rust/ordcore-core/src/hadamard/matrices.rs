//! The base Hadamard matrices `H_K` for `K` in [`BASE_ORDERS`], built once per process.
//!
//! | K | construction |
//! |---|---|
//! | 1 | `[1]` |
//! | 12, 20, 60, 108, 140 | Paley I over GF(q), q = K - 1 = 11, 19, 59, 107, 139 (q = 3 mod 4) |
//! | 28, 36 | Paley II over GF(q), q = K/2 - 1 = 13, 17 (q = 1 mod 4) |
//! | 52 | Paley II over GF(25) = GF(5)[t] / (t^2 - 2) |
//! | 156, 172 | Williamson type, symmetric circulants of order 39 and 43 |
//!
//! Sizes `40 * 2^k` are `20 * 2^(k+1)`, so `H_40 = kron(H_20, H_2)` needs no matrix of its own.
//!
//! Paley I: with the Jacobsthal matrix `Q[a][b] = chi(a - b)` (`chi` the quadratic character
//! of GF(q)), `S = [[0, 1^T], [-1, Q]]` and `H = I + S`.
//! Paley II: `C = [[0, 1^T], [1, Q]]` and `H = kron(C, [[1, 1], [1, -1]]) + kron(I, [[1, -1],
//! [-1, -1]])`. Field elements are numbered `a + p*b` for `a + b t`.
//! Williamson: `H = [[A, B, C, D], [-B, A, -D, C], [-C, D, A, -B], [-D, -C, B, A]]` with
//! `A[i][j] = a[(j - i) mod m]`; the first rows are the ones tabulated in SageMath's
//! `williamson_type_quadruples_smallcases` (order 43 from Hall's *Combinatorial Theory*,
//! order 39 from Londoño's 2013 thesis). Every matrix is checked (`H H^T = K I`) by the tests.

use std::sync::OnceLock;

/// The orders `K` of the base matrices, ascending (`40` is covered as `20 * 2`).
pub const BASE_ORDERS: [usize; 11] = [1, 12, 20, 28, 36, 52, 60, 108, 140, 156, 172];

const WILLIAMSON_39: [&str; 4] = [
    "+++--+-+-----+--++----++--+-----+-+--++",
    "+++--++-+---+-+--+----+--+-+---+-++--++",
    "++++---+--++----+-+--+-+----++--+---+++",
    "+---++-+-+-----+++-++-+++-----+-+-++---",
];
const WILLIAMSON_43: [&str; 4] = [
    "++---++++-+--+--++--------++--+--+-++++---+",
    "+++-+-++--+-+-++++-+----+-++++-+-+--++-+-++",
    "++-++++++----+-+--++-++-++--+-+----++++++-+",
    "+---++--++++-+-+++-++--++-+++-+-++++--++---",
];

/// One base matrix with its entries in the forms the kernels use.
pub struct BaseMatrix {
    /// Order `K`.
    pub k: usize,
    /// Row-major `H_K`, entries `+1` / `-1`.
    pub h: Vec<i8>,
    /// Forward mixing matrix (`x @ H`: row `c` holds column `c` of `H_K`), f32 and f64.
    pub fwd_f32: Vec<f32>,
    pub fwd_f64: Vec<f64>,
    /// Inverse mixing matrix (`y @ H^T`: row `c` of `H_K`), f32 and f64.
    pub inv_f32: Vec<f32>,
    pub inv_f64: Vec<f64>,
}

/// A finite field GF(p) or GF(p^2) = GF(p)[t]/(t^2 - r) with `r` a non-residue.
struct Field {
    p: usize,
    /// `Some(r)` for the quadratic extension.
    ext: Option<usize>,
}

impl Field {
    fn order(&self) -> usize {
        if self.ext.is_some() {
            self.p * self.p
        } else {
            self.p
        }
    }
    fn split(&self, x: usize) -> (usize, usize) {
        (x % self.p, x / self.p)
    }
    fn sub(&self, x: usize, y: usize) -> usize {
        let p = self.p;
        let ((a, b), (c, d)) = (self.split(x), self.split(y));
        (a + p - c) % p + p * ((b + p - d) % p)
    }
    fn mul(&self, x: usize, y: usize) -> usize {
        let p = self.p;
        let ((a, b), (c, d)) = (self.split(x), self.split(y));
        let r = self.ext.unwrap_or(0);
        (a * c + r * (b * d % p)) % p + p * ((a * d + b * c) % p)
    }
    /// The quadratic character: 0 at 0, +1 on squares, -1 otherwise.
    fn chi(&self, x: usize) -> i8 {
        if x == 0 {
            return 0;
        }
        // x^((q-1)/2) is 1 on squares and -1 (= p - 1) otherwise.
        let (mut base, mut e, mut acc) = (x, (self.order() - 1) / 2, 1usize);
        while e > 0 {
            if e & 1 == 1 {
                acc = self.mul(acc, base);
            }
            base = self.mul(base, base);
            e >>= 1;
        }
        if acc == 1 {
            1
        } else {
            -1
        }
    }
    fn jacobsthal(&self) -> Vec<i8> {
        let q = self.order();
        let mut m = vec![0i8; q * q];
        for a in 0..q {
            for b in 0..q {
                m[a * q + b] = self.chi(self.sub(a, b));
            }
        }
        m
    }
}

fn paley1(f: &Field) -> Vec<i8> {
    let q = f.order();
    let k = q + 1;
    let jac = f.jacobsthal();
    let mut h = vec![0i8; k * k];
    for i in 0..k {
        for j in 0..k {
            let s = match (i, j) {
                (0, 0) => 0,
                (0, _) => 1,
                (_, 0) => -1,
                _ => jac[(i - 1) * q + (j - 1)],
            };
            h[i * k + j] = s + i8::from(i == j);
        }
    }
    h
}

fn paley2(f: &Field) -> Vec<i8> {
    let q = f.order();
    let c_order = q + 1;
    let jac = f.jacobsthal();
    let conf = |i: usize, j: usize| -> i8 {
        match (i, j) {
            (0, 0) => 0,
            (0, _) | (_, 0) => 1,
            _ => jac[(i - 1) * q + (j - 1)],
        }
    };
    let k = 2 * c_order;
    let mut h = vec![0i8; k * k];
    for i in 0..c_order {
        for j in 0..c_order {
            let c = conf(i, j);
            // kron(C, [[1,1],[1,-1]]) + kron(I, [[1,-1],[-1,-1]])
            let blk: [[i8; 2]; 2] = if i == j {
                [[1, -1], [-1, -1]]
            } else {
                [[c, c], [c, -c]]
            };
            for (di, row) in blk.iter().enumerate() {
                for (dj, &v) in row.iter().enumerate() {
                    h[(2 * i + di) * k + 2 * j + dj] = v;
                }
            }
        }
    }
    h
}

fn williamson(rows: &[&str; 4]) -> Vec<i8> {
    let m = rows[0].len();
    let first: Vec<Vec<i8>> = rows
        .iter()
        .map(|r| r.bytes().map(|c| if c == b'+' { 1 } else { -1 }).collect())
        .collect();
    // Block layout: (matrix index, sign) for each of the 4 x 4 blocks.
    const LAYOUT: [[(usize, i8); 4]; 4] = [
        [(0, 1), (1, 1), (2, 1), (3, 1)],
        [(1, -1), (0, 1), (3, -1), (2, 1)],
        [(2, -1), (3, 1), (0, 1), (1, -1)],
        [(3, -1), (2, -1), (1, 1), (0, 1)],
    ];
    let k = 4 * m;
    let mut h = vec![0i8; k * k];
    for (bi, brow) in LAYOUT.iter().enumerate() {
        for (bj, &(which, sign)) in brow.iter().enumerate() {
            for i in 0..m {
                for j in 0..m {
                    h[(bi * m + i) * k + bj * m + j] = sign * first[which][(j + m - i) % m];
                }
            }
        }
    }
    h
}

fn build(k: usize) -> Vec<i8> {
    let prime = |p| Field { p, ext: None };
    match k {
        1 => vec![1],
        12 | 20 | 60 | 108 | 140 => paley1(&prime(k - 1)),
        28 | 36 => paley2(&prime(k / 2 - 1)),
        52 => paley2(&Field { p: 5, ext: Some(2) }),
        156 => williamson(&WILLIAMSON_39),
        172 => williamson(&WILLIAMSON_43),
        _ => unreachable!("no base Hadamard matrix of order {k}"),
    }
}

/// The base matrix of order `k` (one of [`BASE_ORDERS`]), built on first use.
pub fn base_matrix(k: usize) -> &'static BaseMatrix {
    static CACHE: [OnceLock<BaseMatrix>; BASE_ORDERS.len()] = [const { OnceLock::new() }; 11];
    let slot = BASE_ORDERS
        .iter()
        .position(|&b| b == k)
        .expect("base_matrix called with an order outside BASE_ORDERS");
    CACHE[slot].get_or_init(|| {
        let h = build(k);
        let transposed: Vec<i8> = (0..k * k).map(|idx| h[(idx % k) * k + idx / k]).collect();
        BaseMatrix {
            k,
            fwd_f32: transposed.iter().map(|&v| f32::from(v)).collect(),
            fwd_f64: transposed.iter().map(|&v| f64::from(v)).collect(),
            inv_f32: h.iter().map(|&v| f32::from(v)).collect(),
            inv_f64: h.iter().map(|&v| f64::from(v)).collect(),
            h,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_base_matrix_is_hadamard() {
        for &k in &BASE_ORDERS {
            let h = &base_matrix(k).h;
            assert_eq!(h.len(), k * k);
            assert!(h.iter().all(|&v| v == 1 || v == -1), "K={k}: entries");
            for i in 0..k {
                for j in 0..k {
                    let dot: i64 = (0..k)
                        .map(|t| i64::from(h[i * k + t]) * i64::from(h[j * k + t]))
                        .sum();
                    let want = if i == j { k as i64 } else { 0 };
                    assert_eq!(dot, want, "K={k}: rows {i}, {j}");
                }
            }
        }
    }

    #[test]
    fn williamson_rows_are_symmetric() {
        for rows in [WILLIAMSON_39, WILLIAMSON_43] {
            for r in rows {
                let b = r.as_bytes();
                let m = b.len();
                assert!((1..m).all(|i| b[i] == b[m - i]), "{r}");
            }
        }
    }
}
