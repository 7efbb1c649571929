//! `TimeBins`: a run's samples by when they were taken, in at most `MAX_BINS` bins of equal
//! width, for the report's time view (each thread's activity over time, and the table and
//! flame graph of any stretch of it). A bin counts the stacks (`Profile::stacks` indices) its
//! reads counted and the threads they saw idle or dropped. When the run outgrows the bins,
//! neighbours merge and the width doubles, so that an hour costs what a few seconds do.

use rustc_hash::FxHashMap;

use super::seen::Seen;

/// Bins a run is kept in, at most.
pub const MAX_BINS: usize = 1024;

/// What one bin saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bin {
    /// Stack index -> (ticks counted, of them on a CPU).
    pub stacks: FxHashMap<u32, (u64, u64)>,
    /// Thread index -> (ticks seen but not counted, reads dropped).
    pub threads: FxHashMap<u32, (u64, u64)>,
}

impl Bin {
    fn absorb(&mut self, other: Bin) {
        for (s, (n, c)) in other.stacks {
            let e = self.stacks.entry(s).or_default();
            e.0 += n;
            e.1 += c;
        }
        for (t, (i, d)) in other.threads {
            let e = self.threads.entry(t).or_default();
            e.0 += i;
            e.1 += d;
        }
    }
}

/// A run's samples by time: bin `i` holds the reads from `origin + i * width` (microseconds
/// since the run began) to the next bin's start.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeBins {
    pub origin: u64,
    pub width: u64,
    pub bins: Vec<Bin>,
}

impl TimeBins {
    /// Bins starting at `origin` (µs), one `width` wide (µs, at least 1) until the run outgrows
    /// them.
    pub fn new(origin: u64, width: u64) -> TimeBins {
        TimeBins {
            origin,
            width: width.max(1),
            bins: Vec::new(),
        }
    }

    /// What a read at `at` (µs since the run began) saw of one thread, standing for `weight`
    /// ticks. A read before the origin counts in the first bin.
    pub fn add(&mut self, at: u64, seen: Seen, weight: u64) {
        let mut i = (at.saturating_sub(self.origin) / self.width) as usize;
        while i >= MAX_BINS {
            self.coarsen();
            i = (at.saturating_sub(self.origin) / self.width) as usize;
        }
        if self.bins.len() <= i {
            self.bins.resize_with(i + 1, Bin::default);
        }
        let bin = &mut self.bins[i];
        match seen {
            Seen::Counted { stack, on_cpu, .. } => {
                let e = bin.stacks.entry(stack).or_default();
                e.0 += weight;
                e.1 += if on_cpu { weight } else { 0 };
            }
            Seen::Idle { thread } => bin.threads.entry(thread).or_default().0 += weight,
            Seen::Dropped { thread } => bin.threads.entry(thread).or_default().1 += weight,
        }
    }

    /// Merges each pair of neighbours: half the bins, twice as wide.
    fn coarsen(&mut self) {
        let old = std::mem::take(&mut self.bins);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.absorb(b);
            }
            self.bins.push(a);
        }
        self.width *= 2;
    }

    /// Takes away the counts of `base`, an earlier copy of these bins (as wide, or narrower by
    /// a power of two: each of its bins lies in one of these).
    pub fn subtract(&mut self, base: &TimeBins) {
        for (i, old) in base.bins.iter().enumerate() {
            let at = base.origin + i as u64 * base.width;
            let Some(bin) = self
                .bins
                .get_mut((at.saturating_sub(self.origin) / self.width) as usize)
            else {
                continue;
            };
            for (s, &(n, c)) in &old.stacks {
                if let Some(e) = bin.stacks.get_mut(s) {
                    e.0 = e.0.saturating_sub(n);
                    e.1 = e.1.saturating_sub(c);
                }
            }
            for (t, &(idle, dropped)) in &old.threads {
                if let Some(e) = bin.threads.get_mut(t) {
                    e.0 = e.0.saturating_sub(idle);
                    e.1 = e.1.saturating_sub(dropped);
                }
            }
            bin.stacks.retain(|_, e| e.0 > 0);
            bin.threads.retain(|_, e| *e != (0, 0));
        }
    }

    /// The same bins with stack indices renumbered by `to` (old index -> new; `u32::MAX`: gone).
    pub fn renumbered(mut self, to: &[u32]) -> TimeBins {
        for bin in &mut self.bins {
            let old = std::mem::take(&mut bin.stacks);
            for (s, v) in old {
                if let Some(&n) = to.get(s as usize).filter(|&&n| n != u32::MAX) {
                    let e = bin.stacks.entry(n).or_default();
                    e.0 += v.0;
                    e.1 += v.1;
                }
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(stack: u32, on_cpu: bool) -> Seen {
        Seen::Counted {
            stack,
            on_cpu,
            cut: false,
        }
    }

    #[test]
    fn reads_land_in_the_bin_of_their_time() {
        let mut b = TimeBins::new(1000, 10);
        b.add(1000, counted(3, true), 1);
        b.add(1009, counted(3, false), 2);
        b.add(1010, Seen::Idle { thread: 1 }, 1);
        b.add(1035, Seen::Dropped { thread: 1 }, 1);
        // Before the origin: the first bin.
        b.add(10, counted(4, false), 1);
        assert_eq!(b.bins.len(), 4);
        assert_eq!(b.bins[0].stacks[&3], (3, 1));
        assert_eq!(b.bins[0].stacks[&4], (1, 0));
        assert_eq!(b.bins[1].threads[&1], (1, 0));
        assert!(b.bins[2].stacks.is_empty() && b.bins[2].threads.is_empty());
        assert_eq!(b.bins[3].threads[&1], (0, 1));
    }

    #[test]
    fn a_long_run_stays_within_the_bins_and_keeps_every_tick() {
        let mut b = TimeBins::new(0, 1000);
        let reads = 100_000u64;
        for i in 0..reads {
            b.add(i * 1000, counted((i % 3) as u32, i % 2 == 0), 1);
        }
        assert!(b.bins.len() <= MAX_BINS && b.bins.len() > MAX_BINS / 2);
        assert_eq!(b.width, 1000 * 128);
        let (total, on_cpu) = b
            .bins
            .iter()
            .flat_map(|x| x.stacks.values())
            .fold((0, 0), |(n, c), v| (n + v.0, c + v.1));
        assert_eq!((total, on_cpu), (reads, reads / 2));
        // Each bin holds the reads of its span.
        assert_eq!(b.bins[0].stacks.values().map(|v| v.0).sum::<u64>(), 128);
    }

    #[test]
    fn an_earlier_copy_subtracted_leaves_what_came_after_even_once_coarsened() {
        let mut b = TimeBins::new(0, 1000);
        for i in 0..600u64 {
            b.add(i * 1000, counted(0, true), 1);
        }
        let base = b.clone();
        for i in 600..3000u64 {
            b.add(i * 1000, counted(0, true), 1);
        }
        assert!(b.width > base.width);
        b.subtract(&base);
        let left: u64 = b
            .bins
            .iter()
            .flat_map(|x| x.stacks.values())
            .map(|v| v.0)
            .sum();
        assert_eq!(left, 2400);
        // Nothing is left before the copy's end.
        let first = b.bins.iter().position(|x| !x.stacks.is_empty()).unwrap() as u64;
        assert!(first * b.width >= 599 * 1000 - b.width, "{first}");
    }

    #[test]
    fn renumbering_drops_the_stacks_that_went() {
        let mut b = TimeBins::new(0, 10);
        b.add(0, counted(0, false), 1);
        b.add(0, counted(2, false), 5);
        let b = b.renumbered(&[u32::MAX, 0, 1]);
        assert_eq!(b.bins[0].stacks.len(), 1);
        assert_eq!(b.bins[0].stacks[&1], (5, 0));
    }
}
