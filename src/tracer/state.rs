//! The profiler's data: the `Profiler` object (the `#[pyclass]`; its methods are in `class.rs`)
//! and the `State` every event reads and mutates, with the fast-path modes a callback can be
//! specialized for. Functions that change what a mode depends on are in `mode.rs`.

use std::cell::UnsafeCell;

use pyo3::prelude::*;

use crate::core::aggregator::Aggregator;
use crate::core::clock;
use crate::core::frames::Stack;
use crate::core::timeline::{self, Timeline};
use crate::tracer::hook_state::HookState;
use crate::tracer::track::{ThreadInfo, ThreadKey, Track};

/// Everything the event path mutates. Reached with the GIL held, in short borrows that never
/// span a call into Python: by the event path (`tracer/`, `hook/`) through
/// `Profiler::state_ptr`, whose raw reads its fast paths need, and by everything else through
/// `Profiler::read` and `Profiler::write`.
///
/// `repr(C)`, with what the callbacks' fast paths read first (the stack, the flags, the
/// timeline, the aggregator's arrays and caches), so that an event touches a few cache lines of
/// the state rather than one for each field it reads.
#[repr(C)]
pub struct State {
    pub stack: Stack,
    /// Which fast path the callbacks may try ([`FAST_NONE`], or [`FAST_ON`] with
    /// [`FAST_WITH_TIMELINE`] and [`FAST_WITH_THREADS`]): one test for the plain clock read inline (the
    /// TSC) and subcalls on, and which of the timeline and per-thread tracks are in use.
    pub fast: u8,
    pub builtins: bool,
    /// A coroutine counts as one call from start to return (`Profile(async_aware=True)`).
    pub async_aware: bool,
    /// The default clock with no bias: the one test the per-event clock read makes, and what
    /// lets enter and leave take the aggregator's cached paths (of the current thread's track,
    /// recording the timeline if any).
    pub plain_clock: bool,
    /// The plain clock and no timeline: the events' shortest path, one test.
    pub plain_no_timeline: bool,
    /// Every thread has its own track (`Profile(threads=True)`); else one stack for all, as
    /// in cProfile.
    pub threads: bool,
    pub enabled: bool,
    /// A Python timer was given (its result is read instead of the clock).
    pub external_timer: bool,
    /// A label could not be made; reported as MemoryError by the next disable()/getstats().
    pub nomemory: bool,
    /// With threads=True: the thread pointer (`threads::thread_pointer`) of the thread whose
    /// track is in place, set when an event has made sure of it; 0 when unknown.
    pub fast_thread: usize,
    /// Every call and return, when recorded (`Profile(timeline=True)`).
    pub timeline: Option<Box<Timeline>>,
    /// Front-end data (`sys.monitoring.MISSING` on 3.12+).
    pub hook: HookState,
    /// (Its arrays and caches first; its hash tables, read on the general path only, last.)
    pub agg: Aggregator,
    /// The object naming each entry (code object or label str), parallel to `agg.entries`; a
    /// strong reference, so a code object's address cannot be reused while its entry exists.
    pub user_objs: Vec<Py<PyAny>>,
    /// The native clock read when there is no Python timer.
    pub clock: clock::Native,
    /// Seconds per timer unit for an integer timer; 0.0 for seconds.
    pub timeunit: f64,
    /// Calibration bias in seconds (profile.Profile's `bias`).
    pub bias: f64,
    /// The bias in timer units, subtracted once per event.
    pub bias_units: f64,
    /// The bias taken off the clock so far, in timer units.
    pub bias_acc: f64,
    /// Seconds per tick of the native clock, fixed when profiling stopped: the TSC rate
    /// estimate improves with time, and a stopped profile's numbers must not move with it.
    pub stopped_rate: Option<f64>,
    /// The Python timer is running: disable()/clear() must refuse.
    pub in_timer: u32,
    /// A callback is making a label (Python may run finalizers): disable()/clear() must refuse.
    pub busy: u32,
    /// The thread whose track `agg`, `stack` and `user_objs` hold, and its name.
    pub thread: ThreadKey,
    pub thread_info: ThreadInfo,
    /// The other threads' tracks, by thread.
    pub parked: indexmap::IndexMap<ThreadKey, Track, rustc_hash::FxBuildHasher>,
    /// The threads whose tracks hold a full set of lookup caches, the most recently switched
    /// in last (see `threads::lend_caches`).
    pub cache_holders: Vec<ThreadKey>,
    /// Suspended coroutine calls by frame address, with the thread whose track holds them.
    pub suspended: std::collections::HashMap<
        usize,
        (ThreadKey, crate::core::frames::Suspended),
        rustc_hash::FxBuildHasher,
    >,
    /// Whether each code object seen yielding or resuming is a coroutine's (by address; the
    /// entries keep the code objects alive).
    pub coroutine_code: std::collections::HashMap<usize, bool, rustc_hash::FxBuildHasher>,
    /// For each coroutine code, the (key of the) coroutine that last made one: the caller a
    /// task of it is charged to.
    pub creators: std::collections::HashMap<usize, usize, rustc_hash::FxBuildHasher>,
    /// Bytes allocated and freed per function, when tracked (`Profile(memory=True)`).
    pub memory: Option<Box<crate::core::memory::Ledger>>,
    /// Objects created and destroyed per type and function, when tracked (`types=True`).
    pub types: Option<Box<crate::core::types::TypeTracking>>,
    /// `types=True, calls=False`: the code objects objects were charged to, by address (their
    /// labels: no call entry holds them), and the scratch the frames are walked into.
    pub frame_codes: std::collections::HashMap<usize, Py<PyAny>, rustc_hash::FxBuildHasher>,
    pub frame_walk: Vec<usize>,
    /// The thread state that enabled a `calls=False` profiler, the frame that did and the code
    /// object it ran: walks of that thread stop there, as a call profile starts above it.
    pub frame_base: (usize, usize, usize),
    /// The RSS sampler, when the timeline records it (`Profile(rss=True)`).
    pub rss: Option<Box<crate::core::rss::Sampler>>,
    /// With a Python timer: how many of its readings events have used so far.
    pub timer_reads: u64,
    /// With a Python timer: the latest time events have used so far (`i64::MIN`: none yet).
    pub timer_high: i64,
}

impl State {
    /// Whether calls are profiled: all but `types=True, calls=False`, which installs no hook.
    pub fn profiles_calls(&self) -> bool {
        self.types.as_deref().is_none_or(|t| t.calls)
    }

    /// A Python timer's reading `t`, made fit for the stack it is about to be used on; `reads`
    /// is [`State::timer_reads`] from before the timer was called. With one stack for every
    /// thread (threads=False), other threads' events may have used later times while the timer
    /// ran (it runs Python, which can hand the GIL over after reading its clock): then the
    /// reading is stale, and is raised to the latest time used, so that no call ends before it
    /// starts. A reading nothing overtook is used as it is (as `_lsprof` does, whatever timer).
    pub fn order_timer_reading(&mut self, t: i64, reads: u64) -> i64 {
        if self.threads {
            // Each thread's track is its own: no other thread's event lands on it meanwhile.
            return t;
        }
        let t = if self.timer_reads != reads {
            t.max(self.timer_high)
        } else {
            t
        };
        self.timer_reads = self.timer_reads.wrapping_add(1);
        self.timer_high = self.timer_high.max(t);
        t
    }

    /// Records on the timeline, if there is one, that the call on top of the stack started at `t`.
    #[inline(always)]
    pub fn timeline_enter(&mut self, t: i64) {
        self.timeline_note(timeline::ENTER, Some(t));
    }

    /// Records on the timeline, if there is one, that the call on top of the stack ends at `t`
    /// (`None`: at the time of the latest event).
    #[inline(always)]
    pub fn timeline_leave(&mut self, t: Option<i64>) {
        self.timeline_note(timeline::LEAVE, t);
    }

    /// The time of a memory event: the clock now (less the bias taken so far), or with a Python
    /// timer, which cannot run inside an allocator, the latest event's.
    pub fn memory_event_time(&self) -> i64 {
        if self.plain_clock {
            return clock::now();
        }
        if self.external_timer {
            return self.timeline.as_deref().map_or(0, |tl| tl.last_t());
        }
        self.clock.now().wrapping_sub(self.bias_acc.round() as i64)
    }

    /// Records the following timeline events as the thread whose track is in place (with
    /// `threads=True`, once a track has a thread).
    pub fn timeline_thread_of_track(&mut self) {
        if let Some(tl) = self.timeline.as_deref_mut() {
            if self.threads && self.thread.tstate != 0 {
                tl.set_thread(self.thread.id, self.thread_info.ident);
            }
        }
    }

    #[inline(always)]
    fn timeline_note(&mut self, kind: u8, t: Option<i64>) {
        let Some(tl) = self.timeline.as_deref_mut() else {
            return;
        };
        if let Some(top) = self.stack.frames.last() {
            let key = self
                .agg
                .entries
                .get(top.entry() as usize)
                .map_or(0, |e| e.key);
            let t = t.unwrap_or_else(|| tl.last_t());
            tl.record(kind, t, key, self.stack.frames.len() - 1);
        }
    }
}

/// Native profiler: counts calls into an aggregator fed by the interpreter's profile events.
#[pyclass(module = "_lsprof", name = "Profiler", subclass, frozen)]
pub struct Profiler {
    pub(crate) state: UnsafeCell<State>,
    /// The Python timer, kept apart from `state` so that the garbage collector can visit it while
    /// an event is being handled.
    pub(crate) timer: UnsafeCell<Option<Py<PyAny>>>,
    /// `subprocesses=` as given (True or a folder), None when off: the Python layer
    /// (`rprofile.children.traced`) follows child processes when it is set.
    pub(crate) subprocesses: UnsafeCell<Option<Py<PyAny>>>,
}

// SAFETY: rprofile is built for GIL-holding interpreters; every access to the cells happens with
// the GIL held (methods, profile events, tp_traverse/tp_clear), which serialises them.
unsafe impl Sync for Profiler {}

impl Profiler {
    /// Raw access to the mutable state, for the event path; see the `State` doc for the
    /// borrowing discipline.
    #[inline]
    pub(crate) fn state_ptr(&self) -> *mut State {
        self.state.get()
    }

    /// Reads the state through `read`, which gets a shared borrow for its call: the accessor
    /// of the methods and getters, and of the flags the front ends test outside their fast
    /// paths (the fast paths keep their raw reads). `read` must run no Python code (copy
    /// fields, compute from them): Python could deliver an event that writes the state while it
    /// is borrowed. A plain function, so it brings no Python object along to call.
    #[inline]
    pub(crate) fn read<T>(&self, read: fn(&State) -> T) -> T {
        // SAFETY: every access to a profiler happens with the GIL held (see `Sync` above), and
        // `read` runs no Python code (this function's rule, kept by each caller in this crate:
        // all of them read plain fields), so no event of this profiler runs while it borrows.
        read(unsafe { &*self.state.get() })
    }

    /// [`Profiler::read`] with an argument: `py`, for new references to the objects the state
    /// holds (an incref runs no Python code), or values the reading needs.
    #[inline]
    pub(crate) fn read_with<A, T>(&self, arg: A, read: fn(&State, A) -> T) -> T {
        // SAFETY: as in `read`: the GIL is held and `read` runs no Python code.
        read(unsafe { &*self.state.get() }, arg)
    }

    /// Changes the state through `write`, which gets the only borrow for its call: the
    /// accessor of the methods that change the state outside events (configuring, enabling,
    /// clearing). `write` runs no Python code, for the reason `read` gives: it writes fields
    /// and hands back what it takes out (objects whose release could run Python code are
    /// dropped by the caller, after the borrow). Its result cannot borrow from the state.
    #[inline]
    pub(crate) fn write<T>(&self, write: fn(&mut State) -> T) -> T {
        // SAFETY: the GIL is held (see `Sync` above) and `write` runs no Python code (kept by
        // each caller in this crate), so no event of this profiler runs while it borrows; no
        // other borrow is alive, since none outlives its own accessor call.
        write(unsafe { &mut *self.state.get() })
    }

    /// [`Profiler::write`] with an argument (values to write, or `py` as for `read_with`).
    #[inline]
    pub(crate) fn write_with<A, T>(&self, arg: A, write: fn(&mut State, A) -> T) -> T {
        // SAFETY: as in `write`.
        write(unsafe { &mut *self.state.get() }, arg)
    }
}

/// Seconds per stored unit: `timeunit` for an integer timer, 1e-9 for a timer in seconds (stored
/// as nanoseconds), the default clock's own rate else.
pub fn unit(st: &State) -> f64 {
    if !st.external_timer {
        match st.stopped_rate {
            Some(rate) if !st.enabled => rate,
            _ => st.clock.seconds_per_tick(),
        }
    } else if st.timeunit > 0.0 {
        st.timeunit
    } else {
        1.0 / 1e9
    }
}

/// No fast path: every event takes the general one.
pub const FAST_NONE: u8 = 0;
/// The fast paths may be tried.
pub const FAST_ON: u8 = 1;
/// ... recording the timeline.
pub const FAST_WITH_TIMELINE: u8 = 2;
/// ... on the track in place if it is the calling thread's (threads=True).
pub const FAST_WITH_THREADS: u8 = 4;
