//! The allocator hooks behind `Profile(memory=True)`: wrappers around the three allocator
//! domains (raw, mem, object) that call the allocator they replaced and report each block to the
//! active profiler's ledger.
//!
//! One profiler at a time tracks memory (the hooks are process-wide). The hooks stay valid code
//! for the life of the process: a hook that cannot be removed (another tool, e.g. tracemalloc,
//! wrapped it since) stays in the chain and passes every call through.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::core::timeline;
use crate::tracer::charge::{current_key, Slot};
use crate::tracer::state::{Profiler, State};

/// One domain's hook of one activation: the allocator it wraps (never changed after the hook
/// is installed, so calls without the GIL may read it at any time) and whether it still charges.
/// Leaked on purpose: the interpreter may keep calling a hook that another tool wrapped after
/// it, for the life of the process.
struct Hooked {
    original: ffi::PyMemAllocatorEx,
    /// The raw domain may be called without the GIL.
    raw: bool,
    /// Cleared at deactivation: from then on the hook passes calls through.
    live: AtomicBool,
}

const NO_ALLOCATOR: ffi::PyMemAllocatorEx = ffi::PyMemAllocatorEx {
    ctx: std::ptr::null_mut(),
    malloc: None,
    calloc: None,
    realloc: None,
    free: None,
};

const DOMAINS: [ffi::PyMemAllocatorDomain; 3] = [
    ffi::PyMemAllocatorDomain::PYMEM_DOMAIN_RAW,
    ffi::PyMemAllocatorDomain::PYMEM_DOMAIN_MEM,
    ffi::PyMemAllocatorDomain::PYMEM_DOMAIN_OBJ,
];

/// The profiler being charged, and its interpreter (subinterpreters with their own GIL share
/// the allocators).
static ACTIVE: Slot = Slot::new();
/// This activation's hooks, per domain (read and written with the GIL held).
static CURRENT: [AtomicPtr<Hooked>; 3] = [
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
];
/// A mem/object hook is inside its allocator, which may serve the block from the raw domain
/// (pymalloc does for blocks over 512 bytes): the raw hook then must not count it again. Only
/// the GIL holder of the charged interpreter sets or reads it.
static NESTED: AtomicBool = AtomicBool::new(false);

/// The state to charge and the calling thread's state, if `h` still charges, a profiler is
/// active and this thread may touch it.
#[inline]
fn charged_state(h: &Hooked) -> Option<(*mut State, *mut ffi::PyThreadState)> {
    if !h.live.load(Ordering::Relaxed) {
        return None;
    }
    ACTIVE.charged()
}

/// Puts a memory event on the timeline, if there is one.
fn note(s: &mut State, kind: u8, key: usize, bytes: u64, lane: Option<(u64, u64)>) {
    let t = s.memory_event_time();
    if let Some(tl) = s.timeline.as_deref_mut() {
        tl.record_memory(kind, t, key, bytes, lane);
    }
}

/// # Safety
/// `ctx` is a hook context made by `activate` (leaked, never freed).
#[inline]
unsafe fn hooked<'a>(ctx: *mut c_void) -> &'a Hooked {
    // SAFETY: the ctx given to the interpreter with this hook.
    unsafe { &*(ctx as *const Hooked) }
}

/// Charges a new block (if any) to the function on top.
fn on_alloc(
    charged: Option<(*mut State, *mut ffi::PyThreadState)>,
    ptr: *mut c_void,
    size: usize,
    kind: u8,
) {
    let Some((st, ts)) = charged else {
        return;
    };
    if ptr.is_null() {
        return;
    }
    // SAFETY: GIL held (charged_state); short accesses, no Python code runs here.
    unsafe {
        // The profiler's own Python work (labels, a Python timer) is not the program's.
        if (*st).busy > 0 || (*st).in_timer > 0 {
            return;
        }
        let (key, lane) = current_key(st, ts);
        let Some(l) = (*st).memory.as_deref_mut() else {
            return;
        };
        let gone = l.alloc(key, ptr as usize, size as u64);
        let s = &mut *st;
        if s.timeline.is_some() {
            if let Some((owner, old)) = gone {
                note(s, timeline::FREE, owner, old, lane);
            }
            note(s, kind, key, size as u64, lane);
        }
    }
}

/// Takes a freed block (if tracked) off its allocator's account.
fn on_free(charged: Option<(*mut State, *mut ffi::PyThreadState)>, ptr: *mut c_void, kind: u8) {
    let Some((st, ts)) = charged else {
        return;
    };
    if ptr.is_null() {
        return;
    }
    // SAFETY: GIL held; short accesses, no Python code runs here.
    unsafe {
        let Some(l) = (*st).memory.as_deref_mut() else {
            return;
        };
        let Some(size) = l.free(ptr as usize) else {
            return;
        };
        if (*st).timeline.is_some() {
            let (key, lane) = current_key(st, ts);
            note(&mut *st, kind, key, size, lane);
        }
    }
}

/// Whether this hook call is to be counted: not a raw call made by a mem/object hook's
/// allocator on the same thread.
#[inline]
fn charged(h: &Hooked) -> Option<(*mut State, *mut ffi::PyThreadState)> {
    let c = charged_state(h)?;
    if h.raw && NESTED.load(Ordering::Relaxed) {
        return None;
    }
    Some(c)
}

/// Runs the wrapped allocator of a mem/object hook marked as nested, so that raw calls it makes
/// are not counted twice.
#[inline]
fn call_nested<T>(h: &Hooked, counting: bool, f: impl FnOnce() -> T) -> T {
    if !counting || h.raw {
        return f();
    }
    let outer = NESTED.swap(true, Ordering::Relaxed);
    let r = f();
    NESTED.store(outer, Ordering::Relaxed);
    r
}

extern "C" fn hook_malloc(ctx: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the interpreter calls this hook with the ctx `activate` gave it.
    let h = unsafe { hooked(ctx) };
    let Some(f) = h.original.malloc else {
        return std::ptr::null_mut();
    };
    let c = charged(h);
    let p = call_nested(h, c.is_some(), || f(h.original.ctx, size));
    on_alloc(c, p, size, timeline::MALLOC);
    p
}

extern "C" fn hook_calloc(ctx: *mut c_void, nelem: usize, elsize: usize) -> *mut c_void {
    // SAFETY: as for hook_malloc.
    let h = unsafe { hooked(ctx) };
    let Some(f) = h.original.calloc else {
        return std::ptr::null_mut();
    };
    let c = charged(h);
    let p = call_nested(h, c.is_some(), || f(h.original.ctx, nelem, elsize));
    on_alloc(c, p, nelem.saturating_mul(elsize), timeline::CALLOC);
    p
}

extern "C" fn hook_realloc(ctx: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: as for hook_malloc.
    let h = unsafe { hooked(ctx) };
    let Some(f) = h.original.realloc else {
        return std::ptr::null_mut();
    };
    let c = charged(h);
    let p = call_nested(h, c.is_some(), || f(h.original.ctx, ptr, size));
    if !p.is_null() {
        // The old block is gone (freed, or resized in place): charged as a free to its
        // allocator, the new one to the function resizing it (as tracemalloc moves it).
        on_free(c, ptr, timeline::REALLOC_FREE);
        on_alloc(c, p, size, timeline::REALLOC);
    }
    p
}

extern "C" fn hook_free(ctx: *mut c_void, ptr: *mut c_void) {
    // SAFETY: as for hook_malloc.
    let h = unsafe { hooked(ctx) };
    let c = charged(h);
    // Forget the block before the allocator may hand its address out again.
    on_free(c, ptr, timeline::FREE);
    if let Some(f) = h.original.free {
        call_nested(h, c.is_some(), || f(h.original.ctx, ptr));
    }
}

fn ours(h: *const Hooked) -> ffi::PyMemAllocatorEx {
    ffi::PyMemAllocatorEx {
        ctx: h as *mut c_void,
        malloc: Some(hook_malloc),
        calloc: Some(hook_calloc),
        realloc: Some(hook_realloc),
        free: Some(hook_free),
    }
}

/// RuntimeError if another profiler than `slf` is tracking memory.
pub fn check_available(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    if ACTIVE.free_for(slf) {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(
        "another profiler is tracking memory",
    ))
}

/// Makes `slf` the profiler charged with allocations, with new hooks on top of each domain's
/// allocator. RuntimeError if another profiler is tracking memory.
pub fn activate(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    check_available(slf)?;
    if ACTIVE.holds(slf) {
        return Ok(());
    }
    for (i, domain) in DOMAINS.into_iter().enumerate() {
        let mut original = NO_ALLOCATOR;
        // SAFETY: GIL held; the allocator is copied out.
        unsafe { ffi::PyMem_GetAllocator(domain, &mut original) };
        let h: &'static Hooked = Box::leak(Box::new(Hooked {
            original,
            raw: i == 0,
            live: AtomicBool::new(true),
        }));
        let mut mine = ours(h);
        // SAFETY: GIL held; `h` lives for the rest of the process.
        unsafe { ffi::PyMem_SetAllocator(domain, &mut mine) };
        CURRENT[i].store(h as *const Hooked as *mut Hooked, Ordering::Relaxed);
    }
    ACTIVE.take(slf);
    Ok(())
}

/// Stops charging `slf` (if it is the active profiler): its hooks stop counting, and those still
/// on top of their domain give the allocator they wrapped back; the others (another tool wrapped
/// them since) stay in the chain, passing calls through.
pub fn deactivate(slf: &Bound<'_, Profiler>) {
    if !ACTIVE.give_back(slf) {
        return;
    }
    for (i, domain) in DOMAINS.into_iter().enumerate() {
        let h = CURRENT[i].swap(std::ptr::null_mut(), Ordering::Relaxed);
        if h.is_null() {
            continue;
        }
        // SAFETY: a leaked, never-freed hook context.
        let h: &'static Hooked = unsafe { &*h };
        h.live.store(false, Ordering::Relaxed);
        let mut now = NO_ALLOCATOR;
        // SAFETY: GIL held.
        unsafe { ffi::PyMem_GetAllocator(domain, &mut now) };
        let on_top = now.ctx == h as *const Hooked as *mut c_void
            && now.malloc.map(|f| f as *const () as usize)
                == Some(hook_malloc as *const () as usize);
        if on_top {
            let mut original = h.original;
            // SAFETY: GIL held; the allocator our hook wrapped, still valid.
            unsafe { ffi::PyMem_SetAllocator(domain, &mut original) };
        }
    }
}
