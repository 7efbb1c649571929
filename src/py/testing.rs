//! `_rprofile._testing`: faces of internals that only the tests call, each holding one piece to
//! Python's or to the target's truth (a reader's stacks, names and GIL holder; the Stats engine's
//! pattern translation and number format). Kept out of the module users import.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::py::sampler::{py_frames, reader_error, runtime_of, PyFrames};
use crate::pyutil::oserror::os_error;
use crate::sampler::{names, stacks, status, tids};
use crate::stats::{report, select};

/// Adds the `_testing` submodule to `m`, importable by its full name as a package's would be.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let t = PyModule::new(m.py(), "rprofile._rprofile._testing")?;
    t.add_function(wrap_pyfunction!(_thread_stacks, &t)?)?;
    t.add_function(wrap_pyfunction!(_thread_names, &t)?)?;
    t.add_function(wrap_pyfunction!(_gil_holder, &t)?)?;
    t.add_function(wrap_pyfunction!(_running_threads, &t)?)?;
    t.add_function(wrap_pyfunction!(_regex_translate, &t)?)?;
    t.add_function(wrap_pyfunction!(_f8, &t)?)?;
    t.add_function(wrap_pyfunction!(_ref_tracer, &t)?)?;
    m.add("_testing", &t)?;
    m.py()
        .import("sys")?
        .getattr("modules")?
        .set_item("rprofile._rprofile._testing", t)
}

/// One thread's `(thread_ident, frames)`.
type PyThreadStack = (u64, PyFrames);

/// `[(thread_ident, [(filename, line, name), ...]), ...]`: every thread's Python call stack in
/// process `pid`, innermost frame first, read from outside. The errors of `_find_runtime`, and
/// ValueError naming the version when its stacks cannot be read yet (or what was read does not
/// hang together).
#[pyfunction]
pub fn _thread_stacks(py: Python<'_>, pid: i32) -> PyResult<Vec<PyThreadStack>> {
    let rt = runtime_of(py, pid)?;
    match py.detach(|| stacks::thread_stacks(&rt)) {
        Ok(threads) => Ok(threads
            .into_iter()
            .map(|t| (t.thread_id, py_frames(t.frames)))
            .collect()),
        Err(e) => Err(reader_error(py, e)),
    }
}

/// `{thread_ident: name}`: every thread's name as `threading` gives it in process `pid`, read
/// from outside; `{}` when it never imported `threading`. The errors of `_thread_stacks`.
#[pyfunction]
pub fn _thread_names(py: Python<'_>, pid: i32) -> PyResult<HashMap<u64, String>> {
    let rt = runtime_of(py, pid)?;
    py.detach(|| names::thread_names(&rt))
        .map_err(|e| reader_error(py, e))
}

/// The address of the `PyThreadState` that holds process `pid`'s GIL (its main interpreter's),
/// None when none does; the errors of `_thread_stacks`.
#[pyfunction]
pub fn _gil_holder(py: Python<'_>, pid: i32) -> PyResult<Option<u64>> {
    let rt = runtime_of(py, pid)?;
    py.detach(|| status::gil_holder(&rt))
        .map_err(|e| reader_error(py, e))
}

/// The native ids of process `pid`'s threads that are running or runnable (state `R`), in
/// `/proc/PID/task`'s order. OSError when its threads cannot be listed or read.
#[pyfunction]
pub fn _running_threads(py: Python<'_>, pid: i32) -> PyResult<Vec<u64>> {
    py.detach(|| {
        let mut states = status::ThreadStates::new(pid);
        let mut running = Vec::new();
        for tid in tids::thread_ids(pid)? {
            if states.running(tid)? {
                running.push(tid);
            }
        }
        Ok(running)
    })
    .map_err(|e| os_error(py, e, None))
}

/// The `regex`-crate spelling of a restriction pattern, or `None` when Python's `re` must run it;
/// exposed for the tests that hold the two engines to the same selections.
#[pyfunction]
pub fn _regex_translate(pattern: &Bound<'_, PyString>) -> Option<String> {
    select::translate(pattern.to_str().ok()?)
        .filter(|(p, _)| regex::Regex::new(p).is_ok())
        .map(|(p, _)| p)
}

/// `"%8.3f" % x`, exposed for the tests that hold the formatting to Python's.
#[pyfunction]
pub fn _f8(x: f64) -> String {
    let mut out = Vec::new();
    report::f8(&mut out, x);
    String::from_utf8(out).unwrap_or_default()
}

/// Which reference tracer the interpreter has: `"rprofile"`, `"other"` or None (always None
/// before 3.13, which has none).
#[pyfunction]
pub fn _ref_tracer(_py: Python<'_>) -> Option<&'static str> {
    #[cfg(Py_3_13)]
    {
        use crate::tracer::types_hook::{installed, Installed};
        match installed() {
            Installed::None => None,
            Installed::Ours => Some("rprofile"),
            Installed::Other => Some("other"),
        }
    }
    #[cfg(not(Py_3_13))]
    None
}
