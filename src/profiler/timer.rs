//! A Python timer (`Profile(timer=f)`): called as `_lsprof` calls it, its result converted to
//! timer units as `_lsprof` converts it.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyList, PyTuple};

use crate::profiler::exception::SavedException;
use crate::profiler::state::Profiler;

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
            e.write_unraisable(py, Some(&timer));
            0
        }
    }
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
/// int is multiplied exactly; out of range raises OverflowError.
fn seconds_to_ns(v: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(f) = v.cast::<PyFloat>() {
        let d = f.value();
        if d.is_nan() {
            return Err(PyValueError::new_err("Invalid value NaN (not a number)"));
        }
        let ns = (d * 1e9).floor();
        if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&ns) {
            return Err(pyo3::exceptions::PyOverflowError::new_err(
                "timestamp too large to convert to C _PyTime_t",
            ));
        }
        return Ok(ns as i64);
    }
    let secs: i64 = v
        .call_method0("__index__")
        .and_then(|i| i.extract())
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "'{}' object cannot be interpreted as an integer",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
    secs.checked_mul(1_000_000_000).ok_or_else(|| {
        pyo3::exceptions::PyOverflowError::new_err("timestamp too large to convert to C _PyTime_t")
    })
}
