//! Turning the aggregator's totals into Python: `getstats()` entries shaped as `_lsprof`'s
//! (struct sequences `profiler_entry`/`profiler_subentry`), and the stats of
//! `cProfile.Profile.snapshot_stats` as the Stats engine's model (see `snapshot_model`), which
//! the engine's writer turns into a `.prof` file and its dict builder into the `stats` dict.

use std::ffi::{c_char, CStr};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyType};

use super::snapshot_model::{self, listed};
use crate::core::aggregator::Totals;
use crate::py::stats::StatsCore;
use crate::pyutil::gc::GcPaused;
use crate::pyutil::objects::stats_dict;
use crate::pyutil::pickling::{reduce, unpickling_error};
use crate::pyutil::text::str_bytes;
use crate::stats::dump::dump;
use crate::stats::model::Model;
use crate::stats::pickle;

static ENTRY_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static SUBENTRY_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn field(name: &'static CStr, doc: &'static CStr) -> ffi::PyStructSequence_Field {
    ffi::PyStructSequence_Field {
        name: name.as_ptr(),
        doc: doc.as_ptr(),
    }
}

/// Makes a struct sequence type; the field and description arrays are leaked on purpose
/// because CPython keeps pointers into them for the life of the type.
fn new_structseq(
    py: Python<'_>,
    name: &'static CStr,
    doc: &'static CStr,
    fields: Vec<ffi::PyStructSequence_Field>,
) -> PyResult<Py<PyType>> {
    let n = fields.len() as i32;
    let mut fields = fields;
    fields.push(ffi::PyStructSequence_Field {
        name: std::ptr::null(),
        doc: std::ptr::null(),
    });
    let fields: &'static mut [ffi::PyStructSequence_Field] = Box::leak(fields.into_boxed_slice());
    let desc = Box::leak(Box::new(ffi::PyStructSequence_Desc {
        name: name.as_ptr() as *const c_char,
        doc: doc.as_ptr() as *const c_char,
        fields: fields.as_mut_ptr(),
        n_in_sequence: n,
    }));
    // SAFETY: GIL held; `desc` and its arrays are 'static; the result is a new reference or NULL.
    let tp = unsafe { ffi::PyStructSequence_NewType(desc) };
    if tp.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `tp` is a new, non-NULL reference to a type object.
    let tp = unsafe { Bound::from_owned_ptr(py, tp as *mut ffi::PyObject) };
    Ok(tp.cast_into::<PyType>()?.unbind())
}

/// The `profiler_entry` type.
pub fn entry_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    ENTRY_TYPE
        .get_or_try_init(py, || {
            new_structseq(
                py,
                c"rprofile.profiler_entry",
                c"One function's totals, as _lsprof.profiler_entry.",
                vec![
                    field(c"code", c"code object or built-in function name"),
                    field(c"callcount", c"how many times this was called"),
                    field(c"reccallcount", c"how many times called recursively"),
                    field(c"totaltime", c"total time in this entry"),
                    field(
                        c"inlinetime",
                        c"inline time in this entry (not in subcalls)",
                    ),
                    field(c"calls", c"details of the calls"),
                ],
            )
        })
        .map(|t| t.bind(py))
}

/// The `profiler_subentry` type.
pub fn subentry_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    SUBENTRY_TYPE
        .get_or_try_init(py, || {
            new_structseq(
                py,
                c"rprofile.profiler_subentry",
                c"One callee's totals as called from one caller, as _lsprof.profiler_subentry.",
                vec![
                    field(c"code", c"called code object or built-in function name"),
                    field(c"callcount", c"how many times this is called"),
                    field(
                        c"reccallcount",
                        c"how many times this is called recursively",
                    ),
                    field(c"totaltime", c"total time spent in this call"),
                    field(c"inlinetime", c"inline time (not in further subcalls)"),
                ],
            )
        })
        .map(|t| t.bind(py))
}

/// Fills a new struct sequence of `tp` with `items`.
fn structseq<'py>(
    py: Python<'py>,
    tp: &Bound<'py, PyType>,
    items: Vec<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: GIL held; `tp` is a struct sequence type with exactly `items.len()` fields.
    let obj = unsafe { ffi::PyStructSequence_New(tp.as_ptr() as *mut ffi::PyTypeObject) };
    if obj.is_null() {
        return Err(PyErr::fetch(py));
    }
    for (i, item) in items.into_iter().enumerate() {
        // SAFETY: `obj` is a fresh struct sequence; SetItem steals the new reference we pass.
        unsafe { ffi::PyStructSequence_SetItem(obj, i as ffi::Py_ssize_t, item.into_ptr()) };
    }
    // SAFETY: `obj` is a new, non-NULL reference.
    Ok(unsafe { Bound::from_owned_ptr(py, obj) })
}

/// A profiler's totals at one moment (a `getstats()` call, or `create_stats` time), with the
/// objects naming its entries and the factor that turns its times into seconds; everything the
/// results are made from. Pickled as its stats model, it unpickles holding that model.
#[pyclass(module = "rprofile._rprofile", frozen)]
pub struct Snapshot {
    source: Source,
}

enum Source {
    Live {
        totals: Totals,
        objs: Vec<Py<PyAny>>,
        factor: f64,
    },
    /// Unpickled: the stats model only (no code objects crossed).
    Model(Model),
}

#[pymethods]
impl Snapshot {
    /// The stats dict, as `cProfile.Profile.snapshot_stats` builds it.
    fn to_dict(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        self.snapshot_stats(py)
    }

    /// The bytes of a `.prof` file: `marshal.dumps(self.to_dict())`, up to the form of equal
    /// values.
    fn marshal(&self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
        let bytes = self.with_model(py, dump)?;
        Ok(PyBytes::new(py, &bytes).unbind())
    }

    /// The stats as `rprofile.Stats` holds them: the model itself, not its `.prof` bytes.
    fn stats_core(&self, py: Python<'_>) -> PyResult<StatsCore> {
        let model = match &self.source {
            Source::Live { .. } => self.model(py)?,
            Source::Model(m) => m.clone(),
        };
        Ok(StatsCore::of_model(model))
    }

    /// Pickles as the stats model (`stats::pickle`'s payload).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let bytes = slf
            .get()
            .with_model(slf.py(), |m| pickle::to_bytes(m, None, None))?;
        reduce(slf.as_any(), &bytes)
    }

    /// A snapshot of a `__reduce__` payload; `pickle.UnpicklingError` for anything else.
    #[classmethod]
    fn _from_pickle(cls: &Bound<'_, PyType>, data: &[u8]) -> PyResult<Snapshot> {
        let py = cls.py();
        let p = py
            .detach(|| pickle::from_bytes(data))
            .map_err(|e| unpickling_error(py, e))?;
        Ok(Snapshot {
            source: Source::Model(p.model),
        })
    }
}

impl Snapshot {
    pub fn new(totals: Totals, objs: Vec<Py<PyAny>>, factor: f64) -> Self {
        Snapshot {
            source: Source::Live {
                totals,
                objs,
                factor,
            },
        }
    }

    /// `f` of the stats model of these totals (made for the call) or the unpickled one.
    fn with_model<R>(&self, py: Python<'_>, f: impl FnOnce(&Model) -> R) -> PyResult<R> {
        Ok(match &self.source {
            Source::Live { .. } => f(&self.model(py)?),
            Source::Model(m) => f(m),
        })
    }

    /// `getstats()`: one `profiler_entry` per listed entry.
    pub fn getstats(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        let Source::Live {
            totals: agg,
            objs: user_objs,
            factor,
        } = &self.source
        else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "an unpickled snapshot has no code objects for getstats()",
            ));
        };
        let factor = *factor;
        let _gc = GcPaused::new(py);
        let etype = entry_type(py)?;
        let stype = subentry_type(py)?;
        let calls = agg.calls_by_caller();
        let out = PyList::empty(py);
        for id in listed(agg) {
            let e = &agg.entries[id as usize];
            let sub = &calls[id as usize];
            let sublist: Bound<'_, PyAny> = if sub.is_empty() {
                py.None().into_bound(py)
            } else {
                let l = PyList::empty(py);
                for &si in sub {
                    let s = &agg.subs[si as usize];
                    l.append(structseq(
                        py,
                        stype,
                        vec![
                            user_objs[s.callee as usize].bind(py).clone(),
                            s.callcount.into_pyobject(py)?.into_any(),
                            s.reccallcount.into_pyobject(py)?.into_any(),
                            (factor * s.tt as f64).into_pyobject(py)?.into_any(),
                            (factor * s.it as f64).into_pyobject(py)?.into_any(),
                        ],
                    )?)?;
                }
                l.into_any()
            };
            out.append(structseq(
                py,
                etype,
                vec![
                    user_objs[id as usize].bind(py).clone(),
                    e.callcount.into_pyobject(py)?.into_any(),
                    e.reccallcount.into_pyobject(py)?.into_any(),
                    (factor * e.tt as f64).into_pyobject(py)?.into_any(),
                    (factor * e.it as f64).into_pyobject(py)?.into_any(),
                    sublist,
                ],
            )?)?;
        }
        Ok(out.unbind())
    }
}

impl Snapshot {
    /// The stats dict of `cProfile.Profile.snapshot_stats`:
    /// `{(file, line, name): (cc, nc, tt, ct, {caller: (nc, cc, tt, ct)})}`, built from the same
    /// model as the `.prof` file, so the dict and the file follow one description of cProfile's
    /// rules.
    pub fn snapshot_stats(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        Ok(self.with_model(py, |m| stats_dict(py, m))??.unbind())
    }

    /// The stats model of these totals, each entry named by `cProfile.label` of its object
    /// (an unpickled snapshot's own).
    fn model(&self, py: Python<'_>) -> PyResult<Model> {
        let (totals, objs, factor) = match &self.source {
            Source::Live {
                totals,
                objs,
                factor,
            } => (totals, objs, *factor),
            Source::Model(m) => return Ok(m.clone()),
        };
        let ids = listed(totals);
        let mut model = Model::default();
        let mut funcs = Vec::with_capacity(ids.len());
        for &id in &ids {
            funcs.push(label_func(py, &mut model, objs[id as usize].bind(py))?);
        }
        snapshot_model::fill(&mut model, totals, factor, &ids, &funcs);
        Ok(model)
    }
}

/// `cProfile.label` of an entry's object, as the stats key tuple `(file, line, name)`.
pub fn label_tuple<'py>(py: Python<'py>, code: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    if code.is_instance_of::<PyString>() {
        return Ok(("~", 0, code.clone()).into_pyobject(py)?.into_any());
    }
    Ok((
        code.getattr(pyo3::intern!(py, "co_filename"))?,
        code.getattr(pyo3::intern!(py, "co_firstlineno"))?,
        code.getattr(pyo3::intern!(py, "co_name"))?,
    )
        .into_pyobject(py)?
        .into_any())
}

/// `cProfile.label` of an entry's object, as a function of `model` (added if new).
fn label_func(py: Python<'_>, model: &mut Model, code: &Bound<'_, PyAny>) -> PyResult<u32> {
    if let Ok(name) = code.cast::<PyString>() {
        return Ok(model.func_id(b"~", 0, &str_bytes(name)?));
    }
    let file = code.getattr(pyo3::intern!(py, "co_filename"))?;
    let file = str_bytes(file.cast::<PyString>()?)?;
    let line: i64 = code
        .getattr(pyo3::intern!(py, "co_firstlineno"))?
        .extract()?;
    let name = code.getattr(pyo3::intern!(py, "co_name"))?;
    let name = str_bytes(name.cast::<PyString>()?)?;
    Ok(model.func_id(&file, line, &name))
}
