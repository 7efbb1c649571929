//! `enable()` and `disable()`: the hook put on the calling thread or, with `threads=True`, on
//! every thread (and `threading`'s starter for the threads it starts); the profiler's
//! `HookState`, made once its frame layout is checked.

use pyo3::ffi;
use pyo3::prelude::*;

use super::callbacks::hook_of;
use super::frames;
use super::watch::{self, newest_thread_id, set_all_threads};
use crate::tracer::hook_state::HookState;
use crate::tracer::state::Profiler;

impl HookState {
    pub fn new() -> PyResult<Self> {
        Python::attach(|py| {
            frames::check_code_layout_once(py)?;
            Ok(HookState)
        })
    }
}

/// The profiler's fast-path flag or builtins flag changed: nothing to do here, where the hook reads
/// the flag on every event.
pub fn fast_mode_changed(_st: &mut crate::tracer::state::State) {}

/// The global of `threading` that `threading.setprofile` sets and `getprofile` reads (3.10,
/// 3.11), set and read here directly: a call of those Python functions would be recorded as
/// the program's.
const THREADING_PROFILE_HOOK: &str = "_profile_hook";

pub fn install(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    if slf.get().read(|s| s.threads) {
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
    if slf.get().read(|s| s.threads) {
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
