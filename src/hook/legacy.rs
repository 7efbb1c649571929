//! Python 3.10/3.11 front end: the C-level profile hook (`PyEval_SetProfile`) on the thread
//! that calls `enable()`, receiving exactly the events `_lsprof` receives.

use std::os::raw::c_int;

use pyo3::ffi;
use pyo3::prelude::*;

use crate::events;
use crate::labels::builtin_label;
use crate::profiler::Profiler;

/// Nothing to keep on these versions.
pub struct HookState;

impl HookState {
    pub fn new() -> PyResult<Self> {
        Ok(HookState)
    }
}

pub fn install(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    // SAFETY: GIL held; the thread state takes a strong reference to `slf`, which keeps the
    // profiler alive for as long as the hook can call it.
    unsafe { ffi::PyEval_SetProfile(Some(profile_hook), slf.as_ptr()) };
    Ok(())
}

pub fn uninstall(_slf: &Bound<'_, Profiler>) -> PyResult<()> {
    // SAFETY: GIL held; removes the hook of the calling thread (as _lsprof's disable does).
    unsafe { ffi::PyEval_SetProfile(None, std::ptr::null_mut()) };
    Ok(())
}

unsafe extern "C" fn profile_hook(
    obj: *mut ffi::PyObject,
    frame: *mut ffi::PyFrameObject,
    what: c_int,
    arg: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: the interpreter calls the hook with the GIL held.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: `obj` is the profiler we installed, kept alive by the thread state.
    let p = unsafe { Bound::ref_from_ptr(py, &obj).cast_unchecked::<Profiler>() }.get();
    match what {
        ffi::PyTrace_CALL | ffi::PyTrace_RETURN => {
            // SAFETY: `frame` is the live frame of the event; PyFrame_GetCode returns a new
            // reference, released below after the event is handled.
            let code = unsafe { ffi::PyFrame_GetCode(frame) } as *mut ffi::PyObject;
            if what == ffi::PyTrace_CALL {
                // SAFETY: GIL held; no borrow of the profiler's state is alive.
                unsafe {
                    events::enter_call(py, p, code as usize, || {
                        Ok(Bound::from_borrowed_ptr(py, code).unbind())
                    })
                };
            } else {
                // SAFETY: as above.
                unsafe { events::leave_call(py, p, code as usize) };
            }
            // SAFETY: releases the reference PyFrame_GetCode gave.
            unsafe { ffi::Py_DECREF(code) };
        }
        ffi::PyTrace_C_CALL | ffi::PyTrace_C_RETURN | ffi::PyTrace_C_EXCEPTION => {
            // SAFETY: short read of a flag.
            let builtins = unsafe { (*p.state_ptr()).builtins };
            // SAFETY: `arg` is the called object, alive for the event.
            if !builtins || unsafe { ffi::PyCFunction_Check(arg) } == 0 {
                return 0;
            }
            let f = arg as *mut ffi::PyCFunctionObject;
            // SAFETY: `arg` is a PyCFunction (checked), so its fields can be read.
            let ml = unsafe { (*f).m_ml };
            if what == ffi::PyTrace_C_CALL {
                // SAFETY: GIL held; the label reads the live function's fields.
                unsafe {
                    events::enter_call(py, p, ml as usize, || {
                        builtin_label(py, ml, (*f).m_self, (*f).m_module)
                    })
                };
            } else {
                // SAFETY: GIL held.
                unsafe { events::leave_call(py, p, ml as usize) };
            }
        }
        _ => {}
    }
    0
}
