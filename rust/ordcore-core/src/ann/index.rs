//! Index state: parameters, stored codes, graph lists, float vectors, user ids and removal
//! marks, with the accessors over them.

use std::collections::HashMap;

use std::borrow::Cow;

use super::codes::encode_one;
use super::encode::{code_words, sq_metric, sq_term};
use super::huge;
use super::metric::Metric;
use super::rotation::Rotation;
use super::sq::{self, SqDist, SqLayout};
use super::store::{CompactRows, RerankDtype};
use crate::{ensure, Error, Result};

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
    pub(super) fn make_owned(&mut self) -> &mut Vec<f32> {
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

/// Progress callback: `(done, total)` insertions. An `Err` stops the `add`, which then
/// leaves the index as it was and returns that error.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) -> Result<()> + Sync);

/// The binary-quantized Vamana index.
pub struct BQGraphIndex {
    pub(super) params: Params,
    pub(super) code_dim: usize,
    pub(super) cw: usize,
    pub(super) codes: Vec<u64>,
    /// Row stride of `adj`: `R` at rest, `slack_degree(R)` during an `add`.
    pub(super) stride: usize,
    pub(super) adj: Vec<u32>,
    pub(super) deg: Vec<u32>,
    pub(super) vectors: Vectors,
    /// The compact rerank store (`rerank_dtype` other than float32; `vectors` is then empty).
    pub(super) compact: Option<CompactRows>,
    pub(super) ids: Vec<i64>,
    /// Per node, its insertion rank among the stored nodes (`0..n`, dense): the order of
    /// `live_ids` and the tie rule of exact distances. Node numbers follow it (identity) for
    /// 1- and 2-bit indexes and files of format versions 1 to 4; 4- and 8-bit indexes are
    /// renumbered in graph order after each `add` and `compact` (see [`super::renumber`]).
    pub(super) rank: Vec<u32>,
    /// The nodes the search start is picked from ([`super::search::start_node`]): those of
    /// insertion ranks `t * n / m`, so the sample does not depend on the numbering.
    pub(super) start_sample: Vec<u32>,
    pub(super) deleted: Vec<bool>,
    pub(super) n_deleted: usize,
    pub(super) id_map: HashMap<i64, u32>,
    pub(super) entry: u32,
    pub(super) rot: Option<Rotation>,
    /// Opaque UTF-8 text saved with the index (the Python layer stores the automatic code
    /// choice there as JSON); empty when unused.
    pub(super) meta: String,
    /// The search-time degree bound `D` of [`super::order`]: 0 when the lists are in
    /// construction order (1- and 2-bit indexes, files of format versions 1 to 3), else
    /// the lists are ordered core first and searches expand at most
    /// `order::auto_degree(D, beam)` neighbours of each node.
    pub(super) search_degree: u32,
}

/// A search filter: which ids a search may return.
#[derive(Clone, Copy, Debug)]
pub enum Filter<'a> {
    /// An allow-list of ids (any order, repeats allowed); each must be a live id.
    Ids(&'a [i64]),
    /// A bitmap indexed by id value: `bitmap[id]` allows `id`; ids past its end are not
    /// allowed.
    Bitmap(&'a [bool]),
}

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
            matches!(p.bits, 1 | 2 | 4 | 8),
            "bits",
            "must be 1, 2, 4 or 8, got {}",
            p.bits
        );
        ensure!(p.r >= 2, "R", "must be at least 2, got {}", p.r);
        ensure!(p.r <= 4096, "R", "must be at most 4096, got {}", p.r);
        ensure!(
            p.l_build >= 1 && p.l_build <= u32::MAX as usize,
            "L_build",
            "must be in [1, 2**32 - 1] (a 32-bit field of the file format), got {}",
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
        let cw = code_words(code_dim, p.bits);
        Ok(BQGraphIndex {
            code_dim,
            cw,
            codes: Vec::new(),
            stride: params.r,
            adj: Vec::new(),
            deg: Vec::new(),
            vectors: Vectors::Owned(Vec::new()),
            compact: None,
            ids: Vec::new(),
            rank: Vec::new(),
            start_sample: Vec::new(),
            deleted: Vec::new(),
            n_deleted: 0,
            id_map: HashMap::new(),
            entry: 0,
            rot: None,
            meta: String::new(),
            search_degree: 0,
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
        match &self.compact {
            Some(c) => c.is_mapped(),
            None => self.vectors.is_mapped(),
        }
    }
    /// Bytes held by the codes, the graph and the rerank store.
    pub fn memory_usage(&self) -> (usize, usize, usize) {
        (
            self.codes.len() * 8,
            self.adj.len() * 4 + self.deg.len() * 4,
            match &self.compact {
                Some(c) => c.as_bytes().len(),
                None => self.vectors.as_slice().len() * 4,
            },
        )
    }
    /// The element type of the rerank store.
    pub fn rerank_dtype(&self) -> RerankDtype {
        self.compact
            .as_ref()
            .map_or(RerankDtype::Float32, |c| c.dtype)
    }
    /// Sets the element type of the rerank store (only while the index holds no node).
    pub fn set_rerank_dtype(&mut self, dtype: RerankDtype) -> Result<()> {
        ensure!(
            self.n_nodes() == 0,
            "rerank_dtype",
            "can only be set on an empty index"
        );
        self.compact =
            (dtype != RerankDtype::Float32).then(|| CompactRows::new(dtype, self.params.dim));
        Ok(())
    }
    /// Replaces a float16 or bfloat16 rerank store by a float32 one holding the same values
    /// (both convert to float32 exactly, so every distance and result stays the same); a
    /// float32 store is left as it is. For an index whose store was picked because it holds
    /// the data exactly, once rows it cannot hold exactly arrive. Refuses int8 (its rows are
    /// not the values added).
    pub fn widen_rerank_store(&mut self) -> Result<()> {
        let Some(c) = self.compact.as_ref() else {
            return Ok(());
        };
        ensure!(
            matches!(c.dtype, RerankDtype::Float16 | RerankDtype::Bfloat16),
            "rerank_dtype",
            "only a float16 or bfloat16 store widens to float32 exactly, not {}",
            c.dtype.name()
        );
        let (n, dim) = (self.n_nodes(), self.params.dim);
        crate::memory::ensure_array::<f32>("rerank_dtype", n as u128 * dim as u128)?;
        let mut rows = vec![0f32; n * dim];
        for (i, out) in rows.chunks_exact_mut(dim.max(1)).enumerate() {
            c.decode(i, out);
        }
        self.vectors = Vectors::Owned(rows);
        self.compact = None;
        Ok(())
    }
    /// Row `i` of the rerank store as float32: a view of the float32 store, or decoded into
    /// `buf` (length `dim`) from a compact one.
    #[inline]
    pub(super) fn row<'a>(&'a self, i: usize, buf: &'a mut [f32]) -> &'a [f32] {
        match &self.compact {
            Some(c) => {
                c.decode(i, buf);
                buf
            }
            None => {
                let dim = self.params.dim;
                &self.vectors.as_slice()[i * dim..(i + 1) * dim]
            }
        }
    }
    /// User ids of live vectors, in insertion order.
    pub fn live_ids(&self) -> Vec<i64> {
        self.nodes_by_rank()
            .into_iter()
            .filter(|&i| !self.deleted[i as usize])
            .map(|i| self.ids[i as usize])
            .collect()
    }
    /// The nodes in insertion order (the inverse of `rank`).
    pub(super) fn nodes_by_rank(&self) -> Vec<u32> {
        let mut by_rank = vec![0u32; self.rank.len()];
        for (i, &r) in self.rank.iter().enumerate() {
            by_rank[r as usize] = i as u32;
        }
        by_rank
    }
    /// Whether node numbers differ from insertion ranks (the index was renumbered).
    pub fn renumbered(&self) -> bool {
        self.rank.iter().enumerate().any(|(i, &r)| r as usize != i)
    }
    /// Insertion rank of each node (for tests).
    pub fn ranks(&self) -> &[u32] {
        &self.rank
    }
    /// Recomputes [`Self::start_sample`] (after the nodes or their numbering change).
    pub(super) fn refresh_start_sample(&mut self) {
        let n = self.n_nodes();
        let m = super::search::START_SAMPLE.min(n);
        let by_rank = self.nodes_by_rank();
        self.start_sample = (0..m).map(|t| by_rank[t * n / m]).collect();
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

    /// The query form of `q` (a prepared row): its code for 1 and 2 bits, the int8 form of
    /// [`super::sq`] for 4 and 8 bits.
    pub(super) fn encode_query(&self, q: &[f32]) -> Result<Vec<u64>> {
        let mut buf = Vec::new();
        let t = match &self.rot {
            None => q,
            Some(r) => {
                buf.resize(self.code_dim, 0f32);
                r.apply(q, &mut buf)?;
                &buf[..]
            }
        };
        if self.params.bits <= 2 {
            let mut code = vec![0u64; self.cw];
            encode_one(t, self.params.bits, &mut code);
            Ok(code)
        } else {
            let layout = SqLayout::new(self.code_dim, self.params.bits);
            let mut form = vec![0u64; layout.query_words()];
            let qconst = sq_term(self.params.metric, q, t, self.rot.as_ref(), true);
            sq::encode_query(t, qconst, layout, &mut form);
            Ok(form)
        }
    }

    /// The query form of node `i` in construction: its own code for 1 and 2 bits (the
    /// symmetric code distance), the query form of its stored vector for 4 and 8 bits
    /// (asymmetric).
    pub(super) fn node_query(&self, i: u32) -> Cow<'_, [u64]> {
        let i = i as usize;
        if self.params.bits <= 2 {
            return Cow::Borrowed(&self.codes[i * self.cw..(i + 1) * self.cw]);
        }
        let mut buf = vec![0f32; self.params.dim];
        let row = self.row(i, &mut buf);
        // The rotation fails only on a length mismatch, which the index rules out.
        Cow::Owned(
            self.encode_query(row)
                .unwrap_or_else(|_| vec![0; self.query_words()]),
        )
    }

    /// Words of one query form.
    pub(super) fn query_words(&self) -> usize {
        if self.params.bits <= 2 {
            self.cw
        } else {
            SqLayout::new(self.code_dim, self.params.bits).query_words()
        }
    }

    /// The scalar-code distance of this index (4 and 8 bits).
    pub(super) fn sq_dist(&self) -> SqDist {
        let mean_sq = self.rot.as_ref().map_or(0.0, |r| {
            r.mean().iter().map(|&v| v as f64 * v as f64).sum::<f64>() as f32
        });
        SqDist::new(
            SqLayout::new(self.code_dim, self.params.bits),
            sq_metric(self.params.metric),
            mean_sq,
        )
    }

    pub(super) fn set_list(&mut self, p: u32, list: &[u32]) {
        let r = self.stride;
        let s = p as usize * r;
        self.adj[s..s + list.len()].copy_from_slice(list);
        self.deg[p as usize] = list.len() as u32;
    }

    /// The search-time degree bound of the neighbour lists (0: none, see
    /// [`super::order`]).
    pub fn search_degree(&self) -> u32 {
        self.search_degree
    }

    /// The text saved with the index (empty when unused).
    pub fn meta(&self) -> &str {
        &self.meta
    }
    /// Sets the text saved with the index.
    pub fn set_meta(&mut self, meta: String) {
        self.meta = meta;
    }

    /// The node of each of `ids`, or an `UnknownId` error (argument `arg`) naming the first
    /// few ids that are not live.
    pub(super) fn nodes_of(&self, ids: &[i64], arg: &'static str) -> Result<Vec<u32>> {
        let mut nodes = Vec::with_capacity(ids.len());
        // Distinct unknown ids, in the order first met (a repeated id is named once).
        let mut unknown = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &id in ids {
            match self.id_map.get(&id) {
                Some(&node) => nodes.push(node),
                None => {
                    if seen.insert(id) && unknown.len() < 5 {
                        unknown.push(id.to_string());
                    }
                }
            }
        }
        let n_unknown = seen.len();
        if n_unknown > 0 {
            let more = if n_unknown > unknown.len() {
                format!(" and {} more", n_unknown - unknown.len())
            } else {
                String::new()
            };
            return Err(Error::UnknownId {
                arg,
                reason: format!(
                    "{} not in the index (never added or removed): {}{more}",
                    if n_unknown == 1 { "id is" } else { "ids are" },
                    unknown.join(", ")
                ),
            });
        }
        Ok(nodes)
    }

    /// The stored vectors of `ids` (`len(ids) x dim`, in the order of `ids`, repeats
    /// allowed): decoded from the rerank store, so normalized under cosine and rounded as the
    /// store's dtype rounds. Unknown or removed ids are an `UnknownId` error.
    pub fn get(&self, ids: &[i64]) -> Result<Vec<f32>> {
        let dim = self.params.dim;
        crate::memory::ensure_array::<f32>("ids", ids.len() as u128 * dim as u128)?;
        let nodes = self.nodes_of(ids, "ids")?;
        let mut out = vec![0f32; nodes.len() * dim];
        let mut buf = vec![0f32; dim];
        for (o, &i) in out.chunks_exact_mut(dim).zip(&nodes) {
            o.copy_from_slice(self.row(i as usize, &mut buf));
        }
        Ok(out)
    }

    /// Per node, whether `filter` allows it (removed nodes never are), and how many are.
    pub(super) fn allowed_nodes(&self, filter: Filter<'_>) -> Result<(Vec<bool>, usize)> {
        let n = self.n_nodes();
        let mut allowed = vec![false; n];
        match filter {
            Filter::Ids(ids) => {
                for i in self.nodes_of(ids, "filter")? {
                    allowed[i as usize] = true;
                }
            }
            Filter::Bitmap(bits) => {
                for (a, (&id, &d)) in allowed.iter_mut().zip(self.ids.iter().zip(&self.deleted)) {
                    *a = !d && usize::try_from(id).is_ok_and(|u| bits.get(u) == Some(&true));
                }
            }
        }
        let count = allowed.iter().filter(|&&a| a).count();
        Ok((allowed, count))
    }

    /// Marks `ids` as removed (all must be live and distinct; nothing changes otherwise).
    pub fn remove(&mut self, ids: &[i64]) -> Result<()> {
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        for &id in ids {
            ensure!(seen.insert(id), "ids", "id {id} appears twice");
            if !self.id_map.contains_key(&id) {
                return Err(Error::UnknownId {
                    arg: "ids",
                    reason: format!("id {id} is not in the index"),
                });
            }
        }
        for id in ids {
            if let Some(node) = self.id_map.remove(id) {
                self.deleted[node as usize] = true;
                self.n_deleted += 1;
            }
        }
        Ok(())
    }
}
