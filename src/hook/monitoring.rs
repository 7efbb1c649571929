//! Python 3.12+ front end: `sys.monitoring` under `PROFILER_ID`, with the nine events and the
//! event-to-action table that `_lsprof` registers, so the numbers match cProfile's.
//!
//! The callbacks are objects holding the profiler (`callback.rs`): the interpreter calls their
//! entry points by vectorcall with no argument tuple, and no Python code runs per event.
//!
//! Each event has three functions: `*_callback` (the fast path, a leaf ending in tail calls),
//! `*_event` (the arguments checked, off the fast path) and `*_general` (a function's first
//! event). They stay written out: the four triplets differ in their arguments, keys and fast
//! paths (descriptors, the async flag), so a macro would take as many parameters as lines it
//! saves, and the instruction counts (`bench/instructions.py`) are of exactly this code.

use std::ptr::addr_of_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use super::callback;
use crate::tracer::events;
use crate::tracer::hook_state::HookState;
use crate::tracer::labels::builtin_label;
use crate::tracer::state::{Profiler, State, FAST_NONE};

/// `sys.monitoring.PROFILER_ID`.
const TOOL_ID: u8 = 2;

static MISSING: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static METHOD_TYPE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl HookState {
    pub fn new() -> PyResult<Self> {
        Python::attach(|py| {
            // SAFETY: the address of a static object.
            NONE.store(unsafe { ffi::Py_None() }, Ordering::Relaxed);
            let missing = MISSING
                .get_or_try_init(py, || monitoring(py)?.getattr("MISSING").map(Bound::unbind))?;
            let method = METHOD_TYPE.get_or_try_init(py, || {
                py.import("types")?.getattr("MethodType").map(Bound::unbind)
            })?;
            Ok(HookState {
                missing: missing.clone_ref(py),
                method_type: method.as_ptr() as usize,
                callbacks: Vec::new(),
            })
        })
    }
}

/// Whether `tp`, the type of a CALL or C_RETURN event's callable, neither a Python function's
/// nor a builtin function's (told before), may be a builtin's: false for a class or a bound
/// method (of a Python function: CPython unpacks those before deciding how to call), which the
/// general path would do nothing with (async-aware profiling looks only at plain functions), so
/// the fast paths answer them.
///
/// # Safety
/// GIL held; `tp` is a live type; no borrow of the state alive.
#[inline(always)]
unsafe fn other_maybe_builtin(p: &Profiler, tp: *mut ffi::PyTypeObject) -> bool {
    // SAFETY: reading a field set at construction, a type's flags.
    unsafe {
        tp as usize != (*p.state_ptr()).hook.method_type
            && ffi::PyType_HasFeature(tp, ffi::Py_TPFLAGS_TYPE_SUBCLASS) == 0
    }
}

fn monitoring(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    py.import("sys")?.getattr("monitoring")
}

type Entry = ffi::vectorcallfunc;

/// The events `_lsprof` registers and the callback each gets, made for the profiler's flags:
/// the fast-path flag `fast` (see `events::enter_fast`), and for builtins' events whether they are
/// profiled. Async-aware profiling tells a coroutine's resume from its start and its await
/// from its return.
///
/// The entry points run the fast path of the mode they were made for without reading the flag:
/// every callback bound to a profiler is given the entry point of the profiler's flags when it
/// is made and whenever they change ([`fast_mode_changed`]).
fn event_table(async_aware: bool, fast: u8, builtins: bool) -> [(&'static str, Entry); 9] {
    let [pystart, pyreturn, ..] = events::for_fast_mode!(fast, fast_callbacks);
    let builtins_fast = if builtins { fast } else { FAST_NONE };
    let [_, _, ccall_plain, ccall_async, creturn] =
        events::for_fast_mode!(builtins_fast, fast_callbacks);
    let ccall = if async_aware {
        ccall_async
    } else {
        ccall_plain
    };
    let (start, resume, suspend): (Entry, Entry, Entry) = if async_aware {
        (pyresume_callback, pyresume_callback, pyyield_callback)
    } else {
        (pystart, pystart, pyreturn)
    };
    [
        ("PY_START", start),
        ("PY_RESUME", resume),
        ("PY_THROW", resume),
        ("PY_RETURN", pyreturn),
        ("PY_YIELD", suspend),
        ("PY_UNWIND", pyreturn),
        ("CALL", ccall),
        ("C_RETURN", creturn),
        ("C_RAISE", creturn),
    ]
}

/// The callbacks with fast paths, made for the fast-path flag `MODE`: PY_START, PY_RETURN, CALL
/// (without and with async-aware profiling, which cannot change while they are installed) and
/// C_RETURN.
fn fast_callbacks<const MODE: u8>() -> [Entry; 5] {
    [
        pystart_callback::<MODE>,
        pyreturn_callback::<MODE>,
        ccall_callback::<MODE, false>,
        ccall_callback::<MODE, true>,
        creturn_callback::<MODE>,
    ]
}

pub fn install(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    let py = slf.py();
    let mon = monitoring(py)?;
    // Registered under cProfile's name: tools that ask `sys.monitoring.get_tool(2)` which
    // profiler holds the slot get the answer they would get from cProfile.
    if let Err(e) = mon.call_method1("use_tool_id", (TOOL_ID, "cProfile")) {
        // 3.14's _lsprof lets sys.monitoring's own error through ("tool 2 is already in use").
        if cfg!(Py_3_14) {
            return Err(e);
        }
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
    let events = mon.getattr("events")?;
    let table = slf.get().read(state_table);
    let mut all = 0i64;
    for (i, (name, entry)) in table.into_iter().enumerate() {
        let ev: i64 = events.getattr(name)?.extract()?;
        // The callback holds a strong reference to the profiler, so the profiler outlives its
        // registration.
        let func = callback::new(slf, i, entry)?;
        mon.call_method1("register_callback", (TOOL_ID, ev, func))?;
        all |= ev;
    }
    mon.call_method1("set_events", (TOOL_ID, all))?;
    Ok(())
}

/// The event table for the state's flags.
fn state_table(st: &State) -> [(&'static str, Entry); 9] {
    event_table(st.async_aware, st.fast, st.builtins)
}

/// Gives every callback bound to the profiler of `st` the entry point for its event under the
/// profiler's flags as they are now: called whenever the fast-path flag or the builtins flag may
/// have changed (`mode::update_fast_mode`). The flags cannot change during a fast path (it calls
/// nothing), so an entry point never runs a fast path of a mode not the profiler's.
pub fn fast_mode_changed(st: &mut State) {
    let table = state_table(st);
    for &cb in &st.hook.callbacks {
        // SAFETY: the list holds live callbacks bound to this profiler (each takes itself off
        // when cleared); their events are indexes of this table. GIL held (state access).
        unsafe {
            let cb = cb as *mut ffi::PyObject;
            callback::set_entry(cb, table[callback::event(cb)].1);
        }
    }
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
            for (name, _) in event_table(false, FAST_NONE, false) {
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

/// The profiler a callback is bound to and the number of arguments, or what the callback
/// returns at once: NULL with an error set for a call with too few or keyword arguments (the
/// callbacks are reachable from Python through `sys.monitoring.register_callback`), None for a
/// callback the garbage collector cleared.
///
/// # Safety
/// `cb` is one of this module's callbacks, called with the GIL held.
#[inline(always)]
unsafe fn setup<'a>(
    cb: *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
    needed: ffi::Py_ssize_t,
) -> Result<(Python<'a>, &'a Profiler), *mut ffi::PyObject> {
    // SAFETY: `cb` is one of this module's callbacks, all made by `callback::new`, called
    // with the GIL held (function contract): what `unpack` asks.
    let (slf, nargs) = unsafe { callback::unpack(cb, nargsf, kwnames) }?;
    // SAFETY: CPython calls the callbacks with the GIL held.
    let py = unsafe { Python::assume_attached() };
    if nargs < needed {
        return Err(too_few_arguments(py, needed));
    }
    // SAFETY: `slf` is the profiler the callback was bound to (see `register`), kept alive by it.
    let p = unsafe { Bound::ref_from_ptr(py, slf).cast_unchecked::<Profiler>() }.get();
    Ok((py, p))
}

#[cold]
#[inline(never)]
fn too_few_arguments(py: Python<'_>, needed: ffi::Py_ssize_t) -> *mut ffi::PyObject {
    PyTypeError::new_err(format!(
        "monitoring callback takes at least {needed} arguments"
    ))
    .restore(py);
    std::ptr::null_mut()
}

/// The profiler and the code object (first argument) of a `PY_*` event, or what to return.
///
/// # Safety
/// As for [`setup`]; `args` holds the call's live arguments.
#[inline(always)]
unsafe fn code_event<'a>(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> Result<(Python<'a>, &'a Profiler, *mut ffi::PyObject), *mut ffi::PyObject> {
    // SAFETY: `cb` is one of this module's callbacks called with the GIL held (function
    // contract, `setup`'s own).
    let (py, p) = unsafe { setup(cb, nargsf, kwnames, 1) }?;
    // SAFETY: at least one argument (checked): the code object, alive for the event.
    Ok((py, p, unsafe { *args }))
}

/// None, as a new reference: None is immortal on 3.12+, where increments and decrements leave
/// its count as it is, so the increment is skipped (an event less to pay for).
#[inline(always)]
fn none() -> *mut ffi::PyObject {
    NONE.load(Ordering::Relaxed)
}

/// None's address, stored by [`HookState::new`] before any callback can run. Read from here
/// rather than through the interpreter's symbol: the optimizer reads that once at a
/// callback's start and keeps it in a saved register through the whole fast path, where an
/// atomic load stays at the return that needs it.
static NONE: AtomicPtr<ffi::PyObject> = AtomicPtr::new(std::ptr::null_mut());

/// The profiler of a callback called with at least `needed` positional arguments and no
/// keywords; None sends the event the general way, which reports misuse. (A cleared callback's
/// entry point is no longer one of these: see `callback::profiler`.)
///
/// # Safety
/// `cb` is one of this module's callbacks, called by CPython through its entry point, with the
/// GIL held.
#[inline(always)]
unsafe fn fast_profiler<'a>(
    cb: *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
    needed: usize,
) -> Option<&'a Profiler> {
    // Two branches, each marked cold: one test of both conditions (what the optimizer makes of
    // `a || b` otherwise) takes more instructions on every event.
    if !kwnames.is_null() {
        std::hint::cold_path();
        return None;
    }
    // The count without the offset flag (the top bit), shifted out: one instruction fewer
    // than masking it with a 64-bit constant.
    if nargsf << 1 < needed << 1 {
        std::hint::cold_path();
        return None;
    }
    // SAFETY: `cb` is one of this module's callbacks, made by `callback::new`, whose entry
    // point CPython is calling with the GIL held (function contract): so it is bound.
    Some(unsafe { callback::profiler(cb) })
}

// The PY_START (and PY_RESUME, PY_THROW) callback: the start of a function seen before is
// answered here with no call. Every other event goes on by a tail call that needs only values
// already in hand, so no register has to be kept across a call: the callback is a leaf. The
// functions events are handed on to are `extern "C"` (they cannot unwind), or the hand-over
// needs a landing pad and stops being a jump (see `legacy::callbacks::profile_hook`).
unsafe extern "C" fn pystart_callback<const MODE: u8>(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: `cb` is one of this module's callbacks and `args` holds at least one argument
    // (tested), the event's live code object; `enter_fast_as` runs with no borrow alive, and the
    // profiler's fast-path flag is `MODE` (entry points follow it: `fast_mode_changed`).
    unsafe {
        let Some(p) = fast_profiler(cb, nargsf, kwnames, 1) else {
            return pystart_event(cb, args, nargsf, kwnames);
        };
        let code = *args;
        if events::enter_fast_as::<MODE>(p, code as usize) {
            return none();
        }
        pystart_general::<true>(p, code)
    }
}

#[inline(never)]
unsafe extern "C" fn pystart_event(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: see `code_event`.
    match unsafe { code_event(cb, args, nargsf, kwnames) } {
        // SAFETY: the event's profiler and live code object.
        Ok((_, p, code)) => unsafe { pystart_general::<false>(p, code) },
        Err(ret) => ret,
    }
}

/// A PY_START event of `p` for `code` the fast path did not answer (`TRIED`: the fast path
/// declined it; else it was not tried).
///
/// # Safety
/// GIL held; `code` is the event's live code object; no borrow of the state is alive.
#[inline(never)]
unsafe extern "C" fn pystart_general<const TRIED: bool>(
    p: &Profiler,
    code: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls the callbacks with the GIL held.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: GIL held, `p` the event's live profiler with no borrow of its state alive, and
    // `code` alive for the event (function contract), so the label may borrow it.
    let label = || Ok(unsafe { Bound::from_borrowed_ptr(py, code) }.unbind());
    // SAFETY: as above.
    unsafe {
        events::enter_call::<TRIED>(py, p, code as usize, label);
    }
    none()
}

/// The frame the event happens in (the coroutine's own, for its resume and yield events).
fn current_frame() -> usize {
    // SAFETY: GIL held (callbacks run with it); a borrowed reference, used as an identity only.
    unsafe { ffi::PyEval_GetFrame() as usize }
}

unsafe extern "C" fn pyresume_callback(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: see `code_event`.
    let (py, p, code) = match unsafe { code_event(cb, args, nargsf, kwnames) } {
        Ok(v) => v,
        Err(ret) => return ret,
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
            events::enter_call::<false>(py, p, code as usize, label);
        }
    }
    none()
}

unsafe extern "C" fn pyyield_callback(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: see `code_event`.
    let (py, p, code) = match unsafe { code_event(cb, args, nargsf, kwnames) } {
        Ok(v) => v,
        Err(ret) => return ret,
    };
    // SAFETY: GIL held; no borrow of the state is alive.
    unsafe {
        if events::is_coroutine(py, p, code) {
            events::suspend_call(py, p, code as usize, current_frame());
        } else {
            events::leave_call::<false>(py, p, code as usize);
        }
    }
    none()
}

// The PY_RETURN (and PY_UNWIND, and PY_YIELD unless async-aware) callback: the return of the
// call on top is answered here with no call; the rest go on as in `pystart_callback`.
unsafe extern "C" fn pyreturn_callback<const MODE: u8>(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: as in `pystart_callback`.
    unsafe {
        let Some(p) = fast_profiler(cb, nargsf, kwnames, 1) else {
            return pyreturn_event(cb, args, nargsf, kwnames);
        };
        let code = *args;
        if events::leave_fast_as::<MODE>(p, code as usize) {
            return none();
        }
        pyreturn_general::<true>(p, code)
    }
}

#[inline(never)]
unsafe extern "C" fn pyreturn_event(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: see `code_event`.
    match unsafe { code_event(cb, args, nargsf, kwnames) } {
        // SAFETY: the event's profiler and live code object.
        Ok((_, p, code)) => unsafe { pyreturn_general::<false>(p, code) },
        Err(ret) => ret,
    }
}

/// A PY_RETURN event of `p` for `code` the fast path did not answer (`TRIED` as for
/// [`pystart_general`]).
///
/// # Safety
/// As for [`pystart_general`].
#[inline(never)]
unsafe extern "C" fn pyreturn_general<const TRIED: bool>(
    p: &Profiler,
    code: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls the callbacks with the GIL held.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: GIL held, `p` the event's live profiler with no borrow of its state alive
    // (function contract).
    unsafe {
        events::leave_call::<TRIED>(py, p, code as usize);
    }
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

/// The key of a method descriptor called on an object of exactly its type (the common case:
/// `list.append`, `str.join`, ...), or None, which leaves the event to [`builtin_of`].
///
/// # Safety
/// `callable` and `arg0` are the event's live arguments, `callable` of exactly
/// `PyMethodDescr_Type`; GIL held.
#[inline(always)]
unsafe fn descriptor_key(
    p: &Profiler,
    callable: *mut ffi::PyObject,
    arg0: *mut ffi::PyObject,
) -> Option<usize> {
    // SAFETY: `callable` and `arg0` are alive for the event; the fields read are set at
    // construction; `missing` is a short read of a field that never changes after it.
    unsafe {
        let d = callable as *mut ffi::PyMethodDescrObject;
        if ffi::Py_TYPE(arg0) == (*d).d_common.d_type
            && arg0 != (*p.state_ptr()).hook.missing.as_ptr()
        {
            return Some((*d).d_method as usize);
        }
        None
    }
}

/// The key of a builtin function or method object (`len`, `obj.method` bound to its object).
///
/// # Safety
/// `callable` is a live object of exactly `PyCFunction_Type`.
#[inline(always)]
unsafe fn function_key(callable: *mut ffi::PyObject) -> usize {
    // SAFETY: `callable` is a live object of exactly `PyCFunction_Type` (function contract),
    // so it has a `PyCFunctionObject`'s layout: a read of its method definition, set at
    // construction.
    unsafe { (*(callable as *mut ffi::PyCFunctionObject)).m_ml as usize }
}

// CALL events: the ones for Python functions (answered by their PY_START, or with `ASYNC`
// looked at for a coroutine being created), for classes and bound methods, and for builtins
// seen before are answered here, with no call; the rest go on by a tail call, as in
// `pystart_callback`. (With builtins not profiled, `MODE` is `FAST_NONE`: see `event_table`.)
unsafe extern "C" fn ccall_callback<const MODE: u8, const ASYNC: bool>(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: `cb` is one of this module's callbacks and `args` holds at least four arguments
    // (tested): code, offset, callable, arg0, live for the event. Short reads of flags;
    // `enter_fast_as` runs with no borrow alive, and the profiler's fast-path flag is `MODE` (entry
    // points follow it: `fast_mode_changed`).
    unsafe {
        let Some(p) = fast_profiler(cb, nargsf, kwnames, 4) else {
            return ccall_event(cb, args, nargsf, kwnames);
        };
        let (callable, arg0) = (*args.add(2), *args.add(3));
        let tp = ffi::Py_TYPE(callable);
        if tp == addr_of_mut!(ffi::PyFunction_Type) {
            if !ASYNC {
                return none();
            }
            return ccall_general::<false>(p, callable, arg0);
        }
        // Handed on with the arguments where they came (the first argument read only where it
        // is needed): fewer moves and loads on every builtin's call.
        if tp == addr_of_mut!(ffi::PyCFunction_Type) {
            return ccall_function::<MODE>(p, args, callable);
        }
        if tp == addr_of_mut!(ffi::PyMethodDescr_Type) {
            return ccall_descriptor::<MODE>(p, args, callable);
        }
        if !other_maybe_builtin(p, tp) {
            return none();
        }
        ccall_general::<false>(p, callable, arg0)
    }
}

/// A CALL event of a builtin function or method object, handed on by `ccall_callback`: kept
/// out of it, where the fast path's registers would be saved on every CALL event (a Python
/// function's too).
///
/// # Safety
/// GIL held; `args` holds the event's four live arguments, of which `callable` is the third,
/// of exactly `PyCFunction_Type`; no borrow of the state alive.
#[inline(never)]
unsafe extern "C" fn ccall_function<const MODE: u8>(
    p: &Profiler,
    args: *const *mut ffi::PyObject,
    callable: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held, `callable` a live `PyCFunction_Type` object and `args` the event's
    // four live arguments (function contract); `enter_fast_as` runs with no borrow alive, and
    // the profiler's fast-path flag is `MODE` (entry points follow it: `fast_mode_changed`).
    unsafe {
        if events::enter_fast_as::<MODE>(p, function_key(callable)) {
            return none();
        }
        ccall_general::<true>(p, callable, *args.add(3))
    }
}

/// A CALL event of a method descriptor, handed on by `ccall_callback` (as [`ccall_function`]).
///
/// # Safety
/// As for [`ccall_function`], with `callable` of exactly `PyMethodDescr_Type`.
#[inline(never)]
unsafe extern "C" fn ccall_descriptor<const MODE: u8>(
    p: &Profiler,
    args: *const *mut ffi::PyObject,
    callable: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: GIL held, `args` the event's four live arguments and `callable` a live object
    // of exactly `PyMethodDescr_Type` (function contract: `ccall_callback` hands on method
    // descriptors only);
    // `enter_fast_as` runs with no borrow alive, and the profiler's fast-path flag is `MODE` (entry
    // points follow it: `fast_mode_changed`).
    unsafe {
        let arg0 = *args.add(3);
        if let Some(key) = descriptor_key(p, callable, arg0) {
            if events::enter_fast_as::<MODE>(p, key) {
                return none();
            }
            return ccall_general::<true>(p, callable, arg0);
        }
        ccall_general::<false>(p, callable, arg0)
    }
}

#[inline(never)]
unsafe extern "C" fn ccall_event(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: see `setup`.
    let (_, p) = match unsafe { setup(cb, nargsf, kwnames, 4) } {
        Ok(v) => v,
        Err(ret) => return ret,
    };
    // SAFETY: four arguments (checked): code, offset, callable, arg0, live for the event.
    unsafe { ccall_general::<false>(p, *args.add(2), *args.add(3)) }
}

/// A CALL event of `p` for `callable` (first argument `arg0`) the fast path did not answer
/// (`TRIED`: it declined the builtin's key; else it was not tried).
///
/// # Safety
/// GIL held; `callable` and `arg0` are the event's live arguments; no borrow of the state alive.
#[inline(never)]
unsafe extern "C" fn ccall_general<const TRIED: bool>(
    p: &Profiler,
    callable: *mut ffi::PyObject,
    arg0: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls the callbacks with the GIL held.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: `callable` is alive for the event.
    if unsafe { ffi::PyFunction_Check(callable) } != 0 {
        if p.read(|s| s.async_aware) {
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
    if p.read(|s| s.builtins) {
        // SAFETY: both are alive for the event.
        if let Some((ml, m_self, m_module)) = unsafe { builtin_of(p, callable, arg0) } {
            // SAFETY: GIL held; the label reads the live objects of this event.
            let label = || unsafe { builtin_label(py, ml, m_self, m_module) };
            // SAFETY: GIL held; no borrow of the state alive.
            unsafe {
                events::enter_call::<TRIED>(py, p, ml as usize, label);
            }
        }
    }
    none()
}

// C_RETURN and C_RAISE events: the return of a builtin call opened on a cached path is
// answered here with no call, and those of classes and bound methods at once; the rest go on
// as in `ccall_callback`.
unsafe extern "C" fn creturn_callback<const MODE: u8>(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: as in `ccall_callback`.
    unsafe {
        let Some(p) = fast_profiler(cb, nargsf, kwnames, 4) else {
            return creturn_event(cb, args, nargsf, kwnames);
        };
        let (callable, arg0) = (*args.add(2), *args.add(3));
        let tp = ffi::Py_TYPE(callable);
        if tp == addr_of_mut!(ffi::PyCFunction_Type) {
            let key = function_key(callable);
            if events::leave_fast_as::<MODE>(p, key) {
                return none();
            }
            // Handed on with the key in hand: the event's arguments need not stay live across
            // the fast path (fewer registers saved on every event).
            return creturn_key(p, key);
        }
        if tp == addr_of_mut!(ffi::PyMethodDescr_Type) {
            return creturn_descriptor::<MODE>(p, callable, arg0);
        }
        if !other_maybe_builtin(p, tp) {
            return none();
        }
        creturn_general(p, callable, arg0)
    }
}

/// A C_RETURN/C_RAISE event of a method descriptor, handed on by `creturn_callback` (as
/// `ccall_descriptor` is by `ccall_callback`; one path for both kinds of builtin shared the
/// load of the key, an instruction more for the more frequent builtin functions).
///
/// # Safety
/// As for [`ccall_general`]; `callable` is of exactly `PyMethodDescr_Type`.
#[inline(never)]
unsafe extern "C" fn creturn_descriptor<const MODE: u8>(
    p: &Profiler,
    callable: *mut ffi::PyObject,
    arg0: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: as in `ccall_descriptor`.
    unsafe {
        match descriptor_key(p, callable, arg0) {
            Some(key) => {
                if events::leave_fast_as::<MODE>(p, key) {
                    return none();
                }
                creturn_key(p, key)
            }
            None => creturn_general(p, callable, arg0),
        }
    }
}

/// A C_RETURN/C_RAISE event of the builtin `key` (as [`function_key`] or [`descriptor_key`]
/// tell it, which is what [`builtin_of`] gives for the same event) that the fast path did not
/// answer (it declined the key): nothing unless builtins are profiled (the fast path does not
/// ask).
///
/// # Safety
/// As for [`ccall_general`].
#[inline(never)]
unsafe extern "C" fn creturn_key(p: &Profiler, key: usize) -> *mut ffi::PyObject {
    if p.read(|s| s.builtins) {
        // SAFETY: CPython calls the callbacks with the GIL held; no borrow of the state is
        // alive (function contract).
        unsafe { events::leave_call::<true>(Python::assume_attached(), p, key) };
    }
    none()
}

#[inline(never)]
unsafe extern "C" fn creturn_event(
    cb: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: see `setup`.
    let (_, p) = match unsafe { setup(cb, nargsf, kwnames, 4) } {
        Ok(v) => v,
        Err(ret) => return ret,
    };
    // SAFETY: four arguments (checked), live for the event.
    unsafe { creturn_general(p, *args.add(2), *args.add(3)) }
}

/// A C_RETURN/C_RAISE event the fast path did not answer.
///
/// # Safety
/// As for [`ccall_general`].
#[inline(never)]
unsafe extern "C" fn creturn_general(
    p: &Profiler,
    callable: *mut ffi::PyObject,
    arg0: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls the callbacks with the GIL held.
    let py = unsafe { Python::assume_attached() };
    if p.read(|s| s.builtins) {
        // SAFETY: both are alive for the event.
        if let Some((ml, _, _)) = unsafe { builtin_of(p, callable, arg0) } {
            // SAFETY: GIL held; no borrow of the state is alive.
            unsafe { events::leave_call::<false>(py, p, ml as usize) };
        }
    }
    none()
}
