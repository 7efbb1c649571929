//! Argument parsing for the native methods, with the rules and messages of the
//! `PyArg_ParseTupleAndKeywords` formats `_lsprof` uses (`"|Odii"`/`"|Odpp"` for the constructor,
//! `"|ii"`/`"|pp"` for `enable`), so errors read as cProfile's.

use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyString, PyTuple};

use crate::pyutil::text::type_name;

/// Matches positional and keyword arguments to `names` (the first `positional` of which may be
/// given by position); `None` for an argument not given.
pub fn parse<'py>(
    fname: &str,
    names: &[&str],
    positional: usize,
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Vec<Option<Bound<'py, PyAny>>>> {
    let nargs = args.len();
    let nkw = kwargs.map_or(0, |k| k.len());
    if nargs > positional || nargs + nkw > names.len() {
        let most = if nargs > positional {
            positional
        } else {
            names.len()
        };
        return Err(PyTypeError::new_err(format!(
            "{fname}() takes at most {most} argument{} ({} given)",
            if most == 1 { "" } else { "s" },
            nargs + nkw
        )));
    }
    let mut out: Vec<Option<Bound<'py, PyAny>>> = args.iter().map(Some).collect();
    out.resize(names.len(), None);
    if let Some(kwargs) = kwargs {
        for (key, value) in kwargs.iter() {
            let key = key
                .cast_into::<PyString>()
                .map_err(|_| PyTypeError::new_err("keywords must be strings"))?;
            let key = key.to_str()?;
            match names.iter().position(|n| *n == key) {
                Some(i) if i < nargs => {
                    return Err(PyTypeError::new_err(format!(
                        "argument for {fname}() given by name ('{key}') and position ({})",
                        i + 1
                    )))
                }
                Some(i) => out[i] = Some(value),
                None => {
                    return Err(PyTypeError::new_err(format!(
                        "'{key}' is an invalid keyword argument for {fname}()"
                    )))
                }
            }
        }
    }
    Ok(out)
}

/// The `d` format: a float from anything with `__float__` or `__index__`.
pub fn real(v: &Bound<'_, PyAny>) -> PyResult<f64> {
    v.extract::<f64>()
        .map_err(|_| PyTypeError::new_err(format!("must be real number, not {}", type_name(v))))
}

/// A keyword flag of rprofile's own: absent is False, else its truth value.
pub fn truthy(value: &Option<Bound<'_, PyAny>>) -> PyResult<bool> {
    value.as_ref().map_or(Ok(false), |v| v.is_truthy())
}

/// The `subcalls`/`builtins` flag rule of the running version: 3.12+ parses with `p`
/// (truthiness); 3.10/3.11 with `i`, where 0 clears, a positive value sets, and a negative one
/// leaves the flag as it was.
pub fn flag(current: bool, value: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    let Some(v) = value else { return Ok(current) };
    if cfg!(Py_3_12) {
        return v.is_truthy();
    }
    if v.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(
            "'float' object cannot be interpreted as an integer",
        ));
    }
    let index = v
        .call_method0(pyo3::intern!(v.py(), "__index__"))
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "'{}' object cannot be interpreted as an integer",
                type_name(v)
            ))
        })?;
    let n: i64 = index
        .extract()
        .map_err(|_| PyOverflowError::new_err("Python int too large to convert to C long"))?;
    if n > i32::MAX as i64 {
        return Err(PyOverflowError::new_err(
            "signed integer is greater than maximum",
        ));
    }
    if n < i32::MIN as i64 {
        return Err(PyOverflowError::new_err(
            "signed integer is less than minimum",
        ));
    }
    Ok(match n {
        0 => false,
        n if n > 0 => true,
        _ => current,
    })
}
