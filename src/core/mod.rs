//! The Python-free core: what a profile is made of, with no interpreter in sight (no pyo3), each
//! part tested by `cargo test` alone.
//!
//! - `aggregator`: the call-tree totals, `counters` (what is counted per function and per caller
//!   edge), over `frames` (a thread's call stack) and `lookup_cache` (the caches in front of its
//!   tables);
//! - `clock`: the default timer (the time-stamp counter or `CLOCK_MONOTONIC`) and the native clocks;
//! - `format`: integers as decimal text and JSON strings, for the reports and the exports;
//! - `memory`: the ledger of bytes allocated and freed per function; `types`: objects created,
//!   destroyed and alive per type and per (type, function);
//! - `timeline`: the ring of calls, returns and memory events, and the spans they pair into
//!   (its writers are `timeline_export`'s); `rss`: the resident-memory sampler that feeds it.

pub mod aggregator;
pub mod clock;
pub mod counters;
pub mod format;
pub mod frames;
pub mod lookup_cache;
pub mod memory;
pub mod rss;
pub mod timeline;
pub mod types;
