//! The sampling profiler's Python face: `SamplerCore` (a run over one process, or over it and
//! its descendants, on a native thread that never takes the GIL) and `SampledProfile` (what it
//! collected, with its outputs; for several processes, their merge and each one's own). The
//! work is in `sampler` (reading, the run) and `samples` (the model and its outputs).

use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};

use crate::py::sampler::{reader_error, runtime_with};
use crate::py::stats::StatsCore;
use crate::pyutil::pickling::{reduce, unpickling_error};
use crate::report::StallsInput;
use crate::sampler::family::{Family, Member, State};
use crate::sampler::pause::Refused;
use crate::sampler::runtime::Symbols;
use crate::sampler::session::{End, Options, Request, Session, MAX_RATE};
use crate::sampler::stacks;
use crate::samples::profile::{Mode, Profile};
use crate::samples::recording::Recording;
use crate::samples::within::within;
use crate::samples::{
    collapsed, flamegraph, lines, merge, pickle, speedscope, stalls, stats as sampled_stats,
    summary,
};
use crate::top;

/// A stack reader error as Python's: OSError with errno, or ValueError for a version or layout
/// that cannot be read.
/// What a run reads: one process, or a process and its descendants.
enum Run {
    One(Box<Session>),
    Family(Box<Family>),
}

impl Run {
    /// A blocking run's hold on its target (the root process), on the sampling thread.
    fn hold(&mut self) -> Result<(), Refused> {
        match self {
            Run::One(session) => session.hold(),
            Run::Family(family) => family.hold(),
        }
    }

    fn run(&mut self, stop: &AtomicBool) -> End {
        match self {
            Run::One(session) => session.run(stop),
            Run::Family(family) => family.run(stop),
        }
    }
}

/// A sampling run over process `pid`: `start()` it, `stop()` it for its `SampledProfile`.
#[pyclass(module = "rprofile._rprofile")]
pub struct SamplerCore {
    run: Option<Run>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<(Run, End)>>,
    /// The run's count of ticks read, shared with its thread.
    reads: Arc<AtomicU64>,
    /// Whether the target is stopped for each read.
    blocking: bool,
    /// Where to ask the run for its recent samples (a run over one process).
    requests: Option<std::sync::mpsc::Sender<Request>>,
    /// Seconds between two reads: how long an answer may take beyond the work.
    interval: f64,
    /// What `top` heads its view with: the target, its Python, the mode, whether CPU states
    /// are read.
    pid: i32,
    version: Option<(u8, u8)>,
    mode: Mode,
    cpu_states: bool,
}

#[pymethods]
impl SamplerCore {
    /// Finds the runtime of `pid` and checks its stacks can be read (one read); raises
    /// OSError (ProcessLookupError, PermissionError) or ValueError (not Python, or a version
    /// whose stacks cannot be read). `subprocesses`: also every Python process it starts, and
    /// those start, found as they start. `blocking`: every thread of each process read is
    /// stopped for each read (ptrace; `start()` raises PermissionError when it may not be).
    /// `record_last`: keep the samples of the last this many seconds only (a flight recorder).
    #[new]
    /// `record_all`: keep every sample in time order (for the stalls).
    #[pyo3(signature = (pid, rate, mode, duration=None, cpu_states=false, all_threads=true,
                        subprocesses=false, blocking=false, record_last=None, record_all=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        pid: i32,
        rate: f64,
        mode: &str,
        duration: Option<f64>,
        cpu_states: bool,
        all_threads: bool,
        subprocesses: bool,
        blocking: bool,
        record_last: Option<f64>,
        record_all: bool,
    ) -> PyResult<SamplerCore> {
        if !(rate.is_finite() && rate > 0.0 && rate <= MAX_RATE) {
            return Err(PyValueError::new_err(format!(
                "rate must be a number of samples a second in (0, {MAX_RATE}], not {rate}"
            )));
        }
        let mode = Mode::parse(mode).ok_or_else(|| {
            PyValueError::new_err(format!("mode must be 'wall', 'cpu' or 'gil', not {mode:?}"))
        })?;
        let duration = match duration {
            None => None,
            Some(d) if d.is_finite() && d >= 0.0 => Some(Duration::from_secs_f64(d)),
            Some(d) => {
                return Err(PyValueError::new_err(format!(
                    "duration must be a number of seconds >= 0, not {d}"
                )))
            }
        };
        if let Some(s) = record_last {
            if !(s.is_finite() && s > 0.0) {
                return Err(PyValueError::new_err(format!(
                    "record_last must be a number of seconds > 0, not {s}"
                )));
            }
        }
        if subprocesses && record_all {
            return Err(PyValueError::new_err(
                "the stalls of a whole run (stall) are found in one process's recording: they \
                 do not go with subprocesses",
            ));
        }
        let mut symbols = Symbols::default();
        let rt = runtime_with(py, pid, &mut symbols)?;
        let options = Options {
            rate,
            mode,
            duration,
            cpu_states: cpu_states || mode == Mode::Cpu,
            all_threads,
            blocking,
            record_last,
            record_all,
        };
        let mut session = Session::new(&rt, options).map_err(|e| reader_error(py, e))?;
        // One read now, so that a process we may not read fails here, not on the thread; one
        // whose interpreter has no thread yet (just started) is not sampled yet either.
        let threads = py
            .detach(|| session.check())
            .map_err(|e| reader_error(py, e))?;
        if threads == 0 {
            return Err(reader_error(py, stacks::not_ready(pid)));
        }
        let (run, requests) = match subprocesses {
            true => {
                let mut family = Box::new(Family::new(session, &rt, options, symbols));
                let requests = family.requests();
                (Run::Family(family), requests)
            }
            false => {
                let requests = session.requests();
                (Run::One(Box::new(session)), requests)
            }
        };
        let reads = match &run {
            Run::One(session) => Arc::clone(&session.reads),
            Run::Family(family) => Arc::clone(&family.reads),
        };
        Ok(SamplerCore {
            run: Some(run),
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            reads,
            blocking,
            requests: Some(requests),
            interval: 1.0 / rate,
            pid,
            version: rt.version,
            mode,
            cpu_states: options.cpu_states,
        })
    }

    /// Runs `rprofile top`'s full-screen view of this run (started) on the terminal until `q`
    /// or the run's end: "quit" or "ended", and the files its `w` wrote. `window`: the seconds
    /// of its "last seconds" (the run must record at least that many); `folder`: where `w`
    /// writes; `stall`: the least length (seconds) of the stalls shown as they happen (the run
    /// must keep a recording); `dump`: called by the `d` key, it writes a dump of the threads'
    /// stacks and returns its path. OSError when the terminal cannot be driven.
    #[pyo3(signature = (title, window, folder, stall=None, dump=None))]
    #[allow(clippy::too_many_arguments)]
    fn top(
        &self,
        py: Python<'_>,
        title: String,
        window: f64,
        folder: PathBuf,
        stall: Option<f64>,
        dump: Option<Py<PyAny>>,
    ) -> PyResult<(&'static str, Vec<PathBuf>)> {
        let Some(requests) = self.requests.clone() else {
            return Err(PyValueError::new_err("top watches a run over one process"));
        };
        let options = top::Options {
            title,
            pid: self.pid,
            version: self.version,
            rate: 1.0 / self.interval,
            mode: self.mode,
            cpu_states: self.cpu_states,
            blocking: self.blocking,
            window,
            folder,
            stall,
        };
        let thread = self.thread.as_ref();
        let running = || thread.is_some_and(|t| !t.is_finished());
        // The dump is Python's (`rprofile dump`'s text): called with the GIL taken again.
        let write_dump = || -> Result<PathBuf, String> {
            let Some(dump) = &dump else {
                return Err("no dump here".into());
            };
            Python::attach(|py| {
                dump.call0(py)
                    .and_then(|path| path.extract::<PathBuf>(py))
                    .map_err(|e| e.to_string())
            })
        };
        let (outcome, written) = py
            .detach(|| top::run(&requests, &running, &write_dump, &options))
            .map_err(PyErr::from)?;
        let how = match outcome {
            top::Outcome::Quit => "quit",
            top::Outcome::Ended => "ended",
        };
        Ok((how, written))
    }

    /// While the run goes on: the profile of its last `seconds` (`None`: all it kept; without
    /// a recording, everything so far), taken between two reads. RuntimeError once it ended.
    #[pyo3(signature = (seconds=None))]
    fn recent(&self, py: Python<'_>, seconds: Option<f64>) -> PyResult<SampledProfile> {
        let ended = || PyRuntimeError::new_err("the run has ended: stop() it for its samples");
        let Some(requests) = self.requests.as_ref().filter(|_| self.running()) else {
            return Err(ended());
        };
        let (tx, rx) = std::sync::mpsc::channel();
        requests
            .send(Request {
                seconds,
                whole: false,
                stalls: None,
                reply: tx,
            })
            .map_err(|_| ended())?;
        let wait = Duration::from_secs_f64(self.interval.min(60.0) + 5.0);
        let profile = py
            .detach(move || rx.recv_timeout(wait))
            .map_err(|_| ended())?
            .profile;
        Ok(SampledProfile::of(profile, End::Stopped))
    }

    /// Starts sampling on a native thread. A blocking run first holds its target there (the
    /// thread that stops it must be the one that holds it): PermissionError, with why, when
    /// it may not, and no sampling.
    fn start(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(mut run) = self.run.take() else {
            return Err(PyRuntimeError::new_err("this sampler has already run"));
        };
        let stop = Arc::clone(&self.stop);
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("rprofile-sampler".into())
            .spawn(move || {
                let held = run.hold();
                let refused = held.is_err();
                let _ = held_tx.send(held);
                let end = match refused {
                    true => End::Stopped,
                    false => run.run(&stop),
                };
                (run, end)
            })
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start the sampler: {e}")))?;
        match py.detach(move || held_rx.recv()) {
            Ok(Ok(())) => {
                self.thread = Some(thread);
                Ok(())
            }
            Ok(Err(Refused(why))) => {
                let _ = py.detach(|| thread.join());
                Err(pyo3::exceptions::PyPermissionError::new_err((
                    libc::EPERM,
                    why,
                )))
            }
            Err(_) => Err(PyRuntimeError::new_err(
                "the sampler's thread ended at its start",
            )),
        }
    }

    /// Whether the target is stopped for each read.
    #[getter]
    fn blocking(&self) -> bool {
        self.blocking
    }

    /// Ticks read so far (with child processes: ticks at which any was read).
    #[getter]
    fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Whether the run is going on (false once it ended by itself: duration, target exited).
    #[getter]
    fn running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Ends the run and returns what it collected.
    fn stop(&mut self, py: Python<'_>) -> PyResult<SampledProfile> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(thread) = self.thread.take() else {
            return Err(PyRuntimeError::new_err("this sampler is not running"));
        };
        let (run, end) = py
            .detach(|| thread.join())
            .map_err(|_| PyRuntimeError::new_err("the sampler's thread panicked"))?;
        let mut sampled = match run {
            Run::One(session) => {
                let (profile, recorded) = session.into_parts();
                let mut sampled = SampledProfile::of(profile, end);
                sampled.recorded = recorded.map(Arc::new);
                sampled
            }
            Run::Family(family) => py.detach(|| SampledProfile::of_family(*family, end)),
        };
        sampled.blocking = self.blocking;
        Ok(sampled)
    }
}

/// `(pid, ppid, argv, end, exit_status, profile)`.
type ProcessRow = (
    i32,
    i32,
    Vec<String>,
    String,
    Option<i32>,
    Option<SampledProfile>,
);

/// `(thread index, thread title, start, duration, samples, [(name, filename, line, samples)])`.
type StallRow = (u32, String, f64, f64, u64, Vec<(String, String, i32, u64)>);

/// `(native_id, ident, name, samples, on_cpu, idle, dropped)`.
type ThreadRow = (u64, u64, Option<String>, u64, u64, u64, u64);

impl Drop for SamplerCore {
    /// A sampler dropped while running stops its thread (which then ends by itself).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One process of a run over several: its pid, command line, how its sampling ended (or why
/// it was never read), and its samples (`None`: never read).
struct Process {
    pid: i32,
    ppid: i32,
    argv: Vec<String>,
    /// For a process never read, `Failed` with why.
    end: End,
    exit_status: Option<i32>,
    profile: Option<Arc<Profile>>,
}

/// What a sampling run collected: for several processes, their merge, and each one's own.
#[pyclass(module = "rprofile._rprofile", frozen)]
pub struct SampledProfile {
    profile: Arc<Profile>,
    end: End,
    processes: Vec<Process>,
    /// Processes found beyond the most that are followed, not read.
    unfollowed: u64,
    /// The target was stopped for each read (not kept in a pickle).
    blocking: bool,
    /// A flight recorder's whole profile and recording, for windows of it (not pickled).
    recorded: Option<Arc<(Profile, Recording)>>,
}

impl SampledProfile {
    fn of(profile: Profile, end: End) -> SampledProfile {
        SampledProfile {
            profile: Arc::new(profile),
            end,
            processes: Vec::new(),
            unfollowed: 0,
            blocking: false,
            recorded: None,
        }
    }

    /// The family's merge (each process's threads under its pid), and its processes.
    fn of_family(family: Family, end: End) -> SampledProfile {
        let unfollowed = family.unfollowed;
        let interval = 1.0 / family.options().rate;
        let mode = family.options().mode;
        let processes: Vec<Process> = family
            .into_members()
            .into_iter()
            .map(|m: Member| Process {
                pid: m.pid,
                ppid: m.ppid,
                argv: m.argv.clone(),
                exit_status: m.exit_status,
                end: match &m.state {
                    State::Ended(end) => end.clone(),
                    State::Ignored(why) => End::Failed(why.clone()),
                    // A run ends each of its processes when it ends.
                    State::Sampling | State::Waiting { .. } => end.clone(),
                },
                profile: m.into_profile().map(Arc::new),
            })
            .collect();
        let parts = processes
            .iter()
            .filter_map(|p| Some((p.pid as u32, p.profile.as_deref()?)));
        let merged = merge::merge(interval, mode, parts);
        SampledProfile {
            profile: Arc::new(merged),
            end,
            processes,
            unfollowed,
            blocking: false,
            recorded: None,
        }
    }

    /// The samples (for the HTML report).
    pub(crate) fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The stalls of `min_seconds` or longer as the HTML report lists them.
    pub(crate) fn stalls_input(&self, min_seconds: f64) -> PyResult<StallsInput> {
        let (profile, found) = self.found_stalls(min_seconds)?;
        Ok(StallsInput::new(profile, &found, min_seconds))
    }

    /// The stalls of the run's recording, with the profile they name.
    fn found_stalls(&self, min_seconds: f64) -> PyResult<(&Profile, Vec<stalls::Stall>)> {
        if !(min_seconds.is_finite() && min_seconds > 0.0) {
            return Err(PyValueError::new_err(format!(
                "a stall's least length must be a number of seconds > 0, not {min_seconds}"
            )));
        }
        let Some(recorded) = &self.recorded else {
            return Err(PyValueError::new_err(
                "this run kept no recording in time order: Sampler(stall=...) or \
                 Sampler(record_last=...) keeps one",
            ));
        };
        let (profile, recording) = &**recorded;
        Ok((profile, stalls::stalls(profile, recording, min_seconds)))
    }

    /// Writes a file at `path` (str, bytes or PathLike) with `write`; OSError as `open()`.
    fn write_file(
        &self,
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        write: impl FnOnce(&Profile, &mut BufWriter<std::fs::File>) -> std::io::Result<()> + Send,
    ) -> PyResult<()> {
        let profile = &self.profile;
        crate::pyutil::oserror::write_file(py, path, |w| write(profile, w))
    }
}

#[pymethods]
impl SampledProfile {
    /// The stats as `rprofile.Stats` holds them, marked sampled (Python 3.15's
    /// `("__sampled__",)` key), so that they print with 3.15's sampled headings.
    fn stats_core(&self, py: Python<'_>) -> StatsCore {
        let model = py.detach(|| {
            let mut model = sampled_stats::model(&self.profile);
            model.sampled = true;
            model
        });
        StatsCore::of_model(model)
    }

    /// Writes the stats file, unmarked, so that every pstats reads it.
    fn dump_stats(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_file(py, path, |p, w| sampled_stats::write_stats(w, p))
    }

    fn write_collapsed(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        self.write_file(py, path, |p, w| collapsed::write_collapsed(w, p))
    }

    fn write_speedscope(
        &self,
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        title: &str,
    ) -> PyResult<()> {
        self.write_file(py, path, |p, w| speedscope::write_speedscope(w, p, title))
    }

    /// The flame graph SVG: a frame per function, or per function and line with `lines`.
    #[pyo3(signature = (path, program, lines=false))]
    fn write_flamegraph(
        &self,
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        program: &str,
        lines: bool,
    ) -> PyResult<()> {
        let by = if lines {
            collapsed::Frames::Lines
        } else {
            collapsed::Frames::Functions
        };
        self.write_file(py, path, |p, w| {
            flamegraph::write_flamegraph(w, p, program, by)
        })
    }

    /// The per-thread line report, `limit` lines per thread, fitted to `width` columns.
    #[pyo3(signature = (width=100, limit=20))]
    fn lines_report(&self, width: u16, limit: usize) -> PyResult<String> {
        let report = lines::line_report(&self.profile, Some(limit));
        let mut out = Vec::new();
        lines::write_lines(&mut out, &report, width)?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The samples of one call: the stacks of the thread `ident` cut below the innermost frame
    /// of the function `name` of `filename` (its samples outside it dropped); other threads'
    /// kept.
    fn within(&self, py: Python<'_>, ident: u64, filename: &str, name: &str) -> SampledProfile {
        let profile = &self.profile;
        let mut sampled = SampledProfile::of(
            py.detach(|| within(profile, ident, filename, name)),
            self.end.clone(),
        );
        sampled.blocking = self.blocking;
        sampled
    }

    /// A flight recorder's samples of its last `seconds` (`None`: all it kept); ValueError for a
    /// run that kept no recording.
    #[pyo3(signature = (seconds=None))]
    fn recent(&self, seconds: Option<f64>) -> PyResult<SampledProfile> {
        let Some(recorded) = &self.recorded else {
            return Err(PyValueError::new_err(
                "this run kept no recording of its recent samples: Sampler(record_last=...) \
                 keeps one",
            ));
        };
        let (profile, recording) = &**recorded;
        let mut sampled = SampledProfile::of(recording.window(profile, seconds), self.end.clone());
        sampled.blocking = self.blocking;
        Ok(sampled)
    }

    /// The stalls of `min_seconds` or longer of a run that kept a recording: `[(thread index,
    /// thread title, start, duration, samples, [(function name, filename, line, samples)])]`,
    /// in the order they began. ValueError for a run that kept none.
    fn stalls(&self, min_seconds: f64) -> PyResult<Vec<StallRow>> {
        let (profile, found) = self.found_stalls(min_seconds)?;
        Ok(found
            .into_iter()
            .map(|s| {
                let frames = s
                    .frames
                    .iter()
                    .filter_map(|&(frame, n)| {
                        let line = profile.frames.get_index(frame as usize)?.line;
                        let f = profile.function_of(frame)?;
                        Some((f.name.clone(), f.filename.clone(), line, n))
                    })
                    .collect();
                let title = profile.thread_title(s.thread);
                (s.thread, title, s.start, s.duration, s.samples, frames)
            })
            .collect())
    }

    /// The stalls of `min_seconds` or longer as text (see `samples::stalls::report`).
    #[pyo3(signature = (min_seconds, per_stall=5))]
    fn stalls_report(&self, min_seconds: f64, per_stall: usize) -> PyResult<String> {
        let (profile, found) = self.found_stalls(min_seconds)?;
        Ok(stalls::report(profile, &found, min_seconds, per_stall))
    }

    /// Bytes its recording in time order holds (0 without one): a flight recorder's stay within
    /// its window's worth, twice at most while its buffers grow.
    #[getter]
    fn recording_bytes(&self) -> usize {
        self.recorded.as_ref().map_or(0, |r| r.1.bytes())
    }

    /// Whether the run kept its samples in time order (for windows and stalls).
    #[getter]
    fn recorded(&self) -> bool {
        self.recorded.is_some()
    }

    /// The seconds a flight recorder kept (None for a run that kept everything).
    #[getter]
    fn record_last(&self) -> Option<f64> {
        self.recorded.as_ref().and_then(|r| r.1.keeps())
    }

    /// One line: samples taken of asked, threads, dropped and cut stacks, duration; whether
    /// the target was stopped for each read, or that it could be when many reads were torn.
    fn summary(&self) -> String {
        summary::summary(&self.profile) + &summary::reads_note(&self.profile, self.blocking)
    }

    /// Whether the target was stopped for each read.
    #[getter]
    fn blocking(&self) -> bool {
        self.blocking
    }

    /// The per-thread table (name, samples, on a CPU, idle, dropped), fitted to `width`.
    #[pyo3(signature = (width=100))]
    fn threads_table(&self, width: u16) -> String {
        summary::threads_table(&self.profile, width)
    }

    /// `[(native_id, ident, name, samples, on_cpu, idle, dropped)]`, first seen first.
    #[getter]
    fn threads(&self) -> Vec<ThreadRow> {
        self.profile
            .threads
            .iter()
            .map(|t| {
                (
                    t.native_id,
                    t.ident,
                    t.name.clone(),
                    t.samples,
                    t.on_cpu,
                    t.idle,
                    t.dropped,
                )
            })
            .collect()
    }

    #[getter]
    fn interval(&self) -> f64 {
        self.profile.interval
    }

    #[getter]
    fn mode(&self) -> &'static str {
        self.profile.mode.name()
    }

    /// `(asked, taken, dropped, truncated)`.
    #[getter]
    fn counts(&self) -> (u64, u64, u64, u64) {
        let p = &self.profile;
        (p.asked, p.taken, p.dropped(), p.truncated)
    }

    #[getter]
    fn duration(&self) -> f64 {
        self.profile.duration
    }

    /// Why the run ended: "stopped", "duration", "exited", or "failed: <error>".
    #[getter]
    fn end(&self) -> String {
        end_name(&self.end)
    }

    /// A run over several processes: `[(pid, ppid, argv, end, exit_status, profile)]` in the
    /// order found (the root first), where `argv` is its command line as last read, `end`
    /// says why its sampling ended (as `end`), `exit_status` is its wait status when it was seen exited before it was reaped (else
    /// None), and `profile` is its own `SampledProfile`; for a process never read, `end` says
    /// why and `profile` is None. Empty for a run over one process.
    #[getter]
    fn processes(&self) -> Vec<ProcessRow> {
        self.processes
            .iter()
            .map(|p| {
                let profile = p.profile.as_ref().map(|profile| SampledProfile {
                    profile: Arc::clone(profile),
                    end: p.end.clone(),
                    processes: Vec::new(),
                    unfollowed: 0,
                    blocking: self.blocking,
                    recorded: None,
                });
                let end = match (&profile, &p.end) {
                    (None, End::Failed(why)) => why.clone(),
                    (_, end) => end_name(end),
                };
                (p.pid, p.ppid, p.argv.clone(), end, p.exit_status, profile)
            })
            .collect()
    }

    /// Processes found beyond the most a run follows (1024), not read.
    #[getter]
    fn unfollowed(&self) -> u64 {
        self.unfollowed
    }

    /// Pickles as the samples and the end (`samples::pickle`'s payload); a run over several
    /// processes as their merge, each thread's pid kept (not `processes`).
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let me = slf.get();
        let end = me.end();
        let bytes = slf.py().detach(|| pickle::to_bytes(&me.profile, &end));
        reduce(slf.as_any(), &bytes)
    }

    /// The samples of a `__reduce__` payload; `pickle.UnpicklingError` for anything else.
    #[classmethod]
    fn _from_pickle(cls: &Bound<'_, PyType>, data: &[u8]) -> PyResult<SampledProfile> {
        let py = cls.py();
        let (profile, end) = py
            .detach(|| pickle::from_bytes(data))
            .map_err(|e| unpickling_error(py, e))?;
        let end = match end.as_str() {
            "stopped" => End::Stopped,
            "duration" => End::Duration,
            "exited" => End::Exited,
            other => match other.strip_prefix("failed: ") {
                Some(why) => End::Failed(why.into()),
                None => {
                    return Err(unpickling_error(
                        py,
                        crate::stats::payload::Error(format!("unknown end {other:?}")),
                    ))
                }
            },
        };
        Ok(SampledProfile::of(profile, end))
    }
}

fn end_name(end: &End) -> String {
    match end {
        End::Stopped => "stopped".into(),
        End::Duration => "duration".into(),
        End::Exited => "exited".into(),
        End::Failed(why) => format!("failed: {why}"),
    }
}
