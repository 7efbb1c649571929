//! The frame layouts read without a call (3.11's frame and interpreter frame, 3.10's frame
//! object), each checked on the running interpreter before it is read, and what the async path
//! reads through them: whether a coroutine's event is its first start, or leaves it suspended.

#[cfg(not(Py_3_11))]
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::tracer::state::Profiler;

/// Whether [`frame_code`] may read a frame's code object (its layout was checked once, on the
/// first profiler made). The fast paths need it, as they make no call.
static FRAME_CODE_READ: AtomicBool = AtomicBool::new(false);
static FRAME_CODE_CHECKED: pyo3::sync::PyOnceLock<bool> = pyo3::sync::PyOnceLock::new();

/// Checks once, on the first profiler made, whether [`frame_code`] may read frames' code
/// objects on this interpreter; [`reads_frame_code`] then says so.
pub(super) fn check_code_layout_once(py: Python<'_>) -> PyResult<()> {
    let ok = FRAME_CODE_CHECKED.get_or_try_init(py, || check_code_layout(py))?;
    FRAME_CODE_READ.store(*ok, Ordering::Relaxed);
    Ok(())
}

/// Whether the hook may read code objects out of frames itself ([`frame_code`]).
pub fn reads_frame_code() -> bool {
    FRAME_CODE_READ.load(Ordering::Relaxed)
}

/// The head of 3.11's frame object (`struct _frame`): it points to the interpreter frame,
/// whose fifth field is the code object (`struct _PyInterpreterFrame`).
#[cfg(Py_3_11)]
#[repr(C)]
struct Frame311 {
    ob_base: ffi::PyObject,
    f_back: *mut ffi::PyObject,
    f_frame: *const InterpreterFrame311,
}

#[cfg(Py_3_11)]
#[repr(C)]
struct InterpreterFrame311 {
    f_func: *mut ffi::PyObject,
    f_globals: *mut ffi::PyObject,
    f_builtins: *mut ffi::PyObject,
    f_locals: *mut ffi::PyObject,
    f_code: *mut ffi::PyObject,
}

/// The code object of an event's frame, borrowed (the frame holds it), read with no call:
/// what `PyFrame_GetCode` returns, without its call, reference and release.
///
/// # Safety
/// `frame` is the live frame of an event; [`reads_frame_code`] is true.
#[inline(always)]
pub(super) unsafe fn frame_code(frame: *mut ffi::PyFrameObject) -> *mut ffi::PyObject {
    // SAFETY: the layout was checked on this interpreter (function contract); the frame is
    // live, and on 3.11 its interpreter frame too, for the event.
    unsafe {
        #[cfg(Py_3_11)]
        return (*(*(frame as *const Frame311)).f_frame).f_code;
        #[cfg(not(Py_3_11))]
        return (*(frame as *const Frame310)).f_code;
    }
}

/// Whether [`frame_code`] reads what `PyFrame_GetCode` returns, on a running frame and on a
/// suspended generator's.
fn check_code_layout(py: Python<'_>) -> PyResult<bool> {
    let gen = py.eval(c"(lambda: (yield))()", None, None)?;
    gen.call_method0("__next__")?;
    let mut frames = vec![gen.getattr("gi_frame")?];
    // A profiler made from C with no Python frame running has only the generator's to check.
    if let Ok(running) = py.import("sys")?.call_method1("_getframe", (0,)) {
        frames.push(running);
    }
    let mut ok = true;
    for frame in &frames {
        if !frame.is_instance_of::<pyo3::types::PyFrame>() {
            ok = false;
            continue;
        }
        let f = frame.as_ptr() as *mut ffi::PyFrameObject;
        // SAFETY: a live frame object; PyFrame_GetCode returns a new reference.
        let code = unsafe { Bound::from_owned_ptr(py, ffi::PyFrame_GetCode(f).cast()) };
        // SAFETY: the reads stay within the head every build of this version has (the frame
        // object's first fields and, on 3.11, its interpreter frame's first five).
        ok &= unsafe { frame_code(f) } == code.as_ptr();
    }
    gen.call_method0("close")?;
    Ok(ok)
}

/// Whether a coroutine's frame is at its first start (3.11): its call event comes at the code's
/// first RESUME instruction, later resumes at the RESUME after an await. Runs Python (reads
/// `co_code`) only on the rare path that needs it.
///
/// # Safety
/// GIL held; `frame` and `code` are live.
#[cfg(Py_3_11)]
unsafe fn first_start_311(
    py: Python<'_>,
    frame: *mut ffi::PyFrameObject,
    code: *mut ffi::PyObject,
) -> bool {
    const RESUME: u8 = 151; // 3.11's opcode number
                            // SAFETY: a live frame.
    let lasti = unsafe { ffi::PyFrame_GetLasti(frame) };
    // SAFETY: a live code object, borrowed for this call.
    let code = unsafe { Bound::from_borrowed_ptr(py, code) };
    let Ok(bytes) = code
        .getattr(pyo3::intern!(py, "co_code"))
        .and_then(|b| b.extract::<Vec<u8>>())
    else {
        return false;
    };
    let first = bytes.chunks_exact(2).position(|unit| unit[0] == RESUME);
    first.is_some_and(|i| (i * 2) as i64 == lasti as i64)
}

/// Whether a coroutine's call event is its frame's first start (3.11): asked only where a
/// call is set aside for the frame's address.
///
/// # Safety
/// GIL held; `frame` and `code` are the event's live frame and its code object.
#[cfg(Py_3_11)]
pub(super) unsafe fn first_start(
    py: Python<'_>,
    p: &Profiler,
    frame: *mut ffi::PyFrameObject,
    code: *mut ffi::PyObject,
) -> bool {
    let set_aside = p.read_with(frame as usize, |st, f| st.suspended.contains_key(&f));
    // SAFETY: `frame` and `code` are live (this function's contract).
    set_aside && unsafe { first_start_311(py, frame, code) }
}

/// Whether a coroutine's return event leaves it suspended (an await) rather than finished
/// (3.11: its `cr_suspended`).
///
/// # Safety
/// GIL held; `frame` is the event's live frame.
#[cfg(Py_3_11)]
pub(super) unsafe fn left_suspended(py: Python<'_>, frame: *mut ffi::PyFrameObject) -> bool {
    // SAFETY: `frame` is live; PyFrame_GetGenerator returns a new reference or NULL.
    let coro = unsafe { ffi::PyFrame_GetGenerator(frame) };
    if coro.is_null() {
        return false;
    }
    // SAFETY: a new, non-NULL reference, released when the Bound drops.
    let coro = unsafe { Bound::from_owned_ptr(py, coro) };
    coro.getattr("cr_suspended")
        .and_then(|v| v.is_truthy())
        .unwrap_or(false)
}

/// The head of 3.10's frame object (`struct _frame` in `cpython/frameobject.h`), up to the field
/// that says whether the frame was left suspended (a yield or an await) or finished. The
/// interpreter sets it before the return event. [`check_frame_layout`] verifies the offsets on
/// the running interpreter before `async_aware` is accepted.
#[cfg(not(Py_3_11))]
#[repr(C)]
struct Frame310 {
    ob_base: ffi::PyVarObject,
    f_back: *mut ffi::PyObject,
    f_code: *mut ffi::PyObject,
    f_builtins: *mut ffi::PyObject,
    f_globals: *mut ffi::PyObject,
    f_locals: *mut ffi::PyObject,
    f_valuestack: *mut *mut ffi::PyObject,
    f_trace: *mut ffi::PyObject,
    f_stackdepth: c_int,
    f_trace_lines: std::os::raw::c_char,
    f_trace_opcodes: std::os::raw::c_char,
    f_gen: *mut ffi::PyObject,
    f_lasti: c_int,
    f_lineno: c_int,
    f_iblock: c_int,
    f_state: i8,
}

/// 3.10's `FRAME_SUSPENDED`.
#[cfg(not(Py_3_11))]
const FRAME_SUSPENDED: i8 = -1;

/// Whether frames have the layout [`Frame310`] reads: a suspended generator's frame must show
/// its code, its generator and the suspended state where that struct has them.
#[cfg(not(Py_3_11))]
pub fn check_frame_layout(py: Python<'_>) -> PyResult<bool> {
    let gen = py.eval(c"(lambda: (yield))()", None, None)?;
    gen.call_method0("__next__")?;
    let frame = gen.getattr("gi_frame")?;
    let code = gen.getattr("gi_code")?;
    let f = frame.as_ptr() as *const Frame310;
    // SAFETY: `frame` is a live frame object (gi_frame of a suspended generator); the reads
    // stay within the fields every 3.10 build has before f_state.
    let ok = unsafe {
        (*f).f_code == code.as_ptr()
            && (*f).f_gen == gen.as_ptr()
            && (*f).f_state == FRAME_SUSPENDED
    };
    gen.call_method0("close")?;
    Ok(ok)
}

/// Whether a coroutine's call event is its frame's first start (3.10: not started yet).
///
/// # Safety
/// A live frame with the checked layout ([`check_frame_layout`]).
#[cfg(not(Py_3_11))]
pub(super) unsafe fn first_start(
    _py: Python<'_>,
    _p: &Profiler,
    frame: *mut ffi::PyFrameObject,
    _code: *mut ffi::PyObject,
) -> bool {
    // SAFETY: `frame` is live and its layout is 3.10's, checked by `check_frame_layout`
    // (function contract): a read of one field.
    unsafe { (*(frame as *const Frame310)).f_lasti == -1 }
}

/// Whether a coroutine's return event leaves it suspended (3.10: the interpreter set the
/// frame's state before the event).
///
/// # Safety
/// A live frame with the checked layout ([`check_frame_layout`]).
#[cfg(not(Py_3_11))]
pub(super) unsafe fn left_suspended(_py: Python<'_>, frame: *mut ffi::PyFrameObject) -> bool {
    // SAFETY: as in `first_start`: a live frame with the checked layout, one field read.
    unsafe { (*(frame as *const Frame310)).f_state == FRAME_SUSPENDED }
}
