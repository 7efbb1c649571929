//! The native `Profiler` (what `rprofile.Profile` subclasses) around the core: its state, the
//! per-event path the front ends call, and what turns the totals into Python results.
//!
//! - `class`: the `#[pyclass]` and its methods, and the `State` the events mutate;
//! - `args`: cProfile's argument parsing rules;
//! - `events`: the per-event path (enter, leave, the timer read), shared by both front ends;
//! - `threads`: per-thread tracks (`threads=True`); `memory_hook`: the allocator hooks
//!   (`memory=True`); `labels`: builtin functions' names;
//! - `snapshot`: `getstats()` entries, the stats dict and its marshal bytes;
//! - `timeline_view`: the timeline's columns and exports, named.

pub mod args;
pub mod class;
pub mod events;
pub mod labels;
pub mod memory_hook;
pub mod snapshot;
pub mod threads;
pub mod timeline_view;
