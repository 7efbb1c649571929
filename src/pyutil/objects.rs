//! A model's contents as Python objects, each string and key made once and shared, as
//! `marshal.load` shares them: the one builder of stats dicts, for `Stats.stats` and for a
//! profiler's `stats`, and the keys and values the other results hand out.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::pyutil::gc::GcPaused;
use crate::pyutil::text::py_str;
use crate::stats::model::{CallValue, Model, CT_INT, TT_INT};

/// Python objects for a model's strings and keys, made once each.
pub struct Objects<'py> {
    py: Python<'py>,
    strings: Vec<Option<Bound<'py, PyString>>>,
    keys: Vec<Option<Bound<'py, PyTuple>>>,
}

impl<'py> Objects<'py> {
    pub fn new(py: Python<'py>, m: &Model) -> Self {
        Objects {
            py,
            strings: vec![None; m.strings.len()],
            keys: vec![None; m.funcs.len()],
        }
    }

    pub fn string(&mut self, m: &Model, id: u32) -> PyResult<Bound<'py, PyString>> {
        if let Some(s) = &self.strings[id as usize] {
            return Ok(s.clone());
        }
        let s = py_str(self.py, m.string(id))?;
        self.strings[id as usize] = Some(s.clone());
        Ok(s)
    }

    pub fn key(&mut self, m: &Model, id: u32) -> PyResult<Bound<'py, PyTuple>> {
        if let Some(k) = self.keys.get(id as usize).and_then(Option::as_ref) {
            return Ok(k.clone());
        }
        let f = m.func(id);
        let file = self.string(m, f.file)?;
        let name = self.string(m, f.name)?;
        let line = f.line.into_pyobject(self.py)?;
        let k = PyTuple::new(self.py, [file.into_any(), line.into_any(), name.into_any()])?;
        if (id as usize) < self.keys.len() {
            self.keys[id as usize] = Some(k.clone());
        }
        Ok(k)
    }

    pub fn call_value(&self, v: &CallValue) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match *v {
            CallValue::Tuple {
                nc,
                cc,
                tt,
                ct,
                ints,
            } => (
                nc,
                cc,
                time_obj(py, tt, ints & TT_INT != 0)?,
                time_obj(py, ct, ints & CT_INT != 0)?,
            )
                .into_pyobject(py)?
                .into_any(),
            CallValue::Count(n) => n.into_pyobject(py)?.into_any(),
        })
    }
}

/// A time as the Python object it was read as.
pub fn time_obj(py: Python<'_>, t: f64, int: bool) -> PyResult<Bound<'_, PyAny>> {
    Ok(if int {
        (t as i64).into_pyobject(py)?.into_any()
    } else {
        t.into_pyobject(py)?.into_any()
    })
}

/// The stats dict of `m`: `{(file, line, name): (cc, nc, tt, ct, {caller: value})}` in the
/// model's order, times as the ints or floats they were.
pub fn stats_dict<'py>(py: Python<'py>, m: &Model) -> PyResult<Bound<'py, PyDict>> {
    let _gc = GcPaused::new(py);
    let mut objs = Objects::new(py, m);
    let d = PyDict::new(py);
    for (&func, r) in &m.stats {
        let callers = PyDict::new(py);
        for e in &r.callers {
            callers.set_item(objs.key(m, e.func)?, objs.call_value(&e.value)?)?;
        }
        let row = (
            r.cc,
            r.nc,
            time_obj(py, r.tt, r.ints & TT_INT != 0)?,
            time_obj(py, r.ct, r.ints & CT_INT != 0)?,
            callers,
        )
            .into_pyobject(py)?;
        d.set_item(objs.key(m, func)?, row)?;
    }
    Ok(d)
}
