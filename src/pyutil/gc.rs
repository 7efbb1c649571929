//! A pause of the cyclic garbage collector while results of many containers are built.

use pyo3::ffi;
use pyo3::Python;

/// Keeps the cyclic garbage collector off while results are built: they hold no garbage, and
/// the collections their many new containers would trigger cost more than the building. Holds
/// the GIL token, so it cannot outlive the GIL it was made under.
pub struct GcPaused<'py> {
    was_enabled: bool,
    _py: Python<'py>,
}

impl<'py> GcPaused<'py> {
    pub fn new(py: Python<'py>) -> Self {
        // SAFETY: the GIL is held (we have its token).
        let was_enabled = unsafe { ffi::PyGC_Disable() } != 0;
        GcPaused {
            was_enabled,
            _py: py,
        }
    }
}

impl Drop for GcPaused<'_> {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: the GIL is still held (the guard holds its token); re-enables what `new`
            // disabled.
            unsafe { ffi::PyGC_Enable() };
        }
    }
}
