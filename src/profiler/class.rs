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
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::PyTraverseError;

use crate::core::aggregator::Aggregator;
use crate::core::aggregator::Totals;
use crate::core::clock;
use crate::core::frames::Stack;
use crate::core::timeline::Timeline;
use crate::core::types::TypeTracking;
use crate::hook;
use crate::profiler::args;
use crate::profiler::config::{Config, TypeFilters};
use crate::profiler::mode::{set_bias, set_builtins, set_subcalls};
use crate::profiler::results::snapshot::Snapshot;
use crate::profiler::results::timeline_view;
use crate::tracer::events;
use crate::tracer::hook_state::HookState;
use crate::tracer::state::{unit, Profiler, State, FAST_NONE};
use crate::tracer::track::{ThreadInfo, ThreadKey};

impl Profiler {
    /// The totals as they are now, with the objects naming the entries, taken without running
    /// any Python code, so that building results (which may trigger events) never reads state
    /// that an event is changing.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        self.pending_error()?;
        let factor = self.factor();
        // Cloning and increfs run no Python code.
        Ok(self.read_with((py, factor), |st, (py, factor)| {
            if st.parked.is_empty() {
                let objs = st.user_objs.iter().map(|o| o.clone_ref(py)).collect();
                return Snapshot::new(st.agg.totals(), objs, factor);
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
            Snapshot::new(merged, objs, factor)
        }))
    }

    /// Each thread's totals apart: (ident, name, snapshot), skipping threads with no data.
    fn thread_snapshots(&self, py: Python<'_>) -> PyResult<Vec<(u64, Option<String>, Snapshot)>> {
        self.pending_error()?;
        let factor = self.factor();
        // Cloning and increfs run no Python code.
        Ok(self.read_with((py, factor), |st, (py, factor)| {
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
            out
        }))
    }

    /// Whether child processes are followed (`subprocesses=` set).
    fn follows_subprocesses(&self) -> bool {
        // SAFETY: a short read of the cell with the GIL held.
        unsafe { (*self.subprocesses.get()).is_some() }
    }

    fn refuse_if_running(&self, what: &str) -> PyResult<()> {
        let (in_timer, busy) = self.read(|st| (st.in_timer, st.busy));
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
        if self.write(|st| std::mem::take(&mut st.nomemory)) {
            return Err(PyMemoryError::new_err(
                "memory was exhausted while profiling",
            ));
        }
        Ok(())
    }

    /// A time in timer units and its value in seconds, for showing times: the default clock's
    /// anchor; (0, 0.0) for the other timers, whose units convert by the factor alone.
    fn time_origin(&self) -> (i64, f64) {
        self.read(|st| {
            if !st.external_timer && st.clock == clock::Native::Wall {
                clock::anchor_point()
            } else {
                (0, 0.0)
            }
        })
    }

    /// The factor `_lsprof.getstats` converts stored units with: the unit, except that a
    /// negative `timeunit` (whose timer is read as seconds) still scales the stats.
    fn factor(&self) -> f64 {
        self.read(|st| {
            if st.external_timer && st.timeunit < 0.0 {
                st.timeunit
            } else {
                unit(st)
            }
        })
    }
}

#[pymethods]
impl Profiler {
    /// A profiler with cleared flags and the default clock, as `_lsprof`'s allocation gives;
    /// `__init__` sets them from the arguments (so subclasses may define their own `__init__`).
    #[new]
    #[pyo3(
        signature = (*_args, **_kwargs),
        text_signature = "(timer=None, timeunit=0.0, subcalls=True, builtins=True, *, bias=0.0, threads=False, async_aware=False, timeline=False, buffer_size=1000000, when_full='keep_newest', memory=False, rss=False, rss_interval=0.01, rss_trigger=None, subprocesses=False, types=False, types_builtins=False, types_only=None, types_gc=False)"
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
            fast: FAST_NONE,
            fast_thread: 0,
            plain_no_timeline: true,
            timeunit: 0.0,
            bias: 0.0,
            bias_units: 0.0,
            bias_acc: 0.0,
            stopped_rate: None,
            in_timer: 0,
            busy: 0,
            nomemory: false,
            hook: HookState::new()?,
            threads: false,
            thread: ThreadKey::default(),
            thread_info: ThreadInfo::default(),
            parked: Default::default(),
            cache_holders: Vec::new(),
            async_aware: false,
            suspended: Default::default(),
            coroutine_code: Default::default(),
            creators: Default::default(),
            timeline: None,
            memory: None,
            types: None,
            frame_codes: Default::default(),
            frame_walk: Vec::new(),
            frame_base: Default::default(),
            rss: None,
            timer_reads: 0,
            timer_high: i64::MIN,
        };
        Ok(Profiler {
            state: UnsafeCell::new(state),
            timer: UnsafeCell::new(None),
            subprocesses: UnsafeCell::new(None),
        })
    }

    /// Profile(timer=None, timeunit=0.0, subcalls=True, builtins=True, *, bias=0.0)
    #[pyo3(signature = (*args, **kwargs))]
    fn __init__(
        &self,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let c = Config::parse(args, kwargs)?;
        let py = args.py();
        // Compared before the state is borrowed (comparing may run Python code).
        // SAFETY: a short read of the cell with the GIL held; the reference is cloned.
        let current = unsafe { &*self.subprocesses.get() }
            .as_ref()
            .map(|o| o.clone_ref(py));
        let same_subprocesses = match (current, &c.subprocesses) {
            (None, None) => true,
            (Some(a), Some(b)) => a.bind(py).eq(b.bind(py))?,
            _ => false,
        };
        self.write_with((&c, same_subprocesses), configure)?;
        // SAFETY: the old timer is dropped after the cell is updated; a timer call in progress
        // holds its own reference.
        let old = unsafe { std::mem::replace(&mut *self.timer.get(), c.timer) };
        drop(old);
        // SAFETY: as above.
        let old = unsafe { std::mem::replace(&mut *self.subprocesses.get(), c.subprocesses) };
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
        // Until 3.13 a flag not given is left as it is (the constructor's); 3.14's enable()
        // defaults both to True, so the constructor's flags no longer count.
        let (subcalls, builtins) = if cfg!(Py_3_14) {
            (true, true)
        } else {
            p.read(|st| (st.agg.subcalls, st.builtins))
        };
        // Both parsed before either is applied (parsing may run __bool__/__index__), as _lsprof.
        let subcalls = args::flag(subcalls, a[0].as_ref())?;
        let builtins = args::flag(builtins, a[1].as_ref())?;
        p.write_with((subcalls, builtins), |st, (subcalls, builtins)| {
            set_subcalls(st, subcalls);
            set_builtins(st, builtins);
        });
        let memory = p.read(|st| st.memory.is_some());
        // Refused while another profiler tracks memory, before any hook changes; tracking
        // starts after the profile hook is in, so its own allocations are not charged.
        if memory {
            crate::tracer::memory_hook::check_available(slf)?;
        }
        let types = p.read(|st| st.types.is_some());
        if types {
            crate::tracer::types_hook::check_available(slf)?;
        }
        // Children started from now on are followed (before the hook is in: not profiled).
        let follows = p.follows_subprocesses();
        if follows {
            slf.call_method0(pyo3::intern!(slf.py(), "_enable_subprocesses"))?;
        }
        // (The RSS sampler's thread never touches the state.)
        let started = p.write(|st| st.rss.as_deref_mut().map_or(Ok(()), |r| r.start()));
        if let Err(e) = started {
            stop_following(slf, follows);
            return Err(e.into());
        }
        // calls=False: no profile hook (the profiler's tool slot stays free).
        let calls = p.read(State::profiles_calls);
        if let Err(e) = if calls { hook::install(slf) } else { Ok(()) } {
            p.write(cancel_rss);
            stop_following(slf, follows);
            return Err(e);
        }
        if memory {
            crate::tracer::memory_hook::activate(slf)?;
        }
        if types {
            if let Err(e) = crate::tracer::types_hook::activate(slf) {
                // Checked available above: only a failing PyRefTracer_SetTracer gets here.
                crate::tracer::memory_hook::deactivate(slf);
                if calls {
                    let _ = hook::uninstall(slf);
                }
                p.write(cancel_rss);
                stop_following(slf, follows);
                return Err(e);
            }
        }
        p.write(|st| {
            st.enabled = true;
            st.stopped_rate = None;
            if let Some(tl) = st.timeline.as_deref_mut() {
                timeline_thread_now(st.threads, &st.thread, &st.thread_info, tl);
            }
        });
        Ok(())
    }

    /// `types=True, calls=False`: the frame `up` frames under the innermost one is where the
    /// walks of objects' frames stop on this thread (`__enter__` enables from its own frame).
    fn _frame_base_up(slf: &Bound<'_, Self>, up: usize) {
        crate::tracer::types_hook::base_up(slf, up);
    }

    /// disable()
    ///
    /// Stop collecting profiling information.
    fn disable(slf: &Bound<'_, Self>) -> PyResult<()> {
        let p = slf.get();
        p.refuse_if_running("disable")?;
        // Before 3.12, _lsprof removes the calling thread's profile hook even when this profiler
        // was not the one enabled there; from 3.12 on it acts only when enabled.
        if !cfg!(Py_3_12) || p.read(|st| st.enabled) {
            crate::tracer::memory_hook::deactivate(slf);
            // Even if unhooking reports an error, the hook is gone: finish disabling first.
            let calls = p.read(State::profiles_calls);
            let unhooked = if calls { hook::uninstall(slf) } else { Ok(()) };
            p.write(|st| {
                if let Some(r) = st.rss.as_deref_mut() {
                    r.stop();
                }
                if st.enabled {
                    st.stopped_rate = Some(st.clock.seconds_per_tick());
                }
                st.enabled = false;
            });
            // SAFETY: GIL held, `p` alive, no borrow of its state alive (the flush makes its
            // own, and runs the labels' makers between them).
            unsafe { events::flush_unmatched(slf.py(), p) };
            // types_gc: garbage in cycles is destroyed (and counted so) before the final counts.
            let gc = p.read(|st| st.types.as_deref().is_some_and(|t| t.gc));
            let collected = if gc && crate::tracer::types_hook::is_active(slf) {
                slf.py()
                    .import("gc")
                    .and_then(|gc| gc.call_method0("collect"))
                    .map(drop)
            } else {
                Ok(())
            };
            crate::tracer::types_hook::deactivate(slf);
            if p.follows_subprocesses() {
                slf.call_method0(pyo3::intern!(slf.py(), "_disable_subprocesses"))?;
            }
            unhooked?;
            collected?;
        }
        p.pending_error()
    }

    /// clear()
    ///
    /// Clear all profiling information collected so far.
    fn clear(&self) -> PyResult<()> {
        self.refuse_if_running("clear")?;
        // What the state held is dropped after the borrow (releasing an object can run Python).
        let old = self.write(|st| {
            st.agg.clear();
            st.stack.frames.clear();
            st.suspended.clear();
            st.coroutine_code.clear();
            st.creators.clear();
            if let Some(m) = st.memory.as_deref_mut() {
                m.clear();
            }
            if let Some(t) = st.types.as_deref_mut() {
                t.ledger.clear();
            }
            let codes = std::mem::take(&mut st.frame_codes);
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
                codes,
            )
        });
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
        let (tracks, full, bytes) = self.read(|st| {
            let aggs = std::iter::once(&st.agg).chain(st.parked.values().map(|t| &t.agg));
            let (mut tracks, mut full, mut bytes) = (0, 0, 0);
            for agg in aggs {
                tracks += 1;
                full += usize::from(agg.has_full_caches());
                bytes += agg.cache_bytes();
            }
            (tracks, full, bytes)
        });
        (tracks, full, crate::tracer::threads::CACHED_TRACKS, bytes)
    }

    /// `(events kept, capacity, events dropped, when_full)` of the timeline, or None without one.
    fn _timeline_info(
        &self,
        py: Python<'_>,
    ) -> Option<(usize, usize, u64, &'static str, usize, u64)> {
        // Taking copies runs no Python code.
        self.read_with(py, timeline_view::take).map(|t| t.info())
    }

    /// The timeline as columns (see `timeline_view::TimelineCopy::columns`), or None without one.
    fn _timeline_columns<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        // The labels are read after the copy, with no borrow alive.
        let taken = self.read_with(py, timeline_view::take);
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
        let taken = self
            .read_with(py, timeline_view::take)
            .ok_or_else(|| PyRuntimeError::new_err("the profiler records no timeline"))?;
        taken.write(py, format, path, self.factor(), title)
    }

    /// The timeline's call paths for the HTML report, or None without a timeline.
    fn _timeline_paths(&self, py: Python<'_>) -> Option<crate::py::report::CallPaths> {
        // The labels are read after the copy, with no borrow alive.
        let taken = self.read_with(py, timeline_view::take)?;
        Some(crate::py::report::CallPaths {
            paths: taken.paths(py, self.factor()),
        })
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
        // Copies and new references only.
        let taken = self.read_with(py, |st, py| {
            let ledger = st.memory.as_deref()?;
            Some((ledger.funcs.clone(), labels_by_key(py, st)))
        });
        let Some((rows, labels)) = taken else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(rows.len());
        for (key, m) in rows {
            let func = labels.func(py, key)?;
            out.push((func, m.allocations, m.allocated, m.freed, m.net, m.peak));
        }
        Ok(Some(out))
    }

    /// Per counted type (`types=True`): `(name, created, destroyed, peak, peak_seconds,
    /// older_destroyed, [(function, created, destroyed), ...], [(alive, (function, ...)),
    /// ...])`, `peak_seconds` when the most were alive at once (first reached, after tracking
    /// started), the functions as pstats keys (`('~', 0, '<no profiled call>')` outside every
    /// profiled call), and the `stacks` call stacks (outermost first) that made most of the
    /// objects still alive; None without types.
    #[pyo3(signature = (stacks=20))]
    #[allow(clippy::type_complexity)]
    fn _types_stats<'py>(
        &self,
        py: Python<'py>,
        stacks: usize,
    ) -> PyResult<Option<Vec<Bound<'py, PyTuple>>>> {
        // Copies and new references only.
        let taken = self.read_with((py, stacks), |st, (py, stacks)| {
            let t = st.types.as_deref()?;
            let survivors: Vec<Vec<(u64, Vec<usize>)>> = t
                .ledger
                .alive_by_stack(stacks)
                .into_iter()
                .map(|rows| {
                    rows.into_iter()
                        .map(|(node, n)| (n, t.ledger.stack_keys(node)))
                        .collect()
                })
                .collect();
            Some((
                t.ledger.types.clone(),
                t.ledger.pairs.clone(),
                survivors,
                labels_by_key(py, st),
            ))
        });
        let Some((types, pairs, survivors, labels)) = taken else {
            return Ok(None);
        };
        let mut funcs: Vec<Vec<Bound<'py, PyTuple>>> = vec![Vec::new(); types.len()];
        for ((t, key), c) in pairs {
            let func = labels.func(py, key)?;
            let row = (func, c.created, c.destroyed).into_pyobject(py)?;
            funcs[t as usize].push(row);
        }
        let mut out = Vec::with_capacity(types.len());
        for ((t, f), alive) in types.into_iter().zip(funcs).zip(survivors) {
            let c = t.counts;
            let mut by_stack = Vec::with_capacity(alive.len());
            for (n, keys) in alive {
                let path = keys
                    .into_iter()
                    .map(|k| labels.func(py, k))
                    .collect::<PyResult<Vec<_>>>()?;
                by_stack.push((n, PyTuple::new(py, path)?).into_pyobject(py)?);
            }
            let row = (
                t.name,
                c.created,
                c.destroyed,
                c.peak,
                c.peak_at as f64 / 1e9,
                c.older_destroyed,
                f,
                by_stack,
            );
            out.push(row.into_pyobject(py)?);
        }
        Ok(Some(out))
    }

    /// Whether a coroutine counts as one call from start to return.
    #[getter]
    fn async_aware(&self) -> bool {
        self.read(|st| st.async_aware)
    }

    /// Whether each thread is profiled on its own stack.
    #[getter]
    fn threads(&self) -> bool {
        self.read(|st| st.threads)
    }

    /// The native clock this profiler reads (`'wall'`, `'cpu'` or `'thread_cpu'`), or None
    /// when it calls a Python timer.
    #[getter]
    fn clock(&self) -> Option<&'static str> {
        self.read(|st| (!st.external_timer).then(|| st.clock.name()))
    }

    /// `subprocesses=` as given: True or the folder for child processes' files; False when
    /// child processes are not profiled.
    #[getter]
    fn subprocesses(&self, py: Python<'_>) -> Py<PyAny> {
        // SAFETY: a short read of the cell with the GIL held.
        match unsafe { &*self.subprocesses.get() } {
            Some(v) => v.clone_ref(py),
            None => pyo3::types::PyBool::new(py, false)
                .to_owned()
                .into_any()
                .unbind(),
        }
    }

    /// The keyword arguments that make a profiler like this one in a child process: its
    /// native clock, flags, bias, memory and type tracking (not its timeline, RSS sampler or
    /// subprocesses, which are this process's).
    fn _options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (clock, subcalls, builtins, bias, threads, async_aware, memory, types) =
            self.read(|st| {
                (
                    (!st.external_timer).then(|| st.clock.name()),
                    st.agg.subcalls,
                    st.builtins,
                    st.bias,
                    st.threads,
                    st.async_aware,
                    st.memory.is_some(),
                    st.types
                        .as_deref()
                        .map(|t| (t.builtins, t.only.clone(), t.gc, t.calls)),
                )
            });
        let d = PyDict::new(py);
        d.set_item("timer", clock)?;
        d.set_item("subcalls", subcalls)?;
        d.set_item("builtins", builtins)?;
        d.set_item("bias", bias)?;
        d.set_item("threads", threads)?;
        d.set_item("async_aware", async_aware)?;
        d.set_item("memory", memory)?;
        if let Some((builtins, only, gc, calls)) = types {
            d.set_item("types", true)?;
            d.set_item("types_builtins", builtins)?;
            d.set_item("types_only", (!only.is_empty()).then_some(only))?;
            d.set_item("types_gc", gc)?;
            if !calls {
                d.set_item("calls", false)?;
            }
        }
        Ok(d)
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
        self.read(|st| st.timeunit)
    }

    /// The calibration bias in seconds, subtracted once per profile event (as in `profile`).
    #[getter]
    fn get_bias(&self) -> f64 {
        self.read(|st| st.bias)
    }

    #[setter]
    fn set_bias(&self, value: Option<f64>) -> PyResult<()> {
        let Some(value) = value else {
            return Err(PyTypeError::new_err("can't delete bias"));
        };
        // The RSS samples are stamped with the plain clock: a bias would shift the events
        // against them.
        if value != 0.0 && self.read(|st| st.rss.is_some()) {
            return Err(PyValueError::new_err("rss=True profiles take no bias"));
        }
        self.write_with(value, set_bias);
        Ok(())
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // SAFETY: the timer cell is only written by __clear__ and the constructor.
        if let Some(t) = unsafe { &*self.timer.get() } {
            visit.call(t)?;
        }
        // SAFETY: as the timer's.
        if let Some(s) = unsafe { &*self.subprocesses.get() } {
            visit.call(s)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        // SAFETY: GIL held; the GC calls tp_clear outside of any event of this profiler.
        drop(unsafe { (*self.subprocesses.get()).take() });
        // SAFETY: as above.
        let old = unsafe { (*self.timer.get()).take() };
        // The bias is now in the default clock's unit.
        self.write(|st| {
            st.external_timer = false;
            set_bias(st, st.bias);
        });
        drop(old);
    }
}

/// `__init__`'s settings `c` applied to the state, unless one cannot change while the profiler
/// is enabled (`same_subprocesses`: whether `c` follows child processes as before), or the
/// timeline's buffer cannot be had: then nothing changes. Runs no Python code.
fn configure(st: &mut State, (c, same_subprocesses): (&Config, bool)) -> PyResult<()> {
    // What cannot change under a running profiler is checked before anything changes.
    let same_timeline = match st.timeline.as_deref() {
        Some(tl) => c.timeline && tl.capacity() == c.buffer_size && tl.when_full == c.when_full,
        None => !c.timeline,
    };
    let same_rss = same_timeline
        && match st.rss.as_deref() {
            Some(r) => c.rss && r.interval == c.rss_interval && r.trigger == c.rss_trigger,
            None => !c.rss,
        };
    if st.enabled {
        for (changed, what) in [
            (st.threads != c.threads, "threads"),
            (st.async_aware != c.async_aware, "async_aware"),
            (!same_timeline, "the timeline"),
            (st.memory.is_some() != c.memory, "memory"),
            (!same_types(st, c.types.as_ref()), "types"),
            (!same_rss, "rss"),
            (!same_subprocesses, "subprocesses"),
        ] {
            if changed {
                return Err(PyRuntimeError::new_err(format!(
                    "cannot change {what} while the profiler is enabled"
                )));
            }
        }
    }
    // The buffer is had (or MemoryError raised) before anything changes.
    let new_timeline = if !same_timeline && c.timeline {
        let mut tl = Timeline::try_new(c.buffer_size, c.when_full).ok_or_else(|| {
            PyMemoryError::new_err(format!(
                "cannot allocate a timeline of {} events",
                c.buffer_size
            ))
        })?;
        timeline_thread_now(c.threads, &st.thread, &st.thread_info, &mut tl);
        Some(Box::new(tl))
    } else {
        None
    };
    set_subcalls(st, c.subcalls);
    set_builtins(st, c.builtins);
    st.timeunit = c.timeunit;
    if st.clock != c.native || st.external_timer != c.timer.is_some() {
        // A rate fixed at the last disable() was the old clock's.
        st.stopped_rate = None;
    }
    st.external_timer = c.timer.is_some();
    // A new timer's readings are not ordered against the old one's.
    st.timer_high = i64::MIN;
    st.clock = c.native;
    st.threads = c.threads;
    st.async_aware = c.async_aware;
    if st.memory.is_some() != c.memory {
        st.memory = c.memory.then(Box::default);
    }
    if !same_types(st, c.types.as_ref()) {
        st.types = c.types.as_ref().map(|f| {
            Box::new(TypeTracking {
                builtins: f.builtins,
                only: f.only.clone(),
                gc: f.gc,
                calls: f.calls,
                ..TypeTracking::default()
            })
        });
    }
    if !same_timeline {
        st.timeline = new_timeline;
    }
    if !same_rss {
        // The old sampler's thread (not running: the profiler is not enabled) goes with it.
        st.rss = c.rss.then(|| {
            Box::new(crate::core::rss::Sampler::new(
                c.rss_interval,
                c.rss_trigger,
                c.buffer_size,
                c.when_full,
            ))
        });
    }
    set_bias(st, c.bias);
    Ok(())
}

/// Stops the RSS sampler an `enable()` that fails had started.
fn cancel_rss(st: &mut State) {
    if let Some(r) = st.rss.as_deref_mut() {
        r.cancel();
    }
}

/// Whether a profiler's type tracking is the one `filters` asks for.
fn same_types(st: &State, filters: Option<&TypeFilters>) -> bool {
    match (st.types.as_deref(), filters) {
        (None, None) => true,
        (Some(t), Some(f)) => {
            t.builtins == f.builtins && t.only == f.only && t.gc == f.gc && t.calls == f.calls
        }
        _ => false,
    }
}

/// The label object of each function key the profiler has seen (any thread's track), for rows
/// charged to functions by key.
struct Labels(std::collections::HashMap<usize, Py<PyAny>>);

impl Labels {
    /// The pstats key of function `key`, `('~', 0, '<no profiled call>')` for none.
    fn func<'py>(&self, py: Python<'py>, key: usize) -> PyResult<Bound<'py, PyAny>> {
        match self.0.get(&key) {
            Some(o) => crate::profiler::results::snapshot::label_tuple(py, o.bind(py)),
            None => Ok(("~", 0, "<no profiled call>").into_pyobject(py)?.into_any()),
        }
    }
}

/// New references to the labels of `st`'s functions, by key.
fn labels_by_key(py: Python<'_>, st: &State) -> Labels {
    let mut objs: std::collections::HashMap<usize, Py<PyAny>> = Default::default();
    let tracks = std::iter::once((&st.agg, &st.user_objs))
        .chain(st.parked.values().map(|t| (&t.agg, &t.user_objs)));
    for (agg, labels) in tracks {
        for (e, o) in agg.entries.iter().zip(labels.iter()) {
            objs.entry(e.key).or_insert_with(|| o.clone_ref(py));
        }
    }
    for (&key, code) in &st.frame_codes {
        objs.entry(key).or_insert_with(|| code.clone_ref(py));
    }
    Labels(objs)
}

/// Undoes `_enable_subprocesses` when enable() fails after it (its own error is the lesser one).
fn stop_following(slf: &Bound<'_, Profiler>, follows: bool) {
    if follows {
        let _ = slf.call_method0(pyo3::intern!(slf.py(), "_disable_subprocesses"));
    }
}

/// Makes the timeline record the following events as the calling thread's (with `threads=True`,
/// the thread whose track is in place, once one is).
fn timeline_thread_now(per_thread: bool, key: &ThreadKey, info: &ThreadInfo, tl: &mut Timeline) {
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
