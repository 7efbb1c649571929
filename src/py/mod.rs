//! The Python faces of the Python-free engines: `stats` (`StatsCore` and `FuncList` behind
//! `rprofile.Stats`) and `marshal` (`_marshal_loads`, the reader for pstats' data); `sampler`
//! is the reader's one-shot face (`rprofile dump`), `testing` (`_rprofile._testing`) the pieces
//! of it and of the Stats engine that only the tests check, `sampling` the sampling profiler's
//! face (`SamplerCore`, `SampledProfile`); `report` writes the HTML report and `pprof` the
//! pprof export. The helpers they share with the profiler are in `pyutil/`.

pub mod marshal;
pub mod pprof;
pub mod report;
pub mod sampler;
pub mod sampling;
pub mod stats;
pub mod testing;
