//! Call paths as a tree: each node a function (a label) under its caller, with the weight
//! (seconds or samples) spent in it on that path and nowhere below. The flame graph is drawn
//! from it, as folded stacks. Trees come from sampled stacks and from a timeline (real paths)
//! or are estimated from the caller graph (`estimate`).

use std::collections::HashMap;

use rustc_hash::FxBuildHasher;

/// One node: a label under its parent, and its self weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node {
    pub parent: u32,
    pub label: u32,
    pub weight: f64,
    /// Calls entered on this path (counted from a timeline; 0 in sampled and estimated trees).
    pub calls: u64,
}

/// The nodes of a tree; node 0 is the root, standing for no frame.
#[derive(Clone, Debug)]
pub struct Tree {
    pub nodes: Vec<Node>,
    index: HashMap<(u32, u32), u32, FxBuildHasher>,
}

impl Default for Tree {
    fn default() -> Tree {
        Tree::new()
    }
}

impl Tree {
    pub fn new() -> Tree {
        Tree {
            nodes: vec![Node {
                parent: 0,
                label: u32::MAX,
                weight: 0.0,
                calls: 0,
            }],
            index: HashMap::default(),
        }
    }

    /// The node for `label` under `parent`, made when new.
    pub fn child(&mut self, parent: u32, label: u32) -> u32 {
        let next = self.nodes.len() as u32;
        let id = *self.index.entry((parent, label)).or_insert(next);
        if id == next {
            self.nodes.push(Node {
                parent,
                label,
                weight: 0.0,
                calls: 0,
            });
        }
        id
    }

    /// Adds `weight` to the path of `labels` (outermost first) under `under`.
    pub fn add_path(&mut self, under: u32, labels: &[u32], weight: f64) {
        let mut node = under;
        for &l in labels {
            node = self.child(node, l);
        }
        if let Some(n) = self.nodes.get_mut(node as usize) {
            n.weight += weight;
        }
    }

    /// The children of every node, in the order they were made.
    fn children(&self) -> Vec<Vec<u32>> {
        let mut out = vec![Vec::new(); self.nodes.len()];
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            out[n.parent as usize].push(i as u32);
        }
        out
    }

    /// The root's children (the outermost frames: the threads, when a tree has them).
    pub fn tops(&self) -> Vec<u32> {
        (1..self.nodes.len() as u32)
            .filter(|&i| self.nodes[i as usize].parent == 0)
            .collect()
    }

    /// Total weight at and below `node`.
    pub fn total(&self, node: u32) -> f64 {
        let children = self.children();
        let mut sum = 0.0;
        let mut todo = vec![node];
        while let Some(n) = todo.pop() {
            sum += self.nodes.get(n as usize).map_or(0.0, |n| n.weight);
            todo.extend(&children[n as usize]);
        }
        sum
    }

    /// Folded stacks of the paths below `under` (`under` itself left out): each node with
    /// weight, as `label;label;...` and its weight divided by `unit`, rounded (nodes that
    /// round to nothing are left out). Labels come from `label`.
    pub fn folded(
        &self,
        under: u32,
        unit: f64,
        label: &dyn Fn(u32) -> String,
    ) -> Vec<(String, u64)> {
        let children = self.children();
        let mut out = Vec::new();
        let mut labels: HashMap<u32, String> = HashMap::new();
        // Depth-first, with the path's labels kept as a string of its own prefix lengths.
        let mut path = String::new();
        let mut todo: Vec<(u32, usize)> = children
            .get(under as usize)
            .map_or_else(Vec::new, |c| c.iter().rev().map(|&n| (n, 0)).collect());
        while let Some((n, len)) = todo.pop() {
            path.truncate(len);
            let node = self.nodes[n as usize];
            if len > 0 {
                path.push(';');
            }
            let text = labels
                .entry(node.label)
                .or_insert_with(|| clean(&label(node.label)));
            path.push_str(text);
            let count = (node.weight / unit).round();
            if count >= 1.0 {
                out.push((path.clone(), count as u64));
            }
            let here = path.len();
            for &c in children[n as usize].iter().rev() {
                todo.push((c, here));
            }
        }
        out
    }
}

/// A label as folded stacks can hold it: no `;` (a frame separator) or line break, and not
/// ending in a number after a blank (which would read as a count).
pub fn clean(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        })
        .collect();
    let tail = out.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if tail.len() < out.len() && (tail.is_empty() || tail.ends_with(char::is_whitespace)) {
        out.push_str("()");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_fold_to_one_line_per_node_with_weight() {
        let mut t = Tree::new();
        t.add_path(0, &[0, 1, 2], 3.0);
        t.add_path(0, &[0, 1], 1.0);
        t.add_path(0, &[0, 3, 2], 2.0);
        t.add_path(0, &[0, 1, 2], 1.0);
        let names = ["main", "f", "g", "h"];
        let label = |l: u32| names[l as usize].to_string();
        assert_eq!(
            t.folded(0, 1.0, &label),
            [
                ("main;f".to_string(), 1),
                ("main;f;g".to_string(), 4),
                ("main;h;g".to_string(), 2)
            ]
        );
        assert_eq!(t.nodes.len(), 6);
        assert_eq!(t.total(0), 7.0);
        let main = t.tops()[0];
        assert_eq!(t.folded(main, 1.0, &label)[0].0, "f");
    }

    #[test]
    fn labels_cannot_break_a_folded_line() {
        assert_eq!(clean("a;b\nc"), "a:b c");
        assert_eq!(clean("x 12"), "x 12()");
        assert_eq!(clean("12"), "12()");
        assert_eq!(clean("f1 (a.py:3)"), "f1 (a.py:3)");
        assert_eq!(clean("foo1"), "foo1");
    }
}
