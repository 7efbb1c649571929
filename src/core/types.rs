//! Objects by type (`Profile(types=True)`): each object created while tracking is counted to its
//! type and to the function on top of the profiled stack; its destruction takes it off both.
//!
//! Python-free: types, objects and functions are addresses and keys (as in the aggregator). The
//! interpreter's reference tracer that feeds it is in `tracer/types_hook`. Counters, not a log:
//! memory grows with the types and (type, function) pairs seen, the objects alive and the
//! distinct call stacks objects were made on (a trie of keys, shared by every type).

use std::collections::HashMap;
use std::time::Instant;

use rustc_hash::FxBuildHasher;

/// Totals of one type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypeCounts {
    pub created: u64,
    /// Of the objects created while tracking.
    pub destroyed: u64,
    /// The most alive at once, and when (nanoseconds after tracking started) it was first
    /// reached.
    pub peak: u64,
    pub peak_at: u64,
    /// Objects made before tracking started and destroyed while it ran: not in `destroyed`.
    pub older_destroyed: u64,
}

impl TypeCounts {
    pub fn alive(&self) -> u64 {
        self.created - self.destroyed
    }
}

/// One counted type: its name (as first seen) and totals.
#[derive(Debug, Clone)]
pub struct CountedType {
    pub name: String,
    pub counts: TypeCounts,
}

/// Objects of one type made while one function was on top.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairCounts {
    pub created: u64,
    pub destroyed: u64,
}

/// A live object made while tracking: its (type, function) pair (which names its type) and the
/// stack that made it, by index; 8 bytes, so that an entry of `objects` is 16.
#[derive(Debug, Clone, Copy)]
struct Live {
    pair: u32,
    stack: u32,
}

/// The stack of an object whose stack was not taken (objects of builtin types, unless named).
pub const NO_STACK: u32 = u32::MAX;

/// Call stacks as a trie of keys: node 0 is the empty stack, each other node a call (its key)
/// under its caller's node.
#[derive(Debug)]
struct StackTrie {
    /// (caller node, key) of each node; node 0's are unused.
    nodes: Vec<(u32, usize)>,
    index: HashMap<(u32, usize), u32, FxBuildHasher>,
    /// The last stack asked for, `(key, node)` per call, outermost first: objects are mostly
    /// made many in one call, or in calls that share most of their stack, whose nodes are
    /// then taken from here by comparing keys, without a lookup.
    last: Vec<(usize, u32)>,
}

impl Default for StackTrie {
    fn default() -> Self {
        StackTrie {
            nodes: vec![(0, 0)],
            index: HashMap::default(),
            last: Vec::new(),
        }
    }
}

impl StackTrie {
    fn node(&mut self, keys: impl Iterator<Item = usize>) -> u32 {
        let mut node = 0u32;
        let mut depth = 0;
        for key in keys {
            match self.last.get(depth) {
                Some(&(k, n)) if k == key => node = n,
                _ => {
                    self.last.truncate(depth);
                    node = match self.index.get(&(node, key)) {
                        Some(&n) => n,
                        None => {
                            let n = self.nodes.len() as u32;
                            self.nodes.push((node, key));
                            self.index.insert((node, key), n);
                            n
                        }
                    };
                    self.last.push((key, node));
                }
            }
            depth += 1;
        }
        self.last.truncate(depth);
        node
    }

    /// The keys of `node`'s stack, outermost first.
    fn path(&self, mut node: u32) -> Vec<usize> {
        let mut keys = Vec::new();
        while node != 0 {
            let (caller, key) = self.nodes[node as usize];
            keys.push(key);
            node = caller;
        }
        keys.reverse();
        keys
    }
}

/// What was decided of a type the first time one of its objects was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Counted, at this index of `types`.
    Counted(u32),
    /// Filtered out (a built-in, or not among the types asked for).
    Ignored,
}

/// The counted types, the live objects made while tracking, and the (type, function) pairs.
#[derive(Debug)]
pub struct TypeLedger {
    /// Type address -> what was decided of it. A type's entry goes when the type is destroyed,
    /// so that another type at the same address is decided again.
    decided: HashMap<usize, Decision, FxBuildHasher>,
    pub types: Vec<CountedType>,
    /// Name -> index into `types`: a type decided again (or another of the same name) counts
    /// in the same row.
    by_name: HashMap<String, u32, FxBuildHasher>,
    /// Live object address -> its pair and stack.
    objects: HashMap<usize, Live, FxBuildHasher>,
    stacks: StackTrie,
    pair_index: HashMap<(u32, usize), u32, FxBuildHasher>,
    /// ((type index, function key), counts), in order of first creation.
    pub pairs: Vec<((u32, usize), PairCounts)>,
    start: Instant,
}

impl Default for TypeLedger {
    fn default() -> Self {
        TypeLedger {
            decided: HashMap::default(),
            types: Vec::new(),
            by_name: HashMap::default(),
            objects: HashMap::default(),
            stacks: StackTrie::default(),
            pair_index: HashMap::default(),
            pairs: Vec::new(),
            start: Instant::now(),
        }
    }
}

impl TypeLedger {
    /// What was decided of the type at `ty`, if it was seen.
    #[inline]
    pub fn decision(&self, ty: usize) -> Option<Decision> {
        self.decided.get(&ty).copied()
    }

    /// Records the decision for a type seen for the first time: counted under `name`, or not.
    pub fn decide(&mut self, ty: usize, name: Option<String>) -> Decision {
        let d = match name {
            Some(name) => match self.by_name.get(&name) {
                Some(&i) => Decision::Counted(i),
                None => {
                    let i = self.types.len() as u32;
                    self.by_name.insert(name.clone(), i);
                    self.types.push(CountedType {
                        name,
                        counts: TypeCounts::default(),
                    });
                    Decision::Counted(i)
                }
            },
            None => Decision::Ignored,
        };
        self.decided.insert(ty, d);
        d
    }

    /// The type at `ty` was destroyed: its address may serve another type from now on.
    pub fn forget_type(&mut self, ty: usize) {
        self.decided.remove(&ty);
    }

    /// The node of the call stack whose calls' keys are `keys`, outermost first.
    pub fn stack(&mut self, keys: impl Iterator<Item = usize>) -> u32 {
        self.stacks.node(keys)
    }

    /// The keys of the stack `node` (from `stack`), outermost first.
    pub fn stack_keys(&self, node: u32) -> Vec<usize> {
        self.stacks.path(node)
    }

    /// Per counted type, its objects still alive by the stack that made them: `(stack node,
    /// alive)`, the `most` stacks with most alive (ties: the stack first seen first).
    pub fn alive_by_stack(&self, most: usize) -> Vec<Vec<(u32, u64)>> {
        let mut counts: HashMap<(u32, u32), u64, FxBuildHasher> = HashMap::default();
        for live in self.objects.values().filter(|l| l.stack != NO_STACK) {
            let t = self.pairs[live.pair as usize].0 .0;
            *counts.entry((t, live.stack)).or_default() += 1;
        }
        let mut out = vec![Vec::new(); self.types.len()];
        for ((t, stack), n) in counts {
            out[t as usize].push((stack, n));
        }
        for rows in &mut out {
            rows.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            rows.truncate(most);
        }
        out
    }

    /// An object of counted type `t` was made at `obj` while `key` was on top of the stack
    /// `stack` (a node from `stack`; 0 for none, `NO_STACK` when not taken). The type of an
    /// object made while tracking at the same address whose destruction was not seen, now
    /// counted destroyed.
    pub fn created(&mut self, t: u32, obj: usize, key: usize, stack: u32) -> Option<u32> {
        let pair = match self.pair_index.get(&(t, key)) {
            Some(&p) => p,
            None => {
                let p = self.pairs.len() as u32;
                self.pairs.push(((t, key), PairCounts::default()));
                self.pair_index.insert((t, key), p);
                p
            }
        };
        let gone = self.objects.insert(obj, Live { pair, stack }).map(|old| {
            // Its address was handed out again without a destruction we saw: that one is gone.
            self.charge_destroyed(old.pair);
            self.pairs[old.pair as usize].0 .0
        });
        self.pairs[pair as usize].1.created += 1;
        let c = &mut self.types[t as usize].counts;
        c.created += 1;
        let alive = c.alive();
        if alive > c.peak {
            c.peak = alive;
            c.peak_at = self.start.elapsed().as_nanos() as u64;
        }
        gone
    }

    /// An object of counted type `t` at `obj` is being destroyed; whether it was made while
    /// tracking (else it counts in `older_destroyed`).
    pub fn destroyed(&mut self, t: u32, obj: usize) -> bool {
        match self.objects.remove(&obj) {
            Some(live) => {
                self.charge_destroyed(live.pair);
                true
            }
            None => {
                self.types[t as usize].counts.older_destroyed += 1;
                false
            }
        }
    }

    fn charge_destroyed(&mut self, pair: u32) {
        let ((t, _), counts) = &mut self.pairs[pair as usize];
        counts.destroyed += 1;
        self.types[*t as usize].counts.destroyed += 1;
    }

    /// Forgets what was decided of every type (kept counts stay): types freed meanwhile, while
    /// nothing watched, may have left their addresses to others. A type decided again counts
    /// in its row of before (rows are by name). With nothing counted yet, the clock of
    /// `peak_at` starts again too (at the first enable).
    pub fn forget_decisions(&mut self) {
        self.decided.clear();
        if self.types.is_empty() {
            self.start = Instant::now();
        }
    }

    /// Forgets everything counted (the decisions too: the filters may have changed).
    pub fn clear(&mut self) {
        *self = TypeLedger::default();
    }
}

/// A profiler's type tracking: what it counts (the filters, as asked) and the counts.
#[derive(Debug)]
pub struct TypeTracking {
    pub ledger: TypeLedger,
    /// Built-in types (those not made on the heap: int, str, tuple, dict, ...) are counted too.
    pub builtins: bool,
    /// When not empty, only these types are counted: qualified (`pkg.mod.Class`) or plain
    /// (`Class`, `Outer.Inner`) names.
    pub only: Vec<String>,
    /// A full collection runs before the final counts.
    pub gc: bool,
    /// False (`calls=False`): no call is profiled, and objects are charged to the frames the
    /// interpreter is running instead.
    pub calls: bool,
}

impl Default for TypeTracking {
    fn default() -> Self {
        TypeTracking {
            ledger: TypeLedger::default(),
            builtins: false,
            only: Vec::new(),
            gc: false,
            calls: true,
        }
    }
}

impl TypeTracking {
    /// Whether a type named `full` (`module.qualname`, or the qualname of a builtin) with
    /// qualname `qual` is counted; `heap` says whether it was made on the heap. A type named in
    /// `only` is counted even if it is a builtin.
    pub fn wants(&self, full: &str, qual: &str, heap: bool) -> bool {
        if !self.only.is_empty() {
            return self.only.iter().any(|n| n == full || n == qual);
        }
        heap || self.builtins
    }

    /// Whether no object of a builtin type can be counted (the hook then skips them at once).
    pub fn skips_builtins(&self) -> bool {
        !self.builtins && self.only.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_destroyed_and_alive_add_up_per_type_and_function() {
        let mut l = TypeLedger::default();
        let Decision::Counted(a) = l.decide(0x100, Some("A".into())) else {
            panic!("not counted");
        };
        assert_eq!(l.decide(0x200, None), Decision::Ignored);
        for obj in 0..5 {
            l.created(a, 0x1000 + obj, 7, 0);
        }
        l.created(a, 0x2000, 9, 0);
        l.destroyed(a, 0x1000);
        l.destroyed(a, 0x1001);
        // One made before tracking started.
        l.destroyed(a, 0x9999);
        let c = l.types[a as usize].counts;
        assert_eq!((c.created, c.destroyed, c.alive(), c.peak), (6, 2, 4, 6));
        assert_eq!(c.older_destroyed, 1);
        let by_key: Vec<_> = l.pairs.iter().map(|((_, k), p)| (*k, *p)).collect();
        assert_eq!(
            by_key,
            vec![
                (
                    7,
                    PairCounts {
                        created: 5,
                        destroyed: 2
                    }
                ),
                (
                    9,
                    PairCounts {
                        created: 1,
                        destroyed: 0
                    }
                )
            ]
        );
    }

    #[test]
    fn an_address_reused_without_a_destruction_seen_counts_the_old_object_destroyed() {
        let mut l = TypeLedger::default();
        let Decision::Counted(a) = l.decide(0x100, Some("A".into())) else {
            panic!("not counted");
        };
        assert_eq!(l.created(a, 0x1000, 1, 0), None);
        assert_eq!(l.created(a, 0x1000, 2, 0), Some(a));
        let c = l.types[a as usize].counts;
        assert_eq!((c.created, c.destroyed, c.alive()), (2, 1, 1));
    }

    #[test]
    fn the_filters_take_qualified_or_plain_names_and_leave_builtins_out_unless_asked() {
        let mut t = TypeTracking::default();
        assert!(t.wants("pkg.mod.A", "A", true));
        assert!(!t.wants("int", "int", false));
        t.builtins = true;
        assert!(t.wants("int", "int", false));
        t.builtins = false;
        t.only = vec!["A".into(), "pkg.other.B".into(), "dict".into()];
        assert!(t.wants("pkg.mod.A", "A", true));
        assert!(t.wants("pkg.other.B", "B", true));
        assert!(!t.wants("pkg.mod.B", "B", true));
        assert!(!t.wants("int", "int", false));
        assert!(t.wants("dict", "dict", false));
        assert!(!t.skips_builtins());
    }

    #[test]
    fn a_type_decided_again_counts_in_its_row_and_keeps_its_peak() {
        let mut l = TypeLedger::default();
        let Decision::Counted(a) = l.decide(0x100, Some("A".into())) else {
            panic!("not counted");
        };
        l.created(a, 0x1000, 1, 0);
        l.forget_decisions();
        assert_eq!(l.decide(0x100, Some("A".into())), Decision::Counted(a));
        l.created(a, 0x2000, 1, 0);
        let c = l.types[a as usize].counts;
        assert_eq!((l.types.len(), c.created, c.alive(), c.peak), (1, 2, 2, 2));
    }

    #[test]
    fn the_survivors_are_grouped_by_the_stack_that_made_them() {
        let mut l = TypeLedger::default();
        let Decision::Counted(a) = l.decide(0x100, Some("A".into())) else {
            panic!("not counted");
        };
        // main -> f makes 3, main -> g -> f makes 2; one of f's under main is freed.
        let f = l.stack([5, 7].into_iter());
        for obj in 0..3 {
            l.created(a, 0x1000 + obj, 7, f);
        }
        assert_eq!(l.stack([5, 7].into_iter()), f);
        let gf = l.stack([5, 6, 7].into_iter());
        assert_ne!(gf, f);
        l.created(a, 0x2000, 7, gf);
        l.created(a, 0x2001, 7, gf);
        l.destroyed(a, 0x1000);
        // Shorter, longer and diverging stacks after one another: each its own node.
        let main = l.stack([5].into_iter());
        assert_eq!(l.stack_keys(main), vec![5]);
        assert_eq!(l.stack([5, 7].into_iter()), f);
        let h = l.stack([5, 7, 8].into_iter());
        assert_eq!(l.stack_keys(h), vec![5, 7, 8]);
        assert_eq!(l.stack([5, 6, 7].into_iter()), gf);
        assert_eq!(l.stack(std::iter::empty()), 0);
        // An object whose stack was not taken is in no stack's count.
        l.created(a, 0x3000, 7, NO_STACK);
        assert_eq!(l.alive_by_stack(10), vec![vec![(f, 2), (gf, 2)]]);
        assert_eq!(l.alive_by_stack(1), vec![vec![(f, 2)]]);
        assert_eq!(l.stack_keys(gf), vec![5, 6, 7]);
        assert_eq!(l.stack_keys(0), Vec::<usize>::new());
    }

    #[test]
    fn a_destroyed_type_is_decided_again() {
        let mut l = TypeLedger::default();
        l.decide(0x100, None);
        l.forget_type(0x100);
        assert_eq!(l.decision(0x100), None);
        assert!(matches!(
            l.decide(0x100, Some("B".into())),
            Decision::Counted(0)
        ));
    }
}
