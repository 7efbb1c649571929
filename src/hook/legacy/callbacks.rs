//! The C profile hook itself (`profile_hook`, one per fast-path mode): the common events
//! answered on its fast paths, the others handed on to `tracer::events`, a coroutine's with
//! `async_aware` as a start, resume, await or end.

use std::os::raw::c_int;

use pyo3::ffi;
use pyo3::prelude::*;

use super::frames::{first_start, frame_code, left_suspended};
use crate::tracer::events;
use crate::tracer::labels::builtin_label;
use crate::tracer::state::{Profiler, FAST_NONE};

/// A coroutine's call or return event with `async_aware`: a call is its start or a resume, a
/// return is an await when the coroutine is left suspended, else its end.
///
/// # Safety
/// GIL held; `frame` and `code` are the event's live frame and its code object; on 3.10 the
/// frame layout was checked (`frames::check_frame_layout`, by `__init__` before accepting
/// `async_aware`).
unsafe fn async_event(
    py: Python<'_>,
    p: &Profiler,
    frame: *mut ffi::PyFrameObject,
    code: *mut ffi::PyObject,
    what: c_int,
    label: impl FnOnce() -> PyResult<Py<PyAny>>,
) {
    if what == ffi::PyTrace_CALL {
        // SAFETY: GIL held, `frame` and `code` the event's live frame and code object, and on
        // 3.10 the frame layout checked (function contract): what `first_start` asks.
        if unsafe { first_start(py, p, frame, code) } {
            // A first start, whatever a coroutine that had this frame's address and finished
            // unseen (on an unhooked thread) left set aside.
            // SAFETY: GIL held; no borrow of the state alive.
            unsafe { events::close_stale(p, frame as usize) };
        }
        // SAFETY: GIL held and no borrow of the state alive (the hook holds none across its
        // calls); `p` is the hook's live profiler.
        return unsafe { events::resume_call(py, p, code as usize, frame as usize, label) };
    }
    // SAFETY: GIL held, `frame` the event's live frame, on 3.10 with the checked layout
    // (function contract): what `left_suspended` asks.
    let suspended = unsafe { left_suspended(py, frame) };
    // SAFETY: GIL held and no borrow of the state alive, as for `resume_call` above.
    unsafe {
        if suspended {
            events::suspend_call(py, p, code as usize, frame as usize);
        } else {
            events::leave_call::<false>(py, p, code as usize);
        }
    }
}

/// The profile hook made for the fast-path flag the profiler `obj` has now (see
/// `events::enter_fast`): what every thread it profiles is given.
///
/// # Safety
/// `obj` is a live `Profiler`; GIL held, no borrow of its state alive.
pub(super) unsafe fn hook_of(obj: *mut ffi::PyObject) -> ffi::Py_tracefunc {
    // SAFETY: `obj` is a live `Profiler`, with the GIL held (function contract).
    let fast = unsafe { hook_profiler(&obj) }.1.read(|s| s.fast);
    events::for_fast_mode!(fast, hook_for)
}

fn hook_for<const MODE: u8>() -> ffi::Py_tracefunc {
    profile_hook::<MODE>
}

/// The profiler a profile hook call is for (`obj`), with the GIL token.
///
/// # Safety
/// Called by the profile hook with its own `obj`: the GIL is held and `obj` is the profiler
/// installed with the hook, kept alive by the thread state.
#[inline(always)]
unsafe fn hook_profiler(obj: &*mut ffi::PyObject) -> (Python<'_>, &Profiler) {
    // SAFETY: the profile hook runs with the GIL held, and `obj` is the `Profiler` installed
    // with it, which the thread state keeps alive (function contract): so the unchecked cast
    // is to its own type, and the reference lives as long as the call.
    unsafe {
        let py = Python::assume_attached();
        (
            py,
            Bound::ref_from_ptr(py, obj)
                .cast_unchecked::<Profiler>()
                .get(),
        )
    }
}

// The profile hook. The common events (a function seen before, called from one seen calling it
// before) are answered on the fast paths, with no call; every other event goes on by a tail
// call with values already in hand: `code_event` or `c_event` for one a fast path declined,
// `profile_event` for the rest. Those are `extern "C"` too: a call from a function that must
// not unwind (as `extern "C"` ones) to one that may needs a landing pad to abort at, and then
// cannot be a jump; between two that cannot unwind it is one.
unsafe extern "C" fn profile_hook<const MODE: u8>(
    obj: *mut ffi::PyObject,
    frame: *mut ffi::PyFrameObject,
    what: c_int,
    arg: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: the interpreter's own arguments.
    let (_, p) = unsafe { hook_profiler(&obj) };
    let st = p.state_ptr();
    // SAFETY: short reads of flags with no borrow alive; a fast-path flag other than FAST_NONE
    // (this hook's MODE, tested by the fast paths) means the frame's code may be read directly
    // (`update_fast_mode` asks `reads_frame_code`) and async_aware is off; `frame` is the event's
    // live frame and `arg` the called object of a C event. The fast paths run with no borrow
    // alive.
    unsafe {
        if MODE != FAST_NONE && (*st).fast == MODE {
            // Tests in the order of the events' frequency, written so that they stay tests
            // (as a match on four values they became a jump table: more instructions, and an
            // indirect jump, per event). C_CALL (4) and C_RETURN (6) are the two events whose
            // number with bit 1 set is 6.
            const _: () = assert!(ffi::PyTrace_C_CALL | 2 == 6 && ffi::PyTrace_C_RETURN | 2 == 6);
            // A fast path that declines hands the event on with what it holds already: a
            // Python event's code object (no frame: async_aware is off), a C event's called
            // object, the kind as a constant. Fewer values live across the fast path, which
            // then needs fewer registers saved.
            if what == ffi::PyTrace_CALL {
                let code = frame_code(frame);
                if events::enter_fast::<MODE>(p, code as usize) {
                    return 0;
                }
                return code_event::<{ ffi::PyTrace_CALL }, true>(obj, code);
            }
            if what == ffi::PyTrace_RETURN {
                let code = frame_code(frame);
                if events::leave_fast::<MODE>(p, code as usize) {
                    return 0;
                }
                return code_event::<{ ffi::PyTrace_RETURN }, true>(obj, code);
            }
            if what | 2 == 6
                && (*st).builtins
                && ffi::Py_TYPE(arg) == &raw mut ffi::PyCFunction_Type
            {
                let ml = (*(arg as *mut ffi::PyCFunctionObject)).m_ml as usize;
                if what == ffi::PyTrace_C_CALL {
                    if events::enter_fast::<MODE>(p, ml) {
                        return 0;
                    }
                    return c_event::<{ ffi::PyTrace_C_CALL }>(obj, arg);
                }
                if events::leave_fast::<MODE>(p, ml) {
                    return 0;
                }
                return c_event::<{ ffi::PyTrace_C_RETURN }>(obj, arg);
            }
        }
        profile_event(obj, frame, what, arg)
    }
}

/// A call or return of Python code, not a coroutine's with async_aware, by its code object:
/// what the fast paths hand on (the code read from the frame; `TRIED`: the fast path declined
/// it) and [`profile_event`] does.
///
/// # Safety
/// `obj` as the interpreter passed it to the hook, for an event of kind `WHAT` (a call or a
/// return) whose frame runs `code`, which the frame keeps alive.
#[inline(never)]
unsafe extern "C" fn code_event<const WHAT: c_int, const TRIED: bool>(
    obj: *mut ffi::PyObject,
    code: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: the interpreter's own argument.
    let (py, p) = unsafe { hook_profiler(&obj) };
    // SAFETY: GIL held; the code object is alive for the event.
    let label = || Ok(unsafe { Bound::from_borrowed_ptr(py, code) }.unbind());
    // SAFETY: GIL held; no borrow of the profiler's state is alive; the code object is alive
    // for the event.
    unsafe {
        if WHAT == ffi::PyTrace_CALL {
            events::enter_call::<TRIED>(py, p, code as usize, label);
        } else {
            events::leave_call::<TRIED>(py, p, code as usize);
        }
    }
    // Opaque to the optimizer: a return value it could see is always 0 would be put after the
    // call in `profile_hook`, which then stops being a tail call and saves registers on every
    // event, fast paths included.
    std::hint::black_box(0)
}

/// A call or return of a builtin function (`arg`, exactly a `PyCFunction`, with builtins
/// profiled) whose fast path declined it: [`profile_event`]'s C case, without a second try of
/// the cached path where the fast path made its test.
///
/// # Safety
/// `obj` and `arg` as the interpreter passed them to the hook, for an event of kind `WHAT` (a
/// C call or return); `arg` is a `PyCFunction`.
#[inline(never)]
unsafe extern "C" fn c_event<const WHAT: c_int>(
    obj: *mut ffi::PyObject,
    arg: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: the interpreter's own argument.
    let (py, p) = unsafe { hook_profiler(&obj) };
    let f = arg as *mut ffi::PyCFunctionObject;
    // SAFETY: `arg` is a live PyCFunction (function contract), so its fields can be read.
    let ml = unsafe { (*f).m_ml };
    // SAFETY: GIL held; no borrow of the state alive; the label reads the live function's
    // fields.
    unsafe {
        if WHAT == ffi::PyTrace_C_CALL {
            events::enter_call::<true>(py, p, ml as usize, || {
                builtin_label(py, ml, (*f).m_self, (*f).m_module)
            });
        } else {
            events::leave_call::<true>(py, p, ml as usize);
        }
    }
    // Opaque, as in `code_event`.
    std::hint::black_box(0)
}

/// Every event the fast paths do not answer.
///
/// # Safety
/// The hook's own arguments, as the interpreter passed them.
#[inline(never)]
unsafe extern "C" fn profile_event(
    obj: *mut ffi::PyObject,
    frame: *mut ffi::PyFrameObject,
    what: c_int,
    arg: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: the interpreter's own arguments.
    let (py, p) = unsafe { hook_profiler(&obj) };
    match what {
        ffi::PyTrace_CALL | ffi::PyTrace_RETURN => {
            // SAFETY: `frame` is the live frame of the event; PyFrame_GetCode returns a new
            // reference, released below after the event is handled.
            let code = unsafe { ffi::PyFrame_GetCode(frame) } as *mut ffi::PyObject;
            let label = || {
                // SAFETY: GIL held; the code object is alive for the event.
                Ok(unsafe { Bound::from_borrowed_ptr(py, code) }.unbind())
            };
            // SAFETY: GIL held, no borrow of the state alive, `code` the frame's live code
            // object.
            let coroutine =
                p.read(|s| s.async_aware) && unsafe { events::is_coroutine(py, p, code) };
            if coroutine {
                // SAFETY: GIL held; `frame` is the coroutine's live frame.
                unsafe { async_event(py, p, frame, code, what, label) };
            } else if what == ffi::PyTrace_CALL {
                // SAFETY: the hook's own `obj`; `code` is the frame's, alive for the event.
                unsafe { code_event::<{ ffi::PyTrace_CALL }, false>(obj, code) };
            } else {
                // SAFETY: as above.
                unsafe { code_event::<{ ffi::PyTrace_RETURN }, false>(obj, code) };
            }
            // SAFETY: releases the reference PyFrame_GetCode gave.
            unsafe { ffi::Py_DECREF(code) };
        }
        ffi::PyTrace_C_CALL | ffi::PyTrace_C_RETURN | ffi::PyTrace_C_EXCEPTION => {
            let builtins = p.read(|s| s.builtins);
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
                    events::enter_call::<false>(py, p, ml as usize, || {
                        builtin_label(py, ml, (*f).m_self, (*f).m_module)
                    })
                };
            } else {
                // SAFETY: GIL held.
                unsafe { events::leave_call::<false>(py, p, ml as usize) };
            }
        }
        _ => {}
    }
    // Opaque, as in `code_event`.
    std::hint::black_box(0)
}
