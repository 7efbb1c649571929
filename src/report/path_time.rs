//! A timeline's call paths by time, for the report's time view of a traced run: each thread's
//! time in calls per bin, and per bin each path's own time (the time its call was the
//! innermost one open on its thread). At most `MAX_BINS` bins over the timeline's span.

use rustc_hash::FxHashMap;

use crate::samples::timebins::MAX_BINS;

/// One thread of the timeline: its name, its first and last event, its time in calls per bin.
#[derive(Clone, Debug, Default)]
pub struct Lane {
    pub name: String,
    pub first: Option<i64>,
    pub last: i64,
    pub busy: Vec<u64>,
}

/// Bin `i` spans the timer units from `origin + i * width`; a unit is `unit` seconds.
#[derive(Clone, Debug)]
pub struct PathTime {
    pub origin: i64,
    pub width: i64,
    pub unit: f64,
    /// Per bin: (thread, path's tree node) -> its own time in units.
    pub bins: Vec<FxHashMap<(u32, u32), u64>>,
    pub lanes: Vec<Lane>,
}

impl PathTime {
    /// Bins over `first..=last` (timer units) for threads named `names`.
    pub fn new(first: i64, last: i64, unit: f64, names: Vec<String>) -> PathTime {
        // A call's time is charged from one event to the next: the last instant needs no bin.
        let span = last.saturating_sub(first).max(1) as u64;
        let width = span.div_ceil(MAX_BINS as u64);
        let n = span.div_ceil(width) as usize;
        PathTime {
            origin: first,
            width: width as i64,
            unit,
            bins: vec![FxHashMap::default(); n],
            lanes: names
                .into_iter()
                .map(|name| Lane {
                    name,
                    busy: vec![0; n],
                    ..Lane::default()
                })
                .collect(),
        }
    }

    /// An event of `thread` at `t`: its lane spans it.
    pub fn saw(&mut self, thread: usize, t: i64) {
        if let Some(lane) = self.lanes.get_mut(thread) {
            lane.first = Some(lane.first.map_or(t, |f| f.min(t)));
            lane.last = lane.last.max(t);
        }
    }

    /// The call at `node` was the innermost one open on `thread` from `from` to `to`.
    pub fn accrue(&mut self, thread: usize, node: u32, from: i64, to: i64) {
        let mut at = from.max(self.origin);
        while at < to {
            let i = ((at - self.origin) / self.width) as usize;
            let Some(bin) = self.bins.get_mut(i) else {
                return;
            };
            let end = (self.origin + (i as i64 + 1) * self.width).min(to);
            let units = (end - at) as u64;
            *bin.entry((thread as u32, node)).or_default() += units;
            if let Some(b) = self.lanes.get_mut(thread).and_then(|l| l.busy.get_mut(i)) {
                *b += units;
            }
            at = end;
        }
    }

    /// Units of bin `i` within the lane's span (its first to its last event).
    pub fn alive(&self, lane: &Lane, i: usize) -> u64 {
        let Some(first) = lane.first else { return 0 };
        let start = self.origin + i as i64 * self.width;
        let end = start + self.width;
        (end.min(lane.last) - start.max(first)).max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_spanning_bins_is_split_over_them() {
        assert_eq!(PathTime::new(0, 1024, 1.0, vec![]).bins.len(), 1024);
        let mut t = PathTime::new(0, 2047, 1.0, vec!["main".into()]);
        assert_eq!((t.width, t.bins.len()), (2, 1024));
        t.saw(0, 1);
        t.saw(0, 6);
        t.accrue(0, 5, 1, 6);
        assert_eq!(t.bins[0][&(0, 5)], 1);
        assert_eq!(t.bins[1][&(0, 5)], 2);
        assert_eq!(t.bins[2][&(0, 5)], 2);
        assert_eq!(&t.lanes[0].busy[..4], &[1, 2, 2, 0]);
        assert_eq!(t.alive(&t.lanes[0], 0), 1);
        assert_eq!(t.alive(&t.lanes[0], 3), 0);
    }
}
