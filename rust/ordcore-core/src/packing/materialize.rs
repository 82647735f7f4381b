//! Materialization: the training arrays (`input_ids`, `position_ids`, `segment_ids`,
//! `labels`, `cu_seqlens`) of selected packs of a [`Plan`].

use super::{poll, round_up, Plan};
use crate::{ensure, Error, Result};

/// Output tokens written between two [`crate::interrupt::check`]s.
const CHECK_TOKENS: usize = 1 << 18;

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
    for (ri, &r) in rows.iter().enumerate() {
        poll(ri)?;
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
    let mut total_padded = 0i64;
    let mut segments = 0usize;
    // One past the largest position offset from `position_ids_start`.
    let mut reach = if opts.layout == Layout::Rows { l } else { 0 };
    for (ri, &r) in rows.iter().enumerate() {
        poll(ri)?;
        let (a, b) = (
            plan.pack_offsets[r as usize] as usize,
            plan.pack_offsets[r as usize + 1] as usize,
        );
        segments += b - a;
        let mut used = 0i64;
        for k in a..b {
            let (s, e) = plan.slot(k);
            let padded = round_up(e - s, m);
            used = used.saturating_add(padded);
            let first = if opts.continue_fragment_positions {
                s
            } else {
                0
            };
            reach = reach.max(first.saturating_add(padded));
        }
        if opts.layout == Layout::Rows {
            ensure!(
                used <= l,
                "pad_to_multiple_of",
                "pack {r} needs {used} tokens after padding each sequence to a multiple of {m}, more than max_len {l}; plan with pack(..., pad_to_multiple_of={m})"
            );
        }
        total_padded = total_padded.saturating_add(used);
    }
    ensure!(
        total_padded <= i32::MAX as i64,
        if m > 1 { "pad_to_multiple_of" } else { "rows" },
        "the batch holds {total_padded} tokens{}, more than cu_seqlens (int32) can index",
        if m > 1 {
            format!(" after padding each sequence to a multiple of {m}")
        } else {
            String::new()
        }
    );
    ensure!(
        opts.position_ids_start
            .checked_add(reach.max(1) - 1)
            .is_some(),
        "position_ids_start",
        "{} plus the largest position offset {} in this batch exceeds int64",
        opts.position_ids_start,
        reach.max(1) - 1
    );
    let (nrows, width) = match opts.layout {
        Layout::Rows => (rows.len(), l as usize),
        Layout::Flat => (1, total_padded as usize),
    };
    let total = nrows as u128 * width as u128;
    // input_ids, position_ids, labels (8 bytes), segment_ids (4); per segment the cu_seqlens
    // (4 + 4) and seq_index (8).
    crate::memory::ensure_fits("rows", total * 28 + segments as u128 * 16)?;
    let total = total as usize;
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
    let mut checked_at = 0usize;
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
            if cursor >= checked_at + CHECK_TOKENS {
                crate::interrupt::check()?;
                checked_at = cursor;
            }
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
            for (c, part) in src.chunks(CHECK_TOKENS).enumerate() {
                if c > 0 {
                    crate::interrupt::check()?;
                }
                for (jj, &t) in part.iter().enumerate() {
                    let j = c * CHECK_TOKENS + jj;
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
