//! `Recording`: a run's samples in the order taken, each with its time, kept for the last
//! seconds only (a flight recorder) or for the whole run, and the profile of any window of them.
//! The run's `Profile` interns functions, frames and stacks; a mark names one of its stacks (or,
//! for a thread seen but not counted, the thread), so that a mark costs `MARK_BYTES` and a
//! window is the profile's tables with counts from the marks in it.

use std::collections::VecDeque;

use super::profile::{Count, Profile};
use super::seen::Seen;
use super::timebins::TimeBins;

/// What one sampled thread costs in a recording, and one read (a tick) on top.
pub const MARK_BYTES: usize = std::mem::size_of::<Mark>();
pub const TICK_BYTES: usize = std::mem::size_of::<Tick>();

/// One thread in one read, `MARK_BYTES` in memory.
#[derive(Clone, Copy, Debug)]
struct Mark {
    /// Microseconds since the run started.
    at: u64,
    /// A stack (`Profile::stacks` index) or a thread, as `kind` says.
    index: u32,
    /// Ticks it stands for (a late read stands for those it missed).
    weight: u16,
    kind: u8,
}

impl Mark {
    /// What the mark says it saw.
    fn seen(&self) -> Seen {
        match self.kind & !AGAIN {
            IDLE => Seen::Idle { thread: self.index },
            DROPPED => Seen::Dropped { thread: self.index },
            kind => Seen::Counted {
                stack: self.index,
                on_cpu: kind & !CUT == COUNTED_ON_CPU,
                cut: kind & CUT != 0,
            },
        }
    }
}

const COUNTED: u8 = 0;
const COUNTED_ON_CPU: u8 = 1;
const IDLE: u8 = 2;
const DROPPED: u8 = 3;
/// Added to a counted kind: the stack was cut.
const CUT: u8 = 4;
/// Added to a counted or idle kind: kept after a read again (`Profile::reread`).
const AGAIN: u8 = 8;

/// One read: when, and the ticks it stands for.
#[derive(Clone, Copy, Debug)]
struct Tick {
    at: u64,
    weight: u64,
}

/// A run's samples in time order.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    /// Microseconds kept behind the newest read; `None`: everything.
    keep: Option<u64>,
    marks: VecDeque<Mark>,
    ticks: VecDeque<Tick>,
}

impl Recording {
    /// A recording of the last `seconds` (`None`: of the whole run).
    pub fn new(seconds: Option<f64>) -> Recording {
        Recording {
            keep: seconds.map(|s| (s * 1e6) as u64),
            ..Recording::default()
        }
    }

    /// The seconds kept, if bounded.
    pub fn keeps(&self) -> Option<f64> {
        self.keep.map(|us| us as f64 / 1e6)
    }

    /// A read at `at` (microseconds since the start) standing for `weight` ticks; the marks of
    /// its threads follow with `mark`. What fell out of the window goes.
    pub fn tick(&mut self, at: u64, weight: u64) {
        self.ticks.push_back(Tick { at, weight });
        if let Some(keep) = self.keep {
            let since = at.saturating_sub(keep);
            while self.ticks.front().is_some_and(|t| t.at < since) {
                self.ticks.pop_front();
            }
            while self.marks.front().is_some_and(|m| m.at < since) {
                self.marks.pop_front();
            }
        }
    }

    /// What the last read (`tick`) saw of one thread; `again`: kept after a read again.
    pub fn mark(&mut self, seen: Seen, weight: u64, again: bool) {
        let at = self.ticks.back().map_or(0, |t| t.at);
        let again = if again { AGAIN } else { 0 };
        let (index, kind) = match seen {
            Seen::Counted { stack, on_cpu, cut } => {
                let kind = if on_cpu { COUNTED_ON_CPU } else { COUNTED };
                (stack, if cut { kind | CUT } else { kind } | again)
            }
            Seen::Idle { thread } => (thread, IDLE | again),
            // A dropped read was not kept, after a read again or not.
            Seen::Dropped { thread } => (thread, DROPPED),
        };
        let weight = u16::try_from(weight).unwrap_or(u16::MAX);
        self.marks.push_back(Mark {
            at,
            index,
            weight,
            kind,
        });
    }

    /// Every mark, oldest first: the number of its read (counting the reads kept, so that a
    /// read that did not see a thread shows as a gap in that thread's numbers), its time, what
    /// it saw and the ticks it stands for.
    pub fn marks(&self) -> impl Iterator<Item = (u64, u64, Seen, u64)> + '_ {
        let mut ticks = self.ticks.iter().map(|t| t.at).enumerate().peekable();
        let mut read = 0u64;
        self.marks.iter().map(move |m| {
            while let Some(&(i, at)) = ticks.peek() {
                if at > m.at {
                    break;
                }
                read = i as u64;
                ticks.next();
            }
            (read, m.at, m.seen(), u64::from(m.weight))
        })
    }

    /// Bytes the marks and reads held now take (their buffers' capacity).
    pub fn bytes(&self) -> usize {
        self.marks.capacity() * MARK_BYTES + self.ticks.capacity() * TICK_BYTES
    }

    /// Microseconds of the newest read (0 before any).
    pub fn last(&self) -> u64 {
        self.ticks.back().map_or(0, |t| t.at)
    }

    /// The profile of the reads of the last `seconds` before the newest (all that is kept for
    /// `None`): `profile`'s functions, frames, threads and stacks with the counts of those reads
    /// alone (stacks and threads they never saw have none). The duration is the window's span.
    pub fn window(&self, profile: &Profile, seconds: Option<f64>) -> Profile {
        let since = match seconds {
            Some(s) => self.last().saturating_sub((s.max(0.0) * 1e6) as u64),
            None => 0,
        };
        let mut p = profile.clone();
        for c in p.stacks.values_mut() {
            *c = Count::default();
        }
        for t in &mut p.threads {
            (t.samples, t.on_cpu, t.idle, t.dropped) = (0, 0, 0, 0);
        }
        let ticks = self.ticks.iter().filter(|t| t.at >= since);
        p.asked = ticks.clone().map(|t| t.weight).sum();
        p.taken = ticks.clone().count() as u64;
        p.truncated = 0;
        p.reread = 0;
        let first = ticks.clone().next().map_or(0, |t| t.at);
        p.duration = (self.last().saturating_sub(first)) as f64 / 1e6;
        let mut time = TimeBins::new(first, (profile.interval * 1e6) as u64);
        for m in self.marks.iter().filter(|m| m.at >= since) {
            let weight = u64::from(m.weight);
            time.add(m.at, m.seen(), weight);
            // Counted where the read is counted, as the run's profile counts it.
            let again = if m.kind & AGAIN != 0 { weight } else { 0 };
            match m.kind & !AGAIN {
                kind @ (IDLE | DROPPED) => {
                    if let Some(t) = p.threads.get_mut(m.index as usize) {
                        match kind {
                            IDLE => t.idle += weight,
                            _ => t.dropped += weight,
                        }
                        p.reread += again;
                    }
                }
                kind => {
                    let on_cpu = if kind & !CUT == COUNTED_ON_CPU {
                        weight
                    } else {
                        0
                    };
                    let Some(((thread, _), c)) = p.stacks.get_index_mut(m.index as usize) else {
                        continue;
                    };
                    c.samples += weight;
                    c.on_cpu += on_cpu;
                    if kind & CUT != 0 {
                        p.truncated += weight;
                    }
                    if let Some(t) = p.threads.get_mut(*thread as usize) {
                        t.samples += weight;
                        t.on_cpu += on_cpu;
                        p.reread += again;
                    }
                }
            }
        }
        p.time = Some(time);
        // Stacks the window never saw go, as a run's profile has none with no samples.
        p.drop_unsampled();
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::function;
    use crate::samples::profile::{Frame, Mode};

    /// A profile whose main thread runs `a` at reads 0-4 (ms) and `b` at reads 5-9, and whose
    /// worker is idle throughout; recorded as it goes. The main thread's reads 0, 2 and 4 and
    /// the worker's read 7 were kept after a read again.
    fn two_phases(keep: Option<f64>) -> (Profile, Recording) {
        let mut p = Profile::new(0.001, Mode::Cpu);
        let a = function(&mut p, "prog.py", 1, "a");
        let b = function(&mut p, "prog.py", 5, "b");
        let main = p.thread(1, 1);
        let worker = p.thread(2, 2);
        let mut r = Recording::new(keep);
        for i in 0..10u64 {
            let f = if i < 5 { a } else { b };
            r.tick(i * 1000, 1);
            let stack = p.add(
                main,
                &[Frame {
                    function: f,
                    line: 2,
                }],
                true,
                1,
            );
            r.mark(
                Seen::Counted {
                    stack,
                    on_cpu: true,
                    // The last read's stack was cut (as deeper than the reader's limit).
                    cut: i == 9,
                },
                1,
                i < 5 && i % 2 == 0,
            );
            p.threads[worker as usize].idle += 1;
            r.mark(Seen::Idle { thread: worker }, 1, i == 7);
            p.reread += u64::from(i < 5 && i % 2 == 0) + u64::from(i == 7);
            p.asked += 1;
            p.taken += 1;
        }
        (p, r)
    }

    fn samples_of(p: &Profile, name: &str) -> u64 {
        p.stacks
            .iter()
            .filter(|((_, frames), _)| p.function_of(frames[0]).is_some_and(|f| f.name == name))
            .map(|(_, c)| c.samples)
            .sum()
    }

    #[test]
    fn a_window_counts_only_its_reads() {
        let (p, r) = two_phases(None);
        let all = r.window(&p, None);
        assert_eq!((samples_of(&all, "a"), samples_of(&all, "b")), (5, 5));
        assert_eq!(all.stacks, p.stacks);
        assert_eq!(all.truncated, 1);
        assert_eq!(all.reread, p.reread);
        let last = r.window(&p, Some(0.0035));
        assert_eq!(last.truncated, 1);
        // Reads kept after a read again count in the window they were taken in, and are seen
        // as what they were (the worker's read 7 as idle).
        assert_eq!(last.reread, 1);
        assert_eq!(r.window(&p, Some(0.0075)).reread, 3);
        assert_eq!(r.window(&p, Some(0.0)).truncated, 1);
        let first = r.window(&p, Some(0.0095));
        assert_eq!(first.truncated, 1);
        assert_eq!((samples_of(&last, "a"), samples_of(&last, "b")), (0, 4));
        assert_eq!((last.asked, last.taken), (4, 4));
        assert_eq!(last.threads[1].idle, 4);
        assert_eq!(last.threads[0].on_cpu, 4);
        assert!((last.duration - 0.003).abs() < 1e-9);
        // The stacks of `a` are gone from it, not kept at 0.
        assert_eq!(last.stacks.len(), 1);
    }

    #[test]
    fn a_flight_recorder_keeps_the_last_seconds_only() {
        let (p, r) = two_phases(Some(0.0025));
        let kept = r.window(&p, None);
        assert_eq!((samples_of(&kept, "a"), samples_of(&kept, "b")), (0, 3));
        assert_eq!(kept.taken, 3);
        // The buffers stop growing once the window is full.
        let mut r = Recording::new(Some(0.01));
        let mut most = 0;
        for i in 0..100_000u64 {
            r.tick(i * 100, 1);
            r.mark(Seen::Idle { thread: 0 }, 1, false);
            if i == 1000 {
                most = r.bytes();
            }
        }
        assert_eq!(r.bytes(), most);
        assert_eq!(r.ticks.len(), 101);
    }
}
