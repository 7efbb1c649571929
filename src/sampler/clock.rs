//! The sampling clock: a tick every interval on an absolute schedule, so that sleeps do not
//! drift, and the settings of the thread that reads (a lower priority, a fine timer slack).
//!
//! `clock_nanosleep(TIMER_ABSTIME)` with a 1 ns timer slack; a tick that is already past when a
//! read ends is skipped, not made up: the next wait says how many ticks went by, and the next
//! sample stands for them all. A wait longer than `STOP_SLICE` is slept in slices, so that a
//! stop asked for during a long interval (a low rate) ends it then, not at the next tick.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest sleep between two looks at the stop flag.
const STOP_SLICE: Duration = Duration::from_millis(10);

/// A schedule of ticks from a start.
pub struct Clock {
    start: Instant,
    interval: Duration,
    /// The last tick waited for (0: none yet).
    due: u64,
}

impl Clock {
    /// A clock ticking `rate` times a second from now.
    pub fn start(rate: f64) -> Clock {
        Clock {
            start: Instant::now(),
            interval: Duration::from_secs_f64(1.0 / rate),
            due: 0,
        }
    }

    /// Time since the start.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Sleeps until the tick after `elapsed` (a reading of `elapsed()`), or until `stop` is
    /// set; returns how many ticks that is since the last wait: 1 on time, more when reads (or
    /// a wait for a CPU) took longer than an interval.
    pub fn wait(&mut self, elapsed: Duration, stop: &AtomicBool) -> u64 {
        self.wait_serving(elapsed, stop, STOP_SLICE, || {})
    }

    /// `wait`, calling `serve` after every sleep of at most `every` (a blocking run passes on
    /// the signals its stopped target was sent).
    pub fn wait_serving(
        &mut self,
        elapsed: Duration,
        stop: &AtomicBool,
        every: Duration,
        mut serve: impl FnMut(),
    ) -> u64 {
        let tick = interval_ticks(elapsed, self.interval) + 1;
        let passed = tick - self.due;
        self.due = tick;
        let due = self.start + self.interval.mul_f64(tick as f64);
        let slice = every.min(STOP_SLICE);
        loop {
            let now = Instant::now();
            if now >= due || stop.load(Ordering::Relaxed) {
                return passed;
            }
            sleep_until(due.min(now + slice));
            serve();
        }
    }
}

/// Whole intervals in `elapsed`.
fn interval_ticks(elapsed: Duration, interval: Duration) -> u64 {
    let ns = interval.as_nanos().max(1);
    u64::try_from(elapsed.as_nanos() / ns).unwrap_or(u64::MAX - 1)
}

/// Sleeps until `when` on the monotonic clock (which `Instant` reads on Linux).
fn sleep_until(when: Instant) {
    let now = Instant::now();
    if when <= now {
        return;
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        std::thread::sleep(when - now);
        return;
    }
    // The target time as an absolute CLOCK_MONOTONIC time: now's reading plus what is left
    // (time_t and c_long are i32 on some targets, hence the conversions).
    let left = when - now;
    #[allow(clippy::useless_conversion)]
    let mut nsec = i64::from(ts.tv_nsec) + i64::from(left.subsec_nanos());
    #[allow(clippy::useless_conversion)]
    let mut sec = i64::from(ts.tv_sec) + left.as_secs() as i64;
    if nsec >= 1_000_000_000 {
        nsec -= 1_000_000_000;
        sec += 1;
    }
    let target = libc::timespec {
        tv_sec: sec as libc::time_t,
        tv_nsec: nsec as libc::c_long,
    };
    // SAFETY: `target` is a valid timespec; no remaining-time output with TIMER_ABSTIME. An
    // interrupted sleep (EINTR) just samples early.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &target,
            std::ptr::null_mut(),
        );
    }
}

/// Readies the calling thread to read on the clock: a 1 ns timer slack, so that sleeps of
/// 100 us end on time (the default slack is 50 us), and the priority `nice` (Linux's nice is
/// per thread): 10 lets the target of a single-process run go first on a machine with fewer
/// idle cores than they need (a late sample stands for the ticks it missed).
pub fn prepare_thread(nice: i32) {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long and changes only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    // SAFETY: setpriority with PRIO_PROCESS and who 0 changes only the calling thread on Linux;
    // a failure (not permitted) leaves the priority as it was, which is harmless.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, nice);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_whole_intervals() {
        let ms = Duration::from_millis(1);
        assert_eq!(interval_ticks(Duration::from_micros(2500), ms), 2);
        assert_eq!(interval_ticks(Duration::ZERO, ms), 0);
        assert_eq!(
            interval_ticks(Duration::from_secs(1), Duration::ZERO),
            1_000_000_000
        );
    }

    #[test]
    fn sleeping_until_a_past_or_near_time_returns() {
        let t = Instant::now();
        sleep_until(t);
        sleep_until(t + Duration::from_micros(200));
        assert!(t.elapsed() >= Duration::from_micros(200));
    }

    #[test]
    fn a_late_wait_counts_the_ticks_it_missed() {
        let mut clock = Clock::start(1000.0);
        let go_on = AtomicBool::new(false);
        assert_eq!(clock.wait(Duration::ZERO, &go_on), 1);
        // 3.5 intervals in: ticks 2 and 3 went by unsampled, the wait is for tick 4.
        assert_eq!(clock.wait(Duration::from_micros(3500), &go_on), 3);
        assert!(clock.elapsed() >= Duration::from_millis(4));
    }

    #[test]
    fn a_stop_ends_a_wait_before_its_tick() {
        // An interval of an hour: the wait returns once the stop is seen, not at the tick.
        let mut clock = Clock::start(1.0 / 3600.0);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(30));
                stop.store(true, Ordering::Relaxed);
            });
            assert_eq!(clock.wait(Duration::ZERO, &stop), 1);
        });
        assert!(clock.elapsed() >= Duration::from_millis(30));
        // Set before: no sleep at all; the ticks still count as waited.
        assert_eq!(clock.wait(clock.elapsed(), &stop), 0);
    }
}
