//! The data of the report's time view: a sampling run's samples by time (`samples::timebins`),
//! as each thread's activity per bin and, per bin, the call stacks counted (as paths of report
//! function ids), from which the page makes the table and flame graph of any stretch.

use std::collections::HashMap;

use crate::samples::profile::Profile;

use super::funcs::Funcs;
use super::json::Json;

/// Writes `"time"`: null for a profile without bins, else `{origin, width, n, interval, mode,
/// lanes: [{thread, name, counted, cpu, idle, dropped}], stacks: {thread, n, f}, cells: {n, s,
/// w}}`. Times in seconds; a lane's columns have a value per bin (ticks); `stacks` lists each
/// distinct (thread, functions root first) once; `cells` per bin how many (stack, ticks)
/// pairs follow.
pub fn write(j: &mut Json, p: Option<&Profile>, funcs: &mut Funcs) {
    j.key("time");
    let Some((p, time)) = p.and_then(|p| Some((p, p.time.as_ref()?))) else {
        j.null();
        return;
    };
    let n = time.bins.len();
    let mut stacks = Stacks::new(p);
    // Per thread and bin: counted, on a CPU, idle, dropped.
    let mut lanes = vec![vec![[0u64; 4]; n]; p.threads.len()];
    let (mut cell_n, mut cell_s, mut cell_w) = (Vec::with_capacity(n), Vec::new(), Vec::new());
    for (b, bin) in time.bins.iter().enumerate() {
        // Ticks per report stack (two profile stacks may differ by lines alone).
        let mut cells: Vec<(u32, u64)> = Vec::with_capacity(bin.stacks.len());
        for (&s, &(ticks, on_cpu)) in &bin.stacks {
            let Some(id) = stacks.id(p, s, funcs) else {
                continue;
            };
            if let Some(lane) = lanes.get_mut(stacks.thread[id as usize] as usize) {
                lane[b][0] += ticks;
                lane[b][1] += on_cpu;
            }
            cells.push((id, ticks));
        }
        cells.sort_unstable();
        cells.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 += next.1;
            }
            same
        });
        for (&t, &(idle, dropped)) in &bin.threads {
            if let Some(lane) = lanes.get_mut(t as usize) {
                lane[b][2] += idle;
                lane[b][3] += dropped;
            }
        }
        cell_n.push(cells.len() as i64);
        cell_s.extend(cells.iter().map(|c| i64::from(c.0)));
        cell_w.extend(cells.iter().map(|c| as_int(c.1)));
    }
    j.open_object();
    j.key("origin");
    j.float(time.origin as f64 / 1e6);
    j.key("width");
    j.float(time.width as f64 / 1e6);
    j.key("n");
    j.int(n as i64);
    j.key("interval");
    j.float(p.interval);
    j.key("mode");
    j.str(p.mode.name());
    j.key("lanes");
    j.open_array();
    for (t, lane) in lanes.iter().enumerate() {
        if lane.iter().all(|c| c.iter().all(|&x| x == 0)) {
            continue;
        }
        j.open_object();
        j.key("thread");
        j.int(t as i64);
        j.key("name");
        j.str(&p.thread_label(t as u32));
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
    j.ints("thread", stacks.thread.iter().map(|&t| i64::from(t)));
    j.ints("n", stacks.len);
    j.ints("f", stacks.funcs);
    j.close_object();
    j.key("cells");
    j.open_object();
    j.ints("n", cell_n);
    j.ints("s", cell_s);
    j.ints("w", cell_w);
    j.close_object();
    j.close_object();
}

/// The report's stacks: each distinct (thread, function ids root first) of the profile's
/// stacks, made on first sight.
struct Stacks {
    ids: HashMap<(u32, Vec<u32>), u32>,
    of_stack: Vec<u32>,
    function_id: Vec<u32>,
    thread: Vec<u32>,
    len: Vec<i64>,
    funcs: Vec<i64>,
}

impl Stacks {
    fn new(p: &Profile) -> Stacks {
        Stacks {
            ids: HashMap::new(),
            of_stack: vec![u32::MAX; p.stacks.len()],
            function_id: vec![u32::MAX; p.functions.len()],
            thread: Vec::new(),
            len: Vec::new(),
            funcs: Vec::new(),
        }
    }

    /// The report id of the profile's stack `s`.
    fn id(&mut self, p: &Profile, s: u32, funcs: &mut Funcs) -> Option<u32> {
        let slot = *self.of_stack.get(s as usize)?;
        if slot != u32::MAX {
            return Some(slot);
        }
        let ((thread, frames), _) = p.stacks.get_index(s as usize)?;
        let mut path = Vec::with_capacity(frames.len());
        for &fr in frames.iter() {
            let fi = p.frames.get_index(fr as usize)?.function as usize;
            let id = self.function_id.get_mut(fi)?;
            if *id == u32::MAX {
                let f = p.functions.get_index(fi)?;
                *id = funcs.of(f.filename.as_bytes(), f.first_line, f.name.as_bytes());
            }
            path.push(*id);
        }
        let next = self.thread.len() as u32;
        let id = *self.ids.entry((*thread, path.clone())).or_insert(next);
        if id == next {
            self.thread.push(*thread);
            self.len.push(path.len() as i64);
            self.funcs.extend(path.iter().map(|&f| i64::from(f)));
        }
        self.of_stack[s as usize] = id;
        Some(id)
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
        write(&mut j, Some(&p), &mut funcs);
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
        // Without bins: null.
        let mut j = Json::new();
        j.open_object();
        write(&mut j, Some(&Profile::new(0.001, Mode::Wall)), &mut funcs);
        j.close_object();
        assert!(String::from_utf8(j.out).unwrap().contains("\"time\":null"));
    }
}
