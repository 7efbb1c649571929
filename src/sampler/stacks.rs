//! `StackReader`: every thread's Python call stack in another process, read from outside, again
//! and again (a sampler's reads), and `thread_stacks(rt)`, one such read as names and lines.
//!
//! 3.13+: the runtime publishes where each field is (`_Py_DebugOffsets`, read from the target
//! once per reader, never assumed, at word places `versions::DebugWordMap` gives per version);
//! what it does not publish (the owners of frames that are not Python's, the tag bits of 3.14+'s
//! code pointers, the `str` state bits, the location table's format) is in `versions`. 3.10 to
//! 3.12 publish nothing: their layouts are tables in `versions`, taken from their headers, and
//! each thread state's `interp` pointing back at its interpreter checks them. The walk is
//! runtime -> interpreters -> thread states -> frames (innermost first) -> code objects. 3.10's frames are frame objects
//! whose `f_lasti` counts code units, 3.11+'s interpreter frames that point at their instruction:
//! `versions::FrameKind` says which, and `StackReader::frames` alone reads it.
//!
//! Speed: what a sample reads is read again at the next one's start, in one system call
//! (`Snapshot`: the interpreter list, thread states, frames and code headers), and served from
//! there; what it does not hold is read as follows. One call per thread state (its fields as one
//! span); a thread's frames are read a page at a time (`Pages`: 3.11+'s data stack holds a
//! 20-deep stack in one or two pages, 3.10's frame objects lie on a few heap pages); and one
//! call per thread for the headers of all its frames' code objects, which checks that each
//! cached code object is still the one cached (an address can be reused after a free), once a
//! sample. Names and location tables are read only for a code object not seen before.
//! `check_chain`'s read is never served from the snapshot: it is the stack's second, fresh
//! look. A thread read again after a failed check is walked from what that check read (one
//! call a walk, not one per thread state, page and header), from the innermost frame it read
//! before the frames.
//!
//! A running target changes under the reader: every count and length read from it is capped,
//! and a thread whose stack cannot be read whole is read again from its thread state (a few
//! times, `REREADS`), then reported torn and dropped, while the other threads of the same sample
//! are kept. 3.10 sees most changes (a frame that finished); on a target that calls and returns
//! fast, most of its first reads are torn, so reading again matters there.

use std::collections::HashMap;
use std::io;

use rustc_hash::FxBuildHasher;

pub use super::error::Error;
use super::layout::{self, Span, Spans};
use super::linetable;
use super::memory;
use super::pages::Pages;
use super::remote::{self, at};
use super::runtime::Runtime;
use super::snapshot::Snapshot;
use super::tids::{self, Tids};
use super::versions::{FrameKind, StackFacts, StackLayout};
use crate::samples::profile::{Frame, Function};

mod check;
use check::CheckPlan;

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
/// The page size a data stack chunk is mapped in, at the start of one.
const PAGE: u64 = 4096;
const MAX_LINES: usize = 1 << 12;
/// Reads again of a thread torn by a change under the read, before it is reported torn: a
/// sample a few microseconds late is still a sample, while dropping it would under-count code
/// that calls and returns fast.
const REREADS: usize = 7;
/// Whole reads `thread_stacks` tries for one in which no thread was torn.
const WHOLE_READS: usize = 8;
/// Reads tried for 3.10's OS ids to hold together (a thread may start or end under one).
const TID_CHECKS: usize = 3;

/// One thread as one read saw it.
#[derive(Clone, Debug, Default)]
pub struct ThreadSample {
    /// The `PyThreadState`'s address (what the GIL's `last_holder` points to).
    pub tstate: u64,
    /// The OS thread id (`threading.get_native_id()`): the thread state's own (3.11+), or read
    /// from the thread's glibc descriptor (3.10, `tids`); 0 where it is not known.
    pub native_thread_id: u64,
    /// Python's thread ident (`threading.get_ident()`, the `pthread_t`).
    pub thread_id: u64,
    /// The process's main thread: its native id is the process id (3.11+), its ident is
    /// `_PyRuntime.main_thread` (3.10).
    pub main: bool,
    /// Innermost first; functions are indices in the reader's `functions`.
    pub frames: Vec<Frame>,
    /// Deeper than `MAX_FRAMES`: only the innermost frames are here.
    pub truncated: bool,
    /// The stack changed under the read (or could not be read): `frames` is not to be used.
    pub torn: bool,
    /// Its first look was torn and it was read again (kept or not).
    pub read_again: bool,
    /// Each frame's address and code object, as `frames`: kept only by a reader told to
    /// (`StackReader::keep_addresses`, the dump's, which reads the frames' locals), else empty.
    pub addresses: Vec<(u64, u64)>,
}

/// What a code object gives every frame that runs it, and what checks it is still that one.
struct Code {
    /// The code object's header fields as read when cached (names' and table's addresses, first
    /// line): equal bytes at the same address mean the same code object.
    header: Box<[u8]>,
    function: u32,
    first_line: i64,
    linetable: Vec<u8>,
    /// Instruction (code unit index) -> line, as found so far.
    lines: HashMap<u64, i32, FxBuildHasher>,
    /// Bytes its frames take on the data stack (0: not known).
    frame_bytes: u64,
    /// The read (`StackReader::reads`) that last found its header unchanged.
    checked: u64,
}

/// One frame of a walked chain, as read.
struct Link {
    frame: u64,
    previous: u64,
    code: u64,
    /// A Python frame (one of the stack's), not a shim.
    python: bool,
    /// On the thread's data stack (`FramePlacing::owned_by_thread`).
    on_data_stack: bool,
    /// Runs the interpreter's own code (`StackFacts::internal_code`): no frame of the stack.
    internal: bool,
    /// Called from C code (3.11's `is_entry`, `FramePlacing::frame_is_entry`).
    entry: bool,
}

impl Link {
    /// A frame of the stack the walk gives.
    fn shown(&self) -> bool {
        self.python && !self.internal
    }
}

/// What one frame of a chain is.
enum Seen {
    /// It has returned: 3.10's returned or raised (its `f_back` is stale or links the frame
    /// free list), 3.14+'s whose code was cleared as it was popped (its `previous` kept).
    Finished,
    /// 3.12+: a shim frame of C code or (3.14+) the interpreter's entry frame, not Python.
    Shim,
    /// Running code object `.0` at code unit `.1` (`None`: before its first instruction).
    Python(u64, Option<u64>),
}

/// The span of a cframe's `current_frame` and (3.11-3.12) its `previous`, side by side: read
/// as one, by a walk and by a check's last look (all that a walk from that read asks).
fn cframe_words(o: &StackLayout) -> Span {
    let (lo, hi) = (o.current_frame, o.current_frame + 8);
    match o.cframe_previous {
        Some(previous) => Span {
            lo: lo.min(previous),
            hi: hi.max(previous + 8),
        },
        None => Span { lo, hi },
    }
}

/// A reader of one process's stacks, kept across reads: its layout and the code objects seen.
pub struct StackReader {
    pub pid: i32,
    runtime: u64,
    off: StackLayout,
    facts: &'static StackFacts,
    spans: Spans,
    /// Fx-hashed: looked up for every frame of every sample.
    codes: HashMap<u64, Code, FxBuildHasher>,
    /// The functions the frames name, in first-seen order.
    pub functions: indexmap::IndexSet<Function>,
    /// Those of code objects the interpreter runs for itself (`StackFacts::internal_code`),
    /// left out of the stacks.
    internal: Vec<u32>,
    buf: Vec<u8>,
    addrs: Vec<u64>,
    starts: Vec<u64>,
    /// The frames of the thread being read: code object, code unit (`None`: not started).
    pending: Vec<(u64, Option<u64>)>,
    /// The chain the walk of a thread followed, from its first running frame: each frame's
    /// address, `previous` and code object, which `check_chain` reads again.
    chain: Vec<Link>,
    /// Bytes of `check_chain`'s read.
    check: Vec<u8>,
    /// `check_chain`'s working lists, kept: a read checks its walk four times on a busy target.
    plan: CheckPlan,
    /// 3.11-3.12: the cframe before the walk's (`_PyCFrame.previous`; 0: none).
    outer_cframe: u64,
    /// Reads so far: a code object's header checked at this read is not checked again in it.
    reads: u64,
    /// Whether the snapshot now holds what the last failed check read (`Snapshot::adopt`).
    adopted: bool,
    /// Pages read in this walk of a thread's frames (they share a few).
    pages: Pages,
    /// What the last sample read, read again in one call as the next starts: the runtime's
    /// lists, thread states, frames and code headers (`check_chain` reads past it).
    snap: Snapshot,
    /// 3.10: where threads' OS ids are read (`None`: nowhere here, they are 0), and the main
    /// thread's ident.
    tids: Option<Tids>,
    main_ident: u64,
    /// Reads again of a torn thread (`REREADS`; none when the target is stopped for the read,
    /// where nothing moves between two reads).
    pub rereads: usize,
    /// Whether each sample keeps its frames' addresses (`ThreadSample::addresses`): the dump's
    /// reader does, a sampler's does not.
    pub keep_addresses: bool,
}

impl StackReader {
    /// A reader for the process of `rt`; fails when its version or layout cannot be read, and
    /// (`NotReady`) on 3.10 before its interpreter made its main thread: what the reader then
    /// reads once (the main thread's ident, the threads' OS ids) is not there yet.
    pub fn new(rt: &Runtime) -> Result<StackReader, Error> {
        let (facts, off) = layout::resolve(rt)?;
        let mut reader = StackReader::with(rt.pid, rt.address, facts, off);
        if let Some(main) = off.runtime_main_thread {
            reader.main_ident = reader.ptr(rt.address, main)?;
            if reader.main_ident == 0 {
                return Err(not_ready(rt.pid));
            }
            reader.find_tids()?;
        }
        Ok(reader)
    }

    /// Where thread states have no native id (3.10): reads threads' OS ids from their glibc
    /// descriptors from now on if, at one of a few reads, the ids read hold together with the
    /// process's threads (`tids::consistent`); else they stay unknown.
    fn find_tids(&mut self) -> Result<(), Error> {
        let Some(layout) = tids::GLIBC else {
            return Ok(());
        };
        self.tids = Some(Tids::new(self.pid, layout));
        let mut threads = Vec::new();
        let mut seen = Vec::new();
        for check in 0..TID_CHECKS {
            self.read(&mut threads)?;
            if threads.is_empty() && check + 1 == TID_CHECKS {
                return Err(not_ready(self.pid));
            }
            let tasks = tids::thread_ids(self.pid)?;
            seen.clear();
            seen.extend(threads.iter().map(|t| (t.thread_id, t.native_thread_id)));
            if tids::consistent(self.pid, &seen, self.main_ident, &tasks) {
                return Ok(());
            }
        }
        self.tids = None;
        Ok(())
    }

    /// Whether the thread whose state is at `tstate` waits for the GIL, where the version says
    /// (3.15's `gil_requested`); `None` where it does not, or the read failed.
    pub fn gil_requested(&self, tstate: u64) -> Option<bool> {
        let at = tstate.checked_add(self.off.gil_requested?)?;
        remote::read_i32(self.pid, at).ok().map(|v| v != 0)
    }

    /// Whether the threads' OS ids are known: always on 3.11+, on 3.10 where `tids` reads them.
    pub fn os_ids(&self) -> bool {
        self.off.native_thread_id.is_some() || self.tids.is_some()
    }

    /// A reader of process `pid` whose `_PyRuntime` is at `runtime`, with a resolved layout.
    fn with(pid: i32, runtime: u64, facts: &'static StackFacts, off: StackLayout) -> StackReader {
        StackReader {
            pid,
            runtime,
            off,
            facts,
            spans: Spans::of(&off),
            codes: HashMap::default(),
            functions: indexmap::IndexSet::new(),
            internal: Vec::new(),
            buf: Vec::new(),
            addrs: Vec::new(),
            starts: Vec::new(),
            pending: Vec::new(),
            chain: Vec::new(),
            check: Vec::new(),
            plan: CheckPlan::default(),
            outer_cframe: 0,
            adopted: false,
            reads: 0,
            pages: Pages::default(),
            snap: Snapshot::default(),
            tids: None,
            main_ident: 0,
            rereads: REREADS,
            keep_addresses: false,
        }
    }

    /// The layout this reader follows.
    pub fn layout(&self) -> &StackLayout {
        &self.off
    }

    fn ptr(&self, addr: u64, offset: u64) -> io::Result<u64> {
        remote::read_u64(self.pid, at(addr, offset)?)
    }

    /// The `u64` at `addr + offset`, from the sample's snapshot where it holds it.
    fn snapped_u64(&mut self, addr: u64, offset: u64) -> io::Result<u64> {
        self.snap.read_u64(self.pid, at(addr, offset)?)
    }

    /// The span of the thread state at `tstate` into `head`, from the snapshot where it holds it.
    fn thread_span(&mut self, tstate: u64, head: &mut [u8]) -> Result<(), Error> {
        let (pid, addr) = (self.pid, at(tstate, self.spans.thread.lo)?);
        self.snap
            .read(addr, head, |out| memory::read(pid, addr, out))
            .map_err(Error::Io)
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

    /// Reads until no thread tore, or `WHOLE_READS` times (a one-shot read: `thread_stacks`,
    /// the dump): a thread that calls and returns fast tears most reads of a reader that has
    /// yet to cache its code objects, and each read again is faster.
    pub fn read_whole(&mut self, out: &mut Vec<ThreadSample>) -> Result<(), Error> {
        for _ in 0..WHOLE_READS {
            self.read(out)?;
            if !out.iter().any(|t| t.torn) {
                break;
            }
        }
        Ok(())
    }

    /// A frame of a read with its function's file and name.
    pub fn named(&self, f: &Frame) -> NamedFrame {
        let func = self.functions.get_index(f.function as usize);
        NamedFrame {
            filename: func.map(|f| f.filename.clone()).unwrap_or_default(),
            name: func.map(|f| f.name.clone()).unwrap_or_default(),
            line: (f.line != 0).then_some(i64::from(f.line)),
        }
    }

    /// Reads every thread of every interpreter into `out` (reusing its buffers), newest thread
    /// first. An error means the interpreter or thread lists themselves could not be walked;
    /// a thread whose own stack was torn is in `out` with `torn` set.
    pub fn read(&mut self, out: &mut Vec<ThreadSample>) -> Result<(), Error> {
        let mut used = 0;
        self.reads += 1;
        self.snap.begin(self.pid);
        let mut interp = self.snapped_u64(self.runtime, self.off.interpreters_head)?;
        for _ in 0..MAX_INTERPRETERS {
            if interp == 0 {
                out.truncate(used);
                return Ok(());
            }
            used = self.threads(interp, out, used)?;
            interp = self.snapped_u64(interp, self.off.interp_next)?;
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
        let mut tstate = self.snapped_u64(interp, o.threads_head)?;
        let mut head = vec![0u8; span.bytes()];
        for _ in 0..MAX_THREADS {
            if tstate == 0 {
                return Ok(used);
            }
            self.thread_span(tstate, &mut head)?;
            let back = span.u64_at(&head, o.thread_interp);
            if back != interp {
                return Err(Error::Layout(format!(
                    "thread state {tstate:#x} points to interpreter {back:#x}, not {interp:#x}"
                )));
            }
            let (ident, native, main) = self.identity(&head);
            if self.unstarted(ident, native) {
                tstate = span.u64_at(&head, o.thread_next);
                continue;
            }
            if out.len() == used {
                out.push(ThreadSample::default());
            }
            let sample = &mut out[used];
            used += 1;
            sample.tstate = tstate;
            (sample.thread_id, sample.native_thread_id, sample.main) = (ident, native, main);
            let mut frames = std::mem::take(&mut sample.frames);
            self.adopted = false;
            let mut walked = self.walk(tstate, &head, &mut frames);
            let mut read_again = false;
            for _ in 0..self.rereads {
                if walked.is_ok() {
                    break;
                }
                read_again = true;
                // Read anew: from what the torn walk's check read, else from the target in one
                // call; never from the bytes the torn walk was read from.
                if !std::mem::take(&mut self.adopted) {
                    self.snap.refresh(self.pid);
                }
                walked = self
                    .thread_span(tstate, &mut head)
                    .and_then(|()| self.walk(tstate, &head, &mut frames));
            }
            self.snap.restore();
            // A read again reads the thread state anew: its thread may have started since the
            // first (3.10 makes a thread's state with its creator's ident; 3.11 with its OS id,
            // and a new thread can have an ended one's ident), and the frames read are that
            // thread's (CI, 3.10 and 3.11: a worker's function under MainThread).
            let now = read_again.then(|| self.identity(&head));
            let sample = &mut out[used - 1];
            // Its thread ended and the memory holds a new one's state, not started yet.
            if now.is_some_and(|(ident, native, _)| self.unstarted(ident, native)) {
                sample.frames = frames;
                used -= 1;
                tstate = span.u64_at(&head, o.thread_next);
                continue;
            }
            if let Some((ident, native, main)) = now {
                (sample.thread_id, sample.native_thread_id, sample.main) = (ident, native, main);
            }
            sample.frames = frames;
            sample.read_again = read_again;
            if self.keep_addresses {
                sample.addresses.clear();
            }
            match walked {
                Ok(truncated) => {
                    sample.truncated = truncated;
                    sample.torn = false;
                    if self.keep_addresses {
                        // The walk's Python frames, less those that returned under it.
                        let python = self.chain.iter().filter(|l| l.shown());
                        let returned = python.clone().count().saturating_sub(sample.frames.len());
                        let kept = python.skip(returned).map(|l| (l.frame, l.code));
                        sample.addresses.extend(kept);
                    }
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

    /// Whether a thread state with these ids is one its maker made for a thread that has not
    /// run yet (the thread sets its ids when it starts): no thread yet, which would be counted
    /// under ids 0.
    fn unstarted(&self, ident: u64, native: u64) -> bool {
        ident == 0 || (self.off.native_thread_id.is_some() && native == 0)
    }

    /// The ids of the thread whose thread state's span is `head`: `threading`'s ident, the OS
    /// id (0 where not known), and whether it is the main thread.
    fn identity(&mut self, head: &[u8]) -> (u64, u64, bool) {
        let (o, span) = (self.off, self.spans.thread);
        let ident = span.u64_at(head, o.thread_id);
        let native = match (o.native_thread_id, self.tids.as_mut()) {
            (Some(native), _) => span.u64_at(head, native),
            (None, Some(tids)) => tids.tid_of(ident).unwrap_or(0),
            (None, None) => 0,
        };
        let main = match o.runtime_main_thread {
            Some(_) => ident != 0 && ident == self.main_ident,
            None => i32::try_from(native) == Ok(self.pid),
        };
        (ident, native, main)
    }

    /// The frames of thread state `tstate`, whose span is `head`, into `frames`, checked to be
    /// a stack the thread had: whether it was cut at `MAX_FRAMES`.
    fn walk(&mut self, tstate: u64, head: &[u8], frames: &mut Vec<Frame>) -> Result<bool, Error> {
        let innermost = self.current_frame(head)?;
        let truncated = self.frames(innermost, frames)?;
        let returned = self.check_chain(tstate, head)?;
        frames.drain(..returned.min(frames.len()));
        Ok(truncated)
    }

    /// The innermost frame of the thread state whose span is `head`.
    fn current_frame(&mut self, head: &[u8]) -> Result<u64, Error> {
        let (o, span) = (self.off, self.spans.thread);
        self.outer_cframe = 0;
        Ok(match o.thread_cframe {
            Some(cframe) => match span.u64_at(head, cframe) {
                0 => 0,
                cframe => {
                    let words = cframe_words(&o);
                    let mut raw = [0u8; 64];
                    let raw = raw.get_mut(..words.bytes()).ok_or_else(|| {
                        Error::Layout(format!("a cframe span of {} bytes", words.bytes()))
                    })?;
                    let (pid, addr) = (self.pid, at(cframe, words.lo)?);
                    self.snap
                        .read(addr, raw, |out| memory::read(pid, addr, out))?;
                    if let Some(previous) = o.cframe_previous {
                        self.outer_cframe = words.u64_at(raw, previous);
                    }
                    words.u64_at(raw, o.current_frame)
                }
            },
            None => span.u64_at(head, o.current_frame),
        })
    }

    /// The frames of the thread whose innermost frame is at `frame`, innermost first, into
    /// `frames`; whether the stack was deeper than `MAX_FRAMES`.
    fn frames(&mut self, mut frame: u64, frames: &mut Vec<Frame>) -> Result<bool, Error> {
        let o = self.off;
        let span = self.spans.frame;
        frames.clear();
        self.pending.clear();
        self.chain.clear();
        // Pages last one walk: a page kept from another thread's walk may predate this thread's
        // newest frames (3.10's frame objects of all threads share heap pages), and a read again
        // must see the target anew.
        self.pages.clear();
        let mut raw = [0u8; 256];
        let raw = raw
            .get_mut(..span.bytes())
            .ok_or_else(|| Error::Layout(format!("a frame span of {} bytes", span.bytes())))?;
        let mut truncated = true;
        // 3.10: finished frames read before any running one were returned from during the read
        // and are skipped (the stack as it was a moment later); one after a running one is torn.
        let (mut skipped, mut running) = (false, false);
        // Whether the last frame read runs a generator or coroutine.
        let mut generator = false;
        // Brent's cycle finding: a frame met again at `lap` steps from the one marked is a
        // cycle (links read while frames were relinked), found within a few laps of it rather
        // than at `MAX_FRAMES`.
        let (mut marked, mut lap, mut steps) = (frame, 1usize, 0usize);
        for _ in 0..MAX_FRAMES {
            if frame == 0 {
                self.ended(generator)?;
                truncated = false;
                break;
            }
            let (pid, addr, pages) = (self.pid, at(frame, span.lo)?, &mut self.pages);
            self.snap
                .read(addr, raw, |out| pages.read(pid, addr, out))?;
            let seen = self.seen(raw)?;
            generator = self.runs_generator(raw);
            if running || !matches!(seen, Seen::Finished) {
                let placing = self.facts.frame_placing;
                let on_data_stack = match (placing, o.frame_owner) {
                    (Some(p), Some(owner)) => span.u8_at(raw, owner) == p.owned_by_thread,
                    _ => false,
                };
                let entry = placing
                    .and_then(|p| p.frame_is_entry)
                    .is_some_and(|at| span.u8_at(raw, at) != 0);
                self.chain.push(Link {
                    frame,
                    previous: span.u64_at(raw, o.frame_previous),
                    code: span.u64_at(raw, o.frame_executable),
                    python: matches!(seen, Seen::Python(..)),
                    on_data_stack,
                    internal: false,
                    entry,
                });
            }
            match seen {
                Seen::Finished if running => {
                    return Err(Error::Layout(format!(
                        "frame {frame:#x} finished while read"
                    )))
                }
                Seen::Finished => skipped = true,
                Seen::Shim => running = true,
                // A frame that has not run its first instruction calls nothing: read under a
                // callee, it is a new call in the memory of one that returned (`mid_a` just
                // called, `leaf_b` still in the frame above it), not a stack the thread had.
                Seen::Python(_, None) if !self.pending.is_empty() => {
                    return Err(Error::Layout(format!(
                        "frame {frame:#x} under a callee before its first instruction"
                    )))
                }
                Seen::Python(code, unit) => {
                    running = true;
                    self.pending.push((code, unit));
                }
            }
            let previous = span.u64_at(raw, o.frame_previous);
            // A frame its own caller: memory read while it was reused (a generator's frame
            // linked to itself), not a stack.
            if previous == frame {
                return Err(Error::Layout(format!("frame {frame:#x} links to itself")));
            }
            frame = previous;
            steps += 1;
            if frame == marked {
                return Err(Error::Layout("a cycle in the frame chain".into()));
            }
            if steps == lap {
                (marked, lap, steps) = (frame, lap * 2, 0);
            }
        }
        if skipped && !running {
            return Err(Error::Layout("every frame finished while read".into()));
        }
        // A walk that reached the cap went round a cycle or down a stack that deep; no frame
        // is twice in a stack (a cycle is links read while frames were relinked).
        if truncated {
            let mut addresses: Vec<u64> = self.chain.iter().map(|l| l.frame).collect();
            addresses.sort_unstable();
            if addresses.windows(2).any(|w| w[0] == w[1]) {
                return Err(Error::Layout("a cycle in the frame chain".into()));
            }
        }
        self.check_codes()?;
        if !self.internal.is_empty() {
            let tag = self.facts.executable_tag_bits;
            for l in self.chain.iter_mut().filter(|l| l.python) {
                let function = self.codes.get(&(l.code & !tag)).map(|c| c.function);
                l.internal = function.is_some_and(|f| self.internal.contains(&f));
            }
        }
        for i in 0..self.pending.len() {
            let (code, unit) = self.pending[i];
            let frame = self.frame_of(code, unit)?;
            if !self.internal.contains(&frame.function) {
                frames.push(frame);
            }
        }
        Ok(truncated)
    }

    /// Fails unless the chain walked, which ended at a frame without a caller, ends where a
    /// thread's stack does; `generator`: its last frame runs a generator or coroutine.
    fn ended(&self, generator: bool) -> Result<(), Error> {
        if generator {
            return Err(Error::Layout(
                "a generator's caller unlinked while read (it yielded)".into(),
            ));
        }
        // A thread's first frame runs the rest of its stack: one that has not started is a
        // frame being made (3.10: a generator's frame before its `f_gen` is set) in the memory
        // the walk followed, not the thread's.
        if self.pending.last().is_some_and(|&(_, unit)| unit.is_none()) {
            return Err(Error::Layout(
                "the outermost frame has not started: read while it was made".into(),
            ));
        }
        // CI, 3.13: a generator's frame alone, read as `RETURN_GENERATOR` copied it (owned by
        // the thread, `previous` cleared, at its second instruction), then checked unchanged.
        // Where there are shims (3.12+), an entry frame ends every chain a thread has.
        if !self.facts.shim_owners.is_empty() && self.chain.last().is_some_and(|l| l.python) {
            return Err(Error::Layout(
                "the outermost frame is a Python frame, not an entry frame: read while made".into(),
            ));
        }
        Ok(())
    }

    /// Whether the frame whose span is `raw` runs a generator or coroutine.
    fn runs_generator(&self, raw: &[u8]) -> bool {
        let (o, span) = (&self.off, self.spans.frame);
        match (
            o.frame_gen,
            o.frame_owner,
            self.facts.frame_owned_by_generator,
        ) {
            (Some(gen), _, _) => span.u64_at(raw, gen) != 0,
            (None, Some(owner), Some(by_generator)) => span.u8_at(raw, owner) == by_generator,
            _ => false,
        }
    }

    /// What the frame whose span is `raw` is: the one place where the frame kinds differ.
    fn seen(&self, raw: &[u8]) -> Result<Seen, Error> {
        let (o, span) = (&self.off, self.spans.frame);
        let byte = |offset: Option<u64>| offset.map(|offset| span.u8_at(raw, offset));
        if byte(o.frame_state).is_some_and(|s| self.facts.frame_finished.contains(&(s as i8))) {
            return Ok(Seen::Finished);
        }
        if byte(o.frame_owner).is_some_and(|b| self.facts.shim_owners.contains(&b)) {
            return Ok(Seen::Shim);
        }
        // 3.14+: a `_PyStackRef`, whose low bits are its tag.
        let executable = span.u64_at(raw, o.frame_executable);
        let code = executable & !self.facts.executable_tag_bits;
        // 3.14+ clear a returned frame's code to `PyStackRef_NULL` (a tag alone): a walk that
        // starts at a frame that returned under it goes on to its caller, as 3.10's does.
        if code == 0 && executable != 0 && self.facts.returned_code_cleared {
            return Ok(Seen::Finished);
        }
        // No code: memory no call has used yet. Torn, told without a read of a code object at
        // address 0.
        if code == 0 {
            return Err(Error::Layout(
                "a frame without code: memory no call has used, read while the stack changed"
                    .into(),
            ));
        }
        let unit = match (self.facts.frame_kind, o.code_adaptive) {
            // `f_lasti`: the code unit last started, -1 before the first.
            (FrameKind::Object310, _) => u64::try_from(span.i32_at(raw, o.frame_instr_ptr)).ok(),
            // A pointer into `co_code_adaptive`, before it until the first instruction.
            (FrameKind::Interpreter311, Some(adaptive)) => span
                .u64_at(raw, o.frame_instr_ptr)
                .checked_sub(at(code, adaptive)?)
                .map(|bytes| bytes / self.facts.code_unit),
            (FrameKind::Interpreter311, None) => {
                return Err(Error::Layout("no co_code_adaptive in the layout".into()))
            }
        };
        Ok(Seen::Python(code, unit))
    }

    /// Checks the headers of the pending frames' code objects: those the sample's snapshot
    /// holds from it, the rest read in one call; reads anew each code object that is not cached
    /// or whose header changed.
    fn check_codes(&mut self) -> Result<(), Error> {
        let span = self.spans.code;
        self.addrs.clear();
        for &(code, _) in &self.pending {
            // Checked already in this sample, microseconds ago: no free and reuse since.
            let checked = self
                .codes
                .get(&code)
                .is_some_and(|c| c.checked == self.reads);
            if !checked && !self.addrs.contains(&code) {
                self.addrs.push(code);
            }
        }
        let mut raw = [0u8; 256];
        let raw = raw
            .get_mut(..span.bytes())
            .ok_or_else(|| Error::Layout(format!("a code span of {} bytes", span.bytes())))?;
        self.starts.clear();
        for i in 0..self.addrs.len() {
            let code = self.addrs[i];
            let start = at(code, span.lo)?;
            if self.snap.held_header(start, raw) {
                self.check_code(code, raw)?;
            } else {
                self.starts.push(start);
            }
        }
        if self.starts.is_empty() {
            return Ok(());
        }
        let mut buf = std::mem::take(&mut self.buf);
        let whole = memory::read_many(self.pid, &self.starts, span.bytes(), &mut buf);
        let result = (|| {
            let whole = whole?;
            for i in 0..self.starts.len() {
                let start = self.starts[i];
                let read_now;
                let header = match buf.get(i * span.bytes()..(i + 1) * span.bytes()) {
                    Some(h) if i < whole => h,
                    _ => {
                        let len = span.bytes() as u64;
                        read_now = remote::read_bytes(self.pid, start, len, 4096)?;
                        &read_now[..]
                    }
                };
                self.snap.note_header(start, span.bytes());
                self.check_code(start - span.lo, header)?;
            }
            Ok(())
        })();
        self.buf = buf;
        result
    }

    /// Caches the code object at `code` anew unless the one cached there has header `header`.
    fn check_code(&mut self, code: u64, header: &[u8]) -> Result<(), Error> {
        let fresh = self.codes.get(&code).is_some_and(|c| *c.header == *header);
        if !fresh {
            self.cache_code(code, header.into())?;
        }
        if let Some(c) = self.codes.get_mut(&code) {
            c.checked = self.reads;
        }
        Ok(())
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
        let frame_bytes = match self.facts.frame_placing {
            Some(p) => p
                .frame_size
                .bytes(|field| remote::read_u32(self.pid, at(code, field)?))?,
            None => 0,
        };
        if self.codes.len() >= MAX_CODES {
            self.codes.clear();
        }
        let (function, _) = self.functions.insert_full(function);
        // The interpreter's own code has no line (a flag misread in torn memory would hide a
        // function of the program for the rest of the run otherwise).
        if let (Some((flags, flag)), 0) = (self.facts.internal_code, first_line) {
            let internal = remote::read_u32(self.pid, at(code, flags)?)? & flag != 0;
            if internal && !self.internal.contains(&(function as u32)) {
                self.internal.push(function as u32);
            }
        }
        self.codes.insert(
            code,
            Code {
                header,
                function: function as u32,
                first_line,
                linetable,
                lines: HashMap::default(),
                frame_bytes,
                checked: 0,
            },
        );
        Ok(())
    }

    /// The frame running code object `code` (cached) at code unit `unit` (`None`: not started).
    fn frame_of(&mut self, code: u64, unit: Option<u64>) -> Result<Frame, Error> {
        let format = self.facts.line_table;
        let c = self
            .codes
            .get_mut(&code)
            .ok_or_else(|| Error::Layout(format!("code object {code:#x} not cached")))?;
        let line = match unit {
            // Not started: the `def` line, as `PyCode_Addr2Line` says of a negative offset.
            None => i32::try_from(c.first_line).unwrap_or(0),
            Some(unit) => match c.lines.get(&unit) {
                Some(&line) => line,
                None => {
                    let line = linetable::line_of(format, &c.linetable, c.first_line, unit)
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
    /// As `ThreadSample::native_thread_id`: 0 where not known.
    pub native_thread_id: u64,
    pub thread_id: u64,
    pub frames: Vec<NamedFrame>,
}

/// Every thread's Python call stack in the process of `rt`, over all its interpreters: one read,
/// where any torn thread fails the whole read.
pub fn thread_stacks(rt: &Runtime) -> Result<Vec<ThreadStack>, Error> {
    let mut reader = StackReader::new(rt)?;
    let mut samples = Vec::new();
    reader.read_whole(&mut samples)?;
    samples
        .into_iter()
        .map(|t| {
            if t.torn || t.truncated {
                return Err(Error::Layout(format!(
                    "thread {} changed while it was read",
                    t.thread_id
                )));
            }
            let frames = t.frames.iter().map(|f| reader.named(f)).collect();
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
    use super::super::versions;
    use super::fake310::{put, Fake310};
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

    fn reader_310() -> StackReader {
        let pid = crate::sampler::own_pid();
        StackReader::with(pid, 0, &versions::STACK_FACTS_310, versions::LAYOUT_310)
    }

    #[test]
    fn a_callee_must_lie_where_its_callers_frame_ends_or_start_a_chunk() {
        let pid = crate::sampler::own_pid();
        let mut reader =
            StackReader::with(pid, 0, &versions::STACK_FACTS_313, versions::LAYOUT_312);
        // Two code objects: frames of 16 and of 10 words.
        for (code, words) in [(0x5000, 16), (0x6000, 10)] {
            let c = Code {
                header: Box::new([]),
                function: 0,
                first_line: 1,
                linetable: Vec::new(),
                lines: HashMap::default(),
                frame_bytes: words * 8,
                checked: 0,
            };
            reader.codes.insert(code, c);
        }
        let link = |frame, code, python, on_data_stack| Link {
            frame,
            previous: 0,
            code,
            python,
            on_data_stack,
            internal: false,
            entry: false,
        };
        let base = 0x7f00_0000_1000u64;
        let placed = |reader: &mut StackReader, chain: Vec<Link>| {
            reader.chain = chain;
            reader.placed(0)
        };
        // Innermost first: a callee of 0x6000 right after it, called by 0x5000 right after
        // that, through a shim of C code between the two (not on the data stack).
        let good = || {
            vec![
                link(base + 128 + 80, 0x7000, true, true),
                link(base + 128, 0x6000, true, true),
                link(0x7ffc_0000, 0, false, false),
                link(base, 0x5000, true, true),
            ]
        };
        assert!(placed(&mut reader, good()));
        // The slot's next use: the caller read is 0x5000's size, not 0x6000's.
        let mut torn = good();
        torn[1].code = 0x5000;
        assert!(!placed(&mut reader, torn));
        // A callee at the start of a new chunk, and a generator's frame (off the data stack).
        // Further on than its caller's end: from C (a finalizer run while a frame above the
        // caller was cleared), but not in a direct call.
        let mut from_c = good();
        from_c[1].frame += 64;
        from_c[0].frame += 64;
        assert!(placed(&mut reader, from_c));
        let mut direct = good();
        direct[0].frame += 64;
        assert!(!placed(&mut reader, direct));
        // 3.11 has no shims: a frame called from C says so itself.
        let mut entry = good();
        entry[0].frame += 64;
        entry[0].entry = true;
        assert!(placed(&mut reader, entry));
        let mut chunk = good();
        chunk[0].frame = 0x7f00_0004_0000 + 24;
        assert!(placed(&mut reader, chunk));
        let mut generator = good();
        generator[1].on_data_stack = false;
        generator[1].frame = 0x5555_0000;
        assert!(placed(&mut reader, generator));
        // A code object not cached (its size unknown) is not judged; 3.14's tag bits are not
        // part of the address.
        let mut unknown = good();
        unknown[1].code = 0x9000;
        unknown[0].frame += 8;
        assert!(placed(&mut reader, unknown));
        reader.facts = &versions::STACK_FACTS_314;
        let mut tagged = good();
        tagged[1].code |= 1;
        assert!(placed(&mut reader, tagged));
        // (Tagged, a torn pair is still told: the size is looked up without the tag.)
        let mut tagged_torn = good();
        tagged_torn[1].code = 0x5000 | 1;
        assert!(!placed(&mut reader, tagged_torn));
    }

    #[test]
    fn a_chain_ends_where_a_threads_stack_does() {
        let pid = crate::sampler::own_pid();
        let frame = |python| Link {
            frame: 0x1000,
            previous: 0,
            code: 0x5000,
            python,
            on_data_stack: python,
            internal: false,
            entry: false,
        };
        let ended = |facts: &'static StackFacts, chain: Vec<Link>, unit: Option<u64>| {
            let mut reader = StackReader::with(pid, 0, facts, versions::LAYOUT_312);
            reader.chain = chain;
            reader.pending.push((0x5000, unit));
            (reader.ended(false).is_ok(), reader.ended(true).is_ok())
        };
        // 3.12+: under the Python frames, the interpreter's entry frame; a generator's frame
        // at the end yielded while read.
        let whole = || vec![frame(true), frame(false)];
        assert_eq!(
            ended(&versions::STACK_FACTS_313, whole(), Some(3)),
            (true, false)
        );
        // A Python frame at the end: one being made (a generator's copy, 3.13's CI failure).
        let cut = || vec![frame(false), frame(true)];
        assert_eq!(
            ended(&versions::STACK_FACTS_313, cut(), Some(3)),
            (false, false)
        );
        assert_eq!(
            ended(&versions::STACK_FACTS_315, cut(), Some(3)),
            (false, false)
        );
        // 3.11 has no entry frames: a Python frame ends every stack, once it has started.
        assert_eq!(
            ended(&versions::STACK_FACTS_311, cut(), Some(3)),
            (true, false)
        );
        assert_eq!(
            ended(&versions::STACK_FACTS_311, cut(), None),
            (false, false)
        );
    }

    #[test]
    fn a_cframe_s_two_words_are_one_read_where_they_lie_side_by_side() {
        for o in [versions::LAYOUT_311, versions::LAYOUT_312] {
            let words = cframe_words(&o);
            assert_eq!((words.lo, words.bytes()), (o.current_frame, 16));
        }
        assert_eq!(cframe_words(&versions::LAYOUT_310).bytes(), 8);
    }

    #[test]
    fn a_frame_without_code_returned_while_read() {
        // 3.14+ clear a returned frame's code to `PyStackRef_NULL` (the tag bits alone);
        // memory no call has used is zeros.
        let pid = crate::sampler::own_pid();
        let reader = StackReader::with(pid, 0, &versions::STACK_FACTS_314, versions::LAYOUT_312);
        let (o, span) = (reader.off, reader.spans.frame);
        let mut raw = vec![0u8; span.bytes()];
        let mut seen = |code: u64| {
            put(&mut raw, o.frame_executable - span.lo, &code.to_ne_bytes());
            put(
                &mut raw,
                o.frame_instr_ptr - span.lo,
                &(code + 0x100).to_ne_bytes(),
            );
            match reader.seen(&raw) {
                Err(Error::Layout(_)) => "torn",
                Ok(Seen::Finished) => "returned",
                Ok(Seen::Python(c, _)) if c == code & !3 => "python",
                _ => "other",
            }
        };
        assert_eq!(seen(1), "returned");
        assert_eq!(seen(0), "torn");
        assert_eq!(seen(0x5001), "python");
    }

    #[test]
    fn a_3_10_chain_of_frame_objects_gives_lasti_lines() {
        let fake = Fake310::new();
        let mut reader = reader_310();
        let mut frames = Vec::new();
        assert_eq!(reader.frames(fake.frame(0), &mut frames).ok(), Some(false));
        let line = |line| Frame { function: 0, line };
        // Not started: the first line; unit 2: line 12; unit 0: line 11.
        assert_eq!(frames, [line(10), line(12), line(11)]);
        let f = reader
            .functions
            .get_index(0)
            .map(|f| (f.filename.as_str(), f.name.as_str()));
        assert_eq!(f, Some(("spam.py", "f")));
    }

    #[test]
    fn finished_3_10_frames_are_skipped_innermost_and_torn_further_out() {
        let mut fake = Fake310::new();
        let mut reader = reader_310();
        let mut frames = Vec::new();
        // The innermost returned while read: the stack from its caller on.
        fake.finish(0);
        assert_eq!(reader.frames(fake.frame(0), &mut frames).ok(), Some(false));
        assert_eq!(frames.iter().map(|f| f.line).collect::<Vec<_>>(), [12, 11]);
        // An outer frame returned after a running one was read: its callees are gone too.
        fake.finish(2);
        assert!(matches!(
            reader.frames(fake.frame(0), &mut frames),
            Err(Error::Layout(_))
        ));
        // Every frame finished (a free list, say): nothing to report.
        fake.finish(1);
        assert!(matches!(
            reader.frames(fake.frame(0), &mut frames),
            Err(Error::Layout(_))
        ));
    }

    #[test]
    fn a_chain_that_goes_round_a_cycle_is_a_torn_read() {
        let mut fake = Fake310::new();
        let mut reader = reader_310();
        let mut frames = Vec::new();
        // Frame 2 linked back to frame 1 (links read while frames were relinked): the walk
        // goes round 1 -> 2 -> 1 and meets a frame again within a few laps, not at the cap.
        let back = fake.frame(1);
        let at = Fake310::FRAMES[2];
        put(
            &mut fake.objects[at],
            versions::LAYOUT_310.frame_previous,
            &back.to_ne_bytes(),
        );
        assert!(matches!(
            reader.frames(fake.frame(0), &mut frames),
            Err(Error::Layout(why)) if why.contains("cycle")
        ));
        assert!(
            reader.chain.len() < 8,
            "{} frames walked",
            reader.chain.len()
        );
    }

    #[test]
    fn a_chain_that_changed_since_the_last_read_is_followed_as_it_is_now() {
        let mut fake = Fake310::new();
        let mut reader = reader_310();
        let mut frames = Vec::new();
        assert_eq!(reader.frames(fake.frame(0), &mut frames).ok(), Some(false));
        assert_eq!(frames.len(), 3);
        // Frame 0 now returns straight to frame 2: the chain the last read saw no longer holds.
        let back = fake.frame(2).to_ne_bytes();
        let o = versions::LAYOUT_310;
        put(
            &mut fake.objects[Fake310::FRAMES[0]],
            o.frame_previous,
            &back,
        );
        assert_eq!(reader.frames(fake.frame(0), &mut frames).ok(), Some(false));
        assert_eq!(frames.iter().map(|f| f.line).collect::<Vec<_>>(), [10, 11]);
        // And back again, through frame 1.
        let back = fake.frame(1).to_ne_bytes();
        put(
            &mut fake.objects[Fake310::FRAMES[0]],
            o.frame_previous,
            &back,
        );
        assert_eq!(reader.frames(fake.frame(0), &mut frames).ok(), Some(false));
        assert_eq!(
            frames.iter().map(|f| f.line).collect::<Vec<_>>(),
            [10, 12, 11]
        );
    }

    /// A 3.10 reader of `fake` given a runtime, the first of its two thread states (in frame
    /// 0) and that thread state's span as read.
    fn first_thread(fake: &mut Fake310) -> (StackReader, u64, Vec<u8>) {
        let runtime = fake.runtime([7, 8], 8);
        let tstate = fake.objects[fake.objects.len() - 2].as_ptr() as u64;
        let mut reader = reader_310();
        reader.runtime = runtime;
        let span = reader.spans.thread;
        let mut head = vec![0u8; span.bytes()];
        assert!(memory::read(reader.pid, tstate + span.lo, &mut head).is_ok());
        (reader, tstate, head)
    }

    /// `first_thread`, walked once: its three frames read.
    fn walked_first_thread(fake: &mut Fake310) -> (StackReader, u64, Vec<u8>) {
        let (mut reader, tstate, head) = first_thread(fake);
        let mut frames = Vec::new();
        assert_eq!(reader.walk(tstate, &head, &mut frames).ok(), Some(false));
        assert_eq!(frames.len(), 3);
        (reader, tstate, head)
    }

    #[test]
    fn a_chain_that_moved_after_its_walk_is_not_taken() {
        let mut fake = Fake310::new();
        let (mut reader, tstate, head) = walked_first_thread(&mut fake);
        let o = versions::LAYOUT_310;
        let frame1_at = fake.frame(1);
        let first = fake.objects.len() - 2;
        let mut change = |i: usize, offset: u64, value: u64| {
            let was = fake.objects[i][offset as usize..offset as usize + 8].to_vec();
            put(&mut fake.objects[i], offset, &value.to_ne_bytes());
            let check = reader.check_chain(tstate, &head).ok();
            put(&mut fake.objects[i], offset, &was);
            check
        };
        let frame1 = Fake310::FRAMES[1];
        // A generator that yielded: its `previous` unlinked (the stack would end there).
        assert_eq!(change(frame1, o.frame_previous, 0), None);
        // A frame returned and its memory taken by a call of another function.
        assert_eq!(change(frame1, o.frame_executable, 0x1000), None);
        // The thread is in a frame the walk did not read (a call made since).
        assert_eq!(change(first, o.current_frame, 0x1000), None);
        // The thread returned from its innermost frame: the stack from its caller on, which
        // is unchanged.
        assert_eq!(change(first, o.current_frame, frame1_at), Some(1));
        // ...unless that caller's own link moved too.
        let frame2 = Fake310::FRAMES[2];
        let both = |fake: &mut Fake310, reader: &mut StackReader| {
            put(
                &mut fake.objects[first],
                o.current_frame,
                &frame1_at.to_ne_bytes(),
            );
            put(
                &mut fake.objects[frame2],
                o.frame_executable,
                &0x1000u64.to_ne_bytes(),
            );
            reader.check_chain(tstate, &head).ok()
        };
        // What changes nothing that links the stack (a frame's line) keeps it.
        assert_eq!(change(frame1, o.frame_instr_ptr, 0), Some(0));
        assert_eq!(reader.check_chain(tstate, &head).ok(), Some(0));
        assert_eq!(both(&mut fake, &mut reader), None);
    }

    #[test]
    fn a_thread_whose_ident_changed_under_its_walk_is_torn() {
        // 3.10: a thread state made with its creator's ident, which its thread set anew as it
        // started: the frames read are the started thread's, the span read before is not.
        let mut fake = Fake310::new();
        let (mut reader, tstate, head) = walked_first_thread(&mut fake);
        let first = fake.objects.len() - 2;
        let o = versions::LAYOUT_310;
        put(&mut fake.objects[first], o.thread_id, &9u64.to_ne_bytes());
        assert!(reader.check_chain(tstate, &head).is_err());
        // Read again from what that check read: the thread as it is now, ident and all.
        let span = reader.spans.thread;
        let mut now = vec![0u8; span.bytes()];
        assert!(memory::read(reader.pid, tstate + span.lo, &mut now).is_ok());
        assert_eq!(span.u64_at(&now, o.thread_id), 9);
        assert_eq!(reader.check_chain(tstate, &now).ok(), Some(0));
    }

    #[test]
    fn a_thread_without_frames_is_so_at_both_looks() {
        // 3.10: the second thread state runs no Python code.
        let mut fake = Fake310::new();
        let (mut reader, _, _) = first_thread(&mut fake);
        let second = fake.objects.len() - 1;
        let tstate = fake.objects[second].as_ptr() as u64;
        let span = reader.spans.thread;
        let mut head = vec![0u8; span.bytes()];
        assert!(memory::read(reader.pid, tstate + span.lo, &mut head).is_ok());
        let mut frames = Vec::new();
        assert_eq!(reader.walk(tstate, &head, &mut frames).ok(), Some(false));
        assert!(frames.is_empty());
        // A frame called since the walk read none: torn, not an empty stack.
        let o = versions::LAYOUT_310;
        let called = fake.frame(2);
        put(
            &mut fake.objects[second],
            o.current_frame,
            &called.to_ne_bytes(),
        );
        assert!(reader.check_chain(tstate, &head).is_err());

        // 3.11-3.12: through the thread state's cframe, on the C stack. A cframe read after
        // its call returned reads 0 while the thread state names another.
        let o = versions::LAYOUT_312;
        let mut reader = StackReader::with(reader.pid, 0, &versions::STACK_FACTS_312, o);
        let (field, word) = (o.thread_cframe.unwrap_or(0), o.current_frame);
        let mut tstate = vec![0u8; 512].into_boxed_slice();
        let returned = vec![0u8; 64].into_boxed_slice();
        let mut running = vec![0u8; 64].into_boxed_slice();
        put(&mut running, word, &0x1000u64.to_ne_bytes());
        let at = |b: &[u8]| b.as_ptr() as u64;
        put(&mut tstate, field, &at(&returned).to_ne_bytes());
        let span = reader.spans.thread;
        let mut head = vec![0u8; span.bytes()];
        assert!(memory::read(reader.pid, at(&tstate) + span.lo, &mut head).is_ok());
        assert_eq!(
            reader.walk(at(&tstate), &head, &mut frames).ok(),
            Some(false)
        );
        assert!(frames.is_empty());
        put(&mut tstate, field, &at(&running).to_ne_bytes());
        assert!(reader.check_chain(at(&tstate), &head).is_err());
        // While it names that cframe, and its word is 0 at both looks: no Python code.
        put(&mut tstate, field, &at(&returned).to_ne_bytes());
        assert_eq!(reader.check_chain(at(&tstate), &head).ok(), Some(0));
    }

    #[test]
    fn a_check_of_more_ranges_than_one_call_reads_is_torn_and_adopts_nothing() {
        let (mut reader, tstate, head) = first_thread(&mut Fake310::new());
        // 1,100 frames far apart (a range each): one call reads the first 1,024 ranges, and
        // not the second look after them.
        let far = vec![0u8; 1100 * 1024];
        reader.chain = (0..1100u64)
            .map(|i| Link {
                frame: far.as_ptr() as u64 + i * 1024,
                previous: 0,
                code: 0,
                python: true,
                on_data_stack: false,
                internal: false,
                entry: false,
            })
            .collect();
        assert!(reader.check_chain(tstate, &head).is_err());
        assert!(!reader.adopted);
    }

    #[test]
    fn a_caller_that_has_not_started_is_a_torn_read() {
        let mut fake = Fake310::new();
        let mut reader = reader_310();
        let mut frames = Vec::new();
        assert!(reader.frames(fake.frame(0), &mut frames).is_ok());
        // Frame 1 before its first instruction, under frame 0: a new call read in the memory
        // of one that returned.
        let lasti = versions::LAYOUT_310.frame_instr_ptr;
        put(
            &mut fake.objects[Fake310::FRAMES[1]],
            lasti,
            &(-1i32).to_ne_bytes(),
        );
        assert!(matches!(
            reader.frames(fake.frame(0), &mut frames),
            Err(Error::Layout(_))
        ));
    }

    #[test]
    fn an_outermost_frame_that_has_not_started_is_a_torn_read() {
        let mut fake = Fake310::new();
        let mut reader = reader_310();
        let mut frames = Vec::new();
        assert!(reader.frames(fake.frame(2), &mut frames).is_ok());
        let lasti = versions::LAYOUT_310.frame_instr_ptr;
        put(
            &mut fake.objects[Fake310::FRAMES[2]],
            lasti,
            &(-1i32).to_ne_bytes(),
        );
        assert!(matches!(
            reader.frames(fake.frame(2), &mut frames),
            Err(Error::Layout(_))
        ));
    }

    #[test]
    fn a_chain_that_ends_at_a_generator_is_torn() {
        let mut fake = Fake310::new();
        let mut reader = reader_310();
        let mut frames = Vec::new();
        let gen = versions::LAYOUT_310.frame_gen.unwrap_or(0);
        // A generator in the middle of a chain: its caller is linked while it runs.
        put(
            &mut fake.objects[Fake310::FRAMES[1]],
            gen,
            &8u64.to_ne_bytes(),
        );
        assert_eq!(reader.frames(fake.frame(0), &mut frames).ok(), Some(false));
        // One at the end: it yielded while read, and its caller is missing.
        put(
            &mut fake.objects[Fake310::FRAMES[2]],
            gen,
            &8u64.to_ne_bytes(),
        );
        assert!(matches!(
            reader.frames(fake.frame(0), &mut frames),
            Err(Error::Layout(_))
        ));
    }

    fn seen(out: &[ThreadSample]) -> Vec<(u64, u64, usize, bool, bool)> {
        out.iter()
            .map(|t| {
                let (id, tid, depth) = (t.thread_id, t.native_thread_id, t.frames.len());
                (id, tid, depth, t.main, t.torn)
            })
            .collect()
    }

    /// A 3.10 reader of `fake` given a runtime of two thread states, idents `idents`, the
    /// second the main thread.
    fn reader_of(fake: &mut Fake310, idents: [u64; 2]) -> StackReader {
        let mut reader = reader_310();
        reader.runtime = fake.runtime(idents, idents[1]);
        reader.main_ident = idents[1];
        reader
    }

    #[test]
    fn a_torn_thread_is_read_again_then_marked_and_the_others_kept() {
        let mut fake = Fake310::new();
        let mut reader = reader_of(&mut fake, [7, 8]);
        let mut out = Vec::new();
        assert!(reader.read(&mut out).is_ok());
        assert_eq!(
            seen(&out),
            [(7, 0, 3, false, false), (8, 0, 0, true, false)]
        );
        // Frame 2 finished after frames 0 and 1 were read running, at every read.
        fake.finish(2);
        assert!(reader.read(&mut out).is_ok());
        assert_eq!(seen(&out), [(7, 0, 0, false, true), (8, 0, 0, true, false)]);
    }

    #[test]
    fn a_thread_state_whose_thread_has_not_started_is_no_thread() {
        // Ident 0: made by the thread that starts it, before the new thread set its ids.
        let mut out = Vec::new();
        assert!(reader_of(&mut Fake310::new(), [0, 8])
            .read(&mut out)
            .is_ok());
        assert_eq!(seen(&out), [(8, 0, 0, true, false)]);
    }

    #[test]
    fn on_3_10_os_ids_come_from_glibc_where_they_hold_together_and_else_are_unknown() {
        // Idents that are no thread's: no OS id is read, none is known; the main thread is
        // the runtime's `main_thread`.
        let mut fake = Fake310::new();
        let rt = Fake310::rt(fake.runtime([7, 8], 7));
        let mut reader = StackReader::new(&rt).expect("the fake runtime reads");
        assert!(!reader.os_ids());
        let mut out = Vec::new();
        assert!(reader.read(&mut out).is_ok());
        assert_eq!(
            seen(&out),
            [(7, 0, 3, true, false), (8, 0, 0, false, false)]
        );
        if tids::GLIBC.is_none() {
            return;
        }
        // This test's thread (not the process's main one), and an ident that is no thread's.
        // SAFETY: pthread_self and gettid have no preconditions and cannot fail.
        let (me, tid) = unsafe { (libc::pthread_self() as u64, libc::gettid() as u64) };
        let rt = Fake310::rt(fake.runtime([me, 8], 9));
        let mut reader = StackReader::new(&rt).expect("the fake runtime reads");
        assert!(reader.os_ids());
        assert!(reader.read(&mut out).is_ok());
        assert_eq!(
            seen(&out),
            [(me, tid, 3, false, false), (8, 0, 0, false, false)]
        );
        // Had it been the main thread, its OS id would have been the process id: it is not.
        let rt = Fake310::rt(fake.runtime([me, 8], me));
        assert!(StackReader::new(&rt).is_ok_and(|r| !r.os_ids()));
    }

    #[test]
    fn versions_without_a_reader_are_unsupported_and_named() {
        match thread_stacks(&runtime(Some((3, 9)), None)) {
            Err(Error::Unsupported(why)) => assert!(why.contains("Python 3.9"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            thread_stacks(&runtime(None, None)),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn a_runtime_that_is_not_there_is_an_io_error() {
        let pid = crate::sampler::own_pid();
        let rt = Runtime {
            pid,
            address: 8,
            ..runtime(Some((3, 13)), Some(0x030d00f0))
        };
        assert!(matches!(thread_stacks(&rt), Err(Error::Io(_))));
    }
}

/// The error of a process whose interpreter has no thread.
pub fn not_ready(pid: i32) -> Error {
    Error::NotReady(format!(
        "process {pid}: its interpreter has no thread yet (it is starting, or ending)"
    ))
}

/// A fake 3.10 runtime in this process, for the reader's and the session's tests.
#[cfg(test)]
pub(crate) mod fake310 {
    use super::super::versions;
    use super::Runtime;
    use std::path::PathBuf;

    /// Writes `value`'s bytes into `obj` at `offset`.
    pub fn put(obj: &mut [u8], offset: u64, value: &[u8]) {
        let at = offset as usize;
        obj[at..at + value.len()].copy_from_slice(value);
    }

    /// A 3.10 code object `f` in `spam.py` (first line 10; units 0-1 on line 11, 2-3 on 12)
    /// and three frames running it, each laid out as `LAYOUT_310` says, in this process; the
    /// frames chain 0 -> 1 -> 2, frame 0 not started (a call just made), frame 1 at unit 2, frame 2 at unit 0. Objects are boxed so
    /// their addresses do not move.
    pub struct Fake310 {
        pub objects: Vec<Box<[u8]>>,
    }

    impl Fake310 {
        pub const FRAMES: [usize; 3] = [4, 5, 6];

        pub fn new() -> Fake310 {
            let o = versions::LAYOUT_310;
            let f = versions::STACK_FACTS_310;
            let string = |text: &[u8]| {
                let mut obj = vec![0u8; o.unicode.ascii_size as usize];
                let state = (1 << f.str_facts.kind_shift)
                    | (1 << f.str_facts.compact_bit)
                    | (1 << f.str_facts.ascii_bit);
                put(&mut obj, o.unicode.state, &u32::to_ne_bytes(state));
                put(
                    &mut obj,
                    o.unicode.length,
                    &(text.len() as u64).to_ne_bytes(),
                );
                obj.extend_from_slice(text);
                obj.into_boxed_slice()
            };
            let mut table = vec![0u8; o.bytes_sval as usize];
            put(&mut table, o.bytes_size, &4u64.to_ne_bytes());
            table.extend_from_slice(&[0x04, 0x01, 0x04, 0x01]);
            let mut objects = vec![
                string(b"spam.py"),
                string(b"f"),
                table.into_boxed_slice(),
                vec![0u8; 136].into_boxed_slice(),
            ];
            let addr = |objects: &[Box<[u8]>], i: usize| objects[i].as_ptr() as u64;
            let (filename, name, table) = (addr(&objects, 0), addr(&objects, 1), addr(&objects, 2));
            let code = &mut objects[3];
            put(code, o.code_filename, &filename.to_ne_bytes());
            put(code, o.code_name, &name.to_ne_bytes());
            put(code, o.code_linetable, &table.to_ne_bytes());
            put(code, o.code_firstlineno, &10i32.to_ne_bytes());
            let code = addr(&objects, 3);
            for lasti in [-1i32, 2, 0] {
                let mut frame = vec![0u8; 112];
                put(&mut frame, o.frame_executable, &code.to_ne_bytes());
                put(&mut frame, o.frame_instr_ptr, &lasti.to_ne_bytes());
                objects.push(frame.into_boxed_slice());
            }
            for pair in Self::FRAMES.windows(2) {
                let back = addr(&objects, pair[1]);
                put(&mut objects[pair[0]], o.frame_previous, &back.to_ne_bytes());
            }
            Fake310 { objects }
        }

        pub fn frame(&self, i: usize) -> u64 {
            self.objects[Self::FRAMES[i]].as_ptr() as u64
        }

        /// Marks frame `i` returned (`FRAME_RETURNED`).
        pub fn finish(&mut self, i: usize) {
            let state = versions::LAYOUT_310.frame_state.unwrap_or(0);
            put(&mut self.objects[Self::FRAMES[i]], state, &[1]);
        }

        /// Adds a runtime whose one interpreter has two thread states, idents `idents`: the
        /// first in frame 0, the second with no Python frame; `main` is the runtime's
        /// `main_thread`. The runtime's address.
        pub fn runtime(&mut self, idents: [u64; 2], main: u64) -> u64 {
            let o = versions::LAYOUT_310;
            let base = self.objects.len();
            for size in [128, 64, 192, 192] {
                self.objects.push(vec![0u8; size].into_boxed_slice());
            }
            let [runtime, interp, first, second] =
                [0, 1, 2, 3].map(|i| self.objects[base + i].as_ptr() as u64);
            let frame = self.frame(0);
            let rt = &mut self.objects[base];
            put(rt, o.interpreters_head, &interp.to_ne_bytes());
            put(rt, o.runtime_main_thread.unwrap_or(0), &main.to_ne_bytes());
            put(
                &mut self.objects[base + 1],
                o.threads_head,
                &first.to_ne_bytes(),
            );
            for (i, id, next, frame) in [(2, idents[0], second, frame), (3, idents[1], 0, 0)] {
                let tstate = &mut self.objects[base + i];
                put(tstate, o.thread_next, &next.to_ne_bytes());
                put(tstate, o.thread_interp, &interp.to_ne_bytes());
                put(tstate, o.current_frame, &frame.to_ne_bytes());
                put(tstate, o.thread_id, &id.to_ne_bytes());
            }
            runtime
        }

        /// A 3.10 runtime of this process at `address`, as `find_runtime` would give it.
        pub fn rt(address: u64) -> Runtime {
            Runtime {
                pid: crate::sampler::own_pid(),
                address,
                library: PathBuf::from("libpython3.10.so"),
                version: Some((3, 10)),
                version_hex: None,
            }
        }
    }
}
