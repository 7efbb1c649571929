//! rprofile's native core: a deterministic profiler with cProfile's accounting.
//!
//! - `aggregator`: the Python-free call-tree totals (ncalls, primitive calls, tottime, cumtime,
//!   caller edges), with `lookup_cache` in front of its tables;
//! - `events`: the per-event path shared by both front ends;
//! - `hook`: the interpreter front end (profile hook on 3.10/3.11, `sys.monitoring` on 3.12+);
//! - `profiler`: the `Profiler` class Python's `rprofile.Profile` subclasses;
//! - `entries`: `getstats()` entries and the stats dict;
//! - `labels`: names of built-in functions; `clock`: the default timer;
//! - `memory` (Python-free) and `memory_hook`: allocations charged per function;
//! - `timeline` (Python-free) and `timeline_py`: the event timeline and its exports; `rss`: the
//!   RSS sampler that feeds it;
//! - `stats` (Python-free) and `stats_py`: the Stats engine behind `rprofile.Stats`.

pub mod aggregator;
mod args;
pub mod clock;
mod entries;
mod events;
mod frames;
mod hook;
mod labels;
pub mod lookup_cache;
pub mod marshal;
mod marshal_py;
pub mod memory;
mod memory_hook;
mod profiler;
pub mod rss;
pub mod stats;
mod stats_py;
mod threads;
pub mod timeline;
mod timeline_py;

use pyo3::prelude::*;

#[pymodule]
fn _rprofile(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Start measuring the default clock's rate now, so that it spans the whole process.
    clock::init();
    m.add_class::<profiler::Profiler>()?;
    m.add_function(wrap_pyfunction!(marshal_py::_marshal_loads, m)?)?;
    m.add_class::<stats_py::StatsCore>()?;
    m.add_class::<stats_py::FuncList>()?;
    m.add_function(wrap_pyfunction!(stats_py::_f8, m)?)?;
    m.add_function(wrap_pyfunction!(stats_py::_regex_translate, m)?)?;
    m.add("profiler_entry", entries::entry_type(m.py())?)?;
    m.add("profiler_subentry", entries::subentry_type(m.py())?)?;
    Ok(())
}
