//! One profile of the samples of several processes (a program and the processes it started):
//! functions and frames merged by what they are, so that the stats, the flame graph and the
//! per-line report cover the whole program; each process's threads kept apart, tagged with its
//! pid (`Thread::process`).

use super::profile::{Count, Frame, Mode, Profile};

/// The merge of `parts` (each a process's pid and profile), threads in the parts' order.
/// Ticks asked and taken, and cut stacks, add up (a tick read in two processes counts twice);
/// the duration is the longest.
pub fn merge<'a>(
    interval: f64,
    mode: Mode,
    parts: impl IntoIterator<Item = (u32, &'a Profile)>,
) -> Profile {
    let mut out = Profile::new(interval, mode);
    let mut functions: Vec<u32> = Vec::new();
    let mut frames: Vec<u32> = Vec::new();
    let mut ids: Vec<u32> = Vec::new();
    for (pid, part) in parts {
        functions.clear();
        functions.extend(part.functions.iter().map(|f| out.function(f.clone())));
        frames.clear();
        frames.extend(part.frames.iter().map(|f| {
            let frame = Frame {
                function: functions[f.function as usize],
                line: f.line,
            };
            out.frames.insert_full(frame).0 as u32
        }));
        let first = out.threads.len() as u32;
        for t in &part.threads {
            let mut thread = t.clone();
            thread.process = pid;
            out.push_thread(thread);
        }
        for ((thread, stack), count) in &part.stacks {
            ids.clear();
            ids.extend(stack.iter().map(|&f| frames[f as usize]));
            let key = (first + thread, ids.as_slice().into());
            let total: &mut Count = out.stacks.entry(key).or_default();
            total.samples += count.samples;
            total.on_cpu += count.on_cpu;
        }
        out.asked += part.asked;
        out.taken += part.taken;
        out.truncated += part.truncated;
        out.reread += part.reread;
        out.pauses += part.pauses;
        out.paused += part.paused;
        out.duration = out.duration.max(part.duration);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::{function, sample, small};

    #[test]
    fn since_an_earlier_merge_matches_what_moved() {
        // The parent gains a stack and a thread after the first merge: the child's threads and
        // stacks come later in the second, yet each is taken from its own.
        let mut parent = small();
        let mut child = Profile::new(0.001, Mode::Wall);
        let h = function(&mut child, "child.py", 1, "h");
        let t = child.thread(200, 9);
        let at = |function, line| [Frame { function, line }];
        child.add(t, &at(h, 2), false, 3);
        let before = merge(0.001, Mode::Wall, [(1, &parent), (2, &child)]);
        let k = function(&mut parent, "prog.py", 40, "k");
        let late = parent.thread(102, 10);
        parent.add(late, &at(k, 41), false, 4);
        child.add(t, &at(h, 2), false, 5);
        let after = merge(0.001, Mode::Wall, [(1, &parent), (2, &child)]);
        let d = after.since(&before);
        let counts: Vec<(String, u64)> = d
            .stacks
            .iter()
            .map(|((_, frames), c)| (d.function_of(frames[0]).unwrap().name.clone(), c.samples))
            .collect();
        assert_eq!(counts, [("k".to_string(), 4), ("h".to_string(), 5)]);
        let child_thread = d.threads.iter().find(|t| t.process == 2).unwrap();
        assert_eq!(child_thread.samples, 5);
        // A merge's numbers move: no samples by time from it.
        assert!(d.time.is_none());
    }

    #[test]
    fn functions_merge_and_threads_stay_apart_under_their_pids() {
        let parent = small();
        let mut child = Profile::new(0.001, Mode::Wall);
        let g = function(&mut child, "prog.py", 20, "g");
        let h = function(&mut child, "child.py", 1, "h");
        // The child's main thread has the OS id of the parent's (pid 100 reused: never at
        // once, but a merge must not care) and its pid as process.
        let t = child.thread(100, 7);
        sample(&mut child, t, &[(g, 21), (h, 2)], true);
        sample(&mut child, t, &[(g, 21), (h, 2)], false);
        child.asked = 3;
        child.taken = 2;
        child.duration = 0.5;

        let merged = merge(0.001, Mode::Wall, [(100, &parent), (200, &child)]);
        assert_eq!(merged.threads.len(), 3);
        assert_eq!(merged.threads[2].process, 200);
        assert_eq!(merged.threads[2].samples, 2);
        // g is one function in both processes; h is new.
        assert_eq!(merged.functions.len(), 5);
        assert_eq!(merged.samples(), parent.samples() + 2);
        assert_eq!((merged.asked, merged.taken), (7, 6));
        assert_eq!(merged.duration, 0.5);
        let child_stack = merged
            .stacks
            .iter()
            .find(|((thread, _), _)| *thread == 2)
            .expect("the child's stack");
        let names: Vec<&str> = child_stack
            .0
             .1
            .iter()
            .filter_map(|&f| merged.function_of(f))
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(names, ["h", "g"]);
        assert_eq!((child_stack.1.samples, child_stack.1.on_cpu), (2, 1));
        assert_eq!(merged.thread_label(2), "Thread 100 (pid 200)");
        assert_eq!(merged.thread_label(0), "MainThread (pid 100)");
        assert_eq!(merged.thread_title(0), "MainThread (pid 100)");
        assert_eq!(merged.thread_title(1), "Thread (pid 100, tid 101)");
        assert_eq!(merge(0.01, Mode::Cpu, []).threads.len(), 0);
    }
}
