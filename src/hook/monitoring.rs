//! Python 3.12+ front end: `sys.monitoring` under `PROFILER_ID`, with the nine events and the
//! event-to-action table that `_lsprof` registers, so the numbers match cProfile's.
//!
//! The callbacks are C functions (METH_FASTCALL) bound to the profiler object: the interpreter
//! calls them by vectorcall with no argument tuple, and no Python code runs per event.

use std::ffi::c_char;
use std::ptr::addr_of_mut;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use crate::events;
use crate::labels::builtin_label;
use crate::profiler::Profiler;

/// `sys.monitoring.PROFILER_ID`.
const TOOL_ID: u8 = 2;

/// Per-profiler data of this front end.
pub struct HookState {
    /// `sys.monitoring.MISSING`: the `arg0` of a call with no positional argument.
    missing: Py<PyAny>,
}

static MISSING: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl HookState {
    pub fn new() -> PyResult<Self> {
        Python::attach(|py| {
            let missing = MISSING
                .get_or_try_init(py, || monitoring(py)?.getattr("MISSING").map(Bound::unbind))?;
            Ok(HookState {
                missing: missing.clone_ref(py),
            })
        })
    }
}

fn monitoring(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("sys")?.getattr("monitoring")
}

type Fast = unsafe extern "C" fn(
    *mut ffi::PyObject,
    *mut *mut ffi::PyObject,
    ffi::Py_ssize_t,
) -> *mut ffi::PyObject;

const fn def(name: &'static std::ffi::CStr, f: Fast) -> ffi::PyMethodDef {
    ffi::PyMethodDef {
        ml_name: name.as_ptr() as *const c_char,
        ml_meth: ffi::PyMethodDefPointer { PyCFunctionFast: f },
        ml_flags: ffi::METH_FASTCALL,
        ml_doc: std::ptr::null(),
    }
}

// CPython keeps pointers to these for the life of the bound callbacks; they are never written.
static mut PYSTART_DEF: ffi::PyMethodDef = def(c"_pystart_callback", pystart_callback);
static mut PYRETURN_DEF: ffi::PyMethodDef = def(c"_pyreturn_callback", pyreturn_callback);
static mut CCALL_DEF: ffi::PyMethodDef = def(c"_ccall_callback", ccall_callback);
static mut CRETURN_DEF: ffi::PyMethodDef = def(c"_creturn_callback", creturn_callback);
static mut PYRESUME_DEF: ffi::PyMethodDef = def(c"_pyresume_callback", pyresume_callback);
static mut PYYIELD_DEF: ffi::PyMethodDef = def(c"_pyyield_callback", pyyield_callback);

/// The events `_lsprof` registers and the callback each gets. Async-aware profiling tells a
/// coroutine's resume from its start and its await from its return.
fn event_table(async_aware: bool) -> [(&'static str, *mut ffi::PyMethodDef); 9] {
    let (resume, suspend) = if async_aware {
        (addr_of_mut!(PYRESUME_DEF), addr_of_mut!(PYYIELD_DEF))
    } else {
        (addr_of_mut!(PYSTART_DEF), addr_of_mut!(PYRETURN_DEF))
    };
    let start = if async_aware {
        addr_of_mut!(PYRESUME_DEF)
    } else {
        addr_of_mut!(PYSTART_DEF)
    };
    [
        ("PY_START", start),
        ("PY_RESUME", resume),
        ("PY_THROW", resume),
        ("PY_RETURN", addr_of_mut!(PYRETURN_DEF)),
        ("PY_YIELD", suspend),
        ("PY_UNWIND", addr_of_mut!(PYRETURN_DEF)),
        ("CALL", addr_of_mut!(CCALL_DEF)),
        ("C_RETURN", addr_of_mut!(CRETURN_DEF)),
        ("C_RAISE", addr_of_mut!(CRETURN_DEF)),
    ]
}

pub fn install(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    let py = slf.py();
    let mon = monitoring(py)?;
    // Registered under cProfile's name: tools that ask `sys.monitoring.get_tool(2)` which
    // profiler holds the slot get the answer they would get from cProfile.
    if mon
        .call_method1("use_tool_id", (TOOL_ID, "cProfile"))
        .is_err()
    {
        return Err(PyValueError::new_err(
            "Another profiling tool is already active",
        ));
    }
    let registered = register(slf, &mon);
    if registered.is_err() {
        // Leave the slot as it was found rather than half-registered.
        let _ = uninstall(slf);
    }
    registered
}

fn register(slf: &Bound<'_, Profiler>, mon: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = slf.py();
    let events = mon.getattr("events")?;
    // SAFETY: short read of a flag.
    let table = event_table(unsafe { (*slf.get().state_ptr()).async_aware });
    let mut all = 0i64;
    for (name, def) in table {
        let ev: i64 = events.getattr(name)?.extract()?;
        // SAFETY: GIL held; `def` is a 'static PyMethodDef of a METH_FASTCALL function; the new
        // function holds a strong reference to the profiler, so the profiler outlives its
        // registration.
        let func = unsafe { ffi::PyCFunction_NewEx(def, slf.as_ptr(), std::ptr::null_mut()) };
        if func.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new, non-NULL reference.
        let func = unsafe { Bound::from_owned_ptr(py, func) };
        mon.call_method1("register_callback", (TOOL_ID, ev, func))?;
        all |= ev;
    }
    mon.call_method1("set_events", (TOOL_ID, all))?;
    Ok(())
}

/// Unregisters every callback, clears the events and frees the slot, going through every step
/// even when one fails (so a failure cannot leave the tool half-registered); reports the first
/// error.
pub fn uninstall(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    let py = slf.py();
    let mon = monitoring(py)?;
    let mut first_error: Option<PyErr> = None;
    let mut note = |r: PyResult<Bound<'_, PyAny>>| {
        if let Err(e) = r {
            first_error.get_or_insert(e);
        }
    };
    match mon.getattr("events") {
        Ok(events) => {
            for (name, _) in event_table(false) {
                note(events.getattr(name).and_then(|ev| {
                    mon.call_method1("register_callback", (TOOL_ID, ev, py.None()))
                }));
            }
        }
        Err(e) => note(Err(e)),
    }
    note(mon.call_method1("set_events", (TOOL_ID, 0)));
    note(mon.call_method1("free_tool_id", (TOOL_ID,)));
    first_error.map_or(Ok(()), Err)
}

/// The profiler a callback is bound to, or an error for a call with too few arguments (the
/// callbacks are reachable from Python through `sys.monitoring.register_callback`).
#[inline]
unsafe fn setup<'a>(
    slf: &'a *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    needed: ffi::Py_ssize_t,
) -> Option<(Python<'a>, &'a Profiler)> {
    // SAFETY: CPython calls the callbacks with the GIL held.
    let py = unsafe { Python::assume_attached() };
    if nargs < needed {
        PyTypeError::new_err(format!(
            "monitoring callback takes at least {needed} arguments"
        ))
        .restore(py);
        return None;
    }
    // SAFETY: `slf` is the profiler the function was bound to (see `install`), kept alive by it.
    let p = unsafe { Bound::ref_from_ptr(py, slf).cast_unchecked::<Profiler>() }.get();
    Some((py, p))
}

/// The profiler and the code object (first argument) of a `PY_*` event, or `None` with an error
/// set for a call with no argument.
///
/// # Safety
/// As for [`setup`]; `args` holds `nargs` live arguments.
#[inline]
unsafe fn code_event<'a>(
    slf: &'a *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> Option<(Python<'a>, &'a Profiler, *mut ffi::PyObject)> {
    // SAFETY: as for this function.
    let (py, p) = unsafe { setup(slf, nargs, 1) }?;
    // SAFETY: at least one argument (checked): the code object, alive for the event.
    Some((py, p, unsafe { *args }))
}

#[inline]
fn none() -> *mut ffi::PyObject {
    // SAFETY: Py_None is immortal on 3.12+; the new reference is returned to the caller.
    unsafe { ffi::Py_NewRef(ffi::Py_None()) }
}

unsafe extern "C" fn pystart_callback(
    slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: see `code_event`.
    let Some((py, p, code)) = (unsafe { code_event(&slf, args, nargs) }) else {
        return std::ptr::null_mut();
    };
    // SAFETY: GIL held; no borrow of the state is alive.
    unsafe {
        events::enter_call(py, p, code as usize, || {
            Ok(Bound::from_borrowed_ptr(py, code).unbind())
        })
    };
    none()
}

/// The frame the event happens in (the coroutine's own, for its resume and yield events).
fn current_frame() -> usize {
    // SAFETY: GIL held (callbacks run with it); a borrowed reference, used as an identity only.
    unsafe { ffi::PyEval_GetFrame() as usize }
}

unsafe extern "C" fn pyresume_callback(
    slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: see `code_event`.
    let Some((py, p, code)) = (unsafe { code_event(&slf, args, nargs) }) else {
        return std::ptr::null_mut();
    };
    let label = || {
        // SAFETY: GIL held; the code object is alive for the event.
        Ok(unsafe { Bound::from_borrowed_ptr(py, code) }.unbind())
    };
    // SAFETY: GIL held; no borrow of the state is alive.
    unsafe {
        if events::is_coroutine(py, p, code) {
            events::resume_call(py, p, code as usize, current_frame(), label);
        } else {
            events::enter_call(py, p, code as usize, label);
        }
    }
    none()
}

unsafe extern "C" fn pyyield_callback(
    slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: see `code_event`.
    let Some((py, p, code)) = (unsafe { code_event(&slf, args, nargs) }) else {
        return std::ptr::null_mut();
    };
    // SAFETY: GIL held; no borrow of the state is alive.
    unsafe {
        if events::is_coroutine(py, p, code) {
            events::suspend_call(py, p, code as usize, current_frame());
        } else {
            events::leave_call(py, p, code as usize);
        }
    }
    none()
}

unsafe extern "C" fn pyreturn_callback(
    slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: see `code_event`.
    let Some((py, p, code)) = (unsafe { code_event(&slf, args, nargs) }) else {
        return std::ptr::null_mut();
    };
    // SAFETY: GIL held; no borrow of the state is alive.
    unsafe { events::leave_call(py, p, code as usize) };
    none()
}

/// The builtin a CALL/C_RETURN/C_RAISE event is about, as `(PyMethodDef*, m_self, m_module)`:
/// a builtin function or method object, or a method descriptor called with a self argument of
/// its type (what `_lsprof` gets by binding it, without making the bound object per event).
#[inline]
unsafe fn builtin_of(
    p: &Profiler,
    callable: *mut ffi::PyObject,
    arg0: *mut ffi::PyObject,
) -> Option<(
    *mut ffi::PyMethodDef,
    *mut ffi::PyObject,
    *mut ffi::PyObject,
)> {
    // Calls of Python functions are the most frequent CALL events and never concern us; an
    // exact type test answers them before the subtype walk of PyCFunction_Check.
    // SAFETY: `callable` is alive for the event.
    let tp = unsafe { ffi::Py_TYPE(callable) };
    if tp == addr_of_mut!(ffi::PyFunction_Type) {
        return None;
    }
    // SAFETY: `callable` is alive for the event.
    if unsafe { ffi::PyCFunction_Check(callable) } != 0 {
        let f = callable as *mut ffi::PyCFunctionObject;
        // SAFETY: a PyCFunction (checked).
        return Some(unsafe { ((*f).m_ml, (*f).m_self, (*f).m_module) });
    }
    if tp != addr_of_mut!(ffi::PyMethodDescr_Type) {
        return None;
    }
    // SAFETY: short read of a field that never changes after construction.
    let missing = unsafe { (*p.state_ptr()).hook.missing.as_ptr() };
    if arg0 == missing {
        return None;
    }
    let d = callable as *mut ffi::PyMethodDescrObject;
    // Binding fails (and _lsprof skips the call) unless self is an instance of the descriptor's
    // type.
    // SAFETY: `d` is a method descriptor (checked); `arg0` is alive for the event.
    if unsafe { ffi::PyObject_TypeCheck(arg0, (*d).d_common.d_type) } == 0 {
        return None;
    }
    // SAFETY: as above.
    Some((unsafe { (*d).d_method }, arg0, std::ptr::null_mut()))
}

unsafe extern "C" fn ccall_callback(
    slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: see `setup`.
    let Some((py, p)) = (unsafe { setup(&slf, nargs, 4) }) else {
        return std::ptr::null_mut();
    };
    // SAFETY: four arguments (checked): code, offset, callable, arg0.
    let (callable, arg0) = unsafe { (*args.add(2), *args.add(3)) };
    // Calls of Python functions are most CALL events; only async-aware profiling looks at them
    // (a coroutine being created), so they are answered first.
    // SAFETY: `callable` is alive for the event.
    if unsafe { ffi::PyFunction_Check(callable) } != 0 {
        // SAFETY: short read of a flag.
        if unsafe { (*p.state_ptr()).async_aware } {
            // SAFETY: a function object (checked): its code is a borrowed, live reference.
            let code = unsafe { ffi::PyFunction_GetCode(callable) };
            // SAFETY: GIL held; no borrow of the state alive.
            unsafe {
                if events::is_coroutine(py, p, code) {
                    events::coroutine_created(p, code as usize);
                }
            }
        }
        return none();
    }
    // SAFETY: short read of a flag.
    if unsafe { (*p.state_ptr()).builtins } {
        // SAFETY: both are alive for the event.
        if let Some((ml, m_self, m_module)) = unsafe { builtin_of(p, callable, arg0) } {
            // SAFETY: GIL held; the label reads the live objects of this event.
            unsafe {
                events::enter_call(py, p, ml as usize, || {
                    builtin_label(py, ml, m_self, m_module)
                })
            };
        }
    }
    none()
}

unsafe extern "C" fn creturn_callback(
    slf: *mut ffi::PyObject,
    args: *mut *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    // SAFETY: see `setup`.
    let Some((py, p)) = (unsafe { setup(&slf, nargs, 4) }) else {
        return std::ptr::null_mut();
    };
    // SAFETY: short read of a flag.
    if unsafe { (*p.state_ptr()).builtins } {
        // SAFETY: four arguments (checked).
        let (callable, arg0) = unsafe { (*args.add(2), *args.add(3)) };
        // SAFETY: both are alive for the event.
        if let Some((ml, _, _)) = unsafe { builtin_of(p, callable, arg0) } {
            // SAFETY: GIL held; no borrow of the state is alive.
            unsafe { events::leave_call(py, p, ml as usize) };
        }
    }
    none()
}
