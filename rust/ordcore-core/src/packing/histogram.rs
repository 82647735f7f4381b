//! Histogram packers: SPFHP and LPFHP (Graphcore's reference implementations, step for
//! step) work on counts per planned length and produce a [`Recipe`]; [`plan_from_recipe`]
//! realizes a recipe computed elsewhere (NNLSHP's), and [`assign_recipe`] hands the
//! sequences of each length to the recipe's slots in a seeded random order.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::{finish_plan, make_items, poll, Items, Plan, PlanOptions};
use crate::{ensure, rng, Result};

/// RNG stream used for the slot assignment of the histogram algorithms.
const STREAM_ASSIGN: u64 = 0x5041_434B; // "PACK"

/// A histogram recipe: `(count, pack lengths)` entries.
pub type Recipe = Vec<(u64, Vec<u32>)>;

struct OpenPacks {
    /// `tmp[r]`: packs with `r` free tokens that can still take sequences (a LIFO stack);
    /// only non-empty stacks are kept, so memory follows the open packs, not `max_len`.
    tmp: BTreeMap<u32, Vec<(u64, Vec<u32>)>>,
    final_packs: Recipe,
    limit: usize,
}

impl OpenPacks {
    fn new(limit: usize) -> Self {
        OpenPacks {
            tmp: BTreeMap::new(),
            final_packs: Vec::new(),
            limit,
        }
    }

    /// The largest free capacity in `lo..=hi` with an open pack.
    fn largest_in(&self, lo: u32, hi: u32) -> Option<u32> {
        self.tmp.range(lo..=hi).next_back().map(|(&k, _)| k)
    }

    /// The smallest free capacity `>= lo` with an open pack.
    fn smallest_from(&self, lo: u32) -> Option<u32> {
        self.tmp.range(lo..).next().map(|(&k, _)| k)
    }

    fn add(&mut self, pack: Vec<u32>, count: u64, free: u32) {
        if count == 0 {
            return;
        }
        if pack.len() >= self.limit || free == 0 {
            self.final_packs.push((count, pack));
        } else {
            self.tmp.entry(free).or_default().push((count, pack));
        }
    }

    fn pop(&mut self, key: u32) -> (u64, Vec<u32>) {
        let stack = self
            .tmp
            .get_mut(&key)
            .expect("only non-empty stacks are kept");
        let top = stack.pop().expect("only non-empty stacks are kept");
        if stack.is_empty() {
            self.tmp.remove(&key);
        }
        top
    }

    fn push_back(&mut self, key: u32, entry: (u64, Vec<u32>)) {
        self.tmp.entry(key).or_default().push(entry);
    }

    /// The closed packs, then the open ones by increasing free capacity.
    fn finish(mut self) -> Recipe {
        for (_, stack) in std::mem::take(&mut self.tmp) {
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
pub fn spfhp(hist: &[u64], max_len: u32, limit: usize) -> Result<Recipe> {
    let mut open = OpenPacks::new(limit);
    for l in (1..=max_len).rev() {
        poll(l as usize)?;
        let mut n = hist[(l - 1) as usize];
        // Python scans offsets downward from the top; equivalently, the largest non-empty key
        // in [l, upper], where `upper` only ever decreases while this length is placed.
        let mut upper = max_len;
        while n > 0 {
            let found = open.largest_in(l, upper);
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
    Ok(open.finish())
}

/// Longest-pack-first histogram packing (Graphcore's `lpfhp.py` with `distribute=True`).
///
/// Lengths from longest to shortest; each group goes into the open pack with the least free
/// space that fits (best fit), and as many copies of the length as fit and as the count allows
/// are placed at once.
pub fn lpfhp(hist: &[u64], max_len: u32, limit: usize) -> Result<Recipe> {
    let mut open = OpenPacks::new(limit);
    for l in (1..=max_len).rev() {
        poll(l as usize)?;
        let mut n = hist[(l - 1) as usize];
        let mut searching = true;
        while n > 0 {
            let found = if searching {
                open.smallest_from(l)
            } else {
                None
            };
            match found {
                Some(key) => {
                    let offset = key - l;
                    let (np, pack) = open.pop(key);
                    // Python lowers `repeat` one by one while `n // repeat == 0` (n >= 1).
                    let repeat = ((1 + offset / l) as u64)
                        .min((limit - pack.len()) as u64)
                        .min(n);
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
                    let repeat = ((max_len / l) as u64).min(limit as u64).min(n);
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
    Ok(open.finish())
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
    let items = make_items(lengths, opts, true, true)?;
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

pub(super) fn assign_recipe(
    items: Items,
    recipe: &Recipe,
    lengths: &[i64],
    opts: &PlanOptions,
) -> Result<Plan> {
    let max_len = opts.max_len as usize;
    // Items grouped by planned size (stable), then shuffled within each size from the seed;
    // size s's group is grouped[start_of[s]..start_of[s + 1]] (u32: the segments fit u32
    // slots).
    let mut start_of = vec![0u32; max_len + 2];
    for (s, &h) in items.hist.iter().enumerate() {
        start_of[s + 1] = h as u32;
    }
    for k in 1..start_of.len() {
        start_of[k] += start_of[k - 1];
    }
    let mut grouped = vec![0u32; items.size.len()];
    {
        let mut cursor = start_of.clone();
        for (i, &s) in items.size.iter().enumerate() {
            poll(i)?;
            grouped[cursor[s as usize] as usize] = i as u32;
            cursor[s as usize] += 1;
        }
    }
    let seed = opts.seed;
    // The groups of the sizes that occur.
    let mut groups: Vec<(usize, &mut [u32])> = Vec::new();
    {
        let mut rest: &mut [u32] = &mut grouped;
        for s in 0..=max_len {
            let len = (start_of[s + 1] - start_of[s]) as usize;
            if len > 0 {
                let (head, tail) = rest.split_at_mut(len);
                groups.push((s, head));
                rest = tail;
            }
        }
    }
    let shuffle = |(s, g): &mut (usize, &mut [u32])| {
        // Fisher-Yates with the counter-based generator keyed by (seed, stream, size).
        let stream = rng::CounterStream::new(seed, STREAM_ASSIGN ^ ((*s as u64) << 32));
        for i in (1..g.len()).rev() {
            // Multiply-shift maps the 64-bit draw to 0..=i (bias below 2^-30 for any
            // realistic group; avoids a 64-bit division per swap).
            let r = stream.at(i as u64);
            let j = ((r as u128 * (i as u128 + 1)) >> 64) as usize;
            g.swap(i, j);
        }
    };
    if items.size.len() >= crate::PARALLEL_THRESHOLD {
        groups.par_iter_mut().for_each(shuffle);
    } else {
        groups.iter_mut().for_each(shuffle);
    }
    drop(groups);
    crate::interrupt::check()?;
    let mut next = start_of.clone();
    // Every emitted pack holds at least one segment.
    let packs = recipe
        .iter()
        .fold(0u64, |a, r| a.saturating_add(r.0))
        .min(items.size.len() as u64);
    let mut offsets = Vec::with_capacity(packs as usize + 1);
    offsets.push(0i64);
    let mut slots = Vec::with_capacity(items.size.len());
    for (count, pack) in recipe {
        for _ in 0..*count {
            poll(offsets.len())?;
            let before = slots.len();
            for &s in pack {
                let s = s as usize;
                if next[s] < start_of[s + 1] {
                    slots.push(grouped[next[s] as usize] as i64);
                    next[s] += 1;
                }
            }
            if slots.len() == before {
                // The lengths of this strategy are used up: its later copies stay empty too.
                break;
            }
            offsets.push(slots.len() as i64);
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
