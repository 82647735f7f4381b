//! The order of the neighbour lists of 4- and 8-bit indexes, and the search-time degree
//! bound that reads it.
//!
//! After construction (and after `compact`), each list is reordered so that the neighbours
//! an `alpha = 1` RobustPrune would keep (the relative-neighbourhood "core": a neighbour is
//! in it when no nearer core neighbour is at least as near to it as the node is) come
//! first, by increasing code distance, then the `alpha > 1` extras, by increasing code
//! distance. The lists keep the same sets, so a search that expands every neighbour returns
//! the same results as before the reordering; a search that expands only the first `d`
//! neighbours of each node scores fewer codes per expansion and keeps the edges that matter
//! most for navigation (the extras are the long edges RobustPrune's `alpha` adds for
//! larger hops, which a wide beam uses and a narrow one mostly wastes).
//!
//! The index records the bound `D = min(R, round(2 * mean core size))`, and a search with
//! beam width `ef` expands at most `max(D, 3 * ef)` neighbours of each node
//! ([`auto_degree`]), so only narrow beams are bounded. Measured (`benches/ann_degree.py`:
//! 20k rows, 500 queries, 1 thread, CPU time, QPS at recall@10 0.90 / 0.95 / 0.98
//! interpolated over `ef_search` 10-48, the same index searched with full lists /
//! `max(D, 2 ef)` / `max(D, 3 ef)` / `max(D, 4 ef)`, one run each at load 3-5): glosses bits=4 +hadamard, float16 store
//! (mean degree 55, core 16.8, `D` 34): 63.5k / 60.1k / 45.4k, 77.5k / 61.0k / 40.8k,
//! 80.1k / 63.1k / 43.1k, 78.4k / 66.7k / 43.3k; SIFT `bits="auto"` (4 bits; degree 37,
//! core 13.4, `D` 27): 110.7k / 90.2k / 71.7k, 112.0k / 85.9k / 67.3k, 115.0k / 91.5k /
//! 70.3k, 105.0k / 93.1k / 68.9k; GloVe-50 `bits="auto"` (`D` 38 of R 56): all four within
//! 1 %. A fixed bound without the beam term lost at high recall (glosses `d` = 32: 39.0k at
//! 0.98 against 46-48k), and one below the core size lost everywhere (GloVe-50 `d` = 16:
//! 38.3k at 0.95 against 66.0k); `D` from 1.5 times the core (glosses 25) measured alike.

use rayon::prelude::*;

use super::index::BQGraphIndex;
use crate::Result;

/// The neighbours a search with beam width `beam` expands per node, given the index's bound
/// `base` (see the module docs; 0: the lists are not ordered, every neighbour).
pub(super) fn auto_degree(base: u32, beam: usize) -> usize {
    if base == 0 {
        usize::MAX
    } else {
        (base as usize).max(beam.saturating_mul(3))
    }
}

impl BQGraphIndex {
    /// Reorders every neighbour list of a 4- or 8-bit index core first (see the module docs)
    /// and records the bound `D`; 1- and 2-bit indexes are left as they are.
    pub(super) fn order_lists(&mut self) -> Result<()> {
        if self.params.bits <= 2 || self.n_nodes() == 0 {
            self.search_degree = 0;
            return Ok(());
        }
        let n = self.n_nodes();
        let lists: Vec<(Vec<u32>, usize)> = with_graph!(self, g => {
            (0..n as u32)
                .into_par_iter()
                .map(|p| {
                    if p % 4096 == 0 {
                        crate::interrupt::check()?;
                    }
                    let mut cands: Vec<(u32, u32)> =
                        g.neighbors(p).iter().map(|&j| (g.d_nodes(p, j), j)).collect();
                    cands.sort_unstable();
                    let mut list: Vec<u32> = Vec::with_capacity(cands.len());
                    let mut extras: Vec<u32> = Vec::new();
                    for &(d, j) in &cands {
                        if list.iter().any(|&c| g.d_nodes(c, j) <= d) {
                            extras.push(j);
                        } else {
                            list.push(j);
                        }
                    }
                    let core = list.len();
                    list.extend(extras);
                    Ok((list, core))
                })
                .collect::<Result<_>>()
        })?;
        let core: usize = lists.iter().map(|l| l.1).sum();
        let base = (2.0 * core as f64 / n as f64).round() as usize;
        for (p, (list, _)) in lists.into_iter().enumerate() {
            self.set_list(p as u32, &list);
        }
        self.search_degree = base.clamp(1, self.params.r) as u32;
        Ok(())
    }
}
