//! What a sampling run collected, and every output made from it, Python-free:
//!
//! - `profile`: the samples themselves: functions, frames (a function at a line), threads, and
//!   each distinct (thread, stack) with its count;
//! - the outputs (stats model, folded stacks, speedscope, flame graph, per-line report) read a
//!   `Profile` and nothing else.

pub mod profile;
