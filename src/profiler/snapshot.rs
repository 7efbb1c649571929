//! Turning the aggregator's totals into Python: `getstats()` entries shaped as `_lsprof`'s
//! (struct sequences `profiler_entry`/`profiler_subentry`), and the stats of
//! `cProfile.Profile.snapshot_stats`, written as marshal bytes (a `.prof` file) in one pass
//! instead of through Python loops, and read back as the dict.

use std::ffi::{c_char, CStr};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyType};

use crate::core::aggregator::Totals;
use crate::core::counters::EntryId;

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

/// Keeps the cyclic garbage collector off while results are built: they hold no garbage, and
/// the collections their many new containers would trigger cost more than the building.
struct GcPaused(bool);

impl GcPaused {
    fn new() -> Self {
        // SAFETY: GIL held by the caller (these functions take a Python token).
        GcPaused(unsafe { ffi::PyGC_Disable() } != 0)
    }
}

impl Drop for GcPaused {
    fn drop(&mut self) {
        if self.0 {
            // SAFETY: GIL held; re-enables what `new` disabled.
            unsafe { ffi::PyGC_Enable() };
        }
    }
}

/// Entries that `_lsprof` would list: ascending key order, never-completed ones skipped.
fn listed(agg: &Totals) -> Vec<EntryId> {
    agg.ids_by_key()
        .into_iter()
        .filter(|&i| agg.entries[i as usize].callcount != 0)
        .collect()
}

/// A profiler's totals at one moment (a `getstats()` call, or `create_stats` time), with the
/// objects naming its entries and the factor that turns its times into seconds; everything the
/// results are made from.
#[pyclass(module = "rprofile._rprofile", frozen)]
pub struct Snapshot {
    totals: Totals,
    objs: Vec<Py<PyAny>>,
    factor: f64,
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
        Ok(PyBytes::new(py, &self.stats_marshal(py)?).unbind())
    }
}

impl Snapshot {
    pub fn new(totals: Totals, objs: Vec<Py<PyAny>>, factor: f64) -> Self {
        Snapshot {
            totals,
            objs,
            factor,
        }
    }

    /// `getstats()`: one `profiler_entry` per listed entry.
    pub fn getstats(&self, py: Python<'_>) -> PyResult<Py<PyList>> {
        let (agg, user_objs, factor) = (&self.totals, &self.objs, self.factor);
        let _gc = GcPaused::new();
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
    /// `{(file, line, name): (cc, nc, tt, ct, {caller: (nc, cc, tt, ct)})}`, read by CPython's
    /// marshal reader from the bytes [`stats_marshal`] writes, so the dict and the `.prof` file come
    /// from one description of cProfile's rules (and reading C-marshal is faster than building the
    /// objects one by one from here).
    pub fn snapshot_stats(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let bytes = self.stats_marshal(py)?;
        let _gc = GcPaused::new();
        // SAFETY: GIL held; the pointer and length describe `bytes`, alive for the call; the result
        // is a new reference or NULL with an exception set.
        let obj = unsafe {
            ffi::PyMarshal_ReadObjectFromString(
                bytes.as_ptr().cast(),
                bytes.len() as ffi::Py_ssize_t,
            )
        };
        if obj.is_null() {
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new, non-NULL reference.
        let obj = unsafe { Bound::from_owned_ptr(py, obj) };
        Ok(obj.cast_into::<PyDict>()?.unbind())
    }
}

/// A stats key `(file, line, name)` as marshal writes it: the strings as UTF-8 (surrogatepass).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    file: Vec<u8>,
    line: i64,
    name: Vec<u8>,
}

fn utf8(s: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let s = s.cast::<PyString>()?;
    if let Ok(text) = s.to_str() {
        return Ok(text.as_bytes().to_vec());
    }
    // Lone surrogates (undecodable file names): marshal keeps them with surrogatepass.
    let bytes = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
    Ok(bytes.cast::<pyo3::types::PyBytes>()?.as_bytes().to_vec())
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

/// `cProfile.label` of an entry's object, as a [`Key`].
fn key_of(py: Python<'_>, code: &Bound<'_, PyAny>) -> PyResult<Key> {
    if code.is_instance_of::<PyString>() {
        return Ok(Key {
            file: b"~".to_vec(),
            line: 0,
            name: utf8(code)?,
        });
    }
    Ok(Key {
        file: utf8(&code.getattr(pyo3::intern!(py, "co_filename"))?)?,
        line: code
            .getattr(pyo3::intern!(py, "co_firstlineno"))?
            .extract()?,
        name: utf8(&code.getattr(pyo3::intern!(py, "co_name"))?)?,
    })
}

impl Snapshot {
    /// The marshal bytes of cProfile's stats dict for these totals, written without building it:
    /// the keys, values and order `snapshot_stats` gives (a repeated label keeps its first position
    /// and takes the later entry's row; caller rows of one label are summed).
    pub fn stats_marshal(&self, py: Python<'_>) -> PyResult<Vec<u8>> {
        let (agg, user_objs, factor) = (&self.totals, &self.objs, self.factor);
        use std::collections::HashMap;

        use crate::marshal::Writer;

        let ids = listed(agg);
        // Distinct labels, in first-seen order; each entry's label slot.
        let mut slot_of_key: HashMap<Key, usize> = HashMap::with_capacity(ids.len());
        let mut keys: Vec<Key> = Vec::with_capacity(ids.len());
        let mut slot_of_entry = vec![usize::MAX; agg.entries.len()];
        // Per label slot, the entry whose row the stats dict holds (the last one listed).
        let mut row_of_slot: Vec<u32> = Vec::with_capacity(ids.len());
        for &id in &ids {
            let key = key_of(py, user_objs[id as usize].bind(py))?;
            let slot = match slot_of_key.get(&key) {
                Some(&s) => {
                    row_of_slot[s] = id;
                    s
                }
                None => {
                    slot_of_key.insert(key.clone(), keys.len());
                    keys.push(key);
                    row_of_slot.push(id);
                    keys.len() - 1
                }
            };
            slot_of_entry[id as usize] = slot;
        }
        let labels_unique = keys.len() == ids.len();

        // Callers of each entry: (caller label slot, nc, cc, tt, ct) in insertion order.
        type Row = (usize, i64, i64, f64, f64);
        let mut callers: Vec<Vec<Row>> = vec![Vec::new(); agg.entries.len()];
        let calls = agg.calls_by_caller();
        for &id in &ids {
            let func = slot_of_entry[id as usize];
            for &si in &calls[id as usize] {
                let s = &agg.subs[si as usize];
                if slot_of_entry[s.callee as usize] == usize::MAX {
                    continue; // a callee that never completed has no callers dict
                }
                let row: Row = (
                    func,
                    s.callcount,
                    s.callcount - s.reccallcount,
                    factor * s.it as f64,
                    factor * s.tt as f64,
                );
                let list = &mut callers[s.callee as usize];
                if !labels_unique {
                    if let Some(prev) = list.iter_mut().find(|r| r.0 == func) {
                        *prev = (
                            func,
                            row.1 + prev.1,
                            row.2 + prev.2,
                            row.3 + prev.3,
                            row.4 + prev.4,
                        );
                        continue;
                    }
                }
                list.push(row);
            }
        }

        let mut w = Writer::new();
        let mut key_ref: Vec<Option<u32>> = vec![None; keys.len()];
        let mut str_ref: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut write_key = |w: &mut Writer, slot: usize| {
            if let Some(r) = key_ref[slot] {
                w.reference(r);
                return;
            }
            key_ref[slot] = w.tuple(3, true);
            let k = &keys[slot];
            for (i, part) in [&k.file, &k.name].into_iter().enumerate() {
                if i == 1 {
                    w.int(k.line);
                }
                match str_ref.get(part) {
                    Some(&r) => w.reference(r),
                    None => {
                        if let Some(r) = w.str(part, true) {
                            str_ref.insert(part.clone(), r);
                        }
                    }
                }
            }
        };
        w.dict();
        for (slot, &id) in row_of_slot.iter().enumerate() {
            write_key(&mut w, slot);
            let e = &agg.entries[id as usize];
            w.tuple(5, false);
            w.int(e.callcount - e.reccallcount);
            w.int(e.callcount);
            w.float(factor * e.it as f64);
            w.float(factor * e.tt as f64);
            w.dict();
            for &(func, nc, cc, tt, ct) in &callers[id as usize] {
                write_key(&mut w, func);
                w.tuple(4, false);
                w.int(nc);
                w.int(cc);
                w.float(tt);
                w.float(ct);
            }
            w.end_dict();
        }
        w.end_dict();
        Ok(w.buf)
    }
}
