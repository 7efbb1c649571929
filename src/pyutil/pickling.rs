//! What the picklable native objects share: a payload's error raised as
//! `pickle.UnpicklingError`, and the `__reduce__` value that unpickles through the class's own
//! `_from_pickle` (a classmethod, which pickle finds by the class's name in `rprofile._rprofile`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};

use crate::stats::payload::Error;

/// `pickle.UnpicklingError(message)`, as for any bad pickle data.
pub fn unpickling_error(py: Python<'_>, e: Error) -> PyErr {
    let t = py
        .import("pickle")
        .and_then(|m| m.getattr("UnpicklingError"))
        .and_then(|t| Ok(t.cast_into::<PyType>()?));
    match t {
        Ok(t) => PyErr::from_type(t, e.0),
        Err(err) => err,
    }
}

/// `(cls._from_pickle, (payload,))`.
pub fn reduce<'py>(
    obj: &Bound<'py, PyAny>,
    payload: &[u8],
) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
    let py = obj.py();
    let make = obj.get_type().getattr(pyo3::intern!(py, "_from_pickle"))?;
    Ok((make, (PyBytes::new(py, payload),)))
}
