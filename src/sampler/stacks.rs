//! `thread_stacks(rt)`: every thread's Python call stack in another process, read from outside.
//!
//! 3.13: the runtime publishes where each field is (`_Py_DebugOffsets`, read from the target
//! at each call, never assumed); what it does not publish (the C-stack frame owner, the `str`
//! state bits, the location table's format) is in `versions`. 3.11 and 3.12 publish nothing:
//! their layouts are tables in `versions`, taken from their headers, and each thread state's
//! `interp` pointing back at its interpreter checks them. The walk is runtime -> interpreters
//! -> thread states -> frames (innermost first) -> code objects (cached by address for one
//! walk, never across walks, where an address may be reused). Every count and length read
//! from the target is capped, so a torn read of a running target ends the walk with an error
//! instead of looping or allocating without bound.

use std::collections::HashMap;
use std::fmt;
use std::io;

use super::linetable;
use super::remote::{self, at};
use super::runtime::Runtime;
use super::versions::{self, debug_offsets_313 as w, StackFacts, StackLayout, UnicodeLayout};

/// Interpreters, threads per interpreter, frames per thread: beyond these a chain is taken as
/// torn (a cycle or garbage).
pub const MAX_INTERPRETERS: usize = 256;
pub const MAX_THREADS: usize = 4096;
pub const MAX_FRAMES: usize = 4096;
/// Characters of a file or function name; bytes of a location table.
pub const MAX_STRING: u64 = 4096;
pub const MAX_LINETABLE: u64 = 1 << 20;
/// An offset in `_Py_DebugOffsets` beyond this is not a field offset: a foreign struct.
const MAX_FIELD_OFFSET: u64 = 1 << 20;

/// One frame of a Python call stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub filename: String,
    pub name: String,
    pub qualname: String,
    /// The line being executed; `None` when its instruction has no location.
    pub line: Option<i64>,
}

/// One thread's Python call stack, innermost frame first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadStack {
    /// The OS thread id (`threading.get_native_id()`).
    pub native_thread_id: u64,
    /// Python's thread ident (`threading.get_ident()`, the `pthread_t`).
    pub thread_id: u64,
    pub frames: Vec<Frame>,
}

/// Why the stacks were not read.
#[derive(Debug)]
pub enum Error {
    /// A read of the target failed (it exited, a pointer was torn, or no permission).
    Io(io::Error),
    /// The target's Python version is one whose stacks this reader cannot read yet.
    Unsupported(String),
    /// What was read does not hang together (a layout that is not the expected one).
    Layout(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Unsupported(why) | Error::Layout(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

/// The layout from 3.13's `_Py_DebugOffsets` at the start of `_PyRuntime`.
fn layout_from_debug_offsets(pid: i32, runtime: u64) -> Result<StackLayout, Error> {
    let raw = remote::read_bytes(pid, runtime, (w::WORDS * 8) as u64, (w::WORDS * 8) as u64)?;
    let words: Vec<u64> = raw
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect();
    let get = |i: usize| -> Result<u64, Error> {
        match words.get(i) {
            Some(&v) if v < MAX_FIELD_OFFSET => Ok(v),
            Some(&v) => Err(Error::Layout(format!(
                "_Py_DebugOffsets word {i} is {v:#x}: not a field offset"
            ))),
            None => Err(Error::Layout(format!("_Py_DebugOffsets word {i} not read"))),
        }
    };
    Ok(StackLayout {
        interpreters_head: get(w::RUNTIME_INTERPRETERS_HEAD)?,
        interp_next: get(w::INTERP_NEXT)?,
        threads_head: get(w::INTERP_THREADS_HEAD)?,
        thread_next: get(w::THREAD_NEXT)?,
        thread_interp: get(w::THREAD_INTERP)?,
        thread_cframe: None,
        current_frame: get(w::THREAD_CURRENT_FRAME)?,
        thread_id: get(w::THREAD_THREAD_ID)?,
        native_thread_id: get(w::THREAD_NATIVE_THREAD_ID)?,
        frame_previous: get(w::FRAME_PREVIOUS)?,
        frame_executable: get(w::FRAME_EXECUTABLE)?,
        frame_instr_ptr: get(w::FRAME_INSTR_PTR)?,
        frame_owner: get(w::FRAME_OWNER)?,
        code_filename: get(w::CODE_FILENAME)?,
        code_name: get(w::CODE_NAME)?,
        code_qualname: get(w::CODE_QUALNAME)?,
        code_linetable: get(w::CODE_LINETABLE)?,
        code_firstlineno: get(w::CODE_FIRSTLINENO)?,
        code_adaptive: get(w::CODE_CODE_ADAPTIVE)?,
        bytes_size: get(w::BYTES_OB_SIZE)?,
        bytes_sval: get(w::BYTES_OB_SVAL)?,
        unicode: UnicodeLayout {
            state: get(w::UNICODE_STATE)?,
            length: get(w::UNICODE_LENGTH)?,
            ascii_size: get(w::UNICODE_ASCIIOBJECT_SIZE)?,
        },
    })
}

/// What a code object gives every frame that runs it.
struct Code {
    filename: String,
    name: String,
    qualname: String,
    first_line: i64,
    linetable: Vec<u8>,
}

/// The reader of one process, for one walk: its offsets and the code objects seen so far.
struct Reader<'a> {
    pid: i32,
    off: StackLayout,
    facts: &'a StackFacts,
    codes: HashMap<u64, Code>,
}

impl Reader<'_> {
    fn ptr(&self, addr: u64, offset: u64) -> io::Result<u64> {
        remote::read_u64(self.pid, at(addr, offset)?)
    }

    fn string(&self, addr: u64) -> io::Result<String> {
        remote::read_str(self.pid, addr, &self.off.unicode, self.facts, MAX_STRING)
    }

    fn code(&mut self, addr: u64) -> io::Result<&Code> {
        if !self.codes.contains_key(&addr) {
            let o = self.off;
            let table = self.ptr(addr, o.code_linetable)?;
            let table_len = self.ptr(table, o.bytes_size)?;
            let code = Code {
                filename: self.string(self.ptr(addr, o.code_filename)?)?,
                name: self.string(self.ptr(addr, o.code_name)?)?,
                qualname: self.string(self.ptr(addr, o.code_qualname)?)?,
                first_line: i64::from(remote::read_i32(self.pid, at(addr, o.code_firstlineno)?)?),
                linetable: remote::read_bytes(
                    self.pid,
                    at(table, o.bytes_sval)?,
                    table_len,
                    MAX_LINETABLE,
                )?,
            };
            self.codes.insert(addr, code);
        }
        self.codes
            .get(&addr)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EFAULT))
    }

    /// The frames of the thread whose innermost frame is at `frame`, innermost first.
    fn frames(&mut self, mut frame: u64) -> Result<Vec<Frame>, Error> {
        let o = self.off;
        let mut frames = Vec::new();
        for _ in 0..MAX_FRAMES {
            if frame == 0 {
                return Ok(frames);
            }
            let owner = remote::read_u8(self.pid, at(frame, o.frame_owner)?)?;
            if Some(owner) != self.facts.frame_owned_by_cstack {
                let executable = self.ptr(frame, o.frame_executable)?;
                let instr = self.ptr(frame, o.frame_instr_ptr)?;
                let unit = self.facts.code_unit;
                let code = self.code(executable)?;
                let start = at(executable, o.code_adaptive)?;
                let line = instr.checked_sub(start).and_then(|bytes| {
                    linetable::line_of(&code.linetable, code.first_line, bytes / unit)
                });
                frames.push(Frame {
                    filename: code.filename.clone(),
                    name: code.name.clone(),
                    qualname: code.qualname.clone(),
                    line,
                });
            }
            frame = self.ptr(frame, o.frame_previous)?;
        }
        Err(Error::Layout(format!(
            "a frame chain longer than {MAX_FRAMES} frames: torn or cyclic"
        )))
    }

    /// The threads of the interpreter at `interp`, newest first.
    fn threads(&mut self, interp: u64, out: &mut Vec<ThreadStack>) -> Result<(), Error> {
        let o = self.off;
        let mut tstate = self.ptr(interp, o.threads_head)?;
        for _ in 0..MAX_THREADS {
            if tstate == 0 {
                return Ok(());
            }
            let back = self.ptr(tstate, o.thread_interp)?;
            if back != interp {
                return Err(Error::Layout(format!(
                    "thread state {tstate:#x} points to interpreter {back:#x}, not {interp:#x}"
                )));
            }
            let frame = match o.thread_cframe {
                Some(cframe) => match self.ptr(tstate, cframe)? {
                    0 => 0,
                    cframe => self.ptr(cframe, o.current_frame)?,
                },
                None => self.ptr(tstate, o.current_frame)?,
            };
            out.push(ThreadStack {
                native_thread_id: self.ptr(tstate, o.native_thread_id)?,
                thread_id: self.ptr(tstate, o.thread_id)?,
                frames: self.frames(frame)?,
            });
            tstate = self.ptr(tstate, o.thread_next)?;
        }
        Err(Error::Layout(format!(
            "more than {MAX_THREADS} thread states: a torn or cyclic list"
        )))
    }
}

/// Every thread's Python call stack in the process of `rt`, over all its interpreters.
pub fn thread_stacks(rt: &Runtime) -> Result<Vec<ThreadStack>, Error> {
    let (major, minor) = rt.version.ok_or_else(|| {
        Error::Unsupported(format!(
            "process {}: the Python version of {} is not known",
            rt.pid,
            rt.library.display()
        ))
    })?;
    let facts = versions::stack_facts(major, minor).ok_or_else(|| {
        Error::Unsupported(format!(
            "reading the thread stacks of Python {major}.{minor} is not supported yet \
             (process {}; supported: 3.11-3.13)",
            rt.pid
        ))
    })?;
    let off = match facts.layout {
        Some(layout) => layout,
        None if rt.version_hex.is_some() => layout_from_debug_offsets(rt.pid, rt.address)?,
        None => {
            return Err(Error::Layout(format!(
                "process {}: Python {major}.{minor} without _Py_DebugOffsets",
                rt.pid
            )))
        }
    };
    let mut reader = Reader {
        pid: rt.pid,
        off,
        facts,
        codes: HashMap::new(),
    };
    let mut stacks = Vec::new();
    let mut interp = reader.ptr(rt.address, off.interpreters_head)?;
    for _ in 0..MAX_INTERPRETERS {
        if interp == 0 {
            return Ok(stacks);
        }
        reader.threads(interp, &mut stacks)?;
        interp = reader.ptr(interp, off.interp_next)?;
    }
    Err(Error::Layout(format!(
        "more than {MAX_INTERPRETERS} interpreters: a torn or cyclic list"
    )))
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
