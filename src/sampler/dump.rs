//! `rprofile dump`: every thread of a process at one instant, as a traceback reads: its stack,
//! its name, whether it is on a CPU, whether it holds the GIL and (3.15) whether it waits for it. One read of the stacks (tried
//! again while any thread tore), then the names, the GIL's holder and each thread's state from
//! `/proc`; with `blocking`, every thread is stopped for the stack read and let go after it.

use std::collections::HashMap;

use super::error::Error;
use super::locals::{Local, LocalsReader};
use super::names;
use super::pause::{Pause, Refused};
use super::runtime::Runtime;
use super::stacks::{NamedFrame, StackReader, ThreadSample};
use super::status::{self, ThreadStates};

/// One thread as the dump shows it.
#[derive(Debug)]
pub struct ThreadDump {
    /// The OS thread id; 0 where it is not known (3.10's, when its descriptor could not be read).
    pub native_id: u64,
    /// `threading.get_ident()`.
    pub ident: u64,
    pub main: bool,
    /// `threading`'s name for it, if `threading` named it.
    pub name: Option<String>,
    /// Its `/proc` state letter (`R` running or runnable, `S` sleeping, `D`, `T`, ...), None
    /// when it could not be read (it ended, or no OS id is known).
    pub state: Option<u8>,
    pub has_gil: bool,
    /// It waits for the GIL (read where the version publishes it: 3.15); `None` where unknown.
    pub waiting_gil: Option<bool>,
    /// Innermost first; empty when the thread runs no Python code (or changed under every read:
    /// then `torn`).
    pub frames: Vec<NamedFrame>,
    /// Deeper than the reader's cap: only the innermost frames are here.
    pub truncated: bool,
    /// Its stack changed under every read: no frames are given rather than wrong ones.
    pub torn: bool,
    /// With `locals`, each frame's local variables, as `frames`, or why they were not read;
    /// else empty.
    pub locals: Vec<Result<Vec<Local>, String>>,
}

/// Why a dump could not be made: the reader's error, or a blocking dump's hold refused.
#[derive(Debug)]
pub enum DumpError {
    Read(Error),
    Refused(String),
}

impl From<Error> for DumpError {
    fn from(e: Error) -> Self {
        DumpError::Read(e)
    }
}

impl From<std::io::Error> for DumpError {
    fn from(e: std::io::Error) -> Self {
        DumpError::Read(Error::Io(e))
    }
}

/// Every thread of the process of `rt`, in the interpreter's order (newest first); with
/// `locals`, each frame's local variables, read right after the stacks (while the target is
/// stopped, with `blocking`).
pub fn dump(rt: &Runtime, blocking: bool, locals: bool) -> Result<Vec<ThreadDump>, DumpError> {
    let mut reader = StackReader::new(rt)?;
    reader.keep_addresses = locals;
    // A version or layout whose locals cannot be read says so in each frame's place.
    let locals_reader = locals.then(|| LocalsReader::new(rt).map_err(|e| e.to_string()));
    let mut samples = Vec::new();
    let mut all_locals = Vec::new();
    let mut read = |reader: &mut StackReader, samples: &mut Vec<ThreadSample>| {
        reader.read_whole(samples)?;
        if let Some(locals_reader) = &locals_reader {
            all_locals = samples
                .iter()
                .map(|t| frames_locals(t, locals_reader))
                .collect();
        }
        status::gil_holder(rt)
    };
    let holder = if blocking {
        let mut pause = Pause::seize(rt.pid).map_err(|Refused(why)| DumpError::Refused(why))?;
        pause.stop()?;
        let held = read(&mut reader, &mut samples);
        pause.resume();
        drop(pause);
        held?
    } else {
        read(&mut reader, &mut samples)?
    };
    // A process that never imported threading has no names: not an error.
    let names = names::thread_names(rt).unwrap_or_default();
    let mut states = ThreadStates::new(rt.pid);
    let mut all_locals = all_locals.into_iter();
    Ok(samples
        .iter()
        .map(|t| {
            let mut dumped = thread(t, &reader, &names, &mut states, holder);
            dumped.locals = all_locals.next().unwrap_or_default();
            dumped
        })
        .collect())
}

/// The locals of each frame of `t` (innermost first), or why not.
fn frames_locals(
    t: &ThreadSample,
    reader: &Result<LocalsReader, String>,
) -> Vec<Result<Vec<Local>, String>> {
    if t.torn {
        return Vec::new();
    }
    t.addresses
        .iter()
        .map(|&(frame, code)| match reader {
            Ok(reader) => reader.frame_locals(frame, code).map_err(|e| e.to_string()),
            Err(why) => Err(why.clone()),
        })
        .collect()
}

fn thread(
    t: &ThreadSample,
    reader: &StackReader,
    names: &HashMap<u64, String>,
    states: &mut ThreadStates,
    holder: Option<u64>,
) -> ThreadDump {
    let frames = if t.torn {
        Vec::new()
    } else {
        t.frames.iter().map(|f| reader.named(f)).collect()
    };
    let state = match t.native_thread_id {
        0 => None,
        tid => states.state(tid).ok().flatten(),
    };
    ThreadDump {
        native_id: t.native_thread_id,
        ident: t.thread_id,
        main: t.main,
        name: names.get(&t.thread_id).cloned(),
        state,
        has_gil: holder == Some(t.tstate),
        waiting_gil: reader.gil_requested(t.tstate),
        frames,
        truncated: t.truncated,
        torn: t.torn,
        locals: Vec::new(),
    }
}
