//! The Python faces of the Python-free engines: `stats` (`StatsCore` and `FuncList` behind
//! `rprofile.Stats`) and `marshal` (`_marshal_loads`, the reader for pstats' data); `objects`
//! builds stats dicts and keys from a model, `text` turns names between Python str and the
//! engines' UTF-8 bytes, `gc` pauses the collector while many objects are made, `oserror`
//! raises a system error as Python does; `sampler` is the reader's one-shot face (`rprofile
//! dump`) and the pieces the tests check, `sampling` the sampling profiler's face
//! (`SamplerCore`, `SampledProfile`); `report` writes the HTML report and `pprof` the pprof
//! export; `pickling` is what the picklable objects share.

pub mod gc;
pub mod marshal;
pub mod objects;
pub mod oserror;
pub mod pickling;
pub mod pprof;
pub mod report;
pub mod sampler;
pub mod sampling;
pub mod stats;
pub mod text;
