//! Plan statistics: token counts, efficiency, the sum and Martello-Toth L2 lower bounds, and
//! the validation of a plan loaded from arrays.

use rayon::prelude::*;

use super::{dense_in_max_len, poll, round_up, Plan, MAX_LEN_LIMIT};
use crate::{ensure, Result};

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

/// Martello-Toth lower bound L2 for bin packing with capacity `cap` (Martello and Toth,
/// "Lower bounds and reduction procedures for the bin packing problem", 1990), from
/// `hist[w]` = number of items of size `w` (`0..=cap`).
pub fn martello_toth_l2(hist: &[u64], cap: u64) -> u64 {
    let counts: Vec<(u64, u64)> = hist
        .iter()
        .take(cap as usize + 1)
        .enumerate()
        .filter(|&(_, &h)| h > 0)
        .map(|(w, &h)| (w as u64, h))
        .collect();
    l2_from_counts(&counts, cap)
}

/// [`martello_toth_l2`] from `(size, count)` pairs ascending by size (sizes `<= cap`): time
/// and memory follow the number of distinct sizes, not `cap`.
fn l2_from_counts(counts: &[(u64, u64)], cap: u64) -> u64 {
    // Prefix counts and sums over the distinct sizes.
    let mut cnt = vec![0u64; counts.len() + 1];
    let mut sum = vec![0u128; counts.len() + 1];
    for (k, &(w, h)) in counts.iter().enumerate() {
        cnt[k + 1] = cnt[k] + h;
        sum[k + 1] = sum[k] + h as u128 * w as u128;
    }
    // Items in sizes a..=b.
    let range = |a: u64, b: u64| -> (u64, u128) {
        if a > b {
            return (0, 0);
        }
        let lo = counts.partition_point(|&(w, _)| w < a);
        let hi = counts.partition_point(|&(w, _)| w <= b);
        (cnt[hi] - cnt[lo], sum[hi] - sum[lo])
    };
    let half = cap / 2; // w <= C/2  <=>  w <= floor(C/2)
    let mut best = 0u64;
    let alphas = counts
        .iter()
        .map(|&(w, _)| w)
        .filter(|&w| (1..=half).contains(&w));
    for a in std::iter::once(0).chain(alphas) {
        let (n1, _) = range(cap - a + 1, cap);
        let (n2, s2) = range(half + 1, cap - a);
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

/// `(size, count)` of the planned sizes, ascending, zero counts left out: from the dense
/// `hist` when there is one, else by sorting a copy of `sizes`.
fn size_counts(hist: &[u64], sizes: &[u32]) -> Vec<(u64, u64)> {
    if !hist.is_empty() || sizes.is_empty() {
        return hist
            .iter()
            .enumerate()
            .filter(|&(_, &h)| h > 0)
            .map(|(w, &h)| (w as u64, h))
            .collect();
    }
    let mut sorted = sizes.to_vec();
    sorted.par_sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &w in &sorted {
        match out.last_mut() {
            Some((v, c)) if *v == w as u64 => *c += 1,
            _ => out.push((w as u64, 1)),
        }
    }
    out
}

/// Validates a plan's arrays against its lengths and computes its [`Stats`].
pub fn compute_stats(plan: &Plan) -> Result<Stats> {
    compute_stats_with(plan, Coverage::Check)
}

/// How [`compute_stats_with`] learns which tokens of each sequence the plan covers.
pub(super) enum Coverage<'a> {
    /// From the slots (loading a plan: every slot is checked against its sequence).
    Check,
    /// From the planner, whose packs fit by construction (the tests check them
    /// independently): per-sequence `(tokens covered, number of slots)` (`None` when every
    /// sequence is covered whole by exactly one slot), the histogram of planned sizes (empty
    /// when the planner kept none: then counted from `sizes`, the planned size of every
    /// segment) and the number of real tokens. Avoids a random-access pass over the slots.
    Trusted {
        per_seq: Option<(Vec<i64>, Vec<u32>)>,
        hist: &'a [u64],
        sizes: &'a [u32],
        real_tokens: u64,
    },
}

/// Checks that no two slots of one sequence share a token (a loaded plan could otherwise
/// repeat some tokens and leave others out while its token counts still add up).
/// `pieces[i]` is the number of slots of sequence `i`; slots are already checked in range.
fn no_overlaps(plan: &Plan, pieces: &[u32]) -> Result<()> {
    let mut ranges: Vec<(i64, i64, i64, usize)> = (0..plan.seq_index.len())
        .filter(|&k| pieces[plan.seq_index[k] as usize] > 1)
        .map(|k| {
            let (a, b) = plan.slot(k);
            (plan.seq_index[k], a, b, k)
        })
        .collect();
    ranges.par_sort_unstable();
    for w in ranges.windows(2) {
        let ((i, a0, b0, k0), (j, a1, b1, k1)) = (w[0], w[1]);
        ensure!(
            i != j || b0 <= a1,
            "plan",
            "segments {} and {} both cover tokens of sequence {i} ({a0}..{b0} and {a1}..{b1})",
            k0.min(k1),
            k0.max(k1)
        );
    }
    Ok(())
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

pub(super) fn compute_stats_with(plan: &Plan, coverage: Coverage) -> Result<Stats> {
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
    let mut real = 0u64;
    let mut deepest = 0u64;
    // A loaded plan's planned sizes: counted over 0..=max_len when that table is small next
    // to the segments, else kept as a list (memory follows the plan, not max_len).
    let mut own_hist = Vec::new();
    let mut own_sizes = Vec::new();
    let (coverage, hist, sizes): (_, &[u64], &[u32]) = match coverage {
        Coverage::Trusted {
            per_seq,
            hist,
            sizes,
            real_tokens,
        } => {
            real = real_tokens;
            deepest = off
                .windows(2)
                .map(|w| (w[1] - w[0]) as u64)
                .max()
                .unwrap_or(0);
            (Some(per_seq), hist, sizes)
        }
        Coverage::Check => {
            let dense = dense_in_max_len(l, ns);
            if dense {
                own_hist = vec![0u64; l as usize + 1];
            } else {
                own_sizes.reserve(ns);
            }
            for p in 0..off.len() - 1 {
                poll(p)?;
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
                    if dense {
                        own_hist[sz.min(l) as usize] += 1;
                    } else {
                        own_sizes.push(sz.min(l) as u32);
                    }
                    real += (b - a) as u64;
                }
                ensure!(
                    used <= l,
                    "plan",
                    "pack {p} holds {used} tokens, more than max_len {l}"
                );
                deepest = deepest.max((off[p + 1] - off[p]) as u64);
            }
            (None, &own_hist[..], &own_sizes[..])
        }
    };
    let mut s = Stats::default();
    let (covered, pieces) = match coverage {
        Some(Some(c)) => c,
        Some(None) => (Vec::new(), Vec::new()),
        None => {
            // Loading a plan from arrays: check every slot against its sequence.
            let mut covered = vec![0i64; n];
            let mut pieces = vec![0u32; n];
            for k in 0..ns {
                poll(k)?;
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
            no_overlaps(plan, &pieces)?;
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
            s.dropped_tokens = s
                .dropped_tokens
                .checked_add((len - c) as u64)
                .ok_or_else(|| {
                    crate::Error::invalid(
                        "lengths",
                        "the tokens left out of the plan add up to more than 2**64 - 1",
                    )
                })?;
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
    let counts = size_counts(hist, sizes);
    let planned: u64 = counts.iter().map(|&(w, h)| w * h).sum();
    s.lower_bound_sum = planned.div_ceil(l as u64);
    s.lower_bound_l2 = l2_from_counts(&counts, l as u64).max(s.lower_bound_sum);
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
