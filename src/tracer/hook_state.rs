//! What a front end keeps per profiler, as a field of the profiler's `State` (data only: the
//! front end makes it, `HookState::new` in `monitoring.rs` or `legacy/install.rs`).

#[cfg(Py_3_12)]
use pyo3::prelude::*;

#[cfg(Py_3_12)]
/// Per-profiler data of the `sys.monitoring` front end.
#[repr(C)]
pub struct HookState {
    /// The address of `types.MethodType`, the type of bound methods of Python functions (kept
    /// alive by `METHOD_TYPE`): read by the CALL and C_RETURN events of callables that are
    /// neither functions nor builtins, so near the state's start (see `State`).
    pub method_type: usize,
    /// `sys.monitoring.MISSING`: the `arg0` of a call with no positional argument.
    pub missing: Py<PyAny>,
    /// The addresses of the callbacks bound to this profiler and not cleared (borrowed: each
    /// takes itself off when it is cleared), whose entry points follow the profiler's flags
    /// (`fast_mode_changed`).
    pub callbacks: Vec<usize>,
}

/// Nothing to keep per profiler before 3.12.
#[cfg(not(Py_3_12))]
pub struct HookState;
