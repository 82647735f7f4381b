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

mod histogram;
mod itemwise;
mod materialize;
mod stats;

use rayon::prelude::*;

use crate::{ensure, Error, Result};
pub use histogram::{count_strategies, lpfhp, plan_from_recipe, spfhp, Recipe};
pub use materialize::{materialize, Batch, Layout, MaterializeOptions};
pub use stats::{compute_stats, martello_toth_l2, Stats};

/// Largest `max_len` accepted (token counts stay exact in `i32` `cu_seqlens` per row).
pub const MAX_LEN_LIMIT: i64 = 1 << 30;

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
    /// `hist[s]`: number of segments of planned size `s` (`0..=max_len`). Empty when
    /// `max_len` is large next to the number of segments and no dense histogram was asked
    /// for (the item-wise algorithms); the statistics then count `size` instead.
    hist: Vec<u64>,
    /// Sum of `stop - start` over the segments.
    real_tokens: u64,
}

/// Peak bytes of a plan per segment: the items (29), the packer's order, bins and tree
/// (up to 28), the slots and offsets (16) and the plan's own arrays (25).
const BYTES_PER_SEGMENT: u128 = 96;
/// Peak bytes of a plan per source sequence: its copy of the lengths and the coverage counts.
const BYTES_PER_SEQUENCE: u128 = 24;
/// Peak bytes of the histogram algorithms per token of `max_len`: the histogram (8) and the
/// recipe assignment's group bounds and cursors (12), with slack.
const BYTES_PER_LENGTH: u128 = 32;
/// Iterations of a sequential loop between two [`crate::interrupt::check`]s.
const CHECK_EVERY: usize = 1 << 14;

/// Whether a table indexed by planned size (`0..=max_len`) costs no more than a few words per
/// segment (plus a fixed 64 Ki entries). Then histograms and the BFD capacity tree are dense
/// arrays; otherwise they follow the segments, so that memory does not grow with `max_len`.
fn dense_in_max_len(max_len: i64, segments: usize) -> bool {
    max_len as u64 <= 4 * segments as u64 + (1 << 16)
}

/// [`crate::interrupt::check`] every [`CHECK_EVERY`] iterations of a loop counter `i`.
#[inline]
fn poll(i: usize) -> Result<()> {
    if i.is_multiple_of(CHECK_EVERY) {
        crate::interrupt::check()
    } else {
        Ok(())
    }
}

/// `x` rounded up to a multiple of `m` (`x >= 0`, `m >= 1`), saturating at `i64::MAX`.
fn round_up(x: i64, m: i64) -> i64 {
    match x % m {
        0 => x,
        r => x.saturating_add(m - r),
    }
}

/// Refuses a plan of `segments` segments over `sequences` sequences, with a dense table over
/// `0..=max_len` (`dense_bytes` bytes per entry, 0 for none), that this process cannot hold.
/// The error names `max_len` when the table dominates, else `lengths`.
fn ensure_plan_fits(
    sequences: usize,
    segments: u128,
    max_len: i64,
    dense_bytes: u128,
) -> Result<()> {
    let per_input = segments * BYTES_PER_SEGMENT + sequences as u128 * BYTES_PER_SEQUENCE;
    let per_len = (max_len as u128 + 1) * dense_bytes;
    let arg = if per_len > per_input {
        "max_len"
    } else {
        "lengths"
    };
    crate::memory::ensure_fits(arg, per_input + per_len)
}

/// Segments must be numbered by `u32` slots.
fn ensure_segment_count(segments: u128) -> Result<()> {
    ensure!(
        segments < u32::MAX as u128,
        "lengths",
        "at most {} segments can be planned at once, the overlong policy makes {segments}",
        u32::MAX - 1
    );
    Ok(())
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
/// `want_size`), the histogram of sizes (if `dense`) and the number of real tokens in one
/// pass (parallel over chunks for large inputs; the result does not depend on the split).
/// `None` otherwise.
fn identity_items(
    lengths: &[i64],
    opts: &PlanOptions,
    want_size: bool,
    dense: bool,
) -> Result<Option<Items>> {
    // Without sizes there is nothing but the histogram to produce.
    debug_assert!(want_size || dense);
    let l = opts.max_len;
    let m = opts.pad_to_multiple_of;
    let nh = if dense { l as usize + 1 } else { 0 };
    // Since `m` divides `l`, `1 <= len <= l` implies `round_up(len, m) <= l`.
    let scan = |inp: &[i64], out: Option<&mut [u32]>, hist: &mut [u64]| -> Option<u64> {
        let mut real = 0u64;
        let mut ok = true;
        let size_of = |len: i64| if m == 1 { len } else { round_up(len, m) };
        match (out, hist.is_empty()) {
            (Some(out), false) => {
                for (o, &len) in out.iter_mut().zip(inp) {
                    ok &= (1..=l).contains(&len);
                    let sz = size_of(len.clamp(0, l));
                    *o = sz as u32;
                    hist[sz as usize] += 1;
                    real = real.wrapping_add(len as u64);
                }
            }
            (Some(out), true) => {
                for (o, &len) in out.iter_mut().zip(inp) {
                    ok &= (1..=l).contains(&len);
                    *o = size_of(len.clamp(0, l)) as u32;
                    real = real.wrapping_add(len as u64);
                }
            }
            (None, _) => {
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
    const CHUNK: usize = 1 << 16;
    // Each parallel fold holds its own histogram; with at most CHUNK entries they take no
    // more memory than the chunks they count (8 bytes per length).
    let (hist, real) = if n >= crate::PARALLEL_THRESHOLD && nh <= CHUNK {
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
        // An interrupt ends the scan early (as a failed one); the caller checks for it.
        let step = |acc: Option<(Vec<u64>, u64)>, inp: &[i64], out: Option<&mut [u32]>| {
            let (mut h, r) = acc?;
            if crate::interrupt::is_requested() {
                return None;
            }
            let r2 = scan(inp, out, &mut h)?;
            Some((h, r.wrapping_add(r2)))
        };
        let found = if want_size {
            lengths
                .par_chunks(CHUNK)
                .zip(size.par_chunks_mut(CHUNK))
                .fold(ident, |acc, (inp, out)| step(acc, inp, Some(out)))
                .reduce(ident, merge)
        } else {
            lengths
                .par_chunks(CHUNK)
                .fold(ident, |acc, inp| step(acc, inp, None))
                .reduce(ident, merge)
        };
        crate::interrupt::check()?;
        match found {
            Some(found) => found,
            None => return Ok(None),
        }
    } else {
        let mut hist = vec![0u64; nh];
        let mut real = 0u64;
        for (c, inp) in lengths.chunks(CHUNK).enumerate() {
            crate::interrupt::check()?;
            let out = if want_size {
                Some(&mut size[c * CHUNK..c * CHUNK + inp.len()])
            } else {
                None
            };
            match scan(inp, out, &mut hist) {
                Some(r) => real = real.wrapping_add(r),
                None => return Ok(None),
            }
        }
        (hist, real)
    };
    Ok(Some(Items {
        identity: true,
        seq: Vec::new(),
        start: Vec::new(),
        stop: Vec::new(),
        fragment: Vec::new(),
        size,
        hist,
        real_tokens: real,
    }))
}

/// Number of segments the overlong policy makes of `lengths`, raising for the first length
/// the options refuse (negative, empty without `allow_empty`, overlong under `Error`).
fn count_segments(lengths: &[i64], opts: &PlanOptions) -> Result<u128> {
    let l = opts.max_len;
    let m = opts.pad_to_multiple_of;
    let mut segments = 0u128;
    for (i, &len) in lengths.iter().enumerate() {
        poll(i)?;
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
            segments += 1;
            continue;
        }
        segments += match opts.overlong {
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
            Overlong::Drop => 0,
            Overlong::Truncate => 1,
            Overlong::Split => (len as u128).div_ceil(l as u128),
        };
    }
    Ok(segments)
}

/// Segments after the overlong policy. `want_size: false` leaves `size` empty (only the
/// histogram is wanted) on the identity fast path; `dense_hist: true` always builds the
/// histogram (else only where [`dense_in_max_len`]). The bytes the plan will need are
/// checked against the machine before anything is allocated.
fn make_items(
    lengths: &[i64],
    opts: &PlanOptions,
    want_size: bool,
    dense_hist: bool,
) -> Result<Items> {
    validate_options(opts)?;
    let l = opts.max_len;
    let m = opts.pad_to_multiple_of;
    let n = lengths.len();
    // The histogram algorithms' tables over 0..=max_len, or the statistics' dense one.
    let dense = dense_hist || dense_in_max_len(l, n);
    // What the identity scan allocates (sizes and histogram), then what the plan will need.
    ensure_plan_fits(n, 0, l, 8 * dense as u128)?;
    if let Some(items) = identity_items(lengths, opts, want_size, dense)? {
        ensure_segment_count(n as u128)?;
        let table = if dense_hist {
            BYTES_PER_LENGTH
        } else {
            8 * dense as u128
        };
        ensure_plan_fits(n, n as u128, l, table)?;
        return Ok(items);
    }
    let segments = count_segments(lengths, opts)?;
    ensure_segment_count(segments)?;
    let dense = dense_hist || dense_in_max_len(l, segments as usize);
    let table = if dense_hist {
        BYTES_PER_LENGTH
    } else {
        8 * dense as u128
    };
    ensure_plan_fits(n, segments, l, table)?;
    let cap = segments as usize;
    let mut items = Items {
        identity: false,
        seq: Vec::with_capacity(cap),
        start: Vec::with_capacity(cap),
        stop: Vec::with_capacity(cap),
        fragment: Vec::with_capacity(cap),
        size: Vec::with_capacity(cap),
        hist: if dense {
            vec![0u64; l as usize + 1]
        } else {
            Vec::new()
        },
        real_tokens: 0,
    };
    let mut push = |i: usize, s: i64, e: i64, fragment: bool| {
        let size = round_up(e - s, m);
        items.seq.push(i as i64);
        items.start.push(s);
        items.stop.push(e);
        items.fragment.push(fragment);
        items.size.push(size as u32);
        if let Some(h) = items.hist.get_mut(size as usize) {
            *h += 1;
        }
        items.real_tokens += (e - s) as u64;
    };
    // `count_segments` has validated every length against the options.
    for (i, &len) in lengths.iter().enumerate() {
        poll(i)?;
        if len == 0 {
            continue;
        }
        if round_up(len, m) <= l {
            push(i, 0, len, false);
            continue;
        }
        match opts.overlong {
            Overlong::Error | Overlong::Drop => {}
            Overlong::Truncate => push(i, 0, l, false),
            Overlong::Split => {
                let mut s = 0;
                while s < len {
                    poll((s / l) as usize)?;
                    let e = s + l.min(len - s);
                    push(i, s, e, true);
                    s = e;
                }
            }
        }
    }
    Ok(items)
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
    plan.stats = stats::compute_stats_with(
        &plan,
        stats::Coverage::Trusted {
            per_seq: coverage,
            hist: &items.hist,
            sizes: &items.size,
            real_tokens: items.real_tokens,
        },
    )?;
    Ok(plan)
}

/// Plans packs for `lengths` with one of the Rust algorithms.
pub fn plan(lengths: &[i64], algorithm: Algorithm, opts: &PlanOptions) -> Result<Plan> {
    let histogram = matches!(algorithm, Algorithm::Spfhp | Algorithm::Lpfhp);
    let items = make_items(lengths, opts, true, histogram)?;
    let max_len = opts.max_len as u32;
    let limit = opts.max_seqs_per_pack.unwrap_or(usize::MAX);
    match algorithm {
        Algorithm::Spfhp | Algorithm::Lpfhp => {
            let limit = limit.min(max_len as usize);
            let hist = &items.hist[1..];
            let recipe = if algorithm == Algorithm::Spfhp {
                spfhp(hist, max_len, limit)?
            } else {
                lpfhp(hist, max_len, limit)?
            };
            histogram::assign_recipe(items, &recipe, lengths, opts)
        }
        Algorithm::Bfd | Algorithm::Ffd | Algorithm::Nf => {
            let (bin_of, nbins, order) = match algorithm {
                Algorithm::Bfd => itemwise::best_fit_decreasing(&items.size, max_len, limit)?,
                Algorithm::Ffd => itemwise::first_fit_decreasing(&items.size, max_len, limit)?,
                _ => itemwise::next_fit(&items.size, max_len, limit)?,
            };
            crate::interrupt::check()?;
            let (offsets, slots) = match order {
                None => itemwise::csr_from_bins(&bin_of, nbins, 0..items.size.len()),
                Some(order) => {
                    itemwise::csr_from_bins(&bin_of, nbins, order.into_iter().map(|i| i as usize))
                }
            };
            finish_plan(items, offsets, slots, lengths, opts)
        }
    }
}

/// Histogram (`hist[i]` = number of segments of planned length `i + 1`) after the overlong
/// policy; what NNLSHP solves for.
pub fn planned_histogram(lengths: &[i64], opts: &PlanOptions) -> Result<Vec<u64>> {
    let mut hist = make_items(lengths, opts, false, true)?.hist;
    hist.remove(0);
    Ok(hist)
}

#[cfg(test)]
mod tests;
