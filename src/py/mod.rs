//! The Python faces of the Python-free engines: `stats` (`StatsCore` and `FuncList` behind
//! `rprofile.Stats`) and `marshal` (`_marshal_loads`, the reader for pstats' data); `text`
//! turns names between Python str and the engines' UTF-8 bytes.

pub mod marshal;
pub mod stats;
pub mod text;
