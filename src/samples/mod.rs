//! What a sampling run collected, and every output made from it, Python-free:
//!
//! - `profile`: the samples themselves: functions, frames (a function at a line), threads, and
//!   each distinct (thread, stack) with its count;
//! - the outputs read a `Profile` and nothing else, and write to any `io::Write`:
//!   - `stats`: the Stats engine's model (`-o`, a pstats file keyed by first line);
//!   - `collapsed`: flamegraph.pl's folded stacks, the thread as the root frame;
//!   - `speedscope`: speedscope's file, one sampled profile per thread.

pub mod collapsed;
pub mod profile;
pub mod speedscope;
pub mod stats;
