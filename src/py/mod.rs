//! The Python faces of the Python-free engines: `stats` (`StatsCore` and `FuncList` behind
//! `rprofile.Stats`) and `marshal` (`_marshal_loads`, the reader for pstats' data).

pub mod marshal;
pub mod stats;
