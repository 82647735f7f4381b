//! Search: code-space beam search, exact float rerank, and brute-force exact search.

use rayon::prelude::*;

use super::graph;
use super::index::{BQGraphIndex, Filter};
use super::metric::{
    float_distance, prefetch_bytes, prefetch_row, prepare_rows, validate_rows, Metric,
};
use crate::{ensure, Error, Result};

/// Result of one search: ids and distances, `k` per query.
pub type SearchResult = (Vec<i64>, Vec<f32>);

/// The `k` nearest of `rows` (`(node, row)` pairs) to `qr` by exact distance, sorted by
/// `(distance, node)`.
pub(super) fn exact_top_k<'a>(
    metric: Metric,
    qr: &[f32],
    rows: impl Iterator<Item = (u32, &'a [f32])>,
    k: usize,
) -> Vec<(f32, u32)> {
    top_k(
        rows.map(|(i, xr)| (float_distance(metric, qr, xr), i))
            .collect(),
        k,
    )
}

/// The `k` smallest `(distance, node)` pairs, sorted, ties to the smaller node.
fn top_k(all: Vec<(f32, u32)>, k: usize) -> Vec<(f32, u32)> {
    top_k_by(all, k, |i| i)
}

/// [`top_k`] with ties to the smaller `tie(node)` (distinct per node).
fn top_k_by(mut all: Vec<(f32, u32)>, k: usize, tie: impl Fn(u32) -> u32) -> Vec<(f32, u32)> {
    let kk = k.min(all.len());
    let cmp = |a: &(f32, u32), b: &(f32, u32)| a.0.total_cmp(&b.0).then(tie(a.1).cmp(&tie(b.1)));
    if kk < all.len() && kk > 0 {
        all.select_nth_unstable_by(kk - 1, cmp);
        all.truncate(kk);
    }
    all.sort_unstable_by(cmp);
    all
}

/// Brute-force k nearest neighbours of each query among `x` (rows), in the metric's
/// convention, ties broken by the smaller row. Rows past `n` are padded with `-1` / `+inf`.
pub fn exact_search(
    x: &[f32],
    q: &[f32],
    dim: usize,
    k: usize,
    metric: Metric,
) -> Result<(Vec<i64>, Vec<f32>)> {
    ensure!(dim >= 1, "dim", "must be at least 1");
    ensure!(k >= 1, "k", "must be at least 1, got {k}");
    validate_rows(x, dim, metric, "X")?;
    validate_rows(q, dim, metric, "Q")?;
    let nq = q.len() / dim;
    let n = x.len() / dim;
    // The prepared copies of X and Q, and one distance list per thread.
    crate::memory::ensure_fits(
        "X",
        (x.len() + q.len()) as u128 * 4 + n as u128 * 8 * rayon::current_num_threads() as u128,
    )?;
    let (mut ids, mut ds) = result_buffers(nq, k)?;
    let xs = prepare_rows(x, dim, metric);
    let qs = prepare_rows(q, dim, metric);
    ids.par_chunks_mut(k)
        .zip(ds.par_chunks_mut(k))
        .zip(qs.par_chunks_exact(dim))
        .try_for_each(|((oi, od), qr)| -> Result<()> {
            crate::interrupt::check()?;
            let rows = xs.chunks_exact(dim).enumerate().map(|(i, r)| (i as u32, r));
            for (j, (d, i)) in exact_top_k(metric, qr, rows, k).into_iter().enumerate() {
                oi[j] = i as i64;
                od[j] = d;
            }
            Ok(())
        })?;
    Ok((ids, ds))
}

/// `nq x k` result buffers holding the padding (`-1`, `+inf`): an error naming `k`, not an
/// abort, when they cannot be allocated.
pub(super) fn result_buffers(nq: usize, k: usize) -> Result<(Vec<i64>, Vec<f32>)> {
    let fail = || {
        Error::invalid(
            "k",
            format!("{nq} queries x k = {k} results do not fit in memory"),
        )
    };
    let total = nq
        .checked_mul(k)
        .filter(|&t| t <= isize::MAX as usize / 8)
        .ok_or_else(fail)?;
    crate::memory::ensure_fits("k", total as u128 * 12)?;
    let mut ids: Vec<i64> = Vec::new();
    let mut ds: Vec<f32> = Vec::new();
    ids.try_reserve_exact(total).map_err(|_| fail())?;
    ds.try_reserve_exact(total).map_err(|_| fail())?;
    ids.resize(total, -1);
    ds.resize(total, f32::INFINITY);
    Ok((ids, ds))
}

/// Whether a filtered search scans the `allowed` live vectors exactly instead of searching
/// the graph (`ef` the requested beam, `n_nodes` the graph's size, `dim` the vectors'
/// dimension): when the allowed set is at most [`filter_scan_factor`]`(dim)` times the beam
/// the graph search would need (`ef` widened by the share of nodes the filter excludes,
/// `ef * n_nodes / allowed`), i.e. `allowed^2 <= filter_scan_factor(dim) * ef * n_nodes`.
pub(super) fn filter_scans(allowed: usize, ef: usize, n_nodes: usize, dim: usize) -> bool {
    (allowed as f64).powi(2) <= filter_scan_factor(dim) * ef as f64 * n_nodes as f64
}

/// See [`filter_scans`]: `4 * (384 / dim)^(3/4)`, at least 1. A scanned row costs a float
/// distance of `dim` terms, a graph step a few code distances and beam updates whose cost
/// grows more slowly with `dim`, so the scan pays off longer on low-dimensional data.
/// Measured (`python benches/ann_choice.py DATASET --n 100000 --filter`, `bits="auto"`,
/// float32 rerank store, `ef_search` 64, 1 thread, CPU time): the graph path and the scan
/// cost the same at `allowed^2 / (ef * n)` = 4.5 on glosses (384-d, 2 bits; the factor is
/// 4), 6.3-8 on SIFT (128-d, 4 bits; 9.1), 20-21 on GloVe (50-d, 4 bits; 18.5), in two runs
/// each for SIFT and GloVe. The graph path's recall@10 there is 0.99-1.0, the scan's 1.0. The environment variable
/// `ORDCORE_ANN_FILTER_SCAN_FACTOR` (a number >= 0, read on each search) replaces the
/// factor, so that the calibration can time both paths at the same allowed count (0: always
/// the graph, a huge value: always the scan).
pub(super) fn filter_scan_factor(dim: usize) -> f64 {
    let forced = std::env::var("ORDCORE_ANN_FILTER_SCAN_FACTOR")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|f| f.is_finite() && *f >= 0.0);
    forced.unwrap_or_else(|| (4.0 * (384.0 / dim.max(1) as f64).powf(0.75)).max(1.0))
}

/// Queries searched in lock-step (`graph::run_beams`): 2 to 8 measured alike, 8-14% less
/// CPU time than one at a time on SIFT 100k (bits=8); results do not depend on it.
const GROUP: usize = 4;

/// Nodes a 4- or 8-bit search scores to pick where its beam starts ([`start_node`]).
/// Measured (20k rows, 500 queries, 1 thread, CPU time; QPS at `ef_search` 10 / 16 / 24,
/// same recall within 0.003, two interleaved runs at load 3): SIFT bits=8 from the entry
/// alone 108-112k / 83-86k / 62-64k, best of 16 131k / 97k / 72k, of 64 131-141k /
/// 96-103k / 71-75k, of 256 114-126k / 87-97k / 65-73k; glosses bits=4 (`ef_search` 10 /
/// 12 / 16) 59-65k / 55-57k / 47-49k, 16: 65-66k / 55-57k / 48k, 64: 67-71k / 61-63k /
/// 49k, 256: 63-65k / 58-61k / 49-50k.
pub(super) const START_SAMPLE: usize = 64;

/// Where the beam of query form `qc` starts: the nearest (by code distance, ties to the
/// earlier insertion rank `rank`) of the index entry and the `sample` nodes (those of
/// insertion ranks `t * n / START_SAMPLE`, so the start does not depend on the numbering,
/// see [`super::renumber`]). A start near the query saves the first hops from the entry
/// (the role of the upper layers of HNSW); the sample is the same for every query, so its
/// codes stay in cache.
pub(super) fn start_node<D: super::codes::CodeDist>(
    g: &graph::GraphRef<'_, D>,
    qc: &[u64],
    entry: u32,
    sample: &[u32],
    rank: &[u32],
) -> u32 {
    let key = |i: u32| (g.d(qc, i), rank[i as usize], i);
    let mut best = key(entry);
    for &i in sample {
        best = best.min(key(i));
    }
    best.2
}

impl BQGraphIndex {
    fn validate_query(&self, q: &[f32]) -> Result<usize> {
        let dim = self.params.dim;
        ensure!(
            q.len().is_multiple_of(dim),
            "Q",
            "length {} is not a multiple of the index dimension {dim}",
            q.len()
        );
        validate_rows(q, dim, self.params.metric, "Q")?;
        Ok(q.len() / dim)
    }

    /// Searches `q` (`nq x dim`). `ef_search` is raised to at least `k`; `rerank_k`
    /// (default `ef_search`) is clamped to `[k, ef_search]`. Returns `min(k, live)` results
    /// per query, the tail padded with `-1` / `+inf`.
    ///
    /// * With `rerank`, when `max(ef_search, k)` covers every live vector the search is an
    ///   exact scan of them (the graph cannot do better and a tiny index is scanned faster).
    /// * The beam keeps at most `dup_cap(ef)` entries with one code (so that it can leave a
    ///   group of equal codes); entries it turns away stay candidates: the candidates are the
    ///   nearest in code space of every node the beam scored, so a graph of few distinct
    ///   codes still yields its candidates and exact copies of the query are not crowded
    ///   out by farther beam entries. The beam width and that cap depend on `ef_search` and
    ///   not on `k` (for `k <= ef_search`), so the first results do not change with `k`.
    /// * Removed nodes still occupy beam slots: the beam widens by the share of removed
    ///   nodes. When the graph still yields fewer than `min(rerank_k, live)` live candidates
    ///   (`min(k, live)` without rerank), that query falls back to a scan of the live
    ///   vectors: exact distances with `rerank`, code distances without.
    pub fn search(
        &self,
        q: &[f32],
        k: usize,
        ef_search: usize,
        rerank: bool,
        rerank_k: Option<usize>,
    ) -> Result<SearchResult> {
        self.search_filtered(q, k, ef_search, rerank, rerank_k, None, None)
    }

    /// [`Self::search`] returning only the ids `filter` allows (all live ids without one).
    /// Each query gets `min(k, allowed live ids)` results. The beam still traverses every
    /// node (so the graph stays navigable), but only allowed nodes become candidates, and
    /// the beam widens by the share of nodes the filter excludes. When few ids are allowed
    /// ([`filter_scans`]), the search is an exact scan of the allowed vectors instead
    /// (exact distances, also with `rerank = false`). Unknown ids in an allow-list are an
    /// `UnknownId` error naming `filter`.
    ///
    /// `degree`: expand at most this many neighbours of each node (the first of its list; at
    /// least 1); `None`: the index's automatic bound (see [`super::order`]; every neighbour
    /// for 1- and 2-bit indexes and files written before the lists were ordered).
    #[allow(clippy::too_many_arguments)]
    pub fn search_filtered(
        &self,
        q: &[f32],
        k: usize,
        ef_search: usize,
        rerank: bool,
        rerank_k: Option<usize>,
        filter: Option<Filter<'_>>,
        degree: Option<usize>,
    ) -> Result<SearchResult> {
        ensure!(k >= 1, "k", "must be at least 1, got {k}");
        ensure!(
            ef_search >= 1,
            "ef_search",
            "must be at least 1, got {ef_search}"
        );
        if let Some(rk) = rerank_k {
            ensure!(rk >= 1, "rerank_k", "must be at least 1, got {rk}");
        }
        if let Some(d) = degree {
            ensure!(d >= 1, "degree", "must be at least 1, got {d}");
        }
        let nq = self.validate_query(q)?;
        let dim = self.params.dim;
        let metric = self.params.metric;
        let allowed = match filter {
            Some(f) => Some(self.allowed_nodes(f)?),
            None => None,
        };
        let (mut ids, mut ds) = result_buffers(nq, k)?;
        // Live nodes the filter allows (all live nodes without one).
        let live = allowed.as_ref().map_or(self.len(), |a| a.1);
        if live == 0 {
            return Ok((ids, ds));
        }
        let allowed = allowed.map(|a| a.0);
        let ok =
            |i: u32| !self.deleted[i as usize] && allowed.as_ref().is_none_or(|a| a[i as usize]);
        let n_nodes = self.n_nodes();
        // A beam wider than the graph visits nothing more: clamp it (so a huge `ef_search`
        // allocates nothing huge).
        let ef = ef_search.min(n_nodes).max(k);
        let rk = rerank_k.unwrap_or(ef).clamp(k, ef);
        let scan_all = (rerank && ef_search.max(k) >= live)
            || (allowed.is_some() && filter_scans(live, ef_search.max(k), n_nodes, dim));
        let beam = (ef + self.n_deleted.min(ef))
            .max(((ef as u128 * n_nodes as u128).div_ceil(live as u128)) as usize)
            .min(n_nodes);
        let cap = graph::dup_cap(ef);
        // Neighbours expanded per node: the given bound, else the index's automatic one.
        let degree = degree.unwrap_or_else(|| super::order::auto_degree(self.search_degree, beam));
        let target = if rerank { rk } else { k }.min(live);
        // A filtered beam holds about `ef` allowed nodes, not always `rerank_k`: it falls back
        // to a scan only when it holds fewer than `k`.
        let need = if allowed.is_some() {
            k.min(live)
        } else {
            target
        };
        let vecs = self.vectors.as_slice();
        let compact = self.compact.as_ref();
        // Ties of exact distances (and, without rerank, of code distances) in results go to
        // the earlier insertion rank, so results do not depend on the node numbering.
        let rank = &self.rank[..];
        let by_rank = |i: u32| rank[i as usize];
        // Exact distances of `qr` to nodes (rows decoded from a compact store).
        let exact = |qr: &[f32], nodes: &mut dyn Iterator<Item = u32>| -> Vec<(f32, u32)> {
            let mut buf = vec![0f32; dim];
            nodes
                .map(|i| {
                    (
                        float_distance(metric, qr, self.row(i as usize, &mut buf)),
                        i,
                    )
                })
                .collect()
        };
        let scan = |qr: &[f32]| {
            let mut live = (0..n_nodes as u32).filter(|&i| ok(i));
            top_k_by(exact(qr, &mut live), k, by_rank)
        };
        enum Found {
            /// Nodes to score exactly (reranked with `rerank`, else kept in code order).
            Candidates(Vec<u32>),
            /// Final `(distance, node)` results of a scan.
            Done(Vec<(f32, u32)>),
        }
        // Code-space candidates of a group of queries (searched in lock-step, see
        // `graph::run_beams`): for each, the live beam entries, then the live entries the
        // duplicate cap turned away, or a scan when they are too few.
        let candidates = |qrs: &[&[f32]]| -> Result<Vec<Found>> {
            crate::interrupt::check()?;
            if scan_all {
                return Ok(qrs.iter().map(|qr| Found::Done(scan(qr))).collect());
            }
            let qcs = qrs
                .iter()
                .map(|qr| self.encode_query(qr))
                .collect::<Result<Vec<_>>>()?;
            let mut spills = vec![Vec::new(); qrs.len()];
            with_graph_fast!(self, g => {
                let g = graph::GraphRef { limit: degree, ..g };
                let mut beams: Vec<graph::Beam<'_>> = qcs
                    .iter()
                    .zip(spills.iter_mut())
                    .map(|(qc, spill)| {
                        let b = graph::Beam::new(qc, beam, cap, None, Some(spill));
                        if self.params.bits > 2 {
                            b.starting_at(start_node(&g, qc, self.entry, &self.start_sample, rank))
                        } else {
                            b
                        }
                    })
                    .collect();
                graph::run_beams(&g, &mut beams, self.entry);
                let pools: Vec<Vec<(u32, u32)>> = beams.into_iter().map(graph::Beam::into_result).collect();
                let live_in = |&(_, i): &(u32, u32)| ok(i);
                Ok(pools.into_iter().zip(spills.iter_mut()).zip(qrs).zip(&qcs).map(|(((pool, spill), qr), qc)| {
                    // The `target` nearest in code space of every node the beam scored: its
                    // own entries and those the duplicate cap turned away (exact copies of
                    // the query among them), ties to the earlier insertion rank.
                    let mut cands: Vec<(u32, u32)> =
                        pool.iter().chain(spill.iter()).copied().filter(live_in).collect();
                    cands.sort_unstable_by_key(|&(d, i)| (d, by_rank(i)));
                    cands.truncate(target);
                    if cands.len() < need && !rerank {
                        // Exact code ranking of the live nodes.
                        let mut all: Vec<(u32, u32)> = (0..n_nodes as u32)
                            .filter(|&i| ok(i))
                            .map(|i| (g.d(qc, i), i))
                            .collect();
                        all.sort_unstable_by_key(|&(d, i)| (d, by_rank(i)));
                        all.truncate(k);
                        return Found::Candidates(all.into_iter().map(|(_, i)| i).collect());
                    }
                    if cands.len() < need {
                        return Found::Done(scan(qr));
                    }
                    Found::Candidates(cands.into_iter().map(|(_, i)| i).collect())
                }).collect())
            })
        };
        let finish = |found: Found, qr: &[f32], oi: &mut [i64], od: &mut [f32]| {
            let res = match found {
                Found::Done(res) => res,
                Found::Candidates(cands) => {
                    let mut res = exact(qr, &mut cands.iter().copied());
                    if rerank {
                        res.sort_unstable_by(|a, b| {
                            a.0.total_cmp(&b.0).then(by_rank(a.1).cmp(&by_rank(b.1)))
                        });
                    }
                    res
                }
            };
            for (j, (d, i)) in res.into_iter().take(k).enumerate() {
                oi[j] = self.ids[i as usize];
                od[j] = d;
            }
        };
        // Queries run in blocks, in groups of `GROUP` searched in lock-step, and
        // software-pipelined: the float rows that one group reranks are prefetched before
        // the beam searches of the next group and scored after them, so the rerank's cache
        // misses overlap with those searches instead of stalling them.
        // Each block prepares (normalizes under cosine) its own queries: a small buffer that
        // stays in cache, not a copy of every query in fresh pages.
        let block = |((oi, od), qraw): ((&mut [i64], &mut [f32]), &[f32])| -> Result<()> {
            let qs = prepare_rows(qraw, dim, metric);
            let qb = &qs[..];
            let mut pending: Vec<(usize, Found)> = Vec::new();
            let nb = qb.len() / dim;
            let mut j = 0;
            loop {
                let mut next = Vec::new();
                if j < nb {
                    let end = (j + GROUP).min(nb);
                    let qrs: Vec<&[f32]> = (j..end).map(|t| &qb[t * dim..(t + 1) * dim]).collect();
                    for (t, found) in (j..end).zip(candidates(&qrs)?) {
                        if let Found::Candidates(cands) = &found {
                            for &i in cands {
                                match compact {
                                    Some(c) => prefetch_bytes(c.row(i as usize)),
                                    None => prefetch_row(vecs, i as usize * dim, dim),
                                }
                            }
                        }
                        next.push((t, found));
                    }
                    j = end;
                }
                for (pj, found) in pending.drain(..) {
                    finish(
                        found,
                        &qb[pj * dim..(pj + 1) * dim],
                        &mut oi[pj * k..(pj + 1) * k],
                        &mut od[pj * k..(pj + 1) * k],
                    );
                }
                if next.is_empty() {
                    break;
                }
                pending = next;
            }
            Ok(())
        };
        const BLOCK: usize = 16;
        if nq >= 2 * BLOCK {
            ids.par_chunks_mut(BLOCK * k)
                .zip(ds.par_chunks_mut(BLOCK * k))
                .zip(q.par_chunks(BLOCK * dim))
                .try_for_each(block)?;
        } else {
            block(((&mut ids, &mut ds), q))?;
        }
        Ok((ids, ds))
    }
}
