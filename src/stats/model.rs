//! The stats model: what a pstats stats dict holds, `{(file, line, name): (cc, nc, tt, ct,
//! callers)}`, with strings interned and functions numbered, in the dict's insertion order (which
//! decides sort ties and unsorted listings, as in pstats). Python-free.

use std::collections::HashMap;

use indexmap::{IndexMap, IndexSet};
use rustc_hash::FxBuildHasher;

use crate::core::format::{decimal, decimal_len};

pub type FxIndexSet<T> = IndexSet<T, FxBuildHasher>;
pub type FxIndexMap<K, V> = IndexMap<K, V, FxBuildHasher>;

/// A function key `(file, line, name)`: string ids and the line number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Func {
    pub file: u32,
    pub line: i64,
    pub name: u32,
}

/// `ints` bits: which of a row's or caller's two times are Python ints (the `profile` module
/// with an integer timer writes them) rather than floats. They are kept as exact f64 values and
/// given back as ints, and int + int stays int as in Python.
pub const TT_INT: u8 = 1;
pub const CT_INT: u8 = 2;

/// The `ints` bits for a pair of times.
pub fn ints(tt_int: bool, ct_int: bool) -> u8 {
    (if tt_int { TT_INT } else { 0 }) | (if ct_int { CT_INT } else { 0 })
}

/// One caller's figures: cProfile's `(nc, cc, tt, ct)` tuple, or the pure-Python `profile`
/// module's plain call count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CallValue {
    Tuple {
        nc: i64,
        cc: i64,
        tt: f64,
        ct: f64,
        ints: u8,
    },
    Count(i64),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Edge {
    pub func: u32,
    pub value: CallValue,
}

/// One function's row: `(cc, nc, tt, ct, callers)`, callers in their dict order.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub cc: i64,
    pub nc: i64,
    pub tt: f64,
    pub ct: f64,
    pub ints: u8,
    pub callers: Vec<Edge>,
}

/// Why two rows or two caller entries could not be added.
#[derive(Debug, Clone, PartialEq)]
pub enum MergeError {
    /// A cProfile tuple met a `profile` count for the same caller (pstats raises TypeError).
    MixedCallerFormats { tuple_into_count: bool },
    /// A count overflowed i64 (Python's ints would not have): refused rather than wrapped.
    Overflow,
}

fn add_i64(a: i64, b: i64) -> Result<i64, MergeError> {
    a.checked_add(b).ok_or(MergeError::Overflow)
}

impl CallValue {
    /// A caller edge's `(nc, cc, tt, ct)` with float times, as cProfile writes them.
    pub fn floats(nc: i64, cc: i64, tt: f64, ct: f64) -> CallValue {
        CallValue::Tuple {
            nc,
            cc,
            tt,
            ct,
            ints: 0,
        }
    }

    /// `source + target` as pstats' `add_callers` combines them.
    fn combined(source: CallValue, target: CallValue) -> Result<CallValue, MergeError> {
        match (source, target) {
            (
                CallValue::Tuple {
                    nc,
                    cc,
                    tt,
                    ct,
                    ints,
                },
                CallValue::Tuple {
                    nc: n2,
                    cc: c2,
                    tt: t2,
                    ct: k2,
                    ints: i2,
                },
            ) => Ok(CallValue::Tuple {
                nc: add_i64(nc, n2)?,
                cc: add_i64(cc, c2)?,
                tt: tt + t2,
                ct: ct + k2,
                ints: ints & i2,
            }),
            (CallValue::Count(a), CallValue::Count(b)) => Ok(CallValue::Count(add_i64(b, a)?)),
            (CallValue::Tuple { .. }, CallValue::Count(_)) => Err(MergeError::MixedCallerFormats {
                tuple_into_count: true,
            }),
            (CallValue::Count(_), CallValue::Tuple { .. }) => Err(MergeError::MixedCallerFormats {
                tuple_into_count: false,
            }),
        }
    }
}

/// `add_callers(target, source)`: target's callers in order, then source's new ones; a caller in
/// both gets the sum.
pub fn add_callers(target: &mut Vec<Edge>, source: &[Edge]) -> Result<(), MergeError> {
    if source.is_empty() {
        return Ok(());
    }
    // Small caller lists (the common case) are searched; big ones get an index.
    if target.len() * source.len() <= 256 {
        for e in source {
            match target.iter_mut().find(|t| t.func == e.func) {
                Some(t) => t.value = CallValue::combined(e.value, t.value)?,
                None => target.push(*e),
            }
        }
        return Ok(());
    }
    let mut at: rustc_hash::FxHashMap<u32, usize> = target
        .iter()
        .enumerate()
        .map(|(i, t)| (t.func, i))
        .collect();
    for e in source {
        match at.get(&e.func) {
            Some(&i) => target[i].value = CallValue::combined(e.value, target[i].value)?,
            None => {
                at.insert(e.func, target.len());
                target.push(*e);
            }
        }
    }
    Ok(())
}

/// `add_func_stats(target, source)`, in place on `target`.
pub fn add_func_stats(target: &mut Record, source: &Record) -> Result<(), MergeError> {
    target.cc = add_i64(source.cc, target.cc)?;
    target.nc = add_i64(source.nc, target.nc)?;
    target.tt += source.tt;
    target.ct += source.ct;
    target.ints &= source.ints;
    add_callers(&mut target.callers, &source.callers)
}

/// Makes a caller list a dict's: a repeated caller (possible only in hand-made data) keeps its
/// first place and takes the last value.
pub fn dedupe_callers(callers: &mut Vec<Edge>) {
    if callers.len() < 2 {
        return;
    }
    let mut at: rustc_hash::FxHashMap<u32, usize> = Default::default();
    at.reserve(callers.len());
    if callers.iter().all(|e| at.insert(e.func, 0).is_none()) {
        return;
    }
    at.clear();
    let mut out: Vec<Edge> = Vec::with_capacity(callers.len());
    for e in callers.iter() {
        match at.get(&e.func) {
            Some(&i) => out[i].value = e.value,
            None => {
                at.insert(e.func, out.len());
                out.push(*e);
            }
        }
    }
    *callers = out;
}

/// The totals `get_top_level_stats` accumulates.
#[derive(Debug, Clone, PartialEq)]
pub struct TopLevel {
    pub total_calls: i128,
    pub prim_calls: i128,
    pub total_tt: f64,
    /// Whether every time added was an int (the sum is then an int if the start was).
    pub total_tt_int: bool,
    /// Functions called by pstats' `("jprofile", 0, "profiler")` marker.
    pub top_level: Vec<u32>,
    pub max_name_len: usize,
}

/// The string of the key `("__sampled__",)` that Python 3.15's `profiling.sampling` adds to the
/// stats dicts it writes: their counts are samples, not calls. Never a row of the model.
pub const SAMPLED_KEY: &[u8] = b"__sampled__";

/// A stats dict.
#[derive(Clone, Debug, Default)]
pub struct Model {
    /// Interned file and function names (UTF-8; lone surrogates as `surrogatepass` writes them).
    pub strings: FxIndexSet<Box<[u8]>>,
    /// Every function named as a key or a caller; ids are positions and never change.
    pub funcs: Vec<Func>,
    /// Id of each function. A plain map (key stored in its slot) finds an id with one memory
    /// access where an index set needs two, which matters at a million caller edges.
    func_ids: HashMap<Func, u32, FxBuildHasher>,
    /// The stats dict itself, in insertion order.
    pub stats: FxIndexMap<u32, Record>,
    /// The dict carried the `SAMPLED_KEY` marker (set by the loaders; `dump` writes it back).
    pub sampled: bool,
}

/// Number of code points in UTF-8 (or surrogatepass) bytes.
pub fn char_len(s: &[u8]) -> usize {
    s.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// Asks the CPU to start loading the cache line at `r`, without waiting for it.
fn prefetch<T: ?Sized>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and changes no state the program can see; the address
    // is that of a live reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (r as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}

impl Model {
    pub fn intern(&mut self, s: &[u8]) -> u32 {
        if let Some(i) = self.strings.get_index_of(s) {
            return i as u32;
        }
        self.strings.insert_full(s.into()).0 as u32
    }

    pub fn func_id(&mut self, file: &[u8], line: i64, name: &[u8]) -> u32 {
        let f = Func {
            file: self.intern(file),
            line,
            name: self.intern(name),
        };
        self.func_of(f)
    }

    /// The id of a function whose strings are interned, adding it if new.
    pub fn func_of(&mut self, f: Func) -> u32 {
        let next = self.funcs.len() as u32;
        let id = *self.func_ids.entry(f).or_insert(next);
        if id == next {
            self.funcs.push(f);
        }
        id
    }

    pub fn func(&self, id: u32) -> Func {
        self.funcs[id as usize]
    }

    /// Loops over thousands of scattered functions (the callers of a hub) otherwise spend most
    /// of their time waiting for memory: these start the loads some iterations ahead. A
    /// function's record:
    pub fn prefetch_func(&self, id: u32) {
        if let Some(f) = self.funcs.get(id as usize) {
            prefetch(f);
        }
    }

    /// The name's slot in the string set (no load needed to find it).
    pub fn prefetch_name_slot(&self, func: u32) {
        if let Some(slot) = self.name_slot(func) {
            prefetch(slot);
        }
    }

    /// The name's bytes (found through its slot: ask for the slot some iterations earlier).
    pub fn prefetch_name(&self, func: u32) {
        if let Some(slot) = self.name_slot(func) {
            prefetch(&**slot);
        }
    }

    /// Everything a report line of each of `funcs` reads (its row, its record, the slots and
    /// bytes of its file and name), asked for in three passes of independent loads rather than
    /// one chain of misses per function: cold, a row costs ~1.5 us of waiting otherwise. Meant
    /// for blocks of a few dozen functions, which the cache keeps until they are formatted.
    pub fn prefetch_rows(&self, funcs: &[u32]) {
        for &f in funcs {
            self.prefetch_func(f);
            if let Some(r) = self.stats.get(&f) {
                prefetch(r);
            }
        }
        let slots = |f: u32| {
            let f = self.funcs.get(f as usize)?;
            Some((
                self.strings.get_index(f.file as usize)?,
                self.strings.get_index(f.name as usize)?,
            ))
        };
        for &f in funcs {
            if let Some((file, name)) = slots(f) {
                prefetch(file);
                prefetch(name);
            }
        }
        for &f in funcs {
            if let Some((file, name)) = slots(f) {
                prefetch(&**file);
                prefetch(&**name);
            }
        }
    }

    // The slot itself (where the box's pointer lives), not the bytes it points to.
    #[allow(clippy::borrowed_box)]
    fn name_slot(&self, func: u32) -> Option<&Box<[u8]>> {
        let f = self.funcs.get(func as usize)?;
        self.strings.get_index(f.name as usize)
    }

    pub fn string(&self, id: u32) -> &[u8] {
        &self.strings[id as usize]
    }

    /// Looks a function up without adding it.
    pub fn find_func(&self, file: &[u8], line: i64, name: &[u8]) -> Option<u32> {
        let f = Func {
            file: self.strings.get_index_of(file)? as u32,
            line,
            name: self.strings.get_index_of(name)? as u32,
        };
        self.func_ids.get(&f).copied()
    }

    /// Appends `func_std_string(func)`: `{name}` or `name` for built-ins (`('~', 0, name)`),
    /// otherwise `file:line(name)`.
    pub fn std_name(&self, id: u32, out: &mut Vec<u8>) {
        let f = self.func(id);
        let name = self.string(f.name);
        if f.line == 0 && self.string(f.file) == b"~" {
            if name.len() >= 2 && name[0] == b'<' && name[name.len() - 1] == b'>' {
                out.push(b'{');
                out.extend_from_slice(&name[1..name.len() - 1]);
                out.push(b'}');
            } else {
                out.extend_from_slice(name);
            }
        } else {
            out.extend_from_slice(self.string(f.file));
            out.push(b':');
            decimal(out, f.line);
            out.push(b'(');
            out.extend_from_slice(name);
            out.push(b')');
        }
    }

    /// `len(func_std_string(func))`, in code points.
    pub fn std_name_len(&self, id: u32) -> usize {
        let f = self.func(id);
        let name = self.string(f.name);
        if f.line == 0 && self.string(f.file) == b"~" {
            char_len(name)
        } else {
            char_len(self.string(f.file)) + 3 + char_len(name) + decimal_len(f.line)
        }
    }

    /// What `get_top_level_stats` adds up, starting from `total_tt` (float addition is done in
    /// pstats' order so the sum is the same to the last bit).
    pub fn top_level_stats(&self, total_tt: f64) -> TopLevel {
        let marker = self.find_func(b"jprofile", 0, b"profiler");
        let mut t = TopLevel {
            total_calls: 0,
            prim_calls: 0,
            total_tt,
            total_tt_int: true,
            top_level: Vec::new(),
            max_name_len: 0,
        };
        for (&func, r) in &self.stats {
            t.total_calls += r.nc as i128;
            t.prim_calls += r.cc as i128;
            t.total_tt += r.tt;
            t.total_tt_int &= r.ints & TT_INT != 0;
            if let Some(m) = marker {
                if r.callers.iter().any(|e| e.func == m) {
                    t.top_level.push(func);
                }
            }
            t.max_name_len = t.max_name_len.max(self.std_name_len(func));
        }
        t
    }

    /// The id in `self` of function `id` of `other`, adding it if new.
    fn import_func(&mut self, other: &Model, id: u32, memo: &mut [u32]) -> u32 {
        let slot = &mut memo[id as usize];
        if *slot != u32::MAX {
            return *slot;
        }
        let f = other.func(id);
        let mine = self.func_id(other.string(f.file), f.line, other.string(f.name));
        memo[id as usize] = mine;
        mine
    }

    /// The loop of `Stats.add` for one item: every row of `other`, in its order, added into
    /// `self` (new functions appended). Stops at the first error with the rows before it added,
    /// as pstats does.
    pub fn add(&mut self, other: &Model) -> Result<(), MergeError> {
        let mut memo = vec![u32::MAX; other.funcs.len()];
        for (&func, rec) in &other.stats {
            let mine = self.import_func(other, func, &mut memo);
            let mut src = Record {
                cc: rec.cc,
                nc: rec.nc,
                tt: rec.tt,
                ct: rec.ct,
                ints: rec.ints,
                callers: Vec::with_capacity(rec.callers.len()),
            };
            for e in &rec.callers {
                src.callers.push(Edge {
                    func: self.import_func(other, e.func, &mut memo),
                    value: e.value,
                });
            }
            match self.stats.get_mut(&mine) {
                Some(target) => add_func_stats(target, &src)?,
                None => {
                    let mut fresh = Record {
                        cc: 0,
                        nc: 0,
                        tt: 0.0,
                        ct: 0.0,
                        // pstats starts from int zeros: they leave the source's types as they are.
                        ints: TT_INT | CT_INT,
                        callers: Vec::new(),
                    };
                    add_func_stats(&mut fresh, &src)?;
                    self.stats.insert(mine, fresh);
                }
            }
        }
        Ok(())
    }

    /// `strip_dirs`: a new model whose files are base names. Rows that become the same function
    /// are added together; within one row, callers that become the same keep the first one's
    /// place and the last one's figures (pstats overwrites them). Returns the new model and the
    /// new `max_name_len`.
    pub fn strip_dirs(&self) -> Result<(Model, usize), MergeError> {
        let mut out = Model {
            sampled: self.sampled,
            ..Model::default()
        };
        // Every function's new id, and which new ids more than one function became: only rows
        // and caller lists that meet one of those need merging.
        let new_of: Vec<u32> = (0..self.funcs.len() as u32)
            .map(|id| {
                let f = self.func(id);
                let file = basename(self.string(f.file));
                out.func_id(file, f.line, self.string(f.name))
            })
            .collect();
        let mut preimages = vec![0u8; out.funcs.len()];
        for &n in &new_of {
            preimages[n as usize] = preimages[n as usize].saturating_add(1);
        }
        let merged = |n: u32| preimages[n as usize] > 1;
        let mut max_len = 0;
        out.stats.reserve(self.stats.len());
        for (&func, rec) in &self.stats {
            let new = new_of[func as usize];
            max_len = max_len.max(out.std_name_len(new));
            let mut callers: Vec<Edge> = rec
                .callers
                .iter()
                .map(|e| Edge {
                    func: new_of[e.func as usize],
                    value: e.value,
                })
                .collect();
            if callers.iter().any(|e| merged(e.func)) {
                dedupe_callers(&mut callers);
            }
            let row = Record {
                cc: rec.cc,
                nc: rec.nc,
                tt: rec.tt,
                ct: rec.ct,
                ints: rec.ints,
                callers,
            };
            match out.stats.get_mut(&new) {
                Some(target) => add_func_stats(target, &row)?,
                None => {
                    out.stats.insert(new, row);
                }
            }
        }
        Ok((out, max_len))
    }

    /// `calc_callees`: for every function, the functions it calls with the caller figures, in
    /// the order pstats' dict has them (callers' rows in stats order).
    pub fn callees(&self) -> Callees {
        let n = self.funcs.len();
        let mut start = vec![0u32; n + 1];
        for r in self.stats.values() {
            for e in &r.callers {
                start[e.func as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut next = start.clone();
        let placeholder = Edge {
            func: 0,
            value: CallValue::Count(0),
        };
        let mut edges = vec![placeholder; start[n] as usize];
        for (&func, r) in &self.stats {
            for e in &r.callers {
                let slot = &mut next[e.func as usize];
                edges[*slot as usize] = Edge {
                    func,
                    value: e.value,
                };
                *slot += 1;
            }
        }
        Callees {
            start,
            edges,
            rows: self.stats.len(),
            order: callee_dict_order(self),
        }
    }
}

/// `all_callees`: per function id, the functions it calls (a compressed adjacency list).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Callees {
    start: Vec<u32>,
    edges: Vec<Edge>,
    /// Rows of the stats dict it was made from (pstats' dict is empty only if there were none).
    rows: usize,
    /// The dict's keys in its order.
    pub order: Vec<u32>,
}

impl Callees {
    /// The same lists with every function id passed through `map` (into another model).
    pub fn mapped(&self, map: &mut impl FnMut(u32) -> u32, funcs: usize) -> Callees {
        let mut lists: Vec<Vec<Edge>> = vec![Vec::new(); funcs];
        let mut order = Vec::with_capacity(self.order.len());
        for &f in &self.order {
            let new = map(f) as usize;
            if new >= lists.len() {
                lists.resize(new + 1, Vec::new());
            }
            order.push(new as u32);
            for e in self.of(f) {
                let edge = Edge {
                    func: map(e.func),
                    value: e.value,
                };
                lists[new].push(edge);
            }
        }
        Callees::from_lists(order, &lists, self.rows, funcs)
    }

    /// Callees made of each function's list (`lists[id]`), the dict's keys in `order`, made
    /// from a dict of `rows` rows, over at least `funcs` functions.
    pub fn from_lists(order: Vec<u32>, lists: &[Vec<Edge>], rows: usize, funcs: usize) -> Callees {
        let n = lists.len().max(funcs);
        let mut start = Vec::with_capacity(n + 1);
        let mut edges = Vec::new();
        start.push(0);
        for i in 0..n {
            if let Some(l) = lists.get(i) {
                edges.extend_from_slice(l);
            }
            start.push(edges.len() as u32);
        }
        Callees {
            start,
            edges,
            rows,
            order,
        }
    }

    /// Rows of the stats dict they were made from.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The callees of `func` (none for a function the model did not have when they were made).
    pub fn of(&self, func: u32) -> &[Edge] {
        let f = func as usize;
        match (self.start.get(f), self.start.get(f + 1)) {
            (Some(&a), Some(&b)) => &self.edges[a as usize..b as usize],
            _ => &[],
        }
    }

    /// Whether pstats' `all_callees` dict would be empty.
    pub fn is_empty(&self) -> bool {
        self.rows == 0 && self.edges.is_empty()
    }
}

/// The keys of pstats' `all_callees` in its order: each row, then the callers not yet seen.
fn callee_dict_order(model: &Model) -> Vec<u32> {
    let mut seen = vec![false; model.funcs.len()];
    let mut order = Vec::new();
    for (&func, r) in &model.stats {
        for f in std::iter::once(func).chain(r.callers.iter().map(|e| e.func)) {
            if !seen[f as usize] {
                seen[f as usize] = true;
                order.push(f);
            }
        }
    }
    order
}

/// `os.path.basename` on POSIX: what follows the last `/`.
pub fn basename(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(nc: i64, cc: i64, tt: f64, ct: f64) -> CallValue {
        CallValue::floats(nc, cc, tt, ct)
    }

    fn row(m: &mut Model, file: &str, line: i64, name: &str, callers: &[(u32, CallValue)]) -> u32 {
        let f = m.func_id(file.as_bytes(), line, name.as_bytes());
        let rec = Record {
            cc: 1,
            nc: 2,
            tt: 0.5,
            ct: 1.0,
            ints: 0,
            callers: callers
                .iter()
                .map(|&(func, value)| Edge { func, value })
                .collect(),
        };
        m.stats.insert(f, rec);
        f
    }

    #[test]
    fn add_appends_new_rows_and_sums_known_ones_and_their_callers() {
        let mut a = Model::default();
        let fa = row(&mut a, "/x/a.py", 1, "f", &[]);
        let ga = row(&mut a, "/x/a.py", 2, "g", &[(fa, tuple(1, 1, 0.25, 0.5))]);
        let mut b = Model::default();
        let hb = row(&mut b, "/y/b.py", 9, "h", &[]);
        let fb = b.func_id(b"/x/a.py", 1, b"f");
        let gb = row(
            &mut b,
            "/x/a.py",
            2,
            "g",
            &[(hb, tuple(3, 3, 1.0, 1.0)), (fb, tuple(2, 1, 0.5, 0.5))],
        );
        let _ = gb;
        a.add(&b).unwrap();
        // g kept its place (second), h came after.
        let names: Vec<&[u8]> = a.stats.keys().map(|&f| a.string(a.func(f).name)).collect();
        assert_eq!(names, [&b"f"[..], b"g", b"h"]);
        let g = &a.stats[&ga];
        assert_eq!((g.cc, g.nc, g.tt, g.ct), (2, 4, 1.0, 2.0));
        // The callers: f's figures added up in f's place, h appended.
        assert_eq!(g.callers[0].value, tuple(3, 2, 0.75, 1.0));
        assert_eq!(a.string(a.func(g.callers[1].func).name), b"h");
    }

    #[test]
    fn mixing_caller_formats_is_refused() {
        let mut a = Model::default();
        let f = row(&mut a, "a.py", 1, "f", &[]);
        row(&mut a, "a.py", 2, "g", &[(f, CallValue::Count(3))]);
        let mut b = Model::default();
        let fb = row(&mut b, "a.py", 1, "f", &[]);
        row(&mut b, "a.py", 2, "g", &[(fb, tuple(1, 1, 0.0, 0.0))]);
        assert_eq!(
            a.add(&b),
            Err(MergeError::MixedCallerFormats {
                tuple_into_count: true
            })
        );
    }

    #[test]
    fn strip_dirs_merges_rows_and_overwrites_colliding_callers() {
        let mut m = Model::default();
        let c1 = m.func_id(b"/one/c.py", 5, b"c");
        let c2 = m.func_id(b"/two/c.py", 5, b"c");
        row(
            &mut m,
            "/one/m.py",
            1,
            "f",
            &[(c1, tuple(1, 1, 0.1, 0.1)), (c2, tuple(7, 7, 0.7, 0.7))],
        );
        row(&mut m, "/two/m.py", 1, "f", &[(c1, tuple(2, 2, 0.2, 0.2))]);
        m.sampled = true;
        let (s, max_len) = m.strip_dirs().unwrap();
        assert!(s.sampled, "samples stay samples");
        assert_eq!(s.stats.len(), 1);
        let (&f, r) = s.stats.first().unwrap();
        assert_eq!(s.string(s.func(f).file), b"m.py");
        assert_eq!((r.cc, r.nc), (2, 4));
        // Within the first row c1 and c2 became one caller: the last value (7) in the first
        // place; the second row's c then adds its 2.
        assert_eq!(r.callers.len(), 1);
        assert_eq!(r.callers[0].value, tuple(9, 9, 0.2 + 0.7, 0.2 + 0.7));
        assert_eq!(max_len, "m.py:1(f)".len());
    }

    #[test]
    fn callees_list_callers_rows_in_stats_order() {
        let mut m = Model::default();
        let h = m.func_id(b"h.py", 1, b"h");
        let a = row(&mut m, "a.py", 1, "a", &[(h, tuple(1, 1, 0.0, 0.0))]);
        let b = row(&mut m, "b.py", 1, "b", &[(h, tuple(2, 2, 0.0, 0.0))]);
        let c = m.callees();
        let of_h: Vec<u32> = c.of(h).iter().map(|e| e.func).collect();
        assert_eq!(of_h, [a, b]);
        assert!(c.of(a).is_empty());
        assert_eq!(c.order, [a, h, b]);
    }

    #[test]
    fn std_names_as_pstats_writes_them() {
        let mut m = Model::default();
        let cases = [
            ("~", 0, "<built-in method len>", "{built-in method len}"),
            ("~", 0, "plain", "plain"),
            ("~", 0, "<", "<"),
            ("~", 0, "<>", "{}"),
            ("/a/b.py", -3, "f", "/a/b.py:-3(f)"),
            ("x.py", 12, "g\u{e9}", "x.py:12(g\u{e9})"),
        ];
        for (file, line, name, want) in cases {
            let f = m.func_id(file.as_bytes(), line, name.as_bytes());
            let mut out = Vec::new();
            m.std_name(f, &mut out);
            assert_eq!(out, want.as_bytes());
            assert_eq!(m.std_name_len(f), want.chars().count());
        }
    }
}
