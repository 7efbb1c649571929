//! The timeline's Python face: names for its keys and threads, its columns as arrays for
//! `rprofile.timeline`, and its exports written to a file.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::core::timeline::{self, Event, Timeline};
use crate::pyutil::oserror::os_error;
use crate::timeline_export::{chrome, speedscope, Names};
use crate::tracer::state::State;
use crate::tracer::threads;

/// A function as the timeline shows it.
struct Label {
    name: String,
    file: String,
    line: i64,
}

fn text(v: &Bound<'_, PyAny>) -> String {
    match v.cast::<PyString>() {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => v
            .str()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

fn label_of(py: Python<'_>, obj: &Bound<'_, PyAny>) -> Label {
    if obj.is_instance_of::<PyString>() {
        return Label {
            name: text(obj),
            file: "~".into(),
            line: 0,
        };
    }
    let name = obj.getattr(pyo3::intern!(py, "co_name")).ok();
    let file = obj.getattr(pyo3::intern!(py, "co_filename")).ok();
    let line = obj.getattr(pyo3::intern!(py, "co_firstlineno")).ok();
    Label {
        name: name.map_or_else(String::new, |v| text(&v)),
        file: file.map_or_else(String::new, |v| text(&v)),
        line: line.and_then(|v| v.extract().ok()).unwrap_or(0),
    }
}

/// Everything an export needs, taken from the state without holding a borrow into it while
/// Python code runs (labels are read from the objects afterwards).
pub struct TimelineCopy {
    events: Vec<Event>,
    tl_threads: Vec<(u64, u64)>,
    dropped: u64,
    capacity: usize,
    when_full: timeline::WhenFull,
    objs: HashMap<usize, Py<PyAny>>,
    /// Thread names by the interpreter's thread id: a later thread may reuse an ended one's
    /// ident, never its id.
    known_names: HashMap<u64, String>,
    memory_base: i64,
    rss: Vec<(i64, u64)>,
    rss_dropped: u64,
    /// The counted types' names, by the index object events carry (`types=True`).
    types: Vec<String>,
}

/// Copies the timeline and the objects naming its keys, or `None` without a timeline.
pub fn take(st: &State, py: Python<'_>) -> Option<TimelineCopy> {
    let tl: &Timeline = st.timeline.as_deref()?;
    let events: Vec<Event> = tl.iter().copied().collect();
    let mut wanted: HashMap<usize, Py<PyAny>> = HashMap::new();
    for e in &events {
        wanted.entry(e.key).or_insert_with(|| py.None());
    }
    let mut known_names = HashMap::new();
    let tracks = std::iter::once((&st.agg, &st.user_objs, &st.thread, &st.thread_info)).chain(
        st.parked
            .values()
            .map(|t| (&t.agg, &t.user_objs, &t.key, &t.info)),
    );
    for (agg, objs, key, info) in tracks {
        for (e, o) in agg.entries.iter().zip(objs.iter()) {
            if let Some(slot) = wanted.get_mut(&e.key) {
                if slot.is_none(py) {
                    *slot = o.clone_ref(py);
                }
            }
        }
        if let Some(name) = &info.name {
            known_names.insert(key.id, name.clone());
        }
    }
    let (rss, rss_dropped) = st
        .rss
        .as_deref()
        .map_or_else(|| (Vec::new(), 0), |r| r.samples());
    Some(TimelineCopy {
        events,
        tl_threads: tl.threads.clone(),
        dropped: tl.dropped,
        capacity: tl.capacity(),
        when_full: tl.when_full,
        objs: wanted,
        known_names,
        memory_base: tl.memory_base,
        rss,
        rss_dropped,
        types: st.types.as_deref().map_or_else(Vec::new, |t| {
            t.ledger.types.iter().map(|c| c.name.clone()).collect()
        }),
    })
}

/// The timeline's columns, each a native-endian array in bytes.
struct Columns {
    time: Vec<u8>,
    kind: Vec<u8>,
    depth: Vec<u8>,
    thread: Vec<u8>,
    func: Vec<u8>,
    caller: Vec<u8>,
    value1: Vec<u8>,
    value2: Vec<u8>,
}

impl Columns {
    fn with_capacity(n: usize) -> Columns {
        Columns {
            time: Vec::with_capacity(n * 8),
            kind: Vec::with_capacity(n),
            depth: Vec::with_capacity(n * 4),
            thread: Vec::with_capacity(n * 2),
            func: Vec::with_capacity(n * 4),
            caller: Vec::with_capacity(n * 4),
            value1: Vec::with_capacity(n * 8),
            value2: Vec::with_capacity(n * 8),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        time: f64,
        kind: u8,
        depth: u32,
        thread: u16,
        func: u32,
        caller: i32,
        value1: f64,
        value2: f64,
    ) {
        self.time.extend_from_slice(&time.to_ne_bytes());
        self.kind.push(kind);
        self.depth.extend_from_slice(&depth.to_ne_bytes());
        self.thread.extend_from_slice(&thread.to_ne_bytes());
        self.func.extend_from_slice(&func.to_ne_bytes());
        self.caller.extend_from_slice(&caller.to_ne_bytes());
        self.value1.extend_from_slice(&value1.to_ne_bytes());
        self.value2.extend_from_slice(&value2.to_ne_bytes());
    }
}

impl TimelineCopy {
    fn labels(&self, py: Python<'_>) -> HashMap<usize, Label> {
        self.objs
            .iter()
            .map(|(&k, o)| (k, label_of(py, o.bind(py))))
            .collect()
    }

    /// (ident, name) per timeline thread index. A thread whose track has no name is looked up
    /// in `threading`'s registry by ident only if its lane is the last with that ident: the
    /// registry's thread may be a later one that reused the ident, never an earlier one.
    fn threads(&self, py: Python<'_>) -> Vec<(u64, String)> {
        let mut last_lane: HashMap<u64, usize> = HashMap::new();
        for (i, &(_, ident)) in self.tl_threads.iter().enumerate() {
            last_lane.insert(ident, i);
        }
        self.tl_threads
            .iter()
            .enumerate()
            .map(|(i, &(id, ident))| {
                let name = self
                    .known_names
                    .get(&id)
                    .cloned()
                    .or_else(|| {
                        (last_lane.get(&ident) == Some(&i))
                            .then(|| threads::thread_name(py, ident))
                            .flatten()
                    })
                    .unwrap_or_else(|| format!("Thread {ident}"));
                (ident, name)
            })
            .collect()
    }

    /// `(events kept, capacity, events dropped, when_full, RSS samples kept, RSS samples
    /// dropped)`; RSS samples count as events in the first and third (they are rows of
    /// `events()`), held in a buffer of their own of the same capacity.
    pub fn info(&self) -> (usize, usize, u64, &'static str, usize, u64) {
        (
            self.events.len() + self.rss.len(),
            self.capacity,
            self.dropped + self.rss_dropped,
            self.when_full.name(),
            self.rss.len(),
            self.rss_dropped,
        )
    }

    /// The events as columns (native-endian arrays in bytes) for `rprofile.timeline`:
    /// `(time f64 seconds, event u8, depth u32, thread u16, func u32, caller i32, value1 f64,
    /// value2 f64, functions, threads, types)`, RSS samples merged in by time. `event` is an
    /// index into `rprofile.timeline.EVENT_NAMES` (call, return, c_call, c_return, malloc,
    /// calloc, realloc, free, realloc_free, rss, object_new, object_free); `depth` an object
    /// event's type (an index into `types`); `func` the function running (`u32::MAX`: none, as
    /// for RSS samples); `caller` the function of the enclosing call on the same thread (-1:
    /// none, or not in the buffer); `value1` a memory event's bytes (negative when freed), the
    /// RSS, or an object event's +1 or -1; `value2` the tracked live bytes after a memory
    /// event, or an object event's type's objects made minus freed since the first kept event
    /// (NaN where they do not apply); `functions` are pstats keys `(file, line, name)`,
    /// `threads` `(ident, name)`, `types` the counted types' names.
    /// Times are `origin.1 + (t - origin.0) * factor` seconds.
    pub fn columns<'py>(
        &self,
        py: Python<'py>,
        factor: f64,
        origin: (i64, f64),
    ) -> PyResult<Bound<'py, PyTuple>> {
        let seconds = |t: i64| origin.1 + t.wrapping_sub(origin.0) as f64 * factor;
        const RSS: u8 = 9;
        const OBJECT_CODE: u8 = 10;
        let labels = self.labels(py);
        let mut index: HashMap<usize, u32> = HashMap::new();
        let mut functions: Vec<(String, i64, String)> = Vec::new();
        let mut c = Columns::with_capacity(self.events.len() + self.rss.len());
        let mut stacks: Vec<Vec<u32>> = Vec::new();
        let mut live = self.memory_base;
        let mut rss = self.rss.iter().peekable();
        let mut rss_until = |c: &mut Columns, until: Option<i64>| {
            while let Some(&(t, bytes)) = rss.next_if(|s| until.is_none_or(|u| s.0 <= u)) {
                let v1 = bytes as f64;
                c.push(seconds(t), RSS, 0, u16::MAX, u32::MAX, -1, v1, f64::NAN);
            }
        };
        let mut objects = vec![0i64; self.types.len()];
        for e in &self.events {
            rss_until(&mut c, Some(e.t));
            let memory = timeline::is_memory(e.kind);
            let object = timeline::is_object(e.kind);
            let f = if (memory || object) && e.key == 0 {
                u32::MAX // an allocation outside every profiled call
            } else {
                *index.entry(e.key).or_insert_with(|| {
                    let l = labels.get(&e.key);
                    functions.push(l.map_or_else(
                        || (String::new(), 0, String::new()),
                        |l| (l.file.clone(), l.line, l.name.clone()),
                    ));
                    (functions.len() - 1) as u32
                })
            };
            let th = e.thread as usize;
            if stacks.len() <= th {
                stacks.resize_with(th + 1, Vec::new);
            }
            let stack = &mut stacks[th];
            let t = seconds(e.t);
            if object {
                // value1 one made or freed; value2 the type's count since the first kept event.
                let one = if e.kind == timeline::OBJECT_NEW {
                    1
                } else {
                    -1
                };
                let n = objects.get_mut(e.depth as usize).map_or(0, |n| {
                    *n += one;
                    *n
                });
                let parent = stack.len().checked_sub(2).map_or(-1, |i| stack[i] as i32);
                let code = e.kind + OBJECT_CODE - timeline::OBJECT_NEW;
                c.push(t, code, e.depth, e.thread, f, parent, one as f64, n as f64);
                continue;
            }
            if memory {
                live += e.delta();
                // The function running and its caller, as this lane's stack has them.
                let depth = stack.len().saturating_sub(1) as u32;
                let parent = stack.len().checked_sub(2).map_or(-1, |i| stack[i] as i32);
                let (v1, v2) = (e.delta() as f64, live as f64);
                c.push(t, e.kind + 2, depth, e.thread, f, parent, v1, v2);
                continue;
            }
            let builtin = functions[f as usize].0 == "~";
            let parent = if e.kind == timeline::ENTER {
                let p = stack.last().map_or(-1, |&p| p as i32);
                stack.push(f);
                p
            } else {
                stack.pop();
                stack.last().map_or(-1, |&p| p as i32)
            };
            let code = e.kind + if builtin { 2 } else { 0 };
            c.push(t, code, e.depth, e.thread, f, parent, f64::NAN, f64::NAN);
        }
        rss_until(&mut c, None);
        let threads = self.threads(py);
        (
            PyBytes::new(py, &c.time),
            PyBytes::new(py, &c.kind),
            PyBytes::new(py, &c.depth),
            PyBytes::new(py, &c.thread),
            PyBytes::new(py, &c.func),
            PyBytes::new(py, &c.caller),
            PyBytes::new(py, &c.value1),
            PyBytes::new(py, &c.value2),
            functions,
            threads,
            self.types.clone(),
        )
            .into_pyobject(py)
    }

    /// The call paths of the timeline, as the HTML report draws them (seconds per timer unit:
    /// `factor`).
    pub fn paths(&self, py: Python<'_>, factor: f64) -> crate::report::paths::Paths {
        let labels = self.labels(py);
        let threads: Vec<String> = self.threads(py).into_iter().map(|(_, n)| n).collect();
        let function = |k: usize| {
            labels.get(&k).map_or_else(
                || (String::new(), String::new(), 0),
                |l| (l.name.clone(), l.file.clone(), l.line),
            )
        };
        crate::report::paths::from_timeline(&self.events, &function, &threads, factor)
    }

    /// Writes the Chrome trace (`"chrome"`) or speedscope (`"speedscope"`) file at `path`
    /// (`os.fspath()` of what was given: str or bytes). Fails as `open()` and `write()` do.
    pub fn write(
        &self,
        py: Python<'_>,
        format: &str,
        path: &Bound<'_, PyAny>,
        factor: f64,
        title: &str,
    ) -> PyResult<()> {
        let decoded: PathBuf = py
            .import("os")?
            .call_method1("fsdecode", (path,))?
            .extract()?;
        self.write_to(py, format, &decoded, factor, title)
            .map_err(|e| os_error(py, e, Some(path.clone().unbind())))
    }

    fn write_to(
        &self,
        py: Python<'_>,
        format: &str,
        path: &std::path::Path,
        factor: f64,
        title: &str,
    ) -> std::io::Result<()> {
        let labels = self.labels(py);
        let threads = self.threads(py);
        let missing = Label {
            name: String::new(),
            file: String::new(),
            line: 0,
        };
        let function = |k: usize| {
            let l = labels.get(&k).unwrap_or(&missing);
            (l.name.as_str(), l.file.as_str(), l.line)
        };
        // Chrome's tid is the interpreter's thread id, which (unlike the ident) no later thread
        // reuses: two threads never share a lane.
        let lanes: Vec<(u64, String)> = self
            .tl_threads
            .iter()
            .zip(threads)
            .map(|(&(id, _), (_, name))| (id, name))
            .collect();
        let names = Names {
            function: &function,
            threads: &lanes,
            seconds_per_unit: factor,
            pid: std::process::id(),
        };
        let f = std::fs::File::create(path)?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        match format {
            "chrome" => {
                let counters = chrome::Counters {
                    memory_base: self.memory_base,
                    rss: &self.rss,
                    types: &self.types,
                };
                chrome::write_chrome(&mut w, &self.events, self.dropped, &counters, &names)?
            }
            _ => speedscope::write_speedscope(&mut w, &self.events, &names, title)?,
        }
        w.flush()?;
        Ok(())
    }
}
