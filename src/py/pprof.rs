//! The pprof export's Python face: `_write_pprof`, behind `Stats.dump_pprof`,
//! `Profile.dump_pprof`, `Sampler.dump_pprof` and the command lines' `--pprof`. The work is in
//! `pprof`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::pprof;
use crate::py::report::CallPaths;
use crate::py::sampling::SampledProfile;
use crate::py::stats::StatsCore;
use crate::pyutil::oserror::write_file;
use crate::stats::model::Model;

/// Writes the gzipped pprof profile of one of: a timeline's call paths (`paths`), a sampling
/// run (`sampled`), stats (`stats`, a `StatsCore`: a sample per caller edge), or each thread's
/// stats (`threads`: `(name, StatsCore)`, each sample labelled with its thread), at `path`,
/// with `comments` (e.g. what was profiled) among the profile's comments.
#[pyfunction]
#[pyo3(signature = (path, stats=None, *, sampled=None, paths=None, threads=Vec::new(),
                    comments=Vec::new()))]
pub fn _write_pprof(
    py: Python<'_>,
    path: &Bound<'_, PyAny>,
    stats: Option<PyRef<'_, StatsCore>>,
    sampled: Option<PyRef<'_, SampledProfile>>,
    paths: Option<PyRef<'_, CallPaths>>,
    threads: Vec<(String, PyRef<'_, StatsCore>)>,
    comments: Vec<String>,
) -> PyResult<()> {
    let comments = &comments;
    if !threads.is_empty() {
        let threads: Vec<(Option<&str>, &Model)> = threads
            .iter()
            .map(|(name, core)| (Some(name.as_str()), core.model()))
            .collect();
        return write_file(py, path, |w| {
            pprof::stats::write_threads(w, &threads, comments).map(drop)
        });
    }
    match (paths.as_ref(), sampled.as_ref(), stats.as_ref()) {
        (Some(p), _, _) => {
            let p = &p.paths;
            write_file(py, path, |w| pprof::paths::write(w, p, comments).map(drop))
        }
        (None, Some(s), _) => {
            let p = s.profile();
            write_file(py, path, |w| {
                pprof::sampled::write(w, p, comments).map(drop)
            })
        }
        (None, None, Some(s)) => {
            let m = s.model();
            write_file(py, path, |w| pprof::stats::write(w, m, comments).map(drop))
        }
        (None, None, None) => Err(PyValueError::new_err(
            "a pprof profile needs stats, samples or call paths",
        )),
    }
}
