//! A Python timer (`Profile(timer=f)`): called as `_lsprof` calls it, its result converted to
//! timer units as `_lsprof` converts it.

use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyList, PyTuple};

use crate::pyutil::text::type_name;
use crate::tracer::exception::SavedException;
use crate::tracer::state::Profiler;

/// Calls the Python timer and converts its result as `_lsprof` does: an int count of
/// `timeunit` when `timeunit > 0`, else seconds turned into integer nanoseconds (floor).
/// A failing timer is reported as unraisable and reads as 0.
///
/// # Safety
/// GIL held; no borrow of the state alive across the call.
#[cold]
pub unsafe fn call(py: Python<'_>, p: &Profiler) -> i64 {
    // A Bound (not a Py) so that the reference is released at once: under the GIL assumed
    // by an event callback, dropping a Py would be deferred to PyO3's pending-release pool.
    // SAFETY: a short read of the cell; whoever replaces the timer meanwhile (__init__,
    // tp_clear, run by the timer itself) leaves this call its own reference.
    let Some(timer) = (unsafe { &*p.timer.get() })
        .as_ref()
        .map(|t| t.bind(py).clone())
    else {
        return 0;
    };
    let st = p.state_ptr();
    // SAFETY: short exclusive accesses of plain fields.
    // A counter, not a flag: on 3.12+ timer calls of several threads can overlap.
    let unit = unsafe {
        (*st).in_timer += 1;
        (*st).timeunit
    };
    // SAFETY: GIL held; the guard restores any exception in flight after the call.
    let _saved = unsafe { SavedException::save() };
    let result = timer.call0().and_then(|v| timer_value(&v, unit));
    // SAFETY: short exclusive write.
    unsafe { (*st).in_timer -= 1 };
    match result {
        Ok(t) => t,
        Err(e) => {
            report(py, e, &timer);
            0
        }
    }
}

/// Reports a timer's error as unraisable, in the words of the running version's `_lsprof`.
fn report(py: Python<'_>, e: PyErr, timer: &Bound<'_, PyAny>) {
    #[cfg(Py_3_14)]
    {
        unsafe extern "C" {
            // Public since 3.13; not declared by pyo3-ffi.
            fn PyErr_FormatUnraisable(format: *const std::ffi::c_char, ...);
        }
        e.restore(py);
        // SAFETY: GIL held, an exception set; the format takes one object, `timer`, alive.
        unsafe {
            PyErr_FormatUnraisable(
                c"Exception ignored while calling _lsprof timer %R".as_ptr(),
                timer.as_ptr(),
            )
        };
    }
    #[cfg(not(Py_3_14))]
    e.write_unraisable(py, Some(timer));
}

/// Converts a timer result to timer units; tuples and lists (as `profile` accepts, e.g.
/// `os.times()[:2]`) count as the sum of their items.
fn timer_value(v: &Bound<'_, PyAny>, unit: f64) -> PyResult<i64> {
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>() {
        let mut total = 0i64;
        for item in v.try_iter()? {
            total = total.wrapping_add(timer_value(&item?, unit)?);
        }
        return Ok(total);
    }
    if unit > 0.0 {
        if cfg!(Py_3_15) {
            // 3.15 reads an int64 (anything with __index__).
            return v
                .call_method0("__index__")
                .map_err(|_| not_integer(v))?
                .extract::<i64>()
                .map_err(|_| {
                    PyOverflowError::new_err("Python int too large to convert to C int64_t")
                });
        }
        if !v.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!(
                "expect int, got {}",
                v.get_type().name()?
            )));
        }
        return v.extract::<i64>();
    }
    seconds_to_ns(v)
}

/// `_PyTime_FromSecondsObject(..., ROUND_FLOOR)`: a float is multiplied by 1e9 and floored, an
/// int is multiplied exactly; out of range raises OverflowError. 3.15 also takes any real number
/// (`__float__`).
fn seconds_to_ns(v: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(f) = v.cast::<PyFloat>() {
        return float_seconds_to_ns(f.value());
    }
    let index = match v.call_method0("__index__") {
        Ok(index) => index,
        Err(_) if cfg!(Py_3_15) => return float_seconds_to_ns(v.extract::<f64>()?),
        Err(_) if cfg!(Py_3_14) => {
            return Err(PyTypeError::new_err(format!(
                "'{}' object cannot be interpreted as an integer or float",
                type_name(v)
            )));
        }
        Err(_) => return Err(not_integer(v)),
    };
    index
        .extract::<i64>()
        .ok()
        .and_then(|secs| secs.checked_mul(1_000_000_000))
        .ok_or_else(out_of_range)
}

fn float_seconds_to_ns(d: f64) -> PyResult<i64> {
    if d.is_nan() {
        return Err(PyValueError::new_err("Invalid value NaN (not a number)"));
    }
    let ns = (d * 1e9).floor();
    if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&ns) {
        return Err(out_of_range());
    }
    Ok(ns as i64)
}

/// The OverflowError of a time out of `_PyTime_t`'s range, in the running version's words.
fn out_of_range() -> PyErr {
    PyOverflowError::new_err(if cfg!(Py_3_14) {
        "timestamp out of range for C PyTime_t"
    } else {
        "timestamp too large to convert to C _PyTime_t"
    })
}

fn not_integer(v: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "'{}' object cannot be interpreted as an integer",
        type_name(v)
    ))
}
