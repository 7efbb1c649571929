//! Every thread's hook, with `threads=True`: set on each running thread at `enable()`
//! ([`set_all_threads`]), and on threads started later by the watch of frame evaluations.
//!
//! New threads: threads that `threading` does not start (`_thread`, or a C
//! extension's own threads entering Python) get no profile hook from `threading.setprofile`.
//! Every Python frame of the interpreter is evaluated through [`eval_frame`] while a profiler
//! watches: the first frame evaluation of a thread started after `enable()` installs the
//! profiler's hook on it, before that frame's call event, unless the thread has a hook already.
//! It then forwards to the evaluation function it replaced.

use std::cell::Cell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

use super::callbacks::hook_of;
use crate::tracer::state::Profiler;

extern "C" {
    /// `PyEval_SetProfile` for any thread state of the interpreter (exported by CPython 3.10 and
    /// 3.11, where `PyEval_SetProfileAllThreads` does not exist yet).
    fn _PyEval_SetProfile(
        tstate: *mut ffi::PyThreadState,
        func: Option<ffi::Py_tracefunc>,
        arg: *mut ffi::PyObject,
    ) -> c_int;
}

/// A frame evaluation function (PEP 523); the frame is 3.10's frame object or 3.11's
/// interpreter frame, passed through untouched.
type EvalFrame = unsafe extern "C" fn(
    *mut ffi::PyThreadState,
    *mut std::ffi::c_void,
    c_int,
) -> *mut ffi::PyObject;

extern "C" {
    fn _PyInterpreterState_GetEvalFrameFunc(interp: *mut ffi::PyInterpreterState) -> EvalFrame;
    fn _PyInterpreterState_SetEvalFrameFunc(interp: *mut ffi::PyInterpreterState, f: EvalFrame);
    fn _PyEval_EvalFrameDefault(
        ts: *mut ffi::PyThreadState,
        frame: *mut std::ffi::c_void,
        throwflag: c_int,
    ) -> *mut ffi::PyObject;
}

/// The profiler new threads are given (a strong reference while set), or null.
static PROFILER: AtomicPtr<ffi::PyObject> = AtomicPtr::new(std::ptr::null_mut());
/// The evaluation function [`eval_frame`] forwards to (null until first installed).
static NEXT: AtomicPtr<std::ffi::c_void> = AtomicPtr::new(std::ptr::null_mut());
/// Whether [`eval_frame`] is in the interpreter's chain (on top, or under a function another
/// tool installed later, which forwards to it): it is never put in twice, which would make
/// the chain a loop.
static IN_CHAIN: AtomicBool = AtomicBool::new(false);
/// Bumped at each watch, so each thread is visited once per `enable()`.
static ROUND: AtomicU64 = AtomicU64::new(0);
/// The newest thread id at the latest `enable()`: threads with ids up to it had the hook
/// from `enable()` itself (ids only grow) and are never visited.
static HOOKED_UP_TO: AtomicU64 = AtomicU64::new(0);
/// The interpreter's id of the thread of the latest frame evaluated: frames mostly come
/// from the thread that ran the one before, which then needs no thread-local lookup. (Ids
/// are never reused, unlike thread state addresses; 0 is no thread's.)
static LAST: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// (round, thread id) last visited on this OS thread: a native thread that enters
    /// Python again gets a new thread state (and id) each time.
    static VISITED: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// The hook function [`start`] gave every thread, as an address; [`NO_HOOK`] while the
/// slots below are not known.
static HOOK: AtomicUsize = AtomicUsize::new(NO_HOOK);
/// Where a thread state keeps its profile function and its argument (`c_profilefunc`,
/// `c_profileobj`), as word indexes found by [`find_profile_slots`]; 0 if not found.
static FUNC_AT: AtomicUsize = AtomicUsize::new(0);
static OBJ_AT: AtomicUsize = AtomicUsize::new(0);
/// No function's address: a thread state's first word (the previous thread state, or
/// null) never holds it, so with the slots unknown no thread state is taken to have the
/// hook, with no test of its own.
const NO_HOOK: usize = 1;
/// How far into a thread state the profile slots are looked for: its head, well within
/// the struct (on x86_64 they are words 7 and 9 of 35 on 3.10, 8 and 10 of 45 on 3.11).
const SLOT_SEARCH_WORDS: usize = 16;

unsafe extern "C" fn eval_frame(
    ts: *mut ffi::PyThreadState,
    frame: *mut std::ffi::c_void,
    throwflag: c_int,
) -> *mut ffi::PyObject {
    // SAFETY: `ts` is the evaluating thread's live state; the arguments are passed on
    // unchanged, by a tail call either way (no register saved on the common path).
    unsafe {
        if !has_hook(ts) {
            return eval_frame_checking(ts, frame, throwflag);
        }
        forward(ts, frame, throwflag)
    }
}

/// [`eval_frame`] for a thread state that has not (or not visibly) got the hook: by its
/// thread id, the thread is visited once per `enable()`.
///
/// # Safety
/// As for [`eval_frame`]: the interpreter's own arguments.
#[inline(never)]
unsafe fn eval_frame_checking(
    ts: *mut ffi::PyThreadState,
    frame: *mut std::ffi::c_void,
    throwflag: c_int,
) -> *mut ffi::PyObject {
    // SAFETY: `ts` is the evaluating thread's live state.
    let id = unsafe { ffi::PyThreadState_GetID(ts) } as u64;
    if LAST.load(Ordering::Relaxed) != id {
        // SAFETY: as below.
        unsafe { visit(ts, id) };
    }
    // SAFETY: the interpreter's own arguments.
    unsafe { forward(ts, frame, throwflag) }
}

/// Hands a frame to the evaluation function [`eval_frame`] replaced.
///
/// # Safety
/// As for [`eval_frame`]: the interpreter's own arguments.
#[inline(always)]
unsafe fn forward(
    ts: *mut ffi::PyThreadState,
    frame: *mut std::ffi::c_void,
    throwflag: c_int,
) -> *mut ffi::PyObject {
    let next = NEXT.load(Ordering::Relaxed);
    // SAFETY: NEXT is set (to the function replaced, never null) before this function is
    // installed, and only ever to evaluation functions of this interpreter.
    let next: EvalFrame = unsafe { std::mem::transmute(next) };
    // SAFETY: the interpreter's own arguments, passed on unchanged.
    unsafe { next(ts, frame, throwflag) }
}

/// Whether the thread state `ts` has the watched profiler's hook already: its profile
/// slots read directly, with no call (the slots' places were found on the enabling
/// thread). False when that is not known, which sends the frame to the check by thread
/// id.
///
/// # Safety
/// `ts` is a live thread state of this interpreter.
#[inline(always)]
unsafe fn has_hook(ts: *mut ffi::PyThreadState) -> bool {
    let (func, obj) = (
        FUNC_AT.load(Ordering::Relaxed),
        OBJ_AT.load(Ordering::Relaxed),
    );
    let words = ts as *const usize;
    // SAFETY: both indexes are 0 or were found below SLOT_SEARCH_WORDS inside a thread
    // state of this interpreter, whose every thread state has the same layout. (All four
    // statics change only in `start`, with the GIL held, as frames are evaluated.)
    unsafe {
        *words.add(func) == HOOK.load(Ordering::Relaxed)
            && *words.add(obj) == PROFILER.load(Ordering::Relaxed) as usize
    }
}

/// Finds where the calling thread's state holds `hook` and `obj`, the profile function
/// and argument just installed on it: each must be in exactly one word of the state's
/// head (both are addresses no other field holds).
///
/// # Safety
/// GIL held; the calling thread's profile hook is `hook` with argument `obj`.
unsafe fn find_profile_slots(hook: usize, obj: usize) -> Option<(usize, usize)> {
    // SAFETY: GIL held: the calling thread has a live state.
    let words = unsafe { ffi::PyThreadState_Get() } as *const usize;
    let only = |value: usize| {
        // SAFETY: a thread state is longer than SLOT_SEARCH_WORDS words (35 on 3.10 and
        // 45 on 3.11, and no build of either drops fields from its head).
        let mut at = (0..SLOT_SEARCH_WORDS).filter(|&i| unsafe { *words.add(i) } == value);
        match (at.next(), at.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        }
    };
    only(hook).zip(only(obj))
}

/// Whether the thread state `ts` has a profile hook, whoever set it: its function slot
/// read directly. False when the slot's place is not known.
///
/// # Safety
/// `ts` is a live thread state of this interpreter.
unsafe fn has_any_hook(ts: *mut ffi::PyThreadState) -> bool {
    if HOOK.load(Ordering::Relaxed) == NO_HOOK {
        return false;
    }
    // SAFETY: FUNC_AT was found below SLOT_SEARCH_WORDS inside a thread state of this
    // interpreter (HOOK is set only then), and every thread state has that layout.
    unsafe { *(ts as *const usize).add(FUNC_AT.load(Ordering::Relaxed)) != 0 }
}

/// Gives the thread of `ts` the watched profiler's hook once, at its first frame, if it
/// started after the latest `enable()` and has no hook. A hook someone else puts in its
/// place later (another profiler, `sys.setprofile`) is left alone, and so is the thread
/// once that hook is removed: the last hook set in a thread wins, as between two cProfiles.
///
/// # Safety
/// GIL held by the thread of `ts`, its live state.
#[cold]
unsafe fn visit(ts: *mut ffi::PyThreadState, id: u64) {
    LAST.store(id, Ordering::Relaxed);
    // Running at `enable()`, which gave it the hook: any hook it has now was put there since.
    if id <= HOOKED_UP_TO.load(Ordering::Relaxed) {
        return;
    }
    let round = ROUND.load(Ordering::Relaxed);
    if VISITED.get() == (round, id) {
        return;
    }
    VISITED.set((round, id));
    let obj = PROFILER.load(Ordering::Relaxed);
    // A hook set before the thread's first frame (from C, or by a C call that runs no
    // Python) is its owner's.
    // SAFETY: GIL held; `ts` is the calling thread's live state.
    if obj.is_null() || unsafe { has_any_hook(ts) } {
        return;
    }
    // SAFETY: the GIL is held (a frame is being evaluated) and `obj` is alive (PROFILER's
    // reference); our own reference keeps it so while the audit hooks that
    // _PyEval_SetProfile runs (Python code) let other threads run. A frame being thrown
    // into has its exception pending: kept aside meanwhile. A refusal is reported, not
    // raised into the frame about to run.
    unsafe {
        ffi::Py_INCREF(obj);
        let (mut t, mut v, mut tb) = (
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        ffi::PyErr_Fetch(&mut t, &mut v, &mut tb);
        if _PyEval_SetProfile(ts, Some(hook_of(obj)), obj) < 0 {
            ffi::PyErr_WriteUnraisable(obj);
        } else if PROFILER.load(Ordering::Relaxed) != obj {
            // Disabled (or another profiler enabled) meanwhile: not this profiler's hook.
            if _PyEval_SetProfile(ts, None, std::ptr::null_mut()) < 0 {
                ffi::PyErr_WriteUnraisable(obj);
            }
        }
        ffi::PyErr_Restore(t, v, tb);
        ffi::Py_DECREF(obj);
    }
}

/// Gives threads that evaluate a frame from now on `slf`'s hook, except those with ids up
/// to `hooked_up_to`, which `enable()` gave it.
pub(super) fn start(slf: &Bound<'_, Profiler>, hooked_up_to: u64) {
    // SAFETY: GIL held.
    let interp = unsafe { ffi::PyInterpreterState_Get() };
    // SAFETY: GIL held; reading and setting the interpreter's evaluation function.
    unsafe {
        let current = _PyInterpreterState_GetEvalFrameFunc(interp);
        // Back to the default: whoever put it back took ours out of the chain too.
        let reset = current as usize == _PyEval_EvalFrameDefault as EvalFrame as usize;
        if !IN_CHAIN.swap(true, Ordering::Relaxed) || reset {
            NEXT.store(current as *mut std::ffi::c_void, Ordering::Relaxed);
            _PyInterpreterState_SetEvalFrameFunc(interp, eval_frame);
        }
    }
    ROUND.fetch_add(1, Ordering::Relaxed);
    HOOKED_UP_TO.store(hooked_up_to, Ordering::Relaxed);
    LAST.store(0, Ordering::Relaxed);
    // SAFETY: a live profiler, GIL held; its hook was just installed on every thread,
    // this one included (`install` fails before this otherwise).
    unsafe {
        let hook = hook_of(slf.as_ptr()) as usize;
        let slots = find_profile_slots(hook, slf.as_ptr() as usize);
        let (func, obj) = slots.unwrap_or((0, 0));
        FUNC_AT.store(func, Ordering::Relaxed);
        OBJ_AT.store(obj, Ordering::Relaxed);
        HOOK.store(
            if slots.is_some() { hook } else { NO_HOOK },
            Ordering::Relaxed,
        );
    }
    let old = PROFILER.swap(slf.clone().into_ptr(), Ordering::Relaxed);
    if !old.is_null() {
        // SAFETY: the reference PROFILER held.
        unsafe { ffi::Py_DECREF(old) };
    }
}

/// Stops giving new threads `slf`'s hook; puts the replaced evaluation function back if
/// nothing replaced ours since.
pub(super) fn stop(slf: &Bound<'_, Profiler>) {
    if PROFILER
        .compare_exchange(
            slf.as_ptr(),
            std::ptr::null_mut(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        )
        .is_err()
    {
        return;
    }
    // SAFETY: GIL held; PROFILER's reference is released, the interpreter's function put
    // back only if it is still ours (else ours stays in the chain, forwarding).
    unsafe {
        ffi::Py_DECREF(slf.as_ptr());
        let interp = ffi::PyInterpreterState_Get();
        if _PyInterpreterState_GetEvalFrameFunc(interp) as usize == eval_frame as EvalFrame as usize
        {
            let next: EvalFrame = std::mem::transmute(NEXT.load(Ordering::Relaxed));
            _PyInterpreterState_SetEvalFrameFunc(interp, next);
            IN_CHAIN.store(false, Ordering::Relaxed);
        }
    }
}

/// The largest id of the interpreter's threads (ids only grow: later threads have larger ones).
pub(super) fn newest_thread_id() -> u64 {
    let mut newest = 0;
    // SAFETY: GIL held (the caller holds a `Bound`); the list is walked with no Python code
    // running.
    unsafe {
        let mut ts = ffi::PyInterpreterState_ThreadHead(ffi::PyInterpreterState_Get());
        while !ts.is_null() {
            newest = newest.max(ffi::PyThreadState_GetID(ts) as u64);
            ts = ffi::PyThreadState_Next(ts);
        }
    }
    newest
}

/// Sets (or with `None`, removes) the profile hook of every thread of the interpreter.
pub(super) fn set_all_threads(
    func: Option<ffi::Py_tracefunc>,
    arg: *mut ffi::PyObject,
) -> PyResult<()> {
    // Each change runs the "sys.setprofile" audit hooks, Python code that may let threads run
    // and end: threads are found again by id for each change, never kept by address across one.
    // SAFETY: GIL held (callers hold a `Bound`); the list is walked with no Python code running.
    let thread_with = |id: Option<u64>| unsafe {
        let mut ts = ffi::PyInterpreterState_ThreadHead(ffi::PyInterpreterState_Get());
        let mut ids = Vec::new();
        while !ts.is_null() {
            let this = ffi::PyThreadState_GetID(ts) as u64;
            if Some(this) == id {
                return (ts, ids);
            }
            ids.push(this);
            ts = ffi::PyThreadState_Next(ts);
        }
        (std::ptr::null_mut(), ids)
    };
    let (_, ids) = thread_with(None);
    let mut first_error = None;
    for id in ids {
        let (ts, _) = thread_with(Some(id));
        if ts.is_null() {
            continue; // ended meanwhile
        }
        // SAFETY: a live thread state of this interpreter, found just now with the GIL held.
        if unsafe { _PyEval_SetProfile(ts, func, arg) } < 0 {
            // A refusal (an audit hook) for one thread does not keep the others as they were.
            // SAFETY: GIL held.
            let err = PyErr::take(unsafe { Python::assume_attached() });
            first_error = first_error.or(err);
        }
    }
    first_error.map_or(Ok(()), Err)
}
