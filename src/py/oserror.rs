//! A system error as Python raises it: `OSError(errno, strerror[, filename])`, whose
//! constructor picks the subclass of the errno (FileNotFoundError, ProcessLookupError,
//! PermissionError, ...), as `open()`, `write()` and `os` functions raise them.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// The OSError for `e`, naming `filename` when there is one; an error with no errno keeps
/// PyO3's mapping.
pub fn os_error(py: Python<'_>, e: std::io::Error, filename: Option<Py<PyAny>>) -> PyErr {
    let Some(errno) = e.raw_os_error() else {
        return e.into();
    };
    let strerror = py
        .import("os")
        .and_then(|os| os.call_method1("strerror", (errno,)))
        .map_or_else(
            |_| PyString::new(py, &e.to_string()).into_any().unbind(),
            Bound::unbind,
        );
    match filename {
        Some(f) => PyOSError::new_err((errno, strerror, f)),
        None => PyOSError::new_err((errno, strerror)),
    }
}
