//! Python 3.10/3.11 front end: the C-level profile hook (`PyEval_SetProfile`) on the thread
//! that calls `enable()`, receiving exactly the events `_lsprof` receives. Its files, in the
//! order they use one another:
//! - `install.rs`: `enable()`/`disable()` put the hook in and take it out; `HookState::new`.
//! - `watch.rs`: with `threads=True`, the hook on every running thread and on new ones.
//! - `callbacks.rs`: the hook itself, its fast paths, and the events it hands on.
//! - `frames.rs`: the frame layouts read without a call, checked at run time.

mod callbacks;
mod frames;
mod install;
mod watch;

#[cfg(not(Py_3_11))]
pub use frames::check_frame_layout;
pub use frames::reads_frame_code;
pub use install::{fast_mode_changed, install, uninstall};
