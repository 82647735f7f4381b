//! Running core routines from Python: release the GIL, catch panics, pick a rayon pool
//! that is safe after `fork()`.
//!
//! rayon's global pool is a set of threads; `fork()` copies only the calling thread, so a
//! child that touches a pool its parent had started would wait forever on threads that do
//! not exist (the classic torch DataLoader deadlock). A `pthread_atfork` child handler
//! records the fork; in such a child every parallel call runs in a pool of its own instead
//! of the global one. Pools for an explicit `num_threads` are kept per calling thread and
//! process id, so a child never reuses its parent's.
//!
//! Ctrl-C: CPython's `SIGINT` handler only sets a flag that the main thread reads when it
//! next runs Python code, so a long Rust loop with the GIL released would run to its end.
//! Before every call, [`chain_sigint`] puts a handler in front of CPython's (once per
//! installation of CPython's handler) that also calls `ordcore_core::interrupt::request`;
//! core loops poll that flag and return `Error::Interrupted` within a chunk of work, and the
//! call then raises whatever CPython's handler raises (`KeyboardInterrupt` by default). The
//! flag is cleared when the last ordcore call in flight returns, so a Ctrl-C that landed in
//! Python code never interrupts a later call. A `SIGINT` disposition of `SIG_DFL` or
//! `SIG_IGN` is left alone.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Once;

use pyo3::prelude::*;

use crate::errors::{invalid, panic_to_pyerr, to_pyerr};

static GLOBAL_POOL_USED: AtomicBool = AtomicBool::new(false);
static FORKED_AFTER_POOL: AtomicBool = AtomicBool::new(false);
static GUARD: Once = Once::new();
/// Incremented in every forked child: objects compare it with the generation their
/// in-flight counts were made in (see `ann::Busy`).
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

/// How many `fork()`s separate this process from the one that loaded ordcore.
pub fn fork_generation() -> u64 {
    FORK_GENERATION.load(Ordering::SeqCst)
}

extern "C" fn after_fork_in_child() {
    // Async-signal-safe: only atomics.
    FORK_GENERATION.fetch_add(1, Ordering::SeqCst);
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

/// The handler that was installed before ours (CPython's), as a raw `sa_sigaction` value,
/// and whether it takes `SA_SIGINFO` arguments.
static PREVIOUS_SIGINT: AtomicUsize = AtomicUsize::new(0);
static PREVIOUS_SIGINFO: AtomicBool = AtomicBool::new(false);
/// ordcore calls running now (any thread).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_sigint(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // Async-signal-safe: atomics, then the previous handler (CPython's is signal-safe too).
    if IN_FLIGHT.load(Ordering::SeqCst) > 0 {
        ordcore_core::interrupt::request();
    }
    let prev = PREVIOUS_SIGINT.load(Ordering::SeqCst);
    if prev != 0 {
        // SAFETY: prev is a handler function pointer read from sigaction (not SIG_DFL/SIG_IGN).
        unsafe {
            if PREVIOUS_SIGINFO.load(Ordering::SeqCst) {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(prev);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev);
                f(sig);
            }
        }
    }
}

/// Puts [`on_sigint`] in front of the current `SIGINT` handler unless it is already there or
/// the disposition is `SIG_DFL` / `SIG_IGN`. Cheap (one `sigaction` read) when installed.
fn chain_sigint() {
    // SAFETY: plain sigaction calls with valid pointers.
    unsafe {
        let mut cur: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGINT, std::ptr::null(), &mut cur) != 0 {
            return;
        }
        let ours = on_sigint as *const () as usize;
        if cur.sa_sigaction == ours
            || cur.sa_sigaction == libc::SIG_DFL
            || cur.sa_sigaction == libc::SIG_IGN
        {
            return;
        }
        PREVIOUS_SIGINFO.store(cur.sa_flags & libc::SA_SIGINFO != 0, Ordering::SeqCst);
        PREVIOUS_SIGINT.store(cur.sa_sigaction, Ordering::SeqCst);
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = ours;
        act.sa_mask = cur.sa_mask;
        act.sa_flags = (cur.sa_flags | libc::SA_SIGINFO) & !libc::SA_RESETHAND;
        libc::sigaction(libc::SIGINT, &act, std::ptr::null_mut());
    }
}

/// Counts a call in flight for its lifetime; the last one out clears the interrupt flag.
struct InFlight;

impl InFlight {
    fn enter() -> Self {
        if IN_FLIGHT.fetch_add(1, Ordering::SeqCst) == 0 {
            ordcore_core::interrupt::clear();
        }
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1 {
            ordcore_core::interrupt::clear();
        }
    }
}

/// The exception for an interrupted call: what CPython's signal handler raises
/// (`KeyboardInterrupt` unless the user installed another handler), else `KeyboardInterrupt`.
fn interrupted(py: Python<'_>) -> PyErr {
    match py.check_signals() {
        Err(e) => e,
        Ok(()) => pyo3::exceptions::PyKeyboardInterrupt::new_err("interrupted"),
    }
}

/// Bytes this process can still expect to allocate (`ordcore_core::memory::usable_bytes`),
/// for Python-side size checks that must follow the same rule as the core's.
#[pyfunction]
pub fn usable_bytes() -> u64 {
    ordcore_core::memory::usable_bytes()
}

/// Whether this process is a fork of one whose global pool was running (for tests).
#[pyfunction]
pub fn _in_forked_child() -> bool {
    FORKED_AFTER_POOL.load(Ordering::SeqCst)
}

thread_local! {
    /// Pools built for an explicit `num_threads` on this calling thread, with the process id
    /// that built them. Building a pool spawns its threads (about half a millisecond), so
    /// they are kept; per calling thread, so Python threads that each ask for one thread
    /// still run side by side.
    static POOLS: std::cell::RefCell<Vec<(u32, usize, std::sync::Arc<rayon::ThreadPool>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A pool of `threads` threads for this calling thread, reused across calls. Pools built
/// before a `fork()` are never reused in the child (their threads do not exist there): they
/// are forgotten, not dropped.
fn pool_for(threads: usize) -> Result<std::sync::Arc<rayon::ThreadPool>, String> {
    let pid = std::process::id();
    POOLS.with(|cell| {
        let mut pools = cell.borrow_mut();
        if pools.iter().any(|(p, _, _)| *p != pid) {
            for stale in std::mem::take(&mut *pools) {
                std::mem::forget(stale);
            }
        }
        if let Some((_, _, pool)) = pools.iter().find(|(_, t, _)| *t == threads) {
            return Ok(pool.clone());
        }
        let pool = std::sync::Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| e.to_string())?,
        );
        if pools.len() >= 4 {
            pools.remove(0);
        }
        pools.push((pid, threads, pool.clone()));
        Ok(pool)
    })
}

/// Runs `f` with the GIL released, on a rayon pool of `num_threads` threads (`None`: the
/// global pool, sized by `RAYON_NUM_THREADS` or the core count), mapping core errors and
/// panics to Python exceptions. Ctrl-C during `f` raises `KeyboardInterrupt` once `f`'s
/// loops reach their next `ordcore_core::interrupt::check`.
pub fn run<T, F>(py: Python<'_>, num_threads: Option<usize>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> ordcore_core::Result<T> + Send,
{
    run_maybe_inline(py, num_threads, false, f)
}

/// [`run`] for a call whose work is too small to go parallel: `f` runs on the calling
/// thread (GIL released) instead of being handed to a pool, which costs a thread wake-up
/// (tens of microseconds on a loaded machine). `num_threads` is still validated.
pub fn run_small<T, F>(py: Python<'_>, num_threads: Option<usize>, f: F) -> PyResult<T>
where
    T: Send,
    F: FnOnce() -> ordcore_core::Result<T> + Send,
{
    run_maybe_inline(py, num_threads, true, f)
}

/// [`run_small`] for a call so small (a few microseconds of work) that neither Ctrl-C nor
/// other Python threads can notice it: `f` runs on the calling thread with the GIL held and
/// without [`chain_sigint`]'s `sigaction` system call, which together cost about as much as
/// the work (a Ctrl-C landing meanwhile is raised by CPython right after the call returns).
/// Core errors and panics map as in [`run`]; `num_threads` is still validated.
pub fn run_tiny<T, F>(py: Python<'_>, num_threads: Option<usize>, f: F) -> PyResult<T>
where
    F: FnOnce() -> ordcore_core::Result<T>,
{
    if num_threads == Some(0) {
        return Err(invalid(
            "num_threads",
            "must be at least 1 (or None for all cores)",
        ));
    }
    let guard = InFlight::enter();
    let outcome = catch_unwind(AssertUnwindSafe(f));
    drop(guard);
    finish(py, outcome.map(Ok::<_, String>))
}

fn run_maybe_inline<T, F>(
    py: Python<'_>,
    num_threads: Option<usize>,
    inline: bool,
    f: F,
) -> PyResult<T>
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
    chain_sigint();
    let guard = InFlight::enter();
    let outcome = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            if inline {
                return Ok(f());
            }
            if num_threads.is_none() && !FORKED_AFTER_POOL.load(Ordering::SeqCst) {
                GLOBAL_POOL_USED.store(true, Ordering::SeqCst);
                return Ok(f());
            }
            let threads = num_threads.unwrap_or_else(rayon::current_num_threads);
            pool_for(threads).map(|pool| pool.install(f))
        }))
    });
    drop(guard);
    finish(py, outcome)
}

/// The value of `f`, or the Python exception for its core error, pool error or panic.
fn finish<T>(
    py: Python<'_>,
    outcome: std::thread::Result<Result<ordcore_core::Result<T>, String>>,
) -> PyResult<T> {
    match outcome {
        Ok(Ok(Ok(value))) => Ok(value),
        Ok(Ok(Err(ordcore_core::Error::Interrupted))) => Err(interrupted(py)),
        Ok(Ok(Err(core_err))) => Err(to_pyerr(core_err)),
        Ok(Err(pool_err)) => Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "could not start a thread pool: {pool_err}"
        ))),
        Err(payload) => Err(panic_to_pyerr(payload)),
    }
}
