//! Maps ordcore-core errors to the Python exception classes of `ordcore.errors`.

use ordcore_core::Error;
use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyOSError};
use pyo3::PyErr;

pyo3::import_exception!(ordcore.errors, InvalidArgumentError);
pyo3::import_exception!(ordcore.errors, IndexFormatError);
pyo3::import_exception!(ordcore.errors, InternalError);
pyo3::import_exception!(ordcore.errors, UnknownIdError);

/// The Python exception for a core error.
pub fn to_pyerr(err: Error) -> PyErr {
    match err {
        Error::InvalidArgument { .. } => InvalidArgumentError::new_err(err.to_string()),
        Error::Format(msg) => IndexFormatError::new_err(msg),
        // OSError(errno, message), which Python turns into FileNotFoundError,
        // PermissionError, ... by the errno and which keeps it (ENOSPC, EFBIG, ... can be
        // tested); without an OS error code, the subclass from the error's kind.
        Error::Io(e) => match e.raw_os_error() {
            Some(code) => PyOSError::new_err((code, e.to_string())),
            None => PyErr::from(e),
        },
        Error::OutOfMemory { .. } => PyMemoryError::new_err(err.to_string()),
        Error::UnknownId { .. } => UnknownIdError::new_err(err.to_string()),
        Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
    }
}

/// A `ValueError` subclass for argument problems found in the binding layer itself.
pub fn invalid(arg: &str, reason: impl std::fmt::Display) -> PyErr {
    InvalidArgumentError::new_err(format!("{arg}: {reason}"))
}

/// The error for a Rust panic: a bug in ordcore, never a user's fault.
pub fn panic_to_pyerr(payload: Box<dyn std::any::Any + Send>) -> PyErr {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    InternalError::new_err(format!(
        "internal error in ordcore (please report it): {msg}"
    ))
}
