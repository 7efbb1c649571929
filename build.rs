// Exposes `cfg(Py_3_11)`, `cfg(Py_3_12)`, ... for the interpreter being built against, so the
// event front end (legacy profile hook or sys.monitoring) is chosen at compile time.
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
