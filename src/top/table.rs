//! What `top` shows, from two profiles of the run (its last seconds and everything since its
//! start): the hottest functions or lines with their own and total samples, for all threads or
//! one, and each thread's state over the last seconds. Python-free, so it is tested here.

use std::collections::HashMap;

use crate::samples::profile::{Mode, Profile};

/// A function (by function index) or a line (by frame index) of the run's tables; the indices
/// stay the same in every profile of one run (its tables only grow).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    Function(u32),
    Line(u32),
}

/// One row: samples with it running (own) and on the stack (total).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub key: Key,
    pub label: String,
    pub own: u64,
    pub total: u64,
}

/// How the rows are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    Own,
    Total,
    Name,
}

impl Sort {
    pub fn next(self) -> Sort {
        match self {
            Sort::Own => Sort::Total,
            Sort::Total => Sort::Name,
            Sort::Name => Sort::Own,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Sort::Own => "own",
            Sort::Total => "total",
            Sort::Name => "name",
        }
    }
}

/// Counts per key, and the stack samples they are shares of.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    pub by_key: HashMap<Key, (u64, u64)>,
    pub samples: u64,
}

/// The counts of `p`'s stacks of thread `thread` (all threads for `None`), by function or by
/// line: own where it is the innermost frame, total where it is on the stack (once a stack).
pub fn counts(p: &Profile, thread: Option<u32>, lines: bool) -> Counts {
    let mut out = Counts::default();
    let mut seen: Vec<Key> = Vec::new();
    for ((t, frames), c) in &p.stacks {
        if thread.is_some_and(|want| want != *t) || c.samples == 0 {
            continue;
        }
        out.samples += c.samples;
        seen.clear();
        for (i, &frame) in frames.iter().enumerate() {
            let key = match lines {
                true => Key::Line(frame),
                false => match p.frames.get_index(frame as usize) {
                    Some(f) => Key::Function(f.function),
                    None => continue,
                },
            };
            let entry = out.by_key.entry(key).or_default();
            if i + 1 == frames.len() {
                entry.0 += c.samples;
            }
            if !seen.contains(&key) {
                seen.push(key);
                entry.1 += c.samples;
            }
        }
    }
    out
}

/// `now` less `base` (a reset's counts), key by key; never below zero.
pub fn since(now: &Counts, base: &Counts) -> Counts {
    let mut out = now.clone();
    for (key, (own, total)) in out.by_key.iter_mut() {
        if let Some(&(o, t)) = base.by_key.get(key) {
            *own = own.saturating_sub(o);
            *total = total.saturating_sub(t);
        }
    }
    out.samples = now.samples.saturating_sub(base.samples);
    out
}

/// The rows of `counts` with samples, labelled from `p`'s tables, in `sort`'s order.
pub fn rows(p: &Profile, counts: &Counts, sort: Sort) -> Vec<Row> {
    let mut rows: Vec<Row> = counts
        .by_key
        .iter()
        .filter(|(_, &(own, total))| own > 0 || total > 0)
        .map(|(&key, &(own, total))| Row {
            key,
            label: label(p, key),
            own,
            total,
        })
        .collect();
    rows.sort_by(|a, b| {
        match sort {
            Sort::Own => (b.own, b.total).cmp(&(a.own, a.total)),
            Sort::Total => (b.total, b.own).cmp(&(a.total, a.own)),
            Sort::Name => a.label.cmp(&b.label),
        }
        .then_with(|| a.label.cmp(&b.label))
    });
    rows
}

/// `name (file.py:line)`: the function's first line, or the line's; the file without its
/// directories.
pub fn label(p: &Profile, key: Key) -> String {
    let (function, line) = match key {
        Key::Function(f) => (p.functions.get_index(f as usize), None),
        Key::Line(fr) => match p.frames.get_index(fr as usize) {
            Some(frame) => (
                p.functions.get_index(frame.function as usize),
                Some(i64::from(frame.line)),
            ),
            None => (None, None),
        },
    };
    let Some(f) = function else {
        return "?".into();
    };
    let file = f.filename.rsplit('/').next().unwrap_or(&f.filename);
    format!("{} ({}:{})", f.name, file, line.unwrap_or(f.first_line))
}

/// A thread as `top` lists it: its title, its state over the window and what that rests on.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadRow {
    pub index: u32,
    pub title: String,
    pub state: &'static str,
    /// Share (0-1) of the window's reads of it that found it on a CPU (wall, cpu modes) or
    /// holding the GIL (gil mode); `None` where that was not read. Torn reads, whose state is
    /// not asked, are left out.
    pub busy: Option<f64>,
    pub samples: u64,
}

/// Each thread seen in the window `p` (its last seconds), with its state there: `running` or
/// `idle` by whether it was on a CPU at most of its reads kept (`holding the GIL` or `waiting`
/// in gil mode); `seen` when CPU states were not read.
pub fn threads(p: &Profile, cpu_states: bool) -> Vec<ThreadRow> {
    p.threads
        .iter()
        .enumerate()
        .filter(|(_, t)| t.samples + t.idle + t.dropped > 0)
        .map(|(i, t)| {
            let seen = (t.samples + t.idle).max(1) as f64;
            let (busy, state) = match p.mode {
                Mode::Gil => {
                    let share = t.samples as f64 / seen;
                    (
                        Some(share),
                        if share >= 0.5 {
                            "holding the GIL"
                        } else {
                            "waiting"
                        },
                    )
                }
                Mode::Cpu => {
                    let share = t.samples as f64 / seen;
                    (Some(share), if share >= 0.5 { "running" } else { "idle" })
                }
                Mode::Wall if cpu_states => {
                    let share = (t.on_cpu as f64 / seen).min(1.0);
                    (Some(share), if share >= 0.5 { "running" } else { "idle" })
                }
                Mode::Wall => (None, "seen"),
            };
            ThreadRow {
                index: i as u32,
                title: p.thread_title(i as u32),
                state,
                busy,
                samples: t.samples,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::small;

    fn named(p: &Profile, rows: &[Row]) -> Vec<(String, u64, u64)> {
        rows.iter()
            .map(|r| (label(p, r.key), r.own, r.total))
            .collect()
    }

    #[test]
    fn functions_and_lines_get_own_and_total_samples() {
        // small(): main -> f -> g x3 and main -> f x1 on thread 0; run -> g x2 on thread 1.
        let p = small();
        let all = counts(&p, None, false);
        assert_eq!(all.samples, 6);
        let rows = rows(&p, &all, Sort::Own);
        assert_eq!(
            named(&p, &rows),
            [
                ("g (prog.py:20)".to_string(), 5, 5),
                ("f (prog.py:10)".to_string(), 1, 4),
                ("main (prog.py:1)".to_string(), 0, 4),
                ("run (prog.py:30)".to_string(), 0, 2),
            ]
        );
        let worker = counts(&p, Some(1), true);
        assert_eq!(worker.samples, 2);
        let lines = super::rows(&p, &worker, Sort::Name);
        assert_eq!(
            named(&p, &lines),
            [
                ("g (prog.py:22)".to_string(), 2, 2),
                ("run (prog.py:31)".to_string(), 0, 2)
            ]
        );
        // A reset leaves what came after it.
        let later = since(&all, &counts(&p, Some(1), false));
        assert_eq!(later.samples, 4);
        assert_eq!(later.by_key[&rows[0].key], (3, 3));
    }

    #[test]
    fn threads_are_running_or_idle_by_their_reads() {
        let mut p = small();
        p.taken = 4;
        let t = threads(&p, true);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].title, "MainThread (tid 100)");
        // Thread 0 was on a CPU at 1 of 4 reads.
        assert_eq!((t[0].state, t[0].busy), ("idle", Some(0.25)));
        assert_eq!(threads(&p, false)[0].state, "seen");
        p.threads[0].on_cpu = 3;
        assert_eq!(threads(&p, true)[0].state, "running");
        // Torn reads say nothing of the state (a thread running short calls has most of its
        // reads torn), nor do the reads before a thread started: its kept reads do.
        p.threads[0].dropped = 12;
        p.taken = 40;
        assert_eq!(threads(&p, true)[0].busy, Some(0.75));
    }
}
