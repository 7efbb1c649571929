//! The Python API of the tracer: the native `Profiler`'s methods (what `rprofile.Profile`
//! subclasses) and the faces of its results. It drives `hook` (installing the front end) and
//! reads `tracer` (the event path and its state); neither of those imports it.
//!
//! - `class`: the `Profiler`'s Python methods, from `__init__` to `getstats`;
//! - `args`: cProfile's argument parsing rules, `config`: `Profile(...)`'s arguments parsed;
//!   `mode`: which paths the events take;
//! - `results/`: the faces of its results (`snapshot`: `getstats()` entries, the stats dict and
//!   its marshal bytes, from the model `snapshot_model` makes of the totals by cProfile's rules;
//!   `timeline_view`: the timeline's columns and exports, named).

pub mod args;
pub mod class;
pub mod config;
pub mod mode;
pub mod results;
