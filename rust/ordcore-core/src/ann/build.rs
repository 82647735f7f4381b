//! Construction: Vamana insertion passes in code space, the slack prune, reachability
//! repair, and `compact` (repair around removed nodes, then renumbering).

use std::borrow::Cow;
use std::collections::HashMap;

use rayon::prelude::*;

use super::codes::CodeDist;
use super::encode::{column_mean, encode_rows};
use super::graph::{self, beam_search, robust_prune, GraphRef, QueryOf};
use super::huge;
use super::index::{slack_degree, BQGraphIndex, Progress, Vectors};
use super::metric::{prepare_rows, validate_rows};
use super::rotation::Rotation;
use super::store::check_rows;
use crate::{ensure, Error, Result};

/// The lists of `adj` (row stride `from`, degrees `deg`) in a new array of `rows` rows of
/// stride `to` (rows past `deg` empty).
fn restrided(adj: &[u32], deg: &[u32], from: usize, to: usize, rows: usize) -> Vec<u32> {
    let mut out = huge::filled(rows * to, 0u32);
    for (i, &d) in deg.iter().enumerate() {
        let d = (d as usize).min(to);
        out[i * to..i * to + d].copy_from_slice(&adj[i * from..i * from + d]);
    }
    out
}

/// Construction searches run in lock-step groups of this many (`graph::run_beams`): the
/// same graph, 9% less CPU time on SIFT 100k (bits=8; no change at 20k, where the graph
/// stays in cache).
const BUILD_GROUP: usize = 4;

/// The query forms of every node ([`BQGraphIndex::node_query`]) computed once for a build
/// of scalar codes: its searches start from them and RobustPrune scores each pair of
/// candidates with the query form of one against the code of the other. Empty (inactive)
/// for the 1- and 2-bit codes, whose query form is the code itself.
#[derive(Default)]
struct BuildQueries {
    words: usize,
    forms: Vec<u64>,
}

impl BuildQueries {
    fn active(&self) -> bool {
        self.words > 0
    }
    fn get(&self, i: u32) -> Cow<'_, [u64]> {
        let s = i as usize * self.words;
        Cow::Borrowed(&self.forms[s..s + self.words])
    }
}

/// What a failed (interrupted) `add` needs to restore the index.
struct Saved {
    adj: Vec<u32>,
    deg: Vec<u32>,
    stride: usize,
    entry: u32,
    rot: Option<Rotation>,
}

impl BQGraphIndex {
    /// Adds `x` (`n x dim`, row-major) with user ids (`None`: consecutive ids after the
    /// largest stored id, removed ones included until `compact`, from 0). Validates
    /// everything before changing the index.
    pub fn add(
        &mut self,
        x: &[f32],
        ids: Option<&[i64]>,
        progress: Option<Progress<'_>>,
    ) -> Result<()> {
        let dim = self.params.dim;
        ensure!(
            x.len().is_multiple_of(dim),
            "X",
            "length {} is not a multiple of dim {dim}",
            x.len()
        );
        let n = x.len() / dim;
        validate_rows(x, dim, self.params.metric, "X")?;
        check_rows(self.rerank_dtype(), x, dim, "X")?;
        ensure!(
            self.ids.len() + n < u32::MAX as usize,
            "X",
            "an index holds fewer than 2^32 - 1 vectors"
        );
        let new_ids: Vec<i64> = match ids {
            Some(ids) => {
                ensure!(
                    ids.len() == n,
                    "ids",
                    "has {} entries but X has {n} rows",
                    ids.len()
                );
                let mut seen = HashMap::with_capacity(n);
                for (row, &id) in ids.iter().enumerate() {
                    if let Some(prev) = seen.insert(id, row) {
                        return Err(Error::invalid(
                            "ids",
                            format!("id {id} appears twice (rows {prev} and {row})"),
                        ));
                    }
                    if self.id_map.contains_key(&id) {
                        return Err(Error::invalid(
                            "ids",
                            format!("id {id} (row {row}) is already in the index"),
                        ));
                    }
                }
                ids.to_vec()
            }
            None => {
                // Consecutive ids after the largest stored one; the last must fit in int64
                // (checked before anything is computed from them).
                let max = self.ids.iter().copied().max();
                let start = match max {
                    None => Some(0),
                    Some(m) => m.checked_add(1),
                };
                let fits = n == 0 || start.and_then(|s| s.checked_add(n as i64 - 1)).is_some();
                ensure!(
                    fits,
                    "ids",
                    "automatic ids after the largest stored id {} would pass 2**63 - 1 for {n} \
                     rows; pass ids explicitly",
                    max.unwrap_or(0)
                );
                let start = start.unwrap_or(0);
                (0..n as i64).map(|i| start + i).collect()
            }
        };
        if n == 0 {
            return Ok(());
        }
        let old = self.ids.len();
        self.ensure_add_fits(old, n)?;
        let rows = prepare_rows(x, dim, self.params.metric);
        let first = self.ids.is_empty();
        let new_rot = if first && self.params.rotation {
            Some(Rotation::new(
                dim,
                self.params.seed,
                column_mean(&rows, dim),
            )?)
        } else {
            None
        };
        let codes = encode_rows(
            &rows,
            dim,
            self.params.bits,
            self.params.metric,
            new_rot.as_ref().or(self.rot.as_ref()),
        )?;
        // Stage: grow the arrays, keeping what a rollback needs (the old graph lists, moved
        // out rather than copied; the rotation). Old rows, codes and ids are not touched, so
        // truncating the arrays restores them.
        let saved = Saved {
            adj: std::mem::take(&mut self.adj),
            deg: self.deg.clone(),
            stride: self.stride,
            entry: self.entry,
            rot: if first && self.params.rotation {
                std::mem::replace(&mut self.rot, new_rot)
            } else {
                None
            },
        };
        match &mut self.compact {
            Some(c) => c.extend(&rows),
            None => huge::extend(self.vectors.make_owned(), &rows),
        }
        huge::extend(&mut self.codes, &codes);
        let slack = slack_degree(self.params.r);
        self.adj = restrided(&saved.adj, &self.deg, saved.stride, slack, old + n);
        self.stride = slack;
        self.deg.resize(old + n, 0);
        for (k, &id) in new_ids.iter().enumerate() {
            self.id_map.insert(id, (old + k) as u32);
        }
        self.ids.extend_from_slice(&new_ids);
        self.rank.extend(old as u32..(old + n) as u32);
        self.deleted.resize(old + n, false);
        let built = (|| -> Result<()> {
            let forms = self.build_queries()?;
            if first || self.len() == n {
                self.build_full(progress, &forms)?;
            } else {
                let order = self.permutation(old as u32..(old + n) as u32, 2);
                self.insert_pass(
                    &order,
                    self.params.alpha,
                    self.params.l_build.max(self.params.r),
                    progress,
                    0,
                    n,
                    &forms,
                )?;
            }
            self.finish_slack(&forms)?;
            self.connect_unreachable()?;
            self.order_lists()?;
            self.renumber()
        })();
        if let Err(e) = built {
            // Interrupted (the only failure once staged): restore the index as it was.
            self.rollback_add(old, &new_ids, saved, first);
            return Err(e);
        }
        Ok(())
    }

    /// Refuses an `add` of `n` rows to `old` nodes whose arrays would not fit in memory
    /// (estimated before anything is allocated).
    fn ensure_add_fits(&self, old: usize, n: usize) -> Result<()> {
        let total = (old + n) as u128;
        let (n, old) = (n as u128, old as u128);
        let dim = self.params.dim as u128;
        let cw = self.cw as u128;
        let slack = slack_degree(self.params.r) as u128;
        let r = self.params.r as u128;
        // Prepared rows and codes of the new rows, the grown vectors and codes (a copy of
        // the old ones when they move), the slack graph next to the old one, the graph
        // pruned back to R, per-node bookkeeping (ids, flags, degrees, id map), and the query
        // forms of the scalar codes' prunes.
        let bytes = n * dim * 4
            + n * cw * 8
            + total * dim * 4
            + old * dim * 4
            + total * cw * 8
            + old * cw * 8
            + total * slack * 4
            + old * r * 4
            + total * r * 4
            + total * (8 + 1 + 4 + 4 + 48)
            + if self.prune_by_query() {
                total * self.query_words() as u128 * 8
            } else {
                0
            };
        crate::memory::ensure_fits("X", bytes)
    }

    fn rollback_add(&mut self, old: usize, new_ids: &[i64], saved: Saved, first: bool) {
        let dim = self.params.dim;
        match &mut self.compact {
            Some(c) => c.truncate_rows(old),
            None => self.vectors.make_owned().truncate(old * dim),
        }
        self.codes.truncate(old * self.cw);
        for id in new_ids {
            self.id_map.remove(id);
        }
        self.ids.truncate(old);
        self.rank.truncate(old);
        self.deleted.truncate(old);
        self.adj = saved.adj;
        self.deg = saved.deg;
        self.stride = saved.stride;
        self.entry = saved.entry;
        self.refresh_start_sample();
        if first && self.params.rotation {
            self.rot = saved.rot;
        }
    }

    /// Makes every live node reachable from the entry. Vamana does not guarantee it: with a
    /// small `R`, clustered data can leave whole clusters without an incoming path, because
    /// their neighbours' lists fill up with nearer nodes. For each live node a traversal from
    /// the entry misses, a code-space search from the entry (beam `max(L_build, R)`) finds its
    /// nearest reachable nodes, and one of them, `v`, gets an edge to it: appended when `v`
    /// has room, else replacing `v`'s edge to the neighbour with the most incoming edges.
    /// Everything the new edge reaches is marked before the next miss is handled, so a
    /// cut-off cluster costs one search and one edge. A replaced edge can cut something off
    /// in turn, so the check repeats (a few rounds at most). Sequential and deterministic; a
    /// connected graph is left unchanged.
    ///
    /// Exact duplicates: a list takes at most `twin_cap(R)` nodes of one code here too
    /// (robust_prune's rule), or thousands of copies of one vector would fill the lists
    /// nearest them, the entry's among them, with copies a search could not leave. A missed
    /// copy therefore first hangs off a reachable node with its own code (appended, or in
    /// place of an edge to a node with other incoming edges), so the copies form chains
    /// below the capped lists rather than filling them.
    fn connect_unreachable(&mut self) -> Result<()> {
        let n = self.n_nodes();
        if self.is_empty() {
            return Ok(());
        }
        let r = self.stride;
        let l = self.params.l_build.max(self.params.r);
        let cap = graph::twin_cap(self.params.r);
        // `seen`: reachable from the entry; `rin`: incoming edges from reachable nodes.
        // Marking a node reachable walks everything it reaches and counts their edges.
        fn mark(seen: &mut [bool], rin: &mut [u32], from: u32, adj: &[u32], deg: &[u32], r: usize) {
            if seen[from as usize] {
                return;
            }
            seen[from as usize] = true;
            let mut stack = vec![from];
            while let Some(a) = stack.pop() {
                let s = a as usize * r;
                for &b in &adj[s..s + deg[a as usize] as usize] {
                    rin[b as usize] += 1;
                    if !seen[b as usize] {
                        seen[b as usize] = true;
                        stack.push(b);
                    }
                }
            }
        }
        // A hash of each node's code, to find the reachable copies of a missed node.
        let hashes: Vec<u64> = with_graph_fast!(self, g => {
            (0..n as u32)
                .map(|i| {
                    g.code(i)
                        .iter()
                        .fold(0xcbf2_9ce4_8422_2325u64, |h, &w| (h ^ w).wrapping_mul(0x0100_0000_01b3))
                })
                .collect()
        });
        let mut last_missing = usize::MAX;
        loop {
            let mut seen = vec![false; n];
            let mut rin = vec![0u32; n];
            mark(&mut seen, &mut rin, self.entry, &self.adj, &self.deg, r);
            let missing: Vec<u32> = (0..n as u32)
                .filter(|&u| !seen[u as usize] && !self.deleted[u as usize])
                .collect();
            // Stop when connected, or when a round made no progress (only possible for a
            // tiny `R`, where every replaced edge cuts another node off).
            if missing.is_empty() || missing.len() >= last_missing {
                return Ok(());
            }
            last_missing = missing.len();
            // Reachable live nodes by code hash, for the codes of the missed nodes.
            let wanted: std::collections::HashSet<u64> =
                missing.iter().map(|&u| hashes[u as usize]).collect();
            let mut hosts: HashMap<u64, Vec<u32>> = HashMap::new();
            for v in 0..n {
                if seen[v] && !self.deleted[v] && wanted.contains(&hashes[v]) {
                    hosts.entry(hashes[v]).or_default().push(v as u32);
                }
            }
            for u in missing {
                if seen[u as usize] {
                    continue;
                }
                crate::interrupt::check()?;
                let h = hashes[u as usize];
                // A reachable copy of `u` (the latest first) with room under the twin cap:
                // `(host, slot, appended)`.
                let host = hosts.get(&h).and_then(|hs| {
                    with_graph_fast!(self, g => {
                        let uc = g.code(u);
                        hs.iter().rev().find_map(|&v| {
                            if !g.dist.same(g.code(v), uc) {
                                return None;
                            }
                            let nb = g.neighbors(v);
                            let s = v as usize * r;
                            let twins = nb.iter().filter(|&&j| g.dist.same(g.code(j), uc)).count();
                            if twins < cap && nb.len() < r {
                                return Some((v, s + nb.len(), true));
                            }
                            // In place of the edge to the node with the most other incoming
                            // edges: a twin's when at the cap, so the count stays there.
                            (0..nb.len())
                                .filter(|&i| rin[nb[i] as usize] >= 2)
                                .filter(|&i| twins < cap || g.dist.same(g.code(nb[i]), uc))
                                .max_by_key(|&i| (rin[nb[i] as usize], i))
                                .map(|i| (v, s + i, false))
                        })
                    })
                });
                if let Some((v, slot, appended)) = host {
                    if appended {
                        self.deg[v as usize] += 1;
                    } else {
                        rin[self.adj[slot] as usize] -= 1;
                    }
                    self.adj[slot] = u;
                    rin[u as usize] += 1;
                    mark(&mut seen, &mut rin, u, &self.adj, &self.deg, r);
                    hosts.entry(h).or_default().push(u);
                    continue;
                }
                let qu = self.node_query(u);
                let pool = with_graph_fast!(self, g => {
                    beam_search(&g, &qu, self.entry, l, graph::dup_cap(l), None, None)
                });
                let reach: Vec<u32> = pool
                    .iter()
                    .map(|&(_, v)| v)
                    .filter(|&v| v != u && seen[v as usize] && !self.deleted[v as usize])
                    .collect();
                // Only lists holding fewer than `twin_cap(R)` nodes with `u`'s code take `u`
                // (robust_prune's cap on twins): thousands of copies of one vector would
                // otherwise fill the lists nearest them, the entry's among them, with copies
                // that a search could not leave. A copy left out here is an exact duplicate
                // of a reachable node.
                let (reach, entry_ok) = with_graph_fast!(self, g => {
                    let uc = g.code(u);
                    let ok = |v: u32| {
                        g.neighbors(v).iter().filter(|&&j| g.dist.same(g.code(j), uc)).count()
                            < cap
                    };
                    let reach: Vec<u32> = reach.iter().copied().filter(|&v| ok(v)).collect();
                    (reach, ok(self.entry))
                });
                let nbrs = |v: u32| {
                    let s = v as usize * r;
                    (s, self.deg[v as usize] as usize)
                };
                // Nearest reachable live node with room; else the nearest with an edge to a
                // node that another reachable node also points at (so replacing it cuts
                // nothing off); else the nearest, replacing its most-pointed-at edge.
                let with_room = reach.iter().copied().find(|&v| nbrs(v).1 < r);
                let spare = |v: u32| {
                    let (s, d) = nbrs(v);
                    (0..d)
                        .max_by_key(|&i| (rin[self.adj[s + i] as usize], i))
                        .map(|i| (s + i, rin[self.adj[s + i] as usize]))
                };
                let slot = match with_room {
                    Some(v) => {
                        let (s, d) = nbrs(v);
                        self.deg[v as usize] += 1;
                        s + d
                    }
                    None => {
                        let best = reach
                            .iter()
                            .filter_map(|&v| spare(v))
                            .find(|&(_, c)| c >= 2)
                            .or_else(|| reach.first().and_then(|&v| spare(v)))
                            .or_else(|| if entry_ok { spare(self.entry) } else { None });
                        let Some((slot, _)) = best else { continue };
                        rin[self.adj[slot] as usize] -= 1;
                        slot
                    }
                };
                self.adj[slot] = u;
                rin[u as usize] += 1;
                mark(&mut seen, &mut rin, u, &self.adj, &self.deg, r);
            }
        }
    }

    /// The query forms of every node for a build's prunes (see [`BuildQueries`]).
    fn build_queries(&self) -> Result<BuildQueries> {
        if !self.prune_by_query() {
            return Ok(BuildQueries::default());
        }
        let words = self.query_words();
        let n = self.n_nodes();
        let mut forms = huge::filled(n * words, 0u64);
        forms
            .par_chunks_mut(words * 1024)
            .enumerate()
            .try_for_each(|(c, chunk)| {
                crate::interrupt::check()?;
                for (k, out) in chunk.chunks_exact_mut(words).enumerate() {
                    out.copy_from_slice(&self.node_query((c * 1024 + k) as u32));
                }
                Ok::<_, Error>(())
            })?;
        Ok(BuildQueries { words, forms })
    }

    /// Whether RobustPrune scores pairs of nodes with the query form of one against the code
    /// of the other rather than code against code: for the scalar codes, whose code-to-code
    /// distance carries the rounding of both sides. On SIFT 200k (R 64, L_build 128) it
    /// raised the 4-bit graph's recall@10 at `ef_search` 64 / 128 from 0.924 / 0.976 to
    /// 0.968 / 0.995 and the 8-bit graph's from 0.983 / 0.994 to 0.988 / 0.995, for 6 % more
    /// build CPU time (the query forms are computed once per `add`, [`BuildQueries`]);
    /// no change at 20k rows. The 1- and 2-bit codes keep the symmetric code distance.
    fn prune_by_query(&self) -> bool {
        self.params.bits > 2
    }

    /// The distance from node `p` to other nodes: its query form against their codes when
    /// `query` is given, else code against code.
    fn node_dist<'g, D: CodeDist>(
        &self,
        g: &'g GraphRef<'g, D>,
        p: u32,
        query: Option<&QueryOf<'_>>,
    ) -> impl Fn(u32) -> u32 + 'g {
        let qp = query.map(|f| f(p).into_owned());
        move |j| match &qp {
            Some(qp) => g.d(qp, j),
            None => g.d_nodes(p, j),
        }
    }

    /// Changes the row stride of the adjacency array (keeping every list).
    fn restride(&mut self, stride: usize) {
        if stride == self.stride {
            return;
        }
        self.adj = restrided(&self.adj, &self.deg, self.stride, stride, self.deg.len());
        self.stride = stride;
    }

    /// Prunes every list longer than `R` (left by the slack of the build) and goes back to
    /// stride `R`.
    fn finish_slack(&mut self, forms: &BuildQueries) -> Result<()> {
        let r = self.params.r;
        let alpha = self.params.alpha;
        let deleted = &self.deleted;
        let skip = |i: u32| deleted[i as usize];
        let n = self.n_nodes();
        let q = |i: u32| forms.get(i);
        let qf = forms.active().then_some(&q as &QueryOf<'_>);
        let updates: Vec<(u32, Vec<u32>)> = with_graph!(self, g => {
            (0..n as u32)
                .into_par_iter()
                .filter(|&p| g.neighbors(p).len() > r)
                .map(|p| {
                    crate::interrupt::check()?;
                    let dp = self.node_dist(&g, p, qf);
                    let mut cands: Vec<(u32, u32)> =
                        g.neighbors(p).iter().map(|&j| (dp(j), j)).collect();
                    Ok((p, robust_prune(&g, p, &mut cands, alpha, r, &skip, qf)))
                })
                .collect::<Result<_>>()
        })?;
        for (p, list) in updates {
            self.set_list(p, &list);
        }
        self.restride(r);
        Ok(())
    }

    fn permutation(&self, range: std::ops::Range<u32>, stream: u64) -> Vec<u32> {
        let seed = self.params.seed;
        let mut v: Vec<(u64, u32)> = range
            .map(|i| (crate::rng::counter_u64(seed, stream, i as u64), i))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, i)| i).collect()
    }

    /// Code-space medoid of the live nodes: the node whose code is nearest to the code of the
    /// (transformed) mean vector; ties to the smaller node.
    fn medoid(&self) -> u32 {
        let dim = self.params.dim;
        let mut acc = vec![0f64; dim];
        let mut cnt = 0usize;
        let mut buf = vec![0f32; dim];
        for i in 0..self.n_nodes() {
            if self.deleted[i] {
                continue;
            }
            let row = self.row(i, &mut buf);
            cnt += 1;
            for (a, &v) in acc.iter_mut().zip(row) {
                *a += v as f64;
            }
        }
        let mean: Vec<f32> = acc.iter().map(|a| (a / cnt.max(1) as f64) as f32).collect();
        let mc = self
            .encode_query(&mean)
            .unwrap_or_else(|_| vec![0; self.cw]);
        with_graph!(self, g => {
            (0..self.n_nodes() as u32)
                .filter(|&i| !self.deleted[i as usize])
                .min_by_key(|&i| (g.d(&mc, i), i))
                .unwrap_or(0)
        })
    }

    fn build_full(&mut self, progress: Option<Progress<'_>>, forms: &BuildQueries) -> Result<()> {
        let n = self.n_nodes();
        self.adj.iter_mut().for_each(|a| *a = 0);
        self.deg.iter_mut().for_each(|d| *d = 0);
        self.entry = self.medoid();
        let entry = self.entry;
        let mut order = vec![entry];
        order.extend(
            self.permutation(0..n as u32, 0)
                .into_iter()
                .filter(|&i| i != entry && !self.deleted[i as usize]),
        );
        let total = 2 * order.len();
        // The first pass (alpha = 1) only seeds the second, whose searches and prunes decide
        // the final lists: it searches with half the beam, not raised to R (with the
        // defaults below 64 dimensions, R = 56 and L_build = 64, a beam of 32 instead of 56;
        // at the defaults from 64 dimensions on, 64 as before). At R = L_build = 64 that
        // saved 12-21 % of the build CPU time on 20k rows of SIFT, GloVe-50 and glosses, for
        // recall@10 at ef_search 64 / 128 within 0.003 (`benches/ann_build.py`).
        let l1 = (self.params.l_build / 2).max(1);
        self.insert_pass(&order, 1.0, l1, progress, 0, total, forms)?;
        let order2 = self.permutation(0..n as u32, 1);
        let order2: Vec<u32> = order2
            .into_iter()
            .filter(|&i| !self.deleted[i as usize])
            .collect();
        self.insert_pass(
            &order2,
            self.params.alpha,
            self.params.l_build.max(self.params.r),
            progress,
            total / 2,
            total,
            forms,
        )
    }

    /// Inserts `order` in batches (1, 2, 4, ... up to 2% of the nodes, at least 64, at
    /// most 4096). Within a batch the searches and prunes run in parallel against the graph
    /// as it was before the batch, and their results are applied in order, so the graph
    /// depends only on the data and the seed, never on the thread count. Searches use beam
    /// width `l_build` as given (the callers raise it to `R` where it decides final lists).
    #[allow(clippy::too_many_arguments)]
    fn insert_pass(
        &mut self,
        order: &[u32],
        alpha: f64,
        l_build: usize,
        progress: Option<Progress<'_>>,
        done0: usize,
        total: usize,
        forms: &BuildQueries,
    ) -> Result<()> {
        let r = self.params.r;
        let stride = self.stride;
        let l = l_build.max(1);
        let max_batch = (self.n_nodes() / 50).clamp(64, 4096);
        let mut start = 0;
        let mut bs = 1;
        while start < order.len() {
            let end = (start + bs).min(order.len());
            let batch = &order[start..end];
            let deleted = &self.deleted;
            let skip = |i: u32| deleted[i as usize];
            let entry = self.entry;
            let q = |i: u32| forms.get(i);
            let qf = forms.active().then_some(&q as &QueryOf<'_>);
            let lists: Vec<Vec<u32>> = with_graph_fast!(self, g => {
                // Groups of searches run in lock-step (`graph::run_beams`): the same lists
                // as one search at a time, with the cache misses of one overlapping the work
                // of the others.
                let work = |ps: &[u32]| -> Result<Vec<Vec<u32>>> {
                    crate::interrupt::check()?;
                    let pcs: Vec<_> = ps
                        .iter()
                        .map(|&p| if forms.active() { forms.get(p) } else { self.node_query(p) })
                        .collect();
                    let mut cands: Vec<Vec<(u32, u32)>> =
                        ps.iter().map(|_| Vec::with_capacity(2 * l.min(g.n()))).collect();
                    let mut beams: Vec<graph::Beam<'_>> = pcs
                        .iter()
                        .zip(cands.iter_mut())
                        .map(|(pc, c)| graph::Beam::new(pc, l, graph::dup_cap(l), Some(c), None))
                        .collect();
                    graph::run_beams(&g, &mut beams, entry);
                    drop(beams);
                    Ok(ps
                        .iter()
                        .zip(&pcs)
                        .zip(cands.iter_mut())
                        .map(|((&p, pc), cands)| {
                            for &nb in g.neighbors(p) {
                                cands.push((g.d(pc, nb), nb));
                            }
                            robust_prune(&g, p, cands, alpha, r, &skip, qf)
                        })
                        .collect())
                };
                let nested: Vec<Vec<Vec<u32>>> = if batch.len() > 1 {
                    batch.par_chunks(BUILD_GROUP).map(work).collect::<Result<_>>()
                } else {
                    batch.chunks(BUILD_GROUP).map(work).collect::<Result<_>>()
                }?;
                Ok::<_, Error>(nested.into_iter().flatten().collect())
            })?;
            let mut pairs: Vec<(u32, u32)> = Vec::new();
            for (&p, list) in batch.iter().zip(&lists) {
                self.set_list(p, list);
                pairs.extend(list.iter().map(|&j| (j, p)));
            }
            pairs.sort_unstable();
            pairs.dedup();
            let mut groups: Vec<(u32, Vec<u32>)> = Vec::new();
            for (j, p) in pairs {
                match groups.last_mut() {
                    Some((gj, v)) if *gj == j => v.push(p),
                    _ => groups.push((j, vec![p])),
                }
            }
            let deleted = &self.deleted;
            let skip = |i: u32| deleted[i as usize];
            let q = |i: u32| forms.get(i);
            let qf = forms.active().then_some(&q as &QueryOf<'_>);
            let updates: Vec<(u32, Vec<u32>)> = with_graph_fast!(self, g => {
                let work = |(j, srcs): &(u32, Vec<u32>)| {
                    let cur = g.neighbors(*j);
                    let mut merged = cur.to_vec();
                    for &s in srcs {
                        if !cur.contains(&s) {
                            merged.push(s);
                        }
                    }
                    if merged.len() == cur.len() {
                        return None;
                    }
                    if merged.len() <= stride {
                        // Appended without a prune, but under robust_prune's cap on
                        // "twins" (neighbours with `j`'s own code): with thousands of
                        // copies of one vector, their back-edges would otherwise fill the
                        // lists of the copies (the entry among them) with copies only, and
                        // a search starting there could not leave the group.
                        let jc = g.code(*j);
                        let twin = |m: u32| g.dist.same(g.code(m), jc);
                        let cap = graph::twin_cap(r);
                        let mut twins = cur.iter().filter(|&&m| twin(m)).count();
                        let mut out = cur.to_vec();
                        for &s in &merged[cur.len()..] {
                            if twin(s) {
                                if twins >= cap {
                                    continue;
                                }
                                twins += 1;
                            }
                            out.push(s);
                        }
                        return (out.len() > cur.len()).then_some((*j, out));
                    }
                    let dj = self.node_dist(&g, *j, qf);
                    let mut cands: Vec<(u32, u32)> = merged.iter().map(|&m| (dj(m), m)).collect();
                    Some((*j, robust_prune(&g, *j, &mut cands, alpha, r, &skip, qf)))
                };
                if groups.len() > 1 {
                    groups.par_iter().filter_map(work).collect()
                } else {
                    groups.iter().filter_map(work).collect()
                }
            });
            for (j, list) in updates {
                self.set_list(j, &list);
            }
            start = end;
            bs = (bs * 2).min(max_batch);
            if let Some(cb) = progress {
                cb(done0 + end, total)?;
            }
            crate::interrupt::check()?;
        }
        Ok(())
    }

    /// Repairs the graph around removed nodes (FreshDiskANN-style: each live node with a
    /// removed neighbour is re-pruned over its live neighbours and theirs) and drops them.
    pub fn compact(&mut self) -> Result<()> {
        if self.n_deleted == 0 {
            // Nothing to repair; lists read from a file of versions 1-3 still get their
            // order (and the degree bound), as after every other compaction.
            if self.search_degree == 0 && self.params.bits > 2 {
                self.order_lists()?;
            }
            return self.renumber();
        }
        let r = self.params.r;
        let alpha = self.params.alpha;
        let n = self.n_nodes();
        let deleted = &self.deleted;
        let skip = |i: u32| deleted[i as usize];
        let q = |i: u32| self.node_query(i);
        let qf = self.prune_by_query().then_some(&q as &QueryOf<'_>);
        // Stage everything in a new index; `self` changes only once nothing can fail.
        let updates: Vec<(u32, Vec<u32>)> = with_graph!(self, g => {
            (0..n as u32)
                .into_par_iter()
                .filter(|&p| !deleted[p as usize] && g.neighbors(p).iter().any(|&j| deleted[j as usize]))
                .map(|p| {
                    crate::interrupt::check()?;
                    let dp = self.node_dist(&g, p, qf);
                    let mut cands = Vec::new();
                    for &j in g.neighbors(p) {
                        if deleted[j as usize] {
                            for &jj in g.neighbors(j) {
                                cands.push((dp(jj), jj));
                            }
                        } else {
                            cands.push((dp(j), j));
                        }
                    }
                    Ok((p, robust_prune(&g, p, &mut cands, alpha, r, &skip, qf)))
                })
                .collect::<Result<_>>()
        })?;
        let mut repaired: HashMap<u32, Vec<u32>> = updates.into_iter().collect();
        // Renumber the live nodes.
        let mut remap = vec![u32::MAX; n];
        let mut next = 0u32;
        for (slot, &del) in remap.iter_mut().zip(&self.deleted) {
            if !del {
                *slot = next;
                next += 1;
            }
        }
        let m = next as usize;
        let dim = self.params.dim;
        let cw = self.cw;
        let ov = self.vectors.as_slice();
        let mut codes = huge::with_capacity(m * cw);
        let compact = self.compact.as_ref();
        let mut vecs = huge::with_capacity(if compact.is_some() { 0 } else { m * dim });
        let mut adj = huge::filled(m * r, 0u32);
        let mut deg = vec![0u32; m];
        let mut ids = Vec::with_capacity(m);
        let mut ranks = Vec::with_capacity(m);
        for i in 0..n {
            if self.deleted[i] {
                continue;
            }
            let ni = remap[i] as usize;
            codes.extend_from_slice(&self.codes[i * cw..(i + 1) * cw]);
            if compact.is_none() {
                vecs.extend_from_slice(&ov[i * dim..(i + 1) * dim]);
            }
            ids.push(self.ids[i]);
            ranks.push(self.rank[i]);
            let list = repaired.remove(&(i as u32));
            let mut d = 0;
            for &j in list.as_deref().unwrap_or(self.neighbors(i)) {
                if remap[j as usize] != u32::MAX {
                    adj[ni * r + d] = remap[j as usize];
                    d += 1;
                }
            }
            deg[ni] = d as u32;
        }
        let id_map = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i as u32))
            .collect();
        let mut staged = BQGraphIndex {
            params: self.params.clone(),
            code_dim: self.code_dim,
            cw,
            codes,
            stride: r,
            adj,
            deg,
            vectors: Vectors::Owned(vecs),
            compact: compact.map(|c| {
                let keep: Vec<bool> = self.deleted.iter().map(|&d| !d).collect();
                c.retained(&keep)
            }),
            ids,
            rank: dense_ranks(&ranks),
            start_sample: Vec::new(),
            deleted: vec![false; m],
            n_deleted: 0,
            id_map,
            entry: 0,
            // Moved back below if the repair is interrupted.
            rot: self.rot.take(),
            meta: self.meta.clone(),
            search_degree: self.search_degree,
        };
        staged.entry = if !self.deleted[self.entry as usize] {
            remap[self.entry as usize]
        } else if m > 0 {
            staged.medoid()
        } else {
            0
        };
        match staged
            .connect_unreachable()
            .and_then(|()| staged.order_lists())
            .and_then(|()| staged.renumber())
        {
            Ok(()) => {
                *self = staged;
                Ok(())
            }
            Err(e) => {
                self.rot = staged.rot.take();
                Err(e)
            }
        }
    }
}

/// Ranks `0..n` in the order of `ranks` (distinct values): the insertion ranks of the nodes
/// a compaction keeps.
fn dense_ranks(ranks: &[u32]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..ranks.len() as u32).collect();
    order.sort_unstable_by_key(|&i| ranks[i as usize]);
    let mut out = vec![0u32; ranks.len()];
    for (r, &i) in order.iter().enumerate() {
        out[i as usize] = r as u32;
    }
    out
}
