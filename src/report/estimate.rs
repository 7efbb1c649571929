//! Call paths estimated from the caller graph, for profiles that kept no paths (cProfile's and
//! `profile`'s stats files): the tree snakeviz draws as a sunburst, built here with gprof's
//! assumption that a function spends its time in the same proportions on every path that
//! reaches it. From the roots (the calls no function in the profile made) down, a callee's share
//! of a node is the time of its caller edge, scaled by the part of the caller's cumulative
//! time that this node stands for. The heaviest nodes are expanded first, up to a number of
//! nodes, and nodes lighter than a share of the whole are left inside their parent, so a profile
//! of a million edges gives a tree a browser draws.
//!
//! Recursion is folded: a call of a function already on the path (`exec` run by an import inside
//! the program's `exec`, a macro calling itself through the template engine) is drawn as a frame
//! of no callees, since its callees' time is counted in the outer call's edges already; a
//! function calling itself directly is not drawn again. Recursive edges overlap the others, so a
//! node's callees are given its time heaviest first, each at most what is left: no frame is wider
//! than its parent, and the whole is the profile's total time.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::stats::model::{CallValue, Callees, Model};

use super::cycles::components;
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

/// A node waiting to be expanded (or, in `adopted`, a host and its unexplained time), heaviest
/// first.
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

/// A root of the estimate: a function, and the time of its calls that no function in the
/// profile made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Root {
    pub func: u32,
    pub time: f64,
}

/// Calls counted by a caller edge.
fn edge_calls(value: &CallValue) -> i64 {
    match *value {
        CallValue::Tuple { nc, .. } => nc.max(0),
        CallValue::Count(n) => n.max(0),
    }
}

/// The roots, in the dict's order: the functions with time some of whose calls no function with
/// time made (the program's `exec`, whose other calls the import system makes; a thread's
/// first function; the profiler's own `disable`; what the `profile` module's marker
/// `profile:0(profiler)`, a row of no time, "calls"). A root's time is its cumulative time less
/// what its callers' edges account for; recursion through its callers (an import's `exec` inside
/// the program's) makes those edges overlap its own time, and what that hides is given back to
/// the roots it was taken from, so that the roots add up to the profile's total time (the sum of
/// tottimes). If every call has a caller (a cycle), the function of most cumulative time.
/// Whether each function (by id) has a row with time: looked up an edge, so not hashed.
fn with_time(model: &Model) -> Vec<bool> {
    let size = model
        .stats
        .keys()
        .map(|&f| f as usize + 1)
        .max()
        .unwrap_or(0);
    let mut out = vec![false; size];
    for (&f, r) in &model.stats {
        out[f as usize] = r.ct > 0.0;
    }
    out
}

pub fn roots(model: &Model) -> Vec<Root> {
    let has_time = with_time(model);
    let timed = |f: u32| has_time.get(f as usize) == Some(&true);
    let finite = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    // (root, the time its callers' overlap may have hidden)
    let mut out: Vec<(Root, f64)> = Vec::new();
    for (&f, r) in &model.stats {
        let ct = finite(r.ct);
        if ct == 0.0 {
            continue;
        }
        let mut called: i64 = 0;
        let mut by_callers = 0.0;
        for e in r.callers.iter().filter(|e| timed(e.func)) {
            called = called.saturating_add(edge_calls(&e.value));
            if e.func != f {
                by_callers += edge_time(model, f, &e.value);
            }
        }
        if r.nc > called {
            let time = (ct - by_callers).clamp(0.0, ct);
            out.push((Root { func: f, time }, ct - time));
        }
    }
    if out.is_empty() {
        let top = model.stats.iter().max_by(|a, b| a.1.ct.total_cmp(&b.1.ct));
        if let Some((&func, r)) = top {
            out.push((
                Root {
                    func,
                    time: finite(r.ct),
                },
                0.0,
            ));
        }
    }
    let total: f64 = model.stats.values().map(|r| finite(r.tt)).sum();
    let have: f64 = out.iter().map(|r| r.0.time).sum();
    let room: f64 = out.iter().map(|r| r.1).sum();
    if have < total && room > 0.0 {
        let k = ((total - have) / room).min(1.0);
        for (r, hidden) in &mut out {
            r.time += k * *hidden;
        }
    }
    let have: f64 = out.iter().map(|r| r.0.time).sum();
    if have > 0.0 && total > 0.0 {
        for (r, _) in &mut out {
            r.time *= total / have;
        }
    }
    out.into_iter()
        .map(|r| r.0)
        .filter(|r| r.time > 0.0)
        .collect()
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

/// The caller graph with its cycles folded: each function's component (a cycle of functions
/// calling each other, or the function alone), the components' members and cumulative times.
/// Calls made by built-ins (`exec` running a module, `str.join` driving a generator) make no
/// cycle: a built-in calls whatever its callers hand it, and through `exec` or `str.join` every
/// module or generator would join one cycle with everything that imports or joins. Cycles
/// through a built-in are cut where the path comes back instead (see `estimate`).
struct Folding {
    /// Each function's component, by function id (`NONE` for functions with no time).
    comp: Vec<u32>,
    members: Vec<Vec<u32>>,
    /// A lone function's cumulative time; a cycle's, its members' own times and the time of
    /// the calls leaving it (at least its members' cumulative times).
    time: Vec<f64>,
    /// Whether another component calls into each component.
    entered: Vec<bool>,
    /// Each function's time in its callees (itself left out), by function id.
    below: Vec<f64>,
}

const NONE: u32 = u32::MAX;

impl Folding {
    fn new(model: &Model, callees: &Callees) -> Folding {
        let has_time = with_time(model);
        let size = has_time.len();
        let timed = |f: u32| has_time.get(f as usize) == Some(&true);
        let builtin = |f: u32| model.string(model.func(f).file) == b"~";
        let mut source = vec![false; size];
        for &f in model.stats.keys().filter(|&&f| timed(f) && !builtin(f)) {
            source[f as usize] = true;
        }
        let mut comp = components(
            size,
            |f| {
                if source[f as usize] {
                    callees.of(f).len()
                } else {
                    0
                }
            },
            |f, i| {
                let g = callees.of(f).get(i)?.func;
                (g != f && timed(g)).then_some(g)
            },
        );
        let mut members: Vec<Vec<u32>> = Vec::new();
        let mut number = vec![NONE; size];
        for &f in model.stats.keys() {
            let c = &mut comp[f as usize];
            if !timed(f) {
                *c = NONE;
                continue;
            }
            if number[*c as usize] == NONE {
                number[*c as usize] = members.len() as u32;
                members.push(Vec::new());
            }
            *c = number[*c as usize];
            members[*c as usize].push(f);
        }
        for (f, c) in comp.iter_mut().enumerate() {
            if !model.stats.contains_key(&(f as u32)) {
                *c = NONE;
            }
        }
        // One pass over the calls (a million is common): each component's calls leaving it,
        // whether another calls into it, each function's time in its callees.
        let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
        let mut own = vec![0.0; members.len()];
        let mut most = vec![0.0f64; members.len()];
        let mut out = vec![0.0; members.len()];
        let mut entered = vec![false; members.len()];
        let mut below = vec![0.0; size];
        for (&f, r) in &model.stats {
            let Some(&c) = comp.get(f as usize).filter(|&&c| c != NONE) else {
                continue;
            };
            own[c as usize] += clean(r.tt);
            most[c as usize] = most[c as usize].max(clean(r.ct));
            for e in callees.of(f).iter().filter(|e| e.func != f) {
                let g = comp.get(e.func as usize).copied().unwrap_or(NONE);
                if g == NONE {
                    continue;
                }
                let time = edge_time(model, e.func, &e.value);
                below[f as usize] += time;
                if g != c {
                    out[c as usize] += time;
                    entered[g as usize] = true;
                }
            }
        }
        let time = (0..members.len())
            .map(|c| match members[c].len() {
                1 => most[c],
                _ => (own[c] + out[c]).max(most[c]),
            })
            .collect();
        Folding {
            comp,
            members,
            time,
            entered,
            below,
        }
    }

    fn comp(&self, f: u32) -> u32 {
        self.comp.get(f as usize).copied().unwrap_or(NONE)
    }
}

/// What a fold is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A cycle's members, drawn as one frame.
    Cycle,
    /// A function called back through a built-in, drawn without callees.
    Back,
    /// Functions no function in the profile called (pstats kept one row of two functions of
    /// one file, line and name: the caller's edge went with the other), drawn under the
    /// function whose callees fall short of its cumulative time.
    Adopted,
}

/// What an estimate folded, with the time of those frames.
#[derive(Clone, Debug, PartialEq)]
pub struct Fold {
    pub kind: Kind,
    pub funcs: Vec<u32>,
    pub time: f64,
}

/// The calls the profile lost (see `Kind::Adopted`), found as gprof would find them missing:
/// components no root is in and no other component calls (unreachable), each given to the
/// function of most unexplained time (cumulative time less its own and its callees'), when
/// that can hold half of it or more. By host function: (the component's entry, its time).
fn adopted(model: &Model, fold: &Folding, roots: &[Root]) -> Adoptions {
    let clean = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    let mut rooted = vec![false; fold.members.len()];
    for r in roots {
        if let Some(x) = rooted.get_mut(fold.comp(r.func) as usize) {
            *x = true;
        }
    }
    let mut orphans: Vec<(u32, f64)> = Vec::new();
    for (c, m) in fold.members.iter().enumerate() {
        if rooted[c] || fold.entered[c] || fold.time[c] <= 0.0 {
            continue;
        }
        let entry = m.iter().copied().max_by(|a, b| {
            let ct = |f: &u32| model.stats.get(f).map_or(0.0, |r| r.ct);
            ct(a).total_cmp(&ct(b))
        });
        if let Some(f) = entry {
            orphans.push((f, fold.time[c]));
        }
    }
    let mut out = Adoptions::default();
    if orphans.is_empty() {
        return out;
    }
    orphans.sort_by(|a, b| b.1.total_cmp(&a.1));
    let orphan_comps: FxHashSet<u32> = orphans.iter().map(|o| fold.comp(o.0)).collect();
    // The hosts, most unexplained time first (a heap: orphans and hosts may be many).
    let mut hosts: BinaryHeap<Pending> = model
        .stats
        .iter()
        .filter(|(&f, _)| !orphan_comps.contains(&fold.comp(f)) && fold.comp(f) != NONE)
        .map(|(&f, r)| Pending {
            time: clean(r.ct) - clean(r.tt) - fold.below.get(f as usize).copied().unwrap_or(0.0),
            node: 0,
            func: f,
            depth: 0,
        })
        .filter(|h| h.time > 0.0)
        .collect();
    for (f, time) in orphans {
        let Some(mut host) = hosts.pop() else {
            break;
        };
        if host.time >= time / 2.0 {
            let given = time.min(host.time);
            host.time -= given;
            out.0.entry(host.func).or_default().push((f, given));
        }
        if host.time > 0.0 {
            hosts.push(host);
        }
    }
    out
}

/// Adopted calls, by host function: (the callee, the time of its calls).
#[derive(Default)]
struct Adoptions(FxHashMap<u32, Vec<(u32, f64)>>);

/// An estimate: the tree (labels are function ids of the model), whether a limit cut it, and
/// what it folded, heaviest first.
pub struct Estimate {
    pub tree: Tree,
    pub cut: bool,
    pub folded: Vec<Fold>,
}

/// The estimated tree of `model`.
pub fn estimate(model: &Model, callees: &Callees, limits: Limits) -> Estimate {
    let mut tree = Tree::new();
    let mut cut = false;
    let roots = roots(model);
    let fold = Folding::new(model, callees);
    let adoptions = adopted(model, &fold, &roots);
    // Folds by kind and component (a cycle) or function.
    let mut folded: Vec<((Kind, u32), Fold)> = Vec::new();
    let mut note = |kind: Kind, key: u32, funcs: &dyn Fn() -> Vec<u32>, time: f64| match folded
        .iter_mut()
        .find(|f| f.0 == (kind, key))
    {
        Some(f) => f.1.time += time,
        None => folded.push((
            (kind, key),
            Fold {
                kind,
                funcs: funcs(),
                time,
            },
        )),
    };
    let mut heap = BinaryHeap::new();
    let total: f64 = roots.iter().map(|r| r.time).sum();
    let floor = total * limits.min_share;
    for r in &roots {
        let node = tree.child(0, r.func);
        tree.nodes[node as usize].weight += r.time;
    }
    for node in tree.tops() {
        let n = tree.nodes[node as usize];
        heap.push(Pending {
            time: n.weight,
            node,
            func: n.label,
            depth: 1,
        });
    }
    // The cycles' frames: (component, the function naming the frame, its time).
    let mut entries: Vec<(u32, u32, f64)> = Vec::new();
    let mut shares: FxHashMap<u32, (f64, bool, bool)> = FxHashMap::default();
    let mut exits: FxHashMap<u32, Vec<(u32, f64, bool)>> = FxHashMap::default();
    let mut on_path: Vec<u32> = Vec::new();
    while let Some(p) = heap.pop() {
        if p.depth >= limits.depth {
            cut = true;
            continue;
        }
        // The components on this node's path: a call of one of them is recursion (through a
        // built-in), drawn without callees.
        on_path.clear();
        let mut n = p.node;
        while n != 0 {
            let node = tree.nodes[n as usize];
            on_path.push(fold.comp(node.label));
            n = node.parent;
        }
        let c = fold.comp(p.func);
        let Some(members) = fold.members.get(c as usize) else {
            continue;
        };
        let whole = fold.time[c as usize];
        let scale = if whole > 0.0 { p.time / whole } else { 0.0 };
        if members.len() > 1 {
            let by_tt = || {
                let tt = |f: u32| model.stats.get(&f).map_or(0.0, |r| r.tt);
                let mut m: Vec<(f64, u32)> = members.iter().map(|&f| (tt(f), f)).collect();
                m.sort_by(|a, b| b.0.total_cmp(&a.0));
                m.into_iter().map(|x| x.1).collect()
            };
            note(Kind::Cycle, c, &by_tt, p.time);
            entries.push((c, p.func, p.time));
        }
        // The calls leaving the component (made once a component: a cycle's members may be
        // many), then by callee: (time, whether it comes back to the path, whether the profile
        // lost them).
        let leaving = exits.entry(c).or_insert_with(|| {
            let mut out = Vec::new();
            for &f in members {
                let adopted = adoptions.0.get(&f).map_or(&[][..], Vec::as_slice);
                let calls = callees
                    .of(f)
                    .iter()
                    .map(|e| (e.func, edge_time(model, e.func, &e.value), false));
                for (g, time, lost) in calls.chain(adopted.iter().map(|&(g, t)| (g, t, true))) {
                    let gc = fold.comp(g);
                    if gc != NONE && gc != c && time > 0.0 {
                        out.push((g, time, lost));
                    }
                }
            }
            out
        });
        shares.clear();
        for &(callee, time, lost) in leaving.iter() {
            let s = shares.entry(callee).or_insert((0.0, false, false));
            s.0 += time * scale;
            s.1 = on_path.contains(&fold.comp(callee));
            s.2 |= lost;
        }
        let mut order: Vec<(u32, f64, bool, bool)> = shares
            .iter()
            .filter(|s| s.1 .0 > 0.0)
            .map(|(&g, &(t, r, lost))| (g, t, r, lost))
            .collect();
        // Re-entries last: the other calls count what the inner calls called, so theirs is
        // what those leave. Then heaviest first: when calls overlap, the outer holds the
        // inner; ties by function, so that the tree does not depend on the hash's order.
        order.sort_by(|a, b| a.2.cmp(&b.2).then(b.1.total_cmp(&a.1)).then(a.0.cmp(&b.0)));
        let mut left = p.time;
        for (g, share, reentry, lost) in order {
            let time = share.min(left);
            if time < floor || time <= 0.0 {
                continue;
            }
            if tree.nodes.len() >= limits.nodes {
                cut = true;
                break;
            }
            let node = tree.child(p.node, g);
            tree.nodes[node as usize].weight = time;
            left -= time;
            if lost {
                note(Kind::Adopted, g, &|| vec![g], time);
            }
            if reentry {
                note(Kind::Back, g, &|| vec![g], time);
                continue;
            }
            heap.push(Pending {
                time,
                node,
                func: g,
                depth: p.depth + 1,
            });
        }
        // What the children took is theirs; the rest is this node's own.
        tree.nodes[p.node as usize].weight = left.max(0.0);
    }
    // A cycle's functions named first are those its frames are named by, heaviest first.
    entries.sort_by(|a, b| b.2.total_cmp(&a.2));
    for ((_, c), fold) in folded.iter_mut().filter(|x| x.0 .0 == Kind::Cycle) {
        let mut named: FxHashSet<u32> = FxHashSet::default();
        let mut first: Vec<u32> = Vec::new();
        for &(_, f, _) in entries.iter().filter(|e| e.0 == *c) {
            if named.insert(f) {
                first.push(f);
            }
        }
        first.extend(fold.funcs.iter().filter(|f| !named.contains(f)));
        fold.funcs = first;
    }
    let mut folded: Vec<Fold> = folded.into_iter().map(|f| f.1).collect();
    folded.sort_by(|a, b| b.time.total_cmp(&a.time));
    Estimate { tree, cut, folded }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::model::{Edge, Record};

    /// A row of `nc` calls; callers as (function, calls, cumulative time). A name in `<>` is a
    /// built-in's.
    fn calls(
        m: &mut Model,
        name: &str,
        nc: i64,
        tt: f64,
        ct: f64,
        callers: &[(u32, i64, f64)],
    ) -> u32 {
        let f = func(m, name);
        m.stats.insert(
            f,
            Record {
                cc: 1,
                nc,
                tt,
                ct,
                ints: 0,
                callers: callers
                    .iter()
                    .map(|&(func, n, ct)| Edge {
                        func,
                        value: CallValue::floats(n, 1, 0.0, ct),
                    })
                    .collect(),
            },
        );
        f
    }

    fn row(m: &mut Model, name: &str, tt: f64, ct: f64, callers: &[(u32, f64)]) -> u32 {
        let callers: Vec<(u32, i64, f64)> = callers.iter().map(|&(f, ct)| (f, 1, ct)).collect();
        calls(m, name, 1, tt, ct, &callers)
    }

    fn func(m: &mut Model, name: &str) -> u32 {
        if name.starts_with('<') {
            return m.func_id(b"~", 0, name.as_bytes());
        }
        m.func_id(b"p.py", name.len() as i64, name.as_bytes())
    }

    fn id(m: &Model, name: &str) -> u32 {
        m.find_func(b"p.py", name.len() as i64, name.as_bytes())
            .unwrap()
    }

    fn folded(m: &Model, limits: Limits) -> Vec<(String, u64)> {
        let e = estimate(m, &m.callees(), limits);
        let label = |f: u32| String::from_utf8_lossy(m.string(m.func(f).name)).into_owned();
        e.tree.folded(0, 1.0, &label)
    }

    fn root_funcs(m: &Model) -> Vec<u32> {
        roots(m).iter().map(|r| r.func).collect()
    }

    #[test]
    fn a_shared_callee_is_split_by_its_callers_edges() {
        let mut m = Model::default();
        let main = m.func_id(b"p.py", 4, b"main");
        let a = m.func_id(b"p.py", 1, b"a");
        let b = m.func_id(b"p.py", 1, b"b");
        row(&mut m, "main", 10.0, 100.0, &[]);
        row(&mut m, "a", 10.0, 60.0, &[(main, 60.0)]);
        row(&mut m, "b", 10.0, 30.0, &[(main, 30.0)]);
        row(&mut m, "c", 70.0, 70.0, &[(a, 50.0), (b, 20.0)]);
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
        assert_eq!(
            roots(&m),
            [Root {
                func: main,
                time: 100.0
            }]
        );
    }

    #[test]
    fn the_programs_exec_is_a_root_though_imports_call_it_too() {
        // exec runs the program, whose import runs exec again (the library's module): one of
        // exec's two calls has no caller; the profiler's disable has none either.
        let mut m = Model::default();
        let exec = func(&mut m, "<exec>");
        let prog = func(&mut m, "prog");
        let imp = func(&mut m, "imp");
        calls(&mut m, "<exec>", 2, 0.0, 10.0, &[(imp, 1, 3.0)]);
        row(&mut m, "prog", 7.0, 10.0, &[(exec, 10.0)]);
        row(&mut m, "imp", 0.0, 3.0, &[(prog, 3.0)]);
        row(&mut m, "lib", 3.0, 3.0, &[(exec, 3.0)]);
        row(&mut m, "disable", 0.5, 0.5, &[]);
        let disable = id(&m, "disable");
        // The import's 3 s, inside exec's 10, go back to exec: the roots add up to the tottimes.
        assert_eq!(
            roots(&m),
            [
                Root {
                    func: exec,
                    time: 10.0
                },
                Root {
                    func: disable,
                    time: 0.5
                }
            ]
        );
        let e = estimate(&m, &m.callees(), Limits::default());
        let label = |f: u32| String::from_utf8_lossy(m.string(m.func(f).name)).into_owned();
        assert_eq!(
            e.tree.folded(0, 0.5, &label),
            [
                ("<exec>;prog".to_string(), 14),
                ("<exec>;prog;imp;<exec>".to_string(), 6),
                ("disable".to_string(), 1),
            ]
        );
        assert_eq!(
            e.folded,
            [Fold {
                kind: Kind::Back,
                funcs: vec![exec],
                time: 3.0
            }]
        );
        assert_eq!(e.tree.total(0), 10.5);
    }

    #[test]
    fn a_cycle_is_one_frame_and_limits_hold() {
        // r -> f -> g -> f: f and g are one frame, named by f, the function r calls.
        let mut m = Model::default();
        let f = m.func_id(b"p.py", 1, b"f");
        let g = m.func_id(b"p.py", 1, b"g");
        row(&mut m, "r", 0.0, 7.0, &[]);
        let r = id(&m, "r");
        calls(&mut m, "f", 2, 4.0, 7.0, &[(r, 1, 7.0), (g, 1, 3.0)]);
        row(&mut m, "g", 3.0, 6.0, &[(f, 6.0)]);
        let lines = folded(&m, Limits::default());
        assert_eq!(lines, [("r;f".to_string(), 7)]);
        let e = estimate(&m, &m.callees(), Limits::default());
        assert_eq!(
            e.folded,
            [Fold {
                kind: Kind::Cycle,
                funcs: vec![f, g],
                time: 7.0
            }]
        );
        let e = estimate(
            &m,
            &m.callees(),
            Limits {
                nodes: 2,
                ..Limits::default()
            },
        );
        assert!(e.cut);
        assert_eq!(e.tree.nodes.len(), 2);
    }

    #[test]
    fn overlapping_edges_never_make_children_wider_than_their_parent() {
        // A function calling itself directly is not drawn again; its callees' edges overlap
        // (h runs inside g here), and the heaviest takes its time first.
        let mut m = Model::default();
        let f = m.func_id(b"p.py", 1, b"f");
        let g = m.func_id(b"p.py", 1, b"g");
        calls(&mut m, "f", 3, 1.0, 10.0, &[(f, 2, 8.0)]);
        row(&mut m, "g", 4.0, 9.0, &[(f, 9.0)]);
        row(&mut m, "h", 5.0, 5.0, &[(f, 5.0), (g, 5.0)]);
        assert_eq!(root_funcs(&m), [f]);
        let e = estimate(&m, &m.callees(), Limits::default());
        let t = &e.tree;
        for (i, n) in t.nodes.iter().enumerate().skip(1) {
            let kids: f64 = (1..t.nodes.len() as u32)
                .filter(|&c| t.nodes[c as usize].parent == i as u32)
                .map(|c| t.total(c))
                .sum();
            assert!(kids <= t.total(i as u32) - n.weight + 1e-9);
        }
        assert_eq!(t.total(0), 10.0);
        assert!(e.folded.is_empty());
    }

    #[test]
    fn a_function_whose_caller_the_profile_lost_goes_where_time_is_missing() {
        // main -> <join> -> root (15 s), but root's row is the other `root`'s, called only by
        // itself: <join>'s callees hold nothing of its 16 s.
        let mut m = Model::default();
        let main = func(&mut m, "main");
        let join = func(&mut m, "<join>");
        let root = func(&mut m, "root");
        row(&mut m, "main", 1.0, 17.0, &[]);
        row(&mut m, "<join>", 1.0, 16.0, &[(main, 16.0)]);
        calls(&mut m, "root", 2, 5.0, 15.0, &[(root, 2, 15.0)]);
        row(&mut m, "leaf", 10.0, 10.0, &[(root, 10.0)]);
        let e = estimate(&m, &m.callees(), Limits::default());
        let label = |f: u32| String::from_utf8_lossy(m.string(m.func(f).name)).into_owned();
        assert_eq!(
            e.tree.folded(0, 1.0, &label),
            [
                ("main".to_string(), 1),
                ("main;<join>".to_string(), 1),
                ("main;<join>;root".to_string(), 5),
                ("main;<join>;root;leaf".to_string(), 10),
            ]
        );
        assert_eq!(
            e.folded,
            [Fold {
                kind: Kind::Adopted,
                funcs: vec![root],
                time: 15.0
            }]
        );
        let _ = join;
    }

    #[test]
    fn the_profile_modules_marker_is_no_root() {
        let mut m = Model::default();
        let marker = row(&mut m, "profiler", 0.0, 0.0, &[]);
        let top = row(&mut m, "top", 1.0, 3.0, &[(marker, 0.0)]);
        row(&mut m, "g", 2.0, 2.0, &[(top, 2.0)]);
        assert_eq!(root_funcs(&m), [top]);
        assert_eq!(folded(&m, Limits::default()).len(), 2);
    }

    #[test]
    fn a_cycle_has_its_heaviest_function_as_root() {
        let mut m = Model::default();
        let a = m.func_id(b"p.py", 1, b"a");
        let b = m.func_id(b"p.py", 1, b"b");
        row(&mut m, "a", 1.0, 5.0, &[(b, 1.0)]);
        row(&mut m, "b", 1.0, 2.0, &[(a, 2.0)]);
        assert_eq!(root_funcs(&m), [a]);
        let e = estimate(&m, &m.callees(), Limits::default());
        assert_eq!(e.tree.nodes.len(), 2);
        assert_eq!(e.folded[0].funcs, [a, b]);
        assert_eq!(e.tree.total(0), 2.0);
    }
}
