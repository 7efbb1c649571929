//! Per-thread call stacks (`Profile(threads=True)`). Every thread gets its own track (stack,
//! totals and entry labels), so recursion and caller counts stay exact when threads interleave;
//! the tracks are added together into one profile when results are taken.
//!
//! The hot path keeps working on the profiler's one `agg`/`stack`/`user_objs`: those hold the
//! track of the thread that delivered the last event, and the others are parked. An event from
//! another thread swaps the tracks (a few words each) before it is handled; threads switch only
//! when the interpreter hands the GIL over, so nearly every event finds its track in place.

use pyo3::ffi;
use pyo3::prelude::*;

use crate::core::aggregator::Aggregator;
use crate::core::frames::Stack;
use crate::core::lookup_cache::EmptyCaches;
use crate::tracer::state::State;
use crate::tracer::track::{ThreadInfo, ThreadKey, Track};

/// Whether [`thread_pointer`] tells threads apart on this platform.
pub const HAS_THREAD_POINTER: bool = cfg!(all(target_arch = "x86_64", target_os = "linux"));

/// The calling thread's thread pointer: on x86_64 Linux the psABI puts it at `%fs:0`, distinct
/// for every live thread, read with no call (where the interpreter's thread state takes one).
/// It lets the callbacks' fast paths check that the track in place is the calling thread's.
/// 0 where [`HAS_THREAD_POINTER`] is false.
#[inline(always)]
pub fn thread_pointer() -> usize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let tp: usize;
        // SAFETY: a read of the thread control block's self-pointer, which the x86_64 psABI
        // requires at %fs:0 for every thread; no write, no stack, flags kept.
        unsafe {
            std::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) tp,
                options(pure, readonly, nostack, preserves_flags)
            );
        }
        tp
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        0
    }
}

/// The calling thread's state address.
///
/// # Safety
/// GIL held (so the thread has a thread state).
#[inline(always)]
unsafe fn current_tstate() -> usize {
    // SAFETY: GIL held: PyThreadState_Get returns this thread's (non-NULL) state.
    unsafe { ffi::PyThreadState_Get() as usize }
}

/// Makes the calling thread's track the current one, if threads are tracked.
///
/// # Safety
/// GIL held; `st` is valid and no reference into it is alive.
#[inline(always)]
pub unsafe fn select(st: *mut State) {
    // SAFETY: short read of a flag.
    if unsafe { !(*st).threads } {
        return;
    }
    // SAFETY: GIL held.
    let ts = unsafe { current_tstate() };
    // A thread state's address can be reused by a thread started after another ended. The
    // address alone is trusted while the current track has calls open (its thread is alive);
    // with none open, the thread may have ended, so the id is compared too.
    // SAFETY: short reads.
    if unsafe { (*st).thread.tstate == ts && !(*st).stack.frames.is_empty() } {
        // SAFETY: short write.
        unsafe { (*st).fast_thread = thread_pointer() };
        return;
    }
    // SAFETY: `ts` is this thread's live state.
    let id = unsafe { ffi::PyThreadState_GetID(ts as *mut ffi::PyThreadState) } as u64;
    // SAFETY: short reads.
    if unsafe { (*st).thread.tstate != ts || (*st).thread.id != id } {
        // SAFETY: GIL held (`ts` is this thread's live state), `st` valid and no reference
        // into it alive: `switch` asks for the same.
        unsafe { switch(st, ThreadKey { tstate: ts, id }) };
    }
    // The track in place is this thread's now (a switch ends by selecting it again).
    // SAFETY: short write.
    unsafe { (*st).fast_thread = thread_pointer() };
}

#[cold]
unsafe fn switch(st: *mut State, me: ThreadKey) {
    // SAFETY: exclusive access for the swap; nothing here runs Python.
    let new = unsafe {
        let s = &mut *st;
        let mut incoming = match s.parked.swap_remove(&me) {
            Some(t) => t,
            None => Track {
                key: me,
                info: ThreadInfo::default(),
                agg: Aggregator::without_caches(s.agg.subcalls),
                stack: Stack::default(),
                user_objs: Vec::new(),
            },
        };
        lend_caches(s, &mut incoming.agg, me);
        // A thread `threading` starts makes events before it registers its name: the name is
        // looked for again at each switch until found (switches are rare: GIL hand-overs).
        let unnamed = incoming.info.name.is_none();
        swap_in(s, &mut incoming);
        if let Some(tl) = s.timeline.as_deref_mut() {
            // (GIL held: this function's contract.)
            tl.set_thread(me.id, ffi::PyThread_get_thread_ident() as u64);
        }
        s.parked.insert(incoming.key, incoming);
        unnamed
    };
    if new {
        // SAFETY: GIL held, `st` valid, and the borrow of the swap above has ended (nothing
        // else refers into the state); the track is in place, so events this may cause (a
        // finalizer run by an allocation) find a consistent state. They may also swap the
        // tracks (another thread's), so ours is selected again after.
        unsafe {
            name_current(st);
            select(st);
        }
    }
}

/// Tracks that keep a full set of lookup caches (80 KB) at a time, at most: the ones switched
/// in most recently. A thread needs its set only while it runs, and a program may start
/// thousands of threads (one per request, say), each keeping its track until `disable()`.
/// Beyond this many threads taking turns, a switch passes a set on (~3 us: it is emptied, and
/// the thread finds it cold), so a pool of up to this many workers does not pay that.
pub const CACHED_TRACKS: usize = 32;

/// Gives `agg`, the aggregator of the track of thread `me` about to be switched in, a full set
/// of caches if it has none: the set of the track going out if that one has recorded nothing
/// (the track in place before the first thread's, say), else a new one while fewer than
/// [`CACHED_TRACKS`] tracks hold one, else the set of the track switched in least recently.
fn lend_caches(s: &mut State, agg: &mut Aggregator, me: ThreadKey) {
    let State {
        cache_holders: holders,
        parked,
        thread,
        agg: current,
        ..
    } = s;
    // The first track never came in by a switch; tracks dropped by `clear()` hold no set now.
    if current.has_full_caches() && !holders.contains(thread) {
        holders.insert(0, *thread);
    }
    holders.retain(|k| {
        *k != me
            && if k == thread {
                current.has_full_caches()
            } else {
                parked.get(k).is_some_and(|t| t.agg.has_full_caches())
            }
    });
    if !agg.has_full_caches() {
        let set = if current.has_full_caches() && current.entries.is_empty() {
            holders.retain(|k| k != thread);
            Some(current.take_caches())
        } else if holders.len() < CACHED_TRACKS {
            None
        } else {
            // The current track came in last, so it is not the oldest.
            let oldest = holders.remove(0);
            debug_assert!(oldest != *thread);
            parked.get_mut(&oldest).map(|t| t.agg.take_caches())
        };
        agg.put_caches(set.unwrap_or_else(EmptyCaches::full));
    }
    holders.push(me);
}

/// Exchanges the current track with `t`.
pub fn swap_in(s: &mut State, t: &mut Track) {
    // Until an event makes sure of the thread again.
    s.fast_thread = 0;
    std::mem::swap(&mut s.thread, &mut t.key);
    std::mem::swap(&mut s.thread_info, &mut t.info);
    std::mem::swap(&mut s.agg, &mut t.agg);
    std::mem::swap(&mut s.stack, &mut t.stack);
    std::mem::swap(&mut s.user_objs, &mut t.user_objs);
}

/// Records the current thread's ident and `threading` name, read without running Python code
/// (the `_active` registry and the `_name` attribute, not the `name` property).
///
/// # Safety
/// GIL held; `st` valid, no reference into it alive.
pub unsafe fn name_current(st: *mut State) {
    // SAFETY: GIL held.
    let ident = unsafe { ffi::PyThread_get_thread_ident() } as u64;
    // SAFETY: short write.
    unsafe { (*st).thread_info.ident = ident.max(1) };
    // SAFETY: GIL held (the caller's contract).
    let py = unsafe { Python::assume_attached() };
    // SAFETY: short writes of a counter: refuse disable()/clear() while Python objects are made.
    unsafe { (*st).busy += 1 };
    let name = {
        // SAFETY: GIL held; any error raised here is dropped with the guard's restore.
        let _saved = unsafe { crate::tracer::exception::SavedException::save() };
        thread_name(py, ident)
    };
    // SAFETY: short writes.
    unsafe {
        (*st).busy -= 1;
        (*st).thread_info.name = name;
    }
}

pub fn thread_name(py: Python<'_>, ident: u64) -> Option<String> {
    let threading = py.import("sys").ok()?.getattr("modules").ok()?;
    let threading = threading.get_item("threading").ok()?;
    let active = threading.getattr("_active").ok()?;
    let thread = active.get_item(ident).ok()?;
    thread.getattr("_name").ok()?.extract::<String>().ok()
}
