//! The Python faces of the Python-free engines: `stats` (`StatsCore` and `FuncList` behind
//! `rprofile.Stats`) and `marshal` (`_marshal_loads`, the reader for pstats' data); `objects`
//! builds stats dicts and keys from a model, `text` turns names between Python str and the
//! engines' UTF-8 bytes, `gc` pauses the collector while many objects are made, `oserror`
//! raises a system error as Python does; `sampler` has the reader's test entry points and
//! `sampling` the sampling profiler's face (`SamplerCore`, `SampledProfile`); `report` writes
//! the HTML report and `pprof` the pprof export; `pickling` is what the picklable objects
//! share; `sigterm` keeps a child process's SIGTERM from being lost before its Python handler
//! saves its profile.

pub mod gc;
pub mod marshal;
pub mod objects;
pub mod oserror;
pub mod pickling;
pub mod pprof;
pub mod report;
pub mod sampler;
pub mod sampling;
pub mod sigterm;
pub mod stats;
pub mod text;
