//! rprofile's native code: a deterministic profiler with cProfile's accounting, and the engine
//! behind `rprofile.Stats`. Folders, from the interpreter inwards:
//!
//! - `profiler`: the Python API of the `Profiler` class (its methods and arguments) and the
//!   results it gives (snapshot, timeline view); it drives `hook` and reads `tracer`;
//! - `hook`: the interpreter front ends (the profile hook on 3.10/3.11, `sys.monitoring` on
//!   3.12+), which hand each event to `tracer::events`;
//! - `tracer`: the event path: the `Profiler`'s state, what each event does to it, threads, the
//!   memory hook; it imports neither `hook` nor `profiler`;
//! - `core`: the Python-free parts a profile is made of (aggregator, call stack, clocks, memory
//!   ledger, timeline, RSS sampler); it uses nothing outside itself;
//! - `stats` and `marshal`: the Python-free Stats engine and the marshal format, with `py`
//!   giving them their Python faces;
//! - `sampler`: the Python-free reader of another Python process (the sampling profiler's
//!   base): it finds the target's interpreter runtime and reads its threads' stacks;
//! - `samples`: what a sampling run collected and every output made from it, Python-free;
//! - `report`: the self-contained HTML report of any profile, Python-free;
//! - `pprof`: the pprof export (gzipped `profile.proto`) of any profile, Python-free;
//! - `timeline_export`: the timeline's Chrome trace and speedscope files, Python-free.

mod children;
pub mod core;
mod hook;
pub mod marshal;
pub mod pprof;
mod profiler;
mod py;
mod pyutil;
pub mod report;
pub mod sampler;
pub mod samples;
pub mod stats;
mod timeline_export;
pub mod top;
mod tracer;

use pyo3::prelude::*;

#[pymodule]
fn _rprofile(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Start measuring the default clock's rate now, so that it spans the whole process.
    crate::core::clock::init();
    m.add_class::<tracer::state::Profiler>()?;
    // Registered so that pickle finds it by name (a snapshot unpickles through its class).
    m.add_class::<profiler::results::snapshot::Snapshot>()?;
    m.add_function(wrap_pyfunction!(py::marshal::_marshal_loads, m)?)?;
    m.add(
        "_CodeObjectData",
        m.py().get_type::<py::marshal::CodeObjectData>(),
    )?;
    m.add_class::<py::stats::StatsCore>()?;
    m.add_class::<py::stats::FuncList>()?;
    m.add_function(wrap_pyfunction!(py::sampler::_find_runtime, m)?)?;
    m.add_function(wrap_pyfunction!(py::sampler::_dump_threads, m)?)?;
    m.add_function(wrap_pyfunction!(py::sampler::_descendants, m)?)?;
    m.add_class::<py::sampling::SamplerCore>()?;
    m.add_class::<py::sampling::SampledProfile>()?;
    m.add("MAX_SAMPLING_RATE", sampler::session::MAX_RATE)?;
    // What a flight recorder holds per thread read and per read (its bound in the docs).
    m.add(
        "_RECORDING_BYTES",
        (
            samples::recording::MARK_BYTES,
            samples::recording::TICK_BYTES,
        ),
    )?;
    m.add_function(wrap_pyfunction!(py::report::_write_report, m)?)?;
    m.add_function(wrap_pyfunction!(py::report::_compare_table, m)?)?;
    m.add_class::<py::report::CallPaths>()?;
    m.add_function(wrap_pyfunction!(py::pprof::_write_pprof, m)?)?;
    m.add_function(wrap_pyfunction!(children::sigterm::_watch_sigterm, m)?)?;
    py::testing::register(m)?;
    m.add(
        "profiler_entry",
        profiler::results::snapshot::entry_type(m.py())?,
    )?;
    m.add(
        "profiler_subentry",
        profiler::results::snapshot::subentry_type(m.py())?,
    )?;
    Ok(())
}
