//! The per-event path: what a call or a return does once a front end has it, shared by both
//! front ends (the profile hook on 3.10/3.11, `sys.monitoring` on 3.12+). No allocation and no
//! Python call happen here once a function has been seen, unless the user gave a Python timer.
//!
//! The map of one event, outermost first (a return takes the same steps with "leave"/"stop"):
//!
//! 1. The front end's callback (`hook/legacy/callbacks.rs` `hook_for::<MODE>`,
//!    `hook/monitoring.rs` the `PY_START`/`CALL`/... callbacks) turns the event into a key: a
//!    code object's address, or a builtin's `PyMethodDef`. It was installed for the profiler's
//!    fast-path mode (`State::fast`, chosen in `mode.rs`; [`for_fast_mode!`] picks the copy).
//! 2. Fast path: [`enter_fast`] / [`enter_fast_as`] -> `enter_fast_on` -> `fast_parts` (the
//!    calling thread's track in place, room in the timeline) -> `Aggregator::enter_cached_as`
//!    (core/aggregator.rs: the key and edge caches of core/lookup_cache.rs, the push on
//!    core/frames.rs's stack, the TSC read inline) -> the timeline slot written. No call is
//!    made: the callback stays a leaf function. False sends the event on to step 3.
//! 3. Cached path: [`enter_call`] (`TRIED`: a fast path was tried) ->
//!    `selected` (the event's one `threads::select`: the calling thread's track swapped in) ->
//!    `enter_cached_on`: with the plain clock, `Aggregator::enter_cached`, the timeline recorded
//!    with `Timeline::record`; not tried after a fast path that made the same test (the flag
//!    alone, `FAST_ON`).
//! 4. General path: `enter_general` (on the track selected in step 3): the entry
//!    found or made (`new_entry`, which runs the label maker: Python), the call pushed
//!    (`Aggregator::enter`), the clock read ([`now`]: the native clock, or
//!    `timer::call` for a Python timer, read before the push), `State::timeline_enter`.
//!
//! Coroutines (`async_aware`) go through [`suspend_call`] / [`resume_call`], and
//! [`flush_unmatched`] closes what is still open at `disable()`. The allocator hooks
//! (`memory_hook.rs`) charge the function on top of the same stack.

use pyo3::ffi;
use pyo3::prelude::*;

use crate::core::aggregator::Aggregator;
use crate::core::clock;
use crate::core::counters::EntryId;
use crate::core::frames::Stack;
use crate::core::timeline;
use crate::tracer::exception::SavedException;
use crate::tracer::state::{Profiler, State};
use crate::tracer::state::{FAST_NONE, FAST_ON, FAST_WITH_THREADS, FAST_WITH_TIMELINE};
use crate::tracer::threads;
use crate::tracer::timer;

/// Reads the profiler's timer, in timer units, with the calibration bias applied.
///
/// # Safety
/// GIL held; `p` is alive. No reference into the state is held by the caller across this call,
/// since a Python timer may run arbitrary code (and, on 3.12+, let other threads deliver events).
#[inline(always)]
pub unsafe fn now(py: Python<'_>, p: &Profiler) -> i64 {
    let st = p.state_ptr();
    // SAFETY: a short read of a plain field; no other borrow is alive (function contract).
    if unsafe { (*st).plain_clock } {
        return clock::now();
    }
    // SAFETY: GIL held, `p` alive and no borrow of its state held across the call (this
    // function's contract, which `now_slow` has too).
    unsafe { now_slow(py, p) }
}

/// [`now`] with a Python timer or a calibration bias.
#[cold]
unsafe fn now_slow(py: Python<'_>, p: &Profiler) -> i64 {
    let st = p.state_ptr();
    // SAFETY: short-lived reads of plain fields; no other borrow is alive (caller's contract).
    let (external, bias, native) = unsafe { ((*st).external_timer, (*st).bias_units, (*st).clock) };
    let t = if external {
        // SAFETY: as above.
        let reads = unsafe { (*st).timer_reads };
        // SAFETY: as above; the timer call happens with no borrow alive. It may run other
        // threads' Python code, whose events swap the tracks: ours is put back after it (an
        // event selects a second time only after Python code ran, as here).
        let t = unsafe { timer::call(py, p) };
        // SAFETY: as above. (Not while disable() closes the open calls of each track in turn:
        // profiling is off then, and the track in place is the one being closed.)
        unsafe {
            if (*st).enabled {
                threads::select(st);
            }
            (*st).order_timer_reading(t, reads)
        }
    } else {
        native.now()
    };
    // profile.Profile subtracts the bias once per event; we take it off the clock instead, so
    // every interval loses `bias` per event it contains, and a changed bias only affects later
    // events. What was taken stays taken after the bias goes back to zero: a call open across
    // that change keeps what it lost.
    // SAFETY: short-lived exclusive access to an accumulator.
    let acc = unsafe {
        (*st).bias_acc += bias;
        (*st).bias_acc
    };
    if acc == 0.0 {
        return t;
    }
    t.wrapping_sub(acc.round() as i64)
}

/// The profiler's state with the calling thread's track in place (threads=True; a test of a
/// flag otherwise): the one `threads::select` of an event, made before anything of the track
/// is read. Only Python code run later in the event (a label, a thread's name, a Python timer)
/// can swap the tracks again; each of those places selects again after it.
///
/// # Safety
/// GIL held; `p` is alive; no reference into its state is held by the caller.
#[inline(always)]
unsafe fn selected(p: &Profiler) -> *mut State {
    let st = p.state_ptr();
    // SAFETY: the contract `threads::select` asks for is this function's.
    unsafe { threads::select(st) };
    st
}

/// A function identified by `key` starts (or resumes). `make_label` gives the object that names
/// it (the code object, or a label str for a builtin) and runs only the first time `key` is seen.
/// The calling thread's track is selected once, then the cached path is tried (with the plain
/// clock) and else the general one. `TRIED`: the callback's fast path ([`enter_fast`],
/// [`enter_fast_as`]) declined this key. Under the fast-path flag alone (no threads, no
/// timeline) that path made the cached path's very test (the same caches, stack and clock),
/// which would fail again, so the event goes to the general path at once; with threads or a
/// timeline the fast path may have declined for its own reasons (another thread's track in
/// place, no room), and the cached path is tried.
///
/// # Safety
/// GIL held; `p` is alive; no reference into its state is held by the caller.
#[inline(always)]
pub unsafe fn enter_call<const TRIED: bool>(
    py: Python<'_>,
    p: &Profiler,
    key: usize,
    make_label: impl FnOnce() -> PyResult<Py<PyAny>>,
) {
    // SAFETY: GIL held, `p` alive, no borrow of its state alive (this function's contract).
    let st = unsafe { selected(p) };
    // SAFETY: a short read of a flag of `p`'s state, with no other borrow of it alive.
    let tested = TRIED && unsafe { (*st).fast } == FAST_ON;
    // SAFETY: `st` is `p`'s state with our track in place and no other borrow of it alive.
    if !tested && unsafe { enter_cached_on(st, key) } {
        return;
    }
    // SAFETY: our track is in place (selected above; nothing since ran Python) and no borrow of
    // the state is alive.
    unsafe { enter_general(py, p, key, None, make_label) }
}

/// The cached path of an enter, with the plain clock: a function seen before, called from one
/// seen calling it before, and room on the stack. Whether it took the event.
///
/// # Safety
/// `st` is a profiler's state with the calling thread's track in place and no other borrow
/// of it alive; GIL held.
#[inline(always)]
unsafe fn enter_cached_on(st: *mut State, key: usize) -> bool {
    // SAFETY: nothing in this block calls Python (function contract for the rest). The
    // stack's calls are its aggregator's (as in `enter_fast_on`).
    unsafe {
        let s = &mut *st;
        if !s.plain_clock {
            return false;
        }
        let mut t = 0;
        let now = |_| {
            t = clock::now();
            t
        };
        if !s.agg.enter_cached(&mut s.stack, key, now) {
            return false;
        }
        if let Some(tl) = s.timeline.as_deref_mut() {
            tl.record(timeline::ENTER, t, key, s.stack.frames.len() - 1);
        }
        true
    }
}

/// The fast-path flags that callbacks are specialized for (see [`enter_fast`]).
pub const FAST_TIMELINE: u8 = FAST_ON | FAST_WITH_TIMELINE;
pub const FAST_THREADS: u8 = FAST_ON | FAST_WITH_THREADS;
pub const FAST_TIMELINE_THREADS: u8 = FAST_ON | FAST_WITH_TIMELINE | FAST_WITH_THREADS;

/// Runs the copy of a fast path (`enter_fast_on` or `leave_fast_on`) that the callback's mode
/// `$mode` (a constant) names, if the state's fast-path flag is that mode, or answers false; with
/// `trusted`, the flag is not read (the caller knows it is `$mode`). A macro, so that each copy
/// is inlined where it is used and the constant tests fold away. Must be used inside `unsafe`,
/// with no borrow of the state alive.
macro_rules! by_mode {
    ($mode:expr, $p:expr, $path:ident, $key:expr) => {{
        let st = $p.state_ptr();
        if (*st).fast != $mode {
            false
        } else {
            by_mode!($mode, $p, trusted, $path, $key)
        }
    }};
    ($mode:expr, $p:expr, trusted, $path:ident, $key:expr) => {{
        let st = $p.state_ptr();
        match $mode {
            FAST_NONE => false,
            FAST_ON => $path::<false, false>(&mut *st, $key),
            FAST_TIMELINE => $path::<true, false>(&mut *st, $key),
            FAST_THREADS => $path::<false, true>(&mut *st, $key),
            _ => $path::<true, true>(&mut *st, $key),
        }
    }};
}

/// `$make::<MODE>()` for the mode equal to the runtime fast-path flag `$fast` ([`FAST_NONE`] for any
/// other value): how a front end picks the callbacks specialized for a profiler's flag.
macro_rules! for_fast_mode {
    ($fast:expr, $make:ident) => {{
        use $crate::tracer::events::{FAST_THREADS, FAST_TIMELINE, FAST_TIMELINE_THREADS};
        use $crate::tracer::state::{FAST_NONE, FAST_ON};
        match $fast {
            FAST_ON => $make::<FAST_ON>(),
            FAST_TIMELINE => $make::<FAST_TIMELINE>(),
            FAST_THREADS => $make::<FAST_THREADS>(),
            FAST_TIMELINE_THREADS => $make::<FAST_TIMELINE_THREADS>(),
            _ => $make::<FAST_NONE>(),
        }
    }};
}
pub(crate) use for_fast_mode;

/// The common case of [`enter_call`]: a function seen before, called from one seen calling it
/// before, with the default clock read inline (the TSC) and subcalls on, room in the timeline
/// if one is recorded, and with threads=True the calling thread's track in place. Makes no
/// call, so a callback that tries it first and hands every other event on with values it
/// already holds compiles to a leaf that saves no registers. False if the event must take the
/// general path.
///
/// `MODE` is the fast-path flag (`State::fast`) the calling callback was made for, chosen when it
/// was installed: the path for that flag is compiled in, and the state's flag is compared with
/// it, one test where a dispatch on the flag would take a jump table. A flag changed since
/// (a bias set while profiling) sends every event to the general path, which is always right.
///
/// # Safety
/// As for [`enter_call`].
#[inline(always)]
#[cfg(not(Py_3_12))]
pub unsafe fn enter_fast<const MODE: u8>(p: &Profiler, key: usize) -> bool {
    // SAFETY: GIL held and no borrow of the state alive (this function's contract): a short
    // read of the flag, then exclusive access for the path the flag allows, which runs no Python.
    unsafe { by_mode!(MODE, p, enter_fast_on, key) }
}

/// [`enter_fast`] for a caller that knows the state's fast-path flag is `MODE` (the `sys.monitoring`
/// callbacks, whose entry points are swapped when the flag changes: `hook::fast_mode_changed`), so
/// the flag is not read.
///
/// # Safety
/// As for [`enter_call`]; the state's fast-path flag is `MODE`.
#[inline(always)]
#[cfg(Py_3_12)]
pub unsafe fn enter_fast_as<const MODE: u8>(p: &Profiler, key: usize) -> bool {
    // SAFETY: as in `enter_fast`; the flag is `MODE` (function contract).
    unsafe { by_mode!(MODE, p, trusted, enter_fast_on, key) }
}

/// [`leave_fast`] for a caller that knows the state's fast-path flag is `MODE`, as
/// [`enter_fast_as`].
///
/// # Safety
/// As for [`enter_fast_as`].
#[inline(always)]
#[cfg(Py_3_12)]
pub unsafe fn leave_fast_as<const MODE: u8>(p: &Profiler, key: usize) -> bool {
    // SAFETY: as in `enter_fast_as`.
    unsafe { by_mode!(MODE, p, trusted, leave_fast_on, key) }
}

/// The state split for a fast path, if one may run on it as it is: the timeline's free slot
/// (`TIMELINE`: None without room), the aggregator and the stack. With threads=True
/// (`THREADS`), the track in place must be the calling thread's. That is known when the last
/// event that made sure of it came from the thread with this thread pointer and the track
/// still has calls open: its thread is then alive, so no other live thread has that pointer
/// (with none open, the thread may have ended and its pointer gone to a new one). The slot is
/// taken before the bookkeeping, so that the write after it needs no second test.
#[inline(always)]
fn fast_parts<const TIMELINE: bool, const THREADS: bool>(
    s: &mut State,
) -> Option<(Option<timeline::Slot<'_>>, &mut Aggregator, &mut Stack)> {
    if THREADS && (s.fast_thread != threads::thread_pointer() || s.stack.frames.is_empty()) {
        return None;
    }
    // With the timeline flag, no timeline (never the case) or no room takes the general path,
    // so the slot is there exactly when TIMELINE is: its test folds away.
    let slot = if TIMELINE {
        Some(s.timeline.as_deref_mut()?.free_slot()?)
    } else {
        None
    };
    Some((slot, &mut s.agg, &mut s.stack))
}

/// [`enter_fast`] once its flag has been read. (Functions, not closures, so that every copy is
/// inlined into the callbacks.)
#[inline(always)]
fn enter_fast_on<const TIMELINE: bool, const THREADS: bool>(s: &mut State, key: usize) -> bool {
    let Some((slot, agg, stack)) = fast_parts::<TIMELINE, THREADS>(s) else {
        return false;
    };
    let mut t = 0;
    let now = |_| {
        t = clock::tsc_now();
        t
    };
    // Subcalls are on (the flag's condition).
    // SAFETY: the stack is the track's own, kept with its aggregator (swapped and cleared with
    // it): every call on it is that aggregator's.
    if !unsafe { agg.enter_cached_as(stack, key, now, true) } {
        return false;
    }
    // Recorded after the push (on a leave, where the clock is read): fewer values stay live
    // across the bookkeeping.
    if let Some(slot) = slot {
        slot.record(timeline::ENTER, t, key, stack.frames.len() - 1);
    }
    true
}

/// The common case of [`leave_call`], as [`enter_fast`] is of [`enter_call`]: the return of
/// the call on top of the stack, opened by a cached path or found in the caches since.
///
/// # Safety
/// As for [`enter_call`].
#[inline(always)]
#[cfg(not(Py_3_12))]
pub unsafe fn leave_fast<const MODE: u8>(p: &Profiler, key: usize) -> bool {
    // SAFETY: as in `enter_fast`.
    unsafe { by_mode!(MODE, p, leave_fast_on, key) }
}

/// [`leave_fast`] once its flag has been read, as [`enter_fast_on`].
#[inline(always)]
fn leave_fast_on<const TIMELINE: bool, const THREADS: bool>(s: &mut State, key: usize) -> bool {
    let Some((slot, agg, stack)) = fast_parts::<TIMELINE, THREADS>(s) else {
        return false;
    };
    // The event is recorded where the clock is read, before the call is closed: fewer values
    // are live across the rest (fewer registers saved) than after it.
    let now = |depth| {
        let t = clock::tsc_now();
        if let Some(slot) = slot {
            slot.record(timeline::LEAVE, t, key, depth);
        }
        t
    };
    // Subcalls are on (the flag's condition).
    // SAFETY: as in `enter_fast_on`.
    unsafe { agg.stop_cached_as(stack, key, now, true) }.is_some()
}

/// The general path of [`enter_call`] (the cached one declined or could not be tried), with
/// the caller edge charged to the function `caller` (a key) instead of the one on top of the
/// stack, if given and known (a task's coroutine and the coroutine that created it).
///
/// # Safety
/// As for [`enter_call`]; the calling thread's track is in place ([`selected`], with no Python
/// code run since).
#[inline(never)]
unsafe fn enter_general(
    py: Python<'_>,
    p: &Profiler,
    key: usize,
    caller: Option<usize>,
    make_label: impl FnOnce() -> PyResult<Py<PyAny>>,
) {
    let st = p.state_ptr();
    // SAFETY: a short read of our track's aggregator (in place: function contract), with the
    // GIL held and no other borrow alive; the lookup runs no Python.
    let found = unsafe { (*st).agg.get(key) };
    let id = match found {
        Some(id) => id,
        // SAFETY: GIL held and no borrow of the state alive (function contract); `new_entry`
        // selects our track again after the label's Python code.
        None => match unsafe { new_entry(p, key, make_label) } {
            Some(id) => id,
            None => return,
        },
    };
    // _lsprof reads the clock last on enter, so the bookkeeping is not charged to the callee.
    // SAFETY: exclusive access; nothing here calls Python, except `enter_after_timer`, reached
    // with `s` no longer used.
    unsafe {
        let s = &mut *st;
        if s.plain_no_timeline {
            push(s, id, caller);
            s.stack.set_top_t0(clock::now());
            return;
        }
        if s.plain_clock {
            push(s, id, caller);
            let t = clock::now();
            s.stack.set_top_t0(t);
            s.timeline_enter(t);
            return;
        }
        if s.external_timer {
            // SAFETY: GIL held; `s` is not used after this call, so no borrow is alive in it;
            // `id` was found or made on our track, which is in place.
            return enter_after_timer(py, p, id, caller);
        }
        push(s, id, caller);
    }
    // SAFETY: no borrow is alive across the clock read (a native clock, which runs no Python:
    // the call just pushed is still on top after it).
    let t = unsafe { now(py, p) };
    // SAFETY: short exclusive access.
    unsafe {
        let s = &mut *st;
        s.stack.set_top_t0(t);
        s.timeline_enter(t);
    }
}

/// Pushes a call of entry `id` on the track in place, its edge from `caller` (a key) if given
/// and known, else from the call on top.
#[inline(always)]
fn push(s: &mut State, id: EntryId, caller: Option<usize>) {
    let caller = caller.and_then(|c| s.agg.find(c));
    s.agg.enter(&mut s.stack, id, caller);
}

/// The end of [`enter_general`] with a Python timer: the timer is read before the call is
/// pushed, not after as `_lsprof` does. The timer runs Python, which may let other threads
/// deliver events; with threads=False they share this stack, and would find the call on top
/// with no start time yet (and close it, or put theirs above it). Pushed after the reading,
/// the call is complete whenever another event can see it. (Nothing observable changes with
/// one thread: the timer is called at the same events, and each reading times the same call.)
///
/// # Safety
/// As for [`enter_call`]; `id` names an entry of the calling thread's track.
#[cold]
#[inline(never)]
unsafe fn enter_after_timer(py: Python<'_>, p: &Profiler, id: EntryId, caller: Option<usize>) {
    // SAFETY: no borrow is alive across the timer; `now` selects our track again after it.
    // (clear(), which would drop `id`'s entry, is refused while a timer runs.)
    let t = unsafe { now(py, p) };
    // SAFETY: short exclusive access; nothing here calls Python.
    unsafe {
        let s = &mut *p.state_ptr();
        push(s, id, caller);
        s.stack.set_top_t0(t);
        s.timeline_enter(t);
    }
}

/// The function identified by `key` returns, yields or unwinds. `TRIED`: as for
/// [`enter_call`], with [`leave_fast`] and [`leave_fast_as`].
///
/// # Safety
/// As for [`enter_call`].
#[inline(always)]
pub unsafe fn leave_call<const TRIED: bool>(py: Python<'_>, p: &Profiler, key: usize) {
    // SAFETY: GIL held, `p` alive, no borrow of its state alive (this function's contract).
    let st = unsafe { selected(p) };
    // SAFETY: a short read of the flag; then our track is in place and no borrow is alive.
    unsafe {
        if TRIED && (*st).fast == FAST_ON {
            return leave_general(py, p, key);
        }
        leave_selected(py, p, st, key)
    }
}

/// [`leave_call`] once the calling thread's track is in place: the cached path (with the plain
/// clock), else the general one.
///
/// # Safety
/// As for [`enter_general`]; `st` is `p`'s state.
#[inline(always)]
unsafe fn leave_selected(py: Python<'_>, p: &Profiler, st: *mut State, key: usize) {
    // The cached path, with the plain clock: the return of the call on top of the stack, its
    // edge (if any) opened with it.
    // SAFETY: no other borrow of the state is alive (function contract); nothing in this block
    // calls Python. The stack's calls are its aggregator's (as in `enter_fast_on`).
    unsafe {
        let s = &mut *st;
        if s.plain_clock {
            let tl = s.timeline.as_deref_mut();
            // As in `leave_fast_on`.
            let now = |depth| {
                let t = clock::now();
                if let Some(tl) = tl {
                    tl.record(timeline::LEAVE, t, key, depth);
                }
                t
            };
            if s.agg.stop_cached(&mut s.stack, key, now).is_some() {
                return;
            }
        }
    }
    // SAFETY: the contract of `leave_general` is this function's.
    unsafe { leave_general(py, p, key) }
}

/// The general path of [`leave_call`].
///
/// # Safety
/// As for [`enter_general`].
#[inline(never)]
unsafe fn leave_general(py: Python<'_>, p: &Profiler, key: usize) {
    let st = p.state_ptr();
    // SAFETY: exclusive access for the bookkeeping, on our track (in place: function contract);
    // nothing here calls Python.
    let id = unsafe {
        let s = &mut *st;
        let Some(top) = s.stack.top_entry() else {
            return;
        };
        // Nearly every return is of the call on top of the stack, whose entry is then the one
        // the key names: no lookup.
        if s.agg
            .entries
            .get(top as usize)
            .is_some_and(|e| e.key == key)
        {
            top
        } else {
            match s.agg.get(key) {
                Some(id) => id,
                None => {
                    // A return for a function never entered pops the top, as _lsprof does.
                    s.timeline_leave(None);
                    s.agg.discard_top(&mut s.stack);
                    return;
                }
            }
        }
    };
    // SAFETY: as above.
    unsafe {
        let s = &mut *st;
        if s.plain_no_timeline {
            let t = clock::now();
            s.agg.stop(&mut s.stack, id, t);
            return;
        }
        if s.plain_clock {
            let t = clock::now();
            s.timeline_leave(Some(t));
            s.agg.stop(&mut s.stack, id, t);
            return;
        }
    }
    // SAFETY: no borrow is alive across the timer.
    let t = unsafe { now(py, p) };
    // SAFETY: exclusive access for the bookkeeping; nothing here calls Python.
    unsafe {
        let s = &mut *st;
        s.timeline_leave(Some(t));
        s.agg.stop(&mut s.stack, id, t);
    }
}

/// Whether `code` is a coroutine's (`CO_COROUTINE`), remembered per code object.
///
/// # Safety
/// GIL held; `code` is a live code object; no borrow of the state alive.
pub unsafe fn is_coroutine(py: Python<'_>, p: &Profiler, code: *mut ffi::PyObject) -> bool {
    const CO_COROUTINE: i64 = 0x80;
    let st = p.state_ptr();
    // SAFETY: short read.
    if let Some(&known) = unsafe { (*st).coroutine_code.get(&(code as usize)) } {
        return known;
    }
    // SAFETY: `code` is alive for the event; reading co_flags runs no Python code.
    let flags = unsafe { Bound::from_borrowed_ptr(py, code) }
        .getattr("co_flags")
        .and_then(|f| f.extract::<i64>())
        .unwrap_or(0);
    let yes = flags & CO_COROUTINE != 0;
    // SAFETY: short write.
    unsafe { (*st).coroutine_code.insert(code as usize, yes) };
    yes
}

/// A coroutine's frame suspends (it awaits): its call is set aside, not ended
/// (`Profile(async_aware=True)`).
///
/// # Safety
/// As for [`enter_call`]; `frame` is the suspending frame's address.
pub unsafe fn suspend_call(py: Python<'_>, p: &Profiler, key: usize, frame: usize) {
    // SAFETY: GIL held, `p` alive, no borrow of its state alive (this function's contract).
    let st = unsafe { selected(p) };
    // SAFETY: short exclusive access with the GIL held; the lookups run no Python.
    let mine = unsafe {
        let s = &mut *st;
        match (s.agg.get(key), s.stack.top_entry()) {
            (Some(id), Some(top)) => id == top,
            _ => false,
        }
    };
    if !mine {
        // SAFETY: our track is in place (selected above, no Python code run since) and no
        // borrow of the state is alive.
        return unsafe { leave_selected(py, p, st, key) };
    }
    // SAFETY: no borrow across the timer.
    let t = unsafe { now(py, p) };
    // SAFETY: exclusive access; nothing here calls Python.
    unsafe {
        let s = &mut *st;
        s.timeline_leave(Some(t));
        if let Some(saved) = s.agg.suspend(&mut s.stack, t) {
            s.suspended.insert(frame, (s.thread, saved));
        }
    }
}

/// A coroutine's frame starts for the first time: a call still set aside for its address is a
/// coroutine's that had the same frame and finished where the profiler did not see it (a thread
/// without the hook). That call is closed as it stood when it was suspended, its last moment
/// seen.
///
/// # Safety
/// As for [`enter_call`].
#[cfg(not(Py_3_12))]
pub unsafe fn close_stale(p: &Profiler, frame: usize) {
    // SAFETY: GIL held, `p` alive, no borrow of its state alive (this function's contract).
    let st = unsafe { selected(p) };
    // SAFETY: short exclusive access; nothing here calls Python.
    unsafe {
        let s = &mut *st;
        let Some((thread, saved)) = s.suspended.remove(&frame) else {
            return;
        };
        if thread != s.thread {
            return; // another thread's track holds it: forgotten
        }
        // Back on top and ended at the same instant: the call counts, with the time it ran;
        // the call now on top is charged nothing. (Its timeline slice ended at the suspension.)
        let at = saved.at;
        s.agg.resume(&mut s.stack, saved, at);
        if let Some(top) = s.stack.top_entry() {
            s.agg.stop(&mut s.stack, top, at);
        }
    }
}

/// A coroutine's frame resumes: its set-aside call goes back on the stack. A frame with no
/// suspended call (a first start, or one suspended on another thread) enters as usual.
///
/// # Safety
/// As for [`enter_call`].
pub unsafe fn resume_call(
    py: Python<'_>,
    p: &Profiler,
    key: usize,
    frame: usize,
    make_label: impl FnOnce() -> PyResult<Py<PyAny>>,
) {
    // SAFETY: GIL held, `p` alive, no borrow of its state alive (this function's contract).
    let st = unsafe { selected(p) };
    // SAFETY: short exclusive access; nothing here calls Python.
    let saved = unsafe {
        let s = &mut *st;
        match s.suspended.remove(&frame) {
            Some((thread, saved)) if thread == s.thread => Some(saved),
            _ => None,
        }
    };
    let Some(saved) = saved else {
        // A first start. A coroutine started by the event loop (a task) is charged as a callee
        // of the coroutine that created it, if one did.
        // SAFETY: short reads.
        let creator = unsafe {
            let s = &*st;
            let parent_is_coroutine = s
                .stack
                .top_entry()
                .map(|e| s.agg.entries[e as usize].key)
                .and_then(|k| s.coroutine_code.get(&k).copied())
                .unwrap_or(false);
            if parent_is_coroutine {
                None
            } else {
                s.creators.get(&key).copied()
            }
        };
        // SAFETY: our track is in place (selected above, nothing since ran Python) and no
        // borrow of the state is alive.
        return unsafe { enter_general(py, p, key, creator, make_label) };
    };
    // SAFETY: no borrow across the timer.
    let t = unsafe { now(py, p) };
    // SAFETY: exclusive access; nothing here calls Python.
    unsafe {
        let s = &mut *st;
        s.agg.resume(&mut s.stack, saved, t);
        s.timeline_enter(t);
    }
}

/// An async function is called (its coroutine object is made): remembers the coroutine on top
/// of the stack as the creator of coroutines of `code`, for when one starts as a task.
///
/// # Safety
/// GIL held; no borrow of the state alive.
#[cfg(Py_3_12)]
pub unsafe fn coroutine_created(p: &Profiler, code: usize) {
    // SAFETY: GIL held, `p` alive, no borrow of its state alive (this function's contract).
    let st = unsafe { selected(p) };
    // SAFETY: short exclusive access; nothing here calls Python.
    unsafe {
        let s = &mut *st;
        let top = s.stack.top_entry().map(|e| s.agg.entries[e as usize].key);
        if let Some(k) = top.filter(|k| s.coroutine_code.get(k).copied().unwrap_or(false)) {
            s.creators.insert(code, k);
        }
    }
}

/// Puts the current track's suspended coroutine calls back on its stack (at disable, so that
/// they are closed like every other open call).
unsafe fn resume_all_suspended(py: Python<'_>, p: &Profiler) {
    let st = p.state_ptr();
    // SAFETY: short exclusive access.
    let mine: Vec<usize> = unsafe {
        let s = &*st;
        s.suspended
            .iter()
            .filter(|(_, (thread, _))| *thread == s.thread)
            .map(|(&f, _)| f)
            .collect()
    };
    for frame in mine {
        // SAFETY: no borrow across the timer.
        let t = unsafe { now(py, p) };
        // SAFETY: exclusive access; nothing here calls Python.
        unsafe {
            let s = &mut *st;
            if let Some((_, saved)) = s.suspended.remove(&frame) {
                s.agg.resume(&mut s.stack, saved, t);
                s.timeline_enter(t);
            }
        }
    }
}

/// Closes every call still open, each ending now (cProfile's `flush_unmatched` at `disable()`).
///
/// # Safety
/// As for [`enter_call`].
pub unsafe fn flush_unmatched(py: Python<'_>, p: &Profiler) {
    let st = p.state_ptr();
    // Other threads' open calls end now too (parked tracks are swapped in one by one; this
    // runs inside disable(), which refuses to run while an event is being handled).
    // SAFETY: short exclusive access.
    let parked = unsafe { (*st).parked.len() };
    for i in 0..parked {
        // SAFETY: exclusive access for the swap; the flush manages its own borrows.
        unsafe {
            let s = &mut *st;
            let Some((_, slot)) = s.parked.get_index_mut(i) else {
                break;
            };
            let mut t = std::mem::replace(slot, crate::tracer::track::Track::empty());
            crate::tracer::threads::swap_in(s, &mut t);
            s.timeline_thread_of_track();
            resume_all_suspended(py, p);
            flush_current(py, p);
            let s = &mut *st;
            crate::tracer::threads::swap_in(s, &mut t);
            if let Some((_, slot)) = s.parked.get_index_mut(i) {
                *slot = t;
            }
            s.timeline_thread_of_track();
        }
    }
    // SAFETY: GIL held and no borrow of the state alive (this function's contract); the two
    // calls take their own short borrows, and the last write is one.
    unsafe {
        resume_all_suspended(py, p);
        flush_current(py, p);
        (*st).suspended.clear();
    }
}

/// Closes the open calls of the current track.
unsafe fn flush_current(py: Python<'_>, p: &Profiler) {
    let st = p.state_ptr();
    // SAFETY: short exclusive read.
    while let Some(top) = unsafe { (*st).stack.top_entry() } {
        // SAFETY: no borrow across the timer.
        let t = unsafe { now(py, p) };
        // SAFETY: a short exclusive update; nothing here calls Python.
        unsafe {
            let s = &mut *st;
            s.timeline_leave(Some(t));
            s.agg.stop(&mut s.stack, top, t);
        }
    }
}

#[cold]
unsafe fn new_entry(
    p: &Profiler,
    key: usize,
    make_label: impl FnOnce() -> PyResult<Py<PyAny>>,
) -> Option<u32> {
    let st = p.state_ptr();
    // Making a label may run Python (a repr), which could collect garbage and so run finalizers.
    // SAFETY: short exclusive writes of a flag, with no other borrow alive.
    unsafe { (*st).busy += 1 };
    let label = {
        // An exception may be in flight (a generator entered by throw()); keep it intact.
        // SAFETY: GIL held.
        let _saved = unsafe { SavedException::save() };
        make_label()
    };
    // SAFETY: as above.
    unsafe { (*st).busy -= 1 };
    match label {
        Ok(obj) => {
            // The label's Python code may have let other threads' events swap the tracks:
            // ours back first. Another event may have created the entry meanwhile (a
            // finalizer's calls), so it is looked for again, and made if still missing, in
            // one lookup.
            // SAFETY: exclusive access; the label call is over.
            let (id, unnamed) = unsafe {
                threads::select(st);
                let s = &mut *st;
                let (id, made) = s.agg.get_or_insert(key);
                if !made {
                    return Some(id);
                }
                crate::core::aggregator::reserve_one(&mut s.user_objs);
                s.user_objs.push(obj);
                (id, s.threads && s.thread_info.name.is_none())
            };
            if unnamed {
                // A thread registers its name a few calls after its first event: look again
                // while it still meets new functions.
                // SAFETY: no reference into the state is alive; the lookup may run Python, so
                // our track is selected again after it.
                unsafe {
                    threads::name_current(st);
                    threads::select(st);
                }
            }
            Some(id)
        }
        Err(_) => {
            // Like _lsprof: the event is dropped, and the next disable()/getstats() raises.
            // SAFETY: short exclusive write.
            unsafe { (*st).nomemory = true };
            None
        }
    }
}
