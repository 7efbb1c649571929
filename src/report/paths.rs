//! Real call paths, as a tree with labels: from a sampling run's stacks (each stack's samples
//! on its path) or from a timeline's calls and returns (each call's time less its callees' on
//! its path). With more than one thread, each thread is a node at the top.

use std::collections::HashMap;

use crate::core::timeline::{Event, ENTER, LEAVE};
use crate::samples::profile::Profile;

use super::path_time::PathTime;
use super::tree::Tree;

/// What the weights of a tree count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Weight {
    /// Samples, each standing for `interval` seconds.
    Samples { interval: f64 },
    /// Seconds.
    Seconds,
}

/// A tree of real paths and the text of its labels.
#[derive(Clone, Debug)]
pub struct Paths {
    pub tree: Tree,
    pub labels: Vec<String>,
    /// What each label names: `(name, file, first line)` of a function, None for a thread.
    pub functions: Vec<Option<(String, String, i64)>>,
    /// The top nodes that are threads, with the thread's name (empty with one thread).
    pub threads: Vec<(u32, String)>,
    pub weight: Weight,
    /// A timeline's paths by time (none for a sampling run's, whose samples keep their own).
    pub time: Option<PathTime>,
}

/// How a frame is labelled: `name (file:line)`, a built-in by its name alone.
pub fn frame_label(file: &str, line: i64, name: &str) -> String {
    if file == "~" && line == 0 {
        name.to_string()
    } else {
        format!("{name} ({file}:{line})")
    }
}

/// The paths of a sampling run, by function (the lines within a function are one frame).
pub fn from_samples(p: &Profile) -> Paths {
    let mut labels: Vec<String> = p
        .functions
        .iter()
        .map(|f| frame_label(&f.filename, f.first_line, &f.name))
        .collect();
    let mut functions: Vec<_> = p
        .functions
        .iter()
        .map(|f| Some((f.name.clone(), f.filename.clone(), f.first_line)))
        .collect();
    let counted: Vec<u32> = (0..p.threads.len() as u32)
        .filter(|&t| p.threads[t as usize].samples > 0)
        .collect();
    let many = counted.len() > 1;
    let mut tree = Tree::new();
    let mut tops: HashMap<u32, u32> = HashMap::new();
    let mut threads = Vec::new();
    if many {
        for &t in &counted {
            labels.push(p.thread_title(t));
            functions.push(None);
            let node = tree.child(0, (labels.len() - 1) as u32);
            tops.insert(t, node);
            threads.push((node, p.thread_label(t)));
        }
    }
    let mut path: Vec<u32> = Vec::new();
    for ((thread, frames), count) in &p.stacks {
        if count.samples == 0 {
            continue;
        }
        path.clear();
        path.extend(
            frames
                .iter()
                .filter_map(|&fr| p.frames.get_index(fr as usize).map(|fr| fr.function)),
        );
        let under = tops.get(thread).copied().unwrap_or(0);
        tree.add_path(under, &path, count.samples as f64);
    }
    Paths {
        tree,
        labels,
        functions,
        threads,
        weight: Weight::Samples {
            interval: p.interval,
        },
        time: None,
    }
}

/// An open call on a thread's stack: its node, start, and the time of its callees so far.
struct Open {
    node: u32,
    start: i64,
    inner: i64,
}

/// The paths of a timeline. `function(key)` names a key `(name, file, line)`; `threads` names
/// the timeline's thread indices; times are timer units of `seconds_per_unit` seconds. A
/// return whose call is no longer in the buffer (a ring that wrapped) is taken as a call open
/// from the first kept event, under the calls it returned to; calls still open at the end
/// close at the last kept event.
pub fn from_timeline(
    events: &[Event],
    function: &dyn Fn(usize) -> (String, String, i64),
    threads: &[String],
    seconds_per_unit: f64,
) -> Paths {
    let calls = || events.iter().filter(|e| e.kind == ENTER || e.kind == LEAVE);
    let n_threads = calls().map(|e| e.thread as usize + 1).max().unwrap_or(0);
    let (t_first, t_last) = match (calls().next(), calls().next_back()) {
        (Some(a), Some(b)) => (a.t, b.t),
        _ => (0, 0),
    };
    let mut labels: Vec<String> = Vec::new();
    let mut functions: Vec<Option<(String, String, i64)>> = Vec::new();
    let mut label_of: HashMap<usize, u32> = HashMap::new();
    let mut label = |labels: &mut Vec<String>, functions: &mut Vec<_>, key: usize| {
        *label_of.entry(key).or_insert_with(|| {
            let (name, file, line) = function(key);
            labels.push(frame_label(&file, line, &name));
            functions.push(Some((name, file, line)));
            (labels.len() - 1) as u32
        })
    };
    // The calls each thread had open before its first kept event: its unmatched returns,
    // innermost first.
    let mut unmatched: Vec<Vec<usize>> = vec![Vec::new(); n_threads];
    let mut depth = vec![0usize; n_threads];
    let mut seen = vec![false; n_threads];
    for e in calls() {
        let th = e.thread as usize;
        seen[th] = true;
        if e.kind == ENTER {
            depth[th] += 1;
        } else if depth[th] == 0 {
            unmatched[th].push(e.key);
        } else {
            depth[th] -= 1;
        }
    }
    let active: Vec<usize> = (0..n_threads).filter(|&t| seen[t]).collect();
    let mut tree = Tree::new();
    let mut top = vec![0u32; n_threads];
    let mut thread_tops = Vec::new();
    if active.len() > 1 {
        for &t in &active {
            let name = threads
                .get(t)
                .cloned()
                .unwrap_or_else(|| format!("thread {t}"));
            labels.push(name.clone());
            functions.push(None);
            top[t] = tree.child(0, (labels.len() - 1) as u32);
            thread_tops.push((top[t], name));
        }
    }
    let names = (0..n_threads)
        .map(|t| {
            threads
                .get(t)
                .cloned()
                .unwrap_or_else(|| format!("thread {t}"))
        })
        .collect();
    let mut time = PathTime::new(t_first, t_last, seconds_per_unit, names);
    // Each thread's last event: its innermost open call ran since (its own time, by time).
    let mut last = vec![t_first; n_threads];
    let mut stacks: Vec<Vec<Open>> = (0..n_threads).map(|_| Vec::new()).collect();
    for (th, keys) in unmatched.iter().enumerate() {
        for &key in keys.iter().rev() {
            let parent = stacks[th].last().map_or(top[th], |o| o.node);
            let node = tree.child(parent, label(&mut labels, &mut functions, key));
            tree.nodes[node as usize].calls += 1;
            stacks[th].push(Open {
                node,
                start: t_first,
                inner: 0,
            });
        }
    }
    let close = |tree: &mut Tree, stack: &mut Vec<Open>, end: i64| {
        if let Some(o) = stack.pop() {
            let span = end.saturating_sub(o.start).max(0);
            if let Some(n) = tree.nodes.get_mut(o.node as usize) {
                n.weight += (span - o.inner).max(0) as f64 * seconds_per_unit;
            }
            if let Some(parent) = stack.last_mut() {
                parent.inner += span;
            }
        }
    };
    for e in calls() {
        let th = e.thread as usize;
        time.saw(th, e.t);
        if let Some(o) = stacks[th].last() {
            time.accrue(th, o.node, last[th], e.t);
        }
        last[th] = e.t;
        if e.kind == ENTER {
            let parent = stacks[th].last().map_or(top[th], |o| o.node);
            let node = tree.child(parent, label(&mut labels, &mut functions, e.key));
            tree.nodes[node as usize].calls += 1;
            stacks[th].push(Open {
                node,
                start: e.t,
                inner: 0,
            });
        } else {
            close(&mut tree, &mut stacks[th], e.t);
        }
    }
    for (th, stack) in stacks.iter_mut().enumerate() {
        if let Some(o) = stack.last() {
            time.saw(th, t_last);
            time.accrue(th, o.node, last[th], t_last);
        }
        while !stack.is_empty() {
            close(&mut tree, stack, t_last);
        }
    }
    Paths {
        tree,
        labels,
        functions,
        threads: thread_tops,
        weight: Weight::Seconds,
        time: Some(time),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::samples::profile::tests::small;

    fn lines(p: &Paths, under: u32) -> Vec<(String, u64)> {
        let label = |l: u32| p.labels[l as usize].clone();
        p.tree.folded(under, 1.0, &label)
    }

    #[test]
    fn samples_by_function_under_their_threads() {
        let p = from_samples(&small());
        assert_eq!(p.threads.len(), 2);
        assert_eq!(p.threads[0].1, "MainThread");
        let all = lines(&p, 0);
        assert_eq!(
            all,
            [
                (
                    "MainThread (tid 100);main (prog.py:1);f (prog.py:10)".to_string(),
                    1
                ),
                (
                    "MainThread (tid 100);main (prog.py:1);f (prog.py:10);g (prog.py:20)"
                        .to_string(),
                    3
                ),
                (
                    "Thread (tid 101);run (prog.py:30);g (prog.py:20)".to_string(),
                    2
                ),
            ]
        );
        assert_eq!(
            lines(&p, p.threads[1].0),
            [("run (prog.py:30);g (prog.py:20)".to_string(), 2)]
        );
    }

    /// A timeline event of `kind` at time `t` of function `key` on thread `thread`.
    pub fn ev(kind: u8, t: i64, key: usize, thread: u16) -> Event {
        Event {
            t,
            key,
            depth: 0,
            thread,
            kind,
            hi: 0,
        }
    }

    #[test]
    fn timeline_calls_become_self_time_on_their_paths() {
        let names = ["main", "f", "g"];
        let function = |k: usize| (names[k].to_string(), "p.py".to_string(), k as i64 + 1);
        let events = [
            // g returns first: it was open before the buffer's first event, under f.
            ev(LEAVE, 10, 2, 0),
            ev(ENTER, 12, 2, 0),
            ev(LEAVE, 15, 2, 0),
            ev(LEAVE, 20, 1, 0),
            ev(ENTER, 21, 1, 0),
            ev(crate::core::timeline::MALLOC, 22, 1, 0),
        ];
        let p = from_timeline(&events, &function, &["MainThread".into()], 0.5);
        assert!(p.threads.is_empty());
        assert_eq!(
            lines(&p, 0),
            [
                ("f (p.py:2)".to_string(), 4),
                ("f (p.py:2);g (p.py:3)".to_string(), 2),
            ]
        );
        // f: 10..20 less g 10..10 and 12..15 = 7 units, plus 21..21 (open at the end) = 0;
        // g: 0 + 3 units. In seconds (0.5 a unit): f 3.5, g 1.5.
        let f = p.tree.tops()[0];
        assert_eq!(p.tree.nodes[f as usize].weight, 3.5);
        // Calls on each path: f's cut one and its later one; g's cut one and its later one.
        let g = p.tree.nodes.iter().position(|n| n.parent == f).unwrap();
        assert_eq!(
            (p.tree.nodes[f as usize].calls, p.tree.nodes[g].calls),
            (2, 2)
        );
        assert_eq!(
            p.functions[p.tree.nodes[g].label as usize],
            Some(("g".into(), "p.py".into(), 3))
        );
        assert_eq!(p.tree.total(0), 5.0);
    }

    #[test]
    fn threads_are_top_nodes() {
        let function = |k: usize| (format!("f{k}"), "p.py".to_string(), 1);
        let events = [
            ev(ENTER, 0, 0, 0),
            ev(ENTER, 1, 1, 1),
            ev(LEAVE, 5, 1, 1),
            ev(LEAVE, 8, 0, 0),
        ];
        let p = from_timeline(&events, &function, &["A".into(), "B".into()], 1.0);
        assert_eq!(
            p.threads.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(),
            ["A", "B"]
        );
        assert_eq!(
            lines(&p, 0),
            [
                ("A;f0 (p.py:1)".to_string(), 8),
                ("B;f1 (p.py:1)".to_string(), 4)
            ]
        );
    }
}
