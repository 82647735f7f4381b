//! Item-wise packers: best-fit decreasing (free capacities in a max segment tree, the
//! structure TRL uses, or an ordered map when `max_len` is large next to the number of
//! items), first-fit decreasing (a max segment tree over bins) and next fit in input order.
//! Each returns the bin of every item; [`csr_from_bins`] turns that into pack offsets and
//! slots. Memory follows the number of items, never `max_len` alone.

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};

use rayon::prelude::*;

use super::{dense_in_max_len, poll};
use crate::Result;

/// Item order for the decreasing algorithms: by size descending, ties by item index (stable).
pub(super) fn decreasing_order(size: &[u32], max_len: u32) -> Vec<u32> {
    let n = size.len();
    if dense_in_max_len(max_len as i64, n) {
        // Counting sort, O(n + L).
        let mut count = vec![0usize; max_len as usize + 2];
        for &s in size {
            count[(max_len - s) as usize + 1] += 1;
        }
        for k in 1..count.len() {
            count[k] += count[k - 1];
        }
        let mut order = vec![0u32; n];
        for (i, &s) in size.iter().enumerate() {
            let slot = &mut count[(max_len - s) as usize];
            order[*slot] = i as u32;
            *slot += 1;
        }
        order
    } else {
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.par_sort_by_key(|&i| Reverse(size[i as usize]));
        order
    }
}

/// A max segment tree whose leaves are `0..n`; leaves past `n` hold 0 (so a tree sized to a
/// power of two never reports a padding leaf, see case P1).
struct MaxTree {
    size: usize,
    t: Vec<u32>,
}

impl MaxTree {
    fn new(n: usize, init: impl Fn(usize) -> u32) -> Self {
        let size = n.max(1).next_power_of_two();
        let mut t = vec![0u32; 2 * size];
        for i in 0..n {
            t[size + i] = init(i);
        }
        for i in (1..size).rev() {
            t[i] = t[2 * i].max(t[2 * i + 1]);
        }
        MaxTree { size, t }
    }

    fn set(&mut self, leaf: usize, v: u32) {
        let mut i = self.size + leaf;
        self.t[i] = v;
        while i > 1 {
            i /= 2;
            let m = self.t[2 * i].max(self.t[2 * i + 1]);
            if self.t[i] == m {
                break; // ancestors are unchanged too
            }
            self.t[i] = m;
        }
    }

    /// Leftmost leaf whose value is `>= x`.
    fn leftmost_at_least(&self, x: u32) -> Option<usize> {
        if self.t[1] < x {
            return None;
        }
        let mut i = 1;
        while i < self.size {
            // Branch-free descent: go right exactly when the left subtree cannot fit x.
            i = 2 * i + (self.t[2 * i] < x) as usize;
        }
        Some(i - self.size)
    }
}

/// Open bins by free capacity, for best fit. Bins with the same free capacity wait in FIFO
/// order (TRL's `space_to_bin` deque): a tie goes to the bin that has had that free capacity
/// the longest.
trait FreeBins {
    /// Removes and returns the bin with the smallest free capacity `>= s` (`s >= 1`).
    fn take_fit(&mut self, s: u32) -> Option<u32>;
    /// Adds `bin`, which has `free >= 1` tokens left.
    fn put(&mut self, free: u32, bin: u32);
}

/// Capacities `0..=max_len` as dense arrays: leaf `c` of the tree holds `c` when some open bin
/// has exactly `c` free tokens, else 0, so the leftmost leaf `>= s` is the best fit; one queue
/// per capacity. O(1) queue operations, where a min-heap by bin id costs a cache-missing
/// O(log n) on large inputs.
struct DenseFree {
    tree: MaxTree,
    by_free: Vec<VecDeque<u32>>,
}

/// Bytes of [`DenseFree`] per capacity: tree (up to 16) and an empty queue (32).
const DENSE_FREE_BYTES: u128 = 48;

impl FreeBins for DenseFree {
    #[inline]
    fn take_fit(&mut self, s: u32) -> Option<u32> {
        let c = self.tree.leftmost_at_least(s)?;
        let queue = &mut self.by_free[c];
        let b = queue.pop_front().expect("tree and queues agree");
        if queue.is_empty() {
            self.tree.set(c, 0);
        }
        Some(b)
    }

    #[inline]
    fn put(&mut self, free: u32, bin: u32) {
        let queue = &mut self.by_free[free as usize];
        if queue.is_empty() {
            self.tree.set(free as usize, free);
        }
        queue.push_back(bin);
    }
}

/// The free capacities that occur, in an ordered map (memory O(bins), O(log bins) per
/// operation): for `max_len` large next to the number of items.
struct SparseFree(BTreeMap<u32, VecDeque<u32>>);

impl FreeBins for SparseFree {
    fn take_fit(&mut self, s: u32) -> Option<u32> {
        let (&c, queue) = self.0.range_mut(s..).next()?;
        let b = queue.pop_front().expect("queues in the map are non-empty");
        if queue.is_empty() {
            self.0.remove(&c);
        }
        Some(b)
    }

    fn put(&mut self, free: u32, bin: u32) {
        self.0.entry(free).or_default().push_back(bin);
    }
}

/// Best fit over `order` with the open bins in `open`.
fn best_fit<F: FreeBins>(
    size: &[u32],
    order: &[u32],
    max_len: u32,
    limit: usize,
    mut open: F,
) -> Result<(Vec<u32>, usize)> {
    let mut free = Vec::<u32>::new();
    let mut count = Vec::<u32>::new();
    let mut bin_of = vec![0u32; size.len()];
    for (j, &it) in order.iter().enumerate() {
        poll(j)?;
        let s = size[it as usize];
        let bin = match open.take_fit(s) {
            Some(b) => b,
            None => {
                free.push(max_len);
                count.push(0);
                (free.len() - 1) as u32
            }
        };
        let bu = bin as usize;
        free[bu] -= s;
        count[bu] += 1;
        bin_of[it as usize] = bin;
        let f = free[bu];
        if f > 0 && (count[bu] as usize) < limit {
            open.put(f, bin);
        }
    }
    Ok((bin_of, free.len()))
}

/// Bin of each item (bins are numbered in opening order), the number of bins, and the item
/// order.
pub(super) fn best_fit_decreasing(
    size: &[u32],
    max_len: u32,
    limit: usize,
) -> Result<(Vec<u32>, usize, Option<Vec<u32>>)> {
    let order = decreasing_order(size, max_len);
    let (bin_of, nbins) = if dense_in_max_len(max_len as i64, size.len()) {
        crate::memory::ensure_fits("max_len", (max_len as u128 + 1) * DENSE_FREE_BYTES)?;
        let open = DenseFree {
            tree: MaxTree::new(max_len as usize + 1, |_| 0),
            by_free: vec![VecDeque::new(); max_len as usize + 1],
        };
        best_fit(size, &order, max_len, limit, open)?
    } else {
        best_fit(size, &order, max_len, limit, SparseFree(BTreeMap::new()))?
    };
    Ok((bin_of, nbins, Some(order)))
}

/// As [`best_fit_decreasing`], with first fit.
pub(super) fn first_fit_decreasing(
    size: &[u32],
    max_len: u32,
    limit: usize,
) -> Result<(Vec<u32>, usize, Option<Vec<u32>>)> {
    let order = decreasing_order(size, max_len);
    let n = size.len();
    // One leaf per potential bin; unopened bins have full capacity, so the leftmost fitting
    // leaf is either an open bin or the next one to open.
    let mut tree = MaxTree::new(n, |_| max_len);
    let mut count = vec![0u32; n];
    let mut free = vec![max_len; n];
    let mut bin_of = vec![0u32; n];
    let mut nbins = 0usize;
    for (j, &it) in order.iter().enumerate() {
        poll(j)?;
        let s = size[it as usize];
        let b = tree
            .leftmost_at_least(s)
            .expect("an unopened bin always fits");
        nbins = nbins.max(b + 1);
        free[b] -= s;
        count[b] += 1;
        bin_of[it as usize] = b as u32;
        let v = if (count[b] as usize) < limit {
            free[b]
        } else {
            0
        };
        tree.set(b, v);
    }
    Ok((bin_of, nbins, Some(order)))
}

/// Next fit in input order (no item order: slots follow the input).
pub(super) fn next_fit(
    size: &[u32],
    max_len: u32,
    limit: usize,
) -> Result<(Vec<u32>, usize, Option<Vec<u32>>)> {
    let mut bin_of = vec![0u32; size.len()];
    let mut nbins = 0usize;
    let mut free = 0u32;
    let mut count = 0usize;
    for (i, &s) in size.iter().enumerate() {
        poll(i)?;
        if nbins == 0 || s > free || count >= limit {
            nbins += 1;
            free = max_len;
            count = 0;
        }
        free -= s;
        count += 1;
        bin_of[i] = (nbins - 1) as u32;
    }
    Ok((bin_of, nbins, None))
}

pub(super) fn csr_from_bins(
    bin_of: &[u32],
    nbins: usize,
    order: impl Iterator<Item = usize>,
) -> (Vec<i64>, Vec<i64>) {
    let mut offsets = vec![0i64; nbins + 1];
    for &b in bin_of {
        offsets[b as usize + 1] += 1;
    }
    for b in 0..nbins {
        offsets[b + 1] += offsets[b];
    }
    let mut cursor: Vec<i64> = offsets[..nbins].to_vec();
    let mut slots = vec![0i64; bin_of.len()];
    for it in order {
        let b = bin_of[it] as usize;
        slots[cursor[b] as usize] = it as i64;
        cursor[b] += 1;
    }
    (offsets, slots)
}
