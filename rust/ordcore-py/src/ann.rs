//! Bindings for ordcore_core::ann: the `BQGraphIndex` class and the `ann_*` functions.
//!
//! The index sits behind an `RwLock`: `search` and the read-only accessors take the read lock,
//! `add` / `remove` / `compact` the write lock, always with the GIL released (so a progress
//! callback that re-acquires the GIL inside `add` cannot deadlock against a reader).
//!
//! Fork safety: a lock held by another thread when the process forks stays held forever in
//! the child (the holder does not exist there). Every call counts itself in flight on the
//! index ([`Busy`]) before it takes the lock; a child whose copied count is not zero refuses
//! to touch the index with a clear error instead of hanging.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use ordcore_core::ann::{self, Metric, Params};
use pyo3::prelude::*;

use crate::errors::invalid;
use crate::runtime::{fork_generation, run};

fn slice2<'a, T: numpy::Element>(a: &'a PyReadonlyArray2<'_, T>, arg: &str) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| invalid(arg, "must be a C-contiguous array"))
}

fn metric(s: &str) -> PyResult<Metric> {
    Metric::parse(s).map_err(crate::errors::to_pyerr)
}

/// Binary-quantized Vamana graph index (see `ordcore.ann.BQGraphIndex`).
#[pyclass(module = "ordcore._core", frozen, name = "BQGraphIndex")]
pub struct PyBQGraphIndex {
    inner: RwLock<ann::BQGraphIndex>,
    busy: Busy,
}

/// Calls in flight on one index, and the fork generation they were counted in.
struct Busy {
    count: AtomicUsize,
    generation: AtomicU64,
}

impl Busy {
    fn new() -> Self {
        Busy {
            count: AtomicUsize::new(0),
            generation: AtomicU64::new(fork_generation()),
        }
    }

    /// Counts a call in flight until the guard drops; refuses in a forked child when calls
    /// of the parent were in flight at the fork (their threads, and the lock they may hold
    /// or wait for, do not exist in the child).
    fn enter(&self) -> PyResult<BusyGuard<'_>> {
        let now = fork_generation();
        if self.generation.load(Ordering::SeqCst) != now {
            if self.count.load(Ordering::SeqCst) != 0 {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "BQGraphIndex: this process was forked while another thread was using \
                     this index (add, search, save, ...); the index lock belongs to a thread \
                     that does not exist in this child, so the index cannot be used here. \
                     Load or rebuild it in the child, or fork while no index call runs",
                ));
            }
            self.generation.store(now, Ordering::SeqCst);
        }
        self.count.fetch_add(1, Ordering::SeqCst);
        Ok(BusyGuard(self))
    }
}

struct BusyGuard<'a>(&'a Busy);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::SeqCst);
    }
}

fn wrap(idx: ann::BQGraphIndex) -> PyBQGraphIndex {
    PyBQGraphIndex {
        inner: RwLock::new(idx),
        busy: Busy::new(),
    }
}

fn rd(l: &RwLock<ann::BQGraphIndex>) -> RwLockReadGuard<'_, ann::BQGraphIndex> {
    l.read()
        .expect("index lock poisoned by an earlier internal error")
}
fn wr(l: &RwLock<ann::BQGraphIndex>) -> RwLockWriteGuard<'_, ann::BQGraphIndex> {
    l.write()
        .expect("index lock poisoned by an earlier internal error")
}

impl PyBQGraphIndex {
    fn read<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&ann::BQGraphIndex) -> T + Send,
    ) -> PyResult<T> {
        let _busy = self.busy.enter()?;
        run(py, Some(1), || Ok(f(&rd(&self.inner))))
    }
}

#[pymethods]
impl PyBQGraphIndex {
    #[new]
    #[pyo3(signature = (dim, metric, bits, r, l_build, alpha, rotation, seed, rerank_dtype))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        dim: usize,
        metric: &str,
        bits: usize,
        r: usize,
        l_build: usize,
        alpha: f64,
        rotation: bool,
        seed: u64,
        rerank_dtype: &str,
    ) -> PyResult<Self> {
        let params = Params {
            dim,
            metric: self::metric(metric)?,
            bits,
            r,
            l_build,
            alpha,
            rotation,
            seed,
        };
        let mut idx = ann::BQGraphIndex::new(params).map_err(crate::errors::to_pyerr)?;
        ann::store::RerankDtype::parse(rerank_dtype)
            .and_then(|d| idx.set_rerank_dtype(d))
            .map_err(crate::errors::to_pyerr)?;
        Ok(wrap(idx))
    }

    #[pyo3(signature = (x, ids, num_threads, progress))]
    fn add(
        &self,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f32>,
        ids: Option<PyReadonlyArray1<'_, i64>>,
        num_threads: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let xs = slice2(&x, "X")?;
        let ids_s = match &ids {
            Some(a) => Some(
                a.as_slice()
                    .map_err(|_| invalid("ids", "must be contiguous"))?,
            ),
            None => None,
        };
        // An exception in the callback (KeyboardInterrupt raised while it runs Python code,
        // or any other) stops the build; `add` then leaves the index unchanged and raises it.
        let failed: Mutex<Option<PyErr>> = Mutex::new(None);
        let cb = progress.map(|p| {
            let failed = &failed;
            move |done: usize, total: usize| -> ordcore_core::Result<()> {
                Python::attach(|py| match p.call1(py, (done, total)) {
                    Ok(_) => Ok(()),
                    Err(e) => {
                        if let Ok(mut slot) = failed.lock() {
                            slot.get_or_insert(e);
                        }
                        Err(ordcore_core::Error::Interrupted)
                    }
                })
            }
        });
        let inner = &self.inner;
        let _busy = self.busy.enter()?;
        let result = run(py, num_threads, || {
            let cbr: Option<ann::Progress<'_>> = cb.as_ref().map(|c| c as ann::Progress<'_>);
            wr(inner).add(xs, ids_s, cbr)
        });
        match failed.into_inner().ok().flatten() {
            Some(e) => Err(e),
            None => result,
        }
    }

    /// `filter_ids`: an allow-list of ids; `filter_bitmap`: allowed ids by id value (at most
    /// one of them). `degree`: neighbours expanded per node (`None`: automatic).
    #[pyo3(signature = (q, k, ef_search, rerank, rerank_k, num_threads, filter_ids=None, filter_bitmap=None, degree=None))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn search<'py>(
        &self,
        py: Python<'py>,
        q: PyReadonlyArray2<'_, f32>,
        k: usize,
        ef_search: usize,
        rerank: bool,
        rerank_k: Option<usize>,
        num_threads: Option<usize>,
        filter_ids: Option<PyReadonlyArray1<'_, i64>>,
        filter_bitmap: Option<PyReadonlyArray1<'_, bool>>,
        degree: Option<usize>,
    ) -> PyResult<(Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<f32>>)> {
        let qs = slice2(&q, "Q")?;
        let nq = q.shape()[0];
        let contiguous = |_| invalid("filter", "must be a contiguous array");
        let filter = match (&filter_ids, &filter_bitmap) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "filter",
                    "give an allow-list or a bitmap, not both",
                ))
            }
            (Some(a), None) => Some(ann::Filter::Ids(a.as_slice().map_err(contiguous)?)),
            (None, Some(b)) => Some(ann::Filter::Bitmap(b.as_slice().map_err(contiguous)?)),
            (None, None) => None,
        };
        let inner = &self.inner;
        let _busy = self.busy.enter()?;
        let (ids, ds) = run(py, num_threads, move || {
            rd(inner).search_filtered(qs, k, ef_search, rerank, rerank_k, filter, degree)
        })?;
        let ids = ids.into_pyarray(py).reshape([nq, k])?;
        let ds = ds.into_pyarray(py).reshape([nq, k])?;
        Ok((ids, ds))
    }

    /// The stored vectors of `ids`, `(len(ids), dim)` float32.
    fn get<'py>(
        &self,
        py: Python<'py>,
        ids: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let s = ids
            .as_slice()
            .map_err(|_| invalid("ids", "must be contiguous"))?;
        let inner = &self.inner;
        let _busy = self.busy.enter()?;
        let (rows, dim) = run(py, Some(1), move || {
            let idx = rd(inner);
            Ok((idx.get(s)?, idx.params().dim))
        })?;
        rows.into_pyarray(py).reshape([s.len(), dim])
    }

    /// The metadata text saved with the index (`""` when unused).
    fn meta(&self, py: Python<'_>) -> PyResult<String> {
        self.read(py, |i| i.meta().to_string())
    }

    fn set_meta(&self, py: Python<'_>, meta: String) -> PyResult<()> {
        let inner = &self.inner;
        let _busy = self.busy.enter()?;
        run(py, Some(1), move || {
            wr(inner).set_meta(meta);
            Ok(())
        })
    }

    fn remove(&self, py: Python<'_>, ids: PyReadonlyArray1<'_, i64>) -> PyResult<()> {
        let s = ids
            .as_slice()
            .map_err(|_| invalid("ids", "must be contiguous"))?;
        let inner = &self.inner;
        let _busy = self.busy.enter()?;
        run(py, Some(1), move || wr(inner).remove(s))
    }

    /// Replaces a float16 / bfloat16 rerank store by a float32 one with the same values.
    fn widen_rerank_store(&self, py: Python<'_>) -> PyResult<()> {
        let inner = &self.inner;
        let _busy = self.busy.enter()?;
        run(py, Some(1), move || wr(inner).widen_rerank_store())
    }

    #[pyo3(signature = (num_threads=None))]
    fn compact(&self, py: Python<'_>, num_threads: Option<usize>) -> PyResult<()> {
        let inner = &self.inner;
        let _busy = self.busy.enter()?;
        run(py, num_threads, move || wr(inner).compact())
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.read(py, |i| i.len())
    }

    /// `(codes, graph, float_vectors)` in bytes.
    fn memory_usage(&self, py: Python<'_>) -> PyResult<(usize, usize, usize)> {
        self.read(py, |i| i.memory_usage())
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let inner = &self.inner;
        let _busy = self.busy.enter()?;
        run(py, Some(1), move || ann::format::save(&rd(inner), &path))
    }

    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf, mmap: bool) -> PyResult<Self> {
        let idx = run(py, Some(1), move || ann::format::load(&path, mmap))?;
        Ok(wrap(idx))
    }

    /// The element type of the rerank store (`float32`, `float16`, `bfloat16`, `int8`).
    fn rerank_dtype(&self, py: Python<'_>) -> PyResult<&'static str> {
        self.read(py, |i| i.rerank_dtype().name())
    }

    /// `(dim, metric, bits, R, L_build, alpha, rotation, seed)`.
    #[allow(clippy::type_complexity)]
    fn params(
        &self,
        py: Python<'_>,
    ) -> PyResult<(usize, String, usize, usize, usize, f64, bool, u64)> {
        self.read(py, |i| {
            let p = i.params();
            (
                p.dim,
                p.metric.name().to_string(),
                p.bits,
                p.r,
                p.l_build,
                p.alpha,
                p.rotation,
                p.seed,
            )
        })
    }

    /// The search-time degree bound of the lists (0: none).
    fn search_degree(&self, py: Python<'_>) -> PyResult<u32> {
        self.read(py, |i| i.search_degree())
    }

    fn code_dim(&self, py: Python<'_>) -> PyResult<usize> {
        self.read(py, |i| i.code_dim())
    }

    fn n_nodes(&self, py: Python<'_>) -> PyResult<usize> {
        self.read(py, |i| i.n_nodes())
    }

    fn vectors_mapped(&self, py: Python<'_>) -> PyResult<bool> {
        self.read(py, |i| i.vectors_mapped())
    }

    fn ids<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<i64>>> {
        Ok(self.read(py, |i| i.live_ids())?.into_pyarray(py))
    }

    fn __contains__(&self, py: Python<'_>, id: i64) -> PyResult<bool> {
        self.read(py, |i| i.contains(id))
    }

    /// Flat adjacency `(N * R,)` padded with `-1` and degrees, for tests and inspection.
    #[allow(clippy::type_complexity)]
    fn graph<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray2<i64>>, Bound<'py, PyArray1<u32>>)> {
        let (flat, deg, n, r) = self.read(py, |i| {
            let n = i.n_nodes();
            let r = i.params().r;
            let mut flat = vec![-1i64; n * r];
            let mut deg = vec![0u32; n];
            for v in 0..n {
                let nb = i.neighbors(v);
                deg[v] = nb.len() as u32;
                for (j, &x) in nb.iter().enumerate() {
                    flat[v * r + j] = x as i64;
                }
            }
            (flat, deg, n, r)
        })?;
        Ok((flat.into_pyarray(py).reshape([n, r])?, deg.into_pyarray(py)))
    }
}

#[pyfunction]
fn ann_encode<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'_, f32>,
    bits: usize,
    metric: &str,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let m = self::metric(metric)?;
    let (n, dim) = (x.shape()[0], x.shape()[1]);
    let xs = slice2(&x, "X")?;
    let codes = run(py, None, move || ann::encode(xs, dim, bits, m))?;
    let cw = bits * ann::codes::words_for(dim);
    codes.into_pyarray(py).reshape([n, cw])
}

#[pyfunction]
fn ann_code_distance<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'_, u64>,
    b: PyReadonlyArray2<'_, u64>,
    dim: usize,
    bits: usize,
) -> PyResult<Bound<'py, PyArray1<u32>>> {
    if bits != 1 && bits != 2 {
        return Err(invalid("bits", format!("must be 1 or 2, got {bits}")));
    }
    if dim < 1 {
        return Err(invalid("dim", "must be at least 1"));
    }
    let cw = bits * ann::codes::words_for(dim);
    if a.shape() != b.shape() {
        return Err(invalid(
            "codes_b",
            format!("shape {:?} differs from codes_a {:?}", b.shape(), a.shape()),
        ));
    }
    if a.shape()[1] != cw {
        return Err(invalid(
            "codes_a",
            format!(
                "has {} words per code, dim={dim} bits={bits} needs {cw}",
                a.shape()[1]
            ),
        ));
    }
    let (sa, sb) = (slice2(&a, "codes_a")?, slice2(&b, "codes_b")?);
    let out = run(py, None, move || {
        ann::codes::code_distances(sa, sb, dim, bits)
    })?;
    Ok(out.into_pyarray(py))
}

#[pyfunction]
#[pyo3(signature = (x, q, k, metric, num_threads))]
#[allow(clippy::type_complexity)]
fn ann_exact_search<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'_, f32>,
    q: PyReadonlyArray2<'_, f32>,
    k: usize,
    metric: &str,
    num_threads: Option<usize>,
) -> PyResult<(Bound<'py, PyArray2<i64>>, Bound<'py, PyArray2<f32>>)> {
    let m = self::metric(metric)?;
    let dim = x.shape()[1];
    if q.shape()[1] != dim {
        return Err(invalid(
            "Q",
            format!("has dimension {}, X has dimension {dim}", q.shape()[1]),
        ));
    }
    let nq = q.shape()[0];
    let (xs, qs) = (slice2(&x, "X")?, slice2(&q, "Q")?);
    let (ids, ds) = run(py, num_threads, move || {
        ann::exact_search(xs, qs, dim, k, m)
    })?;
    Ok((
        ids.into_pyarray(py).reshape([nq, k])?,
        ds.into_pyarray(py).reshape([nq, k])?,
    ))
}

/// `(codes, queries)`: per `(bits, rotation seed or None)` entry of `codes` and sampled query
/// row, the expected code-space recall@k against the whole of `x` (see
/// `ordcore_core::ann::fitness_recall`).
#[pyfunction]
#[pyo3(signature = (x, metric, k, depth, codes, queries, num_threads))]
#[allow(clippy::too_many_arguments)]
fn ann_fitness_recall<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'_, f32>,
    metric: &str,
    k: usize,
    depth: Option<usize>,
    codes: Vec<(usize, Option<u64>)>,
    queries: PyReadonlyArray1<'_, u64>,
    num_threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let m = self::metric(metric)?;
    let dim = x.shape()[1];
    let xs = slice2(&x, "X")?;
    let qs: Vec<usize> = queries
        .as_slice()
        .map_err(|_| invalid("queries", "must be contiguous"))?
        .iter()
        .map(|&q| usize::try_from(q).unwrap_or(usize::MAX))
        .collect();
    let nq = qs.len();
    let ns = codes.len();
    let out = run(py, num_threads, move || {
        ann::fitness_recall(xs, dim, m, k, depth, &codes, &qs)
    })?;
    let flat: Vec<f64> = out.into_iter().flatten().collect();
    flat.into_pyarray(py).reshape([ns, nq])
}

/// The code-distance kernel in use (runtime feature detection, capped by
/// `ORDCORE_ANN_KERNEL`).
#[pyfunction]
fn ann_kernel() -> &'static str {
    ann::codes::kernel().name()
}

/// The scalar-code (bits 4 and 8) kernel in use (runtime feature detection, capped by
/// `ORDCORE_ANN_SQ_KERNEL`, and by `ORDCORE_ANN_KERNEL=portable`).
#[pyfunction]
fn ann_sq_kernel() -> &'static str {
    ann::sq::kernel().name()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBQGraphIndex>()?;
    m.add_function(wrap_pyfunction!(ann_encode, m)?)?;
    m.add_function(wrap_pyfunction!(ann_code_distance, m)?)?;
    m.add_function(wrap_pyfunction!(ann_exact_search, m)?)?;
    m.add_function(wrap_pyfunction!(ann_fitness_recall, m)?)?;
    m.add_function(wrap_pyfunction!(ann_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(ann_sq_kernel, m)?)?;
    Ok(())
}
