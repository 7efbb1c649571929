//! A system error as Python raises it: `OSError(errno, strerror[, filename])`, whose
//! constructor picks the subclass of the errno (FileNotFoundError, ProcessLookupError,
//! PermissionError, ...), as `open()`, `write()` and `os` functions raise them; and a file
//! written with those errors.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

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

/// Creates the file at `path` (str, bytes or PathLike, as `open()` takes it) and fills it with
/// `write` through a buffer, without the GIL; OSError as `open()` and `write()` raise it.
pub fn write_file(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()> + Send,
) -> PyResult<()> {
    let decoded: PathBuf = py
        .import("os")?
        .call_method1("fsdecode", (path,))?
        .extract()?;
    py.detach(|| {
        let f = File::create(&decoded)?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        write(&mut w)?;
        w.flush()
    })
    .map_err(|e| os_error(py, e, Some(path.clone().unbind())))
}
