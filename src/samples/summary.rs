//! What a run took, in one line (samples taken of asked, threads, duration, dropped and
//! truncated stacks), and the per-thread counts as a table fitted to a width.

use std::io::{self, Write};

use super::profile::Profile;
use super::table::figures_table;

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `Sampled 3998 of 4000 ticks (wall mode, 1000 Hz) over 4.012 s: 2 threads (1 never
/// counted), 6 stack samples; 0 dropped (torn reads), 0 truncated stacks.` A stack sample
/// taken late counts for the ticks it missed, so the stack samples can exceed the reads.
pub fn summary(p: &Profile) -> String {
    let rate = if p.interval > 0.0 {
        format!(", {:.0} Hz", 1.0 / p.interval)
    } else {
        String::new()
    };
    let threads = p.threads.len() as u64;
    let silent = p.threads.iter().filter(|t| t.samples == 0).count() as u64;
    let silent = if silent > 0 {
        format!(" ({silent} never counted)")
    } else {
        String::new()
    };
    // A merge of several processes: how many (a tick read in each counts once per process).
    let mut pids: Vec<u32> = p
        .threads
        .iter()
        .map(|t| t.process)
        .filter(|&pid| pid != 0)
        .collect();
    pids.sort_unstable();
    pids.dedup();
    let processes = match pids.len() as u64 {
        0 => String::new(),
        n => format!("{}, ", plural(n, "process", "processes")),
    };
    // Ticks no read was taken at count in the stack samples through the late read after them:
    // say so, so that a weight is not taken for samples read.
    let missed = p.asked.saturating_sub(p.taken);
    let missed = if missed > 0 {
        format!(
            " ({} unread, each counted in the late read after it)",
            plural(missed, "tick", "ticks")
        )
    } else {
        String::new()
    };
    format!(
        "Sampled {} of {} ticks ({} mode{rate}) over {:.3} s: {processes}{}{silent}, {}{missed}; \
         {} (torn reads), {}.",
        p.taken,
        p.asked,
        p.mode.name(),
        p.duration,
        plural(threads, "thread", "threads"),
        plural(p.samples(), "stack sample", "stack samples"),
        plural(p.dropped(), "dropped", "dropped"),
        plural(p.truncated, "truncated stack", "truncated stacks"),
    )
}

/// Reads torn at the first look (dropped, or kept from a read again), in percent of reads,
/// beyond which the summary suggests `--blocking`.
pub const TORN_HINT_PERCENT: u64 = 10;

/// What follows the summary line about how the reads were taken: ` Blocking: the target was
/// stopped for each sample (N us on average, S s in all).`, or, for a run that did not stop it
/// and whose first look at a thread was torn at more than `TORN_HINT_PERCENT` of its reads, the
/// share torn, dropped, and `--blocking`. A read kept from a read again stands for a calm moment
/// microseconds after the tick, not the tick: it leans too, if less than dropping it would. A
/// thread's read is counted once, dropped or kept (idle or not; a late kept read's weight counts
/// its ticks).
pub fn reads_note(p: &Profile, blocking: bool) -> String {
    if blocking {
        let each = match p.pauses {
            0 => String::new(),
            n => format!(
                " ({:.0} us on average, {:.3} s in all)",
                p.paused * 1e6 / n as f64,
                p.paused
            ),
        };
        return format!(" Blocking: the target was stopped for each sample{each}.");
    }
    let (torn, dropped, reads) = torn_reads(p);
    if reads == 0 || u128::from(torn) * 100 <= u128::from(reads) * u128::from(TORN_HINT_PERCENT) {
        return String::new();
    }
    format!(
        " {}% of the reads were torn by the running program ({}% dropped, the rest kept from a \
         read again), which leans the shares towards code that reads cleanly, away from short \
         functions: --blocking (blocking=True) stops the target for each sample.",
        percent(torn, reads),
        percent(dropped, reads)
    )
}

/// `(torn, dropped, reads)`: a thread's reads torn at the first look (dropped, or kept from a
/// read again), those dropped, and all (a kept read weighted by the ticks it stands for, a
/// dropped one counted once). Torn and dropped are at most all, so that a percent of them is
/// at most 100 whatever an unpickled profile holds.
fn torn_reads(p: &Profile) -> (u64, u64, u64) {
    let reads = p.threads.iter().fold(0u64, |all, t| {
        all.saturating_add(t.samples)
            .saturating_add(t.idle)
            .saturating_add(t.dropped)
    });
    let dropped = p.dropped().min(reads);
    (dropped.saturating_add(p.reread).min(reads), dropped, reads)
}

/// The reads torn at the first look, in whole percent of all (0 without reads).
pub fn torn_percent(p: &Profile) -> u64 {
    let (torn, _, reads) = torn_reads(p);
    percent(torn, reads)
}

/// `part` of `all` in whole percent (0 of nothing), without overflow.
fn percent(part: u64, all: u64) -> u64 {
    (u128::from(part) * 100)
        .checked_div(u128::from(all))
        .map_or(0, |p| p as u64)
}

/// Per thread: name, OS id (`-` when not known), samples counted (on a CPU), not counted
/// (idle), dropped, and the seconds the counted ones stand for; fitted to `width` columns.
pub fn threads_table(p: &Profile, width: u16) -> String {
    let header = [
        "thread", "tid", "samples", "on cpu", "idle", "dropped", "seconds",
    ];
    let rows = p.threads.iter().enumerate().map(|(i, t)| {
        [
            p.thread_label(i as u32),
            // Not known: 3.10 where the C library's thread descriptors cannot be read.
            match t.native_id {
                0 => "-".into(),
                tid => tid.to_string(),
            },
            t.samples.to_string(),
            t.on_cpu.to_string(),
            t.idle.to_string(),
            t.dropped.to_string(),
            format!("{:.3}", t.samples as f64 * p.interval),
        ]
    });
    figures_table(&header, rows, 0, width)
}

/// Writes the summary line, then the threads table.
pub fn write_summary(w: &mut impl Write, p: &Profile, width: u16) -> io::Result<()> {
    writeln!(w, "{}", summary(p))?;
    if !p.threads.is_empty() {
        writeln!(w, "{}", threads_table(p, width))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::{small, Refusing};
    use crate::samples::profile::Mode;

    #[test]
    fn the_note_says_blocking_or_suggests_it_past_a_tenth_torn() {
        let mut p = small();
        assert_eq!(
            reads_note(&p, true),
            " Blocking: the target was stopped for each sample."
        );
        (p.pauses, p.paused) = (4, 0.0002);
        assert_eq!(
            reads_note(&p, true),
            " Blocking: the target was stopped for each sample (50 us on average, 0.000 s in \
             all)."
        );
        // 90 reads kept: 10 dropped of 100 are a tenth, no note; 11 of 101 are more.
        let kept: u64 = p.threads.iter().map(|t| t.samples + t.idle).sum();
        p.threads[1].idle = 90 - (kept - p.threads[1].idle);
        let reads: u64 = p.threads.iter().map(|t| t.samples + t.idle).sum();
        assert_eq!(reads, 90);
        p.threads[0].dropped = 10;
        assert_eq!(reads_note(&p, false), "");
        p.threads[0].dropped = 11;
        assert!(reads_note(&p, false).starts_with(" 10% of the reads were torn"));
        p.threads[0].dropped = reads;
        let note = reads_note(&p, false);
        assert!(
            note.starts_with(" 50% of the reads were torn by the running program (50% dropped")
                && note.contains("--blocking"),
            "{note}"
        );
        assert_eq!(torn_percent(&p), 50);
        // Reads kept from a read again count as torn, and not as dropped.
        p.threads[0].dropped = 0;
        p.reread = 9;
        assert_eq!(reads_note(&p, false), "");
        p.reread = 10;
        assert!(reads_note(&p, false).starts_with(" 11% of the reads were torn"));
        p.reread = reads / 2;
        let note = reads_note(&p, false);
        assert!(
            note.starts_with(" 50% of the reads were torn by the running program (0% dropped"),
            "{note}"
        );
        assert_eq!(torn_percent(&Profile::new(0.001, Mode::Wall)), 0);
        // An unpickled profile's counts are whatever its bytes say: no overflow, at most all.
        (p.reread, p.threads[1].dropped) = (u64::MAX, u64::MAX);
        assert_eq!(torn_percent(&p), 100);
        assert!(reads_note(&p, false).starts_with(" 100% of the reads were torn"));
    }

    #[test]
    fn the_line_says_what_was_taken_and_lost() {
        let mut p = small();
        p.asked = 5;
        p.duration = 0.004;
        p.truncated = 1;
        p.threads[1].dropped = 2;
        p.thread(103, 10);
        assert_eq!(
            summary(&p),
            "Sampled 4 of 5 ticks (wall mode, 1000 Hz) over 0.004 s: 3 threads (1 never \
             counted), 6 stack samples (1 tick unread, each counted in the late read after \
             it); 2 dropped (torn reads), 1 truncated stack."
        );
        let merged = crate::samples::merge::merge(0.001, Mode::Wall, [(7, &p), (9, &small())]);
        assert!(
            summary(&merged).contains("over 0.004 s: 2 processes, 5 threads (1 never counted)"),
            "{}",
            summary(&merged)
        );
        let empty = Profile::new(0.0, Mode::Gil);
        assert_eq!(
            summary(&empty),
            "Sampled 0 of 0 ticks (gil mode) over 0.000 s: 0 threads, 0 stack samples; \
             0 dropped (torn reads), 0 truncated stacks."
        );
    }

    #[test]
    fn the_threads_table_keeps_names_whole_where_they_fit_and_fits_the_width() {
        let mut p = small();
        p.threads[1].name = Some("a worker with a very long name; \u{3bb}".into());
        p.threads[1].idle = 7;
        let text = |width| {
            let mut out = Vec::new();
            write_summary(&mut out, &p, width).unwrap();
            String::from_utf8(out).unwrap()
        };
        let wide = text(200);
        assert!(
            wide.contains("a worker with a very long name; \u{3bb}"),
            "{wide}"
        );
        let out = text(70);
        // The table's lines (the summary sentence above it is a sentence).
        assert!(
            out.lines().skip(1).all(|l| l.chars().count() <= 70),
            "{out}"
        );
        assert!(out.contains("MainThread "), "{out}");
        assert!(out.contains(" 101 "), "{out}");
        let mut empty = Vec::new();
        write_summary(&mut empty, &Profile::new(0.001, Mode::Wall), 80).unwrap();
        assert_eq!(empty.iter().filter(|&&b| b == b'\n').count(), 1);
    }

    #[test]
    fn a_writers_error_comes_back_with_its_os_code() {
        let e = write_summary(&mut Refusing(5), &small(), 80).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(5));
    }
}
