//! The sampling profiler's reader of another Python process, Python-free (it uses only `core`
//! and itself, so that it can run on a thread that never holds the GIL). It finds the
//! target's interpreter runtime and reads its threads' call stacks:
//!
//! - `maps`: the target's memory mappings (`/proc/PID/maps`) and which file is the interpreter;
//! - `symbols`: `_PyRuntime`'s offset in that ELF file and the file's lowest load address;
//! - `memory`: reads of the target's memory (`process_vm_readv`);
//! - `versions`: what differs between Python versions, as one table (`debug_words`: where
//!   3.13-3.15's `_Py_DebugOffsets` keep what the reader takes);
//! - `runtime`: `find_runtime(pid)`, which puts the above together;
//! - `error`: why something of the target was not read;
//! - `pages`: the target's memory a page at a time, kept for one walk of a thread's frames;
//! - `snapshot`: what the last sample read, read again in one call at the next one's start;
//! - `remote`: typed, bounded reads of the target (integers, bytes, `str` objects);
//! - `layout`: the layout one target is read with, and its structs' fields as spans;
//! - `linetable`: the line tables (3.10's, and 3.11+'s location table), instruction -> line;
//! - `stacks`: `StackReader`, every thread's Python call stack, read again and again;
//! - `names`: `thread_names(rt)`, every thread's name as `threading` gives it;
//! - `own_frames`: this process's own frames read in place with the same layout (`types`);
//! - `locals`: `LocalsReader`, a frame's local variables and their values, for the dump;
//! - `tids`: the target's OS thread ids (3.10's read from glibc's thread descriptors);
//! - `status`: which threads are on a CPU (`ThreadStates`) and which holds the GIL (`Gil`);
//! - `pause`: `--blocking`: every thread of the target stopped (ptrace) for each read;
//! - `dump`: `rprofile dump`, every thread's stack, name and state at one instant;
//! - `clock`: the sampling clock (absolute ticks) and the reading thread's settings;
//! - `session`: a sampling run: the clock, the reads, and what the mode keeps of them;
//!   `requests`: what other threads ask of a run while it goes on;
//! - `descendants`: the processes a process started, and theirs, found in `/proc`;
//! - `family`: a run over a process and its descendants on one clock, a profile each.

pub mod clock;
pub mod debug_words;
pub mod descendants;
pub mod dump;
pub mod error;
pub mod family;
pub mod layout;
pub mod linetable;
pub mod locals;
pub mod maps;
pub mod memory;
pub mod names;
pub mod own_frames;
pub mod pages;
pub mod pause;
pub mod remote;
pub mod requests;
pub mod runtime;
pub mod session;
pub mod snapshot;
pub mod stacks;
pub mod status;
pub mod symbols;
pub mod tids;
pub mod versions;

/// This process's id, which the tests read themselves through.
#[cfg(test)]
pub(crate) fn own_pid() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(i32::MAX)
}
