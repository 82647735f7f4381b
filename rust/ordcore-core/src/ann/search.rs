//! Search: code-space beam search, exact float rerank, and brute-force exact search.

use rayon::prelude::*;

use super::graph::{self, beam_search};
use super::index::BQGraphIndex;
use super::metric::{
    float_distance, prefetch_bytes, prefetch_row, prepare_rows, validate_rows, Metric,
};
use crate::{ensure, Error, Result};

/// Result of one search: ids and distances, `k` per query.
pub type SearchResult = (Vec<i64>, Vec<f32>);

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
    let (mut ids, mut ds) = result_buffers(nq, k)?;
    let xs = prepare_rows(x, dim, metric);
    let qs = prepare_rows(q, dim, metric);
    ids.par_chunks_mut(k)
        .zip(ds.par_chunks_mut(k))
        .zip(qs.par_chunks_exact(dim))
        .for_each(|((oi, od), qr)| {
            let mut all: Vec<(f32, u32)> = xs
                .chunks_exact(dim)
                .enumerate()
                .map(|(i, xr)| (float_distance(metric, qr, xr), i as u32))
                .collect();
            let kk = k.min(all.len());
            let cmp = |a: &(f32, u32), b: &(f32, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
            if kk < all.len() && kk > 0 {
                all.select_nth_unstable_by(kk - 1, cmp);
                all.truncate(kk);
            }
            all.sort_unstable_by(cmp);
            for (j, (d, i)) in all.into_iter().enumerate() {
                oi[j] = i as i64;
                od[j] = d;
            }
        });
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
    let mut ids: Vec<i64> = Vec::new();
    let mut ds: Vec<f32> = Vec::new();
    ids.try_reserve_exact(total).map_err(|_| fail())?;
    ds.try_reserve_exact(total).map_err(|_| fail())?;
    ids.resize(total, -1);
    ds.resize(total, f32::INFINITY);
    Ok((ids, ds))
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
    /// (default `ef_search`) is clamped to `[k, ef_search]`. Missing results are `-1` /
    /// `+inf`.
    pub fn search(
        &self,
        q: &[f32],
        k: usize,
        ef_search: usize,
        rerank: bool,
        rerank_k: Option<usize>,
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
        let nq = self.validate_query(q)?;
        let dim = self.params.dim;
        let metric = self.params.metric;
        let qs = prepare_rows(q, dim, metric);
        // A beam wider than the graph visits nothing more: clamp it (so a huge `ef_search`
        // allocates nothing huge).
        let ef = ef_search.min(self.n_nodes()).max(k);
        let rk = rerank_k.unwrap_or(ef).clamp(k, ef);
        // Removed nodes still occupy beam slots: widen the beam by as many (at most 2x), and
        // visit everything when `k` asks for every live vector.
        let beam = if k >= self.len() {
            self.n_nodes()
        } else {
            ef + self.n_deleted.min(ef)
        };
        let (mut ids, mut ds) = result_buffers(nq, k)?;
        if self.is_empty() {
            return Ok((ids, ds));
        }
        let vecs = self.vectors.as_slice();
        let compact = self.compact.as_ref();
        // Code-space candidates of one query: the live beam entries to score exactly.
        let candidates = |qr: &[f32]| -> Result<Vec<u32>> {
            let qc = self.encode_query(qr)?;
            let pool = with_graph_fast!(self, g => beam_search(&g, &qc, self.entry, beam, graph::dup_cap(ef).max(k), None));
            let take = if rerank { rk } else { k };
            Ok(pool
                .into_iter()
                .filter(|&(_, i)| !self.deleted[i as usize])
                .take(take)
                .map(|(_, i)| i)
                .collect())
        };
        let finish = |cands: &[u32], qr: &[f32], oi: &mut [i64], od: &mut [f32]| {
            let mut buf = vec![0f32; dim];
            let mut res: Vec<(f32, u32)> = cands
                .iter()
                .map(|&i| {
                    (
                        float_distance(metric, qr, self.row(i as usize, &mut buf)),
                        i,
                    )
                })
                .collect();
            if rerank {
                res.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            }
            res.truncate(k);
            for (j, (d, i)) in res.into_iter().enumerate() {
                oi[j] = self.ids[i as usize];
                od[j] = d;
            }
        };
        // Queries run in blocks, software-pipelined: the float rows that query `j` reranks
        // are prefetched before the beam search of query `j + 1` and scored after it, so the
        // rerank's cache misses overlap with that search instead of stalling it.
        let block = |((oi, od), qb): ((&mut [i64], &mut [f32]), &[f32])| -> Result<()> {
            let mut pending: Option<(usize, Vec<u32>)> = None;
            let nb = qb.len() / dim;
            for j in 0..=nb {
                let next = if j < nb {
                    let cands = candidates(&qb[j * dim..(j + 1) * dim])?;
                    for &i in &cands {
                        match compact {
                            Some(c) => prefetch_bytes(c.row(i as usize)),
                            None => prefetch_row(vecs, i as usize * dim, dim),
                        }
                    }
                    Some((j, cands))
                } else {
                    None
                };
                if let Some((pj, cands)) = pending.take() {
                    finish(
                        &cands,
                        &qb[pj * dim..(pj + 1) * dim],
                        &mut oi[pj * k..(pj + 1) * k],
                        &mut od[pj * k..(pj + 1) * k],
                    );
                }
                pending = next;
            }
            Ok(())
        };
        const BLOCK: usize = 16;
        if nq >= 2 * BLOCK {
            ids.par_chunks_mut(BLOCK * k)
                .zip(ds.par_chunks_mut(BLOCK * k))
                .zip(qs.par_chunks(BLOCK * dim))
                .try_for_each(block)?;
        } else {
            block(((&mut ids, &mut ds), &qs))?;
        }
        Ok((ids, ds))
    }
}
