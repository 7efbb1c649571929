//! The interpreter-facing front end, chosen at build time: the C profile hook before 3.12,
//! `sys.monitoring` from 3.12 on. Both feed `tracer::events::enter_call`/`leave_call`; what
//! each keeps per profiler is `tracer::hook_state`.

#[cfg(not(Py_3_12))]
mod legacy;
#[cfg(not(Py_3_11))]
pub use legacy::check_frame_layout;
#[cfg(not(Py_3_12))]
pub use legacy::{fast_mode_changed, install, reads_frame_code, uninstall};

#[cfg(Py_3_12)]
mod callback;
#[cfg(Py_3_12)]
mod monitoring;
#[cfg(Py_3_12)]
pub use monitoring::{fast_mode_changed, install, uninstall};
