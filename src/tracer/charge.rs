//! What the allocator hooks (`memory_hook`) and the reference tracer (`types_hook`) share: the
//! profiler charged (`Slot`), whether the calling thread may charge it, and the function an event
//! is charged to.

use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

use crate::core::aggregator::Aggregator;
use crate::core::frames::{Context, Stack};
use crate::tracer::state::{Profiler, State};
use crate::tracer::track::ThreadKey;

/// The profiler a process-wide hook charges (a strong reference while set) and the interpreter
/// whose threads charge it. Written with the GIL held only.
pub struct Slot {
    obj: AtomicPtr<ffi::PyObject>,
    interp: AtomicPtr<ffi::PyInterpreterState>,
}

impl Slot {
    pub const fn new() -> Slot {
        Slot {
            obj: AtomicPtr::new(std::ptr::null_mut()),
            interp: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Whether `slf` is the profiler charged.
    pub fn holds(&self, slf: &Bound<'_, Profiler>) -> bool {
        self.obj.load(Ordering::Relaxed) == slf.as_ptr()
    }

    /// Whether no profiler, or `slf`, is charged.
    pub fn free_for(&self, slf: &Bound<'_, Profiler>) -> bool {
        let current = self.obj.load(Ordering::Relaxed);
        current.is_null() || current == slf.as_ptr()
    }

    /// Makes `slf` the profiler charged, from the calling thread's interpreter (GIL held).
    pub fn take(&self, slf: &Bound<'_, Profiler>) {
        // SAFETY: GIL held (a method of the profiler).
        self.interp
            .store(unsafe { ffi::PyInterpreterState_Get() }, Ordering::Relaxed);
        // SAFETY: a new strong reference, kept while the slot points at the object.
        unsafe { ffi::Py_IncRef(slf.as_ptr()) };
        self.obj.store(slf.as_ptr(), Ordering::Relaxed);
    }

    /// Stops charging `slf`; whether it was charged.
    pub fn give_back(&self, slf: &Bound<'_, Profiler>) -> bool {
        if !self.holds(slf) {
            return false;
        }
        self.obj.store(std::ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: the reference `take` added; `slf` still holds one, so this does not free it.
        unsafe { ffi::Py_DecRef(slf.as_ptr()) };
        true
    }

    /// The charged profiler's state and the calling thread's, if a profiler is charged and
    /// this thread holds the GIL of its interpreter.
    #[inline]
    pub fn charged(&self) -> Option<(*mut State, *mut ffi::PyThreadState)> {
        if self.obj.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let ts = gil_holder(self.interp.load(Ordering::Relaxed))?;
        let obj = self.obj.load(Ordering::Relaxed);
        if obj.is_null() {
            return None;
        }
        // SAFETY: this thread holds the GIL (gil_holder said so).
        let py = unsafe { Python::assume_attached() };
        // SAFETY: with the GIL held the slot cannot be emptied meanwhile (give_back holds the
        // GIL), and it holds a strong reference to a Profiler (take stores only one).
        let p = unsafe { Bound::ref_from_ptr(py, &obj).cast_unchecked::<Profiler>() }.get();
        Some((p.state_ptr(), ts))
    }
}

/// The calling thread's state if it holds the GIL of interpreter `interp` (the one charged).
#[inline]
fn gil_holder(interp: *mut ffi::PyInterpreterState) -> Option<*mut ffi::PyThreadState> {
    // SAFETY: may be called from any thread, with or without a thread state. From 3.12 it is
    // the calling thread's attached state (null while the GIL is released); before, it is the
    // GIL holder's, which the thread's own state must then be.
    let ts = unsafe { ffi::compat::PyThreadState_GetUnchecked() };
    if ts.is_null() {
        return None;
    }
    #[cfg(not(Py_3_12))]
    // SAFETY: as above; a TSS read.
    if unsafe { ffi::PyGILState_GetThisThreadState() } != ts {
        return None;
    }
    // SAFETY: `ts` is this thread's live state (checked above).
    let own = unsafe { ffi::PyThreadState_GetInterpreter(ts) };
    (own == interp).then_some(ts)
}

/// A thread's call stack and the aggregator of its calls' entries.
pub type Track<'a> = (&'a Aggregator, &'a Stack);
/// A thread's timeline lane: (interpreter id, ident).
pub type Lane = (u64, u64);

/// The calling thread's call stack and the aggregator of its calls' entries (None for a
/// thread with no track yet: no event of it seen), and, if that thread's track is not the one
/// in place, its timeline lane (interpreter id, ident).
///
/// # Safety
/// GIL held; `st` valid and not written while the references returned are alive.
pub unsafe fn current_track<'a>(
    st: *const State,
    ts: *mut ffi::PyThreadState,
) -> (Option<Track<'a>>, Option<Lane>) {
    // SAFETY: shared reads with the GIL held; the caller writes no part of the state they cover
    // while they are alive.
    let s = unsafe { &*st };
    if s.threads {
        let ts = ts as usize;
        if s.thread.tstate != ts {
            // Another thread's track is in place (the GIL changed hands since the last event).
            // SAFETY: `ts` is the calling thread's live state; the call does not allocate.
            let id = unsafe { ffi::PyThreadState_GetID(ts as *mut ffi::PyThreadState) } as u64;
            return match s.parked.get(&ThreadKey { tstate: ts, id }) {
                Some(t) => (Some((&t.agg, &t.stack)), Some((t.key.id, t.info.ident))),
                // A thread with no track yet (no event of it seen): its own lane all the same.
                // SAFETY: as above.
                None => (
                    None,
                    Some((id, unsafe { ffi::PyThread_get_thread_ident() } as u64)),
                ),
            };
        }
    }
    (Some((&s.agg, &s.stack)), None)
}

/// The key of the call `c` (0 if its entry is not found).
pub fn key_of(agg: &Aggregator, c: &Context) -> usize {
    agg.entries.get(c.entry() as usize).map_or(0, |e| e.key)
}

/// The function to charge: the key of the call on top of the calling thread's stack (0 when
/// it has none), and, if that thread's track is not the one in place, its timeline lane
/// (interpreter id, ident).
///
/// # Safety
/// GIL held; `st` valid; no reference into it is alive across this call (short reads).
pub unsafe fn current_key(st: *mut State, ts: *mut ffi::PyThreadState) -> (usize, Option<Lane>) {
    // SAFETY: as this function's own contract; the references end here.
    let (track, lane) = unsafe { current_track(st, ts) };
    let key = track
        .and_then(|(agg, stack)| stack.frames.last().map(|c| key_of(agg, c)))
        .unwrap_or(0);
    (key, lane)
}
