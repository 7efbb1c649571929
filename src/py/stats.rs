//! The Stats engine as Python objects: `StatsCore` holds one stats dict (the model), its sort
//! order and its callee lists; `FuncList` is a listing of functions being narrowed by
//! restrictions. `python/rprofile/stats.py` drives them with pstats' logic and attributes.

use std::sync::Arc;

use pyo3::exceptions::{PyKeyError, PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::stats::model::{ints, CallValue, Callees, Edge, MergeError, Model, Record};
use crate::stats::model::{CT_INT, TT_INT};
use crate::stats::{dump, load, pickle, report, select, sort, top};

use crate::pyutil::objects::{stats_dict, time_obj, Objects};
use crate::pyutil::pickling::unpickling_error;
use crate::pyutil::text::{py_str, str_bytes};

/// A key `(file, line, name)` of a Python stats dict, or `None` for another shape.
fn key_from_py(m: &mut Model, k: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
    let Ok(t) = k.cast_exact::<PyTuple>() else {
        return Ok(None);
    };
    if t.len() != 3 {
        return Ok(None);
    }
    let (file, line, name) = (t.get_item(0)?, t.get_item(1)?, t.get_item(2)?);
    let (Ok(file), Ok(name)) = (file.cast::<PyString>(), name.cast::<PyString>()) else {
        return Ok(None);
    };
    let Some(line) = count_from_py(&line) else {
        return Ok(None);
    };
    Ok(Some(m.func_id(&str_bytes(file)?, line, &str_bytes(name)?)))
}

/// An int that is not a bool and fits i64.
fn count_from_py(v: &Bound<'_, PyAny>) -> Option<i64> {
    if !v.is_exact_instance_of::<PyInt>() {
        return None;
    }
    v.extract::<i64>().ok()
}

/// A time and whether it is an int.
fn time_from_py(v: &Bound<'_, PyAny>) -> Option<(f64, bool)> {
    if let Ok(f) = v.cast::<PyFloat>() {
        return Some((f.value(), false));
    }
    count_from_py(v)
        .filter(|i| i.unsigned_abs() <= 1 << 53)
        .map(|i| (i as f64, true))
}

fn call_value_from_py(v: &Bound<'_, PyAny>) -> PyResult<Option<CallValue>> {
    if let Some(n) = count_from_py(v) {
        return Ok(Some(CallValue::Count(n)));
    }
    let Ok(t) = v.cast_exact::<PyTuple>() else {
        return Ok(None);
    };
    if t.len() != 4 {
        return Ok(None);
    }
    let (nc, cc, tt, ct) = (
        t.get_item(0)?,
        t.get_item(1)?,
        t.get_item(2)?,
        t.get_item(3)?,
    );
    Ok((|| {
        let ((tt, tt_int), (ct, ct_int)) = (time_from_py(&tt)?, time_from_py(&ct)?);
        Some(CallValue::Tuple {
            nc: count_from_py(&nc)?,
            cc: count_from_py(&cc)?,
            tt,
            ct,
            ints: ints(tt_int, ct_int),
        })
    })())
}

/// A Python stats dict into `m` (whose strings and functions are kept, so ids stay valid).
/// `false` when the dict is not of a stats dict's shape.
fn load_dict(m: &mut Model, d: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Ok(d) = d.cast::<PyDict>() else {
        return Ok(false);
    };
    m.stats.clear();
    m.stats.reserve(d.len());
    for (k, v) in d.iter() {
        let Some(func) = key_from_py(m, &k)? else {
            return Ok(false);
        };
        let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = v.cast_exact::<PyTuple>() {
            t.iter().collect()
        } else if let Ok(l) = v.cast_exact::<PyList>() {
            l.iter().collect()
        } else {
            return Ok(false);
        };
        let [cc, nc, tt, ct, callers] = &items[..] else {
            return Ok(false);
        };
        let (Some(cc), Some(nc), Some(tt), Some(ct), Ok(callers)) = (
            count_from_py(cc),
            count_from_py(nc),
            time_from_py(tt),
            time_from_py(ct),
            callers.cast::<PyDict>(),
        ) else {
            return Ok(false);
        };
        let mut rec = Record {
            cc,
            nc,
            tt: tt.0,
            ct: ct.0,
            ints: ints(tt.1, ct.1),
            callers: Vec::with_capacity(callers.len()),
        };
        for (ck, cv) in callers.iter() {
            let (Some(f), Some(value)) = (key_from_py(m, &ck)?, call_value_from_py(&cv)?) else {
                return Ok(false);
            };
            rec.callers.push(Edge { func: f, value });
        }
        m.stats.insert(func, rec);
    }
    Ok(true)
}

fn merge_err(e: MergeError) -> PyErr {
    match e {
        MergeError::MixedCallerFormats {
            tuple_into_count: true,
        } => PyTypeError::new_err("'int' object is not iterable"),
        MergeError::MixedCallerFormats {
            tuple_into_count: false,
        } => PyTypeError::new_err("can only concatenate tuple (not \"int\") to tuple"),
        MergeError::Overflow => PyOverflowError::new_err("a call count does not fit in 64 bits"),
    }
}

/// `(total_calls, prim_calls, total_tt, top_level keys, max_name_len)`.
type TopLevelTotals<'py> = (i128, i128, Bound<'py, PyAny>, Bound<'py, PyList>, usize);

/// A listing of functions (ids into a `StatsCore`'s model), narrowed by restrictions.
#[pyclass(module = "rprofile._rprofile", name = "FuncList", frozen)]
pub struct FuncList {
    /// Shared with the sort order it was taken from (a listing is a prefix of it, or a new list
    /// after a pattern): listing a 100,000-row profile copies nothing.
    all: Arc<Vec<u32>>,
    len: usize,
}

impl FuncList {
    fn new(ids: Vec<u32>) -> FuncList {
        FuncList {
            len: ids.len(),
            all: Arc::new(ids),
        }
    }

    fn ids(&self) -> &[u32] {
        &self.all[..self.len]
    }
}

#[pymethods]
impl FuncList {
    fn __len__(&self) -> usize {
        self.len
    }

    /// `list[:n]`.
    fn head(&self, n: usize) -> FuncList {
        FuncList {
            all: self.all.clone(),
            len: n.min(self.len),
        }
    }
}

/// One stats dict with its order and callee lists.
#[pyclass(module = "rprofile._rprofile", name = "StatsCore")]
#[derive(Default)]
pub struct StatsCore {
    model: Model,
    /// `fcn_list` as function ids, while it has not been handed out as a Python list.
    order: Option<Arc<Vec<u32>>>,
    /// `all_callees`, once `calc_callees` made it (stale after `add`, as pstats' is).
    callees: Option<Callees>,
}

impl StatsCore {
    /// The stats of a model made in this process (a profiler's snapshot, a sampled profile's
    /// stats): no marshal bytes between.
    pub(crate) fn of_model(model: Model) -> StatsCore {
        StatsCore {
            model,
            ..Default::default()
        }
    }

    /// The stats model (for the HTML report).
    pub(crate) fn model(&self) -> &Model {
        &self.model
    }

    /// The text of a report (Python str; names may hold lone surrogates).
    fn text<'py>(py: Python<'py>, out: &[u8]) -> PyResult<Bound<'py, PyString>> {
        py_str(py, out)
    }

    /// Writes a report to `stream` (by its `write`, as `print` does) in chunks of about 64 KiB.
    /// Returns the key of a function the report needed and did not find (pstats raises
    /// KeyError for it after printing the lines before it).
    fn write_report<'py>(
        &self,
        stream: &Bound<'py, PyAny>,
        report: impl FnOnce(&mut StreamSink<'py>) -> Result<(), report::Stop<PyErr>>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let py = stream.py();
        let mut sink = StreamSink {
            write: stream.getattr("write")?,
            out: Vec::with_capacity(StreamSink::CHUNK + 4096),
        };
        let missing = match report(&mut sink) {
            Ok(()) => None,
            Err(report::Stop::Missing(id)) => Some(id),
            Err(report::Stop::Sink(e)) => return Err(e),
        };
        sink.flush()?;
        missing
            .map(|id| Objects::new(py, &self.model).key(&self.model, id))
            .transpose()
    }
}

/// A report's text on its way to a Python stream: written whenever a chunk has gathered, so a
/// report of megabytes is never built whole.
struct StreamSink<'py> {
    write: Bound<'py, PyAny>,
    out: Vec<u8>,
}

impl StreamSink<'_> {
    const CHUNK: usize = 64 * 1024;

    fn flush(&mut self) -> PyResult<()> {
        if !self.out.is_empty() {
            self.write
                .call1((StatsCore::text(self.write.py(), &self.out)?,))?;
            self.out.clear();
        }
        Ok(())
    }
}

impl report::Sink for StreamSink<'_> {
    type Error = PyErr;

    fn text(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    fn line_done(&mut self) -> PyResult<()> {
        if self.out.len() >= Self::CHUNK {
            self.flush()?;
        }
        Ok(())
    }
}

#[pymethods]
impl StatsCore {
    #[new]
    fn new() -> Self {
        Self::default()
    }

    /// The model of stats-file bytes, or `None` when they are not a stats dict that reads
    /// directly (bad marshal data or another shape: the caller reproduces pstats' error).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> Option<StatsCore> {
        py.detach(|| load::from_bytes(data)).map(|model| StatsCore {
            model,
            ..Default::default()
        })
    }

    /// The model of a Python stats dict, or `None` if it has another shape.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyAny>) -> PyResult<Option<StatsCore>> {
        let mut core = StatsCore::default();
        Ok(load_dict(&mut core.model, d)?.then_some(core))
    }

    /// Replaces the rows with those of a Python stats dict (the one handed out as `stats`, which
    /// the user may have changed), keeping function ids, order and callees. `false` if the dict
    /// has another shape.
    fn reload(&mut self, d: &Bound<'_, PyAny>) -> PyResult<bool> {
        load_dict(&mut self.model, d)
    }

    /// Takes over `old`'s sort order and callee lists, which pstats keeps across `load_stats`
    /// (they then name functions of the old dict).
    fn adopt_views(&mut self, old: &StatsCore) {
        let mut memo = vec![u32::MAX; old.model.funcs.len()];
        let model = &mut self.model;
        let mut map = |id: u32| {
            if memo[id as usize] == u32::MAX {
                let f = old.model.func(id);
                memo[id as usize] =
                    model.func_id(old.model.string(f.file), f.line, old.model.string(f.name));
            }
            memo[id as usize]
        };
        self.order = old
            .order
            .as_ref()
            .map(|o| Arc::new(o.iter().map(|&f| map(f)).collect()));
        if let Some(c) = &old.callees {
            let n = old.model.funcs.len();
            self.callees = Some(c.mapped(&mut map, n));
        }
    }

    fn copy(&self) -> StatsCore {
        StatsCore {
            model: self.model.clone(),
            order: self.order.clone(),
            callees: self.callees.clone(),
        }
    }

    /// At most `n` of the heaviest functions (by tottime and by cumtime) and one row for the
    /// rest, which keeps the totals: the stats of a report that must stay small.
    fn top(&self, py: Python<'_>, n: usize) -> StatsCore {
        let model = &self.model;
        StatsCore {
            model: py.detach(|| top::top(model, n)),
            ..Default::default()
        }
    }

    fn __len__(&self) -> usize {
        self.model.stats.len()
    }

    /// Whether the stats are samples: read from a file that carried 3.15's `("__sampled__",)`
    /// marker; `dump` writes the marker when set.
    #[getter]
    fn sampled(&self) -> bool {
        self.model.sampled
    }

    #[setter]
    fn set_sampled(&mut self, sampled: bool) {
        self.model.sampled = sampled;
    }

    /// The stats dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.model)
    }

    /// What `get_top_level_stats` adds to the totals: `(total_calls, prim_calls, total_tt,
    /// top_level keys, max_name_len)`, the time summed onto `total_tt` in pstats' order.
    fn top_level_stats<'py>(
        &self,
        py: Python<'py>,
        total_tt: &Bound<'py, PyAny>,
    ) -> PyResult<TopLevelTotals<'py>> {
        let (start, start_int) = time_from_py(total_tt)
            .ok_or_else(|| PyTypeError::new_err("total_tt must be an int or a float"))?;
        let t = self.model.top_level_stats(start);
        let mut objs = Objects::new(py, &self.model);
        let top = PyList::empty(py);
        for &f in &t.top_level {
            top.append(objs.key(&self.model, f)?)?;
        }
        let total_tt = time_obj(py, t.total_tt, start_int && t.total_tt_int)?;
        Ok((t.total_calls, t.prim_calls, total_tt, top, t.max_name_len))
    }

    /// `Stats.add`'s merge of one item's rows.
    fn add(&mut self, other: &StatsCore) -> PyResult<()> {
        self.model.add(&other.model).map_err(merge_err)
    }

    /// `strip_dirs`: returns the new `max_name_len`; order and callees are dropped.
    fn strip_dirs(&mut self) -> PyResult<usize> {
        let (m, max_len) = self.model.strip_dirs().map_err(merge_err)?;
        self.model = m;
        self.order = None;
        self.callees = None;
        Ok(max_len)
    }

    /// Sorts by `(field index, direction)` pairs into the order `fcn_list` will show. `false`
    /// (nothing done) when a compared time is NaN: no total order then, and only pstats' own
    /// sort gives pstats' order.
    fn sort(&mut self, py: Python<'_>, spec: Vec<(i64, i64)>) -> PyResult<bool> {
        let mut fields = Vec::with_capacity(spec.len());
        for (i, d) in spec {
            let f = sort::Field::from_index(i).ok_or_else(|| {
                pyo3::exceptions::PyIndexError::new_err("tuple index out of range")
            })?;
            fields.push((f, d));
        }
        let m = &self.model;
        let times = fields
            .iter()
            .any(|(f, _)| matches!(f, sort::Field::TotTime | sort::Field::CumTime));
        if times && m.stats.values().any(|r| r.tt.is_nan() || r.ct.is_nan()) {
            return Ok(false);
        }
        self.order = Some(Arc::new(py.detach(|| sort::sort(m, &fields))));
        Ok(true)
    }

    /// Whether there is a non-empty sort order (pstats tests `fcn_list` for truth).
    fn has_order(&self) -> bool {
        self.order.as_ref().is_some_and(|o| !o.is_empty())
    }

    fn clear_order(&mut self) {
        self.order = None;
    }

    fn reverse_order(&mut self) {
        if let Some(o) = &mut self.order {
            Arc::make_mut(o).reverse();
        }
    }

    /// The order as a list of keys (the `fcn_list` pstats keeps).
    fn order_keys<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(order) = &self.order else {
            return Ok(None);
        };
        let mut objs = Objects::new(py, &self.model);
        let l = PyList::empty(py);
        for &f in order.iter() {
            l.append(objs.key(&self.model, f)?)?;
        }
        Ok(Some(l))
    }

    /// The functions to list: those of `keys` (a Python `fcn_list`) if given, else the sort
    /// order if `ordered`, else the stats dict's order.
    #[pyo3(signature = (keys=None, ordered=true))]
    fn listing(&mut self, keys: Option<&Bound<'_, PyAny>>, ordered: bool) -> PyResult<FuncList> {
        let ids = match keys {
            Some(keys) => {
                let mut ids = Vec::new();
                for k in keys.try_iter()? {
                    let k = k?;
                    match key_from_py(&mut self.model, &k)? {
                        Some(id) => ids.push(id),
                        None => return Err(PyKeyError::new_err((k.unbind(),))),
                    }
                }
                ids
            }
            None => match &self.order {
                Some(o) if ordered => {
                    return Ok(FuncList {
                        all: o.clone(),
                        len: o.len(),
                    })
                }
                _ => self.model.stats.keys().copied().collect(),
            },
        };
        Ok(FuncList::new(ids))
    }

    /// The widest `func_std_string` of a listing.
    fn width(&self, list: &FuncList) -> usize {
        list.ids()
            .chunks(report::ROWS_AHEAD)
            .flat_map(|block| {
                self.model.prefetch_rows(block);
                block.iter().map(|&f| self.model.std_name_len(f))
            })
            .max()
            .unwrap_or(0)
    }

    /// The functions of `list` whose `func_std_string` `rex` (a compiled Python pattern, whose
    /// source is `pattern`) finds a match in.
    fn search(
        &self,
        list: &FuncList,
        pattern: &Bound<'_, PyAny>,
        rex: &Bound<'_, PyAny>,
    ) -> PyResult<FuncList> {
        let py = rex.py();
        let rust = pattern
            .cast::<PyString>()
            .ok()
            .and_then(|p| p.to_str().ok())
            .and_then(select::translate)
            .and_then(|(p, needs)| regex::Regex::new(&p).ok().map(|r| (r, needs)));
        let search = rex.getattr("search")?;
        let mut out = Vec::new();
        let mut name = Vec::new();
        for &f in list.ids() {
            name.clear();
            self.model.std_name(f, &mut name);
            let fast = match &rust {
                Some((r, needs)) if needs.allows(&name) => {
                    std::str::from_utf8(&name).ok().map(|s| r.is_match(s))
                }
                _ => None,
            };
            let hit = match fast {
                Some(h) => h,
                None => search.call1((py_str(py, &name)?,))?.is_truthy()?,
            };
            if hit {
                out.push(f);
            }
        }
        Ok(FuncList::new(out))
    }

    /// `print_line` for each function of `list`, written to `stream`.
    fn write_lines<'py>(
        &self,
        stream: &Bound<'py, PyAny>,
        list: &FuncList,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.write_report(stream, |sink| report::lines(&self.model, list.ids(), sink))
    }

    /// The rows of rprofile's own table of a sampled profile (`report::SAMPLE_TITLE`), each
    /// function's samples as shares of `total`, written to `stream`.
    fn write_sample_lines<'py>(
        &self,
        stream: &Bound<'py, PyAny>,
        list: &FuncList,
        total: i64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.write_report(stream, |sink| {
            report::sample_lines(&self.model, list.ids(), total, sink)
        })
    }

    /// `report::SAMPLE_TITLE`.
    #[staticmethod]
    fn sample_title() -> &'static str {
        report::SAMPLE_TITLE
    }

    /// `print_call_heading`'s text; `columns` is the sub-header (3.15's `SampledStats` has its
    /// own).
    #[pyo3(signature = (width, title, columns=report::CALL_COLUMNS))]
    fn format_call_heading<'py>(
        &self,
        py: Python<'py>,
        width: usize,
        title: &str,
        columns: &str,
    ) -> PyResult<Bound<'py, PyString>> {
        let mut out = Vec::new();
        report::call_heading(&self.model, width, title, columns, &mut out);
        Self::text(py, &out)
    }

    /// `print_callers`' body, written to `stream`.
    fn write_callers<'py>(
        &self,
        stream: &Bound<'py, PyAny>,
        width: usize,
        list: &FuncList,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.write_report(stream, |sink| {
            report::callers(&self.model, width, list.ids(), sink)
        })
    }

    /// `calc_callees`: made when there is none yet (or it is empty, as pstats' test is).
    fn calc_callees(&mut self) {
        if self.callees.as_ref().is_none_or(|c| c.is_empty()) {
            self.callees = Some(self.model.callees());
        }
    }

    fn clear_callees(&mut self) {
        self.callees = None;
    }

    /// `print_callees`' body, written to `stream`.
    fn write_callees<'py>(
        &mut self,
        stream: &Bound<'py, PyAny>,
        width: usize,
        list: &FuncList,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.calc_callees();
        let empty = Callees::default();
        let all = self.callees.as_ref().unwrap_or(&empty);
        self.write_report(stream, |sink| {
            report::callees(&self.model, all, width, list.ids(), sink)
        })
    }

    /// `all_callees` as pstats builds it, or `None` before `calc_callees`.
    fn callees_dict<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(all) = &self.callees else {
            return Ok(None);
        };
        let m = &self.model;
        let mut objs = Objects::new(py, m);
        let d = PyDict::new(py);
        for &func in &all.order {
            let inner = PyDict::new(py);
            for e in all.of(func) {
                inner.set_item(objs.key(m, e.func)?, objs.call_value(&e.value)?)?;
            }
            d.set_item(objs.key(m, func)?, inner)?;
        }
        Ok(Some(d))
    }

    /// Rows for `get_stats_profile`: `(file, line, name, cc, nc, tt, ct)` per listed function.
    fn profile_rows<'py>(&self, py: Python<'py>, list: &FuncList) -> PyResult<Bound<'py, PyList>> {
        let m = &self.model;
        let mut objs = Objects::new(py, m);
        let out = PyList::empty(py);
        for &f in list.ids() {
            let Some(r) = m.stats.get(&f) else {
                return Err(PyKeyError::new_err((objs.key(m, f)?.unbind(),)));
            };
            let func = m.func(f);
            out.append((
                objs.string(m, func.file)?,
                func.line,
                objs.string(m, func.name)?,
                r.cc,
                r.nc,
                time_obj(py, r.tt, r.ints & TT_INT != 0)?,
                time_obj(py, r.ct, r.ints & CT_INT != 0)?,
            ))?;
        }
        Ok(out)
    }

    /// The pickle payload of the model with its callee lists and its sort order, or with the
    /// order `keys` (a `fcn_list` handed out as a list) when given: KeyError for an item that
    /// is not a function key.
    #[pyo3(signature = (keys=None))]
    fn _to_pickle<'py>(
        &mut self,
        py: Python<'py>,
        keys: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let listed;
        let order = match keys {
            Some(keys) => {
                listed = self.listing(Some(keys), true)?;
                Some(listed.ids())
            }
            None => self.order.as_deref().map(Vec::as_slice),
        };
        let (model, callees) = (&self.model, self.callees.as_ref());
        let bytes = py.detach(|| pickle::to_bytes(model, order, callees));
        Ok(PyBytes::new(py, &bytes))
    }

    /// The core of a `_to_pickle` payload; `pickle.UnpicklingError` for anything else.
    #[staticmethod]
    fn _from_pickle(py: Python<'_>, data: &[u8]) -> PyResult<StatsCore> {
        let p = py
            .detach(|| pickle::from_bytes(data))
            .map_err(|e| unpickling_error(py, e))?;
        Ok(StatsCore {
            model: p.model,
            order: p.order.map(Arc::new),
            callees: p.callees,
        })
    }

    /// Whether there is a sort order, empty or not (`fcn_list` is then the core's).
    #[getter]
    fn ordered(&self) -> bool {
        self.order.is_some()
    }

    /// The marshal bytes of the stats dict (`dump_stats`), with the sampled marker if set.
    fn dump<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let m = &self.model;
        let bytes = py.detach(|| dump::dump(m));
        PyBytes::new(py, &bytes)
    }
}
