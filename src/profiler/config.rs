//! `Profile(...)`'s arguments, parsed and checked once into a [`Config`] that `__init__` then
//! applies: cProfile's positional arguments and error messages, then rprofile's keywords.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString, PyTuple};

use crate::core::clock;
use crate::core::timeline::WhenFull;
#[cfg(not(Py_3_11))]
use crate::hook;
use crate::profiler::args;

/// Events a timeline holds unless `buffer_size` says otherwise.
const DEFAULT_BUFFER_SIZE: usize = 1_000_000;
/// How often `rss=True` reads the RSS.
const DEFAULT_RSS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(10);

/// What a profiler is asked to be (`Profile(timer, timeunit, subcalls, builtins, *, bias,
/// threads, async_aware, timeline, buffer_size, when_full, memory, rss, rss_interval,
/// rss_trigger, subprocesses, types, types_builtins, types_only, types_gc, calls)`), every
/// argument checked.
pub struct Config {
    /// A Python timer, or None for a native clock.
    pub timer: Option<Py<PyAny>>,
    /// The native clock read when there is no Python timer.
    pub native: clock::Native,
    pub timeunit: f64,
    pub subcalls: bool,
    pub builtins: bool,
    pub bias: f64,
    pub threads: bool,
    pub async_aware: bool,
    pub timeline: bool,
    pub buffer_size: usize,
    pub when_full: WhenFull,
    pub memory: bool,
    pub rss: bool,
    pub rss_interval: std::time::Duration,
    pub rss_trigger: u64,
    /// Child processes are profiled too (`subprocesses=True`, or the folder for their files):
    /// the object given, or None.
    pub subprocesses: Option<Py<PyAny>>,
    /// Objects counted by type (`types=True`): the filters, or None.
    pub types: Option<TypeFilters>,
}

/// `types_builtins`, `types_only`, `types_gc` and `calls`, as given with `types=True`.
#[derive(Clone, PartialEq, Eq)]
pub struct TypeFilters {
    pub builtins: bool,
    pub only: Vec<String>,
    pub gc: bool,
    /// False: no call is profiled; objects are charged to the interpreter's frames.
    pub calls: bool,
}

impl Config {
    /// Parses `__init__`'s arguments as `_lsprof` does its own, then rprofile's.
    pub fn parse(
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Config> {
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
                "subprocesses",
                "types",
                "types_builtins",
                "types_only",
                "types_gc",
                "calls",
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
        let threads = args::truthy(&a[5])?;
        let async_aware = args::truthy(&a[6])?;
        let want_timeline = args::truthy(&a[7])?;
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
        let want_memory = args::truthy(&a[10])?;
        let want_rss = args::truthy(&a[11])?;
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
        let subprocesses = match a[14].as_ref() {
            Some(v) if v.is_instance_of::<PyBool>() => v.is_truthy()?.then(|| v.clone().unbind()),
            Some(v) if v.is_none() => None,
            Some(v) if v.is_instance_of::<PyString>() || v.hasattr("__fspath__")? => {
                Some(v.clone().unbind())
            }
            Some(v) => {
                return Err(PyTypeError::new_err(format!(
                    "subprocesses must be True, False or a folder's path, not {}",
                    v.get_type().name()?
                )))
            }
            None => None,
        };
        let types = type_filters(args.py(), &a[15..20])?;
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
        if subprocesses.is_some() && timer.is_some() {
            return Err(PyValueError::new_err(
                "subprocesses needs a native clock: a Python timer cannot be carried to child \
                 processes",
            ));
        }
        if types.as_ref().is_some_and(|t| !t.calls) {
            for (asked, what) in [
                (want_timeline, "timeline"),
                (want_memory, "memory"),
                (want_rss, "rss"),
                (async_aware, "async_aware"),
            ] {
                if asked {
                    return Err(PyValueError::new_err(format!(
                        "{what}=True needs calls: calls=False profiles no call, it only counts \
                         objects"
                    )));
                }
            }
        }
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
        Ok(Config {
            timer,
            native,
            timeunit,
            subcalls,
            builtins,
            bias,
            threads,
            async_aware,
            timeline: want_timeline,
            buffer_size,
            when_full,
            memory: want_memory,
            rss: want_rss,
            rss_interval,
            rss_trigger,
            subprocesses,
            types,
        })
    }
}

/// `types`, `types_builtins`, `types_only`, `types_gc`, `calls`: the filters when `types` is
/// true (a ValueError where the interpreter cannot tell, or for a filter given without it).
fn type_filters(py: Python<'_>, a: &[Option<Bound<'_, PyAny>>]) -> PyResult<Option<TypeFilters>> {
    let want = args::truthy(&a[0])?;
    let builtins = args::truthy(&a[1])?;
    let only: Vec<String> = match a[2].as_ref().filter(|v| !v.is_none()) {
        Some(v) if v.is_instance_of::<PyString>() => vec![v.extract()?],
        Some(v) => {
            let mut names = Vec::new();
            for item in v.try_iter()? {
                let item = item?;
                names.push(item.extract::<String>().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "types_only must hold type names (str), not {}",
                        item.get_type().name().map_or("?".into(), |n| n.to_string())
                    ))
                })?);
            }
            names
        }
        None => Vec::new(),
    };
    let gc = args::truthy(&a[3])?;
    let calls = match a[4].as_ref().filter(|v| !v.is_none()) {
        Some(v) => v.is_truthy()?,
        None => true,
    };
    if !want {
        if builtins || !only.is_empty() || gc {
            return Err(PyValueError::new_err(
                "types_builtins, types_only and types_gc need types=True",
            ));
        }
        if !calls {
            return Err(PyValueError::new_err(
                "calls=False needs types=True: with no call profiled, objects are all it counts",
            ));
        }
        return Ok(None);
    }
    crate::tracer::types_hook::check_supported(py)?;
    Ok(Some(TypeFilters {
        builtins,
        only,
        gc,
        calls,
    }))
}
