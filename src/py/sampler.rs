//! The sampler's Python face, for the tests only so far: `_find_runtime(pid)` and
//! `_thread_stacks(pid)`.

use std::path::PathBuf;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::sampler::runtime::{self, Error};
use crate::sampler::stacks;

/// `(runtime_address, library_path, version_hex or None)` of process `pid`'s interpreter.
/// Raises the OSError of the failing system call (errno, strerror and the file when there is
/// one: ProcessLookupError for a pid that does not exist, PermissionError when we may not read
/// it), or ValueError when the process is not a Python we can read.
#[pyfunction]
pub fn _find_runtime(py: Python<'_>, pid: i32) -> PyResult<(u64, PathBuf, Option<u64>)> {
    // Reading the library's symbols takes a few milliseconds: other threads run meanwhile.
    match py.detach(|| runtime::find_runtime(pid)) {
        Ok(r) => Ok((r.address, r.library, r.version_hex)),
        Err(Error::NotPython(why)) => Err(PyValueError::new_err(why)),
        Err(Error::Io { error, path }) => Err(os_error(py, error, path)),
    }
}

/// One thread's `(thread_ident, frames)`, frames innermost first as `(filename, line, name)`.
type PyThreadStack = (u64, Vec<(String, Option<i64>, String)>);

/// `[(thread_ident, [(filename, line, name), ...]), ...]`: every thread's Python call stack in
/// process `pid`, innermost frame first, read from outside. The errors of `_find_runtime`, and
/// ValueError naming the version when its stacks cannot be read yet (or what was read does not
/// hang together).
#[pyfunction]
pub fn _thread_stacks(py: Python<'_>, pid: i32) -> PyResult<Vec<PyThreadStack>> {
    let rt = match py.detach(|| runtime::find_runtime(pid)) {
        Ok(rt) => rt,
        Err(Error::NotPython(why)) => return Err(PyValueError::new_err(why)),
        Err(Error::Io { error, path }) => return Err(os_error(py, error, path)),
    };
    match py.detach(|| stacks::thread_stacks(&rt)) {
        Ok(threads) => Ok(threads
            .into_iter()
            .map(|t| {
                let frames = t
                    .frames
                    .into_iter()
                    .map(|f| (f.filename, f.line, f.name))
                    .collect();
                (t.thread_id, frames)
            })
            .collect()),
        Err(stacks::Error::Io(error)) => Err(os_error(py, error, None)),
        Err(stacks::Error::Unsupported(why) | stacks::Error::Layout(why)) => {
            Err(PyValueError::new_err(why))
        }
    }
}

/// OSError's constructor picks the subclass of the errno (ProcessLookupError, PermissionError,
/// ...); an error without an errno keeps PyO3's mapping.
fn os_error(py: Python<'_>, e: std::io::Error, path: Option<PathBuf>) -> PyErr {
    let Some(errno) = e.raw_os_error() else {
        return e.into();
    };
    let strerror = match py
        .import("os")
        .and_then(|os| os.call_method1("strerror", (errno,)))
    {
        Ok(s) => s.unbind(),
        Err(_) => PyString::new(py, &e.to_string()).into_any().unbind(),
    };
    match path {
        Some(p) => PyOSError::new_err((errno, strerror, p)),
        None => PyOSError::new_err((errno, strerror)),
    }
}
