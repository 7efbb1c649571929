//! A stats model (pstats' rows and caller edges; deterministic, sampled or a merge) as pprof
//! samples. Stats keep no call paths, only who called whom, so each caller edge is a sample of
//! two frames, `[callee, caller]`, with the edge's calls and time, and what a function's edges
//! leave over (calls with no caller: the program's top, the frame that enabled the profiler)
//! a sample of one frame. pprof's flat is then each function's tottime and its graph the real
//! edges; the values add up to the stats' totals; a function's cum is one level deep (its own
//! time and the time of its direct callees called from it).

use std::io::{self, Write};

use super::writer::{Header, Label, Nanos, Writer};
use crate::stats::model::{CallValue, Model};

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// Writes `model` as a gzipped pprof profile to `out`, `comments` first among its comments.
pub fn write<W: Write>(out: W, model: &Model, comments: &[String]) -> io::Result<W> {
    write_threads(out, &[(None, model)], comments)
}

/// As `write`, for a profile's threads each with its own stats (`threads=True`): each thread's
/// samples carry its name as the label `thread` (none for a `None` name). The values add up
/// to the threads' totals.
pub fn write_threads<W: Write>(
    out: W,
    threads: &[(Option<&str>, &Model)],
    comments: &[String],
) -> io::Result<W> {
    // A sampled model counts samples: cc is a row's samples with the function running (its
    // own samples), and an edge's cc the same under that caller.
    let sampled = threads.iter().any(|(_, m)| m.sampled);
    let count = if sampled { "samples" } else { "calls" };
    let mut notes = comments.to_vec();
    notes.push(format!(
        "rprofile: {} stats as caller edges: a sample [callee, caller] per edge, [function] \
         for calls with no caller; cpu is the profile's time (its timer's, wall by default); \
         cum is one call level deep",
        if sampled { "sampled" } else { "deterministic" }
    ));
    let header = Header {
        sample_types: &[(count, "count"), ("cpu", "nanoseconds")],
        default_sample_type: "cpu",
        period: None,
        duration_nanos: 0,
        comments: &notes,
    };
    let mut w = Writer::new(out, &header);
    // Interned only when used: a profile without threads is written as before.
    let mut thread_key = None;
    let mut nanos = Nanos::default();
    for &(name, model) in threads {
        let label = name.map(|name| Label {
            key: *thread_key.get_or_insert_with(|| w.string("thread")),
            str: w.string(name),
            num: 0,
        });
        edges(&mut w, model, label.as_slice(), &mut nanos)?;
    }
    w.finish()
}

/// The samples of one model's rows and caller edges, each with `labels`.
fn edges<W: Write>(
    w: &mut Writer<W>,
    model: &Model,
    labels: &[Label],
    nanos: &mut Nanos,
) -> io::Result<()> {
    let mut locations = vec![0u64; model.funcs.len()];
    let mut location = |w: &mut Writer<W>, id: u32| -> u64 {
        let slot = &mut locations[id as usize];
        if *slot == 0 {
            let f = model.func(id);
            let file = text(model.string(f.file));
            let function = w.python_function(&file, f.line, &text(model.string(f.name)));
            *slot = w.location(function, f.line);
        }
        *slot
    };
    for (&func, r) in &model.stats {
        let callee = location(w, func);
        let mut calls_left = if model.sampled { r.cc } else { r.nc };
        let mut time_left = r.tt;
        for e in &r.callers {
            let (calls, time) = match e.value {
                CallValue::Tuple { nc, cc, tt, .. } => (if model.sampled { cc } else { nc }, tt),
                // The `profile` module's callers are plain counts: their time stays with the
                // function's own sample.
                CallValue::Count(n) => (n, 0.0),
            };
            calls_left = calls_left.saturating_sub(calls);
            time_left -= time;
            let caller = location(w, e.func);
            w.sample(&[callee, caller], &[calls, nanos.of(time)], labels)?;
        }
        w.sample(&[callee], &[calls_left, nanos.of(time_left)], labels)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::writer::tests::{decode, s, stacks};
    use crate::stats::model::{Edge, Record};

    fn row(m: &mut Model, file: &str, line: i64, name: &str, nc: i64, tt: f64) -> u32 {
        let f = m.func_id(file.as_bytes(), line, name.as_bytes());
        m.stats.insert(
            f,
            Record {
                cc: nc,
                nc,
                tt,
                ct: tt,
                ints: 0,
                callers: Vec::new(),
            },
        );
        f
    }

    fn call(m: &mut Model, callee: u32, caller: u32, nc: i64, tt: f64) {
        let value = CallValue::floats(nc, nc, tt, tt);
        if let Some(r) = m.stats.get_mut(&callee) {
            r.callers.push(Edge {
                func: caller,
                value,
            });
        }
    }

    /// main (1 call, 1 s own) calls f 3 times (2 s) and len 4 times (0.5 s); f calls len once
    /// (0.25 s); len was also called once with no caller (0.25 s).
    fn model() -> Model {
        let mut m = Model::default();
        let main = row(&mut m, "/p/main.py", 1, "main", 1, 1.0);
        let f = row(&mut m, "/p/main.py", 5, "f", 3, 2.0);
        let len = row(&mut m, "~", 0, "<built-in method builtins.len>", 6, 1.0);
        call(&mut m, f, main, 3, 2.0);
        call(&mut m, len, main, 4, 0.5);
        call(&mut m, len, f, 1, 0.25);
        m
    }

    #[test]
    fn each_edge_is_a_two_frame_sample_and_the_rest_one_frame() {
        let p = decode(&write(Vec::new(), &model(), &["title".into()]).unwrap());
        let len = "{built-in method builtins.len}".to_string();
        let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            stacks(&p),
            [
                (v(&["main"]), vec![1, 1_000_000_000]),
                (v(&["f", "main"]), vec![3, 2_000_000_000]),
                (vec![len.clone(), "main".into()], vec![4, 500_000_000]),
                (vec![len.clone(), "f".into()], vec![1, 250_000_000]),
                (vec![len], vec![1, 250_000_000]),
            ]
        );
        let total: i64 = p.sample.iter().map(|x| x.value[1]).sum();
        assert_eq!(total, 4_000_000_000);
        let calls: i64 = p.sample.iter().map(|x| x.value[0]).sum();
        assert_eq!(calls, 10);
        assert_eq!(s(&p, p.sample_type[0].r#type), "calls");
        assert_eq!(s(&p, p.comment[0]), "title");
        // The built-in has no file; functions keep their file and first line.
        let files: Vec<(&str, &str, i64)> = p
            .function
            .iter()
            .map(|f| (s(&p, f.name), s(&p, f.filename), f.start_line))
            .collect();
        assert_eq!(
            files,
            [
                ("main", "/p/main.py", 1),
                ("f", "/p/main.py", 5),
                ("{built-in method builtins.len}", "", 0)
            ]
        );
        let system: Vec<&str> = p.function.iter().map(|f| s(&p, f.system_name)).collect();
        assert_eq!(
            system,
            [
                "/p/main.py:1(main)",
                "/p/main.py:5(f)",
                "<built-in method builtins.len>"
            ]
        );
    }

    #[test]
    fn each_threads_samples_carry_its_name() {
        let (main, worker) = (model(), model());
        let threads = [(Some("MainThread"), &main), (Some("worker-1"), &worker)];
        let p = decode(&write_threads(Vec::new(), &threads, &[]).unwrap());
        let single = decode(&write(Vec::new(), &main, &[]).unwrap());
        assert_eq!(p.sample.len(), 2 * single.sample.len());
        let named = |name: &str| -> Vec<(Vec<String>, Vec<i64>)> {
            let mut one = p.clone();
            one.sample.retain(|x| {
                x.label.len() == 1
                    && s(&p, x.label[0].key) == "thread"
                    && s(&p, x.label[0].str) == name
            });
            stacks(&one)
        };
        // Each thread's samples are its stats' (the same here), under its own label.
        assert_eq!(named("MainThread"), stacks(&single));
        assert_eq!(named("worker-1"), stacks(&single));
        let total: i64 = p.sample.iter().map(|x| x.value[1]).sum();
        assert_eq!(total, 8_000_000_000);
        // Functions are shared by the threads, not written twice.
        assert_eq!(p.function.len(), single.function.len());
        assert!(single.sample.iter().all(|x| x.label.is_empty()));
        assert!(!single.string_table.iter().any(|t| t == "thread"));
    }

    #[test]
    fn sampled_stats_count_own_samples() {
        let mut m = model();
        m.sampled = true;
        if let Some(r) = m.stats.values_mut().next() {
            r.cc = 0; // main never ran itself: its own-sample row is 0
            r.tt = 0.0;
        }
        let p = decode(&write(Vec::new(), &m, &[]).unwrap());
        assert_eq!(s(&p, p.sample_type[0].r#type), "samples");
        // main's one-frame sample is gone (all zero); the edges carry cc.
        assert_eq!(p.sample.len(), 4);
        assert_eq!(p.sample.iter().map(|x| x.value[0]).sum::<i64>(), 9);
    }
}
