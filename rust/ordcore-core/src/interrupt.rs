//! Cooperative interruption of long routines (Ctrl-C from Python).
//!
//! A long loop calls [`check`] at chunk granularity (one relaxed atomic load); once an
//! interrupt has been [`request`]ed, the routine returns [`Error::Interrupted`] before it
//! publishes any result, so state it was about to change stays as it was. The flag is
//! process-wide: the binding crate sets it from a chained `SIGINT` handler while ordcore
//! calls are in flight and clears it when the last of them returns, so a Ctrl-C stops every
//! running ordcore call, on any thread. Pure-Rust users who never call [`request`] pay one
//! load per chunk.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::{Error, Result};

static PENDING: AtomicBool = AtomicBool::new(false);

/// Asks every running routine to stop at its next [`check`]. Async-signal-safe.
pub fn request() {
    PENDING.store(true, Ordering::Relaxed);
}

/// Forgets an earlier [`request`].
pub fn clear() {
    PENDING.store(false, Ordering::Relaxed);
}

/// Whether an interrupt has been requested and not yet cleared.
pub fn is_requested() -> bool {
    PENDING.load(Ordering::Relaxed)
}

/// `Err(Error::Interrupted)` once an interrupt has been requested.
#[inline]
pub fn check() -> Result<()> {
    if PENDING.load(Ordering::Relaxed) {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}

// No unit test sets the flag: it is process-wide and would interrupt the other tests running
// in parallel. tests/test_interrupt.py sends real SIGINTs to subprocesses instead.
