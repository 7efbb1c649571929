//! What a sampling run collected, and every output made from it, Python-free:
//!
//! - `profile`: the samples themselves: functions, frames (a function at a line), threads, and
//!   each distinct (thread, stack) with its count;
//! - `merge`: one profile of several processes' samples, each process's threads kept apart;
//! - the outputs read a `Profile` and nothing else, and write to any `io::Write`:
//!   - `stats`: the Stats engine's model (`-o`, a pstats file keyed by first line);
//!   - `collapsed`: flamegraph.pl's folded stacks, the thread as the root frame;
//!   - `speedscope`: speedscope's file, one sampled profile per thread;
//!   - `flamegraph`: an interactive SVG flame graph drawn by inferno;
//!   - `lines`: the per-line report per thread (`--lines`), as data and as a table;
//!   - `summary`: the one line on what the run took and lost, and the threads table;
//! - `recording`: the samples in time order (all, or the last seconds: a flight recorder),
//!   and the profile of a window of them;
//! - `seen`: what one read saw of one thread (counted at a stack, idle, dropped);
//! - `timebins`: the samples by when they were taken, in a bounded number of bins (the
//!   report's time view);
//! - `stalls`: the stretches of a recording in which a thread ran without a break;
//! - `within`: the samples of one call (a thread's stacks below a runner function's frame);
//! - `table`: how those reports draw their tables (comfy-table, to a given width);
//! - `pickle`: the samples as a pickle payload and back (a `SampledProfile` pickled).

pub mod collapsed;
pub mod flamegraph;
pub mod lines;
pub mod merge;
pub mod pickle;
pub mod profile;
pub mod recording;
pub mod seen;
pub mod speedscope;
pub mod stalls;
pub mod stats;
pub mod summary;
pub mod table;
pub mod timebins;
pub mod within;
