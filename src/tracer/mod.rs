//! The event path: the `Profiler` object's data and what each event does to it, shared by both
//! front ends (`hook`), which call `events::enter_call`/`leave_call`. It imports neither `hook`
//! nor the Python API (`profiler`).
//!
//! - `state`: the `Profiler` object and the `State` the events mutate (data only), with
//!   `hook_state`, what a front end keeps per profiler;
//! - `events`: the per-event path (enter, leave, the clock read); `timer`: a Python timer;
//!   `exception`: the exception in flight, kept aside;
//! - `threads` and `track`: per-thread tracks (`threads=True`); `memory_hook`: the allocator
//!   hooks (`memory=True`); `types_hook`: the reference tracer (`types=True`, 3.13+); `charge`:
//!   what both hooks share (who may charge, and which function); `labels`: builtin functions'
//!   names.

pub mod charge;
pub mod events;
pub mod exception;
pub mod hook_state;
pub mod labels;
pub mod memory_hook;
pub mod state;
pub mod threads;
pub mod timer;
pub mod track;
pub mod types_hook;
