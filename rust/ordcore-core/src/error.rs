//! The one error type of ordcore-core. The binding crate maps each variant to its own
//! Python exception class (see `python/ordcore/errors.py`).

/// Every failure an ordcore-core routine can report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A value is out of the range or shape the routine accepts. `arg` names the argument
    /// as the user passed it (`coords`, `nbits`, `lengths`, ...). Maps to
    /// `ordcore.InvalidArgumentError` (a `ValueError`).
    #[error("{arg}: {reason}")]
    InvalidArgument { arg: &'static str, reason: String },
    /// A persisted file is not a valid ordcore file (truncated, corrupted, foreign, newer
    /// format). Maps to `ordcore.IndexFormatError` (a `ValueError`).
    #[error("{0}")]
    Format(String),
    /// An operating-system error while reading or writing a file. Maps to `OSError` (the
    /// binding picks `FileNotFoundError`, `PermissionError`, ... from the kind).
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The call would need more memory than this process can use (see
    /// [`crate::memory`]); nothing was allocated or changed. Maps to `MemoryError`.
    #[error("{arg}: needs about {} ({bytes} bytes), more than the {} this process can use", human_bytes(*bytes), human_bytes(*usable as u128))]
    OutOfMemory {
        arg: &'static str,
        bytes: u128,
        usable: u64,
    },
    /// An id the caller named is not in the index. Maps to `ordcore.UnknownIdError` (both a
    /// `KeyError` and an `InvalidArgumentError`).
    #[error("{arg}: {reason}")]
    UnknownId { arg: &'static str, reason: String },
    /// The call stopped at an interrupt request (Ctrl-C, see [`crate::interrupt`]) before
    /// publishing any result. Maps to `KeyboardInterrupt`.
    #[error("interrupted")]
    Interrupted,
}

/// `1.5 GiB`-style rendering of a byte count for messages.
pub fn human_bytes(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// `Result` with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(arg: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            arg,
            reason: reason.into(),
        }
    }
}

/// Returns `Err(Error::InvalidArgument)` from the enclosing function unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $arg:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($crate::Error::invalid($arg, format!($($fmt)+)));
        }
    };
}
