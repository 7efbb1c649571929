//! A sampling run's `Profile` as a pickle payload (the Stats payload's frame, serde-pickle's
//! bytes) and back, for `SampledProfile` objects: every string once (file and function names
//! in one table), functions, frames and stacks as parallel lists of ids and counts. The run's
//! end (why it stopped) goes with it as text. Python-free.

use indexmap::IndexSet;
use serde::{Deserialize, Serialize};

use super::profile::{Count, Frame, Function, Mode, Profile, Thread};
use crate::stats::payload::{self, error, ints, same_lengths, Error, Int};

/// What a payload is, and the version of its layout (bump with any change to `Body`).
pub const KIND: &str = "rprofile.samples";
pub const FORMAT: u32 = 1;

/// A thread: `(native_id, ident, name, samples, on_cpu, idle, dropped)`; u64s as their bits.
type ThreadRow = (Int, Int, Option<String>, Int, Int, Int, Int);

#[derive(Serialize, Deserialize)]
struct Body {
    interval: f64,
    mode: String,
    /// File and function names, each once.
    strings: Vec<String>,
    /// Every function (id = position): string ids and first line.
    func_file: Vec<Int>,
    func_line: Vec<Int>,
    func_name: Vec<Int>,
    /// Every frame (id = position): function id and line.
    frame_func: Vec<Int>,
    frame_line: Vec<Int>,
    threads: Vec<ThreadRow>,
    /// Each thread's process (`Thread::process`) in a merge of several processes; empty in the
    /// profile of one. Added without a new format: a payload without it reads as before, and
    /// an older reader passes over it.
    #[serde(default)]
    thread_process: Vec<Int>,
    /// Each distinct (thread, stack) in order: thread, its number of frames (the frame ids,
    /// outermost first, follow each other in `stack_frames`), samples and samples on a CPU.
    stack_thread: Vec<Int>,
    stack_len: Vec<Int>,
    stack_frames: Vec<Int>,
    stack_samples: Vec<Int>,
    stack_on_cpu: Vec<Int>,
    asked: Int,
    taken: Int,
    truncated: Int,
    /// `Profile::reread`; added without a new format, as `thread_process`.
    #[serde(default)]
    reread: Int,
    duration: f64,
    end: String,
}

fn bits(v: u64) -> Int {
    Int(v as i64)
}

fn unbits(v: Int) -> u64 {
    v.0 as u64
}

/// The payload of `profile`, with `end` (how the run ended, as text).
pub fn to_bytes(profile: &Profile, end: &str) -> Vec<u8> {
    let p = profile;
    let mut strings: IndexSet<&str> = IndexSet::new();
    let (mut func_file, mut func_name) = (Vec::new(), Vec::new());
    for f in &p.functions {
        func_file.push(Int(strings.insert_full(&f.filename).0 as i64));
        func_name.push(Int(strings.insert_full(&f.name).0 as i64));
    }
    let frame_count: usize = p.stacks.keys().map(|(_, f)| f.len()).sum();
    let mut stack_frames = Vec::with_capacity(frame_count);
    for (_, frames) in p.stacks.keys() {
        stack_frames.extend(frames.iter().map(|&f| Int(f as i64)));
    }
    let body = Body {
        interval: p.interval,
        mode: p.mode.name().into(),
        strings: strings.iter().map(|s| s.to_string()).collect(),
        func_file,
        func_line: ints(p.functions.iter().map(|f| f.first_line)),
        func_name,
        frame_func: ints(p.frames.iter().map(|f| f.function as i64)),
        frame_line: ints(p.frames.iter().map(|f| f.line as i64)),
        threads: p
            .threads
            .iter()
            .map(|t| {
                (
                    bits(t.native_id),
                    bits(t.ident),
                    t.name.clone(),
                    bits(t.samples),
                    bits(t.on_cpu),
                    bits(t.idle),
                    bits(t.dropped),
                )
            })
            .collect(),
        thread_process: match p.threads.iter().any(|t| t.process != 0) {
            true => ints(p.threads.iter().map(|t| i64::from(t.process))),
            false => Vec::new(),
        },
        stack_thread: ints(p.stacks.keys().map(|(t, _)| *t as i64)),
        stack_len: ints(p.stacks.keys().map(|(_, f)| f.len() as i64)),
        stack_frames,
        stack_samples: p.stacks.values().map(|c| bits(c.samples)).collect(),
        stack_on_cpu: p.stacks.values().map(|c| bits(c.on_cpu)).collect(),
        asked: bits(p.asked),
        taken: bits(p.taken),
        truncated: bits(p.truncated),
        reread: bits(p.reread),
        duration: p.duration,
        end: end.into(),
    };
    payload::write(KIND, FORMAT, &body)
}

/// The profile and end of a payload; an `Error` saying what is wrong with anything else.
pub fn from_bytes(data: &[u8]) -> Result<(Profile, String), Error> {
    let b: Body = payload::read(data, KIND, FORMAT)?;
    let Some(mode) = Mode::parse(&b.mode) else {
        return error(format!("unknown mode {:?}", b.mode));
    };
    let mut p = Profile::new(b.interval, mode);
    let n = b.func_file.len();
    same_lengths("function", n, &[b.func_line.len(), b.func_name.len()])?;
    let string = |i: Int| -> Result<String, Error> {
        Ok(b.strings[i.index(b.strings.len(), "string id")? as usize].clone())
    };
    for i in 0..n {
        let f = Function {
            filename: string(b.func_file[i])?,
            first_line: b.func_line[i].0,
            name: string(b.func_name[i])?,
        };
        if p.function(f) as usize != i {
            return error("a function written twice");
        }
    }
    same_lengths("frame", b.frame_func.len(), &[b.frame_line.len()])?;
    for (i, (f, line)) in b.frame_func.iter().zip(&b.frame_line).enumerate() {
        let Ok(line) = i32::try_from(line.0) else {
            return error(format!("line {} out of range", line.0));
        };
        let frame = Frame {
            function: f.index(n, "function id")?,
            line,
        };
        if p.frames.insert_full(frame).0 != i {
            return error("a frame written twice");
        }
    }
    if !b.thread_process.is_empty() {
        same_lengths("thread", b.threads.len(), &[b.thread_process.len()])?;
    }
    for (i, t) in b.threads.iter().enumerate() {
        let process = b.thread_process.get(i).map_or(0, |pid| pid.0);
        let Ok(process) = u32::try_from(process) else {
            return error(format!("process {process} out of range"));
        };
        p.threads.push(Thread {
            native_id: unbits(t.0),
            ident: unbits(t.1),
            name: t.2.clone(),
            samples: unbits(t.3),
            on_cpu: unbits(t.4),
            idle: unbits(t.5),
            dropped: unbits(t.6),
            process,
        });
    }
    p.reindex_threads();
    let stacks = b.stack_thread.len();
    let lens = [
        b.stack_len.len(),
        b.stack_samples.len(),
        b.stack_on_cpu.len(),
    ];
    same_lengths("stack", stacks, &lens)?;
    let (frames, threads) = (p.frames.len(), p.threads.len());
    let mut at = 0usize;
    for i in 0..stacks {
        let len = b.stack_len[i].len("stack length")?;
        let Some(ids) = at
            .checked_add(len)
            .and_then(|end| b.stack_frames.get(at..end))
        else {
            return error("stack lengths beyond the frames");
        };
        at += len;
        let ids = ids
            .iter()
            .map(|f| f.index(frames, "frame id"))
            .collect::<Result<Box<[u32]>, Error>>()?;
        let thread = b.stack_thread[i].index(threads, "thread")?;
        let count = Count {
            samples: unbits(b.stack_samples[i]),
            on_cpu: unbits(b.stack_on_cpu[i]),
        };
        if p.stacks.insert((thread, ids), count).is_some() {
            return error("a stack written twice");
        }
    }
    if at != b.stack_frames.len() {
        return error("frames beyond the stacks' lengths");
    }
    p.asked = unbits(b.asked);
    p.taken = unbits(b.taken);
    p.truncated = unbits(b.truncated);
    p.reread = unbits(b.reread);
    p.duration = b.duration;
    Ok((p, b.end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::{small, with_odd};

    fn shape(p: &Profile) -> String {
        format!(
            "{} {:?} {:?} {:?} {:?} {:?} {} {} {} {} {}",
            p.interval,
            p.mode,
            p.functions,
            p.frames,
            p.threads,
            p.stacks,
            p.asked,
            p.taken,
            p.truncated,
            p.reread,
            p.duration
        )
    }

    #[test]
    fn a_profile_reads_back_equal() {
        let mut p = with_odd("/odd dir/\u{e9}.py", "<lambda>");
        p.threads[1].ident = u64::MAX;
        p.truncated = 3;
        p.reread = 5;
        p.duration = 1.25;
        let (q, end) = from_bytes(&to_bytes(&p, "failed: gone")).unwrap();
        assert_eq!(shape(&q), shape(&p));
        assert_eq!(end, "failed: gone");
        // Its threads are found again as the sampler finds them.
        let mut q = q;
        assert_eq!(q.thread(101, 8), 1);
        // A merge of several processes keeps each thread's process.
        let merged = crate::samples::merge::merge(0.001, Mode::Wall, [(7, &p), (9, &small())]);
        let (q, _) = from_bytes(&to_bytes(&merged, "exited")).unwrap();
        assert_eq!(shape(&q), shape(&merged));
        assert_eq!(q.threads.last().map(|t| t.process), Some(9));
    }

    #[test]
    fn bad_payloads_are_errors() {
        let data = to_bytes(&small(), "stopped");
        payload::tests::cuts_fail_and_flips_do_not_panic(&data, from_bytes);
        let stats = crate::stats::pickle::to_bytes(&Default::default(), None, None);
        let e = from_bytes(&stats).unwrap_err();
        assert_eq!(e.0, "not an rprofile.samples payload");
    }
}
