//! Marshal values as Python objects: the bridge the Stats engine's loader will use, exposed now as
//! `_rprofile._marshal_loads` so the differential tests can hold the reader to `marshal.loads`.

use std::collections::HashMap;
use std::rc::Rc;

use pyo3::exceptions::{PyEOFError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFrozenSet, PyList, PySet, PyTuple};

use crate::marshal::read::{self, Error, Value};

pyo3::create_exception!(
    _rprofile,
    CodeObjectData,
    PyValueError,
    "Marshal data holding a code object, which the stats reader does not build (marshal.loads \
     does): a ValueError with marshal's wording."
);

fn to_pyerr(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Eof(m) => PyEOFError::new_err(m),
        Error::Value(m) => PyValueError::new_err(m),
        Error::Type(m) => PyTypeError::new_err(m),
        // 3.14 names the key and where it was.
        Error::Unhashable { key, found, place } if py.version_info() >= (3, 14) => {
            PyTypeError::new_err(format!(
                "cannot use '{key}' as a {} (unhashable type: '{found}')",
                place.words()
            ))
        }
        Error::Unhashable { found, .. } => {
            PyTypeError::new_err(format!("unhashable type: '{found}'"))
        }
        Error::Float(text) => PyValueError::new_err(format!(
            "could not convert string to float: '{}'",
            String::from_utf8_lossy(&text)
        )),
        Error::CodeObject => CodeObjectData::new_err(read::CODE_OBJECT),
        Error::Unicode(bytes) => {
            match PyBytes::new(py, &bytes).call_method1("decode", ("utf-8", "surrogatepass")) {
                Err(e) => e,
                Ok(_) => PyValueError::new_err("invalid utf-8 in marshal data"),
            }
        }
    }
}

/// Builds Python objects, one per shared value (as marshal.loads makes one per reference).
struct Builder<'py> {
    py: Python<'py>,
    made: HashMap<*const Value, Bound<'py, PyAny>>,
    /// The containers that [`Value::Cycle`]s name, by address: their reference slots.
    cycle_slot: HashMap<*const Value, usize>,
    /// Their objects by slot, each made before its items, as marshal.loads makes them, so that
    /// a cycle inside reads as the container itself.
    by_slot: HashMap<usize, Bound<'py, PyAny>>,
}

impl<'py> Builder<'py> {
    fn object(&mut self, v: &Rc<Value>) -> PyResult<Bound<'py, PyAny>> {
        let key = Rc::as_ptr(v);
        if let Some(o) = self.made.get(&key) {
            return Ok(o.clone());
        }
        if let Some(&slot) = self.cycle_slot.get(&key) {
            let o = self.cyclic_container(v, slot)?;
            self.made.insert(key, o.clone());
            return Ok(o);
        }
        let py = self.py;
        let o = match &**v {
            Value::None => py.None().into_bound(py),
            Value::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
            Value::Ellipsis => py.Ellipsis().into_bound(py),
            Value::StopIteration => py
                .get_type::<pyo3::exceptions::PyStopIteration>()
                .into_any(),
            Value::Int(i) => i.into_pyobject(py)?.into_any(),
            Value::BigInt { negative, digits } => {
                let mut n = pyo3::types::PyInt::new(py, 0).into_any();
                for &d in digits.iter().rev() {
                    n = n.lshift(15)?.add(d)?;
                }
                if *negative {
                    n = n.neg()?;
                }
                n
            }
            Value::Float(f) => f.into_pyobject(py)?.into_any(),
            Value::Complex(re, im) => pyo3::types::PyComplex::from_doubles(py, *re, *im).into_any(),
            Value::Bytes(b) => PyBytes::new(py, b).into_any(),
            Value::Str(s) => {
                PyBytes::new(py, s).call_method1("decode", ("utf-8", "surrogatepass"))?
            }
            Value::Tuple(items) => {
                let items = items
                    .iter()
                    .map(|i| self.object(i))
                    .collect::<PyResult<Vec<_>>>()?;
                PyTuple::new(py, items)?.into_any()
            }
            Value::List(items) => {
                let items = items
                    .iter()
                    .map(|i| self.object(i))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)?.into_any()
            }
            Value::Set(items) | Value::FrozenSet(items) => {
                let items = items
                    .iter()
                    .map(|i| self.object(i))
                    .collect::<PyResult<Vec<_>>>()?;
                if matches!(**v, Value::Set(_)) {
                    PySet::new(py, items)?.into_any()
                } else {
                    PyFrozenSet::new(py, items)?.into_any()
                }
            }
            Value::Dict(pairs) | Value::FrozenDict(pairs) => {
                let d = PyDict::new(py);
                for (k, val) in pairs {
                    d.set_item(self.object(k)?, self.object(val)?)?;
                }
                if matches!(**v, Value::FrozenDict(_)) {
                    py.import("builtins")?.getattr("frozendict")?.call1((d,))?
                } else {
                    d.into_any()
                }
            }
            Value::Slice(start, stop, step) => {
                let parts = (self.object(start)?, self.object(stop)?, self.object(step)?);
                py.get_type::<pyo3::types::PySlice>().call1(parts)?
            }
            // The reader names only containers with a slot, each built (and registered) before
            // its items are; anything else is not data the reader gives.
            Value::Cycle(slot) => match self.by_slot.get(slot) {
                Some(o) => o.clone(),
                None => {
                    return Err(PyValueError::new_err(
                        "bad marshal data (invalid reference)",
                    ))
                }
            },
        };
        self.made.insert(key, o.clone());
        Ok(o)
    }

    /// A container that holds itself (somewhere inside): made empty, registered for its slot,
    /// then filled, as marshal.loads builds every container.
    fn cyclic_container(&mut self, v: &Rc<Value>, slot: usize) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        match &**v {
            Value::List(items) => {
                let l = PyList::empty(py);
                self.by_slot.insert(slot, l.clone().into_any());
                for i in items {
                    l.append(self.object(i)?)?;
                }
                Ok(l.into_any())
            }
            Value::Dict(pairs) => {
                let d = PyDict::new(py);
                self.by_slot.insert(slot, d.clone().into_any());
                for (k, val) in pairs {
                    d.set_item(self.object(k)?, self.object(val)?)?;
                }
                Ok(d.into_any())
            }
            Value::Set(items) => {
                let s = PySet::empty(py)?;
                self.by_slot.insert(slot, s.clone().into_any());
                for i in items {
                    s.add(self.object(i)?)?;
                }
                Ok(s.into_any())
            }
            Value::Tuple(items) => {
                let n = ffi::Py_ssize_t::try_from(items.len()).map_err(|_| {
                    PyValueError::new_err("bad marshal data (tuple size out of range)")
                })?;
                // SAFETY: GIL held; PyTuple_New gives a new reference (or NULL with an error set).
                let t = unsafe { Bound::from_owned_ptr_or_err(py, ffi::PyTuple_New(n))? };
                self.by_slot.insert(slot, t.clone());
                for (i, item) in items.iter().enumerate() {
                    let o = self.object(item)?;
                    // SAFETY: `t` is a tuple of `items.len()` slots, `i` is below that, and its
                    // slot is still NULL (each is set once); SET_ITEM takes the new reference.
                    // Until it is full the tuple is only in the objects this builder makes (as
                    // marshal.loads's is), never hashed: the reader refuses a key that holds
                    // one, and the garbage collector skips NULL items.
                    unsafe {
                        ffi::PyTuple_SET_ITEM(t.as_ptr(), i as ffi::Py_ssize_t, o.into_ptr())
                    };
                }
                Ok(t)
            }
            // (The reader names no other kind of container.)
            _ => Err(PyValueError::new_err(
                "bad marshal data (invalid reference)",
            )),
        }
    }
}

/// `_marshal_loads(data)`: what `marshal.loads(data)` gives, by rprofile's reader.
#[pyfunction]
pub fn _marshal_loads<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    // Whatever this interpreter's marshal.loads reads.
    let dialect = read::Dialect::python(py.version_info().minor);
    let r = read::read_with_cycles(data, dialect).map_err(|e| to_pyerr(py, e))?;
    Builder {
        py,
        made: HashMap::new(),
        cycle_slot: r.cycles.iter().map(|(i, v)| (Rc::as_ptr(v), *i)).collect(),
        by_slot: HashMap::new(),
    }
    .object(&r.value)
}
