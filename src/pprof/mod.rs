//! The pprof export (issue 28): a profile as Google's `profile.proto`, gzipped, the format
//! `go tool pprof`, Pyroscope, Parca and Grafana read. Python-free:
//!
//! - `proto`: the messages, declared by hand for prost (no protoc, no build step);
//! - `writer`: the one writer (string table, functions, locations, samples streamed to gzip);
//! - the sources, each writing through it: `stats` (a stats model: a sample per caller edge),
//!   `sampled` (a sampling run's stacks, by line and thread), `paths` (a timeline's call
//!   paths).

pub mod paths;
pub mod proto;
pub mod sampled;
pub mod stats;
pub mod writer;
