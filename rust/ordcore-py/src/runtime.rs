//! Running core routines from Python: release the GIL, catch panics, pick a rayon pool
//! that is safe after `fork()`.
//!
//! rayon's global pool is a set of threads; `fork()` copies only the calling thread, so a
//! child that touches a pool its parent had started would wait forever on threads that do
//! not exist (the classic torch DataLoader deadlock). A `pthread_atfork` child handler
//! records the fork; in such a child every parallel call runs in a fresh pool built for
//! that call instead of the global one.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use pyo3::prelude::*;

use crate::errors::{invalid, panic_to_pyerr, to_pyerr};

static GLOBAL_POOL_USED: AtomicBool = AtomicBool::new(false);
static FORKED_AFTER_POOL: AtomicBool = AtomicBool::new(false);
static GUARD: Once = Once::new();

extern "C" fn after_fork_in_child() {
    // Async-signal-safe: only atomics.
    if GLOBAL_POOL_USED.load(Ordering::SeqCst) {
        FORKED_AFTER_POOL.store(true, Ordering::SeqCst);
    }
}

/// Registers the fork handler once per process.
pub fn install_fork_guard() {
    GUARD.call_once(|| unsafe {
        libc::pthread_atfork(None, None, Some(after_fork_in_child));
    });
}

/// Whether this process is a fork of one whose global pool was running (for tests).
#[pyfunction]
pub fn _in_forked_child() -> bool {
    FORKED_AFTER_POOL.load(Ordering::SeqCst)
}

/// Runs `f` with the GIL released, on a rayon pool of `num_threads` threads (`None`: the
/// global pool, sized by `RAYON_NUM_THREADS` or the core count), mapping core errors and
/// panics to Python exceptions.
pub fn run<T, F>(py: Python<'_>, num_threads: Option<usize>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> ordcore_core::Result<T> + Send,
{
    if num_threads == Some(0) {
        return Err(invalid(
            "num_threads",
            "must be at least 1 (or None for all cores)",
        ));
    }
    let outcome = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            if num_threads.is_none() && !FORKED_AFTER_POOL.load(Ordering::SeqCst) {
                GLOBAL_POOL_USED.store(true, Ordering::SeqCst);
                return Ok(f());
            }
            let threads = num_threads.unwrap_or_else(rayon::current_num_threads);
            match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
                Ok(pool) => Ok(pool.install(f)),
                Err(e) => Err(e.to_string()),
            }
        }))
    });
    match outcome {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(core_err))) => Err(to_pyerr(core_err)),
        Ok(Err(pool_err)) => Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "could not start a thread pool: {pool_err}"
        ))),
        Err(payload) => Err(panic_to_pyerr(payload)),
    }
}
