//! Labels for built-in functions, made once per entry at the first call seen, with the rules of
//! `_lsprof`'s `normalizeUserObj`: `<len>`-style names for module functions, the repr of the
//! type's attribute for methods (`<method 'append' of 'list' objects>`), else
//! `<built-in method module.name>`.

use std::ffi::CStr;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

extern "C" {
    // Not in pyo3-ffi (private API), but exported by every CPython 3.x: a lookup along the
    // type's MRO that neither raises nor calls the metaclass, as `_lsprof` uses.
    fn _PyType_Lookup(tp: *mut ffi::PyTypeObject, name: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

/// The label for the builtin `ml` bound to `m_self` (NULL for a plain function) from module
/// `m_module` (a str, a module or NULL).
///
/// # Safety
/// The GIL is held; `ml` points to a live `PyMethodDef`; `m_self` and `m_module` are NULL or
/// borrowed references valid for the call.
pub unsafe fn builtin_label(
    py: Python<'_>,
    ml: *const ffi::PyMethodDef,
    m_self: *mut ffi::PyObject,
    m_module: *mut ffi::PyObject,
) -> PyResult<Py<PyAny>> {
    // SAFETY: ml is a live PyMethodDef (caller contract), whose ml_name is a C string.
    let name = unsafe { CStr::from_ptr((*ml).ml_name) }.to_string_lossy();
    if m_self.is_null() {
        // SAFETY: m_module is NULL or a valid borrowed reference (caller contract).
        let module = unsafe { module_name(py, m_module) };
        let text = match module {
            Some(m) if m != "builtins" => format!("<{m}.{name}>"),
            _ => format!("<{name}>"),
        };
        return Ok(PyString::new(py, &text).into_any().unbind());
    }
    let py_name = PyString::new(py, &name);
    // SAFETY: m_self is a valid borrowed reference; _PyType_Lookup returns a borrowed
    // reference (or NULL) without setting an exception.
    let found = unsafe { _PyType_Lookup(ffi::Py_TYPE(m_self), py_name.as_ptr()) };
    if !found.is_null() {
        // SAFETY: `found` is a live borrowed reference; we take a strong one before any call.
        let attr = unsafe { Bound::from_borrowed_ptr(py, found) };
        if let Ok(r) = attr.repr() {
            return Ok(r.into_any().unbind());
        }
    }
    // SAFETY: as above for m_module.
    let module = if !m_module.is_null() && unsafe { ffi::PyUnicode_Check(m_module) } != 0 {
        // SAFETY: m_module is a live str.
        let m = unsafe { Bound::from_borrowed_ptr(py, m_module) };
        m.str().ok().map(|s| s.to_string_lossy().into_owned())
    } else {
        None
    };
    let text = match module {
        Some(m) => format!("<built-in method {m}.{name}>"),
        None => format!("<built-in method {name}>"),
    };
    Ok(PyString::new(py, &text).into_any().unbind())
}

/// The module name of a builtin's `m_module`: the str itself, or a module's `__name__`.
unsafe fn module_name(py: Python<'_>, m_module: *mut ffi::PyObject) -> Option<String> {
    if m_module.is_null() {
        return None;
    }
    // SAFETY: m_module is a valid borrowed reference (caller contract).
    let m = unsafe { Bound::from_borrowed_ptr(py, m_module) };
    if let Ok(s) = m.cast::<PyString>() {
        return Some(s.to_string_lossy().into_owned());
    }
    if let Ok(module) = m.cast::<pyo3::types::PyModule>() {
        // A module without a usable name falls back to the bare label, as in _lsprof.
        return module.name().ok().map(|n| n.to_string_lossy().into_owned());
    }
    None
}
