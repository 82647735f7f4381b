//! `ordcore._core`: the thin PyO3 layer over ordcore-core. One file per area; every
//! function validates dtypes and shapes with the GIL held, then runs the core routine
//! through [`runtime::run`] (GIL released, panics caught, fork-safe rayon pool).

use pyo3::prelude::*;

mod ann;
mod errors;
mod hadamard;
mod packing;
mod runtime;
mod sfc;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    runtime::install_fork_guard();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(runtime::_in_forked_child, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::usable_bytes, m)?)?;
    sfc::register(m)?;
    hadamard::register(m)?;
    packing::register(m)?;
    ann::register(m)?;
    Ok(())
}
