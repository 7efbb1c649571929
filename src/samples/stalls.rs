//! Stalls: the stretches of a recording in which a thread ran without a break for at least a
//! given time: on a CPU at every read in cpu mode, holding the GIL in gil mode, away from its
//! idle wait in wall mode (on a CPU, or off it anywhere but the function it waits in). A
//! thread's idle wait is the innermost function it was found off a CPU in most often, counting
//! each arrival once (an event loop's wait is arrived at again and again; a freeze once), then
//! by reads. A read that misses the thread (or a read not taken) breaks its stretch; a torn
//! read neither breaks nor extends it.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::profile::{Frame, Mode, Profile};
use super::recording::Recording;
use super::seen::Seen;

/// One stall.
#[derive(Clone, Debug, PartialEq)]
pub struct Stall {
    pub thread: u32,
    /// Seconds from the run's start to its first read.
    pub start: f64,
    /// Seconds from its first read to one interval past its last.
    pub duration: f64,
    /// Ticks its reads stand for.
    pub samples: u64,
    /// The innermost frames (`Profile::frames` indices) it was read in, heaviest first.
    pub frames: Vec<(u32, u64)>,
}

impl Stall {
    /// This stall of one process (`part`) in the terms of a merge `into` of several (see
    /// `merge`) where that process's threads start at `first_thread`: its frames found by what
    /// they are.
    pub fn in_merge(&self, part: &Profile, into: &Profile, first_thread: u32) -> Stall {
        let frame = |&(f, n): &(u32, u64)| {
            let fr = part.frames.get_index(f as usize)?;
            let function = into
                .functions
                .get_index_of(part.functions.get_index(fr.function as usize)?)?;
            let at = into.frames.get_index_of(&Frame {
                function: function as u32,
                line: fr.line,
            })?;
            Some((at as u32, n))
        };
        Stall {
            thread: self.thread + first_thread,
            frames: self.frames.iter().filter_map(frame).collect(),
            ..self.clone()
        }
    }
}

/// A stretch being read.
struct Open {
    first: u64,
    last: u64,
    samples: u64,
    frames: HashMap<u32, u64>,
}

/// The stalls of `recording` (of `profile`'s run) that last `min_seconds` or longer, in the
/// order they began.
pub fn stalls(profile: &Profile, recording: &Recording, min_seconds: f64) -> Vec<Stall> {
    let interval_us = (profile.interval * 1e6) as u64;
    let min_us = (min_seconds * 1e6) as u64;
    let homes = match profile.mode {
        Mode::Wall => idle_waits(profile, recording),
        _ => HashMap::new(),
    };
    let mut open: HashMap<u32, Open> = HashMap::new();
    // Each thread's last read (by number), to tell a break.
    let mut last_read: HashMap<u32, u64> = HashMap::new();
    let mut out = Vec::new();
    let close = |o: Open, thread: u32, out: &mut Vec<Stall>| {
        let duration = o.last - o.first + interval_us;
        if duration >= min_us {
            let mut frames: Vec<(u32, u64)> = o.frames.into_iter().collect();
            frames.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            out.push(Stall {
                thread,
                start: o.first as f64 / 1e6,
                duration: duration as f64 / 1e6,
                samples: o.samples,
                frames,
            });
        }
    };
    for (read_no, at, seen, weight) in recording.marks() {
        let (thread, busy_in) = match seen {
            Seen::Counted { stack, on_cpu, .. } => {
                let Some(((thread, frames), _)) = profile.stacks.get_index(stack as usize) else {
                    continue;
                };
                let innermost = frames.last().copied();
                let busy = match profile.mode {
                    Mode::Cpu | Mode::Gil => true,
                    Mode::Wall => {
                        on_cpu || {
                            let function = innermost
                                .and_then(|f| profile.frames.get_index(f as usize))
                                .map(|f| f.function);
                            function != homes.get(thread).copied()
                        }
                    }
                };
                (*thread, busy.then_some(innermost).flatten())
            }
            Seen::Idle { thread } => (thread, None),
            Seen::Dropped { thread } => {
                last_read.insert(thread, read_no);
                continue;
            }
        };
        let unbroken = last_read.insert(thread, read_no).map(|r| r + 1) == Some(read_no);
        match busy_in {
            Some(frame) => {
                if !unbroken {
                    if let Some(o) = open.remove(&thread) {
                        close(o, thread, &mut out);
                    }
                }
                let o = open.entry(thread).or_insert_with(|| Open {
                    first: at,
                    last: at,
                    samples: 0,
                    frames: HashMap::new(),
                });
                o.last = at;
                o.samples += weight;
                *o.frames.entry(frame).or_default() += weight;
            }
            None => {
                if let Some(o) = open.remove(&thread) {
                    close(o, thread, &mut out);
                }
            }
        }
    }
    for (thread, o) in open {
        close(o, thread, &mut out);
    }
    out.sort_by(|a, b| a.start.total_cmp(&b.start).then(a.thread.cmp(&b.thread)));
    out
}

/// Each thread's idle wait (wall mode): the innermost function of its off-CPU reads arrived at
/// most often, then read most often.
fn idle_waits(profile: &Profile, recording: &Recording) -> HashMap<u32, u32> {
    // (thread, function) -> (arrivals, reads); thread -> the function of its previous read.
    let mut counts: HashMap<(u32, u32), (u64, u64)> = HashMap::new();
    let mut previous: HashMap<u32, Option<u32>> = HashMap::new();
    for (_, _, seen, weight) in recording.marks() {
        let Seen::Counted { stack, on_cpu, .. } = seen else {
            continue;
        };
        let Some(((thread, frames), _)) = profile.stacks.get_index(stack as usize) else {
            continue;
        };
        let function = frames
            .last()
            .and_then(|&f| profile.frames.get_index(f as usize))
            .map(|f| f.function);
        let here = (!on_cpu).then_some(function).flatten();
        let before = previous.insert(*thread, here).flatten();
        if let Some(f) = here {
            let c = counts.entry((*thread, f)).or_default();
            c.0 += u64::from(before != Some(f));
            c.1 += weight;
        }
    }
    let mut homes: HashMap<u32, (u32, (u64, u64))> = HashMap::new();
    for ((thread, function), c) in counts {
        let best = homes.entry(thread).or_insert((function, c));
        if (c, std::cmp::Reverse(function)) > (best.1, std::cmp::Reverse(best.0)) {
            *best = (function, c);
        }
    }
    homes.into_iter().map(|(t, (f, _))| (t, f)).collect()
}

/// The stalls as text: a heading, then per stall when it began, how long it lasted, its
/// thread, and its heaviest innermost frames (`per_stall` of them) with their shares.
pub fn report(profile: &Profile, stalls: &[Stall], min_seconds: f64, per_stall: usize) -> String {
    let what = what(profile.mode);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Stalls of {} ms or longer ({} mode: a thread running without a break, {what}): {}",
        fmt_ms(min_seconds),
        profile.mode.name(),
        stalls.len()
    );
    for s in stalls {
        let _ = writeln!(
            out,
            "  at {:.3} s for {:.3} s: {}",
            s.start,
            s.duration,
            profile.thread_title(s.thread)
        );
        for &(frame, samples) in s.frames.iter().take(per_stall) {
            let share = 100.0 * samples as f64 / s.samples.max(1) as f64;
            let (name, place) = match (
                profile.frames.get_index(frame as usize),
                profile.function_of(frame),
            ) {
                (Some(fr), Some(f)) => (f.name.as_str(), format!("{}:{}", f.filename, fr.line)),
                _ => ("?", String::new()),
            };
            let _ = writeln!(out, "    {share:5.1}%  {name}  {place}");
        }
        if s.frames.len() > per_stall {
            let _ = writeln!(out, "    ... {} more", s.frames.len() - per_stall);
        }
    }
    out
}

/// How a thread ran through a stall, in `mode`.
pub fn what(mode: Mode) -> &'static str {
    match mode {
        Mode::Wall => "away from its idle wait",
        Mode::Cpu => "on a CPU",
        Mode::Gil => "holding the GIL",
    }
}

/// Milliseconds without a needless fraction.
fn fmt_ms(seconds: f64) -> String {
    let ms = seconds * 1e3;
    if (ms - ms.round()).abs() < 1e-9 {
        format!("{}", ms.round() as i64)
    } else {
        format!("{ms}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::function;
    use crate::samples::profile::Frame;

    /// A thread read every ms: idle in `wait` (off a CPU), then `plan` (reads, function, on a
    /// CPU) in turn, then idle again.
    fn run(mode: Mode, plan: &[(u64, &str, bool)]) -> (Profile, Recording) {
        let mut p = Profile::new(0.001, mode);
        let t = p.thread(1, 1);
        let mut r = Recording::new(None);
        let mut at = 0;
        let mut step = |p: &mut Profile, r: &mut Recording, name: &str, on_cpu: bool| {
            r.tick(at, 1);
            at += 1000;
            let counted = match mode {
                Mode::Wall => true,
                _ => on_cpu,
            };
            if !counted {
                r.mark(Seen::Idle { thread: t }, 1, false);
                return;
            }
            let f = function(p, "prog.py", 1, name);
            let stack = p.add(
                t,
                &[Frame {
                    function: f,
                    line: 2,
                }],
                on_cpu,
                1,
            );
            r.mark(
                Seen::Counted {
                    stack,
                    on_cpu,
                    cut: false,
                },
                1,
                false,
            );
        };
        for &(reads, name, on_cpu) in plan {
            for _ in 0..reads {
                step(&mut p, &mut r, name, on_cpu);
            }
        }
        (p, r)
    }

    fn names(p: &Profile, s: &Stall) -> Vec<String> {
        s.frames
            .iter()
            .filter_map(|&(f, _)| p.function_of(f).map(|f| f.name.clone()))
            .collect()
    }

    #[test]
    fn a_freeze_between_idle_waits_is_one_stall_in_every_mode() {
        // In wall mode the freeze is off a CPU too (a blocking call): away from the idle wait.
        for (mode, on_cpu) in [(Mode::Wall, false), (Mode::Wall, true), (Mode::Cpu, true)] {
            let plan = [
                (300, "wait", false),
                (5, "work", true),
                (200, "wait", false),
                (1500, "freeze", on_cpu),
                (400, "wait", false),
            ];
            let (p, r) = run(mode, &plan);
            let found = stalls(&p, &r, 0.5);
            assert_eq!(found.len(), 1, "{mode:?} {on_cpu}: {found:?}");
            let s = &found[0];
            assert!((s.start - 0.505).abs() < 1e-9, "{s:?}");
            assert!((s.duration - 1.5).abs() < 1e-9, "{s:?}");
            assert_eq!(names(&p, s), ["freeze"]);
            // Below the threshold the short work shows too, on its own.
            assert_eq!(stalls(&p, &r, 0.005).len(), 2);
        }
    }

    #[test]
    fn a_read_that_misses_the_thread_breaks_its_stretch() {
        let (p, mut r) = run(Mode::Cpu, &[(400, "spin", true)]);
        assert_eq!(stalls(&p, &r, 0.3).len(), 1);
        // The same, with the reads of ms 200-209 taken without the thread (it was not seen).
        let mut broken = Recording::new(None);
        for (_, at, seen, weight) in r.marks().collect::<Vec<_>>() {
            broken.tick(at, weight);
            if !(200_000..210_000).contains(&at) {
                broken.mark(seen, weight, false);
            }
        }
        r = broken;
        let found = stalls(&p, &r, 0.1);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!((found[0].duration - 0.2).abs() < 1e-9);
        assert!((found[1].start - 0.21).abs() < 1e-9);
        let text = report(&p, &found, 0.1, 3);
        assert!(text.starts_with(
            "Stalls of 100 ms or longer (cpu mode: a thread running without a break, on a CPU): 2"
        ));
        assert!(
            text.contains("  at 0.210 s for 0.190 s: Thread (tid 1)"),
            "{text}"
        );
        assert!(text.contains("100.0%  spin  prog.py:2"), "{text}");
    }
}
