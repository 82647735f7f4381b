//! Fast Walsh-Hadamard transforms and randomized Hadamard rotations.
//!
//! # Sizes and the matrix
//! A length `n` is *supported* when `n = K * 2^k` with `K` in
//! `{1, 12, 20, 28, 36, 40, 52, 60, 108, 140, 156, 172}`. The transform of a row `x` is
//! `x @ H_n` (row vector times matrix) with
//!
//! ```text
//! H_n = kron(H_K, H_{2^k})        index i = a * 2^k + b  (a < K, b < 2^k)
//! ```
//!
//! `H_{2^k}` the Sylvester matrix (`scipy.linalg.hadamard`, symmetric) and `H_K` the base
//! matrix of [`matrices`] (generally *not* symmetric). The decomposition uses the smallest
//! `K` that fits, so `40 * 2^k` runs as `20 * 2^(k+1)`: `H_40 = kron(H_20, H_2)`.
//! The unnormalized inverse is `y @ H_n^T / n`; the normalized transform is
//! `x @ H_n / sqrt(n)` (orthogonal) with inverse `y @ H_n^T / sqrt(n)`.
//!
//! # Randomized rotations and their signs
//! [`RandomizedHadamard`] with `blocks = B` maps a row `x` to
//! `y = x D_1 H D_2 H ... D_B H / sqrt(g)^B` (column-vector form `H^T D_B ... H^T D_1 x`):
//! multiply by the signs of block 0, transform, multiply by the signs of block 1, transform,
//! ... . The sign of coordinate `i` (`0 <= i < n`, over the whole row) in block `b`
//! (0-based) is `-1` exactly when `crate::rng::counter_sign_negative(seed, b, i)`, i.e. when
//! the top bit of `counter_u64(seed, stream = b, index = i)` is set. With a group size `g`
//! the transform `H` is block-diagonal with `n / g` copies of `H_g`; the signs are still
//! indexed by the global coordinate `i`, so grouped and ungrouped rotations of the same seed
//! share their sign vectors.

pub mod kernel;
pub mod matrices;

use rayon::prelude::*;

use crate::rng::{counter_sign_negative, counter_u64};
use crate::{ensure, Error, Result, PARALLEL_THRESHOLD};
pub use kernel::{level, Level, Real};
pub use matrices::BASE_ORDERS;

/// The `K` values a supported size may have, as documented (40 included).
pub const SUPPORTED_K: [usize; 12] = [1, 12, 20, 28, 36, 40, 52, 60, 108, 140, 156, 172];

/// The counter-generator stream [`srht`] draws its sample of coordinates from (its signs
/// use stream 0, like block 0 of a [`RandomizedHadamard`] with the same seed).
pub const SRHT_SAMPLE_STREAM: u64 = 0x5352_4854_5341_4D50; // "SRHTSAMP"

/// `(K, 2^k)` with `n = K * 2^k` for the smallest base order `K`, or `None`.
pub fn decompose(n: usize) -> Option<(usize, usize)> {
    if n == 0 {
        return None;
    }
    BASE_ORDERS
        .iter()
        .find(|&&k| n.is_multiple_of(k) && (n / k).is_power_of_two())
        .map(|&k| (k, n / k))
}

/// Whether `n` is a supported transform length.
pub fn is_supported_size(n: usize) -> bool {
    decompose(n).is_some()
}

/// The smallest supported size `>= n` (`1` for `n = 0`).
pub fn next_supported_size(n: usize) -> usize {
    BASE_ORDERS
        .iter()
        .filter_map(|&k| {
            let mut m = k;
            while m < n {
                m = m.checked_mul(2)?;
            }
            Some(m)
        })
        .min()
        .unwrap_or(usize::MAX)
}

/// The largest supported size `<= n`, if any (`None` for `n = 0`).
pub fn prev_supported_size(n: usize) -> Option<usize> {
    BASE_ORDERS
        .iter()
        .filter(|&&k| k <= n)
        .map(|&k| {
            let mut m = k;
            while m <= n / 2 {
                m *= 2;
            }
            m
        })
        .max()
}

/// Every supported size `<= max_n`, ascending.
pub fn supported_sizes(max_n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = BASE_ORDERS
        .iter()
        .flat_map(|&k| {
            std::iter::successors(Some(k), |&m| m.checked_mul(2)).take_while(move |&m| m <= max_n)
        })
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The error for an unsupported length, naming the nearest supported sizes.
pub fn unsupported_size_error(arg: &'static str, n: usize) -> Error {
    let below = prev_supported_size(n)
        .map(|m| format!("{m} below, "))
        .unwrap_or_default();
    Error::invalid(
        arg,
        format!(
            "{n} is not a supported Hadamard size (K * 2^k with K in {SUPPORTED_K:?}); \
             nearest supported sizes: {below}{} above; zero-pad explicitly with \
             pad_to_supported",
            next_supported_size(n.saturating_add(1))
        ),
    )
}

/// A validated transform length with its factorization.
#[derive(Clone, Copy)]
struct Plan {
    k: usize,
    p: usize,
    base: &'static matrices::BaseMatrix,
}

impl Plan {
    fn new(arg: &'static str, n: usize) -> Result<Self> {
        let (k, p) = decompose(n).ok_or_else(|| unsupported_size_error(arg, n))?;
        Ok(Plan {
            k,
            p,
            base: matrices::base_matrix(k),
        })
    }

    fn n(&self) -> usize {
        self.k * self.p
    }

    fn scratch_len(&self) -> usize {
        if self.k > 1 {
            self.n()
        } else {
            0
        }
    }

    /// `row <- ((src or row) * signs * s) @ H` (`@ H^T` when `inverse`); `src` and `signs`
    /// have the row's length.
    #[inline]
    fn apply<T: Real>(
        &self,
        src: Option<&[T]>,
        row: &mut [T],
        signs: Option<&[T]>,
        s: T,
        scratch: &mut [T],
        inverse: bool,
    ) {
        kernel::pow2_rows(src, row, self.p, signs.map(kernel::Signs::vals), s, None);
        if self.k == 1 {
            return;
        }
        let p = self.p;
        kernel::kmix(row, scratch, T::mix(self.base, inverse), self.k, p);
        row.copy_from_slice(scratch);
    }
}

thread_local! {
    static SERIAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with every transform it calls on this thread kept on this thread (no rayon
/// tasks, whatever the input size): for a caller that asked for one thread and runs `f`
/// itself rather than handing it to a one-thread pool.
pub fn serial<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            SERIAL.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(SERIAL.with(|c| c.replace(true)));
    f()
}

fn parallel_allowed() -> bool {
    !SERIAL.with(|c| c.get())
}

/// Rows per parallel task: about `PARALLEL_THRESHOLD / 2` elements each.
fn rows_per_task(n: usize) -> usize {
    (PARALLEL_THRESHOLD / 2 / n.max(1)).max(1)
}

/// Calls `f(chunk)` on consecutive batches of whole length-`n` rows (about
/// `PARALLEL_THRESHOLD / 2` elements each), in parallel for large inputs, checking for an
/// interrupt before each batch.
fn for_each_chunk<T: Real, F>(rows: &mut [T], n: usize, f: F) -> Result<()>
where
    F: Fn(&mut [T]) + Sync + Send,
{
    let run = |chunk: &mut [T]| -> Result<()> {
        crate::interrupt::check()?;
        f(chunk);
        Ok(())
    };
    let step = n * rows_per_task(n);
    if rows.len() >= PARALLEL_THRESHOLD && rows.len() > n && parallel_allowed() {
        rows.par_chunks_mut(step).try_for_each(run)
    } else {
        rows.chunks_mut(step).try_for_each(run)
    }
}

/// Calls `f(row, scratch)` on every length-`n` row (see [`for_each_chunk`]).
fn for_each_row<T: Real, F>(rows: &mut [T], n: usize, scratch_len: usize, f: F) -> Result<()>
where
    F: Fn(&mut [T], &mut [T]) + Sync + Send,
{
    for_each_chunk(rows, n, |chunk| {
        let mut scratch = vec![T::ZERO; scratch_len];
        for row in chunk.chunks_exact_mut(n) {
            f(row, &mut scratch);
        }
    })
}

/// Calls `f(src_chunk, dst_chunk)` on matching batches of whole rows (`src` rows of length
/// `n_src`, `dst` rows of length `n_dst`), in parallel for large inputs, checking for an
/// interrupt before each batch.
fn for_each_chunk_pair<T: Real, F>(
    src: &[T],
    n_src: usize,
    dst: &mut [T],
    n_dst: usize,
    f: F,
) -> Result<()>
where
    F: Fn(&[T], &mut [T]) + Sync + Send,
{
    let run = |(s, d): (&[T], &mut [T])| -> Result<()> {
        crate::interrupt::check()?;
        f(s, d);
        Ok(())
    };
    let rpt = rows_per_task(n_src);
    if src.len() >= PARALLEL_THRESHOLD && src.len() > n_src && parallel_allowed() {
        src.par_chunks(n_src * rpt)
            .zip(dst.par_chunks_mut(n_dst * rpt))
            .try_for_each(run)
    } else {
        src.chunks(n_src * rpt)
            .zip(dst.chunks_mut(n_dst * rpt))
            .try_for_each(run)
    }
}

/// Calls `f(src_row, dst_row, scratch)` on every pair of rows (see [`for_each_chunk_pair`]).
fn for_each_row_pair<T: Real, F>(
    src: &[T],
    n_src: usize,
    dst: &mut [T],
    n_dst: usize,
    scratch_len: usize,
    f: F,
) -> Result<()>
where
    F: Fn(&[T], &mut [T], &mut [T]) + Sync + Send,
{
    for_each_chunk_pair(src, n_src, dst, n_dst, |s, d| {
        let mut scratch = vec![T::ZERO; scratch_len];
        for (sr, dr) in s.chunks_exact(n_src).zip(d.chunks_exact_mut(n_dst)) {
            f(sr, dr, &mut scratch);
        }
    })
}

fn check_rows(arg: &'static str, len: usize, n: usize) -> Result<()> {
    ensure!(
        len.is_multiple_of(n),
        arg,
        "length {len} is not a multiple of the row length {n}"
    );
    Ok(())
}

/// An out-of-place transform's lengths: `x` whole rows of `n`, `out` as long as `x`.
fn check_rows_into(src_len: usize, dst_len: usize, n: usize) -> Result<()> {
    check_rows("x", src_len, n)?;
    ensure!(
        dst_len == src_len,
        "out",
        "has {dst_len} elements, the input {src_len}"
    );
    Ok(())
}

fn norm_scale<T: Real>(n: usize, normalized: bool, inverse: bool) -> T {
    match (normalized, inverse) {
        (true, _) => T::from_f64(1.0 / (n as f64).sqrt()),
        (false, true) => T::from_f64(1.0 / n as f64),
        (false, false) => T::ONE,
    }
}

/// The Hadamard transform of every length-`n` row of `rows`, in place: `x @ H_n`
/// (`y @ H_n^T` when `inverse`), scaled by `1/sqrt(n)` when `normalized`, else by `1`
/// (forward) or `1/n` (inverse), so `inverse` undoes the forward transform of the same
/// normalization. Errors: `n` unsupported, `rows.len()` not a multiple of `n`.
pub fn fwht_inplace<T: Real>(
    rows: &mut [T],
    n: usize,
    normalized: bool,
    inverse: bool,
) -> Result<()> {
    let plan = Plan::new("n", n)?;
    check_rows("rows", rows.len(), n)?;
    let scale = norm_scale::<T>(n, normalized, inverse);
    if plan.scratch_len() > 0 {
        // Only rows that need a scratch row ask (power-of-two rows need none): the check
        // makes system calls (sysinfo, getrlimit) that cost about as much as a small call.
        crate::memory::ensure_array::<T>("n", plan.scratch_len() as u128)?;
    }
    if plan.k == 1 {
        // Powers of two: whole batches of rows per kernel call.
        return for_each_chunk(rows, n, |chunk| {
            kernel::pow2_rows(None, chunk, n, None, scale, None)
        });
    }
    for_each_row(rows, n, plan.scratch_len(), |row, scratch| {
        plan.apply(None, row, None, scale, scratch, inverse);
    })
}

/// [`fwht_inplace`] reading from `src` and writing to `dst` (same length), row by row so
/// each row is copied and transformed while it is in cache.
pub fn fwht_into<T: Real>(
    src: &[T],
    dst: &mut [T],
    n: usize,
    normalized: bool,
    inverse: bool,
) -> Result<()> {
    let plan = Plan::new("n", n)?;
    check_rows_into(src.len(), dst.len(), n)?;
    let scale = norm_scale::<T>(n, normalized, inverse);
    if plan.scratch_len() > 0 {
        // Only rows that need a scratch row ask (power-of-two rows need none): the check
        // makes system calls (sysinfo, getrlimit) that cost about as much as a small call.
        crate::memory::ensure_array::<T>("n", plan.scratch_len() as u128)?;
    }
    if plan.k == 1 {
        // Powers of two: whole batches of rows per kernel call, the copy fused into the
        // first pass of each row.
        return for_each_chunk_pair(src, n, dst, n, |s, d| {
            kernel::pow2_rows(Some(s), d, n, None, scale, None)
        });
    }
    for_each_row_pair(src, n, dst, n, plan.scratch_len(), |s, row, scratch| {
        plan.apply(Some(s), row, None, scale, scratch, inverse);
    })
}

/// The dense unnormalized `H_n` (row-major, entries `+1`/`-1`) that [`fwht_inplace`]
/// applies as `x @ H_n`.
pub fn hadamard_matrix(n: usize) -> Result<Vec<i8>> {
    let plan = Plan::new("n", n)?;
    ensure!(
        n <= 1 << 14,
        "n",
        "{n} is too large for a dense matrix (at most 16384)"
    );
    let hk = &plan.base.h;
    let (k, p) = (plan.k, plan.p);
    let mut out = vec![0i8; n * n];
    for (i, row) in out.chunks_exact_mut(n).enumerate() {
        let (a, b) = (i / p, i % p);
        for (j, v) in row.iter_mut().enumerate() {
            let (c, d) = (j / p, j % p);
            let syl = if (b & d).count_ones() % 2 == 0 { 1 } else { -1 };
            *v = hk[a * k + c] * syl;
        }
    }
    Ok(out)
}

/// Most blocks a [`RandomizedHadamard`] accepts.
pub const MAX_BLOCKS: usize = 64;

/// A randomized Hadamard rotation `x -> x D_1 H D_2 H ... D_B H / sqrt(g)^B` of rows of
/// length `n` (see the module docs for the exact sign convention), orthogonal.
#[derive(Clone)]
pub struct RandomizedHadamard {
    n: usize,
    seed: u64,
    blocks: usize,
    group: usize,
    plan: Plan,
    signs_f32: Vec<f32>,
    signs_f64: Vec<f64>,
    /// The signs of each block as lane masks ([`kernel::lane_masks`]), for each float type.
    masks_f32: Vec<u32>,
    masks_f64: Vec<u8>,
}

impl RandomizedHadamard {
    /// A rotation of length-`n` rows with `blocks` sign-and-transform rounds, block-diagonal
    /// per `group_size` coordinates when given. Errors: `n == 0`; `blocks` outside
    /// `1..=64`; `group_size` zero, not dividing `n` or unsupported; `n` unsupported when
    /// there is no group size.
    pub fn new(n: usize, seed: u64, blocks: usize, group_size: Option<usize>) -> Result<Self> {
        ensure!(n >= 1, "n", "must be at least 1");
        ensure!(
            (1..=MAX_BLOCKS).contains(&blocks),
            "blocks",
            "must be between 1 and {MAX_BLOCKS}, got {blocks}"
        );
        let group = match group_size {
            Some(g) => {
                ensure!(g >= 1, "group_size", "must be at least 1");
                ensure!(
                    n.is_multiple_of(g),
                    "group_size",
                    "{g} does not divide n = {n}"
                );
                g
            }
            None => n,
        };
        let plan = Plan::new(
            if group_size.is_some() {
                "group_size"
            } else {
                "n"
            },
            group,
        )?;
        // The signs (f64 and f32 copies, and their lane masks: 0.75 bytes an element) plus one
        // row of scratch when rotating.
        crate::memory::ensure_fits("n", blocks as u128 * n as u128 * 13 + group as u128 * 8)?;
        let signs_f64: Vec<f64> = (0..blocks as u64)
            .flat_map(|b| {
                (0..n as u64).map(move |i| {
                    if counter_sign_negative(seed, b, i) {
                        -1.0
                    } else {
                        1.0
                    }
                })
            })
            .collect();
        let signs_f32: Vec<f32> = signs_f64.iter().map(|&s| s as f32).collect();
        let masks_f32 = signs_f32
            .chunks_exact(n)
            .flat_map(kernel::lane_masks)
            .collect();
        let masks_f64 = signs_f64
            .chunks_exact(n)
            .flat_map(kernel::lane_masks)
            .collect();
        Ok(RandomizedHadamard {
            n,
            seed,
            blocks,
            group,
            plan,
            signs_f32,
            signs_f64,
            masks_f32,
            masks_f64,
        })
    }

    /// Row length.
    pub fn n(&self) -> usize {
        self.n
    }
    /// The seed of the signs.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Number of sign-and-transform rounds.
    pub fn blocks(&self) -> usize {
        self.blocks
    }
    /// The group size (`n` when ungrouped).
    pub fn group_size(&self) -> usize {
        self.group
    }
    /// The signs of block `b` as `+1.0` / `-1.0` (length `n`).
    pub fn signs(&self, b: usize) -> &[f64] {
        &self.signs_f64[b * self.n..(b + 1) * self.n]
    }

    fn scale<T: Real>(&self) -> T {
        T::from_f64((self.group as f64).powf(-0.5 * self.blocks as f64))
    }

    /// Forward rotation of one row, reading from `src` (or the row itself).
    #[inline]
    fn forward_row<T: Real>(
        &self,
        src: Option<&[T]>,
        row: &mut [T],
        scratch: &mut [T],
        signs: &[T],
        scale: T,
    ) {
        let g = self.group;
        for b in 0..self.blocks {
            let sb = &signs[b * self.n..(b + 1) * self.n];
            // The total scale rides along with the first block.
            let s = if b == 0 { scale } else { T::ONE };
            for (j, grp) in row.chunks_exact_mut(g).enumerate() {
                let r = j * g..(j + 1) * g;
                let from = if b == 0 {
                    src.map(|v| &v[r.clone()])
                } else {
                    None
                };
                self.plan.apply(from, grp, Some(&sb[r]), s, scratch, false);
            }
        }
    }

    /// Inverse rotation of one row, reading from `src` (or the row itself).
    #[inline]
    fn inverse_row<T: Real>(
        &self,
        src: Option<&[T]>,
        row: &mut [T],
        scratch: &mut [T],
        signs: &[T],
        scale: T,
    ) {
        let g = self.group;
        for (step, b) in (0..self.blocks).rev().enumerate() {
            let s = if step == 0 { scale } else { T::ONE };
            for (j, grp) in row.chunks_exact_mut(g).enumerate() {
                let r = j * g..(j + 1) * g;
                let from = if step == 0 { src.map(|v| &v[r]) } else { None };
                self.plan.apply(from, grp, None, s, scratch, true);
            }
            kernel::mul_assign(row, &signs[b * self.n..(b + 1) * self.n]);
        }
    }

    /// The rotation of a batch of whole rows when the group is a power of two: one kernel
    /// call per block over the batch, the signs (and the scale) fused into the transform's
    /// first pass, and the last sign flip of the inverse into its last pass.
    fn pow2_batch<T: Real>(
        &self,
        src: Option<&[T]>,
        dst: &mut [T],
        signs: &[T],
        masks: &[T::LaneMask],
        inverse: bool,
    ) {
        let (n, g) = (self.n, self.group);
        let scale = self.scale::<T>();
        let nm = n.div_ceil(T::MASK_LANES);
        let block = |b: usize| kernel::Signs {
            vals: &signs[b * n..(b + 1) * n],
            masks: Some(&masks[b * nm..(b + 1) * nm]),
        };
        if inverse {
            // Transform b (from the last block down) reads the input, scaled, or the
            // previous result flipped by the signs of block b + 1; the last one also
            // flips its output by the signs of block 0.
            for b in (0..self.blocks).rev() {
                let first = b + 1 == self.blocks;
                kernel::pow2_rows(
                    if first { src } else { None },
                    dst,
                    g,
                    (!first).then(|| block(b + 1)),
                    if first { scale } else { T::ONE },
                    (b == 0).then(|| block(0)),
                );
            }
        } else {
            kernel::pow2_rows(src, dst, g, Some(block(0)), scale, None);
            for b in 1..self.blocks {
                kernel::pow2_rows(None, dst, g, Some(block(b)), T::ONE, None);
            }
        }
    }

    fn run<T: Real>(
        &self,
        rows: &mut [T],
        signs: &[T],
        masks: &[T::LaneMask],
        inverse: bool,
    ) -> Result<()> {
        check_rows("rows", rows.len(), self.n)?;
        if self.plan.k == 1 {
            return for_each_chunk(rows, self.n, |chunk| {
                self.pow2_batch(None, chunk, signs, masks, inverse)
            });
        }
        let scale = self.scale::<T>();
        for_each_row(rows, self.n, self.plan.scratch_len(), |row, scratch| {
            if inverse {
                self.inverse_row(None, row, scratch, signs, scale)
            } else {
                self.forward_row(None, row, scratch, signs, scale)
            }
        })
    }

    fn run_into<T: Real>(
        &self,
        src: &[T],
        dst: &mut [T],
        signs: &[T],
        masks: &[T::LaneMask],
        inverse: bool,
    ) -> Result<()> {
        check_rows_into(src.len(), dst.len(), self.n)?;
        if self.plan.k == 1 {
            return for_each_chunk_pair(src, self.n, dst, self.n, |s, d| {
                self.pow2_batch(Some(s), d, signs, masks, inverse)
            });
        }
        let scale = self.scale::<T>();
        for_each_row_pair(
            src,
            self.n,
            dst,
            self.n,
            self.plan.scratch_len(),
            |s, row, scratch| {
                if inverse {
                    self.inverse_row(Some(s), row, scratch, signs, scale)
                } else {
                    self.forward_row(Some(s), row, scratch, signs, scale)
                }
            },
        )
    }

    /// Rotates every length-`n` row of `rows` in place.
    pub fn forward_inplace_f32(&self, rows: &mut [f32]) -> Result<()> {
        self.run(rows, &self.signs_f32, &self.masks_f32, false)
    }
    /// Undoes [`Self::forward_inplace_f32`] (the transpose rotation).
    pub fn inverse_inplace_f32(&self, rows: &mut [f32]) -> Result<()> {
        self.run(rows, &self.signs_f32, &self.masks_f32, true)
    }
    /// f64 version of [`Self::forward_inplace_f32`].
    pub fn forward_inplace_f64(&self, rows: &mut [f64]) -> Result<()> {
        self.run(rows, &self.signs_f64, &self.masks_f64, false)
    }
    /// f64 version of [`Self::inverse_inplace_f32`].
    pub fn inverse_inplace_f64(&self, rows: &mut [f64]) -> Result<()> {
        self.run(rows, &self.signs_f64, &self.masks_f64, true)
    }
    /// Out-of-place [`Self::forward_inplace_f32`] (`dst.len() == src.len()`).
    pub fn forward_into_f32(&self, src: &[f32], dst: &mut [f32]) -> Result<()> {
        self.run_into(src, dst, &self.signs_f32, &self.masks_f32, false)
    }
    /// Out-of-place [`Self::inverse_inplace_f32`].
    pub fn inverse_into_f32(&self, src: &[f32], dst: &mut [f32]) -> Result<()> {
        self.run_into(src, dst, &self.signs_f32, &self.masks_f32, true)
    }
    /// Out-of-place [`Self::forward_inplace_f64`].
    pub fn forward_into_f64(&self, src: &[f64], dst: &mut [f64]) -> Result<()> {
        self.run_into(src, dst, &self.signs_f64, &self.masks_f64, false)
    }
    /// Out-of-place [`Self::inverse_inplace_f64`].
    pub fn inverse_into_f64(&self, src: &[f64], dst: &mut [f64]) -> Result<()> {
        self.run_into(src, dst, &self.signs_f64, &self.masks_f64, true)
    }
}

/// The `m` coordinates (ascending) that [`srht`] keeps out of `n`: a partial Fisher-Yates
/// shuffle of `0..n` whose step `t` swaps position `t` with `t + floor(u_t * (n - t) / 2^64)`,
/// `u_t = counter_u64(seed, SRHT_SAMPLE_STREAM, t)`; the first `m` positions, sorted.
/// Errors: `m == 0` or `m > n`.
pub fn srht_indices(n: usize, m: usize, seed: u64) -> Result<Vec<usize>> {
    ensure!(m >= 1, "m", "must be at least 1");
    ensure!(m <= n, "m", "{m} exceeds the input length n = {n}");
    // The shuffle of 0..n, stored sparsely: only the positions a swap moved are kept, so
    // memory is O(m) whatever n (a dense 0..n vector aborted at n = 2**32).
    crate::memory::ensure_array::<usize>("m", 4 * m as u128)?;
    let mut moved: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(m);
    for t in 0..m {
        let u = counter_u64(seed, SRHT_SAMPLE_STREAM, t as u64);
        let j = t + ((u128::from(u) * (n - t) as u128) >> 64) as usize;
        let at_t = moved.get(&t).copied().unwrap_or(t);
        let at_j = moved.get(&j).copied().unwrap_or(j);
        moved.insert(j, at_t); // swap(t, j); position t is final (later steps start past it)
        out.push(at_j);
    }
    out.sort_unstable();
    Ok(out)
}

/// Subsampled randomized Hadamard transform (Ailon and Chazelle 2009) of every length-`n`
/// row of `src` into length-`m` rows of `dst`:
/// `y = (x D H_n)[S] / sqrt(m)`, with `D` the block-0 signs of
/// `RandomizedHadamard::new(n, seed, 1, None)` and `S` = [`srht_indices`]. Equivalently
/// `sqrt(n / m)` times the sampled coordinates of the orthonormal rotation, so
/// `E ||y||^2 = ||x||^2` over the sample for every fixed sign vector.
pub fn srht<T: Real>(src: &[T], n: usize, m: usize, seed: u64, dst: &mut [T]) -> Result<()> {
    let plan = Plan::new("n", n)?;
    check_rows("x", src.len(), n)?;
    let idx = srht_indices(n, m, seed)?;
    let rows = src.len() / n;
    ensure!(
        dst.len() == rows * m,
        "out",
        "has {} elements, expected {}",
        dst.len(),
        rows * m
    );
    let signs: Vec<T> = (0..n as u64)
        .map(|i| {
            if counter_sign_negative(seed, 0, i) {
                T::from_f64(-1.0)
            } else {
                T::ONE
            }
        })
        .collect();
    let scale = T::from_f64(1.0 / (m as f64).sqrt());
    let sl = plan.scratch_len();
    for_each_row_pair(src, n, dst, m, n + sl, |s, d, scratch| {
        let (row, rest) = scratch.split_at_mut(n);
        plan.apply(Some(s), row, Some(&signs), T::ONE, rest, false);
        for (o, &i) in d.iter_mut().zip(&idx) {
            *o = row[i] * scale;
        }
    })
}

#[cfg(test)]
mod tests;
