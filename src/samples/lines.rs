//! The per-line report (`--lines`): for each thread, the lines it was sampled at, ranked by
//! self time, each with its self and cumulative samples, wall seconds (samples x interval) and
//! CPU seconds (samples on a CPU x interval). A line is a function at an executing line;
//! "self" counts the samples where it was innermost, "cumulative" the samples whose stack held
//! it, once per stack however often recursion repeats it. As data, and as text drawn with
//! comfy-table to a given width.

use std::io::{self, Write};

use super::profile::Profile;
use super::table::figures_table;

/// One line's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct LineRow {
    /// `filename:lineno(function)`.
    pub label: String,
    /// The frame (index in `Profile::frames`).
    pub frame: u32,
    pub self_samples: u64,
    /// Of `self_samples`, those on a CPU.
    pub self_on_cpu: u64,
    pub cum_samples: u64,
    pub cum_on_cpu: u64,
    /// `self_samples` and `self_on_cpu` x interval.
    pub self_wall: f64,
    pub self_cpu: f64,
    /// `cum_samples` and `cum_on_cpu` x interval.
    pub cum_wall: f64,
    pub cum_cpu: f64,
}

/// One thread's part of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadLines {
    /// Index in `Profile::threads`.
    pub thread: u32,
    /// Its name and OS id (`Profile::thread_title`).
    pub label: String,
    pub samples: u64,
    pub on_cpu: u64,
    /// `samples` and `on_cpu` x interval.
    pub seconds: f64,
    pub cpu_seconds: f64,
    /// The top lines, by self samples, then cumulative ones, then first sampled.
    pub lines: Vec<LineRow>,
    /// Lines left out by the limit.
    pub omitted: usize,
}

/// Running counts of one frame in one thread.
#[derive(Clone, Copy, Default)]
struct Tally {
    self_samples: u64,
    self_on_cpu: u64,
    cum: u64,
    cum_on_cpu: u64,
    /// The last stack counted in `cum`.
    stamp: usize,
}

/// `filename:lineno(function)` of frame `frame`.
pub fn line_label(p: &Profile, frame: u32) -> String {
    match p.frames.get_index(frame as usize).and_then(|fr| {
        let f = p.functions.get_index(fr.function as usize)?;
        Some((fr.line, f))
    }) {
        Some((line, f)) => format!("{}:{}({})", f.filename, line, f.name),
        None => "?".into(),
    }
}

/// The report: every thread with samples, in the profile's thread order, each with at most
/// `limit` lines (all with `None`).
pub fn line_report(p: &Profile, limit: Option<usize>) -> Vec<ThreadLines> {
    let mut out = Vec::new();
    // One thread's tallies at a time, indexed by frame; `seen` lists the frames touched.
    let mut tallies = vec![Tally::default(); p.frames.len()];
    let mut seen: Vec<u32> = Vec::new();
    for (ti, (t, mine)) in p.threads.iter().zip(p.stacks_by_thread()).enumerate() {
        seen.clear();
        for n in mine {
            let Some(((_, frames), c)) = p.stacks.get_index(n) else {
                continue;
            };
            let stack = n + 1;
            for &f in frames.iter() {
                let Some(tally) = tallies.get_mut(f as usize) else {
                    continue;
                };
                if tally.stamp == 0 {
                    seen.push(f);
                }
                if tally.stamp != stack {
                    tally.stamp = stack;
                    tally.cum += c.samples;
                    tally.cum_on_cpu += c.on_cpu;
                }
            }
            if let Some(tally) = frames.last().and_then(|&f| tallies.get_mut(f as usize)) {
                tally.self_samples += c.samples;
                tally.self_on_cpu += c.on_cpu;
            }
        }
        if seen.is_empty() {
            continue;
        }
        let mut order: Vec<u32> = seen.clone();
        // Stable: ties keep the order first sampled.
        order.sort_by(|&a, &b| {
            let (a, b) = (&tallies[a as usize], &tallies[b as usize]);
            b.self_samples.cmp(&a.self_samples).then(b.cum.cmp(&a.cum))
        });
        let keep = limit.unwrap_or(usize::MAX).min(order.len());
        let secs = |n: u64| n as f64 * p.interval;
        let lines = order[..keep]
            .iter()
            .map(|&f| {
                let t = &tallies[f as usize];
                LineRow {
                    label: line_label(p, f),
                    frame: f,
                    self_samples: t.self_samples,
                    self_on_cpu: t.self_on_cpu,
                    cum_samples: t.cum,
                    cum_on_cpu: t.cum_on_cpu,
                    self_wall: secs(t.self_samples),
                    self_cpu: secs(t.self_on_cpu),
                    cum_wall: secs(t.cum),
                    cum_cpu: secs(t.cum_on_cpu),
                }
            })
            .collect();
        out.push(ThreadLines {
            thread: ti as u32,
            label: p.thread_title(ti as u32),
            samples: t.samples,
            on_cpu: t.on_cpu,
            seconds: secs(t.samples),
            cpu_seconds: secs(t.on_cpu),
            lines,
            omitted: order.len() - keep,
        });
        for &f in &seen {
            tallies[f as usize] = Tally::default();
        }
    }
    out
}

const HEADER: [&str; 7] = [
    "self",
    "self wall",
    "self cpu",
    "cum",
    "cum wall",
    "cum cpu",
    "filename:lineno(function)",
];

/// One thread's table, fitted to `width` columns (long labels wrap).
pub fn table(t: &ThreadLines, width: u16) -> String {
    let rows = t.lines.iter().map(|r| {
        [
            r.self_samples.to_string(),
            format!("{:.3}", r.self_wall),
            format!("{:.3}", r.self_cpu),
            r.cum_samples.to_string(),
            format!("{:.3}", r.cum_wall),
            format!("{:.3}", r.cum_cpu),
            r.label.clone(),
        ]
    });
    figures_table(&HEADER, rows, HEADER.len() - 1, width)
}

/// Writes the report: per thread a heading (name, OS id, samples, seconds) and its table.
pub fn write_lines(w: &mut impl Write, report: &[ThreadLines], width: u16) -> io::Result<()> {
    for (i, t) in report.iter().enumerate() {
        if i != 0 {
            writeln!(w)?;
        }
        let s = if t.samples == 1 { "" } else { "s" };
        writeln!(
            w,
            "{}: {} sample{s}, {:.3} s ({:.3} s on a CPU); times in seconds",
            t.label, t.samples, t.seconds, t.cpu_seconds
        )?;
        writeln!(w, "{}", table(t, width))?;
        if t.omitted > 0 {
            let s = if t.omitted == 1 { "" } else { "s" };
            writeln!(w, "({} more line{s})", t.omitted)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::{function, sample, small, with_odd, Refusing};
    use crate::samples::profile::Mode;

    fn text(p: &Profile, limit: Option<usize>, width: u16) -> String {
        let mut out = Vec::new();
        write_lines(&mut out, &line_report(p, limit), width).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lines_are_ranked_by_self_time_per_thread() {
        let r = line_report(&small(), None);
        assert_eq!(r.len(), 2);
        let main = &r[0];
        assert_eq!(
            (main.label.as_str(), main.samples, main.on_cpu),
            ("MainThread (tid 100)", 4, 1)
        );
        let rows: Vec<(&str, u64, u64, u64, u64)> = main
            .lines
            .iter()
            .map(|l| {
                (
                    l.label.as_str(),
                    l.self_samples,
                    l.self_on_cpu,
                    l.cum_samples,
                    l.cum_on_cpu,
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("prog.py:21(g)", 3, 1, 3, 1),
                ("prog.py:12(f)", 1, 0, 1, 0),
                ("prog.py:2(main)", 0, 0, 4, 1),
                ("prog.py:11(f)", 0, 0, 3, 1),
            ]
        );
        assert!((main.lines[0].self_wall - 0.003).abs() < 1e-12);
        assert!((main.lines[0].self_cpu - 0.001).abs() < 1e-12);
        assert!((main.lines[2].cum_wall - 0.004).abs() < 1e-12);
        assert_eq!(r[1].label, "Thread (tid 101)");
        assert_eq!(r[1].lines[0].label, "prog.py:22(g)");
    }

    #[test]
    fn a_limit_cuts_each_thread_and_says_how_many_it_left_out() {
        let r = line_report(&small(), Some(1));
        assert_eq!(r[0].lines.len(), 1);
        assert_eq!(r[0].omitted, 3);
        let out = text(&small(), Some(1), 100);
        assert!(out.contains("(3 more lines)"), "{out}");
        assert!(out.contains("(1 more line)\n"), "{out}");
    }

    #[test]
    fn recursion_counts_a_line_once_per_stack() {
        let mut p = Profile::new(0.5, Mode::Cpu);
        let f = function(&mut p, "r.py", 1, "f");
        let t = p.thread(1, 1);
        sample(&mut p, t, &[(f, 3), (f, 2), (f, 2), (f, 2)], true);
        sample(&mut p, t, &[(f, 2), (f, 2)], true);
        let r = line_report(&p, None);
        let l: Vec<(&str, u64, u64)> = r[0]
            .lines
            .iter()
            .map(|l| (l.label.as_str(), l.self_samples, l.cum_samples))
            .collect();
        assert_eq!(l, [("r.py:2(f)", 1, 2), ("r.py:3(f)", 1, 1)]);
        assert_eq!(r[0].lines[0].cum_cpu, 1.0);
    }

    #[test]
    fn labels_are_whole_where_they_fit_and_stripped_of_directories_where_not() {
        let p = with_odd(
            "/a very/long path/to some/module with spaces/x;y.py",
            "<lambda>; \u{3bb}\u{1f600}",
        );
        let whole =
            "/a very/long path/to some/module with spaces/x;y.py:0(<lambda>; \u{3bb}\u{1f600})";
        let stripped = "x;y.py:0(<lambda>; \u{3bb}\u{1f600})";
        for width in [100u16, 200] {
            let out = text(&p, None, width);
            assert!(out.contains(
                "MainThread (tid 100): 4 samples, 0.004 s (0.001 s on a CPU); times in seconds"
            ));
            assert!(out.contains("filename:lineno(function)"));
            let rows = out.lines().filter(|l| l.contains(".py:")).count();
            assert_eq!(rows, p.frames.len());
            // The table's lines fit the width (the heading above it is a sentence).
            assert!(out
                .lines()
                .filter(|l| !l.contains("times in seconds"))
                .all(|l| comfy_table_width(l) <= usize::from(width)));
            let label = if width == 200 { whole } else { stripped };
            assert!(out.contains(label), "{out}");
        }
        assert!(!text(&p, None, 100).contains("/a very"));
    }

    /// Terminal columns of a line (the emoji takes two).
    fn comfy_table_width(line: &str) -> usize {
        line.chars()
            .map(|c| if c == '\u{1f600}' { 2 } else { 1 })
            .sum()
    }

    #[test]
    fn an_empty_profile_has_no_thread() {
        let mut p = Profile::new(0.001, Mode::Wall);
        p.thread(1, 1);
        assert!(line_report(&p, None).is_empty());
        assert_eq!(text(&p, None, 80), "");
    }

    #[test]
    fn a_writers_error_comes_back_with_its_os_code() {
        let r = line_report(&small(), None);
        let e = write_lines(&mut Refusing(32), &r, 80).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(32));
    }
}
