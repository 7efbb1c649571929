//! The Python faces of the Python-free engines: `stats` (`StatsCore` and `FuncList` behind
//! `rprofile.Stats`) and `marshal` (`_marshal_loads`, the reader for pstats' data); `objects`
//! builds stats dicts and keys from a model, `text` turns names between Python str and the
//! engines' UTF-8 bytes, `gc` pauses the collector while many objects are made, `oserror`
//! raises a system error as Python does; `sampler` is the sampler's face (for now a test entry
//! point).

pub mod gc;
pub mod marshal;
pub mod objects;
pub mod oserror;
pub mod sampler;
pub mod stats;
pub mod text;
