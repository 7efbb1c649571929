//! `StackReader`: every thread's Python call stack in another process, read from outside, again
//! and again (a sampler's reads), and `thread_stacks(rt)`, one such read as names and lines.
//!
//! 3.13: the runtime publishes where each field is (`_Py_DebugOffsets`, read from the target
//! once per reader, never assumed); what it does not publish (the C-stack frame owner, the `str`
//! state bits, the location table's format) is in `versions`. 3.11 and 3.12 publish nothing:
//! their layouts are tables in `versions`, taken from their headers, and each thread state's
//! `interp` pointing back at its interpreter checks them. The walk is runtime -> interpreters
//! -> thread states -> frames (innermost first) -> code objects.
//!
//! Speed: one system call per thread state and per frame (each struct's fields as one span),
//! and one per thread for the headers of all its frames' code objects, which checks that each
//! cached code object is still the one cached (an address can be reused after a free). Names
//! and location tables are read only for a code object not seen before.
//!
//! A running target changes under the reader: every count and length read from it is capped,
//! and a thread whose stack cannot be read whole is reported torn and dropped, while the other
//! threads of the same sample are kept.

use std::collections::HashMap;
use std::io;

pub use super::error::Error;
use super::layout::{self, Spans};
use super::linetable;
use super::memory;
use super::pages::Pages;
use super::remote::{self, at};
use super::runtime::Runtime;
use super::versions::{StackFacts, StackLayout};
use crate::samples::profile::{Frame, Function};

/// Interpreters, threads per interpreter: beyond these a chain is taken as torn (a cycle or
/// garbage).
pub const MAX_INTERPRETERS: usize = 256;
pub const MAX_THREADS: usize = 4096;
/// Frames kept per stack: a deeper stack keeps its innermost frames and is marked truncated.
pub const MAX_FRAMES: usize = 4096;
/// Characters of a file or function name; bytes of a location table.
pub const MAX_STRING: u64 = 4096;
pub const MAX_LINETABLE: u64 = 1 << 20;
/// Code objects, and lines per code object, remembered; beyond these a cache starts over.
const MAX_CODES: usize = 1 << 16;
const MAX_LINES: usize = 1 << 12;

/// One thread as one read saw it.
#[derive(Clone, Debug, Default)]
pub struct ThreadSample {
    /// The `PyThreadState`'s address (what the GIL's `last_holder` points to).
    pub tstate: u64,
    /// The OS thread id (`threading.get_native_id()`).
    pub native_thread_id: u64,
    /// Python's thread ident (`threading.get_ident()`, the `pthread_t`).
    pub thread_id: u64,
    /// Innermost first; functions are indices in the reader's `functions`.
    pub frames: Vec<Frame>,
    /// Deeper than `MAX_FRAMES`: only the innermost frames are here.
    pub truncated: bool,
    /// The stack changed under the read (or could not be read): `frames` is not to be used.
    pub torn: bool,
}

/// What a code object gives every frame that runs it, and what checks it is still that one.
struct Code {
    /// The code object's header fields as read when cached (names' and table's addresses, first
    /// line): equal bytes at the same address mean the same code object.
    header: Box<[u8]>,
    function: u32,
    first_line: i64,
    linetable: Vec<u8>,
    /// Instruction (code unit) -> line, as found so far.
    lines: HashMap<u64, i32>,
}

/// A reader of one process's stacks, kept across reads: its layout and the code objects seen.
pub struct StackReader {
    pub pid: i32,
    runtime: u64,
    off: StackLayout,
    facts: &'static StackFacts,
    spans: Spans,
    codes: HashMap<u64, Code>,
    /// The functions the frames name, in first-seen order.
    pub functions: indexmap::IndexSet<Function>,
    buf: Vec<u8>,
    addrs: Vec<u64>,
    starts: Vec<u64>,
    pending: Vec<(u64, u64)>,
    /// Pages read in this sample (the frames of a thread's data stack share a few).
    pages: Pages,
}

impl StackReader {
    /// A reader for the process of `rt`; fails when its version or layout cannot be read.
    pub fn new(rt: &Runtime) -> Result<StackReader, Error> {
        let (facts, off) = layout::resolve(rt)?;
        Ok(StackReader {
            pid: rt.pid,
            runtime: rt.address,
            off,
            facts,
            spans: Spans::of(&off),
            codes: HashMap::new(),
            functions: indexmap::IndexSet::new(),
            buf: Vec::new(),
            addrs: Vec::new(),
            starts: Vec::new(),
            pending: Vec::new(),
            pages: Pages::default(),
        })
    }

    /// The layout this reader follows.
    pub fn layout(&self) -> &StackLayout {
        &self.off
    }

    fn ptr(&self, addr: u64, offset: u64) -> io::Result<u64> {
        remote::read_u64(self.pid, at(addr, offset)?)
    }

    fn string(&self, addr: u64) -> io::Result<String> {
        remote::read_str(
            self.pid,
            addr,
            &self.off.unicode,
            &self.facts.str_facts,
            MAX_STRING,
        )
    }

    /// Reads every thread of every interpreter into `out` (reusing its buffers), newest thread
    /// first. An error means the interpreter or thread lists themselves could not be walked;
    /// a thread whose own stack was torn is in `out` with `torn` set.
    pub fn read(&mut self, out: &mut Vec<ThreadSample>) -> Result<(), Error> {
        self.pages.clear();
        let mut used = 0;
        let mut interp = self.ptr(self.runtime, self.off.interpreters_head)?;
        for _ in 0..MAX_INTERPRETERS {
            if interp == 0 {
                out.truncate(used);
                return Ok(());
            }
            used = self.threads(interp, out, used)?;
            interp = self.ptr(interp, self.off.interp_next)?;
        }
        out.truncate(used);
        Err(Error::Layout(format!(
            "more than {MAX_INTERPRETERS} interpreters: a torn or cyclic list"
        )))
    }

    /// The threads of the interpreter at `interp`, into `out[used..]`; the new `used`.
    fn threads(
        &mut self,
        interp: u64,
        out: &mut Vec<ThreadSample>,
        mut used: usize,
    ) -> Result<usize, Error> {
        let o = self.off;
        let span = self.spans.thread;
        let mut tstate = self.ptr(interp, o.threads_head)?;
        let mut head = vec![0u8; span.bytes()];
        for _ in 0..MAX_THREADS {
            if tstate == 0 {
                return Ok(used);
            }
            memory::read(self.pid, at(tstate, span.lo)?, &mut head)?;
            let back = span.u64_at(&head, o.thread_interp);
            if back != interp {
                return Err(Error::Layout(format!(
                    "thread state {tstate:#x} points to interpreter {back:#x}, not {interp:#x}"
                )));
            }
            if out.len() == used {
                out.push(ThreadSample::default());
            }
            let sample = &mut out[used];
            used += 1;
            sample.tstate = tstate;
            sample.thread_id = span.u64_at(&head, o.thread_id);
            sample.native_thread_id = span.u64_at(&head, o.native_thread_id);
            let frame = match o.thread_cframe {
                Some(cframe) => match span.u64_at(&head, cframe) {
                    0 => Ok(0),
                    cframe => self.ptr(cframe, o.current_frame),
                },
                None => Ok(span.u64_at(&head, o.current_frame)),
            };
            let mut frames = std::mem::take(&mut sample.frames);
            let walked = frame
                .map_err(Error::Io)
                .and_then(|f| self.frames(f, &mut frames));
            let sample = &mut out[used - 1];
            sample.frames = frames;
            match walked {
                Ok(truncated) => {
                    sample.truncated = truncated;
                    sample.torn = false;
                }
                Err(_) => {
                    sample.frames.clear();
                    sample.truncated = false;
                    sample.torn = true;
                }
            }
            tstate = span.u64_at(&head, o.thread_next);
        }
        Err(Error::Layout(format!(
            "more than {MAX_THREADS} thread states: a torn or cyclic list"
        )))
    }

    /// The frames of the thread whose innermost frame is at `frame`, innermost first, into
    /// `frames`; whether the stack was deeper than `MAX_FRAMES`.
    fn frames(&mut self, mut frame: u64, frames: &mut Vec<Frame>) -> Result<bool, Error> {
        let o = self.off;
        let span = self.spans.frame;
        frames.clear();
        self.pending.clear();
        let mut raw = [0u8; 256];
        let raw = raw
            .get_mut(..span.bytes())
            .ok_or_else(|| Error::Layout(format!("a frame span of {} bytes", span.bytes())))?;
        let mut truncated = true;
        for _ in 0..MAX_FRAMES {
            if frame == 0 {
                truncated = false;
                break;
            }
            self.pages.read(self.pid, at(frame, span.lo)?, raw)?;
            let owner = span.u8_at(raw, o.frame_owner);
            if Some(owner) != self.facts.frame_owned_by_cstack {
                let executable = span.u64_at(raw, o.frame_executable);
                let instr = span.u64_at(raw, o.frame_instr_ptr);
                self.pending.push((executable, instr));
            }
            frame = span.u64_at(raw, o.frame_previous);
        }
        self.check_codes()?;
        for i in 0..self.pending.len() {
            let (executable, instr) = self.pending[i];
            frames.push(self.frame_of(executable, instr)?);
        }
        Ok(truncated)
    }

    /// Reads the headers of the pending frames' code objects in one call, and reads anew each
    /// code object that is not cached or whose header changed.
    fn check_codes(&mut self) -> Result<(), Error> {
        let span = self.spans.code;
        self.addrs.clear();
        for &(code, _) in &self.pending {
            if !self.addrs.contains(&code) {
                self.addrs.push(code);
            }
        }
        self.starts.clear();
        for &c in &self.addrs {
            self.starts.push(at(c, span.lo)?);
        }
        let mut buf = std::mem::take(&mut self.buf);
        let whole = memory::read_many(self.pid, &self.starts, span.bytes(), &mut buf);
        let result = (|| {
            let whole = whole?;
            for i in 0..self.addrs.len() {
                let code = self.addrs[i];
                let read_now;
                let header = match buf.get(i * span.bytes()..(i + 1) * span.bytes()) {
                    Some(h) if i < whole => h,
                    _ => {
                        let len = span.bytes() as u64;
                        read_now = remote::read_bytes(self.pid, self.starts[i], len, 4096)?;
                        &read_now[..]
                    }
                };
                let fresh = self.codes.get(&code).is_some_and(|c| *c.header == *header);
                if !fresh {
                    self.cache_code(code, header.into())?;
                }
            }
            Ok(())
        })();
        self.buf = buf;
        result
    }

    /// Reads the code object at `code` whose header is `header`, and caches it.
    fn cache_code(&mut self, code: u64, header: Box<[u8]>) -> Result<(), Error> {
        let o = self.off;
        let span = self.spans.code;
        let table = span.u64_at(&header, o.code_linetable);
        let table_len = self.ptr(table, o.bytes_size)?;
        let first_line = i64::from(span.i32_at(&header, o.code_firstlineno));
        let function = Function {
            filename: self.string(span.u64_at(&header, o.code_filename))?,
            first_line,
            name: self.string(span.u64_at(&header, o.code_name))?,
        };
        let linetable =
            remote::read_bytes(self.pid, at(table, o.bytes_sval)?, table_len, MAX_LINETABLE)?;
        if self.codes.len() >= MAX_CODES {
            self.codes.clear();
        }
        let (function, _) = self.functions.insert_full(function);
        self.codes.insert(
            code,
            Code {
                header,
                function: function as u32,
                first_line,
                linetable,
                lines: HashMap::new(),
            },
        );
        Ok(())
    }

    /// The frame running code object `code` (cached) at instruction address `instr`.
    fn frame_of(&mut self, code: u64, instr: u64) -> Result<Frame, Error> {
        let start = at(code, self.off.code_adaptive)?;
        let unit = instr.checked_sub(start).map(|b| b / self.facts.code_unit);
        let c = self
            .codes
            .get_mut(&code)
            .ok_or_else(|| Error::Layout(format!("code object {code:#x} not cached")))?;
        let line = match unit {
            None => 0,
            Some(unit) => match c.lines.get(&unit) {
                Some(&line) => line,
                None => {
                    let line = linetable::line_of(&c.linetable, c.first_line, unit)
                        .and_then(|l| i32::try_from(l).ok())
                        .unwrap_or(0);
                    if c.lines.len() >= MAX_LINES {
                        c.lines.clear();
                    }
                    c.lines.insert(unit, line);
                    line
                }
            },
        };
        Ok(Frame {
            function: c.function,
            line,
        })
    }
}

/// One frame of a Python call stack, by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedFrame {
    pub filename: String,
    pub name: String,
    /// The line being executed; `None` when its instruction has no location.
    pub line: Option<i64>,
}

/// One thread's Python call stack, innermost frame first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadStack {
    pub native_thread_id: u64,
    pub thread_id: u64,
    pub frames: Vec<NamedFrame>,
}

/// Every thread's Python call stack in the process of `rt`, over all its interpreters: one read,
/// where any torn thread fails the whole read.
pub fn thread_stacks(rt: &Runtime) -> Result<Vec<ThreadStack>, Error> {
    let mut reader = StackReader::new(rt)?;
    let mut samples = Vec::new();
    reader.read(&mut samples)?;
    samples
        .into_iter()
        .map(|t| {
            if t.torn || t.truncated {
                return Err(Error::Layout(format!(
                    "thread {} changed while it was read",
                    t.thread_id
                )));
            }
            let frames = t
                .frames
                .iter()
                .map(|f| {
                    let func = reader.functions.get_index(f.function as usize);
                    NamedFrame {
                        filename: func.map(|f| f.filename.clone()).unwrap_or_default(),
                        name: func.map(|f| f.name.clone()).unwrap_or_default(),
                        line: (f.line != 0).then_some(i64::from(f.line)),
                    }
                })
                .collect();
            Ok(ThreadStack {
                native_thread_id: t.native_thread_id,
                thread_id: t.thread_id,
                frames,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn runtime(version: Option<(u8, u8)>, version_hex: Option<u64>) -> Runtime {
        Runtime {
            pid: 1,
            address: 0,
            library: PathBuf::from("libpython3.12.so"),
            version,
            version_hex,
        }
    }

    #[test]
    fn versions_without_a_reader_are_unsupported_and_named() {
        match thread_stacks(&runtime(Some((3, 10)), None)) {
            Err(Error::Unsupported(why)) => assert!(why.contains("Python 3.10"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            thread_stacks(&runtime(None, None)),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn a_runtime_that_is_not_there_is_an_io_error() {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        let rt = Runtime {
            pid,
            address: 8,
            ..runtime(Some((3, 13)), Some(0x030d00f0))
        };
        assert!(matches!(thread_stacks(&rt), Err(Error::Io(_))));
    }
}
