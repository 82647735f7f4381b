//! Item-wise packers: best-fit decreasing (a max segment tree over free capacity, the
//! structure TRL uses), first-fit decreasing (a max segment tree over bins) and next fit in
//! input order. Each returns the bin of every item; [`csr_from_bins`] turns that into
//! pack offsets and slots.

use std::cmp::Reverse;
use std::collections::VecDeque;

use super::BFD_MAX_LEN_LIMIT;
use crate::{ensure, Result};

/// Item order for the decreasing algorithms: by size descending, ties by item index (stable).
pub(super) fn decreasing_order(size: &[u32], max_len: u32) -> Vec<u32> {
    let n = size.len();
    if (max_len as usize) <= 4 * n + 1024 {
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
        order.sort_by_key(|&i| Reverse(size[i as usize]));
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

/// Bin of each item (`bins` are numbered in opening order) and the number of bins.
pub(super) fn best_fit_decreasing(
    size: &[u32],
    max_len: u32,
    limit: usize,
) -> Result<(Vec<u32>, usize)> {
    ensure!(
        (max_len as i64) <= BFD_MAX_LEN_LIMIT,
        "max_len",
        "bfd indexes its segment tree by free capacity and supports max_len up to {BFD_MAX_LEN_LIMIT}; use 'ffd' or 'lpfhp'"
    );
    let order = decreasing_order(size, max_len);
    // Leaf c holds c when some open bin has exactly c free tokens, else 0; the leftmost leaf
    // with value >= s is therefore the smallest free capacity that fits s (best fit).
    let mut tree = MaxTree::new(max_len as usize + 1, |_| 0);
    // Bins with the same free capacity wait in FIFO order (TRL's `space_to_bin` deque): a
    // tie goes to the bin that has had that free capacity the longest. O(1) per operation,
    // where a min-heap by bin id costs a cache-missing O(log n) on large inputs.
    let mut by_free: Vec<VecDeque<u32>> = vec![VecDeque::new(); max_len as usize + 1];
    let mut free = Vec::<u32>::new();
    let mut count = Vec::<u32>::new();
    let mut bin_of = vec![0u32; size.len()];
    for &it in &order {
        let s = size[it as usize];
        let bin = match tree.leftmost_at_least(s) {
            Some(c) => {
                let c = c as u32;
                let queue = &mut by_free[c as usize];
                let b = queue.pop_front().expect("tree and queues agree");
                if queue.is_empty() {
                    tree.set(c as usize, 0);
                }
                b
            }
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
            let queue = &mut by_free[f as usize];
            if queue.is_empty() {
                tree.set(f as usize, f);
            }
            queue.push_back(bin);
        }
    }
    Ok((bin_of, free.len()))
}

pub(super) fn first_fit_decreasing(size: &[u32], max_len: u32, limit: usize) -> (Vec<u32>, usize) {
    let order = decreasing_order(size, max_len);
    let n = size.len();
    // One leaf per potential bin; unopened bins have full capacity, so the leftmost fitting
    // leaf is either an open bin or the next one to open.
    let mut tree = MaxTree::new(n, |_| max_len);
    let mut count = vec![0u32; n];
    let mut free = vec![max_len; n];
    let mut bin_of = vec![0u32; n];
    let mut nbins = 0usize;
    for &it in &order {
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
    (bin_of, nbins)
}

pub(super) fn next_fit(size: &[u32], max_len: u32, limit: usize) -> (Vec<u32>, usize) {
    let mut bin_of = vec![0u32; size.len()];
    let mut nbins = 0usize;
    let mut free = 0u32;
    let mut count = 0usize;
    for (i, &s) in size.iter().enumerate() {
        if nbins == 0 || s > free || count >= limit {
            nbins += 1;
            free = max_len;
            count = 0;
        }
        free -= s;
        count += 1;
        bin_of[i] = (nbins - 1) as u32;
    }
    (bin_of, nbins)
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
