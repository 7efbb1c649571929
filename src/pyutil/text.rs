//! Python str and the UTF-8 bytes the engines keep names as, both ways: lone surrogates (from
//! undecodable file names) as `surrogatepass` encodes them, as marshal writes them; and a
//! Python object's type name for error messages.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// A Python str from UTF-8 bytes that may hold surrogatepass-encoded lone surrogates.
pub fn py_str<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyString>> {
    let len = pyo3::ffi::Py_ssize_t::try_from(bytes.len())
        .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("text too long"))?;
    if bytes.is_ascii() {
        // Reports are nearly always ASCII: the str is made and filled directly, without the
        // decoder's own pass over megabytes of text.
        // SAFETY: GIL held; PyUnicode_New returns a new compact str of `len` one-byte code
        // points (or NULL with an exception set), whose data is `len` writable bytes; ASCII
        // bytes are valid code points below the 127 promised.
        let obj = unsafe {
            let obj = pyo3::ffi::PyUnicode_New(len, 127);
            if !obj.is_null() {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    pyo3::ffi::PyUnicode_DATA(obj).cast::<u8>(),
                    bytes.len(),
                );
            }
            Bound::from_owned_ptr_or_err(py, obj)?
        };
        return Ok(obj.cast_into::<PyString>()?);
    }
    // SAFETY: the pointer and length describe `bytes`, which outlives the call; the error
    // handler name is a NUL-terminated C string; the GIL is held (we have `py`).
    let obj = unsafe {
        pyo3::ffi::PyUnicode_DecodeUTF8(bytes.as_ptr().cast(), len, c"surrogatepass".as_ptr())
    };
    // SAFETY: a new reference or NULL with an exception set, as PyUnicode_DecodeUTF8 returns.
    let obj = unsafe { Bound::from_owned_ptr_or_err(py, obj)? };
    Ok(obj.cast_into::<PyString>()?)
}

/// The UTF-8 bytes of a str (lone surrogates as surrogatepass writes them, as marshal does).
pub fn str_bytes<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, [u8]>> {
    match s.to_str() {
        Ok(t) => Ok(Cow::Borrowed(t.as_bytes())),
        Err(_) => {
            let b = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
            Ok(Cow::Owned(b.cast::<PyBytes>()?.as_bytes().to_vec()))
        }
    }
}

/// The name of `v`'s type, as error messages give it.
pub(crate) fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}
