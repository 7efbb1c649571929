//! Call paths estimated from the caller graph, for profiles that kept no paths (cProfile's and
//! `profile`'s stats files): the tree snakeviz draws as a sunburst, built here with gprof's
//! assumption that a function spends its time in the same proportions on every path that
//! reaches it. From the roots (functions nobody in the profile called) down, a callee's share
//! of a node is the time of its caller edge, scaled by the part of the caller's cumulative
//! time that this node stands for. Recursive edges are not followed (their time is inside the
//! outer call already). The heaviest nodes are expanded first, up to a number of nodes, and
//! nodes lighter than a share of the whole are left inside their parent, so a profile of a
//! million edges gives a tree a browser draws.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::stats::model::{CallValue, Callees, Model};

use super::tree::Tree;

/// The limits of an estimate.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most nodes made.
    pub nodes: usize,
    /// Nodes lighter than this share of the total are not made.
    pub min_share: f64,
    /// Deepest path.
    pub depth: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            nodes: 5000,
            min_share: 1.0 / 4000.0,
            depth: 100,
        }
    }
}

/// A node waiting to be expanded, heaviest first.
struct Pending {
    time: f64,
    node: u32,
    func: u32,
    depth: usize,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        self.time
            .total_cmp(&other.time)
            .then(other.node.cmp(&self.node))
    }
}

/// The functions with time that nobody in the profile called (its callers are not rows with time, or only
/// itself: the `profile` module's marker `profile:0(profiler)` is a row of no time that "calls"
/// the top functions), in the dict's order; if every function has a caller (a cycle), the one
/// of most cumulative time.
pub fn roots(model: &Model) -> Vec<u32> {
    let timed = |f: u32| model.stats.get(&f).is_some_and(|r| r.ct > 0.0);
    let out: Vec<u32> = model
        .stats
        .iter()
        .filter(|(&f, r)| timed(f) && !r.callers.iter().any(|e| e.func != f && timed(e.func)))
        .map(|(&f, _)| f)
        .collect();
    if !out.is_empty() {
        return out;
    }
    model
        .stats
        .iter()
        .max_by(|a, b| a.1.ct.total_cmp(&b.1.ct))
        .map(|(&f, _)| vec![f])
        .unwrap_or_default()
}

/// Seconds of `g`'s cumulative time spent under calls from its caller, by the edge: its own
/// cumulative time for cProfile's tuples; for `profile`'s plain counts, the caller's share of
/// `g`'s calls.
fn edge_time(model: &Model, g: u32, value: &CallValue) -> f64 {
    let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    match *value {
        CallValue::Tuple { ct, .. } => clean(ct),
        CallValue::Count(n) => match model.stats.get(&g) {
            Some(r) if r.nc > 0 => clean(r.ct) * (n.max(0) as f64 / r.nc as f64),
            _ => 0.0,
        },
    }
}

/// The estimated tree; labels are function ids of `model`. Returns it and whether a limit cut
/// it.
pub fn estimate(model: &Model, callees: &Callees, limits: Limits) -> (Tree, bool) {
    let mut tree = Tree::new();
    let mut cut = false;
    let mut heap = BinaryHeap::new();
    let ct = |f: u32| model.stats.get(&f).map_or(0.0, |r| r.ct);
    let roots = roots(model);
    let total: f64 = roots
        .iter()
        .map(|&f| ct(f).max(0.0))
        .filter(|x| x.is_finite())
        .sum();
    let floor = total * limits.min_share;
    for &f in &roots {
        let time = ct(f);
        if !(time.is_finite() && time > 0.0) {
            continue;
        }
        let node = tree.child(0, f);
        tree.nodes[node as usize].weight = time;
        heap.push(Pending {
            time,
            node,
            func: f,
            depth: 1,
        });
    }
    let mut on_path: Vec<u32> = Vec::new();
    while let Some(p) = heap.pop() {
        if p.depth >= limits.depth {
            cut = true;
            continue;
        }
        // The functions on this node's path, which its callees do not recurse into.
        on_path.clear();
        let mut n = p.node;
        while n != 0 {
            let node = tree.nodes[n as usize];
            on_path.push(node.label);
            n = node.parent;
        }
        let whole = ct(p.func);
        let scale = if whole > 0.0 { p.time / whole } else { 0.0 };
        let mut shares: Vec<(u32, f64)> = callees
            .of(p.func)
            .iter()
            .filter(|e| !on_path.contains(&e.func))
            .map(|e| (e.func, edge_time(model, e.func, &e.value) * scale))
            .filter(|&(_, t)| t > 0.0)
            .collect();
        let sum: f64 = shares.iter().map(|s| s.1).sum();
        if sum > p.time {
            // Overlapping edges (recursion through others) cannot hold more than the node.
            for s in &mut shares {
                s.1 *= p.time / sum;
            }
        }
        let mut kept = 0.0;
        for (g, time) in shares {
            if time < floor {
                continue;
            }
            if tree.nodes.len() >= limits.nodes {
                cut = true;
                break;
            }
            let node = tree.child(p.node, g);
            tree.nodes[node as usize].weight = time;
            kept += time;
            heap.push(Pending {
                time,
                node,
                func: g,
                depth: p.depth + 1,
            });
        }
        // What the children took is theirs; the rest is this node's own.
        tree.nodes[p.node as usize].weight = (p.time - kept).max(0.0);
    }
    (tree, cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::model::{Edge, Record};

    fn row(m: &mut Model, name: &str, tt: f64, ct: f64, callers: &[(u32, f64)]) -> u32 {
        let f = m.func_id(b"p.py", name.len() as i64, name.as_bytes());
        m.stats.insert(
            f,
            Record {
                cc: 1,
                nc: 1,
                tt,
                ct,
                ints: 0,
                callers: callers
                    .iter()
                    .map(|&(func, ct)| Edge {
                        func,
                        value: CallValue::floats(1, 1, 0.0, ct),
                    })
                    .collect(),
            },
        );
        f
    }

    fn folded(m: &Model, limits: Limits) -> Vec<(String, u64)> {
        let (t, _) = estimate(m, &m.callees(), limits);
        let label = |f: u32| String::from_utf8_lossy(m.string(m.func(f).name)).into_owned();
        t.folded(0, 1.0, &label)
    }

    #[test]
    fn a_shared_callee_is_split_by_its_callers_edges() {
        let mut m = Model::default();
        let main = m.func_id(b"p.py", 4, b"main");
        let a = m.func_id(b"p.py", 1, b"a");
        let b = m.func_id(b"p.py", 1, b"b");
        let c = m.func_id(b"p.py", 1, b"c");
        row(&mut m, "main", 10.0, 100.0, &[]);
        row(&mut m, "a", 10.0, 60.0, &[(main, 60.0)]);
        row(&mut m, "b", 10.0, 30.0, &[(main, 30.0)]);
        row(&mut m, "c", 70.0, 70.0, &[(a, 50.0), (b, 20.0)]);
        let _ = c;
        assert_eq!(
            folded(&m, Limits::default()),
            [
                ("main".to_string(), 10),
                ("main;a".to_string(), 10),
                ("main;a;c".to_string(), 50),
                ("main;b".to_string(), 10),
                ("main;b;c".to_string(), 20),
            ]
        );
        assert_eq!(roots(&m), [main]);
    }

    #[test]
    fn recursion_is_not_followed_and_limits_hold() {
        let mut m = Model::default();
        let f = m.func_id(b"p.py", 1, b"f");
        let g = m.func_id(b"p.py", 1, b"g");
        row(&mut m, "r", 0.0, 10.0, &[]);
        let r = m.find_func(b"p.py", 1, b"r").unwrap();
        row(&mut m, "f", 4.0, 10.0, &[(r, 10.0), (f, 8.0), (g, 3.0)]);
        row(&mut m, "g", 6.0, 6.0, &[(f, 6.0)]);
        let lines = folded(&m, Limits::default());
        assert_eq!(lines, [("r;f".to_string(), 4), ("r;f;g".to_string(), 6)]);
        let (t, cut) = estimate(
            &m,
            &m.callees(),
            Limits {
                nodes: 2,
                ..Limits::default()
            },
        );
        assert!(cut);
        assert_eq!(t.nodes.len(), 2);
    }

    #[test]
    fn the_profile_modules_marker_is_no_root() {
        let mut m = Model::default();
        let marker = row(&mut m, "profiler", 0.0, 0.0, &[]);
        let top = row(&mut m, "top", 1.0, 3.0, &[(marker, 0.0)]);
        row(&mut m, "g", 2.0, 2.0, &[(top, 2.0)]);
        assert_eq!(roots(&m), [top]);
        assert_eq!(folded(&m, Limits::default()).len(), 2);
    }

    #[test]
    fn a_cycle_has_its_heaviest_function_as_root() {
        let mut m = Model::default();
        let a = m.func_id(b"p.py", 1, b"a");
        let b = m.func_id(b"p.py", 1, b"b");
        row(&mut m, "a", 1.0, 5.0, &[(b, 1.0)]);
        row(&mut m, "b", 1.0, 2.0, &[(a, 2.0)]);
        assert_eq!(roots(&m), [a]);
        assert!(estimate(&m, &m.callees(), Limits::default()).0.nodes.len() == 3);
    }
}
