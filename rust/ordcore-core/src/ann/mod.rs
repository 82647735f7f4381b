//! Binary-quantized graph index (QuIVer, arXiv 2605.02171) with Vamana construction
//! (DiskANN) in sign-magnitude code space, exact float32 reranking, deletions, and a
//! persistent file format. See `python/ordcore/ann.py` for the public contract.
//!
//! Submodules: [`codes`] (code layout and distance), [`graph`] (beam search, RobustPrune),
//! [`rotation`] (centering + randomized Hadamard), [`format`] (the file format).

pub mod codes;
pub mod format;
pub mod graph;
mod huge;
pub mod rotation;
pub mod sq;

use std::collections::HashMap;

use rayon::prelude::*;

use crate::{ensure, Error, Result};
use codes::{encode_one, normalize_into, words_for, Hamming, SignMag, SignMagN};
use graph::{beam_search, robust_prune, GraphRef};
use rotation::Rotation;

/// Distance convention of an index. Returned distances: cosine `1 - cos(q, x)` in `[0, 2]`;
/// ip `1 - <q, x>` (hnswlib's convention); l2 the squared Euclidean distance (hnswlib, faiss).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Cosine,
    Ip,
    L2,
}

impl Metric {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "cosine" => Ok(Metric::Cosine),
            "ip" => Ok(Metric::Ip),
            "l2" => Ok(Metric::L2),
            _ => Err(Error::invalid(
                "metric",
                format!("unknown metric {s:?} (expected 'cosine', 'ip' or 'l2')"),
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Metric::Cosine => "cosine",
            Metric::Ip => "ip",
            Metric::L2 => "l2",
        }
    }
    fn code(self) -> u8 {
        match self {
            Metric::Cosine => 0,
            Metric::Ip => 1,
            Metric::L2 => 2,
        }
    }
    fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(Metric::Cosine),
            1 => Some(Metric::Ip),
            2 => Some(Metric::L2),
            _ => None,
        }
    }
}

#[inline]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

#[inline]
fn sqdist(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += (x - y) * (x - y);
    }
    s
}

/// Hints the CPU to load `vecs[start..start + len]` (every cache line of one float row).
#[inline(always)]
fn prefetch_row(vecs: &[f32], start: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let base = vecs.as_ptr().wrapping_add(start) as *const i8;
        for off in (0..len * 4).step_by(64) {
            // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
            unsafe {
                std::arch::x86_64::_mm_prefetch(
                    base.wrapping_add(off),
                    std::arch::x86_64::_MM_HINT_T0,
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (vecs, start, len);
}

/// Exact distance in the metric's convention (vectors already normalized under cosine).
#[inline]
pub fn float_distance(metric: Metric, a: &[f32], b: &[f32]) -> f32 {
    match metric {
        Metric::Cosine => (1.0 - dot(a, b)).clamp(0.0, 2.0),
        Metric::Ip => 1.0 - dot(a, b),
        Metric::L2 => sqdist(a, b),
    }
}

/// Largest squared L2 norm of a row under `ip` and `l2`: a quarter of `f32::MAX`, so that
/// `|a - b|^2 <= 2|a|^2 + 2|b|^2` and `|<a, b>|` stay finite in float32.
pub const MAX_SQUARED_NORM: f64 = f32::MAX as f64 / 4.0;

/// Checks that every value is finite, under cosine that no row is zero, and under `ip` and
/// `l2` that no squared norm exceeds [`MAX_SQUARED_NORM`].
pub fn validate_rows(x: &[f32], dim: usize, metric: Metric, arg: &'static str) -> Result<()> {
    for (r, row) in x.chunks_exact(dim.max(1)).enumerate() {
        if let Some(c) = row.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(
                arg,
                format!("row {r} has a non-finite value ({}) at column {c}", row[c]),
            ));
        }
        if metric != Metric::Cosine {
            let ss: f64 = row.iter().map(|&v| (v as f64) * (v as f64)).sum();
            if ss > MAX_SQUARED_NORM {
                return Err(Error::invalid(
                    arg,
                    format!(
                        "row {r} has squared norm {ss:.3e}, too large for float32 distances \
                         (at most {MAX_SQUARED_NORM:.3e}); rescale the data"
                    ),
                ));
            }
        }
        if metric == Metric::Cosine && row.iter().all(|&v| v == 0.0) {
            return Err(Error::invalid(
                arg,
                format!("row {r} is a zero vector, which has no direction under cosine"),
            ));
        }
    }
    Ok(())
}

/// Rows as stored for reranking: normalized under cosine, as given otherwise.
fn prepare_rows(x: &[f32], dim: usize, metric: Metric) -> Vec<f32> {
    let mut out = x.to_vec();
    if metric == Metric::Cosine {
        let f = |(src, dst): (&[f32], &mut [f32])| {
            normalize_into(src, dst);
        };
        if x.len() / dim.max(1) >= 1024 {
            x.par_chunks_exact(dim)
                .zip(out.par_chunks_exact_mut(dim))
                .for_each(f);
        } else {
            x.chunks_exact(dim)
                .zip(out.chunks_exact_mut(dim))
                .for_each(f);
        }
    }
    out
}

/// Encodes prepared rows (optionally through a rotation) into codes of `bits` planes.
fn encode_rows(rows: &[f32], dim: usize, bits: usize, rot: Option<&Rotation>) -> Result<Vec<u64>> {
    let code_dim = rot.map_or(dim, |r| r.padded_dim());
    let cw = bits * words_for(code_dim);
    let n = rows.len() / dim.max(1);
    let mut codes = vec![0u64; n * cw];
    let work = |(row, out): (&[f32], &mut [u64])| -> Result<()> {
        match rot {
            None => encode_one(row, bits, out),
            Some(r) => {
                let mut buf = vec![0f32; code_dim];
                r.apply(row, &mut buf)?;
                encode_one(&buf, bits, out);
            }
        }
        Ok(())
    };
    if cw == 0 {
        return Ok(codes);
    }
    if n >= 1024 {
        rows.par_chunks_exact(dim)
            .zip(codes.par_chunks_exact_mut(cw))
            .try_for_each(work)?;
    } else {
        rows.chunks_exact(dim)
            .zip(codes.chunks_exact_mut(cw))
            .try_for_each(work)?;
    }
    Ok(codes)
}

/// Public encoder: `(n, dim)` rows -> `(n, bits * words)` codes (normalized first under
/// cosine; no rotation).
pub fn encode(x: &[f32], dim: usize, bits: usize, metric: Metric) -> Result<Vec<u64>> {
    ensure!(bits == 1 || bits == 2, "bits", "must be 1 or 2, got {bits}");
    ensure!(dim >= 1, "dim", "must be at least 1");
    validate_rows(x, dim, metric, "X")?;
    encode_rows(&prepare_rows(x, dim, metric), dim, bits, None)
}

/// Brute-force k nearest neighbours of each query among `x` (rows), in the metric's
/// convention, ties broken by the smaller row. Rows past `n` are padded with `-1` / `+inf`.
pub fn exact_search(
    x: &[f32],
    q: &[f32],
    dim: usize,
    k: usize,
    metric: Metric,
) -> Result<(Vec<i64>, Vec<f32>)> {
    ensure!(dim >= 1, "dim", "must be at least 1");
    ensure!(k >= 1, "k", "must be at least 1, got {k}");
    validate_rows(x, dim, metric, "X")?;
    validate_rows(q, dim, metric, "Q")?;
    let nq = q.len() / dim;
    let (mut ids, mut ds) = result_buffers(nq, k)?;
    let xs = prepare_rows(x, dim, metric);
    let qs = prepare_rows(q, dim, metric);
    ids.par_chunks_mut(k)
        .zip(ds.par_chunks_mut(k))
        .zip(qs.par_chunks_exact(dim))
        .for_each(|((oi, od), qr)| {
            let mut all: Vec<(f32, u32)> = xs
                .chunks_exact(dim)
                .enumerate()
                .map(|(i, xr)| (float_distance(metric, qr, xr), i as u32))
                .collect();
            let kk = k.min(all.len());
            let cmp = |a: &(f32, u32), b: &(f32, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
            if kk < all.len() && kk > 0 {
                all.select_nth_unstable_by(kk - 1, cmp);
                all.truncate(kk);
            }
            all.sort_unstable_by(cmp);
            for (j, (d, i)) in all.into_iter().enumerate() {
                oi[j] = i as i64;
                od[j] = d;
            }
        });
    Ok((ids, ds))
}

/// `nq x k` result buffers holding the padding (`-1`, `+inf`): an error naming `k`, not an
/// abort, when they cannot be allocated.
fn result_buffers(nq: usize, k: usize) -> Result<(Vec<i64>, Vec<f32>)> {
    let fail = || {
        Error::invalid(
            "k",
            format!("{nq} queries x k = {k} results do not fit in memory"),
        )
    };
    let total = nq
        .checked_mul(k)
        .filter(|&t| t <= isize::MAX as usize / 8)
        .ok_or_else(fail)?;
    let mut ids: Vec<i64> = Vec::new();
    let mut ds: Vec<f32> = Vec::new();
    ids.try_reserve_exact(total).map_err(|_| fail())?;
    ds.try_reserve_exact(total).map_err(|_| fail())?;
    ids.resize(total, -1);
    ds.resize(total, f32::INFINITY);
    Ok((ids, ds))
}

/// Recall@k of the code-space ranking against the exact ranking on `x` (each row against
/// all others), with or without a rotation seeded by `rotation_seed`.
pub fn fitness_recall(
    x: &[f32],
    dim: usize,
    metric: Metric,
    bits: usize,
    k: usize,
    rotation_seed: Option<u64>,
) -> Result<f64> {
    ensure!(bits == 1 || bits == 2, "bits", "must be 1 or 2, got {bits}");
    validate_rows(x, dim, metric, "X")?;
    let n = x.len() / dim.max(1);
    ensure!(n > k, "X", "needs more than k = {k} rows, got {n}");
    let rows = prepare_rows(x, dim, metric);
    let rot = match rotation_seed {
        Some(seed) => Some(Rotation::new(dim, seed, column_mean(&rows, dim))?),
        None => None,
    };
    let codes = encode_rows(&rows, dim, bits, rot.as_ref())?;
    let code_dim = rot.as_ref().map_or(dim, |r| r.padded_dim());
    let cw = bits * words_for(code_dim);
    let hits: usize = (0..n)
        .into_par_iter()
        .map(|i| {
            let xi = &rows[i * dim..(i + 1) * dim];
            let ci = &codes[i * cw..(i + 1) * cw];
            let mut ex: Vec<(f32, u32)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    (
                        float_distance(metric, xi, &rows[j * dim..(j + 1) * dim]),
                        j as u32,
                    )
                })
                .collect();
            ex.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            let mut cd: Vec<(u32, u32)> = (0..n)
                .filter(|&j| j != i)
                .map(|j| {
                    (
                        codes::code_distance(ci, &codes[j * cw..(j + 1) * cw], code_dim, bits),
                        j as u32,
                    )
                })
                .collect();
            cd.sort_unstable();
            let truth: std::collections::HashSet<u32> = ex[..k].iter().map(|e| e.1).collect();
            cd[..k].iter().filter(|e| truth.contains(&e.1)).count()
        })
        .sum();
    Ok(hits as f64 / (n * k) as f64)
}

fn column_mean(rows: &[f32], dim: usize) -> Vec<f32> {
    let n = rows.len() / dim.max(1);
    let mut acc = vec![0f64; dim];
    for row in rows.chunks_exact(dim) {
        for (a, &v) in acc.iter_mut().zip(row) {
            *a += v as f64;
        }
    }
    acc.into_iter()
        .map(|a| (a / n.max(1) as f64) as f32)
        .collect()
}

/// Float vectors used for reranking: owned, or mapped from an index file.
pub enum Vectors {
    Owned(Vec<f32>),
    Mapped {
        map: memmap2::Mmap,
        offset: usize,
        len: usize,
    },
}

impl Vectors {
    pub fn as_slice(&self) -> &[f32] {
        match self {
            Vectors::Owned(v) => v,
            Vectors::Mapped { map, offset, len } => {
                let bytes = &map[*offset..*offset + *len * 4];
                // SAFETY: `format::load` only maps on little-endian hosts with `offset`
                // 64-byte aligned inside a page-aligned mapping, so the pointer is aligned for
                // f32, the bytes are initialized and live as long as `map`.
                unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const f32, *len) }
            }
        }
    }
    fn make_owned(&mut self) -> &mut Vec<f32> {
        if let Vectors::Mapped { .. } = self {
            *self = Vectors::Owned(huge::copied(self.as_slice()));
        }
        match self {
            Vectors::Owned(v) => v,
            Vectors::Mapped { .. } => unreachable!(),
        }
    }
    pub fn is_mapped(&self) -> bool {
        matches!(self, Vectors::Mapped { .. })
    }
}

/// Construction parameters of an index.
#[derive(Clone, Debug)]
pub struct Params {
    pub dim: usize,
    pub metric: Metric,
    pub bits: usize,
    pub r: usize,
    pub l_build: usize,
    pub alpha: f64,
    pub rotation: bool,
    pub seed: u64,
}

/// Lists may grow to this degree during an `add` before they are pruned back to `R`
/// (DiskANN's graph slack factor 1.3); the last step of `add` prunes them to `R`.
pub fn slack_degree(r: usize) -> usize {
    (r * 13).div_ceil(10)
}

/// Progress callback: `(done, total)` insertions.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// The binary-quantized Vamana index.
pub struct BQGraphIndex {
    params: Params,
    code_dim: usize,
    cw: usize,
    codes: Vec<u64>,
    /// Row stride of `adj`: `R` at rest, `slack_degree(R)` during an `add`.
    stride: usize,
    adj: Vec<u32>,
    deg: Vec<u32>,
    vectors: Vectors,
    ids: Vec<i64>,
    deleted: Vec<bool>,
    n_deleted: usize,
    id_map: HashMap<i64, u32>,
    entry: u32,
    rot: Option<Rotation>,
}

/// Binds `$g` to a [`GraphRef`] over the index's codes and lists with the distance `$dist`.
macro_rules! graph_with {
    ($self:expr, $dist:expr, $g:ident => $body:expr) => {{
        let $g = GraphRef {
            dist: $dist,
            codes: &$self.codes,
            adj: &$self.adj,
            deg: &$self.deg,
            r: $self.stride,
        };
        $body
    }};
}

macro_rules! with_graph {
    ($self:expr, $g:ident => $body:expr) => {{
        let words = words_for($self.code_dim);
        if $self.params.bits == 1 {
            graph_with!($self, Hamming { words }, $g => $body)
        } else {
            let dim = $self.code_dim as u32;
            graph_with!($self, SignMag { words, dim }, $g => $body)
        }
    }};
}

/// Like `with_graph!`, with the word count fixed at compile time for common dimensions and
/// the AVX-512 kernels when they are in use (used on the hot paths: construction searches
/// and prunes, and queries).
macro_rules! with_graph_fast {
    ($self:expr, $g:ident => $body:expr) => {{
        let words = words_for($self.code_dim);
        let dim = $self.code_dim as u32;
        // The vector kernel for `$w` words when it is in use, else `$scalar`.
        macro_rules! fixed {
            ($vector:expr, $scalar:expr) => {{
                match $vector {
                    Some(dist) => graph_with!($self, dist, $g => $body),
                    None => graph_with!($self, $scalar, $g => $body),
                }
            }};
        }
        macro_rules! fixed1 {
            ($w:literal) => {
                fixed!(codes::hamming_vector::<$w>(), Hamming { words })
            };
        }
        macro_rules! fixed2 {
            ($w:literal) => {
                fixed!(codes::signmag_vector::<$w>(dim), SignMagN::<$w> { dim })
            };
        }
        match ($self.params.bits, words) {
            (1, 2) => fixed1!(2),
            (1, 4) => fixed1!(4),
            (1, 6) => fixed1!(6),
            (1, 8) => fixed1!(8),
            (1, 12) => fixed1!(12),
            (1, 16) => fixed1!(16),
            (2, 2) => fixed2!(2),
            (2, 4) => fixed2!(4),
            (2, 6) => fixed2!(6),
            (2, 8) => fixed2!(8),
            (2, 12) => fixed2!(12),
            (2, 16) => fixed2!(16),
            _ => with_graph!($self, $g => $body),
        }
    }};
}

/// Result of one search: ids and distances, `k` per query.
pub type SearchResult = (Vec<i64>, Vec<f32>);

impl BQGraphIndex {
    /// An empty index; validates the parameters.
    pub fn new(params: Params) -> Result<Self> {
        let p = &params;
        ensure!(p.dim >= 1, "dim", "must be at least 1, got {}", p.dim);
        ensure!(
            p.dim <= 1 << 20,
            "dim",
            "must be at most 2^20, got {}",
            p.dim
        );
        ensure!(
            p.bits == 1 || p.bits == 2,
            "bits",
            "must be 1 or 2, got {}",
            p.bits
        );
        ensure!(p.r >= 2, "R", "must be at least 2, got {}", p.r);
        ensure!(p.r <= 4096, "R", "must be at most 4096, got {}", p.r);
        ensure!(
            p.l_build >= 1,
            "L_build",
            "must be at least 1, got {}",
            p.l_build
        );
        ensure!(
            p.alpha.is_finite() && p.alpha >= 1.0,
            "alpha",
            "must be a finite number >= 1 (DiskANN convention), got {}",
            p.alpha
        );
        let code_dim = if p.rotation {
            Rotation::new(p.dim, p.seed, vec![0.0; p.dim])?.padded_dim()
        } else {
            p.dim
        };
        let cw = p.bits * words_for(code_dim);
        Ok(BQGraphIndex {
            code_dim,
            cw,
            codes: Vec::new(),
            stride: params.r,
            adj: Vec::new(),
            deg: Vec::new(),
            vectors: Vectors::Owned(Vec::new()),
            ids: Vec::new(),
            deleted: Vec::new(),
            n_deleted: 0,
            id_map: HashMap::new(),
            entry: 0,
            rot: None,
            params,
        })
    }

    pub fn params(&self) -> &Params {
        &self.params
    }
    /// Number of live (not removed) vectors.
    pub fn len(&self) -> usize {
        self.ids.len() - self.n_deleted
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Number of stored nodes, removed ones included (until `compact`).
    pub fn n_nodes(&self) -> usize {
        self.ids.len()
    }
    /// Dimension of the codes (the padded dimension under rotation).
    pub fn code_dim(&self) -> usize {
        self.code_dim
    }
    pub fn vectors_mapped(&self) -> bool {
        self.vectors.is_mapped()
    }
    /// Bytes held by the codes, the graph and the float vectors.
    pub fn memory_usage(&self) -> (usize, usize, usize) {
        (
            self.codes.len() * 8,
            self.adj.len() * 4 + self.deg.len() * 4,
            self.vectors.as_slice().len() * 4,
        )
    }
    /// User ids of live vectors, in insertion order.
    pub fn live_ids(&self) -> Vec<i64> {
        self.ids
            .iter()
            .zip(&self.deleted)
            .filter(|(_, &d)| !d)
            .map(|(&i, _)| i)
            .collect()
    }
    /// Whether `id` is a live id.
    pub fn contains(&self, id: i64) -> bool {
        self.id_map.contains_key(&id)
    }
    /// Neighbour list of node `i` (for tests).
    pub fn neighbors(&self, i: usize) -> &[u32] {
        let s = i * self.stride;
        &self.adj[s..s + self.deg[i] as usize]
    }

    /// Adds `x` (`n x dim`, row-major) with user ids (`None`: consecutive ids after the
    /// largest stored id, removed ones included until `compact`, from 0). Validates
    /// everything before changing the index.
    pub fn add(
        &mut self,
        x: &[f32],
        ids: Option<&[i64]>,
        progress: Option<Progress<'_>>,
    ) -> Result<()> {
        let dim = self.params.dim;
        ensure!(
            x.len().is_multiple_of(dim),
            "X",
            "length {} is not a multiple of dim {dim}",
            x.len()
        );
        let n = x.len() / dim;
        validate_rows(x, dim, self.params.metric, "X")?;
        ensure!(
            self.ids.len() + n < u32::MAX as usize,
            "X",
            "an index holds fewer than 2^32 - 1 vectors"
        );
        let new_ids: Vec<i64> = match ids {
            Some(ids) => {
                ensure!(
                    ids.len() == n,
                    "ids",
                    "has {} entries but X has {n} rows",
                    ids.len()
                );
                let mut seen = HashMap::with_capacity(n);
                for (row, &id) in ids.iter().enumerate() {
                    if let Some(prev) = seen.insert(id, row) {
                        return Err(Error::invalid(
                            "ids",
                            format!("id {id} appears twice (rows {prev} and {row})"),
                        ));
                    }
                    if self.id_map.contains_key(&id) {
                        return Err(Error::invalid(
                            "ids",
                            format!("id {id} (row {row}) is already in the index"),
                        ));
                    }
                }
                ids.to_vec()
            }
            None => {
                let start = self.ids.iter().copied().max().map_or(0, |m| m + 1);
                ensure!(
                    start.checked_add(n as i64).is_some(),
                    "ids",
                    "automatic ids would overflow int64"
                );
                (0..n as i64).map(|i| start + i).collect()
            }
        };
        if n == 0 {
            return Ok(());
        }
        let rows = prepare_rows(x, dim, self.params.metric);
        let first = self.ids.is_empty();
        if first && self.params.rotation {
            self.rot = Some(Rotation::new(
                dim,
                self.params.seed,
                column_mean(&rows, dim),
            )?);
        }
        let codes = encode_rows(&rows, dim, self.params.bits, self.rot.as_ref())?;
        // From here on nothing fails.
        let old = self.ids.len();
        huge::extend(self.vectors.make_owned(), &rows);
        huge::extend(&mut self.codes, &codes);
        let adj_len = (old + n) * self.stride;
        if self.adj.capacity() < adj_len {
            let mut adj = huge::with_capacity(adj_len);
            adj.extend_from_slice(&self.adj);
            self.adj = adj;
        }
        self.adj.resize(adj_len, 0);
        self.deg.resize(old + n, 0);
        self.restride(slack_degree(self.params.r));
        for (k, &id) in new_ids.iter().enumerate() {
            self.id_map.insert(id, (old + k) as u32);
        }
        self.ids.extend_from_slice(&new_ids);
        self.deleted.resize(old + n, false);
        if first || self.len() == n {
            self.build_full(progress);
        } else {
            let order = self.permutation(old as u32..(old + n) as u32, 2);
            self.insert_pass(
                &order,
                self.params.alpha,
                self.params.l_build,
                progress,
                0,
                n,
            );
        }
        self.finish_slack();
        self.connect_unreachable();
        Ok(())
    }

    /// Makes every live node reachable from the entry. Vamana does not guarantee it: with a
    /// small `R`, clustered data can leave whole clusters without an incoming path, because
    /// their neighbours' lists fill up with nearer nodes. For each live node a traversal from
    /// the entry misses, a code-space search from the entry (beam `max(L_build, R)`) finds its
    /// nearest reachable nodes, and one of them, `v`, gets an edge to it: appended when `v`
    /// has room, else replacing `v`'s edge to the neighbour with the most incoming edges.
    /// Everything the new edge reaches is marked before the next miss is handled, so a
    /// cut-off cluster costs one search and one edge. A replaced edge can cut something off
    /// in turn, so the check repeats (a few rounds at most). Sequential and deterministic; a
    /// connected graph is left unchanged.
    fn connect_unreachable(&mut self) {
        let n = self.n_nodes();
        if self.is_empty() {
            return;
        }
        let r = self.stride;
        let l = self.params.l_build.max(self.params.r);
        // `seen`: reachable from the entry; `rin`: incoming edges from reachable nodes.
        // Marking a node reachable walks everything it reaches and counts their edges.
        fn mark(seen: &mut [bool], rin: &mut [u32], from: u32, adj: &[u32], deg: &[u32], r: usize) {
            if seen[from as usize] {
                return;
            }
            seen[from as usize] = true;
            let mut stack = vec![from];
            while let Some(a) = stack.pop() {
                let s = a as usize * r;
                for &b in &adj[s..s + deg[a as usize] as usize] {
                    rin[b as usize] += 1;
                    if !seen[b as usize] {
                        seen[b as usize] = true;
                        stack.push(b);
                    }
                }
            }
        }
        let mut last_missing = usize::MAX;
        loop {
            let mut seen = vec![false; n];
            let mut rin = vec![0u32; n];
            mark(&mut seen, &mut rin, self.entry, &self.adj, &self.deg, r);
            let missing: Vec<u32> = (0..n as u32)
                .filter(|&u| !seen[u as usize] && !self.deleted[u as usize])
                .collect();
            // Stop when connected, or when a round made no progress (only possible for a
            // tiny `R`, where every replaced edge cuts another node off).
            if missing.is_empty() || missing.len() >= last_missing {
                return;
            }
            last_missing = missing.len();
            for u in missing {
                if seen[u as usize] {
                    continue;
                }
                let pool = with_graph_fast!(self, g => {
                    beam_search(&g, g.code(u), self.entry, l, graph::dup_cap(l), None)
                });
                let reach: Vec<u32> = pool
                    .iter()
                    .map(|&(_, v)| v)
                    .filter(|&v| v != u && seen[v as usize] && !self.deleted[v as usize])
                    .collect();
                let nbrs = |v: u32| {
                    let s = v as usize * r;
                    (s, self.deg[v as usize] as usize)
                };
                // Nearest reachable live node with room; else the nearest with an edge to a
                // node that another reachable node also points at (so replacing it cuts
                // nothing off); else the nearest, replacing its most-pointed-at edge.
                let with_room = reach.iter().copied().find(|&v| nbrs(v).1 < r);
                let spare = |v: u32| {
                    let (s, d) = nbrs(v);
                    (0..d)
                        .max_by_key(|&i| (rin[self.adj[s + i] as usize], i))
                        .map(|i| (s + i, rin[self.adj[s + i] as usize]))
                };
                let slot = match with_room {
                    Some(v) => {
                        let (s, d) = nbrs(v);
                        self.deg[v as usize] += 1;
                        s + d
                    }
                    None => {
                        let best = reach
                            .iter()
                            .filter_map(|&v| spare(v))
                            .find(|&(_, c)| c >= 2)
                            .or_else(|| reach.first().and_then(|&v| spare(v)))
                            .or_else(|| spare(self.entry));
                        let Some((slot, _)) = best else { continue };
                        rin[self.adj[slot] as usize] -= 1;
                        slot
                    }
                };
                self.adj[slot] = u;
                rin[u as usize] += 1;
                mark(&mut seen, &mut rin, u, &self.adj, &self.deg, r);
            }
        }
    }

    /// Changes the row stride of the adjacency array (keeping every list).
    fn restride(&mut self, stride: usize) {
        if stride == self.stride {
            return;
        }
        let n = self.deg.len();
        let mut adj = huge::filled(n * stride, 0u32);
        for i in 0..n {
            let d = (self.deg[i] as usize).min(stride);
            adj[i * stride..i * stride + d]
                .copy_from_slice(&self.adj[i * self.stride..i * self.stride + d]);
        }
        self.adj = adj;
        self.stride = stride;
    }

    /// Prunes every list longer than `R` (left by the slack of the build) and goes back to
    /// stride `R`.
    fn finish_slack(&mut self) {
        let r = self.params.r;
        let alpha = self.params.alpha;
        let deleted = &self.deleted;
        let skip = |i: u32| deleted[i as usize];
        let n = self.n_nodes();
        let updates: Vec<(u32, Vec<u32>)> = with_graph!(self, g => {
            (0..n as u32)
                .into_par_iter()
                .filter(|&p| g.neighbors(p).len() > r)
                .map(|p| {
                    let pc = g.code(p);
                    let mut cands: Vec<(u32, u32)> =
                        g.neighbors(p).iter().map(|&j| (g.d(pc, j), j)).collect();
                    (p, robust_prune(&g, p, &mut cands, alpha, r, &skip))
                })
                .collect()
        });
        for (p, list) in updates {
            self.set_list(p, &list);
        }
        self.restride(r);
    }

    fn permutation(&self, range: std::ops::Range<u32>, stream: u64) -> Vec<u32> {
        let seed = self.params.seed;
        let mut v: Vec<(u64, u32)> = range
            .map(|i| (crate::rng::counter_u64(seed, stream, i as u64), i))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, i)| i).collect()
    }

    /// Code-space medoid of the live nodes: the node whose code is nearest to the code of the
    /// (transformed) mean vector; ties to the smaller node.
    fn medoid(&self) -> u32 {
        let dim = self.params.dim;
        let vecs = self.vectors.as_slice();
        let mut acc = vec![0f64; dim];
        let mut cnt = 0usize;
        for (i, row) in vecs.chunks_exact(dim).enumerate() {
            if self.deleted[i] {
                continue;
            }
            cnt += 1;
            for (a, &v) in acc.iter_mut().zip(row) {
                *a += v as f64;
            }
        }
        let mean: Vec<f32> = acc.iter().map(|a| (a / cnt.max(1) as f64) as f32).collect();
        let mc = self
            .encode_query(&mean)
            .unwrap_or_else(|_| vec![0; self.cw]);
        with_graph!(self, g => {
            (0..self.n_nodes() as u32)
                .filter(|&i| !self.deleted[i as usize])
                .min_by_key(|&i| (g.d(&mc, i), i))
                .unwrap_or(0)
        })
    }

    fn encode_query(&self, q: &[f32]) -> Result<Vec<u64>> {
        let mut code = vec![0u64; self.cw];
        match &self.rot {
            None => encode_one(q, self.params.bits, &mut code),
            Some(r) => {
                let mut buf = vec![0f32; self.code_dim];
                r.apply(q, &mut buf)?;
                encode_one(&buf, self.params.bits, &mut code);
            }
        }
        Ok(code)
    }

    fn build_full(&mut self, progress: Option<Progress<'_>>) {
        let n = self.n_nodes();
        self.adj.iter_mut().for_each(|a| *a = 0);
        self.deg.iter_mut().for_each(|d| *d = 0);
        self.entry = self.medoid();
        let entry = self.entry;
        let mut order = vec![entry];
        order.extend(
            self.permutation(0..n as u32, 0)
                .into_iter()
                .filter(|&i| i != entry && !self.deleted[i as usize]),
        );
        let total = 2 * order.len();
        // The first pass (alpha = 1) only seeds the second, whose searches and prunes decide
        // the final lists: it searches with half the beam (at least R), which saves about a
        // quarter of the build time and leaves the recall-QPS curve unchanged (glosses 100k).
        let l1 = self.params.l_build / 2;
        self.insert_pass(&order, 1.0, l1, progress, 0, total);
        let order2 = self.permutation(0..n as u32, 1);
        let order2: Vec<u32> = order2
            .into_iter()
            .filter(|&i| !self.deleted[i as usize])
            .collect();
        self.insert_pass(
            &order2,
            self.params.alpha,
            self.params.l_build,
            progress,
            total / 2,
            total,
        );
    }

    /// Inserts `order` in batches (1, 2, 4, ... up to 2% of the nodes, at least 64, at
    /// most 4096). Within a batch the searches and prunes run in parallel against the graph
    /// as it was before the batch, and their results are applied in order, so the graph
    /// depends only on the data and the seed, never on the thread count.
    fn insert_pass(
        &mut self,
        order: &[u32],
        alpha: f64,
        l_build: usize,
        progress: Option<Progress<'_>>,
        done0: usize,
        total: usize,
    ) {
        let r = self.params.r;
        let stride = self.stride;
        let l = l_build.max(r);
        let max_batch = (self.n_nodes() / 50).clamp(64, 4096);
        let mut start = 0;
        let mut bs = 1;
        while start < order.len() {
            let end = (start + bs).min(order.len());
            let batch = &order[start..end];
            let deleted = &self.deleted;
            let skip = |i: u32| deleted[i as usize];
            let entry = self.entry;
            let lists: Vec<Vec<u32>> = with_graph_fast!(self, g => {
                let work = |&p: &u32| {
                    let mut cands = Vec::with_capacity(2 * l);
                    let pc = g.code(p);
                    beam_search(&g, pc, entry, l, graph::dup_cap(l), Some(&mut cands));
                    for &nb in g.neighbors(p) {
                        cands.push((g.d(pc, nb), nb));
                    }
                    robust_prune(&g, p, &mut cands, alpha, r, &skip)
                };
                if batch.len() > 1 {
                    batch.par_iter().map(work).collect()
                } else {
                    batch.iter().map(work).collect()
                }
            });
            let mut pairs: Vec<(u32, u32)> = Vec::new();
            for (&p, list) in batch.iter().zip(&lists) {
                self.set_list(p, list);
                pairs.extend(list.iter().map(|&j| (j, p)));
            }
            pairs.sort_unstable();
            pairs.dedup();
            let mut groups: Vec<(u32, Vec<u32>)> = Vec::new();
            for (j, p) in pairs {
                match groups.last_mut() {
                    Some((gj, v)) if *gj == j => v.push(p),
                    _ => groups.push((j, vec![p])),
                }
            }
            let deleted = &self.deleted;
            let skip = |i: u32| deleted[i as usize];
            let updates: Vec<(u32, Vec<u32>)> = with_graph_fast!(self, g => {
                let work = |(j, srcs): &(u32, Vec<u32>)| {
                    let cur = g.neighbors(*j);
                    let mut merged = cur.to_vec();
                    for &s in srcs {
                        if !cur.contains(&s) {
                            merged.push(s);
                        }
                    }
                    if merged.len() == cur.len() {
                        return None;
                    }
                    if merged.len() <= stride {
                        return Some((*j, merged));
                    }
                    let jc = g.code(*j);
                    let mut cands: Vec<(u32, u32)> =
                        merged.iter().map(|&m| (g.d(jc, m), m)).collect();
                    Some((*j, robust_prune(&g, *j, &mut cands, alpha, r, &skip)))
                };
                if groups.len() > 1 {
                    groups.par_iter().filter_map(work).collect()
                } else {
                    groups.iter().filter_map(work).collect()
                }
            });
            for (j, list) in updates {
                self.set_list(j, &list);
            }
            start = end;
            bs = (bs * 2).min(max_batch);
            if let Some(cb) = progress {
                cb(done0 + end, total);
            }
        }
    }

    fn set_list(&mut self, p: u32, list: &[u32]) {
        let r = self.stride;
        let s = p as usize * r;
        self.adj[s..s + list.len()].copy_from_slice(list);
        self.deg[p as usize] = list.len() as u32;
    }

    fn validate_query(&self, q: &[f32]) -> Result<usize> {
        let dim = self.params.dim;
        ensure!(
            q.len().is_multiple_of(dim),
            "Q",
            "length {} is not a multiple of the index dimension {dim}",
            q.len()
        );
        validate_rows(q, dim, self.params.metric, "Q")?;
        Ok(q.len() / dim)
    }

    /// Searches `q` (`nq x dim`). `ef_search` is raised to at least `k`; `rerank_k`
    /// (default `ef_search`) is clamped to `[k, ef_search]`. Missing results are `-1` /
    /// `+inf`.
    pub fn search(
        &self,
        q: &[f32],
        k: usize,
        ef_search: usize,
        rerank: bool,
        rerank_k: Option<usize>,
    ) -> Result<SearchResult> {
        ensure!(k >= 1, "k", "must be at least 1, got {k}");
        ensure!(
            ef_search >= 1,
            "ef_search",
            "must be at least 1, got {ef_search}"
        );
        if let Some(rk) = rerank_k {
            ensure!(rk >= 1, "rerank_k", "must be at least 1, got {rk}");
        }
        let nq = self.validate_query(q)?;
        let dim = self.params.dim;
        let metric = self.params.metric;
        let qs = prepare_rows(q, dim, metric);
        // A beam wider than the graph visits nothing more: clamp it (so a huge `ef_search`
        // allocates nothing huge).
        let ef = ef_search.min(self.n_nodes()).max(k);
        let rk = rerank_k.unwrap_or(ef).clamp(k, ef);
        // Removed nodes still occupy beam slots: widen the beam by as many (at most 2x), and
        // visit everything when `k` asks for every live vector.
        let beam = if k >= self.len() {
            self.n_nodes()
        } else {
            ef + self.n_deleted.min(ef)
        };
        let (mut ids, mut ds) = result_buffers(nq, k)?;
        if self.is_empty() {
            return Ok((ids, ds));
        }
        let vecs = self.vectors.as_slice();
        // Code-space candidates of one query: the live beam entries to score exactly.
        let candidates = |qr: &[f32]| -> Result<Vec<u32>> {
            let qc = self.encode_query(qr)?;
            let pool = with_graph_fast!(self, g => beam_search(&g, &qc, self.entry, beam, graph::dup_cap(ef).max(k), None));
            let take = if rerank { rk } else { k };
            Ok(pool
                .into_iter()
                .filter(|&(_, i)| !self.deleted[i as usize])
                .take(take)
                .map(|(_, i)| i)
                .collect())
        };
        let finish = |cands: &[u32], qr: &[f32], oi: &mut [i64], od: &mut [f32]| {
            let mut res: Vec<(f32, u32)> = cands
                .iter()
                .map(|&i| {
                    let x = &vecs[i as usize * dim..(i as usize + 1) * dim];
                    (float_distance(metric, qr, x), i)
                })
                .collect();
            if rerank {
                res.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            }
            res.truncate(k);
            for (j, (d, i)) in res.into_iter().enumerate() {
                oi[j] = self.ids[i as usize];
                od[j] = d;
            }
        };
        // Queries run in blocks, software-pipelined: the float rows that query `j` reranks
        // are prefetched before the beam search of query `j + 1` and scored after it, so the
        // rerank's cache misses overlap with that search instead of stalling it.
        let block = |((oi, od), qb): ((&mut [i64], &mut [f32]), &[f32])| -> Result<()> {
            let mut pending: Option<(usize, Vec<u32>)> = None;
            let nb = qb.len() / dim;
            for j in 0..=nb {
                let next = if j < nb {
                    let cands = candidates(&qb[j * dim..(j + 1) * dim])?;
                    for &i in &cands {
                        prefetch_row(vecs, i as usize * dim, dim);
                    }
                    Some((j, cands))
                } else {
                    None
                };
                if let Some((pj, cands)) = pending.take() {
                    finish(
                        &cands,
                        &qb[pj * dim..(pj + 1) * dim],
                        &mut oi[pj * k..(pj + 1) * k],
                        &mut od[pj * k..(pj + 1) * k],
                    );
                }
                pending = next;
            }
            Ok(())
        };
        const BLOCK: usize = 16;
        if nq >= 2 * BLOCK {
            ids.par_chunks_mut(BLOCK * k)
                .zip(ds.par_chunks_mut(BLOCK * k))
                .zip(qs.par_chunks(BLOCK * dim))
                .try_for_each(block)?;
        } else {
            block(((&mut ids, &mut ds), &qs))?;
        }
        Ok((ids, ds))
    }

    /// Marks `ids` as removed (all must be live and distinct; nothing changes otherwise).
    pub fn remove(&mut self, ids: &[i64]) -> Result<()> {
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        for &id in ids {
            ensure!(seen.insert(id), "ids", "id {id} appears twice");
            ensure!(
                self.id_map.contains_key(&id),
                "ids",
                "id {id} is not in the index"
            );
        }
        for id in ids {
            if let Some(node) = self.id_map.remove(id) {
                self.deleted[node as usize] = true;
                self.n_deleted += 1;
            }
        }
        Ok(())
    }

    /// Repairs the graph around removed nodes (FreshDiskANN-style: each live node with a
    /// removed neighbour is re-pruned over its live neighbours and theirs) and drops them.
    pub fn compact(&mut self) {
        if self.n_deleted == 0 {
            return;
        }
        let r = self.params.r;
        let alpha = self.params.alpha;
        let n = self.n_nodes();
        let deleted = &self.deleted;
        let skip = |i: u32| deleted[i as usize];
        let updates: Vec<(u32, Vec<u32>)> = with_graph!(self, g => {
            (0..n as u32)
                .into_par_iter()
                .filter(|&p| !deleted[p as usize] && g.neighbors(p).iter().any(|&j| deleted[j as usize]))
                .map(|p| {
                    let pc = g.code(p);
                    let mut cands = Vec::new();
                    for &j in g.neighbors(p) {
                        if deleted[j as usize] {
                            for &jj in g.neighbors(j) {
                                cands.push((g.d(pc, jj), jj));
                            }
                        } else {
                            cands.push((g.d(pc, j), j));
                        }
                    }
                    (p, robust_prune(&g, p, &mut cands, alpha, r, &skip))
                })
                .collect()
        });
        for (p, list) in updates {
            self.set_list(p, &list);
        }
        // Renumber the live nodes.
        let mut remap = vec![u32::MAX; n];
        let mut next = 0u32;
        for (slot, &del) in remap.iter_mut().zip(&self.deleted) {
            if !del {
                *slot = next;
                next += 1;
            }
        }
        let m = next as usize;
        let dim = self.params.dim;
        let cw = self.cw;
        let old_vecs = std::mem::replace(&mut self.vectors, Vectors::Owned(Vec::new()));
        let ov = old_vecs.as_slice();
        let mut codes = huge::with_capacity(m * cw);
        let mut vecs = huge::with_capacity(m * dim);
        let mut adj = huge::filled(m * r, 0u32);
        let mut deg = vec![0u32; m];
        let mut ids = Vec::with_capacity(m);
        for i in 0..n {
            if self.deleted[i] {
                continue;
            }
            let ni = remap[i] as usize;
            codes.extend_from_slice(&self.codes[i * cw..(i + 1) * cw]);
            vecs.extend_from_slice(&ov[i * dim..(i + 1) * dim]);
            ids.push(self.ids[i]);
            let mut d = 0;
            for &j in self.neighbors(i) {
                if remap[j as usize] != u32::MAX {
                    adj[ni * r + d] = remap[j as usize];
                    d += 1;
                }
            }
            deg[ni] = d as u32;
        }
        let entry_live = !self.deleted[self.entry as usize];
        let old_entry = self.entry;
        self.codes = codes;
        self.vectors = Vectors::Owned(vecs);
        self.adj = adj;
        self.deg = deg;
        self.ids = ids;
        self.deleted = vec![false; m];
        self.n_deleted = 0;
        self.id_map = self
            .ids
            .iter()
            .enumerate()
            .map(|(i, &id)| (id, i as u32))
            .collect();
        self.entry = if entry_live {
            remap[old_entry as usize]
        } else if m > 0 {
            self.medoid()
        } else {
            0
        };
        self.connect_unreachable();
    }
}

#[cfg(test)]
mod tests;
