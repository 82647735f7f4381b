//! Plan statistics: token counts, efficiency, the sum and Martello-Toth L2 lower bounds, and
//! the validation of a plan loaded from arrays.

use super::{round_up, Plan, MAX_LEN_LIMIT};
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
pub(super) enum Coverage<'a> {
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
