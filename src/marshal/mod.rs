//! CPython's marshal format (version 4, as `marshal.dump` writes it on 3.10-3.13) for stats
//! files: `write` makes the bytes of a stats dict, `read` parses any marshal data a stats file
//! may hold into plain values, with CPython's errors for bad data and bounded memory.

pub mod compare;
#[cfg(test)]
pub(crate) mod fuzz_tests;
pub mod read;
mod write;

pub use write::Writer;
