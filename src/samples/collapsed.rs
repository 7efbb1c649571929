//! Folded stacks, the input of flamegraph.pl, inferno and speedscope's importer: one line per
//! distinct stack, `root;outer;...;inner COUNT`. The root frame is the thread
//! (`MainThread (tid 4242)`: its name and OS id, so two threads of one name stay apart), a
//! frame is `function (filename:line)` with the executing line, as py-spy's raw output writes
//! it (`function (filename)` when the instruction had no line).
//!
//! The format has no quoting, so a `;` in a name (it would split the frame) becomes `:` and a
//! line break (it would split the line) a space. A label never ends in a bare number, so a line
//! is never read as a differential one (`stack COUNT1 COUNT2`).

use std::fmt::Write as _;
use std::io::{self, Write};

use std::collections::HashMap;

use indexmap::IndexMap;

use super::profile::Profile;

/// Appends `s` with the characters that would break a folded line replaced.
fn push_clean(out: &mut String, s: &str) {
    for c in s.chars() {
        out.push(match c {
            ';' => ':',
            '\n' | '\r' => ' ',
            c => c,
        });
    }
}

/// The label of frame `frame`: `function (filename:line)`, the line it was executing or, `by`
/// function, the function's first line (as the HTML report's flame graph labels it).
pub fn frame_label(p: &Profile, frame: u32, by: Frames) -> String {
    let mut out = String::new();
    let Some((fr, f)) = p.frames.get_index(frame as usize).and_then(|fr| {
        let f = p.functions.get_index(fr.function as usize)?;
        Some((fr, f))
    }) else {
        return "?".into();
    };
    push_clean(&mut out, &f.name);
    out.push_str(" (");
    push_clean(&mut out, &f.filename);
    let line = match by {
        Frames::Lines => i64::from(fr.line),
        Frames::Functions => f.first_line,
    };
    if line != 0 {
        let _ = write!(out, ":{line}");
    }
    out.push(')');
    out
}

/// What a folded frame stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frames {
    /// A function at the line it was executing (py-spy's raw output).
    Lines,
    /// A function, whatever its line.
    Functions,
}

/// Calls `each` with every distinct folded stack (without its count) and its samples, in the
/// order the stacks were first sampled. Labels are made once per frame; stacks whose labels
/// coincide (two frames cleaned to one label, or two lines of one function) are added up
/// first.
fn for_each_folded(
    p: &Profile,
    by: Frames,
    mut each: impl FnMut(&str, u64) -> io::Result<()>,
) -> io::Result<()> {
    // Each frame's label, and the first frame of each label: stacks are merged on those.
    let mut labels: Vec<String> = Vec::with_capacity(p.frames.len());
    let mut first_of: HashMap<String, u32> = HashMap::with_capacity(p.frames.len());
    let mut canon: Vec<u32> = Vec::with_capacity(p.frames.len());
    for f in 0..p.frames.len() as u32 {
        let label = frame_label(p, f, by);
        canon.push(*first_of.entry(label.clone()).or_insert(f));
        labels.push(label);
    }
    let titles: Vec<String> = (0..p.threads.len() as u32)
        .map(|t| {
            let mut s = String::new();
            push_clean(&mut s, &p.thread_title(t));
            s
        })
        .collect();
    let merged = canon.iter().enumerate().any(|(i, &c)| c as usize != i);
    let mut sums: IndexMap<(u32, Box<[u32]>), u64> = IndexMap::new();
    let stacks: Box<dyn Iterator<Item = (u32, &[u32], u64)>> = if merged {
        for ((thread, frames), c) in &p.stacks {
            let key: Box<[u32]> = frames.iter().map(|&f| canon[f as usize]).collect();
            *sums.entry((*thread, key)).or_default() += c.samples;
        }
        Box::new(sums.iter().map(|((t, f), &n)| (*t, &f[..], n)))
    } else {
        Box::new(p.stacks.iter().map(|((t, f), c)| (*t, &f[..], c.samples)))
    };
    let mut line = String::new();
    for (thread, frames, n) in stacks {
        if n == 0 {
            continue;
        }
        line.clear();
        match titles.get(thread as usize) {
            Some(t) => line.push_str(t),
            None => push_clean(&mut line, &p.thread_title(thread)),
        }
        for &f in frames {
            line.push(';');
            line.push_str(labels.get(f as usize).map_or("?", String::as_str));
        }
        each(&line, n)?;
    }
    Ok(())
}

/// Each distinct folded stack (without its count) and its samples, in the order the stacks
/// were first sampled, with frames `by` line or function.
pub fn folded(p: &Profile, by: Frames) -> Vec<(String, u64)> {
    let mut out = Vec::with_capacity(p.stacks.len());
    let _ = for_each_folded(p, by, |s, n| {
        out.push((s.to_owned(), n));
        Ok(())
    });
    out
}

/// Writes the folded stacks, one `stack COUNT` line each. Pass a buffered writer.
pub fn write_collapsed(w: &mut impl Write, p: &Profile) -> io::Result<()> {
    for_each_folded(p, Frames::Lines, |s, n| writeln!(w, "{s} {n}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::{function, sample, small, Refusing};
    use crate::samples::profile::Mode;

    fn text(p: &Profile) -> String {
        let mut out = Vec::new();
        write_collapsed(&mut out, p).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_line_per_distinct_stack_with_the_thread_as_root() {
        assert_eq!(
            text(&small()),
            "MainThread (tid 100);main (prog.py:2);f (prog.py:11);g (prog.py:21) 3\n\
             MainThread (tid 100);main (prog.py:2);f (prog.py:12) 1\n\
             Thread (tid 101);run (prog.py:31);g (prog.py:22) 2\n"
        );
    }

    #[test]
    fn odd_names_keep_one_frame_and_one_line_each() {
        let mut p = Profile::new(0.001, Mode::Wall);
        let odd = function(&mut p, "/a b/x;y.py", 3, "<lambda>;\n\u{3bb} 12");
        let t = p.thread(7, 7);
        p.threads[0].name = Some("worker;1 2".into());
        sample(&mut p, t, &[(odd, 0)], false);
        // A thread seen with no Python frame at all.
        p.add(t, &[], false, 1);
        let out = text(&p);
        assert_eq!(
            out,
            "worker:1 2 (tid 7);<lambda>: \u{3bb} 12 (/a b/x:y.py) 1\nworker:1 2 (tid 7) 1\n"
        );
        for line in out.lines() {
            let (stack, n) = line.rsplit_once(' ').unwrap();
            assert!(n.parse::<u64>().is_ok());
            // The part before the count never ends in a number of its own.
            assert!(stack.ends_with(')'));
        }
    }

    #[test]
    fn recursion_is_every_frame_and_empty_is_nothing() {
        let mut p = Profile::new(0.001, Mode::Wall);
        let f = function(&mut p, "r.py", 1, "f");
        let t = p.thread(1, 1);
        sample(&mut p, t, &[(f, 2); 3], true);
        assert_eq!(
            text(&p),
            "Thread (tid 1);f (r.py:2);f (r.py:2);f (r.py:2) 1\n"
        );
        assert_eq!(text(&Profile::new(0.001, Mode::Wall)), "");
    }

    #[test]
    fn stacks_whose_labels_coincide_are_one_line() {
        let mut p = Profile::new(0.001, Mode::Wall);
        let t = p.thread(1, 1);
        for name in ["a;b", "a:b"] {
            let f = function(&mut p, "m.py", 1, name);
            sample(&mut p, t, &[(f, 2)], false);
        }
        assert_eq!(text(&p), "Thread (tid 1);a:b (m.py:2) 2\n");
        assert_eq!(
            folded(&p, Frames::Lines),
            [("Thread (tid 1);a:b (m.py:2)".to_string(), 2)]
        );
    }

    #[test]
    fn by_function_the_lines_of_a_function_are_one_frame() {
        // small(): f sampled at lines 11 and 12 under main, g at 21 and 22.
        let stacks = folded(&small(), Frames::Functions);
        assert_eq!(
            stacks,
            [
                (
                    "MainThread (tid 100);main (prog.py:1);f (prog.py:10);g (prog.py:20)"
                        .to_string(),
                    3
                ),
                (
                    "MainThread (tid 100);main (prog.py:1);f (prog.py:10)".to_string(),
                    1
                ),
                (
                    "Thread (tid 101);run (prog.py:30);g (prog.py:20)".to_string(),
                    2
                ),
            ]
        );
    }

    #[test]
    fn a_writers_error_comes_back_with_its_os_code() {
        let e = write_collapsed(&mut Refusing(32), &small()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(32));
    }
}
