//! Bindings for ordcore_core::sfc. The Python façade (`python/ordcore/sfc.py`) hands over
//! C-contiguous, native-endian integer arrays; these functions dispatch on the dtype, borrow
//! the data and run the core routine with the GIL released.

use numpy::ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use ordcore_core::sfc::{hilbert, morton, scan, serialize};

use crate::errors::invalid;
use crate::runtime;

/// Calls `$body` with `$s` bound to the array's data as a slice of its element type, for
/// every integer dtype; errors for any other dtype.
macro_rules! with_int_slice {
    ($obj:expr, $arr:ident, $arg:expr, |$s:ident, $rows:ident, $cols:ident| $body:expr) => {{
        with_int_slice!(@try $obj, $arr, $arg, |$s, $rows, $cols| $body;
            u8, u16, u32, u64, i8, i16, i32, i64)
    }};
    (@try $obj:expr, $arr:ident, $arg:expr, |$s:ident, $rows:ident, $cols:ident| $body:expr; $($t:ty),*) => {{
        $(
            if let Ok(a) = $obj.extract::<$arr<'_, $t>>() {
                let shape = a.shape().to_vec();
                let $rows = shape[0];
                let $cols = shape.get(1).copied().unwrap_or(1);
                let $s: &[$t] = a
                    .as_slice()
                    .map_err(|_| invalid($arg, "must be C-contiguous (ordcore.sfc makes it so)"))?;
                return $body;
            }
        )*
        Err(invalid($arg, "must be an integer array"))
    }};
}

fn to_2d<'py>(
    py: Python<'py>,
    v: Vec<u64>,
    n: usize,
    d: usize,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let a = Array2::from_shape_vec((n, d), v).map_err(|e| invalid("ndim", e))?;
    Ok(a.into_pyarray(py))
}

#[pyfunction]
#[pyo3(signature = (coords, nbits, num_threads=None))]
fn sfc_hilbert_encode<'py>(
    py: Python<'py>,
    coords: &Bound<'py, PyAny>,
    nbits: i64,
    num_threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    with_int_slice!(coords, PyReadonlyArray2, "coords", |s, _n, d| {
        let v = runtime::run(py, num_threads, move || hilbert::encode(s, d, nbits))?;
        Ok(v.into_pyarray(py))
    })
}

#[pyfunction]
#[pyo3(signature = (index, nbits, ndim, num_threads=None))]
fn sfc_hilbert_decode<'py>(
    py: Python<'py>,
    index: &Bound<'py, PyAny>,
    nbits: i64,
    ndim: usize,
    num_threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    with_int_slice!(index, PyReadonlyArray1, "index", |s, n, _c| {
        let v = runtime::run(py, num_threads, move || hilbert::decode(s, nbits, ndim))?;
        to_2d(py, v, n, ndim)
    })
}

fn axis_order(msb: bool) -> morton::AxisOrder {
    if msb {
        morton::AxisOrder::Msb
    } else {
        morton::AxisOrder::Lsb
    }
}

#[pyfunction]
#[pyo3(signature = (coords, nbits, msb, num_threads=None))]
fn sfc_morton_encode<'py>(
    py: Python<'py>,
    coords: &Bound<'py, PyAny>,
    nbits: i64,
    msb: bool,
    num_threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let order = axis_order(msb);
    with_int_slice!(coords, PyReadonlyArray2, "coords", |s, _n, d| {
        let v = runtime::run(py, num_threads, move || morton::encode(s, d, nbits, order))?;
        Ok(v.into_pyarray(py))
    })
}

#[pyfunction]
#[pyo3(signature = (code, nbits, ndim, msb, num_threads=None))]
fn sfc_morton_decode<'py>(
    py: Python<'py>,
    code: &Bound<'py, PyAny>,
    nbits: i64,
    ndim: usize,
    msb: bool,
    num_threads: Option<usize>,
) -> PyResult<Bound<'py, PyArray2<u64>>> {
    let order = axis_order(msb);
    with_int_slice!(code, PyReadonlyArray1, "code", |s, n, _c| {
        let v = runtime::run(py, num_threads, move || {
            morton::decode(s, nbits, ndim, order)
        })?;
        to_2d(py, v, n, ndim)
    })
}

#[pyfunction]
fn sfc_scan_order<'py>(
    py: Python<'py>,
    height: i64,
    width: i64,
    kind: &str,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let kind = scan::ScanKind::parse(kind).map_err(crate::errors::to_pyerr)?;
    let v = runtime::run(py, None, move || scan::scan_order(height, width, kind))?;
    Ok(v.into_pyarray(py))
}

#[pyfunction]
fn sfc_inverse_permutation<'py>(
    py: Python<'py>,
    p: PyReadonlyArray1<'py, i64>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let s = p
        .as_slice()
        .map_err(|_| invalid("p", "must be C-contiguous"))?;
    let v = runtime::run(py, None, move || scan::inverse_permutation(s))?;
    Ok(v.into_pyarray(py))
}

type Serialized<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    u32,
);

#[pyfunction]
#[pyo3(signature = (points, batch, grid_size, depth, order, origin, num_threads=None))]
#[allow(clippy::too_many_arguments)]
fn sfc_serialize<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f32>,
    batch: Option<PyReadonlyArray1<'py, u64>>,
    grid_size: f64,
    depth: Option<i64>,
    order: &str,
    origin: &str,
    num_threads: Option<usize>,
) -> PyResult<Serialized<'py>> {
    let order = serialize::SerOrder::parse(order).map_err(crate::errors::to_pyerr)?;
    let origin = serialize::Origin::parse(origin).map_err(crate::errors::to_pyerr)?;
    if points.shape()[1] != 3 {
        return Err(invalid(
            "points",
            format!("must have shape (N, 3), got {:?}", points.shape()),
        ));
    }
    let pts = points
        .as_slice()
        .map_err(|_| invalid("points", "must be C-contiguous"))?;
    let b = match &batch {
        Some(b) => Some(
            b.as_slice()
                .map_err(|_| invalid("batch", "must be C-contiguous"))?,
        ),
        None => None,
    };
    let s = runtime::run(py, num_threads, move || {
        serialize::serialize(pts, b, grid_size, depth, order, origin)
    })?;
    Ok((
        s.code.into_pyarray(py),
        s.order.into_pyarray(py),
        s.inverse.into_pyarray(py),
        s.depth,
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sfc_hilbert_encode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_hilbert_decode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_morton_encode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_morton_decode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_scan_order, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_inverse_permutation, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_serialize, m)?)?;
    Ok(())
}
