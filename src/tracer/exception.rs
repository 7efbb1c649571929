//! An exception in flight, set aside while a profile event runs Python code (a label, a timer,
//! a thread's name) and put back after it, so the profiled program never sees the profiler's.

use pyo3::ffi;

/// Saves the exception being raised (if any) and puts it back on drop, so that an event
/// delivered while an exception is in flight (a generator `throw()`) leaves it untouched, and an
/// error raised meanwhile (by a label or a timer) does not leak into the profiled program.
#[cfg(Py_3_12)]
pub struct SavedException(*mut ffi::PyObject);

#[cfg(Py_3_12)]
impl SavedException {
    /// # Safety
    /// GIL held.
    #[inline]
    pub unsafe fn save() -> Self {
        // SAFETY: GIL held; we take ownership of the raised exception (or NULL).
        SavedException(unsafe { ffi::PyErr_GetRaisedException() })
    }
}

#[cfg(Py_3_12)]
impl Drop for SavedException {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: GIL held (the guard never leaves the callback that made it); the reference
        // goes back to the interpreter, replacing (and so clearing) any error set meanwhile.
        unsafe { ffi::PyErr_SetRaisedException(self.0) };
    }
}

/// Before 3.12 the exception state is a (type, value, traceback) triple.
#[cfg(not(Py_3_12))]
pub struct SavedException(*mut ffi::PyObject, *mut ffi::PyObject, *mut ffi::PyObject);

#[cfg(not(Py_3_12))]
impl SavedException {
    /// # Safety
    /// GIL held.
    #[inline]
    pub unsafe fn save() -> Self {
        let mut s = SavedException(
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        // SAFETY: GIL held; PyErr_Fetch transfers ownership of the three references to us.
        #[allow(deprecated)]
        unsafe {
            ffi::PyErr_Fetch(&mut s.0, &mut s.1, &mut s.2)
        };
        s
    }
}

#[cfg(not(Py_3_12))]
impl Drop for SavedException {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: GIL held; PyErr_Restore takes back the references PyErr_Fetch gave.
        #[allow(deprecated)]
        unsafe {
            ffi::PyErr_Restore(self.0, self.1, self.2)
        };
    }
}
