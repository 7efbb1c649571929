//! A native SIGTERM handler in front of Python's, for a child process that saves its profile
//! on SIGTERM (`rprofile.children.traced`).
//!
//! Python runs a signal's Python handler at the next bytecode of the main thread, and a
//! blocking call wakes for it only if the signal interrupts the call: a SIGTERM that arrives
//! just before the main thread blocks (a Pool worker going to wait on its task queue's lock,
//! which `Pool.terminate()` holds) would never be handled, and the worker that SIGTERM would
//! have killed waits forever. So, after passing each SIGTERM on to Python's handler, this one
//! arms a timer that sends SIGTERM to the main thread again 100 ms later, which interrupts
//! whatever it is blocked in; the Python handler ends the process (after saving), which ends
//! the resends. Should Python not get to it by the 20th resend (2 s: the main thread is in a
//! long call that no signal interrupts), the process ends by SIGTERM's default action, as it
//! would have without rprofile (unsaved).

use pyo3::prelude::*;

/// Resends before the default action is taken.
#[cfg(target_os = "linux")]
const MAX_RESENDS: u32 = 20;
/// Between resends.
#[cfg(target_os = "linux")]
const RESEND_NANOS: i64 = 100_000_000;

#[cfg(target_os = "linux")]
mod imp {
    use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

    use super::{MAX_RESENDS, RESEND_NANOS};

    /// Python's handler (a plain `void (*)(int)`), called first.
    static PYTHON_HANDLER: AtomicUsize = AtomicUsize::new(0);
    /// The timer that resends SIGTERM to the main thread, if `HAVE_TIMER` (glibc's first timer
    /// is the null pointer: kernel timer id 0).
    static TIMER: AtomicPtr<libc::c_void> = AtomicPtr::new(std::ptr::null_mut());
    static HAVE_TIMER: AtomicBool = AtomicBool::new(false);
    static RESENT: AtomicU32 = AtomicU32::new(0);

    extern "C" fn on_sigterm(sig: libc::c_int) {
        let python = PYTHON_HANDLER.load(Ordering::Relaxed);
        if python != 0 {
            // SAFETY: PYTHON_HANDLER holds the `sa_handler` Python installed for SIGTERM (a
            // plain handler: Python sets no SA_SIGINFO), made to be called in signal context.
            let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(python) };
            handler(sig);
        }
        let timer = TIMER.load(Ordering::Relaxed);
        if RESENT.fetch_add(1, Ordering::Relaxed) >= MAX_RESENDS
            || !HAVE_TIMER.load(Ordering::Relaxed)
        {
            // SAFETY: signal() and raise() are async-signal-safe; SIGTERM is blocked while
            // this handler runs, so the raised one acts, by default, once it returns.
            unsafe {
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                libc::raise(libc::SIGTERM);
            }
            return;
        }
        let later = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: 0,
                tv_nsec: RESEND_NANOS,
            },
        };
        // SAFETY: timer_settime is async-signal-safe; the timer was made by `install` in this
        // process (a forked child makes its own before this handler can be reached there).
        unsafe {
            libc::timer_settime(timer, 0, &later, std::ptr::null_mut());
        }
    }

    /// Puts `on_sigterm` in front of the Python handler now installed for SIGTERM, with a
    /// timer aimed at the calling (main) thread. False when SIGTERM has no Python handler.
    pub fn install() -> bool {
        // SAFETY: sigaction reads and writes the structs given; no handler runs meanwhile
        // that reads these statics inconsistently (the timer is made before the handler is
        // put in place, and the handler works without one).
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGTERM, std::ptr::null(), &mut current) != 0 {
                return false;
            }
            let ours = on_sigterm as extern "C" fn(libc::c_int) as usize;
            if current.sa_sigaction != ours {
                if current.sa_sigaction == libc::SIG_DFL
                    || current.sa_sigaction == libc::SIG_IGN
                    || current.sa_flags & libc::SA_SIGINFO != 0
                {
                    return false;
                }
                PYTHON_HANDLER.store(current.sa_sigaction, Ordering::Relaxed);
            }
            // A forked child inherits the handler, not the timer: each process makes its own.
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = libc::SIGTERM;
            event.sigev_notify_thread_id = libc::gettid();
            let mut timer: libc::timer_t = std::ptr::null_mut();
            let made = libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer) == 0;
            HAVE_TIMER.store(false, Ordering::Relaxed);
            TIMER.store(timer, Ordering::Relaxed);
            HAVE_TIMER.store(made, Ordering::Relaxed);
            RESENT.store(0, Ordering::Relaxed);
            if current.sa_sigaction != ours {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = ours;
                action.sa_flags = libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut()) != 0 {
                    return false;
                }
            }
            true
        }
    }
}

/// `_watch_sigterm()`: called from the main thread right after `signal.signal(SIGTERM, f)`
/// (or in a forked child that inherited it): SIGTERM is resent to the main thread until its
/// Python handler has run (see the module doc). Returns whether it could be set up.
#[pyfunction]
pub fn _watch_sigterm() -> bool {
    #[cfg(target_os = "linux")]
    {
        imp::install()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}
