//! The objects registered as `sys.monitoring` callbacks: each holds the profiler and the entry
//! point for its events in its own vectorcall slot, so the instrumentation calls that entry
//! point directly. A builtin function (METH_FASTCALL) would put its trampoline (recursion guard,
//! keyword check, method flags) in front of every event, a large share of a Python call's
//! profiling cost.

use std::ffi::{c_int, c_uint, c_void};
use std::mem::offset_of;
use std::ptr::{self, addr_of_mut};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

#[repr(C)]
struct Callback {
    ob_base: ffi::PyObject,
    /// What CPython calls (found through `__vectorcalloffset__`).
    vectorcall: Option<ffi::vectorcallfunc>,
    /// The profiler (a strong reference), NULL once the garbage collector cleared it.
    profiler: *mut ffi::PyObject,
    /// The same profiler as the Rust value the entry points use: read as it is, where the
    /// object pointer took an addition on every event to reach it.
    contents: *const crate::tracer::state::Profiler,
    /// Which of the front end's events this callback is for (its place in the event table),
    /// so that its entry point can be swapped for that event's when the profiler's flags change.
    event: usize,
}

// The members of the callback type: read when the type is made, never written.
static mut MEMBERS: [ffi::PyMemberDef; 2] = [
    ffi::PyMemberDef {
        name: c"__vectorcalloffset__".as_ptr(),
        type_code: ffi::Py_T_PYSSIZET,
        offset: offset_of!(Callback, vectorcall) as ffi::Py_ssize_t,
        flags: ffi::Py_READONLY,
        doc: ptr::null(),
    },
    ffi::PyMemberDef {
        name: ptr::null(),
        type_code: 0,
        offset: 0,
        flags: 0,
        doc: ptr::null(),
    },
];

static TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn callback_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    let tp = TYPE.get_or_try_init(py, || {
        let mut slots = [
            ffi::PyType_Slot {
                slot: ffi::Py_tp_call,
                pfunc: ffi::PyVectorcall_Call as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_dealloc,
                pfunc: dealloc as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_traverse,
                pfunc: traverse as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_clear,
                pfunc: clear as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: ffi::Py_tp_members,
                pfunc: addr_of_mut!(MEMBERS) as *mut c_void,
            },
            ffi::PyType_Slot {
                slot: 0,
                pfunc: ptr::null_mut(),
            },
        ];
        let mut spec = ffi::PyType_Spec {
            name: c"rprofile._rprofile.monitoring_callback".as_ptr(),
            basicsize: std::mem::size_of::<Callback>() as c_int,
            itemsize: 0,
            // Not instantiable from Python: an instance without an entry point must not exist.
            flags: (ffi::Py_TPFLAGS_DEFAULT
                | ffi::Py_TPFLAGS_HAVE_VECTORCALL
                | ffi::Py_TPFLAGS_HAVE_GC
                | ffi::Py_TPFLAGS_DISALLOW_INSTANTIATION) as c_uint,
            slots: slots.as_mut_ptr(),
        };
        // SAFETY: GIL held; the spec, its slots and members are valid for the call (CPython
        // copies what it keeps, and MEMBERS is 'static).
        let tp = unsafe { ffi::PyType_FromSpec(&mut spec) };
        if tp.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new reference to a type object.
        Ok(unsafe { Bound::from_owned_ptr(py, tp).cast_into_unchecked::<PyType>() }.unbind())
    })?;
    Ok(tp.bind(py))
}

/// A new callback bound to `profiler` for `event` (the caller's index of it) whose calls go to
/// `entry`. The profiler's state lists it (`HookState::callbacks`) until it is cleared.
pub fn new<'py>(
    profiler: &Bound<'py, crate::tracer::state::Profiler>,
    event: usize,
    entry: ffi::vectorcallfunc,
) -> PyResult<Bound<'py, PyAny>> {
    let py = profiler.py();
    let tp = callback_type(py)?;
    // SAFETY: GIL held; the type's basicsize is that of `Callback`; the allocation comes zeroed
    // and tracked by the GC, whose traverse/clear accept the NULL fields until they are set
    // below (nothing between can run the collector).
    unsafe {
        let obj = ffi::PyType_GenericAlloc(tp.as_ptr() as *mut ffi::PyTypeObject, 0);
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        let cb = obj as *mut Callback;
        (*cb).vectorcall = Some(entry);
        (*cb).event = event;
        (*cb).profiler = ffi::Py_NewRef(profiler.as_ptr());
        (*cb).contents = profiler.get();
        profiler
            .get()
            .write_with(obj as usize, |st, cb| st.hook.callbacks.push(cb));
        Ok(Bound::from_owned_ptr(py, obj))
    }
}

/// What an entry point gets: the bound profiler (a pointer into the callback, alive for the
/// call) and the number of positional arguments; or what to return at once: NULL with an error
/// set for keyword arguments, None for a callback the collector cleared.
///
/// # Safety
/// `cb` is a callback made by [`new`], called with the GIL held.
#[inline(always)]
pub unsafe fn unpack<'a>(
    cb: *mut ffi::PyObject,
    nargsf: usize,
    kwnames: *mut ffi::PyObject,
) -> Result<(&'a *mut ffi::PyObject, ffi::Py_ssize_t), *mut ffi::PyObject> {
    // SAFETY: `cb` is a `Callback` made by `new` (function contract), so the cast is to its
    // own layout; the field lives as long as the callback the caller holds.
    let slot = unsafe { &(*(cb as *mut Callback)).profiler };
    // SAFETY: a non-NULL kwnames is a tuple.
    if !kwnames.is_null() && unsafe { ffi::PyTuple_GET_SIZE(kwnames) } != 0 {
        // SAFETY: CPython calls a callback's entry point with the GIL held.
        let py = unsafe { Python::assume_attached() };
        PyTypeError::new_err("monitoring callback takes no keyword arguments").restore(py);
        return Err(ptr::null_mut());
    }
    if slot.is_null() {
        // SAFETY: Py_None is immortal on 3.12+; the new reference goes to the caller.
        return Err(unsafe { ffi::Py_NewRef(ffi::Py_None()) });
    }
    Ok((
        slot,
        (nargsf & !ffi::PY_VECTORCALL_ARGUMENTS_OFFSET) as ffi::Py_ssize_t,
    ))
}

/// The profiler `cb` is bound to, read with no test: an entry point runs only while the
/// callback is bound, since clearing it first swaps its entry point for [`cleared_entry`].
///
/// # Safety
/// `cb` is a callback made by [`new`] whose entry point (given to `new`) is being called by
/// CPython, with the GIL held.
#[inline(always)]
pub unsafe fn profiler<'a>(cb: *mut ffi::PyObject) -> &'a crate::tracer::state::Profiler {
    // SAFETY: the callback is bound (its entry point is being called, and clearing swaps that
    // first) and holds a strong reference to the profiler, whose Rust value `contents` points
    // to (a frozen class's value does not move).
    unsafe { &*(*(cb as *mut Callback)).contents }
}

/// Which event `cb` is for, as given to [`new`].
///
/// # Safety
/// `cb` is a live callback made by [`new`]; GIL held.
pub unsafe fn event(cb: *mut ffi::PyObject) -> usize {
    // SAFETY: `cb` is a live `Callback` made by `new` (function contract): a read of a field
    // set at construction, with the GIL held.
    unsafe { (*(cb as *mut Callback)).event }
}

/// Sends the calls of `cb` to `entry` from now on.
///
/// # Safety
/// `cb` is a live callback made by [`new`], not cleared; `entry` is an entry point for its
/// event and its profiler's current flags; GIL held.
pub unsafe fn set_entry(cb: *mut ffi::PyObject, entry: ffi::vectorcallfunc) {
    // SAFETY: `cb` is a live, not cleared `Callback` made by `new` (function contract), and
    // the GIL held serialises this write with CPython's calls through the field.
    unsafe { (*(cb as *mut Callback)).vectorcall = Some(entry) };
}

/// The entry point of a cleared callback: None for every event, as the instrumentation expects
/// of a callback with nothing to do.
unsafe extern "C" fn cleared_entry(
    _cb: *mut ffi::PyObject,
    _args: *const *mut ffi::PyObject,
    _nargsf: usize,
    _kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: the GIL is held (CPython calls callbacks with it); a new reference to None.
    unsafe { ffi::Py_NewRef(ffi::Py_None()) }
}

unsafe extern "C" fn traverse(
    obj: *mut ffi::PyObject,
    visit: ffi::visitproc,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: CPython passes a live callback.
    let p = unsafe { (*(obj as *mut Callback)).profiler };
    if !p.is_null() {
        // SAFETY: a live object this callback holds.
        let r = unsafe { visit(p, arg) };
        if r != 0 {
            return r;
        }
    }
    // Instances of heap types hold a reference to their type.
    // SAFETY: as above.
    unsafe { visit(ffi::Py_TYPE(obj) as *mut ffi::PyObject, arg) }
}

unsafe extern "C" fn clear(obj: *mut ffi::PyObject) -> c_int {
    // SAFETY: CPython passes a live callback; the entry point is swapped first (the entry
    // points read the profiler with no test, see `profiler`), and the reference is dropped
    // after the field is emptied, so code run by the decref sees a cleared callback.
    unsafe {
        (*(obj as *mut Callback)).vectorcall = Some(cleared_entry);
        let p = std::mem::replace(&mut (*(obj as *mut Callback)).profiler, ptr::null_mut());
        if !p.is_null() {
            // No longer the profiler's to retarget: it may outlive this callback.
            let py = Python::assume_attached();
            let prof =
                Bound::ref_from_ptr(py, &p).cast_unchecked::<crate::tracer::state::Profiler>();
            prof.get().write_with(obj as usize, |st, callback| {
                let list = &mut st.hook.callbacks;
                if let Some(i) = list.iter().position(|&c| c == callback) {
                    list.swap_remove(i);
                }
            });
            ffi::Py_DECREF(p);
        }
    }
    0
}

unsafe extern "C" fn dealloc(obj: *mut ffi::PyObject) {
    // SAFETY: CPython passes a callback whose last reference is gone; the type outlives its
    // instance until the decref at the end.
    unsafe {
        let tp = ffi::Py_TYPE(obj);
        ffi::PyObject_GC_UnTrack(obj as *mut c_void);
        clear(obj);
        ffi::PyObject_GC_Del(obj as *mut c_void);
        ffi::Py_DECREF(tp as *mut ffi::PyObject);
    }
}
