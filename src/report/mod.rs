//! The HTML report (issue 27): one self-contained file for any profile, with a sortable table
//! of every function, each function's callers and callees, flame graphs (real call paths when
//! the profile has them, else estimated from the caller graph), sampled line heat, threads,
//! memory, and the comparison of two profiles. Python-free:
//!
//! - `data`: the JSON the page reads (columns of the stats model); `funcs` its function table;
//!   `json` the writer;
//! - `tree`, `estimate`, `paths`: call paths as trees (estimated, sampled, from a timeline);
//!   `graphs` chooses the flame graphs and `flame` draws them (inferno);
//! - `heat`: a sampling run's line heat, with the sources; `compare`: two profiles side by side
//!   (also as a terminal table), their functions paired by `pairs`;
//! - `time`: a sampling run's samples (or a timeline's paths, `path_time`) by time, for the
//!   time view;
//! - `page`: the HTML around the data (`page.html`, `page.css`, `page.js`).

pub mod compare;
mod cycles;
mod data;
mod estimate;
pub mod flame;
mod funcs;
pub mod graphs;
pub mod heat;
mod json;
mod page;
pub mod pairs;
mod path_time;
pub mod paths;
mod time;
mod tree;

use std::borrow::Cow;
use std::io::{self, Write};

use crate::samples::profile::{Profile, Thread};
use crate::samples::stalls::{self, Stall};
use crate::samples::stats as sampled_stats;
use crate::samples::summary;
use crate::stats::model::Model;

use json::Json;
use paths::Paths;

/// A function's memory figures (`Profile(memory=True)`), bytes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryRow {
    pub file: String,
    pub line: i64,
    pub name: String,
    pub allocations: u64,
    pub allocated: u64,
    pub freed: u64,
    pub net: i64,
    pub peak: i64,
}

/// A function as pstats keys it: `(file, line, name)`.
pub type FuncKey = (String, i64, String);

/// One counted type (`Profile(types=True)`): its objects made while profiling, and the
/// functions that made them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypeRow {
    pub name: String,
    pub created: u64,
    pub destroyed: u64,
    pub peak: u64,
    /// Seconds after tracking started when `peak` was first reached.
    pub peak_time: f64,
    /// Objects made before tracking started and destroyed while it ran.
    pub older_destroyed: u64,
    /// `(file, line, name, created, alive)` of each function that made some.
    pub makers: Vec<(String, i64, String, u64, u64)>,
    /// `(alive, stack)`: the call stacks (`(file, line, name)`, outermost first) that made the
    /// objects still alive, most first.
    pub stacks: Vec<(u64, Vec<FuncKey>)>,
}

/// What a full timeline buffer left out of the recorded call paths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dropped {
    /// Events kept and dropped (calls, returns, memory events).
    pub kept: u64,
    pub dropped: u64,
    /// `when_full="keep_newest"` (the oldest were overwritten) or `"keep_oldest"`.
    pub keep_newest: bool,
}

/// One thread's stats (and, sampled, its counts).
pub struct ThreadInput<'a> {
    pub name: String,
    pub model: Cow<'a, Model>,
    /// Index of the thread in the sampling run.
    pub index: Option<u32>,
    pub samples: Option<Thread>,
}

/// The column the page's table opens sorted by: the first sort key of the stats it shows (or
/// of the command line's `-s`), as pstats' printed table is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortColumn {
    Calls,
    #[default]
    Tottime,
    Cumtime,
    Name,
}

impl SortColumn {
    /// By the column's name in the page's data: `ncalls`, `tottime`, `cumtime`, `name`.
    pub fn parse(name: &str) -> Option<SortColumn> {
        SortColumn::ALL.into_iter().find(|c| c.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            SortColumn::Calls => "ncalls",
            SortColumn::Tottime => "tottime",
            SortColumn::Cumtime => "cumtime",
            SortColumn::Name => "name",
        }
    }

    pub const ALL: [SortColumn; 4] = [
        SortColumn::Calls,
        SortColumn::Tottime,
        SortColumn::Cumtime,
        SortColumn::Name,
    ];
}

/// The stalls of a sampling run (`samples::stalls`) of `min_seconds` or longer, as listed.
pub struct StallsInput {
    pub min_seconds: f64,
    /// The run's mode, and how a thread ran through a stall in it ("on a CPU", ...).
    pub mode: String,
    pub what: String,
    pub rows: Vec<StallInput>,
}

/// One stall: when it began and how long it lasted (seconds), its thread, its samples, and
/// its innermost frames heaviest first.
pub struct StallInput {
    pub start: f64,
    pub duration: f64,
    pub thread: String,
    /// The thread's index in the run.
    pub thread_index: u32,
    pub samples: u64,
    pub frames: Vec<StallFrame>,
}

/// A function (as the stats key it: file, first line, name) at a line, and its samples.
pub struct StallFrame {
    pub file: String,
    pub first_line: i64,
    pub name: String,
    pub line: i32,
    pub samples: u64,
}

impl StallsInput {
    /// The stalls `found` of `min_seconds` or longer in `profile` (whose threads and frames
    /// they name), as the report lists them.
    pub fn new(profile: &Profile, found: &[Stall], min_seconds: f64) -> StallsInput {
        let rows = found
            .iter()
            .map(|s| StallInput {
                start: s.start,
                duration: s.duration,
                thread: profile.thread_title(s.thread),
                thread_index: s.thread,
                samples: s.samples,
                frames: s
                    .frames
                    .iter()
                    .filter_map(|&(frame, samples)| {
                        let line = profile.frames.get_index(frame as usize)?.line;
                        let f = profile.function_of(frame)?;
                        Some(StallFrame {
                            file: f.filename.clone(),
                            first_line: f.first_line,
                            name: f.name.clone(),
                            line,
                            samples,
                        })
                    })
                    .collect(),
            })
            .collect();
        StallsInput {
            min_seconds,
            mode: profile.mode.name().to_string(),
            what: stalls::what(profile.mode).to_string(),
            rows,
        }
    }
}

/// Everything a report shows.
pub struct Inputs<'a> {
    /// The stats (for a sampling run, its model).
    pub model: &'a Model,
    pub title: String,
    /// What the stats were read from.
    pub files: Vec<String>,
    /// The sampling run, when the stats are one's: its paths, threads and lines.
    pub sampled: Option<&'a Profile>,
    /// Real call paths (a timeline's).
    pub paths: Option<&'a Paths>,
    /// The events of the timeline of `paths` that a full buffer dropped, when it did.
    pub dropped: Option<Dropped>,
    pub threads: Vec<ThreadInput<'a>>,
    pub memory: Vec<MemoryRow>,
    /// Objects by type, when they were counted.
    pub types: Vec<TypeRow>,
    /// A sampling run's stalls, when they were looked for.
    pub stalls: Option<StallsInput>,
    /// The profile to compare with (before), and its name.
    pub before: Option<&'a Model>,
    pub before_title: String,
    pub sort: SortColumn,
    /// Reads a source file for the line heat (`heat::read_source`).
    pub read_source: &'a (dyn Fn(&str) -> Option<String> + Sync),
}

impl<'a> Inputs<'a> {
    /// The inputs of a report of `model` alone.
    pub fn new(model: &'a Model, title: &str) -> Inputs<'a> {
        Inputs {
            model,
            title: title.to_string(),
            files: Vec::new(),
            sampled: None,
            paths: None,
            dropped: None,
            threads: Vec::new(),
            memory: Vec::new(),
            types: Vec::new(),
            stalls: None,
            before: None,
            before_title: String::new(),
            sort: SortColumn::default(),
            read_source: &heat::read_source,
        }
    }
}

/// Each sampled thread's own stats, for the thread filter.
fn sampled_threads(p: &Profile) -> Vec<ThreadInput<'static>> {
    (0..p.threads.len() as u32)
        .filter(|&t| p.threads[t as usize].samples > 0)
        .map(|t| ThreadInput {
            name: p.thread_label(t),
            model: Cow::Owned(sampled_stats::model_of(p, |x| x == t)),
            index: Some(t),
            samples: p.threads.get(t as usize).cloned(),
        })
        .collect()
}

/// The JSON data of a report.
pub fn data(inputs: &Inputs<'_>) -> Vec<u8> {
    let sampled_paths = inputs
        .sampled
        .filter(|_| inputs.paths.is_none())
        .map(paths::from_samples);
    let paths = inputs.paths.or(sampled_paths.as_ref());
    let sampled_threads = match inputs.sampled {
        Some(p) if inputs.threads.is_empty() => sampled_threads(p),
        _ => Vec::new(),
    };
    // A thread filter is for runs of more than one thread.
    let threads: &[ThreadInput<'_>] = if sampled_threads.len() > 1 {
        &sampled_threads
    } else {
        &inputs.threads
    };
    let mut j = Json::new();
    let mut funcs = funcs::Funcs::default();
    j.open_object();
    j.key("v");
    j.int(1);
    j.key("title");
    j.str(&inputs.title);
    j.strs("files", inputs.files.iter().map(String::as_str));
    j.key("run");
    match inputs.sampled {
        Some(p) => j.str(&summary::summary(p)),
        None => j.null(),
    }
    // A comparison's pairs of functions, for its table and its graph.
    let pairing = inputs.before.map(|b| pairs::pair(b, inputs.model));
    data::write(&mut j, inputs, threads, &mut funcs, pairing.as_ref());
    data::write_dropped(&mut j, inputs.dropped.filter(|_| inputs.paths.is_some()));
    graphs::write(&mut j, inputs, paths, threads, pairing.as_ref());
    let heat = inputs
        .sampled
        .map(|p| heat::heat(p, inputs.read_source))
        .unwrap_or_default();
    heat::write(&mut j, &heat);
    time::write(&mut j, inputs.sampled, inputs.paths, &mut funcs);
    data::write_funcs(&mut j, &funcs);
    j.close_object();
    j.out
}

/// Writes the report. Pass a buffered writer.
pub fn write_html(w: &mut impl Write, inputs: &Inputs<'_>) -> io::Result<()> {
    let data = data(inputs);
    page::write_page(w, &inputs.title, &data)
}
