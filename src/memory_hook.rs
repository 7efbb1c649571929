//! The allocator hooks behind `Profile(memory=True)`: wrappers around the three allocator
//! domains (raw, mem, object) that call the allocator they replaced and report each block to the
//! active profiler's ledger.
//!
//! One profiler at a time tracks memory (the hooks are process-wide). The hooks stay valid code
//! for the life of the process: a hook that cannot be removed (another tool, e.g. tracemalloc,
//! wrapped it since) stays in the chain and passes every call through.

use std::ffi::c_void;
use std::ptr::{addr_of, addr_of_mut};
use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::exceptions::PyRuntimeError;
use pyo3::ffi;
use pyo3::prelude::*;

use crate::profiler::{Profiler, State};

/// One domain's hook: the allocator it wraps, and whether it is in the chain.
struct Hooked {
    original: ffi::PyMemAllocatorEx,
    installed: bool,
    /// The raw domain may be called without the GIL.
    raw: bool,
}

const NO_ALLOCATOR: ffi::PyMemAllocatorEx = ffi::PyMemAllocatorEx {
    ctx: std::ptr::null_mut(),
    malloc: None,
    calloc: None,
    realloc: None,
    free: None,
};

// Written only with the GIL held, by install/uninstall; read by the hooks through their ctx.
static mut HOOKS: [Hooked; 3] = [
    Hooked {
        original: NO_ALLOCATOR,
        installed: false,
        raw: true,
    },
    Hooked {
        original: NO_ALLOCATOR,
        installed: false,
        raw: false,
    },
    Hooked {
        original: NO_ALLOCATOR,
        installed: false,
        raw: false,
    },
];

const DOMAINS: [ffi::PyMemAllocatorDomain; 3] = [
    ffi::PyMemAllocatorDomain::PYMEM_DOMAIN_RAW,
    ffi::PyMemAllocatorDomain::PYMEM_DOMAIN_MEM,
    ffi::PyMemAllocatorDomain::PYMEM_DOMAIN_OBJ,
];

/// The profiler being charged (a strong reference while set), or null.
static ACTIVE: AtomicPtr<ffi::PyObject> = AtomicPtr::new(std::ptr::null_mut());

/// The state to charge, if a profiler is active and this thread may touch it.
///
/// # Safety
/// Called from a hook of `h`'s domain.
#[inline]
unsafe fn charged_state(h: &Hooked) -> Option<*mut State> {
    let obj = ACTIVE.load(Ordering::Relaxed);
    if obj.is_null() {
        return None;
    }
    // A thread that released the GIL (or never had a thread state) has no current thread state
    // (what PyGILState_Check would also say, except where it gives up and says yes); the
    // profiler's state then belongs to the GIL holder.
    // SAFETY: may be called from any thread, with or without a thread state.
    if h.raw && unsafe { ffi::compat::PyThreadState_GetUnchecked() }.is_null() {
        return None;
    }
    // With the GIL held, ACTIVE cannot be cleared meanwhile (deactivate holds the GIL) and
    // holds a strong reference to a Profiler (set by activate from one).
    // SAFETY: as above.
    let py = unsafe { Python::assume_attached() };
    // SAFETY: as above.
    let p = unsafe { Bound::ref_from_ptr(py, &obj).cast_unchecked::<Profiler>() }.get();
    Some(p.state_ptr())
}

/// The function to charge: the key of the call on top of the calling thread's stack, 0 when
/// it has none.
///
/// # Safety
/// GIL held; `st` valid; no reference into it is alive across this call (short reads).
unsafe fn current_key(st: *mut State) -> usize {
    // SAFETY: short shared reads with the GIL held.
    let s = unsafe { &*st };
    let top_key = |agg: &crate::aggregator::Aggregator, stack: &crate::aggregator::Stack| {
        stack
            .frames
            .last()
            .and_then(|c| agg.entries.get(c.entry as usize))
            .map_or(0, |e| e.key)
    };
    if s.threads {
        // SAFETY: GIL held, so the thread has a thread state.
        let ts = unsafe { ffi::PyThreadState_Get() } as usize;
        if s.thread.tstate != ts {
            // Another thread's track is in place (the GIL changed hands since the last event).
            return s
                .parked
                .iter()
                .find(|t| t.key.tstate == ts)
                .map_or(0, |t| top_key(&t.agg, &t.stack));
        }
    }
    top_key(&s.agg, &s.stack)
}

/// # Safety
/// `ctx` is one of `HOOKS`' entries (set by `install`).
#[inline]
unsafe fn hooked<'a>(ctx: *mut c_void) -> &'a Hooked {
    // SAFETY: the ctx given to the interpreter with this hook.
    unsafe { &*(ctx as *const Hooked) }
}

fn on_alloc(h: &Hooked, ptr: *mut c_void, size: usize) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: called from a hook of `h`'s domain.
    let Some(st) = (unsafe { charged_state(h) }) else {
        return;
    };
    // SAFETY: GIL held (charged_state); short accesses, no Python code runs here.
    unsafe {
        // The profiler's own Python work (labels, a Python timer) is not the program's.
        if (*st).busy > 0 || (*st).in_timer > 0 {
            return;
        }
        let key = current_key(st);
        if let Some(l) = (*st).memory.as_deref_mut() {
            l.alloc(key, ptr as usize, size as u64);
        }
    }
}

fn on_free(h: &Hooked, ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: called from a hook of `h`'s domain.
    let Some(st) = (unsafe { charged_state(h) }) else {
        return;
    };
    // SAFETY: GIL held; a short access.
    if let Some(l) = unsafe { (*st).memory.as_deref_mut() } {
        l.free(ptr as usize);
    }
}

extern "C" fn hook_malloc(ctx: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the interpreter calls this hook with the ctx `install` gave it.
    let h = unsafe { hooked(ctx) };
    let Some(f) = h.original.malloc else {
        return std::ptr::null_mut();
    };
    let p = f(h.original.ctx, size);
    on_alloc(h, p, size);
    p
}

extern "C" fn hook_calloc(ctx: *mut c_void, nelem: usize, elsize: usize) -> *mut c_void {
    // SAFETY: as for hook_malloc.
    let h = unsafe { hooked(ctx) };
    let Some(f) = h.original.calloc else {
        return std::ptr::null_mut();
    };
    let p = f(h.original.ctx, nelem, elsize);
    on_alloc(h, p, nelem.saturating_mul(elsize));
    p
}

extern "C" fn hook_realloc(ctx: *mut c_void, ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: as for hook_malloc.
    let h = unsafe { hooked(ctx) };
    let Some(f) = h.original.realloc else {
        return std::ptr::null_mut();
    };
    let p = f(h.original.ctx, ptr, size);
    if !p.is_null() {
        // The old block is gone (freed, or resized in place): charged as a free to its
        // allocator, the new one to the function resizing it (as tracemalloc moves it).
        on_free(h, ptr);
        on_alloc(h, p, size);
    }
    p
}

extern "C" fn hook_free(ctx: *mut c_void, ptr: *mut c_void) {
    // SAFETY: as for hook_malloc.
    let h = unsafe { hooked(ctx) };
    // Forget the block before the allocator may hand its address out again.
    on_free(h, ptr);
    if let Some(f) = h.original.free {
        f(h.original.ctx, ptr);
    }
}

fn ours(i: usize) -> ffi::PyMemAllocatorEx {
    ffi::PyMemAllocatorEx {
        // SAFETY: the address of a static; the hooks only read through it.
        ctx: unsafe { addr_of_mut!(HOOKS[i]) } as *mut c_void,
        malloc: Some(hook_malloc),
        calloc: Some(hook_calloc),
        realloc: Some(hook_realloc),
        free: Some(hook_free),
    }
}

/// RuntimeError if another profiler than `slf` is tracking memory.
pub fn check_available(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    let current = ACTIVE.load(Ordering::Relaxed);
    if current.is_null() || current == slf.as_ptr() {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(
        "another profiler is tracking memory",
    ))
}

/// Makes `slf` the profiler charged with allocations, putting the hooks in the chain where they
/// are not. RuntimeError if another profiler is tracking memory.
pub fn activate(slf: &Bound<'_, Profiler>) -> PyResult<()> {
    check_available(slf)?;
    let obj = slf.as_ptr();
    if ACTIVE.load(Ordering::Relaxed) == obj {
        return Ok(());
    }
    for (i, domain) in DOMAINS.into_iter().enumerate() {
        // SAFETY: GIL held (a method of the profiler): the only writer of HOOKS. A hook in the
        // chain already (left there by an earlier deactivate) is not wrapped again, which
        // would make it call itself.
        unsafe {
            let h = &mut *addr_of_mut!(HOOKS[i]);
            if h.installed {
                continue;
            }
            ffi::PyMem_GetAllocator(domain, &mut h.original);
            let mut mine = ours(i);
            ffi::PyMem_SetAllocator(domain, &mut mine);
            h.installed = true;
        }
    }
    // SAFETY: a new strong reference, kept while ACTIVE points at the object.
    unsafe { ffi::Py_IncRef(obj) };
    ACTIVE.store(obj, Ordering::Relaxed);
    Ok(())
}

/// Stops charging `slf` (if it is the active profiler) and takes the hooks out of the chain
/// where they are on top; elsewhere they stay and pass calls through.
pub fn deactivate(slf: &Bound<'_, Profiler>) {
    let obj = slf.as_ptr();
    if ACTIVE.load(Ordering::Relaxed) != obj {
        return;
    }
    ACTIVE.store(std::ptr::null_mut(), Ordering::Relaxed);
    for (i, domain) in DOMAINS.into_iter().enumerate() {
        // SAFETY: GIL held; the only writer of HOOKS.
        unsafe {
            let h = &mut *addr_of_mut!(HOOKS[i]);
            if !h.installed {
                continue;
            }
            let mut now = NO_ALLOCATOR;
            ffi::PyMem_GetAllocator(domain, &mut now);
            let mine = ours(i);
            if now.ctx == mine.ctx
                && now.malloc.map(|f| f as *const () as usize)
                    == Some(hook_malloc as *const () as usize)
            {
                ffi::PyMem_SetAllocator(domain, addr_of!(h.original) as *mut _);
                h.installed = false;
            }
        }
    }
    // SAFETY: the reference taken in activate; dropping it may run Python (the profiler's
    // deallocation), which is fine here: nothing is borrowed and ACTIVE is already clear.
    unsafe { ffi::Py_DecRef(obj) };
}
