//! Code-space fitness of data: how well a code family's ranking recovers the exact
//! neighbours, estimated at the data's real size.
//!
//! One estimator, [`code_space_recall`], serves every code family: a [`CodeScorer`] scores a
//! query row against every base row in code space (symmetric code-to-code distances for the
//! 1- and 2-bit codes, [`SymmetricCodes`]; the query's int8 form against the 4- and 8-bit
//! scalar codes, [`ScalarCodes`], exactly as the index's search scores them),
//! and the estimator compares that ranking with the exact one over the **whole** base, for a
//! sample of query rows. Recall@k of a fixed code falls as the base grows (more rows compete
//! for the top k), so scoring sampled queries against the full base estimates the recall of an
//! index holding all of it; scoring a sample against itself (as before) overstated it and
//! drifted with the sample size.

use rayon::prelude::*;

use super::codes::{self, words_for, CodeDist};
use super::encode::{column_mean, encode_rows, sq_metric, sq_term};
use super::metric::{prepare_rows, validate_rows, Metric};
use super::rotation::Rotation;
use super::search::exact_top_k;
use super::sq::{self, SqDist, SqLayout};
use crate::{ensure, Result};

/// Scores one query against every base row in code space; smaller is nearer.
pub trait CodeScorer: Sync {
    /// Number of base rows.
    fn n_rows(&self) -> usize;
    /// `out[j]`: the code-space score of base row `j` for the query that is base row `i`
    /// (`out` has `n_rows()` entries; `out[i]` is ignored).
    fn scores(&self, i: usize, out: &mut [f32]);
}

/// Today's scoring of the 1- and 2-bit codes: the query is coded like the base rows and
/// compared code to code (Hamming for `bits = 1`, sign-magnitude for `bits = 2`).
pub struct SymmetricCodes {
    codes: Vec<u64>,
    cw: usize,
    code_dim: usize,
    bits: usize,
}

impl SymmetricCodes {
    /// Codes of prepared `rows`, through `rot` when given.
    pub fn new(
        rows: &[f32],
        dim: usize,
        bits: usize,
        metric: Metric,
        rot: Option<&Rotation>,
    ) -> Result<Self> {
        let code_dim = rot.map_or(dim, |r| r.padded_dim());
        Ok(SymmetricCodes {
            codes: encode_rows(rows, dim, bits, metric, rot)?,
            cw: bits * words_for(code_dim),
            code_dim,
            bits,
        })
    }
}

impl CodeScorer for SymmetricCodes {
    fn n_rows(&self) -> usize {
        self.codes.len() / self.cw.max(1)
    }
    fn scores(&self, i: usize, out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if codes::has_popcnt() {
            // SAFETY: the CPU supports popcnt (checked at run time).
            return unsafe { self.scores_popcnt(i, out) };
        }
        self.scores_impl(i, out)
    }
}

impl SymmetricCodes {
    /// `out[j]`: [`codes::code_distance`] of rows `i` and `j` (the kernels it calls, bound
    /// here so that they inline into the `popcnt` copy).
    #[inline(always)]
    fn scores_impl(&self, i: usize, out: &mut [f32]) {
        #[inline(always)]
        fn each(codes: &[u64], cw: usize, i: usize, out: &mut [f32], d: impl CodeDist) {
            let ci = &codes[i * cw..(i + 1) * cw];
            for (o, cj) in out.iter_mut().zip(codes.chunks_exact(cw)) {
                // Distances are at most 4 * 2^20 < 2^24: exact in f32.
                *o = d.dist(ci, cj) as f32;
            }
        }
        let words = words_for(self.code_dim);
        if self.bits == 1 {
            each(&self.codes, self.cw, i, out, codes::Hamming { words })
        } else {
            let dim = self.code_dim as u32;
            each(&self.codes, self.cw, i, out, codes::SignMag { words, dim })
        }
    }

    /// [`Self::scores_impl`] compiled with `popcnt` (the same integer distances; without the
    /// feature each popcount is a dozen bit operations).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    unsafe fn scores_popcnt(&self, i: usize, out: &mut [f32]) {
        self.scores_impl(i, out)
    }
}

/// The asymmetric scoring of the 4- and 8-bit scalar codes, as the index's search does it:
/// the query row's int8 query form (through the same rotation) against every row's code
/// ([`SqDist::query_distance`]).
pub struct ScalarCodes<'a> {
    rows: &'a [f32],
    dim: usize,
    metric: Metric,
    rot: Option<Rotation>,
    codes: Vec<u64>,
    layout: SqLayout,
    dist: SqDist,
}

impl<'a> ScalarCodes<'a> {
    /// Codes of prepared `rows`, through `rot` when given (`bits` 4 or 8).
    pub fn new(
        rows: &'a [f32],
        dim: usize,
        bits: usize,
        metric: Metric,
        rot: Option<Rotation>,
    ) -> Result<Self> {
        let code_dim = rot.as_ref().map_or(dim, |r| r.padded_dim());
        let layout = SqLayout::new(code_dim, bits);
        let mean_sq = rot.as_ref().map_or(0.0, |r| {
            r.mean().iter().map(|&v| v as f64 * v as f64).sum::<f64>() as f32
        });
        Ok(ScalarCodes {
            codes: encode_rows(rows, dim, bits, metric, rot.as_ref())?,
            rows,
            dim,
            metric,
            layout,
            dist: SqDist::new(layout, sq_metric(metric), mean_sq),
            rot,
        })
    }
}

impl CodeScorer for ScalarCodes<'_> {
    fn n_rows(&self) -> usize {
        self.codes.len() / self.layout.code_words()
    }
    fn scores(&self, i: usize, out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if self.dist.kernel == sq::SqKernel::Avx512Vnni {
            // SAFETY: the kernel is in use only where the CPU supports its features.
            return unsafe { self.scores_vnni(i, out) };
        }
        self.scores_impl(i, out)
    }
}

impl ScalarCodes<'_> {
    /// `out[j]`: [`SqDist::query_distance`] of row `i`'s query form against row `j`'s code.
    #[inline(always)]
    fn scores_impl(&self, i: usize, out: &mut [f32]) {
        let q = &self.rows[i * self.dim..(i + 1) * self.dim];
        let mut buf = Vec::new();
        let t = match &self.rot {
            None => q,
            Some(r) => {
                buf.resize(self.layout.dim, 0f32);
                // Lengths match by construction, so the rotation cannot fail.
                if r.apply(q, &mut buf).is_err() {
                    out.iter_mut().for_each(|o| *o = 0.0);
                    return;
                }
                &buf[..]
            }
        };
        let mut form = vec![0u64; self.layout.query_words()];
        let qconst = sq_term(self.metric, q, t, self.rot.as_ref(), true);
        sq::encode_query(t, qconst, self.layout, &mut form);
        let cw = self.layout.code_words();
        for (o, c) in out.iter_mut().zip(self.codes.chunks_exact(cw)) {
            *o = self.dist.query_distance(&form, c);
        }
    }

    /// [`Self::scores_impl`] compiled with the AVX-512 VNNI kernel's features, so that its
    /// dot product inlines into the loop (the same integer products and float formula, so
    /// the same scores).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,avx512f,avx512bw,avx512vnni")]
    unsafe fn scores_vnni(&self, i: usize, out: &mut [f32]) {
        self.scores_impl(i, out)
    }
}

/// Of `scores` without entry `skip`: the `depth`-th smallest value (`1 <= depth <
/// scores.len()`, in `f32::total_cmp` order) and how many entries are below it and equal to
/// it (`<` and `==`). One pass keeps the `depth` smallest keys ([`sq::key_of`], ordered as
/// `total_cmp`) in a max-heap (most entries fail one comparison with its top), a second
/// counts; the same figures as a selection over a copy, without the copy.
fn kth_smallest(scores: &[f32], skip: usize, depth: usize) -> (f32, usize, usize) {
    let mut heap = std::collections::BinaryHeap::with_capacity(depth + 1);
    let mut rest = scores
        .iter()
        .enumerate()
        .filter(|&(j, _)| j != skip)
        .map(|(_, &s)| sq::key_of(s));
    heap.extend(rest.by_ref().take(depth));
    let mut top = heap.peek().copied().unwrap_or(u32::MAX);
    for key in rest {
        if key < top {
            if let Some(mut t) = heap.peek_mut() {
                *t = key;
            }
            top = heap.peek().copied().unwrap_or(u32::MAX);
        }
    }
    let kth = sq::value_of(top);
    // Counted over every entry (a loop the compiler vectorizes), then `skip` taken out.
    let below = scores.iter().filter(|&&s| s < kth).count() - (scores[skip] < kth) as usize;
    let tied = scores.iter().filter(|&&s| s == kth).count() - (scores[skip] == kth) as usize;
    (kth, below, tied)
}

/// Per scorer, per query row `q` in `queries`: the expected recall@k of the code-space top-k
/// against the exact top-k, both over every other row of `rows` (prepared, `n x dim`). The
/// exact top-k of a query is computed once for all scorers. Code scores tie often; rows tied
/// at the k-th score share the remaining places evenly (the expected recall of a random
/// tie-break, which no row numbering can bias).
///
/// `depth` (at least `k`, default `k`) is the number of code-space candidates: the figure is
/// the share of the exact top-k found among the code-space top-`depth`, what an exact rerank
/// of `depth` code-space candidates recovers (with `depth = k`: the code-space recall@k).
pub fn code_space_recall(
    rows: &[f32],
    dim: usize,
    metric: Metric,
    k: usize,
    depth: Option<usize>,
    queries: &[usize],
    scorers: &[&dyn CodeScorer],
) -> Result<Vec<Vec<f64>>> {
    let n = rows.len() / dim.max(1);
    ensure!(n > k, "X", "needs more than k = {k} rows, got {n}");
    let depth = depth.unwrap_or(k);
    ensure!(depth >= k, "depth", "must be at least k = {k}, got {depth}");
    // At most every other row.
    let depth = depth.min(n - 1);
    ensure!(
        scorers.iter().all(|s| s.n_rows() == n),
        "scorers",
        "every scorer must score the {n} rows"
    );
    if let Some(&q) = queries.iter().find(|&&q| q >= n) {
        return Err(crate::Error::invalid(
            "queries",
            format!("row {q} is out of range for {n} rows"),
        ));
    }
    // The exact distance list and two score lists per thread.
    crate::memory::ensure_array::<f32>("X", 4 * n as u128 * rayon::current_num_threads() as u128)?;
    let per_query: Vec<Vec<f64>> = queries
        .par_iter()
        .map(|&i| -> Result<Vec<f64>> {
            crate::interrupt::check()?;
            let qr = &rows[i * dim..(i + 1) * dim];
            let others = rows
                .chunks_exact(dim)
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(j, r)| (j as u32, r));
            let truth = exact_top_k(metric, qr, others, k);
            let mut scores = vec![0f32; n];
            Ok(scorers
                .iter()
                .map(|scorer| {
                    scorer.scores(i, &mut scores);
                    let (kth, below, tied) = kth_smallest(&scores, i, depth);
                    let share = (depth - below) as f64 / tied as f64;
                    let hits: f64 = truth
                        .iter()
                        .map(|&(_, j)| {
                            let s = scores[j as usize];
                            if s < kth {
                                1.0
                            } else if s == kth {
                                share
                            } else {
                                0.0
                            }
                        })
                        .sum();
                    hits / k as f64
                })
                .collect())
        })
        .collect::<Result<_>>()?;
    Ok((0..scorers.len())
        .map(|s| per_query.iter().map(|q| q[s]).collect())
        .collect())
}

/// [`code_space_recall`] of the codes of `x` (`n x dim` rows, normalized first under
/// cosine), once per entry `(bits, rotation_seed)` of `codes`: `bits` in {1, 2, 4, 8},
/// without rotation (`None`) or with the centering + randomized Hadamard rotation an index
/// seeded so would use (mean of all rows), for the query rows `queries`, at candidate
/// depth `depth` (see [`code_space_recall`]). Each entry scores
/// the way the index's search does (1 and 2 bits: code to code; 4 and 8 bits: the int8 query
/// form against the codes).
pub fn fitness_recall(
    x: &[f32],
    dim: usize,
    metric: Metric,
    k: usize,
    depth: Option<usize>,
    codes: &[(usize, Option<u64>)],
    queries: &[usize],
) -> Result<Vec<Vec<f64>>> {
    if let Some(&(bits, _)) = codes.iter().find(|(b, _)| !matches!(b, 1 | 2 | 4 | 8)) {
        return Err(crate::Error::invalid(
            "bits",
            format!("must be 1, 2, 4 or 8, got {bits}"),
        ));
    }
    ensure!(dim >= 1, "dim", "must be at least 1");
    ensure!(k >= 1, "k", "must be at least 1, got {k}");
    validate_rows(x, dim, metric, "X")?;
    let n = x.len() / dim;
    ensure!(n > k, "X", "needs more than k = {k} rows, got {n}");
    // Prepared rows and one set of codes per scorer (padded dimension at most 2 * dim; a
    // scalar code is at most 2 header words plus one byte a lane).
    let code_bytes: u128 = codes
        .iter()
        .map(|&(bits, _)| {
            if bits <= 2 {
                (bits * words_for(2 * dim)) as u128 * 8
            } else {
                16 + words_for(2 * dim) as u128 * 64
            }
        })
        .sum();
    crate::memory::ensure_fits("X", n as u128 * (dim as u128 * 4 + code_bytes))?;
    let rows = prepare_rows(x, dim, metric);
    let mean = column_mean(&rows, dim);
    let scorers: Vec<Box<dyn CodeScorer + '_>> = codes
        .iter()
        .map(|&(bits, seed)| -> Result<Box<dyn CodeScorer + '_>> {
            let rot = match seed {
                Some(seed) => Some(Rotation::new(dim, seed, mean.clone())?),
                None => None,
            };
            Ok(if bits <= 2 {
                Box::new(SymmetricCodes::new(&rows, dim, bits, metric, rot.as_ref())?)
            } else {
                Box::new(ScalarCodes::new(&rows, dim, bits, metric, rot)?)
            })
        })
        .collect::<Result<_>>()?;
    let refs: Vec<&dyn CodeScorer> = scorers.iter().map(|s| s.as_ref()).collect();
    code_space_recall(&rows, dim, metric, k, depth, queries, &refs)
}

#[cfg(test)]
mod kth_tests {
    use super::*;

    #[test]
    fn kth_smallest_matches_a_selection_over_a_copy() {
        // Ties, both zeros, negatives and infinities: the heap gives the figures of
        // `select_nth_unstable_by(total_cmp)` over the entries other than `skip`.
        let mut state = 7u64;
        for case in 0..400usize {
            let n = 2 + case % 37;
            let scores: Vec<f32> = (0..n)
                .map(|_| {
                    state = crate::rng::mix64(state.wrapping_add(case as u64));
                    match state % 9 {
                        0 => 0.0,
                        1 => -0.0,
                        2 => f32::INFINITY,
                        3 => -1.5,
                        _ => (state >> 40) as f32 / 4096.0 - 100.0,
                    }
                })
                .collect();
            let skip = case % n;
            for depth in 1..n {
                let mut rest: Vec<f32> = scores
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != skip)
                    .map(|(_, &s)| s)
                    .collect();
                let (_, &mut kth, _) =
                    rest.select_nth_unstable_by(depth - 1, |a, b| a.total_cmp(b));
                let below = rest.iter().filter(|&&s| s < kth).count();
                let tied = rest.iter().filter(|&&s| s == kth).count();
                let got = kth_smallest(&scores, skip, depth);
                assert_eq!(got.0.to_bits(), kth.to_bits(), "{scores:?} {skip} {depth}");
                assert_eq!((got.1, got.2), (below, tied));
            }
        }
    }
}
