//! Marshal values as Python objects: the bridge the Stats engine's loader will use, exposed now as
//! `_rprofile._marshal_loads` so the differential tests can hold the reader to `marshal.loads`.

use std::collections::HashMap;
use std::rc::Rc;

use pyo3::exceptions::{PyEOFError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFrozenSet, PyList, PySet, PyTuple};

use crate::marshal::read::{self, Error, Value};

fn to_pyerr(py: Python<'_>, e: Error) -> PyErr {
    match e {
        Error::Eof(m) => PyEOFError::new_err(m),
        Error::Value(m) => PyValueError::new_err(m),
        Error::Type(m) => PyTypeError::new_err(m),
        Error::Unhashable(name) => PyTypeError::new_err(format!("unhashable type: '{name}'")),
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
}

impl<'py> Builder<'py> {
    fn object(&mut self, v: &Rc<Value>) -> PyResult<Bound<'py, PyAny>> {
        let key = Rc::as_ptr(v);
        if let Some(o) = self.made.get(&key) {
            return Ok(o.clone());
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
            Value::Dict(pairs) => {
                let d = PyDict::new(py);
                for (k, val) in pairs {
                    d.set_item(self.object(k)?, self.object(val)?)?;
                }
                d.into_any()
            }
        };
        self.made.insert(key, o.clone());
        Ok(o)
    }
}

/// `_marshal_loads(data)`: what `marshal.loads(data)` gives, by rprofile's reader.
#[pyfunction]
pub fn _marshal_loads<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let (v, _) = read::read(data).map_err(|e| to_pyerr(py, e))?;
    Builder {
        py,
        made: HashMap::new(),
    }
    .object(&v)
}
