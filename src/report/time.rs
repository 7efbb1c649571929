//! The data of the report's time view: a sampling run's samples by time (`samples::timebins`)
//! or a timeline's call paths by time (`path_time`), as each thread's activity per bin and, per
//! bin, the call stacks there (as paths of report function ids) with their weight, from which
//! the page makes the table and flame graph of any stretch.

use std::collections::HashMap;

use crate::samples::profile::Profile;

use super::funcs::Funcs;
use super::json::Json;
use super::paths::Paths;

/// What the view is drawn from, in one shape whatever the source.
struct View {
    /// Seconds of the first bin's start, and of a bin.
    origin: f64,
    width: f64,
    /// Seconds a unit of weight stands for (a sample's interval, a timer unit).
    unit: f64,
    /// "wall", "cpu", "gil", or "traced".
    mode: &'static str,
    /// Per thread: its index, name, and per bin counted, on a CPU, idle, dropped (weights).
    lanes: Vec<(u32, String, Vec<[u64; 4]>)>,
    stacks: Stacks,
    /// Per bin: (report stack, weight), by stack.
    cells: Vec<Vec<(u32, u64)>>,
}

/// Writes `"time"`: null when neither a sampling run's bins nor a timeline's are given, else
/// `{origin, width, n, interval, mode, lanes: [{thread, name, counted, cpu, idle, dropped}],
/// stacks: {thread, n, f}, cells: {n, s, w}}`. Times in seconds; weights in units of
/// `interval` seconds; a lane's columns have a value per bin; `stacks` lists each distinct
/// (thread, functions root first) once; `cells` per bin how many (stack, weight) pairs follow.
pub fn write(j: &mut Json, sampled: Option<&Profile>, paths: Option<&Paths>, funcs: &mut Funcs) {
    j.key("time");
    let view = match (sampled, paths) {
        (Some(p), _) => of_samples(p, funcs),
        (None, Some(paths)) => of_paths(paths, funcs),
        (None, None) => None,
    };
    // Nothing by time (no sample, no call): no view.
    let Some(v) = view.filter(|v| v.cells.iter().any(|c| !c.is_empty())) else {
        j.null();
        return;
    };
    j.open_object();
    j.key("origin");
    j.float(v.origin);
    j.key("width");
    j.float(v.width);
    j.key("n");
    j.int(v.cells.len() as i64);
    j.key("interval");
    j.float(v.unit);
    j.key("mode");
    j.str(v.mode);
    j.key("lanes");
    j.open_array();
    for (t, name, lane) in &v.lanes {
        if lane.iter().all(|c| c.iter().all(|&x| x == 0)) {
            continue;
        }
        j.open_object();
        j.key("thread");
        j.int(i64::from(*t));
        j.key("name");
        j.str(name);
        for (k, key) in ["counted", "cpu", "idle", "dropped"]
            .into_iter()
            .enumerate()
        {
            j.ints(key, lane.iter().map(|c| as_int(c[k])));
        }
        j.close_object();
    }
    j.close_array();
    j.key("stacks");
    j.open_object();
    j.ints("thread", v.stacks.thread.iter().map(|&t| i64::from(t)));
    j.ints("n", v.stacks.len);
    j.ints("f", v.stacks.funcs);
    j.close_object();
    j.key("cells");
    j.open_object();
    j.ints("n", v.cells.iter().map(|c| c.len() as i64));
    j.ints("s", v.cells.iter().flatten().map(|c| i64::from(c.0)));
    j.ints("w", v.cells.iter().flatten().map(|c| as_int(c.1)));
    j.close_object();
    j.close_object();
}

/// Sums the weights of the same stack (two profile stacks may differ by lines alone).
fn merged(mut cells: Vec<(u32, u64)>) -> Vec<(u32, u64)> {
    cells.sort_unstable();
    cells.dedup_by(|next, kept| {
        let same = next.0 == kept.0;
        if same {
            kept.1 += next.1;
        }
        same
    });
    cells
}

/// A sampling run's view: per bin its counted stacks, and each thread's reads by state.
fn of_samples(p: &Profile, funcs: &mut Funcs) -> Option<View> {
    let time = p.time.as_ref()?;
    let n = time.bins.len();
    let mut stacks = Stacks::default();
    // The report stack of each profile stack, made on first sight.
    let mut known = vec![u32::MAX; p.stacks.len()];
    let mut lanes = vec![vec![[0u64; 4]; n]; p.threads.len()];
    let mut cells = Vec::with_capacity(n);
    for (b, bin) in time.bins.iter().enumerate() {
        let mut here: Vec<(u32, u64)> = Vec::with_capacity(bin.stacks.len());
        for (&s, &(ticks, on_cpu)) in &bin.stacks {
            let Some(((thread, frames), _)) = p.stacks.get_index(s as usize) else {
                continue;
            };
            let id = match known[s as usize] {
                u32::MAX => {
                    let path = frames.iter().filter_map(|&fr| {
                        let f = p.function_of(fr)?;
                        Some(funcs.of(f.filename.as_bytes(), f.first_line, f.name.as_bytes()))
                    });
                    known[s as usize] = stacks.id(*thread, path);
                    known[s as usize]
                }
                id => id,
            };
            if let Some(lane) = lanes.get_mut(*thread as usize) {
                lane[b][0] += ticks;
                lane[b][1] += on_cpu;
            }
            here.push((id, ticks));
        }
        for (&t, &(idle, dropped)) in &bin.threads {
            if let Some(lane) = lanes.get_mut(t as usize) {
                lane[b][2] += idle;
                lane[b][3] += dropped;
            }
        }
        cells.push(merged(here));
    }
    Some(View {
        origin: time.origin as f64 / 1e6,
        width: time.width as f64 / 1e6,
        unit: p.interval,
        mode: p.mode.name(),
        lanes: lanes
            .into_iter()
            .enumerate()
            .map(|(t, lane)| (t as u32, p.thread_label(t as u32), lane))
            .collect(),
        stacks,
        cells,
    })
}

/// A timeline's view: per bin each path's own time, and each thread's time in calls (and out
/// of them, between its first event and its last).
fn of_paths(paths: &Paths, funcs: &mut Funcs) -> Option<View> {
    let time = paths.time.as_ref()?;
    let mut stacks = Stacks::default();
    let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
    let mut path = Vec::new();
    let cells = time
        .bins
        .iter()
        .map(|bin| {
            let here = bin
                .iter()
                .map(|(&(thread, node), &units)| {
                    let id = *ids.entry((thread, node)).or_insert_with(|| {
                        path.clear();
                        // The node's functions, innermost first up to the root or the thread.
                        let mut at = node;
                        while at != 0 {
                            let n = &paths.tree.nodes[at as usize];
                            match paths.functions.get(n.label as usize) {
                                Some(Some((name, file, line))) => {
                                    path.push(funcs.of(file.as_bytes(), *line, name.as_bytes()))
                                }
                                _ => break,
                            }
                            at = n.parent;
                        }
                        stacks.id(thread, path.iter().rev().copied())
                    });
                    (id, units)
                })
                .collect();
            merged(here)
        })
        .collect();
    let lanes = time
        .lanes
        .iter()
        .enumerate()
        .map(|(t, lane)| {
            let columns = (0..time.bins.len())
                .map(|i| {
                    let busy = lane.busy[i];
                    [busy, 0, time.alive(lane, i).saturating_sub(busy), 0]
                })
                .collect();
            (t as u32, lane.name.clone(), columns)
        })
        .collect();
    Some(View {
        origin: 0.0,
        width: time.width as f64 * time.unit,
        unit: time.unit,
        mode: "traced",
        lanes,
        stacks,
        cells,
    })
}

/// The report's stacks: each distinct (thread, function ids root first) once.
#[derive(Default)]
struct Stacks {
    ids: HashMap<(u32, Vec<u32>), u32>,
    thread: Vec<u32>,
    len: Vec<i64>,
    funcs: Vec<i64>,
}

impl Stacks {
    fn id(&mut self, thread: u32, path: impl Iterator<Item = u32>) -> u32 {
        let path: Vec<u32> = path.collect();
        let next = self.thread.len() as u32;
        let id = *self.ids.entry((thread, path.clone())).or_insert(next);
        if id == next {
            self.thread.push(thread);
            self.len.push(path.len() as i64);
            self.funcs.extend(path.iter().map(|&f| i64::from(f)));
        }
        id
    }
}

fn as_int(x: u64) -> i64 {
    i64::try_from(x).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::function;
    use crate::samples::profile::{Frame, Mode};
    use crate::samples::seen::Seen;
    use crate::samples::timebins::TimeBins;

    #[test]
    fn stacks_differing_by_lines_alone_are_one_path_and_lanes_count_each_state() {
        let mut p = Profile::new(0.001, Mode::Wall);
        let a = function(&mut p, "prog.py", 1, "a");
        let main = p.thread(1, 1);
        let other = p.thread(2, 2);
        let mut time = TimeBins::new(0, 1000);
        for (at, line, on_cpu) in [(0, 2, true), (500, 3, false), (1500, 2, true)] {
            let stack = p.add(main, &[Frame { function: a, line }], on_cpu, 1);
            time.add(
                at,
                Seen::Counted {
                    stack,
                    on_cpu,
                    cut: false,
                },
                1,
            );
        }
        time.add(0, Seen::Idle { thread: other }, 2);
        p.time = Some(time);
        let mut j = Json::new();
        let mut funcs = Funcs::default();
        j.open_object();
        write(&mut j, Some(&p), None, &mut funcs);
        j.close_object();
        let v: serde_json::Value = serde_json::from_slice(&j.out).unwrap();
        let t = &v["time"];
        assert_eq!(t["n"], 2);
        assert_eq!(t["stacks"]["n"], serde_json::json!([1]));
        assert_eq!(t["cells"]["n"], serde_json::json!([1, 1]));
        assert_eq!(t["cells"]["w"], serde_json::json!([2, 1]));
        let lanes = t["lanes"].as_array().unwrap();
        assert_eq!(lanes.len(), 2);
        assert_eq!(lanes[0]["counted"], serde_json::json!([2, 1]));
        assert_eq!(lanes[0]["cpu"], serde_json::json!([1, 1]));
        assert_eq!(lanes[1]["idle"], serde_json::json!([2, 0]));
        // Without bins, or with no sample in them: null.
        let mut empty = Profile::new(0.001, Mode::Wall);
        empty.time = Some(TimeBins::new(0, 1000));
        let mut j = Json::new();
        j.open_object();
        write(&mut j, Some(&empty), None, &mut funcs);
        j.close_object();
        assert!(String::from_utf8(j.out).unwrap().contains("\"time\":null"));
        let mut j = Json::new();
        j.open_object();
        write(
            &mut j,
            Some(&Profile::new(0.001, Mode::Wall)),
            None,
            &mut funcs,
        );
        j.close_object();
        assert!(String::from_utf8(j.out).unwrap().contains("\"time\":null"));
    }
}
