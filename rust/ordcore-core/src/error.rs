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
    /// An operating-system error while reading or writing a file. Maps to `OSError`.
    #[error(transparent)]
    Io(#[from] std::io::Error),
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
