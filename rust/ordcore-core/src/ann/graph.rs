//! Vamana graph construction (DiskANN, Subramanya et al. 2019) and beam search, all in code
//! space.
//!
//! * Edges are stored as a flat `N x R` `u32` array plus a degree per node.
//! * Beam search keeps the best `L` candidates as a sorted vector of `(distance, id)`, so
//!   ties are broken by the smaller id, and a per-thread visited bitset. Each expansion
//!   first gathers the unvisited neighbours and prefetches their codes, then scores them in
//!   one loop, so the cache misses overlap. Searches run in lock-step groups
//!   ([`run_beams`]): one expansion of each per round, in two passes (pick the node to
//!   expand and prefetch its list; gather the lists and prefetch the codes), so the list
//!   and the codes one search prefetched load while the others do their work.
//! * RobustPrune follows the DiskANN convention: walking candidates by increasing distance
//!   to `p`, each kept `p*` removes every later candidate `p'` with
//!   `alpha * d(p*, p') <= d(p, p')`; `alpha >= 1`, and a larger `alpha` prunes less, so it
//!   keeps longer edges. Code ties are frequent, so two rules stop them from closing the
//!   graph around duplicates: (1) candidates whose code equals `p`'s own ("twins") never
//!   prune and take at most `twin_cap(R)` slots; (2) a kept `p*` prunes the candidates whose
//!   code equals its own. Candidates at equal distance are ordered by a symmetric hash of the
//!   pair `(p, p')` and then by id, so duplicate groups wire up as random regular graphs
//!   instead of all pointing at their lowest id.

use std::cell::RefCell;

use super::codes::{has_popcnt, has_vpopcnt, CodeDist};

/// At most this many edges of a node go to nodes with exactly its code.
pub fn twin_cap(r: usize) -> usize {
    (r / 8).max(2)
}

/// Visited set: one bit per node (a 100k-node graph needs 12.5 KB, which stays in L1/L2
/// where a per-node stamp array would not), cleared after each search through the list of
/// the nodes it marked.
pub struct Visited {
    bits: Vec<u64>,
    touched: Vec<u32>,
}

impl Visited {
    fn new() -> Self {
        Visited {
            bits: Vec::new(),
            touched: Vec::new(),
        }
    }
    fn reset(&mut self, n: usize) {
        let words = n.div_ceil(64);
        if self.touched.len() * 8 < self.bits.len() {
            for &i in &self.touched {
                self.bits[i as usize >> 6] = 0;
            }
        } else {
            self.bits.iter_mut().for_each(|b| *b = 0);
        }
        self.touched.clear();
        if self.bits.len() < words {
            self.bits.resize(words, 0);
        }
    }
    /// Marks `i`; returns `true` if it was not visited yet.
    #[inline(always)]
    fn insert(&mut self, i: u32) -> bool {
        let w = &mut self.bits[i as usize >> 6];
        let m = 1u64 << (i & 63);
        if *w & m != 0 {
            false
        } else {
            *w |= m;
            self.touched.push(i);
            true
        }
    }
    /// Marks the unvisited nodes of `nbs` and appends them to the touched list, in order;
    /// `prefetch` is called on each. One pass with the bitset and the list's end kept in
    /// registers (the list is reserved up front, so the loop never reallocates).
    #[inline(always)]
    fn insert_all(&mut self, nbs: &[u32], mut prefetch: impl FnMut(u32)) {
        let Visited { bits, touched } = self;
        touched.reserve(nbs.len());
        let mut len = touched.len();
        let out = touched.spare_capacity_mut().as_mut_ptr();
        let base = len;
        for &nb in nbs {
            let w = &mut bits[nb as usize >> 6];
            let m = 1u64 << (nb & 63);
            if *w & m == 0 {
                *w |= m;
                prefetch(nb);
                // SAFETY: at most `nbs.len()` writes into the reserved spare capacity.
                unsafe { out.add(len - base).write(std::mem::MaybeUninit::new(nb)) };
                len += 1;
            }
        }
        // SAFETY: the entries `base..len` were written above.
        unsafe { touched.set_len(len) };
    }
}

thread_local! {
    static VISITED: RefCell<Vec<Visited>> = const { RefCell::new(Vec::new()) };
}

/// Read-only view of the graph and codes.
#[derive(Clone, Copy)]
pub struct GraphRef<'a, D: CodeDist> {
    pub dist: D,
    pub codes: &'a [u64],
    pub adj: &'a [u32],
    pub deg: &'a [u32],
    pub r: usize,
    /// Searches expand at most this many neighbours of a node (the first of its list).
    pub limit: usize,
}

impl<'a, D: CodeDist> GraphRef<'a, D> {
    #[inline(always)]
    pub fn code(&self, i: u32) -> &'a [u64] {
        let w = self.dist.code_words();
        &self.codes[i as usize * w..(i as usize + 1) * w]
    }
    #[inline(always)]
    pub fn neighbors(&self, i: u32) -> &'a [u32] {
        let s = i as usize * self.r;
        &self.adj[s..s + self.deg[i as usize] as usize]
    }
    /// The first [`Self::limit`] neighbours of node `i` (what a search expands).
    #[inline(always)]
    pub fn expanded(&self, i: u32) -> &'a [u32] {
        let s = i as usize * self.r;
        &self.adj[s..s + (self.deg[i as usize] as usize).min(self.limit)]
    }
    /// Distance of query form `a` to node `i`.
    #[inline(always)]
    pub fn d(&self, a: &[u64], i: u32) -> u32 {
        self.dist.dist(a, self.code(i))
    }
    /// Distance of the stored codes of nodes `i` and `j`.
    #[inline(always)]
    pub fn d_nodes(&self, i: u32, j: u32) -> u32 {
        self.dist.sym(self.code(i), self.code(j))
    }
    /// Hints the CPU to load the code of node `i`.
    #[inline(always)]
    pub fn prefetch(&self, i: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            let w = self.dist.code_words();
            let ptr = self.codes.as_ptr().wrapping_add(i as usize * w) as *const i8;
            // At least two lines (a code need not start on one), every line of a long code.
            for off in (0..(w * 8).max(128)).step_by(64) {
                // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
                unsafe {
                    std::arch::x86_64::_mm_prefetch(
                        ptr.wrapping_add(off),
                        std::arch::x86_64::_MM_HINT_T0,
                    )
                };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }
    /// Hints the CPU to load the neighbour list of node `i`.
    #[inline(always)]
    pub fn prefetch_neighbors(&self, i: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            let ptr = self.adj.as_ptr().wrapping_add(i as usize * self.r) as *const i8;
            let dp = self.deg.as_ptr().wrapping_add(i as usize) as *const i8;
            // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
            unsafe { std::arch::x86_64::_mm_prefetch(dp, std::arch::x86_64::_MM_HINT_T0) };
            for off in (0..self.r.min(self.limit) * 4).step_by(64) {
                // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
                unsafe {
                    std::arch::x86_64::_mm_prefetch(
                        ptr.wrapping_add(off),
                        std::arch::x86_64::_MM_HINT_T0,
                    )
                };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }
    pub fn n(&self) -> usize {
        self.deg.len()
    }
}

#[inline(always)]
fn key(d: u32, id: u32) -> u64 {
    ((d as u64) << 32) | id as u64
}

/// How many beam entries around `pos` have the distance of `k` and exactly the code of node
/// `k as u32` (equal-distance entries are contiguous in the sorted beam).
#[inline(always)]
fn same_code_count<D: CodeDist>(g: &GraphRef<'_, D>, pool: &[u64], pos: usize, k: u64) -> usize {
    let d = k >> 32;
    let code = g.code(k as u32);
    let mut count = 0;
    let mut j = pos;
    while j > 0 && pool[j - 1] >> 32 == d {
        j -= 1;
        count += g.dist.same(g.code(pool[j] as u32), code) as usize;
    }
    let mut j = pos;
    while j < pool.len() && pool[j] >> 32 == d {
        count += g.dist.same(g.code(pool[j] as u32), code) as usize;
        j += 1;
    }
    count
}

/// The most beam entries that may share one code: `max(2, l / 8)`. Without the cap a group of
/// exact duplicates fills the whole beam and hides every other candidate from the rerank.
pub fn dup_cap(l: usize) -> usize {
    (l / 8).max(2)
}

/// The state of one beam search, advanced one expansion at a time so that several searches
/// can run in lock-step ([`beam_search_many`]): while one query's neighbour codes load,
/// the others score the codes they prefetched in the previous round.
pub struct Beam<'a> {
    q: &'a [u64],
    l: usize,
    dup_cap: usize,
    /// Keys `(distance << 32) | id`, sorted; never more entries than the graph has nodes.
    /// Kept apart from the flags so that the binary search and the shift of an insertion
    /// touch 8 bytes an entry instead of 16.
    pool: Vec<u64>,
    /// `done[i]`: whether `pool[i]` was expanded.
    done: Vec<bool>,
    /// Where the unvisited neighbours of the node expanded last (their codes prefetched,
    /// not scored) start in the visited set's touched list; they run to its end.
    fresh: usize,
    /// The beam entry expanded last (scoring may insert before it).
    cur: usize,
    expanded: Option<&'a mut Vec<(u32, u32)>>,
    spill: Option<&'a mut Vec<(u32, u32)>>,
    /// Where this search starts instead of the entry [`run_beams`] is given.
    entry: Option<u32>,
}

impl<'a> Beam<'a> {
    /// A search for query form `q` with beam width `l` (see [`beam_search`]).
    pub fn new(
        q: &'a [u64],
        l: usize,
        dup_cap: usize,
        expanded: Option<&'a mut Vec<(u32, u32)>>,
        spill: Option<&'a mut Vec<(u32, u32)>>,
    ) -> Self {
        Beam {
            q,
            l: l.max(1),
            dup_cap,
            pool: Vec::new(),
            done: Vec::new(),
            fresh: 0,
            cur: 0,
            expanded,
            spill,
            entry: None,
        }
    }

    /// Starts this search at node `entry` instead of the entry [`run_beams`] is given.
    pub fn starting_at(mut self, entry: u32) -> Self {
        self.entry = Some(entry);
        self
    }

    /// The beam as `(distance, id)` sorted by `(distance, id)`.
    pub fn into_result(self) -> Vec<(u32, u32)> {
        self.pool
            .into_iter()
            .map(|k| ((k >> 32) as u32, k as u32))
            .collect()
    }

    #[inline(always)]
    fn start<D: CodeDist>(&mut self, g: &GraphRef<'_, D>, entry: u32, vis: &mut Visited) {
        vis.reset(g.n());
        self.pool.clear();
        self.done.clear();
        self.pool.reserve(self.l.min(g.n()) + 1);
        self.done.reserve(self.l.min(g.n()) + 1);
        vis.insert(entry);
        self.pool.push(key(g.d(self.q, entry), entry));
        self.done.push(false);
        self.cur = usize::MAX;
    }

    /// Picks the best unexpanded entry for expansion: marks it and starts loading its
    /// neighbour list (read by [`Self::gather`] after the other beams of the group did
    /// their work). Returns `false` when every entry is expanded.
    #[inline(always)]
    fn pick<D: CodeDist>(&mut self, g: &GraphRef<'_, D>) -> bool {
        let mut cur = self.cur.wrapping_add(1);
        let done = &mut self.done;
        while cur < done.len() && done[cur] {
            cur += 1;
        }
        if cur >= done.len() {
            return false;
        }
        self.cur = cur;
        done[cur] = true;
        let k = self.pool[cur];
        let node = k as u32;
        if let Some(e) = self.expanded.as_deref_mut() {
            e.push(((k >> 32) as u32, node));
        }
        g.prefetch_neighbors(node);
        true
    }

    /// Gathers the unvisited neighbours of the entry [`Self::pick`] marked into `fresh` and
    /// prefetches their codes.
    #[inline(always)]
    fn gather<D: CodeDist>(&mut self, g: &GraphRef<'_, D>, vis: &mut Visited) {
        let node = self.pool[self.cur] as u32;
        self.fresh = vis.touched.len();
        vis.insert_all(g.expanded(node), |nb| g.prefetch(nb));
    }

    /// Scores the gathered neighbours and inserts them into the beam.
    #[inline(always)]
    fn score<D: CodeDist>(&mut self, g: &GraphRef<'_, D>, vis: &Visited) {
        let (l, dup_cap) = (self.l, self.dup_cap);
        let (pool, done) = (&mut self.pool, &mut self.done);
        // The entry to expand next is the first unexpanded one at or after `cur + 1`, or
        // an insertion before it.
        let mut next = self.cur + 1;
        for &nb in &vis.touched[self.fresh..] {
            let k = key(g.d(self.q, nb), nb);
            if pool.len() >= l && k >= pool[pool.len() - 1] {
                continue;
            }
            let pos = pool.partition_point(|&e| e < k);
            if dup_cap < l && same_code_count(g, pool, pos, k) >= dup_cap {
                if let Some(s) = self.spill.as_deref_mut() {
                    s.push(((k >> 32) as u32, nb));
                }
                continue;
            }
            if pool.len() >= l {
                // Full: drop the last entry and shift the tail by one in place.
                pool.pop();
                done.pop();
            }
            pool.insert(pos, k);
            done.insert(pos, false);
            if pos < next {
                next = pos;
            }
        }
        // `pick` starts looking at `cur + 1`.
        self.cur = next.wrapping_sub(1);
    }
}

/// Runs the searches `beams` from `entry` in lock-step, one expansion of each per round
/// (each with its own visited set); the result of each is that of running it alone.
#[inline(always)]
fn run_beams_impl<D: CodeDist>(
    g: &GraphRef<'_, D>,
    beams: &mut [Beam<'_>],
    entry: u32,
    vis: &mut [Visited],
) {
    for (b, v) in beams.iter_mut().zip(vis.iter_mut()) {
        let e = b.entry.unwrap_or(entry);
        b.start(g, e, v);
    }
    let mut pending = vec![false; beams.len()];
    // The entry of a fresh beam is its only entry, already scored. Each round runs in two
    // passes over the group, so that each of a beam's two dependent loads per expansion
    // (the neighbour list of the node picked, then the codes of its neighbours) overlaps
    // with the other beams' work: score the codes gathered last round and pick the next
    // node (prefetching its list), then gather the lists (prefetching the codes).
    loop {
        let mut any = false;
        for ((b, v), p) in beams.iter_mut().zip(vis.iter_mut()).zip(pending.iter_mut()) {
            if *p {
                b.score(g, v);
            }
            *p = b.pick(g);
            any |= *p;
        }
        if !any {
            break;
        }
        for ((b, v), &p) in beams.iter_mut().zip(vis.iter_mut()).zip(pending.iter()) {
            if p {
                b.gather(g, v);
            }
        }
    }
}

/// Defines `$popcnt` and `$vpopcnt`: copies of `$imp` compiled with the CPU features of the
/// popcnt and AVX-512 kernels ([`super::codes::Kernel`]), so the distance kernels inline.
macro_rules! kernel_copies {
    ($popcnt:ident, $vpopcnt:ident, $imp:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "popcnt")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $popcnt<D: CodeDist>($($arg: $ty),*) -> $ret {
            $imp($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "popcnt,avx512f,avx512vpopcntdq")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $vpopcnt<D: CodeDist>($($arg: $ty),*) -> $ret {
            $imp($($arg),*)
        }
    };
}

/// Returns `$imp(args)` run by the copy for the kernel in use.
macro_rules! dispatch {
    ($popcnt:ident, $vpopcnt:ident, $imp:ident, ($($a:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if has_vpopcnt() {
                // SAFETY: the CPU supports these features (checked at run time).
                return unsafe { $vpopcnt($($a),*) };
            }
            if has_popcnt() {
                // SAFETY: the CPU supports popcnt (checked at run time).
                return unsafe { $popcnt($($a),*) };
            }
        }
        $imp($($a),*)
    }};
}

kernel_copies!(
    run_beams_popcnt,
    run_beams_vpopcnt,
    run_beams_impl,
    (
        g: &GraphRef<'_, D>,
        beams: &mut [Beam<'_>],
        entry: u32,
        vis: &mut [Visited]
    ) -> ()
);

/// [`run_beams_impl`] compiled with the features of both the AVX-512 popcount kernel and
/// the AVX-512 VNNI scalar-code kernel ([`super::sq::SqKernel`]), so that the 4- and 8-bit
/// distances inline into the beam loop. The same integer dot products and the same scalar
/// float formula (Rust never fuses a multiply and an add), so the same results.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,avx2,avx512f,avx512bw,avx512vnni,avx512vpopcntdq")]
unsafe fn run_beams_vnni<D: CodeDist>(
    g: &GraphRef<'_, D>,
    beams: &mut [Beam<'_>],
    entry: u32,
    vis: &mut [Visited],
) {
    run_beams_impl(g, beams, entry, vis)
}

/// Beam search from `entry` with beam width `l`. Returns the beam as `(distance, id)` sorted
/// by `(distance, id)`; when `expanded` is given, every expanded node is appended to it. At
/// most `dup_cap` entries with one code are kept (the index passes [`dup_cap`]`(l)`, raised
/// to `k` for searches). With `spill`, every visited node the duplicate cap kept out of the
/// beam is appended to it as `(distance, id)` (searches use them when the beam holds too
/// few). Dispatches to a copy compiled for the [`super::codes::Kernel`] in use.
#[allow(clippy::too_many_arguments)]
pub fn beam_search<D: CodeDist>(
    g: &GraphRef<'_, D>,
    q: &[u64],
    entry: u32,
    l: usize,
    dup_cap: usize,
    expanded: Option<&mut Vec<(u32, u32)>>,
    spill: Option<&mut Vec<(u32, u32)>>,
) -> Vec<(u32, u32)> {
    let mut beams = [Beam::new(q, l, dup_cap, expanded, spill)];
    run_beams(g, &mut beams, entry);
    let [b] = beams;
    b.into_result()
}

/// Runs the searches `beams` (see [`beam_search`]) in lock-step, so that the cache misses
/// of one overlap with the work of the others; each result is exactly that of a search run
/// alone. Read them with [`Beam::into_result`].
pub fn run_beams<D: CodeDist>(g: &GraphRef<'_, D>, beams: &mut [Beam<'_>], entry: u32) {
    if g.n() == 0 {
        return;
    }
    VISITED.with(|cell| {
        let vis: &mut Vec<Visited> = &mut cell.borrow_mut();
        if vis.len() < beams.len() {
            vis.resize_with(beams.len(), Visited::new);
        }
        let vis = &mut vis[..beams.len()];
        #[cfg(target_arch = "x86_64")]
        if has_vpopcnt() && super::sq::kernel() == super::sq::SqKernel::Avx512Vnni {
            // SAFETY: the CPU supports these features (both kernels are checked at run time).
            return unsafe { run_beams_vnni(g, beams, entry, vis) };
        }
        dispatch!(
            run_beams_popcnt,
            run_beams_vpopcnt,
            run_beams_impl,
            (g, beams, entry, vis)
        )
    })
}

/// The query form of a node (its stored row encoded as a query), with which RobustPrune
/// scores the pairs of the scalar codes against the codes of the other candidates.
pub type QueryOf<'a> = dyn Fn(u32) -> std::borrow::Cow<'a, [u64]> + Sync + 'a;

#[inline(always)]
fn pair_hash(a: u32, b: u32) -> u64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    crate::rng::mix64(((hi as u64) << 32 | lo as u64) ^ 0xA076_1D64_78BD_642F)
}

#[inline(always)]
fn robust_prune_impl<D: CodeDist>(
    g: &GraphRef<'_, D>,
    p: u32,
    cands: &mut Vec<(u32, u32)>,
    alpha: f64,
    r: usize,
    skip: &dyn Fn(u32) -> bool,
    query: Option<&QueryOf<'_>>,
) -> Vec<u32> {
    cands.sort_unstable_by_key(|&(_, id)| id);
    cands.dedup_by_key(|c| c.1);
    cands.retain(|&(_, id)| id != p && !skip(id));
    // Sorted by `(distance, pair hash, id)`, a total order (ids are unique now), with each
    // hash computed once rather than in every comparison. DiskANN's `maxc`: candidates
    // past the nearest `max(2R, 128)` are almost never kept, so only those are sorted.
    let mut keyed: Vec<(u32, u64, u32)> = cands
        .iter()
        .map(|&(d, id)| (d, pair_hash(p, id), id))
        .collect();
    let maxc = (2 * r).max(128);
    if keyed.len() > maxc {
        keyed.select_nth_unstable(maxc - 1);
        keyed.truncate(maxc);
    }
    keyed.sort_unstable();
    cands.clear();
    cands.extend(keyed.iter().map(|&(d, _, id)| (d, id)));
    let pc = g.code(p);
    let twin: Vec<bool> = cands
        .iter()
        .map(|&(_, id)| g.dist.same(g.code(id), pc))
        .collect();
    let mut pruned = vec![false; cands.len()];
    let mut out = Vec::with_capacity(r);
    let mut twins = 0usize;
    let cap = twin_cap(r);
    for i in 0..cands.len() {
        if out.len() >= r {
            break;
        }
        if pruned[i] {
            continue;
        }
        let c = cands[i].1;
        if twin[i] {
            if twins < cap {
                out.push(c);
                twins += 1;
            }
            continue;
        }
        out.push(c);
        let cc = g.code(c);
        let qc = query.map(|f| f(c));
        for j in i + 1..cands.len() {
            if pruned[j] || twin[j] {
                continue;
            }
            let (dj, idj) = cands[j];
            let other = g.code(idj);
            let dc = match &qc {
                Some(qc) => g.d(qc, idj),
                None => g.dist.sym(cc, other),
            };
            if alpha * g.dist.value(dc) <= g.dist.value(dj) || g.dist.same(other, cc) {
                pruned[j] = true;
            }
        }
    }
    out
}

kernel_copies!(
    robust_prune_popcnt,
    robust_prune_vpopcnt,
    robust_prune_impl,
    (
        g: &GraphRef<'_, D>,
        p: u32,
        cands: &mut Vec<(u32, u32)>,
        alpha: f64,
        r: usize,
        skip: &dyn Fn(u32) -> bool,
        query: Option<&QueryOf<'_>>
    ) -> Vec<u32>
);

/// RobustPrune of `p` over `cands` (`(d(p, c), c)`, duplicates allowed); `skip` excludes
/// nodes (deleted ones). See the module docs for the rules.
pub fn robust_prune<D: CodeDist>(
    g: &GraphRef<'_, D>,
    p: u32,
    cands: &mut Vec<(u32, u32)>,
    alpha: f64,
    r: usize,
    skip: &dyn Fn(u32) -> bool,
    query: Option<&QueryOf<'_>>,
) -> Vec<u32> {
    dispatch!(
        robust_prune_popcnt,
        robust_prune_vpopcnt,
        robust_prune_impl,
        (g, p, cands, alpha, r, skip, query)
    )
}
