//! Refusing allocations the machine cannot back.
//!
//! Linux overcommits: a huge `Vec::with_capacity` succeeds and the OOM killer ends the
//! process later, and under `RLIMIT_AS` the allocation fails and Rust aborts. Neither reaches
//! the caller as an error, so routines estimate the bytes a call needs from its arguments
//! and call [`ensure_fits`] before allocating: a request above what this process can use
//! (physical memory, and the address space left under `RLIMIT_AS`) is an
//! [`Error::OutOfMemory`] naming the argument that drove it.

use crate::{Error, Result};

/// Bytes this process can still expect to allocate: the machine's physical memory, capped
/// by the address space left under a soft `RLIMIT_AS`. `u64::MAX` where unknown.
pub fn usable_bytes() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf and getrlimit only read process/system information.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        let mut limit = if pages > 0 && page > 0 {
            (pages as u64).saturating_mul(page as u64)
        } else {
            u64::MAX
        };
        let mut rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: rl is a valid out-pointer.
        if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut rl) } == 0
            && rl.rlim_cur != libc::RLIM_INFINITY
        {
            let used = std::fs::read_to_string("/proc/self/statm")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .map(|p| p.saturating_mul(page.max(1) as u64))
                .unwrap_or(0);
            limit = limit.min(rl.rlim_cur.saturating_sub(used));
        }
        limit
    }
    #[cfg(not(target_os = "linux"))]
    {
        u64::MAX
    }
}

/// `Err(Error::OutOfMemory)` naming `arg` unless `bytes` fit in [`usable_bytes`].
pub fn ensure_fits(arg: &'static str, bytes: u128) -> Result<()> {
    let usable = usable_bytes();
    if bytes > usable as u128 {
        return Err(Error::OutOfMemory { arg, bytes, usable });
    }
    Ok(())
}

/// Bytes of `count` values of `T`, checked against [`usable_bytes`] (`arg` names the
/// argument that sets `count`).
pub fn ensure_array<T>(arg: &'static str, count: u128) -> Result<()> {
    ensure_fits(arg, count.saturating_mul(std::mem::size_of::<T>() as u128))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_requests_are_refused_with_the_argument() {
        assert!(usable_bytes() > 1 << 20);
        assert!(ensure_fits("x", 1 << 10).is_ok());
        let err = ensure_array::<u64>("L_build", 1u128 << 70).unwrap_err();
        assert!(matches!(err, Error::OutOfMemory { arg: "L_build", .. }));
        assert!(err.to_string().starts_with("L_build: "), "{err}");
    }
}
