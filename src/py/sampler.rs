//! The reader's one-shot Python face: `_dump_threads(pid, blocking, locals)` (what `rprofile dump`
//! prints) and `_find_runtime(pid)`; the pieces a dump is made of, which the tests check one by
//! one, are in `testing.rs`.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::pyutil::oserror::os_error;
use crate::sampler::descendants::Descendants;
use crate::sampler::dump::{self, DumpError};
use crate::sampler::locals::{Local, Value};
use crate::sampler::runtime::{self, Error};
use crate::sampler::stacks;

/// `(runtime_address, library_path, version_hex or None)` of process `pid`'s interpreter.
/// Raises the OSError of the failing system call (errno, strerror and the file when there is
/// one: ProcessLookupError for a pid that does not exist, PermissionError when we may not read
/// it), or ValueError when the process is not a Python we can read.
#[pyfunction]
pub fn _find_runtime(py: Python<'_>, pid: i32) -> PyResult<(u64, PathBuf, Option<u64>)> {
    // Reading the library's symbols takes a few milliseconds: other threads run meanwhile.
    let r = runtime_of(py, pid)?;
    Ok((r.address, r.library, r.version_hex))
}

/// `runtime::find_runtime` with its errors as Python's: OSError for a failed system call,
/// ValueError for a process that is not a Python we can read.
pub(crate) fn runtime_of(py: Python<'_>, pid: i32) -> PyResult<runtime::Runtime> {
    runtime_with(py, pid, &mut runtime::Symbols::default())
}

/// `runtime_of`, keeping what it read of the interpreter's file in `symbols`.
pub(crate) fn runtime_with(
    py: Python<'_>,
    pid: i32,
    symbols: &mut runtime::Symbols,
) -> PyResult<runtime::Runtime> {
    py.detach(|| runtime::find_runtime_with(pid, symbols))
        .map_err(|e| match e {
            Error::NotPython(why) => PyValueError::new_err(why),
            Error::Io { error, path } => {
                let filename = path
                    .and_then(|p| p.into_pyobject(py).ok())
                    .map(|o| o.into_any().unbind());
                os_error(py, error, filename)
            }
        })
}

/// Frames as Python gets them: `(filename, line, name)`, innermost first.
pub(crate) type PyFrames = Vec<(String, Option<i64>, String)>;

pub(crate) fn py_frames(frames: Vec<stacks::NamedFrame>) -> PyFrames {
    frames
        .into_iter()
        .map(|f| (f.filename, f.line, f.name))
        .collect()
}

/// A reader's error as Python's: OSError for a failed read, ValueError for a version it cannot
/// read or a layout that does not hang together.
pub(crate) fn reader_error(py: Python<'_>, e: stacks::Error) -> PyErr {
    match e {
        stacks::Error::Io(error) => os_error(py, error, None),
        stacks::Error::Unsupported(why)
        | stacks::Error::Layout(why)
        | stacks::Error::NotReady(why) => PyValueError::new_err(why),
    }
}

/// One local variable: `(name, type, kind, value, length)`. `kind` says what `value` is:
/// `int`, `float`, `bool`, `none` (the value itself), `bigint` (its decimal text, None when too
/// long), `str`, `bytes` (its first characters or bytes; `length` the whole), `container` (None;
/// `length` its length), `other` (its address), `unreadable` (why).
type PyLocal = (String, String, &'static str, Py<PyAny>, Option<u64>);

/// A frame's `(locals, None)`, or `(None, why)` when they were not read.
type PyFrameLocals = (Option<Vec<PyLocal>>, Option<String>);

fn py_local(py: Python<'_>, local: Local) -> PyResult<PyLocal> {
    let ty = local.value.type_name().to_string();
    let any = |b: Bound<'_, PyAny>| b.unbind();
    let (kind, value, length) = match local.value {
        Value::Int(v) => ("int", any(v.into_pyobject(py)?.into_any()), None),
        Value::BigInt(text) => ("bigint", any(text.into_pyobject(py)?.into_any()), None),
        Value::Float(v) => ("float", any(v.into_pyobject(py)?.into_any()), None),
        Value::Bool(v) => (
            "bool",
            any(v.into_pyobject(py)?.to_owned().into_any()),
            None,
        ),
        Value::None => ("none", py.None(), None),
        Value::Str(text, len) => ("str", any(text.into_pyobject(py)?.into_any()), Some(len)),
        Value::Bytes(b, len) => (
            "bytes",
            any(pyo3::types::PyBytes::new(py, &b).into_any()),
            Some(len),
        ),
        Value::Container(_, len) => ("container", py.None(), Some(len)),
        Value::Other(_, addr) => ("other", any(addr.into_pyobject(py)?.into_any()), None),
        Value::Unreadable(why) => ("unreadable", any(why.into_pyobject(py)?.into_any()), None),
    };
    Ok((local.name, ty, kind, value, length))
}

/// One thread of a dump: `(native_id, ident, main, name, state, has_gil, waiting_gil, frames,
/// truncated, torn, locals)`; frames innermost first as `(filename, line, name)`; `state` the
/// `/proc` state letter; `waiting_gil` None where the version does not say; `locals` one per
/// frame, as `frames` (empty unless asked).
type PyThreadDump = (
    u64,
    u64,
    bool,
    Option<String>,
    Option<String>,
    bool,
    Option<bool>,
    PyFrames,
    bool,
    bool,
    Vec<PyFrameLocals>,
);

/// Every thread of process `pid` at one instant (see `sampler::dump`), with `locals` each
/// frame's local variables: the errors of `_thread_stacks`, and PermissionError (errno EPERM)
/// when `blocking` may not stop it.
#[pyfunction]
#[pyo3(signature = (pid, blocking=false, locals=false))]
pub fn _dump_threads(
    py: Python<'_>,
    pid: i32,
    blocking: bool,
    locals: bool,
) -> PyResult<Vec<PyThreadDump>> {
    let rt = runtime_of(py, pid)?;
    let threads = py
        .detach(|| dump::dump(&rt, blocking, locals))
        .map_err(|e| match e {
            DumpError::Read(e) => reader_error(py, e),
            DumpError::Refused(why) => {
                pyo3::exceptions::PyPermissionError::new_err((libc::EPERM, why))
            }
        })?;
    threads
        .into_iter()
        .map(|t| {
            let frames = py_frames(t.frames);
            let state = t.state.map(|c| char::from(c).to_string());
            let locals = t
                .locals
                .into_iter()
                .map(|frame| match frame {
                    Ok(ls) => {
                        let ls = ls.into_iter().map(|l| py_local(py, l));
                        Ok((Some(ls.collect::<PyResult<_>>()?), None))
                    }
                    Err(why) => Ok((None, Some(why))),
                })
                .collect::<PyResult<Vec<PyFrameLocals>>>()?;
            Ok((
                t.native_id,
                t.ident,
                t.main,
                t.name,
                state,
                t.has_gil,
                t.waiting_gil,
                frames,
                t.truncated,
                t.torn,
                locals,
            ))
        })
        .collect()
}

/// The processes `pid` started and theirs, parents first, as `--subprocesses` finds them (one
/// look at `/proc`); `[]` when it has none or is gone.
#[pyfunction]
pub fn _descendants(py: Python<'_>, pid: i32) -> Vec<i32> {
    py.detach(|| {
        Descendants::new(pid)
            .poll(true)
            .into_iter()
            .map(|f| f.pid)
            .collect()
    })
}
