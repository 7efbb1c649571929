//! The HTML report's Python face: `_write_report` (behind `Stats.to_html`, `Sampler.to_html`,
//! `Profile.to_html` and the command lines' `--html`), `_compare_table` (`--compare` in the
//! terminal) and `CallPaths`, a timeline's call paths handed from the profiler to the report.
//! The work is in `report`.

use std::borrow::Cow;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::py::sampling::SampledProfile;
use crate::py::stats::StatsCore;
use crate::pyutil::oserror::write_file;
use crate::report::paths::Paths;
use crate::report::{
    compare, pairs, write_html, Dropped, FuncKey, Inputs, MemoryRow, SortColumn, ThreadInput,
    TypeRow,
};
use crate::samples::stats as sampled_stats;
use crate::stats::model::Model;

/// The call paths of a profiler's timeline (`Profile._timeline_paths()`), for a report.
#[pyclass(module = "rprofile._rprofile", frozen)]
pub struct CallPaths {
    pub(crate) paths: Paths,
}

#[pymethods]
impl CallPaths {
    /// Distinct call paths (nodes of the tree).
    fn __len__(&self) -> usize {
        self.paths.tree.nodes.len() - 1
    }
}

/// `(file, line, name, allocations, allocated, freed, net, peak)`.
type MemoryTuple = (String, i64, String, u64, u64, u64, i64, i64);

/// `(file, line, function, created, alive)`: a function that made objects of a type.
type MakerTuple = (String, i64, String, u64, u64);

/// `(alive, [(file, line, function), ...])`: a call stack, outermost first, that made objects
/// still alive.
type StackTuple = (u64, Vec<FuncKey>);

/// `(name, created, destroyed, peak, peak_time, older_destroyed, makers, stacks)`.
type TypeTuple = (
    String,
    u64,
    u64,
    u64,
    f64,
    u64,
    Vec<MakerTuple>,
    Vec<StackTuple>,
);

/// Writes the HTML report of `stats` (a `StatsCore`; or, with `sampled` alone, the samples'
/// stats) at `path`. `before` is the profile compared with; `threads` each thread's stats;
/// `memory` rows of `Profile.memory_stats()`; `types` rows of `Profile.types_stats()`; `paths` a timeline's call paths; `sort` the
/// column the table opens sorted by; `dropped` `(kept, dropped, when_full)`: the events of the
/// timeline of `paths` that a full buffer dropped; `stall` the least length (seconds) of the
/// stalls of `sampled` listed. OSError as `open()` and `write()` raise it.
#[pyfunction]
#[pyo3(signature = (path, stats=None, title="", files=Vec::new(), *, before=None, before_title="",
                    sampled=None, threads=Vec::new(), memory=Vec::new(), types=Vec::new(), paths=None,
                    dropped=None, sort="tottime", stall=None))]
#[allow(clippy::too_many_arguments)]
pub fn _write_report(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    stats: Option<PyRef<'_, StatsCore>>,
    title: &str,
    files: Vec<String>,
    before: Option<PyRef<'_, StatsCore>>,
    before_title: &str,
    sampled: Option<PyRef<'_, SampledProfile>>,
    threads: Vec<(String, PyRef<'_, StatsCore>)>,
    memory: Vec<MemoryTuple>,
    types: Vec<TypeTuple>,
    paths: Option<PyRef<'_, CallPaths>>,
    dropped: Option<(u64, u64, String)>,
    sort: &str,
    stall: Option<f64>,
) -> PyResult<()> {
    let sort = SortColumn::parse(sort).ok_or_else(|| {
        let names: Vec<&str> = SortColumn::ALL.iter().map(|c| c.name()).collect();
        PyValueError::new_err(format!(
            "sort must be one of {}, not {sort:?}",
            names.join(", ")
        ))
    })?;
    let profile = sampled.as_ref().map(|s| s.profile());
    let own_model;
    let model: &Model = match (&stats, profile) {
        (Some(s), _) => s.model(),
        (None, Some(p)) => {
            own_model = {
                let mut m = sampled_stats::model(p);
                m.sampled = true;
                m
            };
            &own_model
        }
        (None, None) => return Err(PyValueError::new_err("a report needs stats or samples")),
    };
    let mut inputs = Inputs::new(model, title);
    inputs.files = files;
    inputs.sampled = profile;
    inputs.stalls = match (&sampled, stall) {
        (Some(s), Some(min)) => Some(s.stalls_input(min)?),
        _ => None,
    };
    inputs.paths = paths.as_ref().map(|p| &p.paths);
    inputs.dropped = dropped.map(|(kept, dropped, when_full)| Dropped {
        kept,
        dropped,
        keep_newest: when_full != "keep_oldest",
    });
    inputs.before = before.as_ref().map(|b| b.model());
    inputs.before_title = before_title.to_string();
    inputs.sort = sort;
    inputs.threads = threads
        .iter()
        .map(|(name, core)| ThreadInput {
            name: name.clone(),
            model: Cow::Borrowed(core.model()),
            index: None,
            samples: None,
        })
        .collect();
    inputs.memory = memory
        .into_iter()
        .map(
            |(file, line, name, allocations, allocated, freed, net, peak)| MemoryRow {
                file,
                line,
                name,
                allocations,
                allocated,
                freed,
                net,
                peak,
            },
        )
        .collect();
    inputs.types = types
        .into_iter()
        .map(
            |(name, created, destroyed, peak, peak_time, older_destroyed, makers, stacks)| {
                TypeRow {
                    name,
                    created,
                    destroyed,
                    peak,
                    peak_time,
                    older_destroyed,
                    makers,
                    stacks,
                }
            },
        )
        .collect();
    let inputs = &inputs;
    write_file(py, path, |w| write_html(w, inputs))
}

/// The terminal table of the `limit` largest changes from `before` to `after`, fitted to
/// `width` columns, and a line saying how the functions were paired.
#[pyfunction]
#[pyo3(signature = (before, after, limit=30, width=100))]
pub fn _compare_table(
    before: PyRef<'_, StatsCore>,
    after: PyRef<'_, StatsCore>,
    limit: usize,
    width: u16,
) -> String {
    let pairing = pairs::pair(before.model(), after.model());
    let changes = compare::changes(before.model(), after.model(), &pairing);
    format!(
        "{}\n{}",
        compare::table(&changes, limit, width),
        wrapped(&pairing.describe(), usize::from(width))
    )
}

/// `text` broken at spaces into lines of at most `width` characters where it can be (a word
/// longer than that, a long path, stays whole on a line of its own).
fn wrapped(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    let mut line = 0usize;
    for word in text.split(' ') {
        let n = word.chars().count();
        if line > 0 && line + 1 + n > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += n;
    }
    out
}
