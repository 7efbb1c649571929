//! CPython's marshal format (version 4, as `marshal.dump` writes it on 3.10-3.13) for stats
//! files: `write` makes the bytes of a stats dict, `read` parses any marshal data into plain
//! values, with CPython's errors for bad data and bounded memory, as the marshal of the running
//! Python (its `dialect`: 3.14's slices, 3.15's frozendicts) reads it.

pub mod compare;
mod dialect;
#[cfg(test)]
pub(crate) mod fuzz_tests;
pub mod read;
mod write;

pub use write::Writer;
