//! The native `Profiler` class: the counterpart of `_lsprof.Profiler` that `rprofile.Profile`
//! subclasses, as `cProfile.Profile` subclasses `_lsprof.Profiler`.
//!
//! Its type is named `_lsprof.Profiler` on purpose: the profiler's own `enable`/`disable` calls
//! show up in every profile under the repr of their method descriptors
//! (`{method 'disable' of '_lsprof.Profiler' objects}`), and those rows must read as cProfile's.

use std::cell::UnsafeCell;

use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::PyTraverseError;

use crate::core::aggregator::Aggregator;
use crate::core::aggregator::Totals;
use crate::core::clock;
use crate::core::frames::Stack;
use crate::core::timeline::{self, Timeline, WhenFull};
use crate::hook;
use crate::profiler::snapshot::Snapshot;
use crate::profiler::{args, events, threads};

/// Everything the event path mutates. Reached only through `Profiler::state_ptr` with the GIL
/// held, in short borrows that never span a call into Python.
///
/// `repr(C)`, with what the callbacks' leaf paths read first (the stack, the flags, the
/// timeline, the aggregator's arrays and caches), so that an event touches a few cache lines of
/// the state rather than one for each field it reads.
#[repr(C)]
pub struct State {
    pub stack: Stack,
    /// Which leaf path the callbacks may try ([`LEAF_NONE`], or [`LEAF_ON`] with
    /// [`LEAF_TIMELINE`] and [`LEAF_THREADS`]): one test for the plain clock read inline (the
    /// TSC) and subcalls on, and which of the timeline and per-thread tracks are in use.
    pub leaf: u8,
    pub builtins: bool,
    /// A coroutine counts as one call from start to return (`Profile(async_aware=True)`).
    pub async_aware: bool,
    /// The default clock with no bias: the one test the per-event clock read makes, and what
    /// lets enter and leave take the aggregator's cached paths (of the current thread's track,
    /// recording the timeline if any).
    pub plain_clock: bool,
    /// The plain clock and no timeline: the events' shortest path, one test.
    pub bare: bool,
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
    pub leaf_thread: usize,
    /// Every call and return, when recorded (`Profile(timeline=True)`).
    pub timeline: Option<Box<Timeline>>,
    /// Front-end data (`sys.monitoring.MISSING` on 3.12+).
    pub hook: hook::HookState,
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
    pub thread: threads::ThreadKey,
    pub thread_info: threads::ThreadInfo,
    /// The other threads' tracks, by thread.
    pub parked: indexmap::IndexMap<threads::ThreadKey, threads::Track, rustc_hash::FxBuildHasher>,
    /// The threads whose tracks hold a full set of lookup caches, the most recently switched
    /// in last (see `threads::lend_caches`).
    pub cache_holders: Vec<threads::ThreadKey>,
    /// Suspended coroutine calls by frame address, with the thread whose track holds them.
    pub suspended: std::collections::HashMap<
        usize,
        (threads::ThreadKey, crate::core::frames::Suspended),
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
    /// The RSS sampler, when the timeline records it (`Profile(rss=True)`).
    pub rss: Option<Box<crate::core::rss::Sampler>>,
    /// With a Python timer: how many of its readings events have used so far.
    pub timer_reads: u64,
    /// With a Python timer: the latest time events have used so far (`i64::MIN`: none yet).
    pub timer_high: i64,
}

impl State {
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

    /// cProfile's `subcalls` flag, for every thread's track.
    pub fn set_subcalls(&mut self, subcalls: bool) {
        self.agg.subcalls = subcalls;
        for t in self.parked.values_mut() {
            t.agg.subcalls = subcalls;
        }
        self.update_leaf();
    }

    /// Recomputes [`State::leaf`], and has the front end's callbacks follow it (and the
    /// builtins flag); called wherever what it depends on changes (the clock, the bias, the
    /// timeline, threads: `set_bias`; subcalls: `set_subcalls`; builtins: `set_builtins`).
    pub fn update_leaf(&mut self) {
        let threads_ok = !self.threads || crate::profiler::threads::HAS_THREAD_POINTER;
        // Before 3.12 the hook reads a frame's code itself on the leaf paths, and a coroutine's
        // events (async_aware) need the frame's state: the general path.
        #[cfg(not(Py_3_12))]
        let hook_ok = crate::hook::reads_frame_code() && !self.async_aware;
        #[cfg(Py_3_12)]
        let hook_ok = true;
        self.leaf = if !(self.plain_clock
            && threads_ok
            && hook_ok
            && self.agg.subcalls
            && clock::reads_tsc())
        {
            LEAF_NONE
        } else {
            LEAF_ON
                | if self.timeline.is_some() {
                    LEAF_TIMELINE
                } else {
                    0
                }
                | if self.threads { LEAF_THREADS } else { 0 }
        };
        hook::leaf_changed(self);
    }

    /// Sets whether builtins are profiled (and the callbacks' paths for it, see
    /// [`State::update_leaf`]).
    pub fn set_builtins(&mut self, builtins: bool) {
        self.builtins = builtins;
        self.update_leaf();
    }
}

/// Native profiler: counts calls into an aggregator fed by the interpreter's profile events.
#[pyclass(module = "_lsprof", name = "Profiler", subclass, frozen)]
pub struct Profiler {
    state: UnsafeCell<State>,
    /// The Python timer, kept apart from `state` so that the garbage collector can visit it while
    /// an event is being handled.
    timer: UnsafeCell<Option<Py<PyAny>>>,
}

// SAFETY: rprofile is built for GIL-holding interpreters; every access to the cells happens with
// the GIL held (methods, profile events, tp_traverse/tp_clear), which serialises them.
unsafe impl Sync for Profiler {}

impl Profiler {
    /// Raw access to the mutable state; see the `State` doc for the borrowing discipline.
    #[inline]
    pub fn state_ptr(&self) -> *mut State {
        self.state.get()
    }

    /// Calls the Python timer and converts its result as `_lsprof` does: an int count of
    /// `timeunit` when `timeunit > 0`, else seconds turned into integer nanoseconds (floor).
    /// A failing timer is reported as unraisable and reads as 0.
    ///
    /// # Safety
    /// GIL held; no borrow of the state alive across the call.
    #[cold]
    pub unsafe fn call_external_timer(&self, py: Python<'_>) -> i64 {
        // A Bound (not a Py) so that the reference is released at once: under the GIL assumed
        // by an event callback, dropping a Py would be deferred to PyO3's pending-release pool.
        // SAFETY: a short read of the cell; whoever replaces the timer meanwhile (__init__,
        // tp_clear, run by the timer itself) leaves this call its own reference.
        let Some(timer) = (unsafe { &*self.timer.get() })
            .as_ref()
            .map(|t| t.bind(py).clone())
        else {
            return 0;
        };
        let st = self.state_ptr();
        // SAFETY: short exclusive accesses of plain fields.
        // A counter, not a flag: on 3.12+ timer calls of several threads can overlap.
        let unit = unsafe {
            (*st).in_timer += 1;
            (*st).timeunit
        };
        // SAFETY: GIL held; the guard restores any exception in flight after the call.
        let _saved = unsafe { events::SavedException::save() };
        let result = timer.call0().and_then(|v| timer_value(&v, unit));
        // SAFETY: short exclusive write.
        unsafe { (*st).in_timer -= 1 };
        match result {
            Ok(t) => t,
            Err(e) => {
                e.write_unraisable(py, Some(&timer));
                0
            }
        }
    }

    /// The totals as they are now, with the objects naming the entries, taken without running
    /// any Python code, so that building results (which may trigger events) never reads state
    /// that an event is changing.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        self.pending_error()?;
        // SAFETY: short shared access with the GIL held; cloning and increfs run no Python code.
        let st = unsafe { &*self.state_ptr() };
        if st.parked.is_empty() {
            let objs = st.user_objs.iter().map(|o| o.clone_ref(py)).collect();
            return Ok(Snapshot::new(st.agg.totals(), objs, self.factor()));
        }
        // Several threads' tracks: one profile of their sums.
        let mut parts = vec![st.agg.totals()];
        let mut labels = vec![&st.user_objs];
        for t in st.parked.values() {
            parts.push(t.agg.totals());
            labels.push(&t.user_objs);
        }
        let refs: Vec<&Totals> = parts.iter().collect();
        let (merged, origin) = Totals::merge(&refs);
        let objs = origin
            .iter()
            .map(|&(part, id)| labels[part][id as usize].clone_ref(py))
            .collect();
        Ok(Snapshot::new(merged, objs, self.factor()))
    }

    /// Each thread's totals apart: (ident, name, snapshot), skipping threads with no data.
    fn thread_snapshots(&self, py: Python<'_>) -> PyResult<Vec<(u64, Option<String>, Snapshot)>> {
        self.pending_error()?;
        // SAFETY: short shared access with the GIL held; cloning and increfs run no Python code.
        let st = unsafe { &*self.state_ptr() };
        let factor = self.factor();
        let mut out = Vec::new();
        let current = (&st.thread_info, &st.agg, &st.user_objs);
        for (info, agg, objs) in std::iter::once(current)
            .chain(st.parked.values().map(|t| (&t.info, &t.agg, &t.user_objs)))
        {
            if agg.entries.is_empty() {
                continue;
            }
            let objs = objs.iter().map(|o| o.clone_ref(py)).collect();
            out.push((
                info.ident,
                info.name.clone(),
                Snapshot::new(agg.totals(), objs, factor),
            ));
        }
        Ok(out)
    }

    fn refuse_if_running(&self, what: &str) -> PyResult<()> {
        // SAFETY: short read with the GIL held.
        let (in_timer, busy) = unsafe { ((*self.state_ptr()).in_timer, (*self.state_ptr()).busy) };
        if in_timer > 0 {
            return Err(PyRuntimeError::new_err(format!(
                "cannot {what} profiler in external timer"
            )));
        }
        if busy > 0 {
            return Err(PyRuntimeError::new_err(format!(
                "cannot {what} profiler while it is handling an event"
            )));
        }
        Ok(())
    }

    fn pending_error(&self) -> PyResult<()> {
        // SAFETY: short exclusive access with the GIL held.
        let st = unsafe { &mut *self.state_ptr() };
        if std::mem::take(&mut st.nomemory) {
            return Err(PyMemoryError::new_err(
                "memory was exhausted while profiling",
            ));
        }
        Ok(())
    }

    /// A time in timer units and its value in seconds, for showing times: the default clock's
    /// anchor; (0, 0.0) for the other timers, whose units convert by the factor alone.
    fn time_origin(&self) -> (i64, f64) {
        // SAFETY: short read with the GIL held.
        let st = unsafe { &*self.state_ptr() };
        if !st.external_timer && st.clock == clock::Native::Wall {
            clock::anchor_point()
        } else {
            (0, 0.0)
        }
    }

    /// The factor `_lsprof.getstats` converts stored units with: the unit, except that a
    /// negative `timeunit` (whose timer is read as seconds) still scales the stats.
    fn factor(&self) -> f64 {
        // SAFETY: short read with the GIL held.
        let st = unsafe { &*self.state_ptr() };
        if st.external_timer && st.timeunit < 0.0 {
            st.timeunit
        } else {
            unit(st)
        }
    }
}

/// Converts a timer result to timer units; tuples and lists (as `profile` accepts, e.g.
/// `os.times()[:2]`) count as the sum of their items.
fn timer_value(v: &Bound<'_, PyAny>, unit: f64) -> PyResult<i64> {
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>() {
        let mut total = 0i64;
        for item in v.try_iter()? {
            total = total.wrapping_add(timer_value(&item?, unit)?);
        }
        return Ok(total);
    }
    if unit > 0.0 {
        if !v.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!(
                "expect int, got {}",
                v.get_type().name()?
            )));
        }
        return v.extract::<i64>();
    }
    seconds_to_ns(v)
}

/// `_PyTime_FromSecondsObject(..., ROUND_FLOOR)`: a float is multiplied by 1e9 and floored, an
/// int is multiplied exactly; out of range raises OverflowError.
fn seconds_to_ns(v: &Bound<'_, PyAny>) -> PyResult<i64> {
    if let Ok(f) = v.cast::<PyFloat>() {
        let d = f.value();
        if d.is_nan() {
            return Err(PyValueError::new_err("Invalid value NaN (not a number)"));
        }
        let ns = (d * 1e9).floor();
        if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&ns) {
            return Err(pyo3::exceptions::PyOverflowError::new_err(
                "timestamp too large to convert to C _PyTime_t",
            ));
        }
        return Ok(ns as i64);
    }
    let secs: i64 = v
        .call_method0("__index__")
        .and_then(|i| i.extract())
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "'{}' object cannot be interpreted as an integer",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
    secs.checked_mul(1_000_000_000).ok_or_else(|| {
        pyo3::exceptions::PyOverflowError::new_err("timestamp too large to convert to C _PyTime_t")
    })
}

#[pymethods]
impl Profiler {
    /// A profiler with cleared flags and the default clock, as `_lsprof`'s allocation gives;
    /// `__init__` sets them from the arguments (so subclasses may define their own `__init__`).
    #[new]
    #[pyo3(
        signature = (*_args, **_kwargs),
        text_signature = "(timer=None, timeunit=0.0, subcalls=True, builtins=True, *, bias=0.0, threads=False, async_aware=False, timeline=False, buffer_size=1000000, when_full='keep_newest', memory=False, rss=False, rss_interval=0.01, rss_trigger=None)"
    )]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let state = State {
            agg: Aggregator::new(false),
            stack: Stack::default(),
            user_objs: Vec::new(),
            enabled: false,
            builtins: false,
            external_timer: false,
            clock: clock::Native::Wall,
            plain_clock: true,
            leaf: LEAF_NONE,
            leaf_thread: 0,
            bare: true,
            timeunit: 0.0,
            bias: 0.0,
            bias_units: 0.0,
            bias_acc: 0.0,
            stopped_rate: None,
            in_timer: 0,
            busy: 0,
            nomemory: false,
            hook: hook::HookState::new()?,
            threads: false,
            thread: threads::ThreadKey::default(),
            thread_info: threads::ThreadInfo::default(),
            parked: Default::default(),
            cache_holders: Vec::new(),
            async_aware: false,
            suspended: Default::default(),
            coroutine_code: Default::default(),
            creators: Default::default(),
            timeline: None,
            memory: None,
            rss: None,
            timer_reads: 0,
            timer_high: i64::MIN,
        };
        Ok(Profiler {
            state: UnsafeCell::new(state),
            timer: UnsafeCell::new(None),
        })
    }

    /// Profile(timer=None, timeunit=0.0, subcalls=True, builtins=True, *, bias=0.0)
    #[pyo3(signature = (*args, **kwargs))]
    fn __init__(
        &self,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let a = args::parse(
            "Profiler",
            &[
                "timer",
                "timeunit",
                "subcalls",
                "builtins",
                "bias",
                "threads",
                "async_aware",
                "timeline",
                "buffer_size",
                "when_full",
                "memory",
                "rss",
                "rss_interval",
                "rss_trigger",
            ],
            4,
            args,
            kwargs,
        )?;
        let timeunit = a[1].as_ref().map(args::real).transpose()?.unwrap_or(0.0);
        // _lsprof starts from cleared flags and applies the arguments (default True).
        let subcalls = match &a[2] {
            Some(v) => args::flag(false, Some(v))?,
            None => true,
        };
        let builtins = match &a[3] {
            Some(v) => args::flag(false, Some(v))?,
            None => true,
        };
        let bias = a[4].as_ref().map(args::real).transpose()?.unwrap_or(0.0);
        let threads = match &a[5] {
            Some(v) => v.is_truthy()?,
            None => false,
        };
        let async_aware = match &a[6] {
            Some(v) => v.is_truthy()?,
            None => false,
        };
        let want_timeline = match &a[7] {
            Some(v) => v.is_truthy()?,
            None => false,
        };
        let buffer_size = match &a[8] {
            Some(v) => {
                let n: i64 = v.extract()?;
                if n < 1 {
                    return Err(PyValueError::new_err("buffer_size must be at least 1"));
                }
                n as usize
            }
            None => DEFAULT_BUFFER_SIZE,
        };
        let when_full = match &a[9] {
            Some(v) => {
                let name: String = v.extract()?;
                WhenFull::from_name(&name).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "when_full must be 'keep_newest' or 'keep_oldest', not {name:?}"
                    ))
                })?
            }
            None => WhenFull::KeepNewest,
        };
        let want_memory = match &a[10] {
            Some(v) => v.is_truthy()?,
            None => false,
        };
        let want_rss = match &a[11] {
            Some(v) => v.is_truthy()?,
            None => false,
        };
        let rss_interval = match &a[12] {
            Some(v) => {
                let secs = args::real(v)?;
                std::time::Duration::try_from_secs_f64(secs)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "rss_interval must be a positive number of seconds, not {secs}"
                        ))
                    })?
            }
            None => DEFAULT_RSS_INTERVAL,
        };
        let rss_trigger = match a[13].as_ref().filter(|v| !v.is_none()) {
            Some(v) => {
                let n: i64 = v.extract()?;
                u64::try_from(n)
                    .map_err(|_| PyValueError::new_err("rss_trigger must be at least 0"))?
            }
            None => crate::core::rss::page_size(),
        };
        // 3.10 tells an await from a return by a field of the frame struct: its layout is
        // checked on this interpreter first.
        #[cfg(not(Py_3_11))]
        if async_aware && !hook::check_frame_layout(args.py())? {
            return Err(PyValueError::new_err(
                "async_aware profiling is not available on this Python build (its frame objects \
                 are not laid out as 3.10's header says)",
            ));
        }
        // cProfile would call an explicit `timer=None`; we read it as "the default clock". A
        // str names a native clock (cProfile would try to call it).
        let mut native = clock::Native::Wall;
        let timer = match a[0].as_ref().filter(|t| !t.is_none()) {
            Some(t) if t.is_instance_of::<PyString>() => {
                let name = t.extract::<String>()?;
                native = clock::Native::from_name(&name).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "unknown clock {name:?}: timer must be a callable or one of 'wall', \
                         'cpu', 'thread_cpu'"
                    ))
                })?;
                None
            }
            Some(t) => Some(t.clone().unbind()),
            None => None,
        };
        if want_rss {
            if !want_timeline {
                return Err(PyValueError::new_err(
                    "rss=True needs timeline=True (the samples are put on the timeline)",
                ));
            }
            if timer.is_some() || native != clock::Native::Wall || bias != 0.0 {
                return Err(PyValueError::new_err(
                    "rss=True needs the default (wall) timer without a bias: the samples are \
                     stamped with it",
                ));
            }
            // No RSS to read is an OSError now rather than at enable().
            crate::core::rss::Reader::open()?;
        }
        // SAFETY: GIL held; exclusive access for plain field writes (no Python runs here).
        let st = unsafe { &mut *self.state_ptr() };
        // What cannot change under a running profiler is checked before anything changes.
        let same_timeline = match st.timeline.as_deref() {
            Some(tl) => want_timeline && tl.capacity() == buffer_size && tl.when_full == when_full,
            None => !want_timeline,
        };
        let same_rss = same_timeline
            && match st.rss.as_deref() {
                Some(r) => want_rss && r.interval == rss_interval && r.trigger == rss_trigger,
                None => !want_rss,
            };
        if st.enabled {
            for (changed, what) in [
                (st.threads != threads, "threads"),
                (st.async_aware != async_aware, "async_aware"),
                (!same_timeline, "the timeline"),
                (st.memory.is_some() != want_memory, "memory"),
                (!same_rss, "rss"),
            ] {
                if changed {
                    return Err(PyRuntimeError::new_err(format!(
                        "cannot change {what} while the profiler is enabled"
                    )));
                }
            }
        }
        // The buffer is had (or MemoryError raised) before anything changes.
        let new_timeline = if !same_timeline && want_timeline {
            let mut tl = Timeline::try_new(buffer_size, when_full).ok_or_else(|| {
                PyMemoryError::new_err(format!(
                    "cannot allocate a timeline of {buffer_size} events"
                ))
            })?;
            timeline_thread_now(threads, &st.thread, &st.thread_info, &mut tl);
            Some(Box::new(tl))
        } else {
            None
        };
        st.set_subcalls(subcalls);
        st.set_builtins(builtins);
        st.timeunit = timeunit;
        st.external_timer = timer.is_some();
        // A new timer's readings are not ordered against the old one's.
        st.timer_high = i64::MIN;
        st.clock = native;
        st.threads = threads;
        st.async_aware = async_aware;
        if st.memory.is_some() != want_memory {
            st.memory = want_memory.then(Box::default);
        }
        if !same_timeline {
            st.timeline = new_timeline;
        }
        if !same_rss {
            // The old sampler's thread (not running: the profiler is not enabled) goes with it.
            st.rss = want_rss.then(|| {
                Box::new(crate::core::rss::Sampler::new(
                    rss_interval,
                    rss_trigger,
                    buffer_size,
                    when_full,
                ))
            });
        }
        set_bias(st, bias);
        // SAFETY: the old timer is dropped after the cell is updated; a timer call in progress
        // holds its own reference.
        let old = unsafe { std::mem::replace(&mut *self.timer.get(), timer) };
        drop(old);
        Ok(())
    }

    /// enable(subcalls=True, builtins=True)
    ///
    /// Start collecting profiling information.
    #[pyo3(signature = (*args, **kwargs), text_signature = "($self, subcalls=True, builtins=True)")]
    fn enable(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let a = args::parse("enable", &["subcalls", "builtins"], 2, args, kwargs)?;
        let p = slf.get();
        // SAFETY: short read with the GIL held.
        let (subcalls, builtins) =
            unsafe { ((*p.state_ptr()).agg.subcalls, (*p.state_ptr()).builtins) };
        // Both parsed before either is applied (parsing may run __bool__/__index__), as _lsprof.
        let subcalls = args::flag(subcalls, a[0].as_ref())?;
        let builtins = args::flag(builtins, a[1].as_ref())?;
        // SAFETY: short exclusive writes; no Python runs meanwhile.
        unsafe {
            (*p.state_ptr()).set_subcalls(subcalls);
            (*p.state_ptr()).set_builtins(builtins);
        }
        // SAFETY: short read.
        let memory = unsafe { (*p.state_ptr()).memory.is_some() };
        // Refused while another profiler tracks memory, before any hook changes; tracking
        // starts after the profile hook is in, so its own allocations are not charged.
        if memory {
            crate::profiler::memory_hook::check_available(slf)?;
        }
        // SAFETY: short exclusive access; the sampler's thread never touches the state.
        if let Some(r) = unsafe { (*p.state_ptr()).rss.as_deref_mut() } {
            r.start()?;
        }
        if let Err(e) = hook::install(slf) {
            // SAFETY: as above.
            if let Some(r) = unsafe { (*p.state_ptr()).rss.as_deref_mut() } {
                r.cancel();
            }
            return Err(e);
        }
        if memory {
            crate::profiler::memory_hook::activate(slf)?;
        }
        // SAFETY: as above.
        unsafe {
            let st = &mut *p.state_ptr();
            st.enabled = true;
            st.stopped_rate = None;
            if let Some(tl) = st.timeline.as_deref_mut() {
                timeline_thread_now(st.threads, &st.thread, &st.thread_info, tl);
            }
        }
        Ok(())
    }

    /// disable()
    ///
    /// Stop collecting profiling information.
    fn disable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let p = slf.get();
        p.refuse_if_running("disable")?;
        // Before 3.12, _lsprof removes the calling thread's profile hook even when this profiler
        // was not the one enabled there; from 3.12 on it acts only when enabled.
        // SAFETY: short read.
        if !cfg!(Py_3_12) || unsafe { (*p.state_ptr()).enabled } {
            crate::profiler::memory_hook::deactivate(slf);
            // Even if unhooking reports an error, the hook is gone: finish disabling first.
            let unhooked = hook::uninstall(slf);
            // SAFETY: short write, then the flush (which manages its own borrows).
            unsafe {
                let st = &mut *p.state_ptr();
                if let Some(r) = st.rss.as_deref_mut() {
                    r.stop();
                }
                if st.enabled {
                    st.stopped_rate = Some(st.clock.seconds_per_tick());
                }
                st.enabled = false;
                events::flush_unmatched(slf.py(), p);
            }
            unhooked?;
        }
        p.pending_error()
    }

    /// clear()
    ///
    /// Clear all profiling information collected so far.
    fn clear(&self) -> PyResult<()> {
        self.refuse_if_running("clear")?;
        // SAFETY: exclusive access with the GIL held; dropping code objects runs no Python code
        // that could reach this profiler (they hold no reference to it).
        let old = unsafe {
            let st = &mut *self.state_ptr();
            st.agg.clear();
            st.stack.frames.clear();
            st.suspended.clear();
            st.coroutine_code.clear();
            st.creators.clear();
            if let Some(m) = st.memory.as_deref_mut() {
                m.clear();
            }
            if let Some(tl) = st.timeline.as_deref_mut() {
                tl.clear();
                timeline_thread_now(st.threads, &st.thread, &st.thread_info, tl);
            }
            if let Some(r) = st.rss.as_deref_mut() {
                r.clear();
            }
            (
                std::mem::take(&mut st.user_objs),
                std::mem::take(&mut st.parked),
            )
        };
        drop(old);
        Ok(())
    }

    /// getstats() -> list of profiler_entry objects
    ///
    /// Return all information collected by the profiler, one entry per function, in the order
    /// of cProfile's (by code object or builtin address).
    fn getstats(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        self.snapshot(py)?.getstats(py)
    }

    /// The totals as they are now, from which the stats dict or its marshal bytes are made on
    /// demand (so `dump_stats` writes the file without building the dict).
    fn _take_snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        self.snapshot(py)
    }

    /// Per-thread totals with `threads=True`: a list of `(ident, name, snapshot)`.
    fn _thread_snapshots(&self, py: Python<'_>) -> PyResult<Vec<(u64, Option<String>, Snapshot)>> {
        self.thread_snapshots(py)
    }

    /// `(tracks, tracks holding a full set of lookup caches, the most that may, bytes of the
    /// sets)`: one track with threads=False; with threads=True, one per thread seen.
    fn _lookup_caches(&self) -> (usize, usize, usize, usize) {
        // SAFETY: short shared access with the GIL held; nothing here runs Python code.
        let st = unsafe { &*self.state_ptr() };
        let aggs = std::iter::once(&st.agg).chain(st.parked.values().map(|t| &t.agg));
        let (mut tracks, mut full, mut bytes) = (0, 0, 0);
        for agg in aggs {
            tracks += 1;
            full += usize::from(agg.has_full_caches());
            bytes += agg.cache_bytes();
        }
        (tracks, full, crate::profiler::threads::CACHED_TRACKS, bytes)
    }

    /// `(events kept, capacity, events dropped, when_full)` of the timeline, or None without one.
    fn _timeline_info(
        &self,
        py: Python<'_>,
    ) -> Option<(usize, usize, u64, &'static str, usize, u64)> {
        // SAFETY: short shared access with the GIL held; taking copies runs no Python code.
        crate::profiler::timeline_view::take(py, unsafe { &*self.state_ptr() }).map(|t| t.info())
    }

    /// The timeline as columns (see `timeline_py::Taken::columns`), or None without one.
    fn _timeline_columns<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        // SAFETY: as above; the labels are read after the copy, with no borrow alive.
        let taken = crate::profiler::timeline_view::take(py, unsafe { &*self.state_ptr() });
        taken
            .map(|t| t.columns(py, self.factor(), self.time_origin()))
            .transpose()
    }

    /// Writes the timeline as a Chrome trace (`"chrome"`) or speedscope (`"speedscope"`) file.
    fn _timeline_write(
        &self,
        py: Python<'_>,
        format: &str,
        path: &Bound<'_, PyAny>,
        title: &str,
    ) -> PyResult<()> {
        if format != "chrome" && format != "speedscope" {
            return Err(PyValueError::new_err(format!("unknown format {format:?}")));
        }
        // SAFETY: as above.
        let taken = crate::profiler::timeline_view::take(py, unsafe { &*self.state_ptr() })
            .ok_or_else(|| PyRuntimeError::new_err("the profiler records no timeline"))?;
        taken.write(py, format, path, self.factor(), title)
    }

    /// Per function charged with allocations: `(function, allocations, bytes allocated, bytes
    /// freed, net bytes, peak net bytes)`, the function as a pstats key (`('~', 0, '<no
    /// profiled call>')` for allocations made outside every profiled call); None without
    /// memory tracking.
    #[allow(clippy::type_complexity)]
    fn _memory_stats<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<Vec<(Bound<'py, PyAny>, u64, u64, u64, i64, i64)>>> {
        // SAFETY: short shared access with the GIL held: copies and new references only.
        let (rows, objs) = unsafe {
            let st = &*self.state_ptr();
            let Some(ledger) = st.memory.as_deref() else {
                return Ok(None);
            };
            let rows = ledger.funcs.clone();
            let mut objs: std::collections::HashMap<usize, Py<PyAny>> = Default::default();
            let tracks = std::iter::once((&st.agg, &st.user_objs))
                .chain(st.parked.values().map(|t| (&t.agg, &t.user_objs)));
            for (agg, labels) in tracks {
                for (e, o) in agg.entries.iter().zip(labels.iter()) {
                    objs.entry(e.key).or_insert_with(|| o.clone_ref(py));
                }
            }
            (rows, objs)
        };
        let mut out = Vec::with_capacity(rows.len());
        for (key, m) in rows {
            let func = match objs.get(&key) {
                Some(o) => crate::profiler::snapshot::label_tuple(py, o.bind(py))?,
                None => ("~", 0, "<no profiled call>").into_pyobject(py)?.into_any(),
            };
            out.push((func, m.allocations, m.allocated, m.freed, m.net, m.peak));
        }
        Ok(Some(out))
    }

    /// Whether a coroutine counts as one call from start to return.
    #[getter]
    fn async_aware(&self) -> bool {
        // SAFETY: short read.
        unsafe { (*self.state_ptr()).async_aware }
    }

    /// Whether each thread is profiled on its own stack.
    #[getter]
    fn threads(&self) -> bool {
        // SAFETY: short read.
        unsafe { (*self.state_ptr()).threads }
    }

    /// The native clock this profiler reads (`'wall'`, `'cpu'` or `'thread_cpu'`), or None
    /// when it calls a Python timer.
    #[getter]
    fn clock(&self) -> Option<&'static str> {
        // SAFETY: short read.
        let st = unsafe { &*self.state_ptr() };
        (!st.external_timer).then(|| st.clock.name())
    }

    /// The Python timer given to `__init__`, or None for a native clock (`calibrate()` times
    /// with it).
    #[getter(_timer)]
    fn python_timer(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        // SAFETY: a short read of the cell with the GIL held.
        unsafe { &*self.timer.get() }
            .as_ref()
            .map(|t| t.clone_ref(py))
    }

    /// The `timeunit` given to `__init__` with a Python timer.
    #[getter(_timeunit)]
    fn python_timeunit(&self) -> f64 {
        // SAFETY: short read.
        unsafe { (*self.state_ptr()).timeunit }
    }

    /// The calibration bias in seconds, subtracted once per profile event (as in `profile`).
    #[getter]
    fn get_bias(&self) -> f64 {
        // SAFETY: short read.
        unsafe { (*self.state_ptr()).bias }
    }

    #[setter]
    fn set_bias(&self, value: Option<f64>) -> PyResult<()> {
        let Some(value) = value else {
            return Err(PyTypeError::new_err("can't delete bias"));
        };
        // SAFETY: short exclusive access.
        let st = unsafe { &mut *self.state_ptr() };
        if value != 0.0 && st.rss.is_some() {
            // The RSS samples are stamped with the plain clock: a bias would shift the events
            // against them.
            return Err(PyValueError::new_err("rss=True profiles take no bias"));
        }
        set_bias(st, value);
        Ok(())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: the timer cell is only written by __clear__ and the constructor.
        if let Some(t) = unsafe { &*self.timer.get() } {
            visit.call(t)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        // SAFETY: GIL held; the GC calls tp_clear outside of any event of this profiler.
        let old = unsafe { (*self.timer.get()).take() };
        // SAFETY: as above; the bias is now in the default clock's unit.
        unsafe {
            let st = &mut *self.state_ptr();
            st.external_timer = false;
            set_bias(st, st.bias);
        }
        drop(old);
    }
}

/// Events a timeline holds unless `buffer_size` says otherwise.
const DEFAULT_BUFFER_SIZE: usize = 1_000_000;
/// How often `rss=True` reads the RSS.
const DEFAULT_RSS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// Makes the timeline record the following events as the calling thread's (with `threads=True`,
/// the thread whose track is in place, once one is).
fn timeline_thread_now(
    per_thread: bool,
    key: &threads::ThreadKey,
    info: &threads::ThreadInfo,
    tl: &mut Timeline,
) {
    if per_thread {
        if key.tstate != 0 {
            tl.set_thread(key.id, info.ident);
        }
        return;
    }
    // SAFETY: GIL held (called from methods): the thread has a live thread state.
    let (id, ident) = unsafe {
        let ts = pyo3::ffi::PyThreadState_Get();
        (
            pyo3::ffi::PyThreadState_GetID(ts) as u64,
            pyo3::ffi::PyThread_get_thread_ident() as u64,
        )
    };
    tl.set_thread(id, ident);
}

/// Seconds per stored unit: `timeunit` for an integer timer, 1e-9 for a timer in seconds (stored
/// as nanoseconds), the default clock's own rate else.
fn unit(st: &State) -> f64 {
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

/// Sets the bias, and with it (as every change of timer, clock, bias or timeline ends here)
/// whether the per-event clock read can take the plain path.
fn set_bias(st: &mut State, bias: f64) {
    st.bias = bias;
    st.bias_units = if bias == 0.0 { 0.0 } else { bias / unit(st) };
    // (Once a bias has been taken off the clock, it stays off: no plain clock reads after.)
    st.plain_clock = !st.external_timer
        && st.bias_units == 0.0
        && st.bias_acc == 0.0
        && st.clock == clock::Native::Wall;
    st.bare = st.plain_clock && st.timeline.is_none();
    st.update_leaf();
}

/// No leaf path: every event takes the general one.
pub const LEAF_NONE: u8 = 0;
/// The leaf paths may be tried.
pub const LEAF_ON: u8 = 1;
/// ... recording the timeline.
pub const LEAF_TIMELINE: u8 = 2;
/// ... on the track in place if it is the calling thread's (threads=True).
pub const LEAF_THREADS: u8 = 4;
