//! The layout the stack reader uses for one target: its version's table, or (3.13+) the
//! `_Py_DebugOffsets` the runtime publishes, read from the target and checked to be offsets.

use super::error::Error;
use super::remote;
use super::runtime::Runtime;
use super::versions::{self, debug_offsets_313 as w, StackFacts, StackLayout, UnicodeLayout};

/// An offset in `_Py_DebugOffsets` beyond this is not a field offset: a foreign struct.
const MAX_FIELD_OFFSET: u64 = 1 << 20;

/// `(major, minor)` of the process of `rt`, or why it is not known.
pub fn known_version(rt: &Runtime) -> Result<(u8, u8), Error> {
    rt.version.ok_or_else(|| {
        Error::Unsupported(format!(
            "process {}: the Python version of {} is not known",
            rt.pid,
            rt.library.display()
        ))
    })
}

/// The version facts and the layout of `rt`'s interpreter, or why it cannot be read.
pub fn resolve(rt: &Runtime) -> Result<(&'static StackFacts, StackLayout), Error> {
    let (major, minor) = known_version(rt)?;
    let facts = versions::stack_facts(major, minor).ok_or_else(|| {
        Error::Unsupported(format!(
            "reading the thread stacks of Python {major}.{minor} is not supported yet \
             (process {}; supported: 3.10-3.13)",
            rt.pid
        ))
    })?;
    let layout = match facts.layout {
        Some(layout) => layout,
        None if rt.version_hex.is_some() => from_debug_offsets(rt.pid, rt.address)?,
        None => {
            return Err(Error::Layout(format!(
                "process {}: Python {major}.{minor} without _Py_DebugOffsets",
                rt.pid
            )))
        }
    };
    Ok((facts, layout))
}

/// The first words of 3.13's `_Py_DebugOffsets` (at the start of `_PyRuntime`), read once.
pub struct DebugWords(Vec<u64>);

impl DebugWords {
    /// Reads `count` words of the runtime at `runtime` in process `pid`.
    pub fn read(pid: i32, runtime: u64, count: usize) -> Result<Self, Error> {
        let len = (count * 8) as u64;
        let raw = remote::read_bytes(pid, runtime, len, len)?;
        Ok(DebugWords(
            raw.chunks_exact(8)
                .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ))
    }

    /// Word `i`, a field offset: a larger value means a foreign struct.
    pub fn get(&self, i: usize) -> Result<u64, Error> {
        match self.0.get(i) {
            Some(&v) if v < MAX_FIELD_OFFSET => Ok(v),
            Some(&v) => Err(Error::Layout(format!(
                "_Py_DebugOffsets word {i} is {v:#x}: not a field offset"
            ))),
            None => Err(Error::Layout(format!("_Py_DebugOffsets word {i} not read"))),
        }
    }
}

/// The layout from 3.13's `_Py_DebugOffsets` at the start of `_PyRuntime`.
fn from_debug_offsets(pid: i32, runtime: u64) -> Result<StackLayout, Error> {
    let words = DebugWords::read(pid, runtime, w::WORDS)?;
    let get = |i: usize| words.get(i);
    Ok(StackLayout {
        interpreters_head: get(w::RUNTIME_INTERPRETERS_HEAD)?,
        runtime_main_thread: None,
        interp_next: get(w::INTERP_NEXT)?,
        threads_head: get(w::INTERP_THREADS_HEAD)?,
        thread_next: get(w::THREAD_NEXT)?,
        thread_interp: get(w::THREAD_INTERP)?,
        thread_cframe: None,
        current_frame: get(w::THREAD_CURRENT_FRAME)?,
        thread_id: get(w::THREAD_THREAD_ID)?,
        native_thread_id: Some(get(w::THREAD_NATIVE_THREAD_ID)?),
        frame_previous: get(w::FRAME_PREVIOUS)?,
        frame_executable: get(w::FRAME_EXECUTABLE)?,
        frame_instr_ptr: get(w::FRAME_INSTR_PTR)?,
        frame_owner: Some(get(w::FRAME_OWNER)?),
        frame_gen: None,
        frame_state: None,
        code_filename: get(w::CODE_FILENAME)?,
        code_name: get(w::CODE_NAME)?,
        code_qualname: Some(get(w::CODE_QUALNAME)?),
        code_linetable: get(w::CODE_LINETABLE)?,
        code_firstlineno: get(w::CODE_FIRSTLINENO)?,
        code_adaptive: Some(get(w::CODE_CODE_ADAPTIVE)?),
        bytes_size: get(w::BYTES_OB_SIZE)?,
        bytes_sval: get(w::BYTES_OB_SVAL)?,
        unicode: UnicodeLayout {
            state: get(w::UNICODE_STATE)?,
            length: get(w::UNICODE_LENGTH)?,
            ascii_size: get(w::UNICODE_ASCIIOBJECT_SIZE)?,
        },
    })
}

/// A struct's fields as one span to read at once: `[lo, hi)` covers every listed field and
/// nothing past the last, so one system call reads them all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub lo: u64,
    pub hi: u64,
}

impl Span {
    /// The span of the fields `(offset, size)`.
    pub fn of(fields: &[(u64, u64)]) -> Span {
        let lo = fields.iter().map(|f| f.0).min().unwrap_or(0);
        let hi = fields.iter().map(|f| f.0 + f.1).max().unwrap_or(0);
        Span { lo, hi }
    }

    pub fn bytes(self) -> usize {
        (self.hi - self.lo) as usize
    }

    /// The `u64` at field `offset` in bytes read for this span; 0 when outside it.
    pub fn u64_at(self, buf: &[u8], offset: u64) -> u64 {
        self.bytes_at::<8>(buf, offset)
            .map_or(0, u64::from_ne_bytes)
    }

    pub fn i32_at(self, buf: &[u8], offset: u64) -> i32 {
        self.bytes_at::<4>(buf, offset)
            .map_or(0, i32::from_ne_bytes)
    }

    pub fn u8_at(self, buf: &[u8], offset: u64) -> u8 {
        self.bytes_at::<1>(buf, offset).map_or(0, |b| b[0])
    }

    fn bytes_at<const N: usize>(self, buf: &[u8], offset: u64) -> Option<[u8; N]> {
        let start = usize::try_from(offset.checked_sub(self.lo)?).ok()?;
        buf.get(start..start.checked_add(N)?)?.try_into().ok()
    }
}

/// Every field span the stack reader reads, for one layout. All offsets were checked to be
/// below `MAX_FIELD_OFFSET`, so no span is larger than that.
#[derive(Clone, Copy, Debug)]
pub struct Spans {
    pub thread: Span,
    pub frame: Span,
    /// A frame's `previous` and code object: what links it into a stack.
    pub link: Span,
    pub code: Span,
}

impl Spans {
    /// A field a version lacks stands in as one already listed, which adds nothing to a span.
    pub fn of(o: &StackLayout) -> Spans {
        let word = |offset| (offset, 8);
        Spans {
            thread: Span::of(&[
                word(o.thread_next),
                word(o.thread_interp),
                word(o.thread_id),
                word(o.native_thread_id.unwrap_or(o.thread_id)),
                word(o.thread_cframe.unwrap_or(o.current_frame)),
            ]),
            frame: Span::of(&[
                word(o.frame_previous),
                word(o.frame_executable),
                word(o.frame_instr_ptr),
                o.frame_owner
                    .map_or(word(o.frame_previous), |owner| (owner, 1)),
                o.frame_state
                    .map_or(word(o.frame_previous), |state| (state, 1)),
                word(o.frame_gen.unwrap_or(o.frame_previous)),
            ]),
            link: Span::of(&[word(o.frame_previous), word(o.frame_executable)]),
            code: Span::of(&[
                word(o.code_filename),
                word(o.code_name),
                word(o.code_qualname.unwrap_or(o.code_name)),
                word(o.code_linetable),
                (o.code_firstlineno, 4),
            ]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_cover_their_fields_and_read_nothing_outside() {
        let s = Span::of(&[(16, 8), (8, 8), (40, 8)]);
        assert_eq!((s.lo, s.hi, s.bytes()), (8, 48, 40));
        let mut buf = vec![0u8; s.bytes()];
        buf[32..40].copy_from_slice(&7u64.to_ne_bytes());
        assert_eq!(s.u64_at(&buf, 40), 7);
        assert_eq!(s.u64_at(&buf, 44), 0);
        assert_eq!(s.u64_at(&buf, 0), 0);
        assert_eq!(s.u8_at(&buf, 40), 7);
        let spans = Spans::of(&versions::LAYOUT_312);
        assert_eq!(spans.frame, Span { lo: 0, hi: 71 });
        assert!(spans.thread.bytes() <= 256 && spans.code.bytes() <= 256);
        // 3.10: from `f_back` through `f_state`.
        let spans = Spans::of(&versions::LAYOUT_310);
        assert_eq!(spans.frame, Span { lo: 24, hi: 109 });
        assert_eq!(spans.code, Span { lo: 40, hi: 128 });
    }
}
