//! Bindings for ordcore_core::hadamard. The Python module `ordcore.hadamard` moves the
//! transform axis last, makes the rows C-contiguous in float32 or float64 and calls these.

use numpy::{
    Element, IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2, PyReadwriteArray2,
    PyUntypedArrayMethods,
};
use ordcore_core::hadamard as core;
use pyo3::prelude::*;

use crate::errors::invalid;
use crate::runtime::{run, run_small, run_tiny};

/// Inputs of at most this many elements (a few microseconds of work) run by `run_tiny`:
/// GIL kept, no signal-handler check. On 8 rows of n = 256 that halves what the binding
/// adds to the transform.
const TINY_LEN: usize = 1 << 12;

/// `run`, or `run_small` (on the calling thread) when the core would not split `len`
/// elements across threads or one thread was asked for (then kept serial), or `run_tiny`
/// for at most `TINY_LEN` elements (always serial: below `PARALLEL_THRESHOLD`).
fn run_sized<T: Send>(
    py: Python<'_>,
    num_threads: Option<usize>,
    len: usize,
    f: impl FnOnce() -> ordcore_core::Result<T> + Send,
) -> PyResult<T> {
    if len <= TINY_LEN {
        run_tiny(py, num_threads, f)
    } else if num_threads == Some(1) {
        run_small(py, num_threads, move || core::serial(f))
    } else if len < ordcore_core::PARALLEL_THRESHOLD {
        run_small(py, num_threads, f)
    } else {
        run(py, num_threads, f)
    }
}

fn contiguous<'a, T: Element>(arg: &str, a: &'a PyReadonlyArray2<'_, T>) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| invalid(arg, "must be C-contiguous"))
}

fn contiguous_mut<'a, T: Element>(
    arg: &str,
    a: &'a mut PyReadwriteArray2<'_, T>,
) -> PyResult<&'a mut [T]> {
    a.as_slice_mut()
        .map_err(|_| invalid(arg, "must be C-contiguous"))
}

/// A new zeroed `(rows, cols)` array filled by `f` on the runtime (GIL released).
fn new_filled<'py, T, F>(
    py: Python<'py>,
    rows: usize,
    cols: usize,
    num_threads: Option<usize>,
    f: F,
) -> PyResult<Bound<'py, PyArray2<T>>>
where
    T: Element + Send,
    F: FnOnce(&mut [T]) -> ordcore_core::Result<()> + Send,
{
    let out = PyArray2::<T>::zeros(py, [rows, cols], false);
    {
        let mut rw = out.readwrite();
        let dst = rw
            .as_slice_mut()
            .map_err(|_| invalid("out", "not contiguous"))?;
        run(py, num_threads, move || f(dst))?;
    }
    Ok(out)
}

macro_rules! fwht_bindings {
    ($t:ty, $fwht:ident, $fwht_inplace:ident, $srht:ident) => {
        /// Transform of every row of a C-contiguous (rows, n) array `x` written into the
        /// C-contiguous array `out` of the same shape (which must not overlap `x`).
        #[pyfunction]
        #[pyo3(signature = (x, out, normalized, inverse, num_threads=None))]
        fn $fwht(
            py: Python<'_>,
            x: PyReadonlyArray2<'_, $t>,
            mut out: PyReadwriteArray2<'_, $t>,
            normalized: bool,
            inverse: bool,
            num_threads: Option<usize>,
        ) -> PyResult<()> {
            let n = x.shape()[1];
            if out.shape() != x.shape() {
                return Err(invalid(
                    "out",
                    format!("has shape {:?}, expected {:?}", out.shape(), x.shape()),
                ));
            }
            let src = contiguous("x", &x)?;
            let dst = contiguous_mut("out", &mut out)?;
            run_sized(py, num_threads, src.len(), move || {
                core::fwht_into(src, dst, n, normalized, inverse)
            })
        }

        /// In-place transform of every row of a C-contiguous (rows, n) array.
        #[pyfunction]
        #[pyo3(signature = (x, normalized, inverse, num_threads=None))]
        fn $fwht_inplace(
            py: Python<'_>,
            mut x: PyReadwriteArray2<'_, $t>,
            normalized: bool,
            inverse: bool,
            num_threads: Option<usize>,
        ) -> PyResult<()> {
            let n = x.shape()[1];
            let rows = contiguous_mut("x", &mut x)?;
            run_sized(py, num_threads, rows.len(), move || {
                core::fwht_inplace(rows, n, normalized, inverse)
            })
        }

        /// Subsampled randomized Hadamard transform of every row: (rows, n) -> (rows, m).
        #[pyfunction]
        #[pyo3(signature = (x, m, seed, num_threads=None))]
        fn $srht<'py>(
            py: Python<'py>,
            x: PyReadonlyArray2<'py, $t>,
            m: usize,
            seed: u64,
            num_threads: Option<usize>,
        ) -> PyResult<Bound<'py, PyArray2<$t>>> {
            let (rows, n) = (x.shape()[0], x.shape()[1]);
            let src = contiguous("x", &x)?;
            if m == 0 || m > n {
                return Err(invalid(
                    "m",
                    format!("must be between 1 and the input length n = {n}, got {m}"),
                ));
            }
            new_filled(py, rows, m, num_threads, move |dst| {
                core::srht(src, n, m, seed, dst)
            })
        }
    };
}

fwht_bindings!(
    f32,
    hadamard_fwht_f32,
    hadamard_fwht_inplace_f32,
    hadamard_srht_f32
);
fwht_bindings!(
    f64,
    hadamard_fwht_f64,
    hadamard_fwht_inplace_f64,
    hadamard_srht_f64
);

/// The dense unnormalized H_n (int8) that the transform applies as `x @ H_n`.
#[pyfunction]
fn hadamard_matrix<'py>(py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyArray2<i8>>> {
    let h = run(py, Some(1), move || core::hadamard_matrix(n))?;
    let flat = h.into_pyarray(py);
    flat.reshape([n, n])
}

#[pyfunction]
fn hadamard_is_supported_size(n: usize) -> bool {
    core::is_supported_size(n)
}

#[pyfunction]
fn hadamard_next_supported_size(n: usize) -> usize {
    core::next_supported_size(n)
}

#[pyfunction]
fn hadamard_prev_supported_size(n: usize) -> Option<usize> {
    core::prev_supported_size(n)
}

#[pyfunction]
fn hadamard_decompose(n: usize) -> Option<(usize, usize)> {
    core::decompose(n)
}

#[pyfunction]
fn hadamard_supported_sizes(max_n: usize) -> Vec<usize> {
    core::supported_sizes(max_n)
}

/// The message of the error raised for an unsupported size.
#[pyfunction]
fn hadamard_unsupported_size_message(arg: &str, n: usize) -> String {
    let msg = core::unsupported_size_error("n", n).to_string();
    format!("{arg}{}", msg.strip_prefix('n').unwrap_or(&msg))
}

#[pyfunction]
fn hadamard_srht_indices<'py>(
    py: Python<'py>,
    n: usize,
    m: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray1<usize>>> {
    let idx = run(py, Some(1), move || core::srht_indices(n, m, seed))?;
    Ok(idx.into_pyarray(py))
}

/// The core of `ordcore.hadamard.RandomizedHadamard` (see there).
#[pyclass(frozen, module = "ordcore._core")]
struct RandomizedHadamard {
    inner: core::RandomizedHadamard,
}

use core::RandomizedHadamard as Rh;

type IntoFn<T> = fn(&Rh, &[T], &mut [T]) -> ordcore_core::Result<()>;

fn rotate<'py, T: Element + Send + Sync>(
    inner: &Rh,
    py: Python<'py>,
    x: PyReadonlyArray2<'py, T>,
    num_threads: Option<usize>,
    f: IntoFn<T>,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    let (rows, n) = (x.shape()[0], x.shape()[1]);
    if n != inner.n() {
        return Err(invalid(
            "x",
            format!("rows have length {n}, the rotation {}", inner.n()),
        ));
    }
    let src = contiguous("x", &x)?;
    new_filled(py, rows, n, num_threads, move |dst| f(inner, src, dst))
}

#[pymethods]
impl RandomizedHadamard {
    #[new]
    #[pyo3(signature = (n, seed, blocks, group_size=None))]
    fn new(n: usize, seed: u64, blocks: usize, group_size: Option<usize>) -> PyResult<Self> {
        core::RandomizedHadamard::new(n, seed, blocks, group_size)
            .map(|inner| RandomizedHadamard { inner })
            .map_err(crate::errors::to_pyerr)
    }

    #[getter]
    fn n(&self) -> usize {
        self.inner.n()
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.seed()
    }
    #[getter]
    fn blocks(&self) -> usize {
        self.inner.blocks()
    }
    #[getter]
    fn group_size(&self) -> usize {
        self.inner.group_size()
    }

    /// The signs (+1.0 / -1.0, float64, length n) of block `b`.
    fn signs<'py>(&self, py: Python<'py>, b: usize) -> PyResult<Bound<'py, PyArray1<f64>>> {
        if b >= self.inner.blocks() {
            return Err(invalid(
                "b",
                format!("must be below blocks = {}", self.inner.blocks()),
            ));
        }
        Ok(PyArray1::from_slice(py, self.inner.signs(b)))
    }

    /// Forward (or, when `inverse`, inverse) rotation of the rows of `x` into `out`.
    #[pyo3(signature = (x, out, inverse, num_threads=None))]
    fn rotate_into_f32(
        &self,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f32>,
        out: PyReadwriteArray2<'_, f32>,
        inverse: bool,
        num_threads: Option<usize>,
    ) -> PyResult<()> {
        let f: IntoFn<f32> = if inverse {
            Rh::inverse_into_f32
        } else {
            Rh::forward_into_f32
        };
        rotate_into(&self.inner, py, x, out, num_threads, f)
    }
    /// The same rotation of the rows of `x`, in place.
    #[pyo3(signature = (x, inverse, num_threads=None))]
    fn rotate_inplace_f32(
        &self,
        py: Python<'_>,
        x: PyReadwriteArray2<'_, f32>,
        inverse: bool,
        num_threads: Option<usize>,
    ) -> PyResult<()> {
        let f: InplaceFn<f32> = if inverse {
            Rh::inverse_inplace_f32
        } else {
            Rh::forward_inplace_f32
        };
        rotate_inplace(&self.inner, py, x, num_threads, f)
    }
    /// Forward (or, when `inverse`, inverse) rotation of the rows of `x` into `out`.
    #[pyo3(signature = (x, out, inverse, num_threads=None))]
    fn rotate_into_f64(
        &self,
        py: Python<'_>,
        x: PyReadonlyArray2<'_, f64>,
        out: PyReadwriteArray2<'_, f64>,
        inverse: bool,
        num_threads: Option<usize>,
    ) -> PyResult<()> {
        let f: IntoFn<f64> = if inverse {
            Rh::inverse_into_f64
        } else {
            Rh::forward_into_f64
        };
        rotate_into(&self.inner, py, x, out, num_threads, f)
    }
    /// The same rotation of the rows of `x`, in place.
    #[pyo3(signature = (x, inverse, num_threads=None))]
    fn rotate_inplace_f64(
        &self,
        py: Python<'_>,
        x: PyReadwriteArray2<'_, f64>,
        inverse: bool,
        num_threads: Option<usize>,
    ) -> PyResult<()> {
        let f: InplaceFn<f64> = if inverse {
            Rh::inverse_inplace_f64
        } else {
            Rh::forward_inplace_f64
        };
        rotate_inplace(&self.inner, py, x, num_threads, f)
    }
    #[pyo3(signature = (x, num_threads=None))]
    fn forward_f32<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        rotate(&self.inner, py, x, num_threads, Rh::forward_into_f32)
    }
    #[pyo3(signature = (x, num_threads=None))]
    fn inverse_f32<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f32>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        rotate(&self.inner, py, x, num_threads, Rh::inverse_into_f32)
    }
    #[pyo3(signature = (x, num_threads=None))]
    fn forward_f64<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        rotate(&self.inner, py, x, num_threads, Rh::forward_into_f64)
    }
    #[pyo3(signature = (x, num_threads=None))]
    fn inverse_f64<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        rotate(&self.inner, py, x, num_threads, Rh::inverse_into_f64)
    }
}

type InplaceFn<T> = fn(&Rh, &mut [T]) -> ordcore_core::Result<()>;

fn check_rotation_rows(inner: &Rh, n: usize) -> PyResult<()> {
    if n != inner.n() {
        return Err(invalid(
            "x",
            format!("rows have length {n}, the rotation {}", inner.n()),
        ));
    }
    Ok(())
}

/// The rotation of the C-contiguous rows of `x` written into `out` (same shape, no overlap).
fn rotate_into<T: Element + Send + Sync>(
    inner: &Rh,
    py: Python<'_>,
    x: PyReadonlyArray2<'_, T>,
    mut out: PyReadwriteArray2<'_, T>,
    num_threads: Option<usize>,
    f: IntoFn<T>,
) -> PyResult<()> {
    check_rotation_rows(inner, x.shape()[1])?;
    if out.shape() != x.shape() {
        return Err(invalid(
            "out",
            format!("has shape {:?}, expected {:?}", out.shape(), x.shape()),
        ));
    }
    let src = contiguous("x", &x)?;
    let dst = contiguous_mut("out", &mut out)?;
    run_sized(py, num_threads, src.len(), move || f(inner, src, dst))
}

/// The rotation of the C-contiguous rows of `x`, in place.
fn rotate_inplace<T: Element + Send + Sync>(
    inner: &Rh,
    py: Python<'_>,
    mut x: PyReadwriteArray2<'_, T>,
    num_threads: Option<usize>,
    f: InplaceFn<T>,
) -> PyResult<()> {
    check_rotation_rows(inner, x.shape()[1])?;
    let rows = contiguous_mut("x", &mut x)?;
    run_sized(py, num_threads, rows.len(), move || f(inner, rows))
}

/// The SIMD path of the transforms (`ORDCORE_HADAMARD_KERNEL` caps it).
#[pyfunction]
fn hadamard_kernel() -> &'static str {
    ordcore_core::hadamard::level().name()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(hadamard_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_fwht_f32, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_fwht_f64, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_fwht_inplace_f32, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_fwht_inplace_f64, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_srht_f32, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_srht_f64, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_srht_indices, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_matrix, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_is_supported_size, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_next_supported_size, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_prev_supported_size, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_decompose, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_supported_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(hadamard_unsupported_size_message, m)?)?;
    m.add_class::<RandomizedHadamard>()?;
    Ok(())
}
