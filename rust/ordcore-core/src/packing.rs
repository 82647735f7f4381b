//! Sequence packing for LLM training: plan packs from lengths alone, then materialize them.
//!
//! Planning follows Krell et al., "Efficient Sequence Packing without Cross-contamination"
//! (arXiv 2107.02027): the histogram algorithms SPFHP (shortest-pack-first) and LPFHP
//! (longest-pack-first, the best-fit form) work on counts per length and are ported step for
//! step from Graphcore's published reference implementations, so they reproduce the paper's
//! pack counts exactly; NNLSHP's recipe is solved in Python (`scipy.optimize.nnls`) and
//! realized here by [`plan_from_recipe`]. The item-wise algorithms are best-fit decreasing
//! (a max segment tree over free capacity, the structure TRL uses), first-fit decreasing (a max
//! segment tree over bins) and next fit in input order.
//!
//! A [`Plan`] is CSR: `pack_offsets` (`P + 1`) and one slot per packed segment holding the source
//! sequence index and the token range `start..stop` taken from it (a truncated sequence keeps
//! `0..max_len`, a split one becomes several fragments). [`materialize`] turns a plan plus the
//! tokens into the arrays a training step consumes (`input_ids`, `position_ids`,
//! `segment_ids`, `labels`, `cu_seqlens`).

use std::cmp::Reverse;
use std::collections::{BTreeSet, VecDeque};

use rayon::prelude::*;

use crate::{ensure, rng, Error, Result};

/// Largest `max_len` accepted (token counts stay exact in `i32` `cu_seqlens` per row).
pub const MAX_LEN_LIMIT: i64 = 1 << 30;
/// Largest `max_len` for `bfd`, whose segment tree is indexed by free capacity.
pub const BFD_MAX_LEN_LIMIT: i64 = 1 << 22;
/// RNG stream used for the slot assignment of the histogram algorithms.
const STREAM_ASSIGN: u64 = 0x5041_434B; // "PACK"

/// Packing algorithms implemented in Rust (NNLSHP goes through [`plan_from_recipe`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Shortest-pack-first histogram packing (Krell et al., Graphcore `spfhp.py`).
    Spfhp,
    /// Longest-pack-first histogram packing (Graphcore `lpfhp.py`, `distribute=True`).
    Lpfhp,
    /// Item-wise best-fit decreasing.
    Bfd,
    /// Item-wise first-fit decreasing.
    Ffd,
    /// Next fit in input order.
    Nf,
}

impl Algorithm {
    /// Parses the user-facing name.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "spfhp" => Algorithm::Spfhp,
            "lpfhp" => Algorithm::Lpfhp,
            "bfd" => Algorithm::Bfd,
            "ffd" => Algorithm::Ffd,
            "nf" => Algorithm::Nf,
            other => {
                return Err(Error::invalid(
                    "algorithm",
                    format!(
                        "unknown algorithm {other:?}; expected one of 'lpfhp', 'spfhp', 'nnlshp', 'bfd', 'ffd', 'nf'"
                    ),
                ))
            }
        })
    }
}

/// What to do with a sequence longer than `max_len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlong {
    /// Raise, naming the first such sequence.
    Error,
    /// Keep the first `max_len` tokens; the rest are counted as dropped.
    Truncate,
    /// Cut into `ceil(len / max_len)` fragments.
    Split,
    /// Leave the sequence out; its tokens are counted as dropped.
    Drop,
}

impl Overlong {
    /// Parses the user-facing name.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name {
            "error" => Overlong::Error,
            "truncate" => Overlong::Truncate,
            "split" => Overlong::Split,
            "drop" => Overlong::Drop,
            other => {
                return Err(Error::invalid(
                    "overlong",
                    format!(
                        "unknown policy {other:?}; expected 'error', 'truncate', 'split' or 'drop'"
                    ),
                ))
            }
        })
    }
}

/// Options shared by every planning entry point.
#[derive(Clone, Copy, Debug)]
pub struct PlanOptions {
    /// Capacity of a pack in tokens (`L`).
    pub max_len: i64,
    /// At most this many segments per pack (`None`: unlimited).
    pub max_seqs_per_pack: Option<usize>,
    /// Overlong policy.
    pub overlong: Overlong,
    /// Accept zero-length sequences (they are skipped, never emitted as segments).
    pub allow_empty: bool,
    /// Each segment is planned with its length rounded up to this multiple.
    pub pad_to_multiple_of: i64,
    /// Seed of the slot assignment (histogram algorithms).
    pub seed: u64,
}

/// Summary of a plan, computed from lengths alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    pub num_packs: u64,
    pub num_sequences: u64,
    pub num_segments: u64,
    pub real_tokens: u64,
    pub padding_tokens: u64,
    pub efficiency: f64,
    pub sequences_per_pack: f64,
    pub deepest_pack: u64,
    pub lower_bound_sum: u64,
    pub lower_bound_l2: u64,
    pub packs_over_lower_bound_sum: f64,
    pub packs_over_lower_bound_l2: f64,
    pub dropped_tokens: u64,
    pub dropped_sequences: u64,
    pub truncated_sequences: u64,
    pub split_sequences: u64,
    pub num_fragments: u64,
    pub empty_sequences: u64,
}

/// A packing plan (CSR over packs).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub max_len: i64,
    pub pad_to_multiple_of: i64,
    /// `P + 1` offsets into the slot arrays.
    pub pack_offsets: Vec<i64>,
    /// Source sequence index of each slot.
    pub seq_index: Vec<i64>,
    /// First token (inclusive) of the source sequence taken by each slot. Empty in a
    /// *whole* plan (every slot takes its whole sequence); use [`Plan::slot`].
    pub start: Vec<i64>,
    /// Last token (exclusive); empty in a whole plan.
    pub stop: Vec<i64>,
    /// Whether the slot is one fragment of a split sequence; empty in a whole plan.
    pub fragment: Vec<bool>,
    /// Lengths of the source sequences (what `materialize` checks the tokens against).
    pub lengths: Vec<i64>,
    pub stats: Stats,
}

impl Plan {
    /// Whether every slot takes its whole sequence (then `start`, `stop` and `fragment` are
    /// stored empty: 0, the sequence length and `false`).
    pub fn is_whole(&self) -> bool {
        self.start.is_empty() && !self.seq_index.is_empty()
    }

    /// Token range `(start, stop)` of slot `k`.
    #[inline]
    pub fn slot(&self, k: usize) -> (i64, i64) {
        if self.start.is_empty() {
            (0, self.lengths[self.seq_index[k] as usize])
        } else {
            (self.start[k], self.stop[k])
        }
    }

    /// Whether slot `k` is a fragment of a split sequence.
    #[inline]
    pub fn is_fragment(&self, k: usize) -> bool {
        !self.fragment.is_empty() && self.fragment[k]
    }
}

/// Segments to pack after the overlong policy (one per slot-to-be).
struct Items {
    /// Item `k` is the whole sequence `k` (no empty or overlong sequence); then `seq`,
    /// `start`, `stop` and `fragment` are left empty and only `size` is stored.
    identity: bool,
    seq: Vec<i64>,
    start: Vec<i64>,
    stop: Vec<i64>,
    fragment: Vec<bool>,
    /// Planned size: `stop - start` rounded up to the multiple (empty when not wanted).
    size: Vec<u32>,
    /// `hist[s]`: number of segments of planned size `s` (`0..=max_len`).
    hist: Vec<u64>,
    /// Sum of `stop - start` over the segments.
    real_tokens: u64,
}

fn round_up(x: i64, m: i64) -> i64 {
    (x + m - 1) / m * m
}

fn validate_options(opts: &PlanOptions) -> Result<()> {
    ensure!(
        (1..=MAX_LEN_LIMIT).contains(&opts.max_len),
        "max_len",
        "must be in 1..={MAX_LEN_LIMIT}, got {}",
        opts.max_len
    );
    if let Some(k) = opts.max_seqs_per_pack {
        ensure!(k >= 1, "max_seqs_per_pack", "must be at least 1, got {k}");
    }
    ensure!(
        opts.pad_to_multiple_of >= 1,
        "pad_to_multiple_of",
        "must be at least 1, got {}",
        opts.pad_to_multiple_of
    );
    ensure!(
        opts.max_len % opts.pad_to_multiple_of == 0,
        "pad_to_multiple_of",
        "max_len {} is not a multiple of pad_to_multiple_of {}",
        opts.max_len,
        opts.pad_to_multiple_of
    );
    Ok(())
}

/// Identity fast path: when every length is in `1..=max_len`, the planned sizes (if
/// `want_size`), the histogram of sizes and the number of real tokens in one pass (parallel
/// over chunks for large inputs; the result does not depend on the split). `None` otherwise.
fn identity_items(lengths: &[i64], opts: &PlanOptions, want_size: bool) -> Option<Items> {
    let l = opts.max_len;
    let m = opts.pad_to_multiple_of;
    let nh = l as usize + 1;
    // Since `m` divides `l`, `1 <= len <= l` implies `round_up(len, m) <= l`.
    let scan = |inp: &[i64], out: Option<&mut [u32]>, hist: &mut [u64]| -> Option<u64> {
        let mut real = 0u64;
        let mut ok = true;
        let size_of = |len: i64| if m == 1 { len } else { round_up(len, m) };
        match out {
            Some(out) => {
                for (o, &len) in out.iter_mut().zip(inp) {
                    ok &= (1..=l).contains(&len);
                    let sz = size_of(len.clamp(0, l));
                    *o = sz as u32;
                    hist[sz as usize] += 1;
                    real = real.wrapping_add(len as u64);
                }
            }
            None => {
                for &len in inp {
                    ok &= (1..=l).contains(&len);
                    hist[size_of(len.clamp(0, l)) as usize] += 1;
                    real = real.wrapping_add(len as u64);
                }
            }
        }
        ok.then_some(real)
    };
    let n = lengths.len();
    let mut size = if want_size { vec![0u32; n] } else { Vec::new() };
    let (hist, real) = if n >= crate::PARALLEL_THRESHOLD {
        const CHUNK: usize = 1 << 16;
        let merge = |a: Option<(Vec<u64>, u64)>, b: Option<(Vec<u64>, u64)>| match (a, b) {
            (Some((mut ha, ra)), Some((hb, rb))) => {
                for (x, y) in ha.iter_mut().zip(&hb) {
                    *x += y;
                }
                Some((ha, ra.wrapping_add(rb)))
            }
            _ => None,
        };
        let ident = || Some((vec![0u64; nh], 0u64));
        let step = |acc: Option<(Vec<u64>, u64)>, inp: &[i64], out: Option<&mut [u32]>| {
            let (mut h, r) = acc?;
            let r2 = scan(inp, out, &mut h)?;
            Some((h, r.wrapping_add(r2)))
        };
        if want_size {
            lengths
                .par_chunks(CHUNK)
                .zip(size.par_chunks_mut(CHUNK))
                .fold(ident, |acc, (inp, out)| step(acc, inp, Some(out)))
                .reduce(ident, merge)?
        } else {
            lengths
                .par_chunks(CHUNK)
                .fold(ident, |acc, inp| step(acc, inp, None))
                .reduce(ident, merge)?
        }
    } else {
        let mut hist = vec![0u64; nh];
        let out = if want_size { Some(&mut size[..]) } else { None };
        let real = scan(lengths, out, &mut hist)?;
        (hist, real)
    };
    Some(Items {
        identity: true,
        seq: Vec::new(),
        start: Vec::new(),
        stop: Vec::new(),
        fragment: Vec::new(),
        size,
        hist,
        real_tokens: real,
    })
}

/// Segments after the overlong policy. `want_size: false` leaves `size` empty (only the
/// histogram is wanted) on the identity fast path.
fn make_items(lengths: &[i64], opts: &PlanOptions, want_size: bool) -> Result<Items> {
    validate_options(opts)?;
    let l = opts.max_len;
    let m = opts.pad_to_multiple_of;
    if let Some(items) = identity_items(lengths, opts, want_size) {
        return Ok(items);
    }
    let mut items = Items {
        identity: false,
        seq: Vec::with_capacity(lengths.len()),
        start: Vec::with_capacity(lengths.len()),
        stop: Vec::with_capacity(lengths.len()),
        fragment: Vec::with_capacity(lengths.len()),
        size: Vec::with_capacity(lengths.len()),
        hist: vec![0u64; l as usize + 1],
        real_tokens: 0,
    };
    for (i, &len) in lengths.iter().enumerate() {
        ensure!(
            len >= 0,
            "lengths",
            "sequence {i} has negative length {len}"
        );
        if len == 0 {
            ensure!(
                opts.allow_empty,
                "lengths",
                "sequence {i} is empty (zero-length segments crash varlen attention kernels); pass allow_empty=True to skip empty sequences"
            );
            continue;
        }
        if round_up(len, m) <= l {
            items.seq.push(i as i64);
            items.start.push(0);
            items.stop.push(len);
            items.fragment.push(false);
            items.size.push(round_up(len, m) as u32);
            items.hist[round_up(len, m) as usize] += 1;
            items.real_tokens += len as u64;
            continue;
        }
        match opts.overlong {
            Overlong::Error => {
                return Err(Error::invalid(
                    "lengths",
                    if m > 1 {
                        format!("sequence {i} has length {len} (padded to {}), more than max_len={l}; pass overlong='truncate', 'split' or 'drop'", round_up(len, m))
                    } else {
                        format!("sequence {i} has length {len}, more than max_len={l}; pass overlong='truncate', 'split' or 'drop'")
                    },
                ))
            }
            Overlong::Drop => {}
            Overlong::Truncate => {
                items.seq.push(i as i64);
                items.start.push(0);
                items.stop.push(l);
                items.fragment.push(false);
                items.size.push(l as u32);
                items.hist[l as usize] += 1;
                items.real_tokens += l as u64;
            }
            Overlong::Split => {
                let mut s = 0;
                while s < len {
                    let e = (s + l).min(len);
                    items.seq.push(i as i64);
                    items.start.push(s);
                    items.stop.push(e);
                    items.fragment.push(true);
                    items.size.push(round_up(e - s, m) as u32);
                    items.hist[round_up(e - s, m) as usize] += 1;
                    items.real_tokens += (e - s) as u64;
                    s = e;
                }
            }
        }
    }
    Ok(items)
}

/// Item order for the decreasing algorithms: by size descending, ties by item index (stable).
fn decreasing_order(size: &[u32], max_len: u32) -> Vec<u32> {
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
fn best_fit_decreasing(size: &[u32], max_len: u32, limit: usize) -> Result<(Vec<u32>, usize)> {
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

fn first_fit_decreasing(size: &[u32], max_len: u32, limit: usize) -> (Vec<u32>, usize) {
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

fn next_fit(size: &[u32], max_len: u32, limit: usize) -> (Vec<u32>, usize) {
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

/// A histogram recipe: `(count, pack lengths)` entries.
pub type Recipe = Vec<(u64, Vec<u32>)>;

struct OpenPacks {
    /// `tmp[r]`: packs with `r` free tokens that can still take sequences (a LIFO stack).
    tmp: Vec<Vec<(u64, Vec<u32>)>>,
    /// Free capacities whose stack is non-empty.
    keys: BTreeSet<u32>,
    final_packs: Recipe,
    limit: usize,
}

impl OpenPacks {
    fn new(max_len: u32, limit: usize) -> Self {
        OpenPacks {
            tmp: vec![Vec::new(); max_len as usize + 1],
            keys: BTreeSet::new(),
            final_packs: Vec::new(),
            limit,
        }
    }

    fn add(&mut self, pack: Vec<u32>, count: u64, free: u32) {
        if count == 0 {
            return;
        }
        if pack.len() >= self.limit || free == 0 {
            self.final_packs.push((count, pack));
        } else {
            self.tmp[free as usize].push((count, pack));
            self.keys.insert(free);
        }
    }

    fn pop(&mut self, key: u32) -> (u64, Vec<u32>) {
        let stack = &mut self.tmp[key as usize];
        let top = stack.pop().expect("key set mirrors non-empty stacks");
        if stack.is_empty() {
            self.keys.remove(&key);
        }
        top
    }

    fn push_back(&mut self, key: u32, entry: (u64, Vec<u32>)) {
        self.tmp[key as usize].push(entry);
        self.keys.insert(key);
    }

    fn finish(mut self) -> Recipe {
        for stack in self.tmp.drain(..) {
            self.final_packs.extend(stack);
        }
        self.final_packs
    }
}

/// Shortest-pack-first histogram packing. `hist[i]` counts sequences of length `i + 1`.
///
/// Step for step the algorithm of Graphcore's `spfhp.py`: lengths are processed from longest
/// to shortest; each goes into the open pack with the most free space that still fits it
/// (the "shortest pack"), a whole group of identical packs at a time; a pack closes when it is
/// full or holds `limit` sequences.
pub fn spfhp(hist: &[u64], max_len: u32, limit: usize) -> Recipe {
    let mut open = OpenPacks::new(max_len, limit);
    for l in (1..=max_len).rev() {
        let mut n = hist[(l - 1) as usize];
        // Python scans offsets downward from the top; equivalently, the largest non-empty key
        // in [l, upper], where `upper` only ever decreases while this length is placed.
        let mut upper = max_len;
        while n > 0 {
            let found = open.keys.range(l..=upper).next_back().copied();
            match found {
                Some(key) => {
                    upper = key;
                    let (np, pack) = open.pop(key);
                    let mut new_pack = pack.clone();
                    new_pack.push(l);
                    let count = np.min(n);
                    if np > n {
                        open.push_back(key, (np - n, pack));
                        n = 0;
                    } else {
                        n -= np;
                    }
                    open.add(new_pack, count, key - l);
                }
                None => {
                    open.add(vec![l], n, max_len - l);
                    n = 0;
                }
            }
        }
    }
    open.finish()
}

/// Longest-pack-first histogram packing (Graphcore's `lpfhp.py` with `distribute=True`).
///
/// Lengths from longest to shortest; each group goes into the open pack with the least free
/// space that fits (best fit), and as many copies of the length as fit and as the count allows
/// are placed at once.
pub fn lpfhp(hist: &[u64], max_len: u32, limit: usize) -> Recipe {
    let mut open = OpenPacks::new(max_len, limit);
    for l in (1..=max_len).rev() {
        let mut n = hist[(l - 1) as usize];
        let mut searching = true;
        while n > 0 {
            let found = if searching {
                open.keys.range(l..).next().copied()
            } else {
                None
            };
            match found {
                Some(key) => {
                    let offset = key - l;
                    let (np, pack) = open.pop(key);
                    let mut repeat = ((1 + offset / l) as u64).min((limit - pack.len()) as u64);
                    while n / repeat == 0 {
                        repeat -= 1;
                    }
                    let count = np.min(n / repeat);
                    if np > count {
                        open.push_back(key, (np - count, pack.clone()));
                        n -= count * repeat;
                    } else {
                        n -= np * repeat;
                    }
                    let mut new_pack = pack;
                    new_pack.extend(std::iter::repeat_n(l, repeat as usize));
                    open.add(new_pack, count, offset - (repeat as u32 - 1) * l);
                }
                None => {
                    // No open pack fits: new packs of `repeat` copies each (Python keeps
                    // its offset past the end here, so it never searches again for l).
                    searching = false;
                    let mut repeat = ((max_len / l) as u64).min(limit as u64);
                    while n / repeat == 0 {
                        repeat -= 1;
                    }
                    open.add(
                        vec![l; repeat as usize],
                        n / repeat,
                        max_len - l * repeat as u32,
                    );
                    n -= n / repeat * repeat;
                }
            }
        }
    }
    open.finish()
}

/// Number of ways to write `target` as a sum of at most `depth` positive parts (the NNLSHP
/// strategy count), saturating at `u64::MAX`.
pub fn count_strategies(target: usize, depth: usize) -> u64 {
    // p[k][n]: partitions of n into at most k parts = partitions of n into parts of size <= k.
    let mut p = vec![0u64; target + 1];
    p[0] = 1;
    for part in 1..=depth.min(target.max(1)) {
        for n in part..=target {
            p[n] = p[n].saturating_add(p[n - part]);
        }
    }
    p[target]
}

fn csr_from_bins(
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

fn finish_plan(
    items: Items,
    offsets: Vec<i64>,
    slots: Vec<i64>,
    lengths: &[i64],
    opts: &PlanOptions,
) -> Result<Plan> {
    ensure!(
        slots.len() == items.size.len(),
        "plan",
        "internal check failed: {} slots for {} segments",
        slots.len(),
        items.size.len()
    );
    // The copy of the lengths (a fresh allocation) overlaps the gathers.
    let (lengths_copy, (seq_index, rest)) = rayon::join(
        || lengths.to_vec(),
        || {
            if items.identity {
                (slots, None)
            } else {
                // Every item lands in exactly one slot, so coverage comes from the items,
                // which are in source order (a sequential pass instead of a random one over
                // the slots).
                let mut covered = vec![0i64; lengths.len()];
                let mut pieces = vec![0u32; lengths.len()];
                for k in 0..items.seq.len() {
                    let i = items.seq[k] as usize;
                    covered[i] += items.stop[k] - items.start[k];
                    pieces[i] += 1;
                }
                let gather =
                    |v: &[i64]| -> Vec<i64> { slots.iter().map(|&i| v[i as usize]).collect() };
                let seq_index = gather(&items.seq);
                let start = gather(&items.start);
                let stop = gather(&items.stop);
                let fragment = slots.iter().map(|&i| items.fragment[i as usize]).collect();
                (seq_index, Some((start, stop, fragment, covered, pieces)))
            }
        },
    );
    let mut plan = Plan {
        max_len: opts.max_len,
        pad_to_multiple_of: opts.pad_to_multiple_of,
        seq_index,
        start: Vec::new(),
        stop: Vec::new(),
        fragment: Vec::new(),
        pack_offsets: offsets,
        lengths: lengths_copy,
        stats: Stats::default(),
    };
    let coverage = rest.map(|(start, stop, fragment, covered, pieces)| {
        plan.start = start;
        plan.stop = stop;
        plan.fragment = fragment;
        (covered, pieces)
    });
    plan.stats = compute_stats_with(
        &plan,
        Coverage::Trusted {
            per_seq: coverage,
            hist: &items.hist,
            real_tokens: items.real_tokens,
        },
    )?;
    Ok(plan)
}

/// [`make_items`], checking that the segments can be numbered with `u32` slots.
fn plannable_items(lengths: &[i64], opts: &PlanOptions) -> Result<Items> {
    let items = make_items(lengths, opts, true)?;
    ensure!(
        items.size.len() < u32::MAX as usize,
        "lengths",
        "at most {} segments can be planned at once",
        u32::MAX - 1
    );
    Ok(items)
}

/// Plans packs for `lengths` with one of the Rust algorithms.
pub fn plan(lengths: &[i64], algorithm: Algorithm, opts: &PlanOptions) -> Result<Plan> {
    let items = plannable_items(lengths, opts)?;
    let max_len = opts.max_len as u32;
    let limit = opts.max_seqs_per_pack.unwrap_or(usize::MAX);
    match algorithm {
        Algorithm::Spfhp | Algorithm::Lpfhp => {
            let hist = items.hist[1..].to_vec();
            let limit = limit.min(max_len as usize);
            let recipe = if algorithm == Algorithm::Spfhp {
                spfhp(&hist, max_len, limit)
            } else {
                lpfhp(&hist, max_len, limit)
            };
            assign_recipe(items, &recipe, lengths, opts)
        }
        Algorithm::Bfd | Algorithm::Ffd | Algorithm::Nf => {
            let (bin_of, nbins) = match algorithm {
                Algorithm::Bfd => best_fit_decreasing(&items.size, max_len, limit)?,
                Algorithm::Ffd => first_fit_decreasing(&items.size, max_len, limit),
                _ => next_fit(&items.size, max_len, limit),
            };
            let (offsets, slots) = if algorithm == Algorithm::Nf {
                csr_from_bins(&bin_of, nbins, 0..items.size.len())
            } else {
                let order = decreasing_order(&items.size, max_len);
                csr_from_bins(&bin_of, nbins, order.into_iter().map(|i| i as usize))
            };
            finish_plan(items, offsets, slots, lengths, opts)
        }
    }
}

/// Histogram (`hist[i]` = number of segments of planned length `i + 1`) after the overlong
/// policy; what NNLSHP solves for.
pub fn planned_histogram(lengths: &[i64], opts: &PlanOptions) -> Result<Vec<u64>> {
    let items = make_items(lengths, opts, false)?;
    Ok(items.hist[1..].to_vec())
}

/// Realizes a histogram recipe (e.g. NNLSHP's): `counts[j]` packs of the lengths
/// `recipe_lengths[recipe_offsets[j]..recipe_offsets[j + 1]]`. A slot whose length has no
/// sequence left stays padding; packs left empty are omitted. Every segment must be covered.
pub fn plan_from_recipe(
    lengths: &[i64],
    counts: &[u64],
    recipe_offsets: &[i64],
    recipe_lengths: &[i64],
    opts: &PlanOptions,
) -> Result<Plan> {
    let items = plannable_items(lengths, opts)?;
    ensure!(
        recipe_offsets.len() == counts.len() + 1
            && recipe_offsets.first() == Some(&0)
            && recipe_offsets.windows(2).all(|w| w[0] <= w[1])
            && *recipe_offsets.last().unwrap_or(&0) as usize == recipe_lengths.len(),
        "recipe",
        "offsets must start at 0, be non-decreasing and end at the number of lengths"
    );
    let mut recipe: Recipe = Vec::with_capacity(counts.len());
    for (j, &c) in counts.iter().enumerate() {
        let part = &recipe_lengths[recipe_offsets[j] as usize..recipe_offsets[j + 1] as usize];
        let mut total = 0i64;
        for &x in part {
            ensure!(
                x >= 1 && x <= opts.max_len,
                "recipe",
                "strategy {j} has length {x} outside 1..={}",
                opts.max_len
            );
            total += x;
        }
        ensure!(
            total <= opts.max_len,
            "recipe",
            "strategy {j} sums to {total} > max_len {}",
            opts.max_len
        );
        if let Some(k) = opts.max_seqs_per_pack {
            ensure!(
                part.len() <= k,
                "recipe",
                "strategy {j} has more than {k} sequences"
            );
        }
        recipe.push((c, part.iter().map(|&x| x as u32).collect()));
    }
    assign_recipe(items, &recipe, lengths, opts)
}

fn assign_recipe(
    items: Items,
    recipe: &Recipe,
    lengths: &[i64],
    opts: &PlanOptions,
) -> Result<Plan> {
    let max_len = opts.max_len as usize;
    // Items grouped by planned size (stable), then shuffled within each size from the seed.
    let mut start_of = vec![0usize; max_len + 2];
    for (s, &h) in items.hist.iter().enumerate() {
        start_of[s + 1] = h as usize;
    }
    for k in 1..start_of.len() {
        start_of[k] += start_of[k - 1];
    }
    let mut grouped = vec![0u32; items.size.len()];
    {
        let mut cursor = start_of.clone();
        for (i, &s) in items.size.iter().enumerate() {
            grouped[cursor[s as usize]] = i as u32;
            cursor[s as usize] += 1;
        }
    }
    let seed = opts.seed;
    let mut groups: Vec<&mut [u32]> = Vec::with_capacity(max_len + 1);
    {
        let mut rest: &mut [u32] = &mut grouped;
        for s in 0..=max_len {
            let (head, tail) = rest.split_at_mut(start_of[s + 1] - start_of[s]);
            groups.push(head);
            rest = tail;
        }
    }
    let shuffle = |(s, g): (usize, &mut &mut [u32])| {
        // Fisher-Yates with the counter-based generator keyed by (seed, stream, size).
        let stream = rng::CounterStream::new(seed, STREAM_ASSIGN ^ ((s as u64) << 32));
        for i in (1..g.len()).rev() {
            // Multiply-shift maps the 64-bit draw to 0..=i (bias below 2^-30 for any
            // realistic group; avoids a 64-bit division per swap).
            let r = stream.at(i as u64);
            let j = ((r as u128 * (i as u128 + 1)) >> 64) as usize;
            g.swap(i, j);
        }
    };
    if items.size.len() >= crate::PARALLEL_THRESHOLD {
        groups.par_iter_mut().enumerate().for_each(shuffle);
    } else {
        groups.iter_mut().enumerate().for_each(shuffle);
    }
    let mut next = start_of.clone();
    let mut offsets = Vec::with_capacity(recipe.iter().map(|r| r.0 as usize).sum::<usize>() + 1);
    offsets.push(0i64);
    let mut slots = Vec::with_capacity(items.size.len());
    for (count, pack) in recipe {
        for _ in 0..*count {
            let before = slots.len();
            for &s in pack {
                let s = s as usize;
                if next[s] < start_of[s + 1] {
                    slots.push(grouped[next[s]] as i64);
                    next[s] += 1;
                }
            }
            if slots.len() > before {
                offsets.push(slots.len() as i64);
            }
        }
    }
    for s in 1..=max_len {
        ensure!(
            next[s] == start_of[s + 1],
            "recipe",
            "leaves {} segments of length {s} unpacked",
            start_of[s + 1] - next[s]
        );
    }
    finish_plan(items, offsets, slots, lengths, opts)
}

/// Martello-Toth lower bound L2 for bin packing with capacity `cap` (Martello and Toth,
/// "Lower bounds and reduction procedures for the bin packing problem", 1990), from
/// `hist[w]` = number of items of size `w` (`0..=cap`).
pub fn martello_toth_l2(hist: &[u64], cap: u64) -> u64 {
    let c = cap as usize;
    // Prefix counts and sums over sizes 0..=c.
    let mut cnt = vec![0u64; c + 2];
    let mut sum = vec![0u128; c + 2];
    for w in 0..=c {
        let h = hist.get(w).copied().unwrap_or(0);
        cnt[w + 1] = cnt[w] + h;
        sum[w + 1] = sum[w] + h as u128 * w as u128;
    }
    // Items in sizes a..=b.
    let range = |a: usize, b: usize| -> (u64, u128) {
        if a > b || a > c {
            (0, 0)
        } else {
            let b = b.min(c);
            (cnt[b + 1] - cnt[a], sum[b + 1] - sum[a])
        }
    };
    let half = c / 2; // w <= C/2  <=>  w <= floor(C/2)
    let mut best = 0u64;
    let mut alphas: Vec<usize> = vec![0];
    alphas.extend((1..=half).filter(|&w| hist.get(w).copied().unwrap_or(0) > 0));
    for a in alphas {
        let (n1, _) = range(c - a + 1, c);
        let (n2, s2) = range(half + 1, c - a);
        let (_, s3) = range(a.max(1), half);
        let free2 = n2 as u128 * cap as u128 - s2;
        let extra = if s3 > free2 {
            (s3 - free2).div_ceil(cap as u128) as u64
        } else {
            0
        };
        best = best.max(n1 + n2 + extra);
    }
    best
}

/// Validates a plan's arrays against its lengths and computes its [`Stats`].
pub fn compute_stats(plan: &Plan) -> Result<Stats> {
    compute_stats_with(plan, Coverage::Check)
}

/// How [`compute_stats_with`] learns which tokens of each sequence the plan covers.
enum Coverage<'a> {
    /// From the slots (loading a plan: every slot is checked against its sequence).
    Check,
    /// From the planner, whose packs fit by construction (the tests check them
    /// independently): per-sequence `(tokens covered, number of slots)` (`None` when every
    /// sequence is covered whole by exactly one slot), the planned size of every segment and
    /// the number of real tokens. Avoids a random-access pass over the slots.
    Trusted {
        per_seq: Option<(Vec<i64>, Vec<u32>)>,
        hist: &'a [u64],
        real_tokens: u64,
    },
}

/// The source sequence of slot `k` of `plan`, checked to be below `n`.
#[inline]
fn seq_of(plan: &Plan, k: usize, n: usize) -> Result<usize> {
    let i = plan.seq_index[k];
    ensure!(
        i >= 0 && (i as usize) < n,
        "plan",
        "segment {k} refers to sequence {i}, out of range"
    );
    Ok(i as usize)
}

fn compute_stats_with(plan: &Plan, coverage: Coverage) -> Result<Stats> {
    let l = plan.max_len;
    ensure!(
        (1..=MAX_LEN_LIMIT).contains(&l),
        "max_len",
        "must be in 1..={MAX_LEN_LIMIT}, got {l}"
    );
    let m = plan.pad_to_multiple_of;
    ensure!(
        m >= 1 && l % m == 0,
        "pad_to_multiple_of",
        "must be >= 1 and divide max_len"
    );
    let ns = plan.seq_index.len();
    ensure!(
        (plan.start.len() == ns && plan.stop.len() == ns && plan.fragment.len() == ns)
            || (plan.start.is_empty() && plan.stop.is_empty() && plan.fragment.is_empty()),
        "plan",
        "seq_index, start, stop and fragment must have the same length"
    );
    let off = &plan.pack_offsets;
    ensure!(
        !off.is_empty() && off[0] == 0 && *off.last().unwrap_or(&0) as usize == ns,
        "plan",
        "pack_offsets must start at 0 and end at the number of segments"
    );
    let n = plan.lengths.len();
    let mut hist = vec![0u64; l as usize + 1];
    let mut real = 0u64;
    let mut deepest = 0u64;
    let (coverage, checked) = match coverage {
        Coverage::Trusted {
            per_seq,
            hist: planned,
            real_tokens,
        } => {
            hist.copy_from_slice(planned);
            real = real_tokens;
            deepest = off
                .windows(2)
                .map(|w| (w[1] - w[0]) as u64)
                .max()
                .unwrap_or(0);
            (Some(per_seq), false)
        }
        Coverage::Check => (None, true),
    };
    // Pack-level pass over the slots (loading only).
    for p in 0..(off.len() - 1) * checked as usize {
        ensure!(
            off[p] < off[p + 1],
            "plan",
            "pack {p} is empty or offsets decrease"
        );
        ensure!(
            off[p + 1] as usize <= ns,
            "plan",
            "pack {p} ends at segment {}, past the {ns} segments",
            off[p + 1]
        );
        let mut used = 0i64;
        for k in off[p] as usize..off[p + 1] as usize {
            seq_of(plan, k, n)?;
            let (a, b) = plan.slot(k);
            ensure!(
                0 <= a && a < b && b - a <= l,
                "plan",
                "segment {k} has an invalid token range {a}..{b}"
            );
            let sz = if m == 1 { b - a } else { round_up(b - a, m) };
            used += sz;
            hist[sz.min(l) as usize] += 1;
            real += (b - a) as u64;
        }
        ensure!(
            used <= l,
            "plan",
            "pack {p} holds {used} tokens, more than max_len {l}"
        );
        deepest = deepest.max((off[p + 1] - off[p]) as u64);
    }
    let mut s = Stats::default();
    let (covered, pieces) = match coverage {
        Some(Some(c)) => c,
        Some(None) => (Vec::new(), Vec::new()),
        None => {
            // Loading a plan from arrays: check every slot against its sequence.
            let mut covered = vec![0i64; n];
            let mut pieces = vec![0u32; n];
            for k in 0..ns {
                let i = seq_of(plan, k, n)?;
                let (a, b) = plan.slot(k);
                ensure!(
                    b <= plan.lengths[i],
                    "plan",
                    "segment {k} covers tokens {a}..{b} of sequence {i} of length {}",
                    plan.lengths[i]
                );
                covered[i] += b - a;
                pieces[i] += 1;
            }
            (covered, pieces)
        }
    };
    if !covered.is_empty() || ns == 0 {
        for i in 0..n {
            let len = plan.lengths[i];
            let (c, p) = if covered.is_empty() {
                (0, 0)
            } else {
                (covered[i], pieces[i])
            };
            ensure!(
                len >= 0,
                "lengths",
                "sequence {i} has negative length {len}"
            );
            ensure!(c <= len, "plan", "sequence {i} is covered more than once");
            if len == 0 {
                s.empty_sequences += 1;
            } else if p == 0 {
                s.dropped_sequences += 1;
            } else if p > 1 {
                s.split_sequences += 1;
            } else if c < len {
                s.truncated_sequences += 1;
            }
            s.dropped_tokens += (len - c) as u64;
        }
    }
    s.num_fragments = plan.fragment.iter().filter(|&&f| f).count() as u64;
    let packs = (off.len() - 1) as u64;
    s.num_packs = packs;
    s.num_sequences = n as u64;
    s.num_segments = ns as u64;
    s.real_tokens = real;
    s.padding_tokens = packs * l as u64 - real;
    s.efficiency = if packs > 0 {
        real as f64 / (packs as f64 * l as f64)
    } else {
        1.0
    };
    s.sequences_per_pack = if packs > 0 {
        ns as f64 / packs as f64
    } else {
        0.0
    };
    s.deepest_pack = deepest;
    let planned: u64 = hist.iter().enumerate().map(|(w, &h)| w as u64 * h).sum();
    s.lower_bound_sum = planned.div_ceil(l as u64);
    s.lower_bound_l2 = martello_toth_l2(&hist, l as u64).max(s.lower_bound_sum);
    let ratio = |lb: u64| {
        if lb > 0 {
            packs as f64 / lb as f64
        } else {
            1.0
        }
    };
    s.packs_over_lower_bound_sum = ratio(s.lower_bound_sum);
    s.packs_over_lower_bound_l2 = ratio(s.lower_bound_l2);
    Ok(s)
}

/// Output layout of [`materialize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One row of `max_len` tokens per pack, padded at the end.
    Rows,
    /// All selected packs concatenated into one row without row padding.
    Flat,
}

/// Options of [`materialize`].
#[derive(Clone, Copy, Debug)]
pub struct MaterializeOptions {
    pub layout: Layout,
    pub pad_id: i64,
    pub position_ids_start: i64,
    /// `true`: a fragment's positions continue from its offset in the source sequence.
    pub continue_fragment_positions: bool,
    pub pad_to_multiple_of: i64,
    pub label_ignore_index: i64,
    /// Token ids (and `pad_id`) must lie in `token_min..=token_max` (the output dtype).
    pub token_min: i64,
    pub token_max: i64,
}

/// Arrays for one batch. Row-major `(rows, width)` for the 2-D ones.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    pub rows: usize,
    pub width: usize,
    pub input_ids: Vec<i64>,
    pub position_ids: Vec<i64>,
    pub segment_ids: Vec<i32>,
    pub labels: Vec<i64>,
    pub cu_seqlens: Vec<i32>,
    pub cu_seqlens_padded: Vec<i32>,
    pub max_seqlen: i64,
    /// Source sequence of each segment, in order.
    pub seq_index: Vec<i64>,
    pub num_real_tokens: u64,
}

/// Builds the training arrays for packs `rows` of `plan` from ragged tokens
/// (`values[offsets[i]..offsets[i + 1]]` is sequence `i`).
pub fn materialize(
    plan: &Plan,
    values: &[i64],
    offsets: &[i64],
    rows: &[i64],
    opts: &MaterializeOptions,
) -> Result<Batch> {
    let m = opts.pad_to_multiple_of;
    ensure!(m >= 1, "pad_to_multiple_of", "must be at least 1, got {m}");
    ensure!(
        opts.token_min <= opts.pad_id && opts.pad_id <= opts.token_max,
        "pad_id",
        "{} does not fit the output dtype ({}..={})",
        opts.pad_id,
        opts.token_min,
        opts.token_max
    );
    let n = plan.lengths.len();
    ensure!(
        offsets.len() == n + 1,
        "tokens",
        "has {} sequences but the plan was built for {n}",
        offsets.len().saturating_sub(1)
    );
    ensure!(
        offsets[0] == 0 && offsets[n] as usize == values.len(),
        "tokens",
        "offsets must start at 0 and end at the number of values"
    );
    let npacks = plan.pack_offsets.len() - 1;
    // Only the sequences this batch uses are checked, so batch-by-batch materialization of a
    // large plan stays proportional to the batch.
    for &r in rows {
        ensure!(
            r >= 0 && (r as usize) < npacks,
            "rows",
            "pack {r} out of range for a plan of {npacks} packs"
        );
        let (a, z) = (
            plan.pack_offsets[r as usize] as usize,
            plan.pack_offsets[r as usize + 1] as usize,
        );
        for &i in &plan.seq_index[a..z] {
            let i = i as usize;
            let got = offsets[i + 1] - offsets[i];
            ensure!(
                got == plan.lengths[i]
                    && offsets[i] >= 0
                    && offsets[i + 1] as usize <= values.len(),
                "tokens",
                "sequence {i} has {got} tokens but the plan was built for length {}",
                plan.lengths[i]
            );
        }
    }
    let l = plan.max_len;
    // Segment list with padded lengths.
    let mut row_width = Vec::with_capacity(rows.len());
    let mut total_padded = 0i64;
    for &r in rows {
        let (a, b) = (
            plan.pack_offsets[r as usize] as usize,
            plan.pack_offsets[r as usize + 1] as usize,
        );
        let used: i64 = (a..b)
            .map(|k| {
                let (a, b) = plan.slot(k);
                round_up(b - a, m)
            })
            .sum();
        if opts.layout == Layout::Rows {
            ensure!(
                used <= l,
                "pad_to_multiple_of",
                "pack {r} needs {used} tokens after padding each sequence to a multiple of {m}, more than max_len {l}; plan with pack(..., pad_to_multiple_of={m})"
            );
        }
        row_width.push(used);
        total_padded += used;
    }
    ensure!(
        total_padded <= i32::MAX as i64,
        "rows",
        "the batch holds {total_padded} tokens, more than cu_seqlens (int32) can index"
    );
    let (nrows, width) = match opts.layout {
        Layout::Rows => (rows.len(), l as usize),
        Layout::Flat => (1, total_padded as usize),
    };
    let total = nrows * width;
    let mut b = Batch {
        rows: nrows,
        width,
        input_ids: vec![opts.pad_id; total],
        position_ids: vec![0; total],
        segment_ids: vec![0; total],
        labels: vec![opts.label_ignore_index; total],
        cu_seqlens: vec![0],
        cu_seqlens_padded: vec![0],
        ..Batch::default()
    };
    let mut real_sum = 0i64;
    let mut pad_sum = 0i64;
    let mut cursor = 0usize;
    // Segment ids count 1..k within each output row (the whole batch for `Flat`).
    let mut seg = 0i32;
    for (ri, &r) in rows.iter().enumerate() {
        if opts.layout == Layout::Rows {
            cursor = ri * width;
            seg = 0;
        }
        let row_start = cursor;
        let (a, z) = (
            plan.pack_offsets[r as usize] as usize,
            plan.pack_offsets[r as usize + 1] as usize,
        );
        for k in a..z {
            seg += 1;
            let i = plan.seq_index[k] as usize;
            let (s, e) = plan.slot(k);
            let len = (e - s) as usize;
            let padded = round_up(e - s, m) as usize;
            let src = &values[(offsets[i] + s) as usize..(offsets[i] + e) as usize];
            let p0 = opts.position_ids_start
                + if opts.continue_fragment_positions {
                    s
                } else {
                    0
                };
            for (j, &t) in src.iter().enumerate() {
                ensure!(
                    opts.token_min <= t && t <= opts.token_max,
                    "tokens",
                    "token {t} (sequence {i}, position {}) does not fit the output dtype ({}..={})",
                    s as usize + j,
                    opts.token_min,
                    opts.token_max
                );
                let o = cursor + j;
                b.input_ids[o] = t;
                b.labels[o] = if j == 0 { opts.label_ignore_index } else { t };
                b.position_ids[o] = p0 + j as i64;
                b.segment_ids[o] = seg;
            }
            // Per-sequence padding continues the sequence's positions.
            for j in len..padded {
                b.position_ids[cursor + j] = p0 + j as i64;
            }
            cursor += padded;
            real_sum += len as i64;
            pad_sum += padded as i64;
            b.cu_seqlens.push(real_sum as i32);
            b.cu_seqlens_padded.push(pad_sum as i32);
            b.max_seqlen = b.max_seqlen.max(len as i64);
            b.seq_index.push(i as i64);
        }
        if opts.layout == Layout::Rows {
            // Row-tail padding counts positions from position_ids_start like a dummy sequence.
            let used = cursor - row_start;
            for j in used..width {
                b.position_ids[row_start + j] = opts.position_ids_start + (j - used) as i64;
            }
        }
    }
    b.num_real_tokens = real_sum as u64;
    // The flash-attention varlen contract (case P12).
    let counted = b.segment_ids.iter().filter(|&&x| x != 0).count() as i64;
    if *b.cu_seqlens.last().unwrap_or(&0) as i64 != counted {
        return Err(Error::invalid(
            "plan",
            format!("internal check failed: cu_seqlens[-1]={} but the batch holds {counted} real tokens", b.cu_seqlens.last().unwrap_or(&0)),
        ));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn opts(max_len: i64) -> PlanOptions {
        PlanOptions {
            max_len,
            max_seqs_per_pack: None,
            overlong: Overlong::Error,
            allow_empty: false,
            pad_to_multiple_of: 1,
            seed: 0,
        }
    }

    #[test]
    fn loaded_pack_offsets_past_the_segments_are_an_error_not_a_panic() {
        // found by tests/test_fuzz_api.py: an offset past the segments indexed out of bounds
        let mut p = plan(&[5, 3, 8, 12, 1], Algorithm::Lpfhp, &opts(12)).unwrap();
        assert!(compute_stats(&p).is_ok());
        p.pack_offsets[1] = i64::MAX;
        let err = compute_stats(&p).unwrap_err().to_string();
        assert!(err.contains("past the"), "{err}");
    }

    #[test]
    fn p1_non_power_of_two_capacities() {
        for l in 2..=64i64 {
            for alg in [
                Algorithm::Bfd,
                Algorithm::Ffd,
                Algorithm::Lpfhp,
                Algorithm::Spfhp,
                Algorithm::Nf,
            ] {
                let p = plan(&[l - 1, 1], alg, &opts(l)).unwrap();
                // SPFHP places a whole length group at once and never pairs a length with
                // itself (Graphcore's reference does the same), so [1, 1] needs two packs.
                let want = if alg == Algorithm::Spfhp && l == 2 {
                    2
                } else {
                    1
                };
                assert_eq!(p.stats.num_packs, want, "{alg:?} L={l}");
            }
        }
    }

    #[test]
    fn p13_ffd_not_monotone() {
        let lens = [44, 24, 24, 22, 21, 17, 8, 8, 6, 6];
        assert_eq!(
            plan(&lens, Algorithm::Ffd, &opts(60))
                .unwrap()
                .stats
                .num_packs,
            3
        );
        assert_eq!(
            plan(&lens, Algorithm::Ffd, &opts(61))
                .unwrap()
                .stats
                .num_packs,
            4
        );
    }

    #[test]
    fn l2_bound_examples() {
        // Three items of 6 with capacity 10 need 3 bins; L1 says 2.
        let mut h = vec![0u64; 11];
        h[6] = 3;
        assert_eq!(martello_toth_l2(&h, 10), 3);
        assert_eq!(count_strategies(512, 3), 22102);
    }

    #[test]
    fn split_and_errors() {
        let mut o = opts(60);
        o.overlong = Overlong::Split;
        let p = plan(&[121], Algorithm::Lpfhp, &o).unwrap();
        assert_eq!(p.stats.num_segments, 3);
        assert_eq!(p.stats.split_sequences, 1);
        assert!(plan(&[10, 3, 2], Algorithm::Bfd, &opts(5)).is_err());
        assert!(plan(&[-1], Algorithm::Bfd, &opts(5)).is_err());
        assert!(plan(&[0], Algorithm::Bfd, &opts(5)).is_err());
        assert!(Algorithm::parse("xx").is_err());
    }

    #[test]
    fn materialize_positions_labels_and_padding() {
        let mut o = opts(8);
        o.pad_to_multiple_of = 4;
        let p = plan(&[3, 2], Algorithm::Nf, &o).unwrap();
        let values = [5, 6, 7, 8, 9];
        let offsets = [0, 3, 5];
        let m = MaterializeOptions {
            layout: Layout::Rows,
            pad_id: 1,
            position_ids_start: 2,
            continue_fragment_positions: false,
            pad_to_multiple_of: 4,
            label_ignore_index: -100,
            token_min: i64::MIN,
            token_max: i64::MAX,
        };
        let b = materialize(&p, &values, &offsets, &[0], &m).unwrap();
        assert_eq!(b.input_ids, [5, 6, 7, 1, 8, 9, 1, 1]);
        assert_eq!(b.position_ids, [2, 3, 4, 5, 2, 3, 4, 5]);
        assert_eq!(b.segment_ids, [1, 1, 1, 0, 2, 2, 0, 0]);
        assert_eq!(b.labels, [-100, 6, 7, -100, -100, 9, -100, -100]);
        assert_eq!(b.cu_seqlens, [0, 3, 5]);
        assert_eq!(b.cu_seqlens_padded, [0, 4, 8]);
        // Lengths that disagree with the plan are rejected.
        assert!(materialize(&p, &values[..4], &[0, 3, 4], &[0], &m).is_err());
    }

    proptest! {
        #[test]
        fn every_plan_is_valid(lens in proptest::collection::vec(1i64..40, 0..200), l in 1i64..50, k in 1usize..6) {
            for alg in [Algorithm::Bfd, Algorithm::Ffd, Algorithm::Lpfhp, Algorithm::Spfhp, Algorithm::Nf] {
                let mut o = opts(l);
                o.overlong = Overlong::Split;
                o.max_seqs_per_pack = Some(k);
                let p = plan(&lens, alg, &o).unwrap();
                prop_assert_eq!(p.stats.dropped_tokens, 0);
                prop_assert!(p.stats.deepest_pack as usize <= k);
                prop_assert!(p.stats.num_packs >= p.stats.lower_bound_l2);
                prop_assert_eq!(p.stats.real_tokens, lens.iter().sum::<i64>() as u64);
            }
        }
    }
}
