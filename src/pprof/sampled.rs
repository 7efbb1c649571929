//! A sampling run as pprof: one sample per distinct (thread, call stack), its frames at the
//! lines they were sampled at, its values the samples and the time they stand for (`wall`,
//! `cpu` or `gil` nanoseconds as the run's mode counted them), the thread as labels (`thread`:
//! its name, `thread_id`: its OS id, or its ident when that is not known).

use std::io::{self, Write};

use super::writer::{Header, Label, Nanos, Writer};
use crate::samples::profile::Profile;
use crate::samples::summary::summary;

/// Writes the samples of `p` as a gzipped pprof profile to `out`.
pub fn write<W: Write>(out: W, p: &Profile, comments: &[String]) -> io::Result<W> {
    let time = p.mode.name();
    let mut notes = comments.to_vec();
    notes.push(format!("rprofile: {}", summary(p)));
    let header = Header {
        sample_types: &[("samples", "count"), (time, "nanoseconds")],
        default_sample_type: time,
        period: Some(((time, "nanoseconds"), (p.interval * 1e9).round() as i64)),
        duration_nanos: (p.duration * 1e9).round() as i64,
        comments: &notes,
    };
    let mut w = Writer::new(out, &header);
    let (thread_key, id_key) = (w.string("thread"), w.string("thread_id"));
    let labels: Vec<[Label; 2]> = (0..p.threads.len())
        .map(|t| {
            let name = w.string(&p.thread_label(t as u32));
            let th = &p.threads[t];
            let id = if th.native_id != 0 {
                th.native_id
            } else {
                th.ident
            };
            [
                Label {
                    key: thread_key,
                    str: name,
                    num: 0,
                },
                Label {
                    key: id_key,
                    str: 0,
                    num: i64::try_from(id).unwrap_or(i64::MAX),
                },
            ]
        })
        .collect();
    let mut functions = vec![0u64; p.functions.len()];
    let mut locations = vec![0u64; p.frames.len()];
    let mut stack: Vec<u64> = Vec::new();
    let mut nanos = Nanos::default();
    for ((thread, frames), count) in &p.stacks {
        stack.clear();
        for &fr in frames.iter().rev() {
            let Some(frame) = p.frames.get_index(fr as usize) else {
                continue;
            };
            let slot = &mut locations[fr as usize];
            if *slot == 0 {
                let fi = frame.function as usize;
                let Some(f) = p.functions.get_index(fi) else {
                    continue;
                };
                if functions[fi] == 0 {
                    functions[fi] = w.python_function(&f.filename, f.first_line, &f.name);
                }
                *slot = w.location(functions[fi], i64::from(frame.line));
            }
            stack.push(*slot);
        }
        let samples = i64::try_from(count.samples).unwrap_or(i64::MAX);
        let time = nanos.of(count.samples as f64 * p.interval);
        let labels = labels.get(*thread as usize).map_or(&[][..], |l| &l[..]);
        w.sample(&stack, &[samples, time], labels)?;
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::writer::tests::{decode, s, stacks};
    use crate::samples::profile::tests::{small, with_odd};

    #[test]
    fn one_sample_per_thread_and_stack_at_the_sampled_lines() {
        let p = decode(&write(Vec::new(), &small(), &[]).unwrap());
        let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            stacks(&p),
            [
                (v(&["g", "f", "main"]), vec![3, 3_000_000]),
                (v(&["f", "main"]), vec![1, 1_000_000]),
                (v(&["g", "run"]), vec![2, 2_000_000]),
            ]
        );
        assert_eq!(p.period, 1_000_000);
        assert_eq!(s(&p, p.period_type.unwrap().r#type), "wall");
        assert_eq!(s(&p, p.default_sample_type), "wall");
        // Lines as sampled: g at 21 under main, at 22 under run; functions by first line.
        let line = |l: u64| p.location[l as usize - 1].line[0].line;
        let g_lines: Vec<i64> = [0, 2]
            .iter()
            .map(|&i| line(p.sample[i].location_id[0]))
            .collect();
        assert_eq!(g_lines, [21, 22]);
        let g = p.function.iter().find(|f| s(&p, f.name) == "g").unwrap();
        assert_eq!(g.start_line, 20);
        let thread = |i: usize| {
            let l = &p.sample[i].label;
            (s(&p, l[0].key), s(&p, l[0].str), s(&p, l[1].key), l[1].num)
        };
        assert_eq!(thread(0), ("thread", "MainThread", "thread_id", 100));
        assert_eq!(thread(2), ("thread", "Thread 101", "thread_id", 101));
        assert!(s(&p, p.comment[0]).starts_with("rprofile: Sampled 4 of 4 ticks"));
    }

    #[test]
    fn odd_names_and_built_ins_are_carried() {
        let p = decode(
            &write(
                Vec::new(),
                &with_odd("~", "<stack cut at 4096 frames>"),
                &[],
            )
            .unwrap(),
        );
        let last = p.function.last().unwrap();
        assert_eq!(s(&p, last.name), "{stack cut at 4096 frames}");
        assert_eq!(s(&p, last.filename), "");
        let p = decode(&write(Vec::new(), &with_odd("a\u{e9}.py", "f;\n"), &[]).unwrap());
        let last = p.function.last().unwrap();
        assert_eq!(
            (s(&p, last.name), s(&p, last.filename)),
            ("f;\n", "a\u{e9}.py")
        );
    }
}
