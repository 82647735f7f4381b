//! Bindings for ordcore_core::packing. The public contract lives in python/ordcore/packing.py.

use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadwriteArray1};
use ordcore_core::packing::{
    self as core, Algorithm, Layout, MaterializeOptions, Overlong, Plan, PlanOptions, Stats,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::invalid;
use crate::runtime::run;

/// A packing plan held in Rust (wrapped by `ordcore.packing.Plan`).
#[pyclass(name = "PackingPlan", module = "ordcore._core", frozen)]
pub struct PyPlan {
    inner: Plan,
}

fn slice<'a, T: numpy::Element>(a: &'a PyReadonlyArray1<'_, T>, name: &str) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| invalid(name, "must be a C-contiguous 1-D array"))
}

fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("num_packs", s.num_packs)?;
    d.set_item("num_sequences", s.num_sequences)?;
    d.set_item("num_segments", s.num_segments)?;
    d.set_item("real_tokens", s.real_tokens)?;
    d.set_item("padding_tokens", s.padding_tokens)?;
    d.set_item("efficiency", s.efficiency)?;
    d.set_item("sequences_per_pack", s.sequences_per_pack)?;
    d.set_item("deepest_pack", s.deepest_pack)?;
    d.set_item("lower_bound_sum", s.lower_bound_sum)?;
    d.set_item("lower_bound_l2", s.lower_bound_l2)?;
    d.set_item("packs_over_lower_bound_sum", s.packs_over_lower_bound_sum)?;
    d.set_item("packs_over_lower_bound_l2", s.packs_over_lower_bound_l2)?;
    d.set_item("dropped_tokens", s.dropped_tokens)?;
    d.set_item("dropped_sequences", s.dropped_sequences)?;
    d.set_item("truncated_sequences", s.truncated_sequences)?;
    d.set_item("split_sequences", s.split_sequences)?;
    d.set_item("num_fragments", s.num_fragments)?;
    d.set_item("empty_sequences", s.empty_sequences)?;
    Ok(d)
}

#[pymethods]
impl PyPlan {
    /// Rebuilds a plan from its arrays, validating them and recomputing the statistics.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    fn from_arrays(
        py: Python<'_>,
        max_len: i64,
        pad_to_multiple_of: i64,
        pack_offsets: PyReadonlyArray1<'_, i64>,
        seq_index: PyReadonlyArray1<'_, i64>,
        start: PyReadonlyArray1<'_, i64>,
        stop: PyReadonlyArray1<'_, i64>,
        fragment: PyReadonlyArray1<'_, bool>,
        lengths: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<Self> {
        let mut plan = Plan {
            max_len,
            pad_to_multiple_of,
            pack_offsets: slice(&pack_offsets, "pack_offsets")?.to_vec(),
            seq_index: slice(&seq_index, "seq_index")?.to_vec(),
            start: slice(&start, "start")?.to_vec(),
            stop: slice(&stop, "stop")?.to_vec(),
            fragment: slice(&fragment, "fragment")?.to_vec(),
            lengths: slice(&lengths, "lengths")?.to_vec(),
            stats: Stats::default(),
        };
        plan.stats = run(py, Some(1), || core::compute_stats(&plan))?;
        Ok(PyPlan { inner: plan })
    }

    #[getter]
    fn max_len(&self) -> i64 {
        self.inner.max_len
    }

    #[getter]
    fn pad_to_multiple_of(&self) -> i64 {
        self.inner.pad_to_multiple_of
    }

    #[getter]
    fn num_packs(&self) -> usize {
        self.inner.pack_offsets.len() - 1
    }

    #[getter]
    fn pack_offsets<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_slice(py, &self.inner.pack_offsets)
    }

    #[getter]
    fn seq_index<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_slice(py, &self.inner.seq_index)
    }

    #[getter]
    fn start<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let p = &self.inner;
        if p.is_whole() {
            return vec![0i64; p.seq_index.len()].into_pyarray(py);
        }
        PyArray1::from_slice(py, &p.start)
    }

    #[getter]
    fn stop<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let p = &self.inner;
        if p.is_whole() {
            let v: Vec<i64> = (0..p.seq_index.len()).map(|k| p.slot(k).1).collect();
            return v.into_pyarray(py);
        }
        PyArray1::from_slice(py, &p.stop)
    }

    #[getter]
    fn fragment<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        let p = &self.inner;
        if p.is_whole() {
            return vec![false; p.seq_index.len()].into_pyarray(py);
        }
        PyArray1::from_slice(py, &p.fragment)
    }

    #[getter]
    fn lengths<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        PyArray1::from_slice(py, &self.inner.lengths)
    }

    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.inner.stats)
    }
}

fn plan_options(
    max_len: i64,
    max_seqs_per_pack: Option<i64>,
    overlong: &str,
    allow_empty: bool,
    pad_to_multiple_of: i64,
    seed: u64,
) -> PyResult<PlanOptions> {
    let max_seqs_per_pack = match max_seqs_per_pack {
        None => None,
        Some(k) if k >= 1 => Some(k as usize),
        Some(k) => {
            return Err(invalid(
                "max_seqs_per_pack",
                format!("must be at least 1, got {k}"),
            ))
        }
    };
    Ok(PlanOptions {
        max_len,
        max_seqs_per_pack,
        overlong: Overlong::parse(overlong).map_err(crate::errors::to_pyerr)?,
        allow_empty,
        pad_to_multiple_of,
        seed,
    })
}

/// Plans packs for `lengths` (int64) with `algorithm` in lpfhp/spfhp/bfd/ffd/nf.
#[pyfunction]
#[pyo3(signature = (lengths, max_len, algorithm, max_seqs_per_pack, overlong, allow_empty, pad_to_multiple_of, seed))]
#[allow(clippy::too_many_arguments)]
fn packing_plan(
    py: Python<'_>,
    lengths: PyReadonlyArray1<'_, i64>,
    max_len: i64,
    algorithm: &str,
    max_seqs_per_pack: Option<i64>,
    overlong: &str,
    allow_empty: bool,
    pad_to_multiple_of: i64,
    seed: u64,
) -> PyResult<PyPlan> {
    let alg = Algorithm::parse(algorithm).map_err(crate::errors::to_pyerr)?;
    let opts = plan_options(
        max_len,
        max_seqs_per_pack,
        overlong,
        allow_empty,
        pad_to_multiple_of,
        seed,
    )?;
    let lengths = slice(&lengths, "lengths")?;
    let inner = run(py, None, || core::plan(lengths, alg, &opts))?;
    Ok(PyPlan { inner })
}

/// Histogram of planned segment lengths after the overlong policy (`hist[i]`: length `i+1`).
#[pyfunction]
#[pyo3(signature = (lengths, max_len, overlong, allow_empty, pad_to_multiple_of))]
fn packing_planned_histogram<'py>(
    py: Python<'py>,
    lengths: PyReadonlyArray1<'_, i64>,
    max_len: i64,
    overlong: &str,
    allow_empty: bool,
    pad_to_multiple_of: i64,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let opts = plan_options(max_len, None, overlong, allow_empty, pad_to_multiple_of, 0)?;
    let lengths = slice(&lengths, "lengths")?;
    let hist = run(py, Some(1), || core::planned_histogram(lengths, &opts))?;
    Ok(hist.into_pyarray(py))
}

/// Realizes a histogram recipe (`counts[j]` packs of `recipe_lengths[recipe_offsets[j]..]`).
#[pyfunction]
#[pyo3(signature = (lengths, counts, recipe_offsets, recipe_lengths, max_len, max_seqs_per_pack, overlong, allow_empty, pad_to_multiple_of, seed))]
#[allow(clippy::too_many_arguments)]
fn packing_plan_from_recipe(
    py: Python<'_>,
    lengths: PyReadonlyArray1<'_, i64>,
    counts: PyReadonlyArray1<'_, u64>,
    recipe_offsets: PyReadonlyArray1<'_, i64>,
    recipe_lengths: PyReadonlyArray1<'_, i64>,
    max_len: i64,
    max_seqs_per_pack: Option<i64>,
    overlong: &str,
    allow_empty: bool,
    pad_to_multiple_of: i64,
    seed: u64,
) -> PyResult<PyPlan> {
    let opts = plan_options(
        max_len,
        max_seqs_per_pack,
        overlong,
        allow_empty,
        pad_to_multiple_of,
        seed,
    )?;
    let lengths = slice(&lengths, "lengths")?;
    let counts = slice(&counts, "counts")?;
    let ro = slice(&recipe_offsets, "recipe_offsets")?;
    let rl = slice(&recipe_lengths, "recipe_lengths")?;
    let inner = run(py, None, || {
        core::plan_from_recipe(lengths, counts, ro, rl, &opts)
    })?;
    Ok(PyPlan { inner })
}

/// Number of NNLSHP strategies: partitions of `max_len` into at most `depth` parts.
#[pyfunction]
fn packing_count_strategies(max_len: usize, depth: usize) -> u64 {
    core::count_strategies(max_len, depth)
}

/// Materializes packs `rows` of `plan` from ragged int64 tokens (`values`, `offsets`).
#[pyfunction]
#[pyo3(signature = (plan, values, offsets, rows, layout, pad_id, position_ids_start, fragment_positions, pad_to_multiple_of, label_ignore_index, token_min, token_max))]
#[allow(clippy::too_many_arguments)]
fn packing_materialize<'py>(
    py: Python<'py>,
    plan: Bound<'py, PyPlan>,
    values: PyReadonlyArray1<'_, i64>,
    offsets: PyReadonlyArray1<'_, i64>,
    rows: PyReadonlyArray1<'_, i64>,
    layout: &str,
    pad_id: i64,
    position_ids_start: i64,
    fragment_positions: &str,
    pad_to_multiple_of: i64,
    label_ignore_index: i64,
    token_min: i64,
    token_max: i64,
) -> PyResult<Bound<'py, PyDict>> {
    let layout = match layout {
        "rows" => Layout::Rows,
        "flat" => Layout::Flat,
        other => {
            return Err(invalid(
                "layout",
                format!("unknown layout {other:?}; expected 'rows' or 'flat'"),
            ))
        }
    };
    let continue_fragment_positions = match fragment_positions {
        "restart" => false,
        "continue" => true,
        other => {
            return Err(invalid(
                "fragment_positions",
                format!("unknown value {other:?}; expected 'restart' or 'continue'"),
            ))
        }
    };
    let opts = MaterializeOptions {
        layout,
        pad_id,
        position_ids_start,
        continue_fragment_positions,
        pad_to_multiple_of,
        label_ignore_index,
        token_min,
        token_max,
    };
    let p: &PyPlan = plan.get();
    let values = slice(&values, "tokens")?;
    let offsets = slice(&offsets, "tokens")?;
    let rows = slice(&rows, "rows")?;
    let b = run(py, Some(1), || {
        core::materialize(&p.inner, values, offsets, rows, &opts)
    })?;
    let shape = (b.rows, b.width);
    let two_d =
        |v: Vec<i64>| Array2::from_shape_vec(shape, v).map_err(|e| invalid("rows", e.to_string()));
    let d = PyDict::new(py);
    d.set_item("input_ids", two_d(b.input_ids)?.into_pyarray(py))?;
    d.set_item("position_ids", two_d(b.position_ids)?.into_pyarray(py))?;
    d.set_item(
        "segment_ids",
        Array2::from_shape_vec(shape, b.segment_ids)
            .map_err(|e| invalid("rows", e.to_string()))?
            .into_pyarray(py),
    )?;
    d.set_item("labels", two_d(b.labels)?.into_pyarray(py))?;
    d.set_item("cu_seqlens", b.cu_seqlens.into_pyarray(py))?;
    d.set_item("cu_seqlens_padded", b.cu_seqlens_padded.into_pyarray(py))?;
    d.set_item("max_seqlen", b.max_seqlen)?;
    d.set_item("seq_index", b.seq_index.into_pyarray(py))?;
    d.set_item("num_real_tokens", b.num_real_tokens)?;
    Ok(d)
}

/// Writes the byte ranges `values[starts[i] .. starts[i] + lens[i]]`, concatenated, into
/// `out` (the packed layout of an Arrow column's values; the caller views fixed-width values
/// as bytes and allocates `out` with NumPy).
#[pyfunction]
fn packing_gather_ranges(
    py: Python<'_>,
    values: PyReadonlyArray1<'_, u8>,
    starts: PyReadonlyArray1<'_, i64>,
    lens: PyReadonlyArray1<'_, i64>,
    mut out: PyReadwriteArray1<'_, u8>,
) -> PyResult<()> {
    let values = slice(&values, "values")?;
    let starts = slice(&starts, "starts")?;
    let lens = slice(&lens, "lens")?;
    let out = out
        .as_slice_mut()
        .map_err(|_| invalid("out", "must be a C-contiguous 1-D array"))?;
    run(py, None, || {
        ordcore_core::gather::gather_ranges_into(values, starts, lens, out)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPlan>()?;
    m.add_function(wrap_pyfunction!(packing_gather_ranges, m)?)?;
    m.add_function(wrap_pyfunction!(packing_plan, m)?)?;
    m.add_function(wrap_pyfunction!(packing_planned_histogram, m)?)?;
    m.add_function(wrap_pyfunction!(packing_plan_from_recipe, m)?)?;
    m.add_function(wrap_pyfunction!(packing_count_strategies, m)?)?;
    m.add_function(wrap_pyfunction!(packing_materialize, m)?)?;
    Ok(())
}
