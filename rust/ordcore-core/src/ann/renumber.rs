//! Graph-order node numbering of 4- and 8-bit indexes.
//!
//! Codes, neighbour lists and rerank rows are stored by node number. After each `add` (once
//! the lists are ordered core first, see [`super::order`]) and after `compact`, the nodes of
//! a 4- or 8-bit index are renumbered in breadth-first order from the entry (neighbours in
//! list order; nodes the walk does not reach follow in their previous order), so the entry
//! becomes node 0 and the lists and codes a search visits together sit close in memory.
//! Every per-node array moves with its node (codes, lists with the ids inside them remapped,
//! rerank rows of every dtype, user ids, removal flags); the id map is rebuilt. The walk of
//! an index already in that order is the identity, so renumbering twice changes nothing.
//!
//! Public outputs do not depend on the numbering: each node keeps its insertion rank
//! ([`BQGraphIndex::rank`], saved from format version 5 on), which orders `ids` and breaks
//! ties of exact distances in reranked results and scans; the search start sample is
//! picked by insertion rank. Inside the code-space beam, ties still go to the smaller node
//! number, so a search's candidates, and results without rerank, can differ at an exact
//! code-distance tie (duplicate vectors); the reranked results of the tests' data sets are
//! identical.
//!
//! 1- and 2-bit indexes keep insertion numbering (their codes, files and results are as
//! before). The environment variable `ORDCORE_ANN_RENUMBER=0` (read on each `add` and
//! `compact`) keeps insertion numbering for 4- and 8-bit indexes too, so that tests and
//! benchmarks can compare the same graph both ways.
//!
//! Measured (`benches/ann_renumber.py --dataset sift --n 200000 --nq 1000`: the same graph in
//! both numberings, 1 search thread, CPU time, best of 4 interleaved runs at load 4, bits=8
//! by `bits="auto"`): QPS at `ef_search` 16 / 24 / 32 / 48 (recall@10 0.948 / 0.967 /
//! 0.972 / 0.983, identical) 85.1k / 65.7k / 56.4k / 42.2k in insertion order, 88.7k /
//! 68.8k / 58.8k / 44.7k renumbered (+4.2 / +4.6 / +4.2 / +5.9 %); the renumbering costs
//! 0.27 s CPU after a 22.7 s build (1.2 %). A second run (6 runs, load 1.5): +5.0 / +5.9 /
//! +5.3 / +6.2 %; at recall@10 0.95 (interpolated) 82.9k against 87.1k QPS.

use std::collections::HashMap;

use super::index::{BQGraphIndex, Vectors};
use super::store::{CompactRows, RowBytes};
use crate::Result;

/// Whether 4- and 8-bit indexes are renumbered (`ORDCORE_ANN_RENUMBER` is not `0`).
fn enabled() -> bool {
    std::env::var("ORDCORE_ANN_RENUMBER").map_or(true, |v| v.trim() != "0")
}

/// Breadth-first order of the `n` nodes from `entry` over the lists `adj` (row stride `r`,
/// `deg` per node), neighbours in list order, then the unreached nodes in increasing
/// number: `order[new] = old`.
pub(super) fn bfs_order(adj: &[u32], deg: &[u32], r: usize, entry: u32) -> Vec<u32> {
    let n = deg.len();
    let mut seen = vec![false; n];
    let mut order = Vec::with_capacity(n);
    if n == 0 {
        return order;
    }
    seen[entry as usize] = true;
    order.push(entry);
    let mut head = 0;
    let mut next_unseen = 0usize;
    while order.len() < n {
        if head == order.len() {
            // The walk ended: continue from the first node it did not reach.
            while seen[next_unseen] {
                next_unseen += 1;
            }
            seen[next_unseen] = true;
            order.push(next_unseen as u32);
        }
        let p = order[head] as usize;
        head += 1;
        for &j in &adj[p * r..p * r + deg[p] as usize] {
            if !seen[j as usize] {
                seen[j as usize] = true;
                order.push(j);
            }
        }
    }
    order
}

/// Rows of `width` items of `src` in the order `order` (`out[k] = src[order[k]]`).
fn gather<T: Copy>(src: &[T], width: usize, order: &[u32]) -> Vec<T> {
    let mut out = super::huge::with_capacity(order.len() * width);
    for &o in order {
        let o = o as usize;
        out.extend_from_slice(&src[o * width..(o + 1) * width]);
    }
    out
}

impl BQGraphIndex {
    /// Renumbers a 4- or 8-bit index in graph order (see the module docs) and refreshes the
    /// search start sample; 1- and 2-bit indexes keep their numbering. Fails (with nothing
    /// changed) only when the copies do not fit in memory or on an interrupt.
    pub(super) fn renumber(&mut self) -> Result<()> {
        if self.params.bits > 2 && self.n_nodes() > 0 && enabled() {
            let order = bfs_order(&self.adj, &self.deg, self.stride, self.entry);
            if order.iter().enumerate().any(|(k, &o)| o as usize != k) {
                self.apply_order(&order)?;
            }
        }
        self.refresh_start_sample();
        Ok(())
    }

    /// Moves node `order[k]` to number `k` in every per-node array.
    pub(super) fn apply_order(&mut self, order: &[u32]) -> Result<()> {
        let n = self.n_nodes();
        debug_assert_eq!(order.len(), n);
        let dim = self.params.dim;
        let r = self.stride;
        // The copies coexist with the arrays they replace until the end.
        let rows = match &self.compact {
            Some(c) => c.as_bytes().len(),
            None => self.vectors.as_slice().len() * 4,
        };
        crate::memory::ensure_fits(
            "X",
            (self.codes.len() * 8 + self.adj.len() * 4 + rows) as u128 + n as u128 * 32,
        )?;
        crate::interrupt::check()?;
        let mut new_of = vec![0u32; n];
        for (k, &o) in order.iter().enumerate() {
            new_of[o as usize] = k as u32;
        }
        let codes = gather(&self.codes, self.cw, order);
        let mut adj = super::huge::filled(n * r, 0u32);
        let mut deg = vec![0u32; n];
        for (k, &o) in order.iter().enumerate() {
            let o = o as usize;
            let d = self.deg[o] as usize;
            for (dst, &j) in adj[k * r..k * r + d]
                .iter_mut()
                .zip(&self.adj[o * r..o * r + d])
            {
                *dst = new_of[j as usize];
            }
            deg[k] = d as u32;
        }
        let compact = self.compact.as_ref().map(|c| CompactRows {
            dtype: c.dtype,
            dim: c.dim,
            bytes: RowBytes::Owned(gather(c.as_bytes(), c.dtype.row_bytes(dim), order)),
        });
        let vectors = if self.compact.is_some() {
            Vectors::Owned(Vec::new())
        } else {
            Vectors::Owned(gather(self.vectors.as_slice(), dim, order))
        };
        let ids = gather(&self.ids, 1, order);
        let rank = gather(&self.rank, 1, order);
        let deleted = gather(&self.deleted, 1, order);
        let id_map: HashMap<i64, u32> = ids
            .iter()
            .zip(&deleted)
            .enumerate()
            .filter(|(_, (_, &d))| !d)
            .map(|(k, (&id, _))| (id, k as u32))
            .collect();
        self.entry = new_of[self.entry as usize];
        self.codes = codes;
        self.adj = adj;
        self.deg = deg;
        self.compact = compact;
        self.vectors = vectors;
        self.ids = ids;
        self.rank = rank;
        self.deleted = deleted;
        self.id_map = id_map;
        Ok(())
    }
}
