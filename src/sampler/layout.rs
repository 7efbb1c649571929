//! The layout the stack reader uses for one target: its version's table, or (3.13+) the
//! `_Py_DebugOffsets` the runtime publishes, read from the target and checked to be offsets.

use super::error::Error;
use super::remote;
use super::runtime::Runtime;
use super::versions::{self, DebugWordMap, StackFacts, StackLayout, UnicodeLayout};

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
             (process {}; supported: {})",
            rt.pid,
            versions::supported_range()
        ))
    })?;
    let layout = match facts.layout {
        Some(layout) => layout,
        None if rt.version_hex.is_some() => {
            let words = published(rt, "thread stacks")?;
            from_debug_offsets(&words, words_of(rt)?)?
        }
        None => {
            return Err(Error::Layout(format!(
                "process {}: Python {major}.{minor} without _Py_DebugOffsets",
                rt.pid
            )))
        }
    };
    Ok((facts, layout))
}

/// The word map of `rt`'s version, or why there is none.
pub fn words_of(rt: &Runtime) -> Result<&'static DebugWordMap, Error> {
    let (major, minor) = known_version(rt)?;
    versions::debug_words(major, minor).ok_or_else(|| {
        Error::Layout(format!(
            "process {}: no map of Python {major}.{minor}'s _Py_DebugOffsets",
            rt.pid
        ))
    })
}

/// The `_Py_DebugOffsets` of `rt` as its version's map places them, read once; refused for a
/// free-threaded build the version's row does not read (`what`: what was to be read).
pub fn published(rt: &Runtime, what: &str) -> Result<DebugWords, Error> {
    let (major, minor) = known_version(rt)?;
    let map = words_of(rt)?;
    let words = DebugWords::read(rt.pid, rt.address, map.words)?;
    let read_free = versions::facts(major, minor).is_some_and(|f| f.free_threaded);
    if words.get(map.free_threaded)? != 0 && !read_free {
        return Err(Error::Unsupported(format!(
            "reading the {what} of a free-threaded Python {major}.{minor} is not supported yet \
             (process {}): free-threaded builds lay out objects, code and strings otherwise",
            rt.pid
        )));
    }
    Ok(words)
}

/// The first words of a version's `_Py_DebugOffsets` (at the start of `_PyRuntime`), read once.
pub struct DebugWords(Vec<u64>);

impl DebugWords {
    /// Reads `count` words of the runtime at `runtime` in process `pid`.
    pub fn read(pid: i32, runtime: u64, count: usize) -> Result<Self, Error> {
        let count = count as u64;
        Ok(DebugWords(remote::read_words(pid, runtime, count, count)?))
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

/// The layout from the `_Py_DebugOffsets` words at the start of `_PyRuntime`, placed as `w`.
fn from_debug_offsets(words: &DebugWords, w: &DebugWordMap) -> Result<StackLayout, Error> {
    let get = |i: usize| words.get(i);
    Ok(StackLayout {
        interpreters_head: get(w.runtime_interpreters_head)?,
        runtime_main_thread: None,
        interp_next: get(w.interp_next)?,
        threads_head: get(w.interp_threads_head)?,
        thread_next: get(w.thread_next)?,
        thread_interp: get(w.thread_interp)?,
        thread_cframe: None,
        cframe_previous: None,
        current_frame: get(w.thread_current_frame)?,
        thread_id: get(w.thread_thread_id)?,
        native_thread_id: Some(get(w.thread_native_thread_id)?),
        gil_requested: w.thread_gil_requested.map(get).transpose()?,
        frame_previous: get(w.frame_previous)?,
        frame_executable: get(w.frame_executable)?,
        frame_instr_ptr: get(w.frame_instr_ptr)?,
        frame_owner: Some(get(w.frame_owner)?),
        frame_gen: None,
        frame_state: None,
        code_filename: get(w.code_filename)?,
        code_name: get(w.code_name)?,
        code_qualname: Some(get(w.code_qualname)?),
        code_linetable: get(w.code_linetable)?,
        code_firstlineno: get(w.code_firstlineno)?,
        code_adaptive: Some(get(w.code_adaptive)?),
        bytes_size: get(w.bytes_ob_size)?,
        bytes_sval: get(w.bytes_ob_sval)?,
        unicode: UnicodeLayout {
            state: get(w.unicode_state)?,
            length: get(w.unicode_length)?,
            ascii_size: get(w.unicode_asciiobject_size)?,
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

    /// A runtime of this process whose `_Py_DebugOffsets` are `words`, as 3.`minor`'s.
    fn fake_runtime(minor: u8, words: &[u64]) -> Runtime {
        Runtime {
            pid: crate::sampler::own_pid(),
            address: words.as_ptr() as u64,
            library: std::path::PathBuf::from(format!("libpython3.{minor}.so")),
            version: Some((3, minor)),
            version_hex: Some(0x0300_00f0 | (u64::from(minor) << 16)),
        }
    }

    #[test]
    fn a_free_threaded_build_is_refused_saying_so_and_a_gil_build_read_from_its_words() {
        for minor in [13, 14, 15] {
            let map = versions::debug_words(3, minor).copied();
            let Some(map) = map else {
                panic!("3.{minor} has no word map");
            };
            // Each published field's offset is its word index times 8 here: a fake layout
            // that shows which word each field was taken from.
            let mut words: Vec<u64> = (0..map.words as u64).map(|i| i * 8).collect();
            words[map.free_threaded] = 1;
            match resolve(&fake_runtime(minor, &words)) {
                Err(Error::Unsupported(why)) => assert!(why.contains("free-threaded"), "{why}"),
                other => panic!("3.{minor}: {:?}", other.map(|r| r.1)),
            }
            words[map.free_threaded] = 0;
            let (facts, layout) = match resolve(&fake_runtime(minor, &words)) {
                Ok(found) => found,
                Err(e) => panic!("3.{minor}: {e:?}"),
            };
            assert_eq!(layout.thread_id, map.thread_thread_id as u64 * 8);
            assert_eq!(layout.frame_owner, Some(map.frame_owner as u64 * 8));
            assert_eq!(layout.code_adaptive, Some(map.code_adaptive as u64 * 8));
            assert_eq!(
                layout.unicode.ascii_size,
                map.unicode_asciiobject_size as u64 * 8
            );
            assert_eq!(facts.executable_tag_bits, if minor >= 14 { 3 } else { 0 });
        }
    }

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
        // 3.11: from `f_code` through `owner`, which holds `is_entry`.
        let spans = Spans::of(&versions::LAYOUT_311);
        assert_eq!(spans.frame, Span { lo: 32, hi: 70 });
        let entry = versions::STACK_FACTS_311
            .frame_placing
            .and_then(|p| p.frame_is_entry);
        assert!(entry.is_some_and(|at| (spans.frame.lo..spans.frame.hi).contains(&at)));
    }

    #[test]
    fn a_frame_size_is_the_code_objects_field_or_311s_sum() {
        // A code object whose `int`s at 68, 72 and 76 are 5, 99 and 7.
        let field = |at| {
            Ok(match at {
                68 => 5,
                76 => 7,
                _ => 99,
            })
        };
        let size = |p: versions::FramePlacing| p.frame_size.bytes(field).ok();
        assert_eq!(size(versions::FRAME_PLACING_312), Some(7 * 8));
        assert_eq!(size(versions::FRAME_PLACING_311), Some((5 + 7 + 9) * 8));
    }
}
