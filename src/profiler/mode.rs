//! Which paths the events take: the one place that decides them from the profiler's settings.
//! `plain_clock` and `plain_no_timeline` say how the clock is read; the fast-path mode (`State::fast`) says which
//! specialized callbacks may run, and the front end is told whenever it changes.

use crate::core::clock;
use crate::hook;
use crate::tracer::state::{
    unit, State, FAST_NONE, FAST_ON, FAST_WITH_THREADS, FAST_WITH_TIMELINE,
};
use crate::tracer::threads::HAS_THREAD_POINTER;

/// Sets the bias, and with it (as every change of timer, clock, bias or timeline ends here)
/// whether the per-event clock read can take the plain path.
pub fn set_bias(st: &mut State, bias: f64) {
    st.bias = bias;
    st.bias_units = if bias == 0.0 { 0.0 } else { bias / unit(st) };
    // (Once a bias has been taken off the clock, it stays off: no plain clock reads after.)
    st.plain_clock = !st.external_timer
        && st.bias_units == 0.0
        && st.bias_acc == 0.0
        && st.clock == clock::Native::Wall;
    st.plain_no_timeline = st.plain_clock && st.timeline.is_none();
    update_fast_mode(st);
}

/// cProfile's `subcalls` flag, for every thread's track.
pub fn set_subcalls(st: &mut State, subcalls: bool) {
    st.agg.subcalls = subcalls;
    for t in st.parked.values_mut() {
        t.agg.subcalls = subcalls;
    }
    update_fast_mode(st);
}

/// Sets whether builtins are profiled (and the callbacks' paths for it).
pub fn set_builtins(st: &mut State, builtins: bool) {
    st.builtins = builtins;
    update_fast_mode(st);
}

/// Recomputes [`State::fast`], and has the front end's callbacks follow it (and the builtins
/// flag); called wherever what it depends on changes (the clock, the bias, the timeline,
/// threads: `set_bias`; subcalls: `set_subcalls`; builtins: `set_builtins`).
pub fn update_fast_mode(st: &mut State) {
    let threads_ok = !st.threads || HAS_THREAD_POINTER;
    // Before 3.12 the hook reads a frame's code itself on the fast paths, and a coroutine's
    // events (async_aware) need the frame's state: the general path.
    #[cfg(not(Py_3_12))]
    let hook_ok = hook::reads_frame_code() && !st.async_aware;
    #[cfg(Py_3_12)]
    let hook_ok = true;
    st.fast = if !(st.plain_clock && threads_ok && hook_ok && st.agg.subcalls && clock::reads_tsc())
    {
        FAST_NONE
    } else {
        FAST_ON
            | if st.timeline.is_some() {
                FAST_WITH_TIMELINE
            } else {
                0
            }
            | if st.threads { FAST_WITH_THREADS } else { 0 }
    };
    hook::fast_mode_changed(st);
}
