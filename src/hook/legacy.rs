//! Python 3.10/3.11 front end: the C-level profile hook (`PyEval_SetProfile`) on the thread
//! that calls `enable()`, receiving exactly the events `_lsprof` receives.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::tracer::events;
use crate::tracer::hook_state::HookState;
use crate::tracer::labels::builtin_label;
use crate::tracer::state::{Profiler, FAST_NONE};

impl HookState {
    pub fn new() -> PyResult<Self> {
        Python::attach(|py| {
            let ok = FRAME_CODE_CHECKED.get_or_try_init(py, || check_code_layout(py))?;
            FRAME_CODE_READ.store(*ok, Ordering::Relaxed);
            Ok(HookState)
        })
    }
}

/// Whether [`frame_code`] may read a frame's code object (its layout was checked once, on the
/// first profiler made). The fast paths need it, as they make no call.
static FRAME_CODE_READ: AtomicBool = AtomicBool::new(false);
static FRAME_CODE_CHECKED: pyo3::sync::PyOnceLock<bool> = pyo3::sync::PyOnceLock::new();

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
unsafe fn frame_code(frame: *mut ffi::PyFrameObject) -> *mut ffi::PyObject {
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

/// New threads (`threads=True`): threads that `threading` does not start (`_thread`, or a C
/// extension's own threads entering Python) get no profile hook from `threading.setprofile`.
/// Every Python frame of the interpreter is evaluated through [`eval_frame`] while a profiler
/// watches: the first frame evaluation of a thread started after `enable()` installs the
/// profiler's hook on it, before that frame's call event, unless the thread has a hook already.
/// It then forwards to the evaluation function it replaced.
mod watch {
    use super::*;
    use std::cell::Cell;
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

    /// The profiler new threads are given (a strong reference while set), or null.
    pub static PROFILER: AtomicPtr<ffi::PyObject> = AtomicPtr::new(std::ptr::null_mut());
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

    pub unsafe extern "C" fn eval_frame(
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
    pub fn start(slf: &Bound<'_, Profiler>, hooked_up_to: u64) {
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
    pub fn stop(slf: &Bound<'_, Profiler>) {
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
            if _PyInterpreterState_GetEvalFrameFunc(interp) as usize
                == eval_frame as EvalFrame as usize
            {
                let next: EvalFrame = std::mem::transmute(NEXT.load(Ordering::Relaxed));
                _PyInterpreterState_SetEvalFrameFunc(interp, next);
                IN_CHAIN.store(false, Ordering::Relaxed);
            }
        }
    }
}

/// The largest id of the interpreter's threads (ids only grow: later threads have larger ones).
fn newest_thread_id() -> u64 {
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
fn set_all_threads(func: Option<ffi::Py_tracefunc>, arg: *mut ffi::PyObject) -> PyResult<()> {
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

/// The profiler's fast-path flag or builtins flag changed: nothing to do here, where the hook reads
/// the flag on every event.
pub fn fast_mode_changed(_st: &mut crate::tracer::state::State) {}

/// The global of `threading` that `threading.setprofile` sets and `getprofile` reads (3.10,
/// 3.11), set and read here directly: a call of those Python functions would be recorded as
/// the program's.
const THREADING_PROFILE_HOOK: &str = "_profile_hook";

pub fn install(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    // SAFETY: short read of a flag.
    if unsafe { (*slf.get().state_ptr()).threads } {
        // Every thread `threading` starts from now on (its first event installs this hook on
        // it), then every running thread. In this order the import of `threading` is done
        // before any hook sees it, and a thread starting in between is hooked either way.
        let threading = slf.py().import("threading")?;
        let starter = ThreadStarter {
            profiler: slf.clone().unbind(),
        };
        threading.setattr(THREADING_PROFILE_HOOK, starter)?;
        // SAFETY: a live profiler, GIL held.
        let hook = unsafe { hook_of(slf.as_ptr()) };
        // The threads hooked below: no Python runs before set_all_threads lists them.
        let hooked_up_to = newest_thread_id();
        if let Err(e) = set_all_threads(Some(hook), slf.as_ptr()) {
            let _ = threading.setattr(THREADING_PROFILE_HOOK, slf.py().None());
            return Err(e);
        }
        watch::start(slf, hooked_up_to);
        return Ok(());
    }
    // SAFETY: GIL held; the thread state takes a strong reference to `slf`, which keeps the
    // profiler alive for as long as the hook can call it.
    unsafe { ffi::PyEval_SetProfile(Some(hook_of(slf.as_ptr())), slf.as_ptr()) };
    Ok(())
}

pub fn uninstall(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    // SAFETY: short read of a flag.
    if unsafe { (*slf.get().state_ptr()).threads } {
        watch::stop(slf);
        let threading = slf.py().import("threading")?;
        if threading
            .getattr(THREADING_PROFILE_HOOK)?
            .is_instance_of::<ThreadStarter>()
        {
            threading.setattr(THREADING_PROFILE_HOOK, slf.py().None())?;
        }
        return set_all_threads(None, std::ptr::null_mut());
    }
    // SAFETY: GIL held; removes the hook of the calling thread (as _lsprof's disable does).
    unsafe { ffi::PyEval_SetProfile(None, std::ptr::null_mut()) };
    Ok(())
}

/// The function `threading` installs with `sys.setprofile` in each thread it starts: on that
/// thread's first event it puts the native hook in its place and hands the event over.
#[pyclass(module = "rprofile._rprofile", frozen)]
struct ThreadStarter {
    profiler: Py<Profiler>,
}

#[pymethods]
impl ThreadStarter {
    fn __call__(
        &self,
        py: Python<'_>,
        frame: &Bound<'_, PyAny>,
        event: &str,
        arg: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let obj = self.profiler.as_ptr();
        // SAFETY: GIL held, `obj` a live profiler; the thread state takes its own reference.
        let hook = unsafe { hook_of(obj) };
        // SAFETY: GIL held.
        unsafe { ffi::PyEval_SetProfile(Some(hook), obj) };
        let what = match event {
            "call" => ffi::PyTrace_CALL,
            "return" => ffi::PyTrace_RETURN,
            "c_call" => ffi::PyTrace_C_CALL,
            "c_return" => ffi::PyTrace_C_RETURN,
            "c_exception" => ffi::PyTrace_C_EXCEPTION,
            _ => return Ok(()),
        };
        let _ = py;
        // SAFETY: the arguments are the live frame and event argument this call received; the
        // hook expects exactly what the interpreter would have passed it for this event.
        unsafe { hook(obj, frame.as_ptr().cast(), what, arg.as_ptr()) };
        Ok(())
    }
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
unsafe fn first_start(
    py: Python<'_>,
    p: &Profiler,
    frame: *mut ffi::PyFrameObject,
    code: *mut ffi::PyObject,
) -> bool {
    // SAFETY: short read with the GIL held.
    let set_aside = unsafe { (*p.state_ptr()).suspended.contains_key(&(frame as usize)) };
    // SAFETY: `frame` and `code` are live (this function's contract).
    set_aside && unsafe { first_start_311(py, frame, code) }
}

/// Whether a coroutine's return event leaves it suspended (an await) rather than finished
/// (3.11: its `cr_suspended`).
///
/// # Safety
/// GIL held; `frame` is the event's live frame.
#[cfg(Py_3_11)]
unsafe fn left_suspended(py: Python<'_>, frame: *mut ffi::PyFrameObject) -> bool {
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
unsafe fn first_start(
    _py: Python<'_>,
    _p: &Profiler,
    frame: *mut ffi::PyFrameObject,
    _code: *mut ffi::PyObject,
) -> bool {
    // SAFETY: as for this function.
    unsafe { (*(frame as *const Frame310)).f_lasti == -1 }
}

/// Whether a coroutine's return event leaves it suspended (3.10: the interpreter set the
/// frame's state before the event).
///
/// # Safety
/// A live frame with the checked layout ([`check_frame_layout`]).
#[cfg(not(Py_3_11))]
unsafe fn left_suspended(_py: Python<'_>, frame: *mut ffi::PyFrameObject) -> bool {
    // SAFETY: as for this function.
    unsafe { (*(frame as *const Frame310)).f_state == FRAME_SUSPENDED }
}

/// A coroutine's call or return event with `async_aware`: a call is its start or a resume, a
/// return is an await when the coroutine is left suspended, else its end.
///
/// # Safety
/// GIL held; `frame` and `code` are the event's live frame and its code object; on 3.10 the
/// frame layout was checked ([`check_frame_layout`], by `__init__` before accepting
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
        // SAFETY: as for this function.
        if unsafe { first_start(py, p, frame, code) } {
            // A first start, whatever a coroutine that had this frame's address and finished
            // unseen (on an unhooked thread) left set aside.
            // SAFETY: GIL held; no borrow of the state alive.
            unsafe { events::close_stale(p, frame as usize) };
        }
        // SAFETY: as for this function.
        return unsafe { events::resume_call(py, p, code as usize, frame as usize, label) };
    }
    // SAFETY: as for this function.
    let suspended = unsafe { left_suspended(py, frame) };
    // SAFETY: as for this function.
    unsafe {
        if suspended {
            events::suspend_call(py, p, code as usize, frame as usize);
        } else {
            events::leave_call(py, p, code as usize);
        }
    }
}

/// The profile hook made for the fast-path flag the profiler `obj` has now (see
/// `events::enter_fast`): what every thread it profiles is given.
///
/// # Safety
/// `obj` is a live `Profiler`; GIL held, no borrow of its state alive.
unsafe fn hook_of(obj: *mut ffi::PyObject) -> ffi::Py_tracefunc {
    // SAFETY: as for this function; a short read of a flag.
    let fast = unsafe { (*hook_profiler(&obj).1.state_ptr()).fast };
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
    // SAFETY: as for this function.
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
                return code_event::<{ ffi::PyTrace_CALL }>(obj, code);
            }
            if what == ffi::PyTrace_RETURN {
                let code = frame_code(frame);
                if events::leave_fast::<MODE>(p, code as usize) {
                    return 0;
                }
                return code_event::<{ ffi::PyTrace_RETURN }>(obj, code);
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
/// what the fast paths hand on (the code read from the frame) and [`profile_event`] does.
///
/// # Safety
/// `obj` as the interpreter passed it to the hook, for an event of kind `WHAT` (a call or a
/// return) whose frame runs `code`, which the frame keeps alive.
#[inline(never)]
unsafe extern "C" fn code_event<const WHAT: c_int>(
    obj: *mut ffi::PyObject,
    code: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: the interpreter's own argument.
    let (py, p) = unsafe { hook_profiler(&obj) };
    // SAFETY: GIL held; no borrow of the profiler's state is alive; the code object is alive
    // for the event.
    unsafe {
        if WHAT == ffi::PyTrace_CALL {
            events::enter_call(py, p, code as usize, || {
                Ok(Bound::from_borrowed_ptr(py, code).unbind())
            });
        } else {
            events::leave_call(py, p, code as usize);
        }
    }
    // Opaque to the optimizer: a return value it could see is always 0 would be put after the
    // call in `profile_hook`, which then stops being a tail call and saves registers on every
    // event, fast paths included.
    std::hint::black_box(0)
}

/// [`profile_event`] for a call or return of a C function: what it reads of such an event.
///
/// # Safety
/// `obj` and `arg` as the interpreter passed them to the hook, for an event of kind `WHAT`.
#[inline(never)]
unsafe extern "C" fn c_event<const WHAT: c_int>(
    obj: *mut ffi::PyObject,
    arg: *mut ffi::PyObject,
) -> c_int {
    // SAFETY: as for this function; the frame of a C event is not read.
    unsafe { profile_event(obj, std::ptr::null_mut(), WHAT, arg) }
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
            // SAFETY: short read of a flag; then GIL held, no borrow of the state alive.
            let coroutine =
                unsafe { (*p.state_ptr()).async_aware && events::is_coroutine(py, p, code) };
            if coroutine {
                // SAFETY: GIL held; `frame` is the coroutine's live frame.
                unsafe { async_event(py, p, frame, code, what, label) };
            } else if what == ffi::PyTrace_CALL {
                // SAFETY: the hook's own `obj`; `code` is the frame's, alive for the event.
                unsafe { code_event::<{ ffi::PyTrace_CALL }>(obj, code) };
            } else {
                // SAFETY: as above.
                unsafe { code_event::<{ ffi::PyTrace_RETURN }>(obj, code) };
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
    // Opaque, as in `code_event`.
    std::hint::black_box(0)
}
