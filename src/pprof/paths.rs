//! A timeline's real call paths (`report::paths::from_timeline`) as pprof: one sample per
//! path with the calls made on it and the time spent on it and nowhere below, the thread as a
//! `thread` label when the profile had more than one. Unlike the caller edges of the stats,
//! these are whole paths, so pprof's cum and flame graph are exact.

use std::io::{self, Write};

use super::writer::{Header, Label, Nanos, Writer};
use crate::report::paths::Paths;

/// Writes the paths of `p` (weights in seconds) as a gzipped pprof profile to `out`.
pub fn write<W: Write>(out: W, p: &Paths, comments: &[String]) -> io::Result<W> {
    let mut notes = comments.to_vec();
    notes.push(
        "rprofile: call paths from the timeline: calls and cpu (the profile's time, its \
         timer's, wall by default) spent on each path"
            .to_string(),
    );
    let header = Header {
        sample_types: &[("calls", "count"), ("cpu", "nanoseconds")],
        default_sample_type: "cpu",
        period: None,
        duration_nanos: 0,
        comments: &notes,
    };
    let mut w = Writer::new(out, &header);
    let nodes = &p.tree.nodes;
    // The thread label of each thread node (the top nodes with more than one thread).
    let thread_key = w.string("thread");
    let mut thread_of = vec![None; nodes.len()];
    for (node, name) in &p.threads {
        if let Some(slot) = thread_of.get_mut(*node as usize) {
            *slot = Some(Label {
                key: thread_key,
                str: w.string(name),
                num: 0,
            });
        }
    }
    let mut locations = vec![0u64; p.labels.len()];
    let mut stack: Vec<u64> = Vec::new();
    let mut nanos = Nanos::default();
    for (i, node) in nodes.iter().enumerate().skip(1) {
        if thread_of[i].is_some() {
            continue;
        }
        stack.clear();
        let mut label = None;
        let mut at = i;
        while at != 0 {
            if let Some(l) = thread_of[at] {
                label = Some(l);
                break;
            }
            let n = nodes[at];
            if let Some(slot) = locations.get_mut(n.label as usize) {
                if *slot == 0 {
                    let (name, file, line) = p
                        .functions
                        .get(n.label as usize)
                        .cloned()
                        .flatten()
                        .unwrap_or_default();
                    let f = w.python_function(&file, line, &name);
                    *slot = w.location(f, line);
                }
                stack.push(*slot);
            }
            at = n.parent as usize;
        }
        let calls = i64::try_from(node.calls).unwrap_or(i64::MAX);
        let time = nanos.of(node.weight);
        w.sample(&stack, &[calls, time], label.as_slice())?;
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::timeline::{ENTER, LEAVE};
    use crate::pprof::writer::tests::{decode, s, stacks};
    use crate::report::paths::from_timeline;
    use crate::report::paths::tests::ev;

    #[test]
    fn every_path_with_its_calls_and_own_time() {
        let names = ["main", "f", "len"];
        let function = |k: usize| match k {
            2 => (
                format!("<built-in method {}>", names[k]),
                "~".to_string(),
                0,
            ),
            _ => (names[k].to_string(), "p.py".to_string(), k as i64 + 1),
        };
        // Thread 0: main calls f twice, f calls len once; thread 1: f alone.
        let events = [
            ev(ENTER, 0, 0, 0),
            ev(ENTER, 1, 1, 0),
            ev(LEAVE, 3, 1, 0),
            ev(ENTER, 4, 1, 0),
            ev(ENTER, 5, 2, 0),
            ev(LEAVE, 6, 2, 0),
            ev(LEAVE, 8, 1, 0),
            ev(ENTER, 8, 1, 1),
            ev(LEAVE, 9, 1, 1),
            ev(LEAVE, 10, 0, 0),
        ];
        let paths = from_timeline(&events, &function, &["Main".into(), "T".into()], 1e-3);
        let p = decode(&write(Vec::new(), &paths, &[]).unwrap());
        let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            stacks(&p),
            [
                (v(&["main"]), vec![1, 4_000_000]),
                (v(&["f", "main"]), vec![2, 5_000_000]),
                (
                    v(&["{built-in method len}", "f", "main"]),
                    vec![1, 1_000_000]
                ),
                (v(&["f"]), vec![1, 1_000_000]),
            ]
        );
        let thread = |i: usize| s(&p, p.sample[i].label[0].str);
        assert_eq!((thread(0), thread(2), thread(3)), ("Main", "Main", "T"));
        assert_eq!(p.function[1].start_line, 2);
    }
}
