//! A sampling run as the Stats engine's model, so that `-o` writes a stats file that
//! `pstats.Stats` (3.10-3.13), `rprofile.Stats`, snakeviz and gprof2dot read, and that adds to
//! deterministic profiles. Keys are `(filename, first line, name)` as cProfile's are, so one
//! function is one row whatever lines it was sampled at.
//!
//! The counts are samples, as Python 3.15's `profiling.sampling` writes them: a row's primitive
//! calls (`cc`) are its direct samples (the function innermost), its calls (`nc`) its cumulative
//! samples (stacks holding it, once per stack however deep it recurses), and the times those
//! samples times the interval. A caller entry is the same four figures restricted to one edge:
//! `(nc, cc, tt, ct)` = (samples of stacks holding caller -> callee, of those where the callee is
//! innermost right under that caller, then both times the interval). So `print_callers` and
//! `print_callees` show "cumulative/direct" and the two times per edge, as `print_stats` shows
//! them per row, and gprof2dot's edge weight (`ct`) is the time below the edge. 3.15 writes
//! plain sample counts there instead, which cannot be added to cProfile's tuples.
//!
//! Unlike 3.15's file, this one has no `("__sampled__",): True` key: pstats before 3.15 fails on
//! a key that is not a 3-tuple.

use std::io::{self, Write};

use indexmap::IndexMap;
use rustc_hash::FxBuildHasher;

use super::profile::Profile;
use crate::stats::model::{CallValue, Edge, Model, Record};

/// Direct and cumulative samples of a function or of an edge, and the last stack counted in
/// `cum` (so a recursive stack counts once).
#[derive(Clone, Copy, Default)]
struct Tally {
    direct: u64,
    cum: u64,
    stamp: usize,
}

impl Tally {
    /// Counts `samples` for stack number `stack` unless it was counted for it already.
    fn once(&mut self, stack: usize, samples: u64) {
        if self.stamp != stack {
            self.stamp = stack;
            self.cum += samples;
        }
    }
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The model of every thread's samples.
pub fn model(p: &Profile) -> Model {
    model_of(p, |_| true)
}

/// The model of the samples of the threads (indices into `p.threads`) that `keep` accepts.
pub fn model_of(p: &Profile, keep: impl Fn(u32) -> bool) -> Model {
    let mut m = Model::default();
    // Profile function index -> model id, made on first sight so rows come in the order the
    // functions were first sampled (outermost first): pstats' unsorted listing shows that order.
    let mut id_of = vec![u32::MAX; p.functions.len()];
    let mut rows: Vec<Tally> = Vec::new();
    let mut edges: IndexMap<(u32, u32), Tally, FxBuildHasher> = IndexMap::default();
    let mut funcs: Vec<u32> = Vec::new();
    for (n, ((thread, frames), c)) in p.stacks.iter().enumerate() {
        if !keep(*thread) || c.samples == 0 {
            continue;
        }
        // Stamps start at 0 in a fresh tally: stack n is stamped n + 1.
        let stack = n + 1;
        funcs.clear();
        for &frame in frames.iter() {
            let Some(fr) = p.frames.get_index(frame as usize) else {
                continue;
            };
            let fi = fr.function as usize;
            let Some(f) = p.functions.get_index(fi) else {
                continue;
            };
            if id_of[fi] == u32::MAX {
                id_of[fi] = m.func_id(f.filename.as_bytes(), f.first_line, f.name.as_bytes());
                rows.resize(m.funcs.len(), Tally::default());
            }
            funcs.push(id_of[fi]);
        }
        for &f in &funcs {
            rows[f as usize].once(stack, c.samples);
        }
        for pair in funcs.windows(2) {
            edges
                .entry((pair[0], pair[1]))
                .or_default()
                .once(stack, c.samples);
        }
        if let Some(&inner) = funcs.last() {
            rows[inner as usize].direct += c.samples;
        }
        if let [.., caller, callee] = funcs[..] {
            if let Some(e) = edges.get_mut(&(caller, callee)) {
                e.direct += c.samples;
            }
        }
    }

    let mut callers: Vec<Vec<Edge>> = vec![Vec::new(); rows.len()];
    for (&(caller, callee), t) in &edges {
        callers[callee as usize].push(Edge {
            func: caller,
            value: CallValue::floats(
                count(t.cum),
                count(t.direct),
                t.direct as f64 * p.interval,
                t.cum as f64 * p.interval,
            ),
        });
    }
    m.stats.reserve(rows.len());
    for (id, (t, callers)) in rows.iter().zip(callers).enumerate() {
        m.stats.insert(
            id as u32,
            Record {
                cc: count(t.direct),
                nc: count(t.cum),
                tt: t.direct as f64 * p.interval,
                ct: t.cum as f64 * p.interval,
                ints: 0,
                callers,
            },
        );
    }
    m
}

/// Writes the stats file of `model` (the marshal bytes `marshal.load` reads).
pub fn write_model(w: &mut impl Write, model: &Model) -> io::Result<()> {
    w.write_all(&crate::stats::dump::dump(model))
}

/// Writes the stats file of every thread's samples.
pub fn write_stats(w: &mut impl Write, p: &Profile) -> io::Result<()> {
    write_model(w, &model(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marshal::read::{self, Value};
    use crate::samples::profile::tests::{function, sample, small, with_odd, Refusing};
    use crate::samples::profile::Mode;

    /// The row of function `name` (in file `prog.py`, first line `line`).
    fn row<'a>(m: &'a Model, name: &str, line: i64) -> &'a Record {
        let f = m.find_func(b"prog.py", line, name.as_bytes()).expect(name);
        &m.stats[&f]
    }

    /// Caller `name`'s entry in `rec`, as (nc, cc, tt, ct).
    fn caller(m: &Model, rec: &Record, name: &str) -> (i64, i64, f64, f64) {
        let e = rec
            .callers
            .iter()
            .find(|e| m.string(m.func(e.func).name) == name.as_bytes())
            .expect(name);
        match e.value {
            CallValue::Tuple { nc, cc, tt, ct, .. } => (nc, cc, tt, ct),
            CallValue::Count(_) => panic!("a count"),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn rows_are_direct_and_cumulative_samples_and_their_times() {
        let m = model(&small());
        let names: Vec<&[u8]> = m.stats.keys().map(|&f| m.string(m.func(f).name)).collect();
        assert_eq!(names, [&b"main"[..], b"f", b"g", b"run"]);
        let main = row(&m, "main", 1);
        assert_eq!((main.cc, main.nc), (0, 4));
        assert!(main.callers.is_empty());
        let f = row(&m, "f", 10);
        assert_eq!((f.cc, f.nc), (1, 4));
        assert!(close(f.tt, 0.001) && close(f.ct, 0.004));
        let g = row(&m, "g", 20);
        assert_eq!((g.cc, g.nc), (5, 5));
        assert!(close(g.tt, 0.005) && close(g.ct, 0.005));
        // g is called by f (3 samples, all with g innermost) and by run (2).
        assert_eq!(caller(&m, g, "f").0, 3);
        assert_eq!(caller(&m, g, "f").1, 3);
        assert_eq!(caller(&m, g, "run").0, 2);
        // f under main: 4 samples, 1 of them with f innermost.
        let (nc, cc, tt, ct) = caller(&m, f, "main");
        assert_eq!((nc, cc), (4, 1));
        assert!(close(tt, 0.001) && close(ct, 0.004));
        // pstats' totals: "N function calls (M primitive calls)", M = the samples.
        let top = m.top_level_stats(0.0);
        assert_eq!((top.total_calls, top.prim_calls), (15, 6));
        assert!(close(top.total_tt, 0.006));
    }

    #[test]
    fn recursion_counts_a_function_and_an_edge_once_per_stack() {
        let mut p = Profile::new(0.5, Mode::Cpu);
        let fact = function(&mut p, "prog.py", 5, "fact");
        let t = p.thread(1, 1);
        // fact -> fact -> fact (innermost at another line), twice.
        for _ in 0..2 {
            sample(&mut p, t, &[(fact, 7), (fact, 6), (fact, 6)], true);
        }
        let m = model(&p);
        assert_eq!(m.stats.len(), 1);
        let r = row(&m, "fact", 5);
        assert_eq!((r.cc, r.nc, r.tt, r.ct), (2, 2, 1.0, 1.0));
        // The self edge: in both stacks, innermost in both.
        assert_eq!(caller(&m, r, "fact"), (2, 2, 1.0, 1.0));
    }

    #[test]
    fn a_thread_filter_keeps_only_its_threads() {
        let p = small();
        let m = model_of(&p, |t| t == 1);
        let names: Vec<&[u8]> = m.stats.keys().map(|&f| m.string(m.func(f).name)).collect();
        assert_eq!(names, [&b"run"[..], b"g"]);
        let g = row(&m, "g", 20);
        assert_eq!((g.cc, g.nc), (2, 2));
        assert_eq!(g.callers.len(), 1);
        assert!(model_of(&p, |_| false).stats.is_empty());
    }

    #[test]
    fn an_empty_profile_is_an_empty_dict() {
        let p = Profile::new(0.001, Mode::Wall);
        let mut out = Vec::new();
        write_stats(&mut out, &p).unwrap();
        assert_eq!(*read::read(&out).unwrap().0, Value::Dict(vec![]));
    }

    #[test]
    fn the_file_reads_back_through_marshal_and_the_stats_loader() {
        // Names pstats and marshal must carry as they are.
        let p = with_odd("/tmp/d\u{e9}j\u{e0} vu/x;y.py", "<lambda> ; \u{1f600}");
        let mut out = Vec::new();
        write_stats(&mut out, &p).unwrap();
        let (v, _) = read::read(&out).unwrap();
        let Value::Dict(pairs) = &*v else {
            panic!("not a dict: {v:?}")
        };
        assert_eq!(pairs.len(), 5);
        // Every key is a (str, int, str) tuple: what pstats before 3.15 needs.
        for (k, _) in pairs {
            let Value::Tuple(items) = &**k else {
                panic!("key {k:?}")
            };
            assert!(matches!(
                &items[..],
                [a, b, c] if matches!((&**a, &**b, &**c), (Value::Str(_), Value::Int(_), Value::Str(_)))
            ));
        }
        let back = crate::stats::load::from_bytes(&out).expect("a stats file");
        let m = model(&p);
        assert_eq!(back.stats.len(), m.stats.len());
        for (&f, rec) in &m.stats {
            let k = m.func(f);
            let g = back
                .find_func(m.string(k.file), k.line, m.string(k.name))
                .expect("the same function");
            let r = &back.stats[&g];
            assert_eq!((r.cc, r.nc, r.tt, r.ct), (rec.cc, rec.nc, rec.tt, rec.ct));
            assert_eq!(r.callers.len(), rec.callers.len());
        }
        let f = back
            .find_func(
                "/tmp/d\u{e9}j\u{e0} vu/x;y.py".as_bytes(),
                0,
                "<lambda> ; \u{1f600}".as_bytes(),
            )
            .expect("the odd function");
        assert_eq!(back.stats[&f].cc, 1);
    }

    #[test]
    fn it_adds_to_a_deterministic_profile() {
        // cProfile's tuples and these add up (3.15's plain counts would be refused).
        let mut det = Model::default();
        let g = det.func_id(b"prog.py", 20, b"g");
        let f = det.func_id(b"prog.py", 10, b"f");
        det.stats.insert(
            g,
            Record {
                cc: 1,
                nc: 1,
                tt: 0.5,
                ct: 0.5,
                ints: 0,
                callers: vec![Edge {
                    func: f,
                    value: CallValue::floats(1, 1, 0.5, 0.5),
                }],
            },
        );
        det.add(&model(&small())).expect("the same caller shape");
        let r = &det.stats[&g];
        assert_eq!((r.cc, r.nc), (6, 6));
    }

    #[test]
    fn a_writers_error_comes_back_with_its_os_code() {
        let e = write_stats(&mut Refusing(28), &small()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28));
    }
}
