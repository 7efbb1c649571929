//! The reference tracer behind `Profile(types=True)` (Python 3.13+): the interpreter calls it for
//! every object it creates and destroys (`PyRefTracer_SetTracer`, declared here: PyO3 does not
//! expose it); objects of the counted types are charged to the active profiler's `TypeLedger`.
//!
//! One profiler at a time tracks types (the tracer is process-wide). Another tool's tracer is
//! never replaced: activation refuses, and deactivation removes only our own.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Why `types=True` cannot be had on the running interpreter, if it cannot.
pub fn unavailable(py: Python<'_>) -> Option<&'static str> {
    if !cfg!(Py_3_13) {
        return Some("types=True needs Python 3.13 or later (the interpreter's reference tracer)");
    }
    let v = py.version_info();
    // Before 3.13.3 the interpreter frees most objects without telling the tracer
    // (python/cpython#130382): the counts of destroyed and alive objects would be wrong.
    if (v.major, v.minor, v.patch) < (3, 13, 3) {
        return Some(
            "types=True needs Python 3.13.3 or later: before it the interpreter does not \
             report most object destructions to the reference tracer (python/cpython#130382)",
        );
    }
    None
}

/// ValueError where types cannot be tracked.
pub fn check_supported(py: Python<'_>) -> PyResult<()> {
    match unavailable(py) {
        Some(why) => Err(PyValueError::new_err(why)),
        None => Ok(()),
    }
}

#[cfg(Py_3_13)]
pub use tracing::{
    activate, base_up, check_available, deactivate, installed, is_active, Installed,
};

#[cfg(not(Py_3_13))]
pub use unsupported::{activate, base_up, check_available, deactivate, is_active};

/// Before 3.13 there is no reference tracer: `Config` refuses `types=True` first.
#[cfg(not(Py_3_13))]
mod unsupported {
    use pyo3::prelude::*;

    use super::check_supported;
    use crate::tracer::state::Profiler;

    pub fn activate(slf: &Bound<'_, Profiler>) -> PyResult<()> {
        check_supported(slf.py())
    }

    pub fn check_available(slf: &Bound<'_, Profiler>) -> PyResult<()> {
        check_supported(slf.py())
    }

    pub fn deactivate(_slf: &Bound<'_, Profiler>) {}

    pub fn base_up(_slf: &Bound<'_, Profiler>, _up: usize) {}

    pub fn is_active(_slf: &Bound<'_, Profiler>) -> bool {
        false
    }
}

#[cfg(Py_3_13)]
mod tracing {
    use std::ffi::{c_int, c_void};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::OnceLock;

    use pyo3::exceptions::PyRuntimeError;
    use pyo3::ffi;
    use pyo3::prelude::*;

    use crate::core::timeline;
    use crate::core::types::{Decision, TypeLedger, TypeTracking, NO_STACK};
    use crate::sampler::own_frames::{Base, OwnFrames};
    use crate::tracer::charge::{current_key, current_track, key_of, Lane, Slot};
    use crate::tracer::state::{Profiler, State};

    /// A RuntimeError saying why the tracer cannot be had.
    fn refused(why: &str) -> PyErr {
        PyRuntimeError::new_err(why.to_string())
    }

    /// `PyRefTracer` of `Include/cpython/object.h`.
    type RefTracer = unsafe extern "C" fn(*mut ffi::PyObject, c_int, *mut c_void) -> c_int;

    extern "C" {
        fn PyRefTracer_SetTracer(tracer: Option<RefTracer>, data: *mut c_void) -> c_int;
        fn PyRefTracer_GetTracer(data: *mut *mut c_void) -> Option<RefTracer>;
    }

    /// `PyRefTracer_CREATE` and `PyRefTracer_DESTROY` (3.15 adds `TRACKER_REMOVED`, ignored).
    const CREATE: c_int = 0;
    const DESTROY: c_int = 1;

    /// The profiler charged, and the interpreter whose objects are counted.
    static ACTIVE: Slot = Slot::new();
    /// This interpreter's frame layout, read once, for `calls=False` (or why it cannot be).
    static OWN_FRAMES: OnceLock<Result<OwnFrames, String>> = OnceLock::new();
    /// Objects of builtin (static) types are skipped before anything else is looked at.
    static SKIP_STATIC: AtomicBool = AtomicBool::new(true);
    /// Inside the tracer: objects it makes itself (a type's name) are not the program's.
    static INSIDE: AtomicBool = AtomicBool::new(false);
    /// Types found not counted, by a hash of their address (a type freed leaves its slot):
    /// most events of a program are of a few such types, skipped here before anything else.
    static IGNORED: [AtomicUsize; 1024] = [const { AtomicUsize::new(0) }; 1024];

    #[inline]
    fn ignored_slot(ty: usize) -> &'static AtomicUsize {
        // Fibonacci hashing: the builtin types sit a few hundred bytes apart in one segment,
        // which low bits alone would pile into a few slots.
        &IGNORED[(ty as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) as usize >> 54]
    }

    unsafe extern "C" fn trace(obj: *mut ffi::PyObject, event: c_int, _data: *mut c_void) -> c_int {
        if obj.is_null() || (event != CREATE && event != DESTROY) {
            return 0;
        }
        // SAFETY: `obj` is a live object (being made, or about to be freed): its type is set.
        let ty = unsafe { ffi::Py_TYPE(obj) };
        // SAFETY: as above; a type object outlives its instances.
        let flags = unsafe { (*ty).tp_flags };
        let is_type = flags & ffi::Py_TPFLAGS_TYPE_SUBCLASS != 0;
        if event == DESTROY && is_type {
            forget(obj as usize);
        }
        if flags & ffi::Py_TPFLAGS_HEAPTYPE == 0 && SKIP_STATIC.load(Ordering::Relaxed) {
            return 0;
        }
        let ty = ty as usize;
        if ignored_slot(ty).load(Ordering::Relaxed) == ty {
            return 0;
        }
        let Some((st, ts)) = charged() else {
            return 0;
        };
        // SAFETY: GIL held (charged). The tracer may fire at any decref, so it relies on no
        // code keeping a reference into the state across one (events, clear() and the hooks
        // hold only short borrows); its own accesses are short, and no Python code runs but in
        // `decide`, where INSIDE turns the tracer's own objects away. While a creation is
        // charged, shared references into the calls (the aggregator and stack of a track) are
        // held as the ledger is written: it is in the TypeTracking's own Box, apart from them.
        unsafe {
            // The profiler's own Python work (labels, a Python timer) makes no object of the
            // program's; what it frees (a finalizer run by a collection there) may be.
            if event == CREATE && ((*st).busy > 0 || (*st).in_timer > 0) {
                return 0;
            }
            let decision = match (*st).types.as_deref_mut() {
                Some(t) => match t.ledger.decision(ty) {
                    Some(d) => d,
                    None => decide(t, ty as *mut ffi::PyTypeObject, flags),
                },
                None => return 0,
            };
            let Decision::Counted(i) = decision else {
                ignored_slot(ty).store(ty, Ordering::Relaxed);
                return 0;
            };
            let Some(t) = (*st).types.as_deref_mut() else {
                return 0;
            };
            // Whole stacks for the program's own types and the types named: walking the
            // stack for each int and str (types_builtins=True) doubled that mode's cost.
            let whole = flags & ffi::Py_TPFLAGS_HEAPTYPE != 0 || !t.only.is_empty();
            let ledger: *mut TypeLedger = &mut t.ledger;
            if event == CREATE && !t.calls {
                let (key, stack) = from_frames(st, ts, ledger, whole);
                if let Some(gone) = (*ledger).created(i, obj as usize, key, stack) {
                    note(st, timeline::OBJECT_FREE, key, gone, None);
                }
            } else if event == CREATE {
                let (track, lane) = current_track(st, ts);
                let (key, stack) = match track {
                    Some((agg, stack)) => {
                        let key = stack.frames.last().map_or(0, |c| key_of(agg, c));
                        let node = if whole {
                            (*ledger).stack(stack.frames.iter().map(|c| key_of(agg, c)))
                        } else {
                            NO_STACK
                        };
                        (key, node)
                    }
                    // A thread with no track yet: no call of it seen.
                    None => (0, if whole { 0 } else { NO_STACK }),
                };
                if let Some(gone) = (*ledger).created(i, obj as usize, key, stack) {
                    note(st, timeline::OBJECT_FREE, key, gone, lane);
                }
                note(st, timeline::OBJECT_NEW, key, i, lane);
            } else if (*ledger).destroyed(i, obj as usize) && (*st).timeline.is_some() {
                let (key, lane) = current_key(st, ts);
                note(st, timeline::OBJECT_FREE, key, i, lane);
            }
        }
        0
    }

    /// `calls=False`: the function key and the stack node of an object being made, from the
    /// frames the interpreter runs (no call is profiled); the code objects they name are kept,
    /// for their labels. A thread that runs no frame (or a layout not read) charges no function.
    ///
    /// # Safety
    /// GIL held by the thread whose state is `ts`; `st` valid; `ledger` points into its
    /// `types` (a Box of its own, apart from the fields used here); no other reference into
    /// the state alive.
    unsafe fn from_frames(
        st: *mut State,
        ts: *mut ffi::PyThreadState,
        ledger: *mut TypeLedger,
        whole: bool,
    ) -> (usize, u32) {
        let none = (0, if whole { 0 } else { NO_STACK });
        let Some(Ok(own)) = OWN_FRAMES.get() else {
            return none;
        };
        // SAFETY: function contract: exclusive access to these two fields; `ts` is the calling
        // thread's state, which holds the GIL; `own` was read from this process.
        unsafe {
            let s = &mut *st;
            let stop = match s.frame_base {
                (base_ts, frame, code) if base_ts == ts as usize => Base { frame, code },
                _ => Base::default(),
            };
            // Only the innermost frame's code is charged unless the whole stack is kept.
            let limit = if whole { usize::MAX } else { 1 };
            own.codes(ts as usize, code_type(), stop, limit, &mut s.frame_walk);
            let Some(&key) = s.frame_walk.first() else {
                return none;
            };
            let kept = if whole { s.frame_walk.len() } else { 1 };
            for &code in &s.frame_walk[..kept] {
                s.frame_codes.entry(code).or_insert_with(|| {
                    // An incref: no object is made, so the tracer is not called again.
                    let py = Python::assume_attached();
                    Bound::from_borrowed_ptr(py, code as *mut ffi::PyObject).unbind()
                });
            }
            let node = if whole {
                (*ledger).stack(s.frame_walk.iter().rev().copied())
            } else {
                NO_STACK
            };
            (key, node)
        }
    }

    /// `PyCode_Type`'s address.
    fn code_type() -> usize {
        &raw mut ffi::PyCode_Type as usize
    }

    /// `calls=False`, enabled from a frame that returns at once (`Profile.__enter__`): walks of
    /// this thread stop at the frame `up` frames under the innermost one instead.
    pub fn base_up(slf: &Bound<'_, Profiler>, up: usize) {
        let p = slf.get();
        if !ACTIVE.holds(slf) || p.read(State::profiles_calls) {
            return;
        }
        let Some(Ok(own)) = OWN_FRAMES.get() else {
            return;
        };
        // SAFETY: GIL held by this thread, whose state this is.
        let (ts, base) = unsafe {
            let ts = ffi::PyThreadState_Get() as usize;
            (ts, own.frame_at(ts, code_type(), up))
        };
        p.write_with((ts, base.frame, base.code), |st, at| st.frame_base = at);
    }

    /// An object event on the timeline, if the profiler records one.
    ///
    /// # Safety
    /// GIL held; `st` valid; no reference into it alive across this call.
    unsafe fn note(st: *mut State, kind: u8, key: usize, type_index: u32, lane: Option<Lane>) {
        // SAFETY: as this function's own contract: one short exclusive access.
        let s = unsafe { &mut *st };
        if s.timeline.is_none() {
            return;
        }
        let t = s.memory_event_time();
        if let Some(tl) = s.timeline.as_deref_mut() {
            tl.record_object(kind, t, key, type_index, lane);
        }
    }

    /// The profiler's state and the calling thread's, if a profiler is charged and this thread
    /// may touch it (and this is not the tracer's own work).
    fn charged() -> Option<(*mut State, *mut ffi::PyThreadState)> {
        if INSIDE.load(Ordering::Relaxed) {
            return None;
        }
        ACTIVE.charged()
    }

    /// A type object is being freed: its address may serve another type.
    fn forget(ty: usize) {
        let slot = ignored_slot(ty);
        if slot.load(Ordering::Relaxed) == ty {
            slot.store(0, Ordering::Relaxed);
        }
        if let Some((st, _)) = charged() {
            // SAFETY: GIL held (charged); a short exclusive access.
            if let Some(t) = unsafe { (*st).types.as_deref_mut() } {
                t.ledger.forget_type(ty);
            }
        }
    }

    /// Decides whether the type at `ty` is counted, from its names, the first time one of its
    /// objects is seen.
    ///
    /// # Safety
    /// GIL held; `ty` a live type object.
    unsafe fn decide(t: &mut TypeTracking, ty: *mut ffi::PyTypeObject, flags: u64) -> Decision {
        let heap = flags & ffi::Py_TPFLAGS_HEAPTYPE != 0;
        INSIDE.store(true, Ordering::Relaxed);
        // SAFETY: GIL held; an exception in flight (objects are made while one is raised) is
        // put aside and back, so that the calls below start clean and leave it as it was.
        let names = unsafe {
            let pending = ffi::PyErr_GetRaisedException();
            let full = name_of(ffi::PyType_GetFullyQualifiedName(ty));
            let qual = name_of(ffi::PyType_GetQualName(ty));
            ffi::PyErr_Clear();
            ffi::PyErr_SetRaisedException(pending);
            full.zip(qual)
        };
        INSIDE.store(false, Ordering::Relaxed);
        // The profiler's own objects (its callbacks, snapshots) are not the program's.
        let name = names
            .filter(|(full, _)| !full.starts_with("rprofile."))
            .and_then(|(full, qual)| t.wants(&full, &qual, heap).then_some(full));
        t.ledger.decide(ty as usize, name)
    }

    /// The text of a new reference to a str (released), None for a null or non-str one.
    ///
    /// # Safety
    /// GIL held; `s` null or a new reference.
    unsafe fn name_of(s: *mut ffi::PyObject) -> Option<String> {
        if s.is_null() {
            return None;
        }
        let mut len: ffi::Py_ssize_t = 0;
        // SAFETY: GIL held; `s` is a live object; the bytes are copied before it is released.
        let text = unsafe {
            let utf8 = ffi::PyUnicode_AsUTF8AndSize(s, &mut len);
            let text = (!utf8.is_null()).then(|| {
                let bytes = std::slice::from_raw_parts(utf8 as *const u8, len as usize);
                String::from_utf8_lossy(bytes).into_owned()
            });
            ffi::Py_DecRef(s);
            text
        };
        text
    }

    /// RuntimeError if another profiler tracks types, or another tool's reference tracer is
    /// installed (it is left in place).
    pub fn check_available(slf: &Bound<'_, Profiler>) -> PyResult<()> {
        if !ACTIVE.free_for(slf) {
            return Err(refused("another profiler is tracking types"));
        }
        if matches!(installed(), Installed::Other) {
            return Err(refused(
                "another reference tracer is installed (PyRefTracer_SetTracer): types=True \
                 leaves it in place",
            ));
        }
        Ok(())
    }

    /// Which reference tracer is installed.
    pub enum Installed {
        None,
        Ours,
        Other,
    }

    /// Which reference tracer is installed (GIL held).
    pub fn installed() -> Installed {
        let mut data = std::ptr::null_mut();
        // SAFETY: called with the GIL held (by the profiler's methods and the test face).
        match unsafe { PyRefTracer_GetTracer(&mut data) } {
            None => Installed::None,
            Some(f) if f as usize == trace as RefTracer as usize => Installed::Ours,
            Some(_) => Installed::Other,
        }
    }

    /// Makes `slf` the profiler charged with objects, through the interpreter's reference
    /// tracer (installed again if another tool removed it meanwhile). RuntimeError as
    /// `check_available` says.
    pub fn activate(slf: &Bound<'_, Profiler>) -> PyResult<()> {
        check_available(slf)?;
        if ACTIVE.holds(slf) && matches!(installed(), Installed::Ours) {
            return Ok(());
        }
        let p = slf.get();
        if !p.read(State::profiles_calls) {
            let own =
                OWN_FRAMES.get_or_init(|| OwnFrames::of_this_process().map_err(|e| e.to_string()));
            let own = own.as_ref().map_err(|why| {
                refused(&format!(
                    "calls=False cannot read this interpreter's frames: {why}"
                ))
            })?;
            // SAFETY: GIL held by this thread, whose state this is.
            let (ts, base) = unsafe {
                let ts = ffi::PyThreadState_Get() as usize;
                (ts, own.frame_at(ts, code_type(), 0))
            };
            p.write_with((ts, base.frame, base.code), |st, at| st.frame_base = at);
        }
        let skip = p.read(|st| st.types.as_deref().is_none_or(TypeTracking::skips_builtins));
        p.write(|st| {
            if let Some(t) = st.types.as_deref_mut() {
                t.ledger.forget_decisions();
            }
        });
        SKIP_STATIC.store(skip, Ordering::Relaxed);
        for slot in &IGNORED {
            slot.store(0, Ordering::Relaxed);
        }
        if !ACTIVE.holds(slf) {
            ACTIVE.take(slf);
        }
        // SAFETY: GIL held; `trace` is valid for the life of the process.
        if unsafe { PyRefTracer_SetTracer(Some(trace), std::ptr::null_mut()) } != 0 {
            ACTIVE.give_back(slf);
            return Err(PyErr::take(slf.py())
                .unwrap_or_else(|| refused("the reference tracer could not be installed")));
        }
        Ok(())
    }

    /// Whether `slf` is the profiler the tracer charges.
    pub fn is_active(slf: &Bound<'_, Profiler>) -> bool {
        ACTIVE.holds(slf)
    }

    /// Stops charging `slf` (if it is the active profiler); removes the tracer if it is still
    /// ours (another tool's, installed since, stays).
    pub fn deactivate(slf: &Bound<'_, Profiler>) {
        if !ACTIVE.give_back(slf) {
            return;
        }
        let now = installed();
        if !matches!(now, Installed::Ours) {
            // Counting stopped when another tool replaced or removed the tracer: say so.
            let py = slf.py();
            let _ = PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
                c"another tool removed rprofile's reference tracer while it profiled: the \
                  type counts stop where it did",
                1,
            );
        }
        if matches!(now, Installed::Ours) {
            // SAFETY: GIL held; no tracer is what was there before ours (activate refuses
            // otherwise).
            if unsafe { PyRefTracer_SetTracer(None, std::ptr::null_mut()) } != 0 {
                // SAFETY: GIL held; the tracer stays but charges nobody (ACTIVE is empty).
                unsafe { ffi::PyErr_Clear() };
            }
        }
    }
}
