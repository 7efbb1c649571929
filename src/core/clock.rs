//! The default timer, read without a Python call.
//!
//! Reading the clock twice per call is the largest single cost of a profiler: `clock_gettime`
//! through the vDSO costs ~20 ns here, the time-stamp counter a few. So where the processor has an
//! invariant TSC (constant rate, never stopped, the same on every core), the profiler counts TSC
//! ticks and converts them to seconds when the stats are read, with a rate measured against
//! `CLOCK_MONOTONIC` (the clock cProfile reads) over the life of the process. Elsewhere it reads
//! `CLOCK_MONOTONIC` in nanoseconds, as `_lsprof` does.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Which clock the default timer reads on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Tsc,
    Monotonic,
}

/// A reference point of both clocks, the start of the rate measurement.
struct Anchor {
    source: Source,
    ticks: i64,
    ns: i64,
}

static ANCHOR: OnceLock<Anchor> = OnceLock::new();

/// The anchor's source for the per-event read, one relaxed load: `UNSET` until the anchor exists.
static SOURCE: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = 0;
const TSC: u8 = 1;
const MONOTONIC: u8 = 2;

fn anchor() -> &'static Anchor {
    ANCHOR.get_or_init(|| {
        let source = if invariant_tsc() {
            Source::Tsc
        } else {
            Source::Monotonic
        };
        SOURCE.store(
            match source {
                Source::Tsc => TSC,
                Source::Monotonic => MONOTONIC,
            },
            Ordering::Relaxed,
        );
        Anchor {
            source,
            ticks: raw_ticks(source),
            ns: monotonic_ns(),
        }
    })
}

/// Fixes the clock choice and starts the rate measurement (the module's import calls this, so
/// the measurement spans the whole process).
pub fn init() {
    anchor();
}

/// The clock the default timer reads.
pub fn source() -> Source {
    anchor().source
}

/// The default timer: TSC ticks or nanoseconds, see [`source`].
#[inline(always)]
pub fn now() -> i64 {
    // The source is fixed once, before any profiler exists (the module's import): the common
    // case is a load, a compare and the read, inlined so that the event paths stay leaves.
    if SOURCE.load(Ordering::Relaxed) == TSC {
        return tsc();
    }
    now_other()
}

/// Whether the default timer is the TSC read inline. The fast event paths test this first and
/// then read [`tsc_now`]: with no call left on them (not even a cold one), nothing they hold must
/// survive a call, and they need no saved registers.
#[inline(always)]
pub fn reads_tsc() -> bool {
    SOURCE.load(Ordering::Relaxed) == TSC
}

/// The default timer where [`reads_tsc`] holds.
#[inline(always)]
pub fn tsc_now() -> i64 {
    tsc()
}

#[cold]
#[inline(never)]
fn now_other() -> i64 {
    match SOURCE.load(Ordering::Relaxed) {
        TSC => tsc(),
        MONOTONIC => monotonic_ns(),
        _ => raw_ticks(anchor().source),
    }
}

#[inline]
fn raw_ticks(source: Source) -> i64 {
    match source {
        Source::Tsc => tsc(),
        Source::Monotonic => monotonic_ns(),
    }
}

/// A reading of [`now`] and `CLOCK_MONOTONIC`'s seconds at the same moment: a time in ticks is
/// `seconds + (t - ticks) * seconds_per_tick()` in that clock's seconds, which stay put as the
/// rate estimate improves (ticks since boot times the rate would not).
pub fn anchor_point() -> (i64, f64) {
    let a = anchor();
    (a.ticks, a.ns as f64 / 1e9)
}

/// Seconds per unit of [`now`]: 1e-9 for nanoseconds; for TSC ticks, the rate measured from the
/// anchor to now (waiting until at least 2 ms have passed, so the estimate is good to ~1e-5).
pub fn seconds_per_tick() -> f64 {
    let a = anchor();
    if a.source == Source::Monotonic {
        return 1.0 / 1e9;
    }
    loop {
        let ns = monotonic_ns() - a.ns;
        let ticks = tsc() - a.ticks;
        if ns >= 2_000_000 && ticks > 0 {
            return ns as f64 / ticks as f64 / 1e9;
        }
        std::hint::spin_loop();
    }
}

/// The native clocks a profiler can read by name (`Profile(timer="cpu")`), without a Python
/// call per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Native {
    /// Real time: the default timer ([`now`]).
    Wall,
    /// CPU time of the whole process (`time.process_time`).
    Cpu,
    /// CPU time of the running thread (`time.thread_time`).
    ThreadCpu,
}

impl Native {
    pub fn from_name(name: &str) -> Option<Native> {
        Some(match name {
            "wall" => Native::Wall,
            "cpu" => Native::Cpu,
            "thread_cpu" => Native::ThreadCpu,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Native::Wall => "wall",
            Native::Cpu => "cpu",
            Native::ThreadCpu => "thread_cpu",
        }
    }

    /// A reading in this clock's ticks.
    #[inline]
    pub fn now(self) -> i64 {
        match self {
            Native::Wall => now(),
            #[cfg(unix)]
            Native::Cpu => clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID),
            #[cfg(unix)]
            Native::ThreadCpu => clock_ns(libc::CLOCK_THREAD_CPUTIME_ID),
            #[cfg(not(unix))]
            _ => now(),
        }
    }

    /// Seconds per tick of [`Native::now`].
    pub fn seconds_per_tick(self) -> f64 {
        match self {
            Native::Wall => seconds_per_tick(),
            _ if cfg!(unix) => 1.0 / 1e9,
            _ => seconds_per_tick(),
        }
    }
}

/// Nanoseconds of `CLOCK_MONOTONIC`.
#[cfg(unix)]
#[inline]
pub fn monotonic_ns() -> i64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Nanoseconds of a POSIX clock.
#[cfg(unix)]
#[inline]
pub(crate) fn clock_ns(id: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 {
        // _lsprof's timer yields 0 when the clock fails; so do we.
        return 0;
    }
    // (`as i64`: time_t and c_long are i64 on 64-bit Linux, narrower elsewhere.)
    #[allow(clippy::unnecessary_cast)]
    (ts.tv_sec as i64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as i64)
}

#[cfg(not(unix))]
#[inline]
pub fn monotonic_ns() -> i64 {
    use std::time::Instant;
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as i64
}

#[cfg(target_arch = "x86_64")]
#[inline]
fn tsc() -> i64 {
    // SAFETY: RDTSC is available on every x86_64 processor and has no memory effects.
    unsafe { core::arch::x86_64::_rdtsc() as i64 }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline]
fn tsc() -> i64 {
    monotonic_ns()
}

/// CPUID.80000007H:EDX[8], "invariant TSC": the counter runs at a constant rate in every power
/// state and is synchronised across cores. `RPROFILE_CLOCK=monotonic` forces the system clock.
#[cfg(target_arch = "x86_64")]
fn invariant_tsc() -> bool {
    use core::arch::x86_64::__cpuid;
    if std::env::var_os("RPROFILE_CLOCK").is_some_and(|v| v == "monotonic") {
        return false;
    }
    // CPUID is available on every x86_64 processor; leaf 0x80000000 reports the highest
    // extended leaf, which is checked before leaf 0x80000007 is read.
    let max_ext = __cpuid(0x8000_0000).eax;
    if max_ext < 0x8000_0007 {
        return false;
    }
    let edx = __cpuid(0x8000_0007).edx;
    edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_timer_never_goes_back() {
        let mut last = now();
        for _ in 0..10_000 {
            let t = now();
            assert!(t >= last);
            last = t;
        }
    }

    #[test]
    fn ticks_convert_to_the_seconds_of_the_monotonic_clock() {
        init();
        // A reading of both clocks at one instant: a pair the scheduler did not split.
        let pair = || loop {
            let (before, t, after) = (monotonic_ns(), now(), monotonic_ns());
            if after - before < 20_000 {
                return (t, before / 2 + after / 2);
            }
        };
        let (t0, n0) = pair();
        std::thread::sleep(std::time::Duration::from_millis(30));
        let (t1, n1) = pair();
        let measured = (t1 - t0) as f64 * seconds_per_tick();
        let reference = (n1 - n0) as f64 / 1e9;
        assert!(
            (measured - reference).abs() < reference * 0.01,
            "{measured} vs {reference}"
        );
    }
}
