//! The samples of one call: what `%rsample` keeps of the thread that ran the statement, whose
//! stacks begin with the interpreter's own frames (IPython's, the kernel's event loop) above
//! the statement's. That thread's stacks are cut below the innermost frame of a given
//! function (the runner that executes the statement); its samples taken outside that function
//! (before or after the call) are dropped, and its counts lowered by them. Other threads stay
//! as they are.

use super::profile::{Count, Profile};

/// `p` with the stacks of the thread whose ident is `ident` cut below the innermost frame of
/// the function named `name` in `filename`.
pub fn within(p: &Profile, ident: u64, filename: &str, name: &str) -> Profile {
    let runner: Vec<bool> = p
        .frames
        .iter()
        .map(|fr| {
            p.functions
                .get_index(fr.function as usize)
                .is_some_and(|f| f.filename == filename && f.name == name)
        })
        .collect();
    let mut out = p.clone();
    out.stacks = indexmap::IndexMap::with_capacity_and_hasher(p.stacks.len(), Default::default());
    // The run's samples by time name its stacks, and hold what ran outside the call too.
    out.time = None;
    for ((thread, frames), c) in &p.stacks {
        let ran = p
            .threads
            .get(*thread as usize)
            .is_some_and(|t| t.ident == ident);
        let kept: &[u32] = if ran {
            let inner = frames
                .iter()
                .rposition(|&fr| runner.get(fr as usize).copied().unwrap_or(false))
                .map(|at| &frames[at + 1..])
                .unwrap_or(&[]);
            if inner.is_empty() {
                if let Some(t) = out.threads.get_mut(*thread as usize) {
                    t.samples -= c.samples.min(t.samples);
                    t.on_cpu -= c.on_cpu.min(t.on_cpu);
                }
                continue;
            }
            inner
        } else {
            frames
        };
        let count: &mut Count = out.stacks.entry((*thread, kept.into())).or_default();
        count.samples += c.samples;
        count.on_cpu += c.on_cpu;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::{Frame, Function, Mode};

    fn frame(p: &mut Profile, name: &str) -> Frame {
        let function = p.function(Function {
            filename: if name == "run" { "magics.py" } else { "x.py" }.into(),
            first_line: 1,
            name: name.into(),
        });
        Frame { function, line: 2 }
    }

    fn stack(p: &mut Profile, thread: u32, names: &[&str], on_cpu: bool, weight: u64) {
        // Given outermost first, as read; `add` takes them innermost first.
        let mut frames: Vec<Frame> = names.iter().map(|n| frame(p, n)).collect();
        frames.reverse();
        p.add(thread, &frames, on_cpu, weight);
    }

    fn names(p: &Profile, frames: &[u32]) -> Vec<String> {
        frames
            .iter()
            .map(|&f| p.function_of(f).unwrap().name.clone())
            .collect()
    }

    #[test]
    fn the_running_thread_is_cut_below_the_runner_and_others_are_kept() {
        let mut p = Profile::new(0.001, Mode::Wall);
        let main = p.thread(100, 7);
        let other = p.thread(101, 8);
        stack(
            &mut p,
            main,
            &["loop", "shell", "run", "module", "f"],
            true,
            3,
        );
        // The same statement's stack under another path to the runner: added together.
        stack(
            &mut p,
            main,
            &["loop", "other", "run", "module", "f"],
            false,
            2,
        );
        // Before the call: dropped, and the thread's counts lowered.
        stack(&mut p, main, &["loop", "shell"], true, 4);
        // In the runner itself (the statement not started): nothing of it to show.
        stack(&mut p, main, &["loop", "shell", "run"], true, 1);
        stack(&mut p, other, &["worker", "run", "g"], true, 5);
        let q = within(&p, 7, "magics.py", "run");
        let stacks: Vec<(u32, Vec<String>, u64, u64)> = q
            .stacks
            .iter()
            .map(|((t, f), c)| (*t, names(&q, f), c.samples, c.on_cpu))
            .collect();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            stacks,
            [
                (main, s(&["module", "f"]), 5, 3),
                (other, s(&["worker", "run", "g"]), 5, 5)
            ]
        );
        assert_eq!((q.threads[0].samples, q.threads[0].on_cpu), (5, 3));
        assert_eq!((q.threads[1].samples, q.threads[1].on_cpu), (5, 5));
        assert_eq!(q.samples(), 10);
    }
}
