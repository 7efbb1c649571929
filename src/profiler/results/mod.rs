//! The faces of a profiler's results: `snapshot` (with the model `snapshot_model` makes of the
//! totals) and `timeline_view`. They read the tracer's state; the API in `profiler/` hands them
//! out.

pub mod snapshot;
pub mod snapshot_model;
pub mod timeline_view;
