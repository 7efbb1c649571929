//! The default timer: the monotonic clock CPython's `perf_counter` and `_lsprof` read, in
//! integer nanoseconds, with no Python call.

/// Nanoseconds of `CLOCK_MONOTONIC` (the vDSO makes this a few nanoseconds on Linux).
#[cfg(unix)]
#[inline]
pub fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes into it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        // _lsprof's timer yields 0 when the clock fails; so do we.
        return 0;
    }
    (ts.tv_sec as i64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as i64)
}

#[cfg(not(unix))]
#[inline]
pub fn monotonic_ns() -> i64 {
    use std::sync::OnceLock;
    use std::time::Instant;
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as i64
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_never_goes_back() {
        let mut last = super::monotonic_ns();
        assert!(last > 0);
        for _ in 0..10_000 {
            let now = super::monotonic_ns();
            assert!(now >= last);
            last = now;
        }
    }
}
