//! Bindings for ordcore_core::sfc. The Python façade (`python/ordcore/sfc.py`) hands over
//! C-contiguous, native-endian integer arrays; these functions dispatch on the dtype, borrow
//! the data and run the core routine with the GIL released.

use numpy::ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use ordcore_core::sfc::fast::{self, Coords, Curve};
use ordcore_core::sfc::{hilbert, morton, scan, serialize, Coord};

use crate::errors::{invalid, to_pyerr};
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
    arg: &str,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    // The argument the errors name: `locality`'s `order`, else `inverse_permutation`'s `p`.
    let arg = if arg == "order" { "order" } else { "p" };
    let s = p
        .as_slice()
        .map_err(|_| invalid(arg, "must be C-contiguous"))?;
    let v = runtime::run(py, None, move || scan::inverse_permutation(s, arg))?;
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

/// The name of the sfc compute kernel in use (`ORDCORE_SFC_KERNEL` caps it).
#[pyfunction]
fn sfc_kernel() -> &'static str {
    fast::kernel().name()
}

fn curve_of(curve: &str, msb: bool) -> PyResult<Curve> {
    match curve {
        "hilbert" => Ok(Curve::Hilbert),
        "morton" => Ok(Curve::Morton { msb }),
        other => Err(invalid(
            "curve",
            format!("must be \"hilbert\" or \"morton\", got {other:?}"),
        )),
    }
}

/// Runs `$body` with the type alias `$o` set to the unsigned type of `$bits` bits.
macro_rules! with_out_bits {
    ($bits:expr, |$o:ident| $body:expr) => {{
        macro_rules! go {
            ($t:ty) => {{
                type $o = $t;
                $body
            }};
        }
        match $bits {
            8 => go!(u8),
            16 => go!(u16),
            32 => go!(u32),
            64 => go!(u64),
            other => Err(invalid(
                "dtype",
                format!("must be uint8, uint16, uint32 or uint64, got {other} bits"),
            )),
        }
    }};
}

/// A new uninitialized C-contiguous array of `shape`, filled by `fill` on the runtime (GIL
/// released); returned only when `fill` succeeds.
fn new_filled<'py, O, D, F>(
    py: Python<'py>,
    shape: D,
    threads: Option<usize>,
    fill: F,
) -> PyResult<Bound<'py, PyAny>>
where
    O: numpy::Element + Send,
    D: numpy::ndarray::Dimension,
    F: FnOnce(&mut [O]) -> ordcore_core::Result<()> + Send,
{
    // SAFETY: the array is written in full by `fill` before Python sees it; on error it is
    // dropped unseen.
    let out = unsafe { numpy::PyArray::<O, D>::new(py, shape, false) };
    {
        let mut rw = out.readwrite();
        let dst = rw
            .as_slice_mut()
            .map_err(|_| invalid("out", "not contiguous"))?;
        runtime::run(py, threads, move || fill(dst))?;
    }
    Ok(out.into_any())
}

/// `num_threads = 1` runs the kernel serially on the calling thread (GIL released) instead
/// of handing it to a one-thread pool: the hand-off costs 5-30 us a call, as much as
/// encoding 100,000 points.
fn serial_if_one(threads: Option<usize>) -> (Option<usize>, bool) {
    if threads == Some(1) {
        (None, true)
    } else {
        (threads, false)
    }
}

fn encode_typed<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    c: Coords<'_, T>,
    d: usize,
    nbits: i64,
    curve: Curve,
    out_bits: u32,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    with_out_bits!(out_bits, |O| {
        let (n, _) = fast::plan_encode::<T, O>(c, d, nbits).map_err(to_pyerr)?;
        let k = fast::kernel();
        let (threads, serial) = serial_if_one(threads);
        new_filled::<O, _, _>(py, numpy::ndarray::Ix1(n), threads, move |o| {
            fast::encode_into(k, c, d, nbits, curve, o, serial)
        })
    })
}

/// 2-D / 3-D codes of an `(N, D)` integer array or a list of `D` 1-D arrays (one dtype,
/// C-contiguous), as unsigned integers of `out_bits` bits.
#[pyfunction]
#[pyo3(signature = (coords, nbits, curve, msb, out_bits, num_threads=None))]
fn sfc_encode<'py>(
    py: Python<'py>,
    coords: &Bound<'py, PyAny>,
    nbits: i64,
    curve: &str,
    msb: bool,
    out_bits: u32,
    num_threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let curve = curve_of(curve, msb)?;
    let is_list = coords.is_instance_of::<pyo3::types::PyList>();
    macro_rules! try_types {
        ($($t:ty),*) => {{
            $(
                if is_list {
                    if let Ok(cols) = coords.extract::<Vec<PyReadonlyArray1<'_, $t>>>() {
                        let slices = cols
                            .iter()
                            .map(|c| c.as_slice())
                            .collect::<Result<Vec<&[$t]>, _>>()
                            .map_err(|_| invalid("coords", "must be C-contiguous"))?;
                        let d = slices.len();
                        return encode_typed(
                            py, Coords::Columns(&slices), d, nbits, curve, out_bits, num_threads,
                        );
                    }
                } else if let Ok(a) = coords.extract::<PyReadonlyArray2<'_, $t>>() {
                    let d = a.shape()[1];
                    let s: &[$t] = a
                        .as_slice()
                        .map_err(|_| invalid("coords", "must be C-contiguous"))?;
                    return encode_typed(py, Coords::Rows(s), d, nbits, curve, out_bits, num_threads);
                }
            )*
            Err(invalid(
                "coords",
                "must be an (N, D) integer array or a list of D 1-D integer arrays of one dtype",
            ))
        }};
    }
    try_types!(u8, u16, u32, u64, i8, i16, i32, i64)
}

#[allow(clippy::too_many_arguments)]
fn decode_typed<'py, T: Coord + numpy::Element>(
    py: Python<'py>,
    s: &[T],
    d: usize,
    nbits: i64,
    curve: Curve,
    out_bits: u32,
    threads: Option<usize>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let n = s.len();
    let arg = if curve == Curve::Hilbert {
        "index"
    } else {
        "code"
    };
    with_out_bits!(out_bits, |O| {
        if let Some(out) = out {
            decode_cols_into::<T, O>(py, s, d, nbits, curve, arg, threads, out)?;
            return Ok(out.clone());
        }
        fast::plan_decode::<O>(n, d, nbits, arg).map_err(to_pyerr)?;
        let k = fast::kernel();
        let (threads, serial) = serial_if_one(threads);
        new_filled::<O, _, _>(py, numpy::ndarray::Ix2(n, d), threads, move |o| {
            fast::decode_into(k, s, d, nbits, curve, fast::Dest::Rows(o), arg, serial)
        })
    })
}

/// [`decode_typed`] into the `D` separate arrays `out[i, :n]` of a C-contiguous `(D, m)`
/// array `out` (`m >= n`) of `O`: the façade pads `m` so that each starts on a cache line
/// (into NumPy's layout, 16 bytes past one, the 64-byte stores of the AVX-512 kernels span
/// two lines: 2-D nbits 3 / 8 and 3-D nbits 3 took 0.14 / 0.19 / 0.25 ns a point against
/// 0.10 / 0.15 / 0.18 aligned, 10**6 codes, 1 thread).
#[allow(clippy::too_many_arguments)]
fn decode_cols_into<T: Coord + numpy::Element, O: numpy::Element + fast::Word + Send>(
    py: Python<'_>,
    s: &[T],
    d: usize,
    nbits: i64,
    curve: Curve,
    arg: &'static str,
    threads: Option<usize>,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let n = s.len();
    let arr = out
        .cast::<PyArray2<O>>()
        .map_err(|_| invalid("out", "must be a 2-D array of the output dtype"))?;
    let m: usize = PyUntypedArrayMethods::shape(arr)[1];
    if PyUntypedArrayMethods::shape(arr)[0] != d || m < n {
        return Err(invalid(
            "out",
            format!(
                "has shape {:?}, needs ({d}, >= {n})",
                PyUntypedArrayMethods::shape(arr)
            ),
        ));
    }
    let mut rw = arr.try_readwrite().map_err(|e| invalid("out", e))?;
    let o = rw
        .as_slice_mut()
        .map_err(|_| invalid("out", "must be C-contiguous"))?;
    let (threads, serial) = serial_if_one(threads);
    let k = fast::kernel();
    runtime::run(py, threads, move || {
        let cols = if n == 0 {
            Vec::new()
        } else {
            o.chunks_mut(m).map(|c| &mut c[..n]).collect()
        };
        fast::decode_into(
            k,
            s,
            d,
            nbits,
            curve,
            fast::Dest::Columns(cols),
            arg,
            serial,
        )
    })
}

/// Coordinates of 2-D / 3-D codes as unsigned integers of `out_bits` bits: a new `(N, D)`
/// array, or with `out` the `D` separate arrays in its rows (see [`decode_cols_into`]).
#[pyfunction]
#[pyo3(signature = (codes, nbits, ndim, curve, msb, out_bits, num_threads=None, out=None))]
#[allow(clippy::too_many_arguments)]
fn sfc_decode<'py>(
    py: Python<'py>,
    codes: &Bound<'py, PyAny>,
    nbits: i64,
    ndim: usize,
    curve: &str,
    msb: bool,
    out_bits: u32,
    num_threads: Option<usize>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let curve = curve_of(curve, msb)?;
    let arg = if curve == Curve::Hilbert {
        "index"
    } else {
        "code"
    };
    with_int_slice!(codes, PyReadonlyArray1, arg, |s, _n, _c| {
        decode_typed(py, s, ndim, nbits, curve, out_bits, num_threads, out)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sfc_encode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_decode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_hilbert_encode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_hilbert_decode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_morton_encode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_morton_decode, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_scan_order, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_inverse_permutation, m)?)?;
    m.add_function(wrap_pyfunction!(sfc_serialize, m)?)?;
    Ok(())
}
