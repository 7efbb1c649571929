//! The sampling profiler's reader of another Python process, Python-free (it uses only `core`
//! and itself, so that it can run on a thread that never holds the GIL). This first floor finds
//! the target's interpreter runtime:
//!
//! - `maps`: the target's memory mappings (`/proc/PID/maps`) and which file is the interpreter;
//! - `symbols`: `_PyRuntime`'s offset in that ELF file and the file's lowest load address;
//! - `memory`: reads of the target's memory (`process_vm_readv`);
//! - `versions`: what differs between Python versions, as one table;
//! - `runtime`: `find_runtime(pid)`, which puts the above together.

pub mod maps;
pub mod memory;
pub mod runtime;
pub mod symbols;
pub mod versions;
