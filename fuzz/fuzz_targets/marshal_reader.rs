//! libFuzzer target for rprofile's marshal reader (`src/marshal/read.rs`); see fuzz/README.md.
//!
//! The reader is compiled from the main crate's source files (`#[path]` below) instead of
//! depending on the `rprofile` crate: the marshal module is plain Rust (std only), while the
//! crate links pyo3 and, outside maturin builds, libpython, which an instrumented fuzz binary
//! does not need.
//!
//! Checked for every input, besides "no panic, no stack overflow, no hang" (libFuzzer's
//! `-timeout`):
//! - `Ok` uses between 1 and `data.len()` bytes; a strict prefix of them gives `EOFError`;
//!   reading them followed by junk gives the same value;
//! - an error other than `EOFError` is unchanged by junk appended;
//! - memory: no single allocation beyond `16 * len + 4 KiB` (a declared size is never trusted),
//!   and a peak of live heap bytes within `peak_per_byte() * len + 64 KiB`.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[allow(dead_code, unused_imports)]
#[path = "../../src/marshal/mod.rs"]
mod marshal;

use marshal::compare::check_consistent;
use marshal::read::read;

/// Heap bytes per input byte the reader may hold at once. Values need about 96: an `N` item
/// costs an `Rc<Value>` (48 bytes) and a slot in its tuple (8), and vectors grow by doubling
/// (preallocation is capped, see fuzz/README.md, "Findings"). `RPROFILE_FUZZ_PEAK_PER_BYTE`
/// overrides the bound.
fn peak_per_byte() -> usize {
    static V: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *V.get_or_init(|| {
        std::env::var("RPROFILE_FUZZ_PEAK_PER_BYTE")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(96)
    })
}

mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    static LIVE: AtomicUsize = AtomicUsize::new(0);
    static PEAK: AtomicUsize = AtomicUsize::new(0);
    static LARGEST: AtomicUsize = AtomicUsize::new(0);

    pub struct Counting;

    fn grew(size: usize) {
        let live = LIVE.fetch_add(size, Relaxed) + size;
        PEAK.fetch_max(live, Relaxed);
        LARGEST.fetch_max(size, Relaxed);
    }

    // SAFETY: every operation is the system allocator's; the counters are atomics.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: same contract as ours.
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                grew(layout.size());
            }
            p
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: same contract as ours.
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                grew(layout.size());
            }
            p
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            LIVE.fetch_sub(layout.size(), Relaxed);
            // SAFETY: same contract as ours.
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
            // SAFETY: same contract as ours.
            let p = unsafe { System.realloc(ptr, layout, new) };
            if !p.is_null() {
                LIVE.fetch_sub(layout.size(), Relaxed);
                grew(new);
            }
            p
        }
    }

    #[global_allocator]
    static GLOBAL: Counting = Counting;

    /// Starts measuring: the peak and the largest allocation from now on.
    pub fn reset() {
        PEAK.store(LIVE.load(Relaxed), Relaxed);
        LARGEST.store(0, Relaxed);
    }

    /// (peak live bytes above `base`, largest single allocation) since `reset`.
    pub fn since(base: usize) -> (usize, usize) {
        (
            PEAK.load(Relaxed).saturating_sub(base),
            LARGEST.load(Relaxed),
        )
    }

    pub fn live() -> usize {
        LIVE.load(Relaxed)
    }
}

fuzz_target!(|data: &[u8]| {
    let per_byte = peak_per_byte();
    let base = counting::live();
    counting::reset();
    let _value = read(data);
    let (peak, largest) = counting::since(base);
    let len = data.len();
    assert!(
        largest <= 16 * len + 4096,
        "an allocation of {largest} bytes for {len} bytes of input"
    );
    assert!(
        peak <= per_byte * len + 65536,
        "{peak} bytes of heap at once for {len} bytes of input"
    );

    if let Err(why) = check_consistent(data) {
        panic!("{why}");
    }
});
