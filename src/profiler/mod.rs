//! The native `Profiler` (what `rprofile.Profile` subclasses) around the core: its state, the
//! per-event path the front ends call, and what turns the totals into Python results.
//!
//! - `state`: the `Profiler` object and the `State` the events mutate (data only);
//! - `class`: the `Profiler`'s Python methods, from `__init__` to `getstats`;
//! - `args`: cProfile's argument parsing rules, `config`: `Profile(...)`'s arguments parsed;
//!   `mode`: which paths the events take;
//! - `events`: the per-event path (enter, leave, the clock read), shared by both front ends;
//!   `timer`: a Python timer; `exception`: the exception in flight, kept aside;
//! - `threads` and `track`: per-thread tracks (`threads=True`); `memory_hook`: the allocator
//!   hooks (`memory=True`); `labels`: builtin functions' names;
//! - `snapshot`: `getstats()` entries, the stats dict and its marshal bytes, from the model
//!   `snapshot_model` makes of the totals by cProfile's rules;
//! - `timeline_view`: the timeline's columns and exports, named.

pub mod args;
pub mod class;
pub mod config;
pub mod events;
pub mod exception;
pub mod labels;
pub mod memory_hook;
pub mod mode;
pub mod snapshot;
pub mod snapshot_model;
pub mod state;
pub mod threads;
pub mod timeline_view;
pub mod timer;
pub mod track;
