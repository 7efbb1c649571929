//! Which flame graphs a report gets, and how they are made: real call paths when the profile
//! has them (a sampling run's stacks, a timeline), else paths estimated from the caller graph
//! (and the page says so); one graph for everything and one per thread (the busiest few) when
//! there are threads; for a comparison, one graph coloured by each path's change.

use std::collections::HashMap;

use crate::stats::model::Model;

use super::estimate::{estimate, Fold, Kind, Limits};
use super::flame::{lines, svg, Scale};
use super::json::Json;
use super::pairs::Pairing;
use super::paths::{frame_label, Paths, Weight};
use super::{Inputs, ThreadInput};

/// Threads with a graph of their own, at most.
pub const THREAD_GRAPHS: usize = 16;

/// A frame label of function `f` of `m`.
fn model_label(m: &Model, f: u32) -> String {
    let func = m.func(f);
    frame_label(
        &String::from_utf8_lossy(m.string(func.file)),
        func.line,
        &String::from_utf8_lossy(m.string(func.name)),
    )
}

/// The folding unit and the display of a tree of seconds totalling `total`: about a million
/// counts for the whole, shown in microseconds (nanoseconds for a profile under 1 ms).
fn seconds_scale(total: f64) -> (f64, Scale) {
    let unit = if total.is_finite() && total > 0.0 {
        10f64.powi(total.log10().floor() as i32 - 6)
    } else {
        1e-6
    };
    let (name, per) = if total >= 1e-3 {
        ("µs", 1e-6)
    } else {
        ("ns", 1e-9)
    };
    (
        unit,
        Scale {
            count_name: name.into(),
            factor: unit / per,
        },
    )
}

/// One graph: what it shows, and its SVG.
struct Graph {
    name: String,
    svg: String,
}

/// Folds of the page's estimated graphs named on the page, most.
pub const FOLDED_SHOWN: usize = 6;

/// Functions of a folded cycle named on the page, most.
pub const FOLDED_NAMED: usize = 4;

/// What the estimated graphs folded: each fold's kind, first labels, number of functions and
/// the time of its frames.
#[derive(Default)]
struct Folded(Vec<(Kind, Vec<String>, usize, f64)>);

impl Folded {
    fn add(&mut self, m: &Model, folded: &[Fold]) {
        for f in folded {
            let labels: Vec<String> = f
                .funcs
                .iter()
                .take(FOLDED_NAMED)
                .map(|&g| model_label(m, g))
                .collect();
            let n = f.funcs.len();
            match self
                .0
                .iter_mut()
                .find(|x| x.0 == f.kind && x.1 == labels && x.2 == n)
            {
                Some(x) => x.3 += f.time,
                None => self.0.push((f.kind, labels, n, f.time)),
            }
        }
    }
}

fn estimated(m: &Model, title: &str, folded: &mut Folded) -> (Option<String>, bool) {
    let e = estimate(m, &m.callees(), Limits::default());
    folded.add(m, &e.folded);
    let label = |f: u32| model_label(m, f);
    let total = e.tree.total(0);
    let (unit, scale) = seconds_scale(total);
    let stacks = e.tree.folded(0, unit, &label);
    let sub = "estimated from the caller graph: each function's time split over its callers \
               in proportion to their calls' times"
        .to_string();
    (svg(&lines(&stacks), title, Some(sub), &scale), e.cut)
}

fn from_paths(p: &Paths, title: &str, under: u32) -> Option<String> {
    let label = |l: u32| p.labels.get(l as usize).cloned().unwrap_or_default();
    match p.weight {
        Weight::Samples { interval } => {
            let stacks = p.tree.folded(under, 1.0, &label);
            let sub = format!("sampled call paths ({:.0} Hz)", 1.0 / interval.max(1e-9));
            let scale = Scale {
                count_name: "samples".into(),
                factor: 1.0,
            };
            svg(&lines(&stacks), title, Some(sub), &scale)
        }
        Weight::Seconds => {
            let (unit, scale) = seconds_scale(p.tree.total(under));
            let stacks = p.tree.folded(under, unit, &label);
            let sub = Some("recorded call paths (timeline)".into());
            svg(&lines(&stacks), title, sub, &scale)
        }
    }
}

/// The comparison's graph: both profiles' estimated paths, widths after, colours by change; a
/// function before is labelled as the one after it is paired with.
fn compared(
    before: &Model,
    after: &Model,
    title: &str,
    pairing: &Pairing,
    folded: &mut Folded,
) -> Option<String> {
    let mut fold = |m: &Model, unit: Option<f64>, label: &dyn Fn(u32) -> String| {
        let e = estimate(m, &m.callees(), Limits::default());
        folded.add(m, &e.folded);
        let total = e.tree.total(0);
        let (u, scale) = seconds_scale(total);
        let unit = unit.unwrap_or(u);
        (e.tree.folded(0, unit, &label), unit, scale)
    };
    let (after_stacks, unit, scale) = fold(after, None, &|f| model_label(after, f));
    let paired: HashMap<u32, u32> = (before.stats.keys().zip(&pairing.after_of))
        .filter_map(|(&b, x)| Some((b, *after.stats.get_index(x.as_ref()?.0)?.0)))
        .collect();
    let before_label = |f: u32| match paired.get(&f) {
        Some(&a) => model_label(after, a),
        None => model_label(before, f),
    };
    let (before_stacks, _, _) = fold(before, Some(unit), &before_label);
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut both: Vec<(String, u64, u64)> = Vec::new();
    for (s, n) in after_stacks {
        at.insert(s.clone(), both.len());
        both.push((s, 0, n));
    }
    for (s, n) in before_stacks {
        match at.get(&s) {
            Some(&i) => both[i].1 = n,
            None => both.push((s, n, 0)),
        }
    }
    let text: Vec<String> = both
        .iter()
        .map(|(s, a, b)| format!("{s} {a} {b}"))
        .collect();
    let sub = "estimated call paths; red: slower than before, blue: faster".to_string();
    svg(&text, title, Some(sub), &scale)
}

/// Writes `"flame": {"estimate", "cut", "compare", "folded": [fold, ...], "graphs": [[name,
/// svg], ...]}` (`null` when there is nothing to draw); the first graph is the whole profile's;
/// `folded` says where the estimate folded recursion or placed calls the profile lost,
/// heaviest first, each `{"kind": "cycle"|"back"|"adopted", "funcs": [label, ...], "count"}`
/// (a cycle's first few functions of `count`).
pub fn write(
    j: &mut Json,
    inputs: &Inputs<'_>,
    paths: Option<&Paths>,
    threads: &[ThreadInput<'_>],
    pairing: Option<&Pairing>,
) {
    let m = inputs.model;
    let title = &inputs.title;
    let mut graphs: Vec<Graph> = Vec::new();
    let mut estimate_used = false;
    let mut cut = false;
    let mut folded = Folded::default();
    let all = "All threads".to_string();
    if let (Some(before), Some(pairing)) = (inputs.before, pairing) {
        if let Some(s) = compared(before, m, title, pairing, &mut folded) {
            graphs.push(Graph { name: all, svg: s });
        }
        estimate_used = true;
    } else if let Some(p) = paths {
        if let Some(s) = from_paths(p, title, 0) {
            graphs.push(Graph { name: all, svg: s });
        }
        let mut busiest: Vec<(f64, u32, &String)> = p
            .threads
            .iter()
            .map(|(node, name)| (p.tree.total(*node), *node, name))
            .collect();
        busiest.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (_, node, name) in busiest.into_iter().take(THREAD_GRAPHS) {
            if let Some(s) = from_paths(p, &format!("{title}: {name}"), node) {
                graphs.push(Graph {
                    name: name.clone(),
                    svg: s,
                });
            }
        }
    } else {
        let (s, c) = estimated(m, title, &mut folded);
        cut |= c;
        estimate_used = true;
        if let Some(s) = s {
            graphs.push(Graph { name: all, svg: s });
        }
        for t in threads.iter().take(THREAD_GRAPHS) {
            let (s, c) = estimated(&t.model, &format!("{title}: {}", t.name), &mut folded);
            cut |= c;
            if let Some(s) = s {
                graphs.push(Graph {
                    name: t.name.clone(),
                    svg: s,
                });
            }
        }
    }
    j.key("flame");
    if graphs.is_empty() {
        j.null();
        return;
    }
    j.open_object();
    j.key("estimate");
    j.bool(estimate_used);
    j.key("cut");
    j.bool(cut);
    j.key("compare");
    j.bool(inputs.before.is_some());
    j.key("folded");
    j.open_array();
    folded.0.sort_by(|a, b| b.3.total_cmp(&a.3));
    for (kind, labels, count, _) in folded.0.iter().take(FOLDED_SHOWN) {
        j.open_object();
        j.key("kind");
        j.str(match kind {
            Kind::Cycle => "cycle",
            Kind::Back => "back",
            Kind::Adopted => "adopted",
        });
        j.key("funcs");
        j.open_array();
        for l in labels {
            j.str(l);
        }
        j.close_array();
        j.key("count");
        j.int(*count as i64);
        j.close_object();
    }
    j.close_array();
    j.key("graphs");
    j.open_array();
    for g in &graphs {
        j.open_array();
        j.str(&g.name);
        j.str(&g.svg);
        j.close_array();
    }
    j.close_array();
    j.close_object();
}
