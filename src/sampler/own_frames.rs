//! `OwnFrames`: the calling thread's Python frames, read in place in this process with the
//! layout the sampler reads another process with (3.13+: this runtime's `_Py_DebugOffsets`).
//! `Profile(types=True, calls=False)` charges each object to these frames rather than to the
//! calls a profile hook recorded, so that no hook runs at each call.

use super::error::Error;
use super::layout;
use super::runtime;
use super::versions::FrameKind;

/// Frames walked at most: the outermost calls of a deeper stack are left out.
pub const MAX_DEPTH: usize = 1 << 16;

/// Where this interpreter keeps a thread's frames and what they run.
#[derive(Clone, Copy, Debug)]
pub struct OwnFrames {
    /// `PyThreadState.current_frame`.
    current_frame: usize,
    /// `_PyInterpreterFrame.previous`, `.f_executable`, `.owner`.
    previous: usize,
    executable: usize,
    owner: usize,
    /// Owners of frames that run no Python code (the interpreter's entry, C-stack shims).
    shim_owners: &'static [u8],
    /// 3.14+: the tag bits of `f_executable`, a `_PyStackRef`.
    tag_bits: usize,
    /// `PyObject.ob_type`.
    ob_type: usize,
    /// Where a code object's flags are and the flag of the interpreter's own code, which is no
    /// function of the program (`StackFacts::internal_code`).
    internal_code: Option<(usize, u32)>,
}

impl OwnFrames {
    /// The layout of this process's interpreter: an error unless it is a 3.13+ one whose thread
    /// state points at its innermost interpreter frame.
    pub fn of_this_process() -> Result<OwnFrames, Error> {
        let pid = i32::try_from(std::process::id())
            .map_err(|_| Error::Unsupported("a process id beyond i32".into()))?;
        let rt = runtime::find_runtime(pid).map_err(|e| Error::Unsupported(e.to_string()))?;
        let (facts, o) = layout::resolve(&rt)?;
        let owner = match (o.thread_cframe, facts.frame_kind, o.frame_owner) {
            (None, FrameKind::Interpreter311, Some(owner)) if rt.version_hex.is_some() => owner,
            _ => {
                return Err(Error::Unsupported(
                    "this interpreter's frames are read in place from Python 3.13 on".into(),
                ))
            }
        };
        let ob_type =
            layout::published(&rt, "frames")?.get(layout::words_of(&rt)?.pyobject_ob_type)?;
        let size = |v: u64| usize::try_from(v).map_err(|_| Error::Layout(format!("offset {v}")));
        Ok(OwnFrames {
            current_frame: size(o.current_frame)?,
            previous: size(o.frame_previous)?,
            executable: size(o.frame_executable)?,
            owner: size(owner)?,
            shim_owners: facts.shim_owners,
            tag_bits: size(facts.executable_tag_bits)?,
            ob_type: size(ob_type)?,
            internal_code: match facts.internal_code {
                Some((flags, flag)) => Some((size(flags)?, flag)),
                None => None,
            },
        })
    }

    /// The innermost frame of the thread whose state is at `tstate`, with what it runs: where
    /// `codes` is to stop for that thread (0s: it runs none).
    ///
    /// # Safety
    /// As for [`OwnFrames::codes`].
    pub unsafe fn innermost(&self, tstate: usize) -> Base {
        // SAFETY: `tstate` is live and its frame chain stays (function contract).
        unsafe {
            let frame = word(tstate + self.current_frame);
            let code = if frame == 0 {
                0
            } else {
                word(frame + self.executable) & !self.tag_bits
            };
            Base { frame, code }
        }
    }

    /// The code objects (addresses) the frames of the thread whose state is at `tstate` run,
    /// innermost first, into `out`, down to the frame `stop` (left out with the frames under
    /// it: those that ran before the profiler was enabled); frames whose executable is not of
    /// type `code_type` are left out.
    ///
    /// # Safety
    /// `tstate` is the calling thread's live `PyThreadState`, that thread holds the GIL (its
    /// frames stay as they are), and `self` was made in this process.
    pub unsafe fn codes(&self, tstate: usize, code_type: usize, stop: Base, out: &mut Vec<usize>) {
        out.clear();
        // SAFETY: `tstate` is live (function contract); the field is a pointer.
        let mut frame = unsafe { word(tstate + self.current_frame) };
        while frame != 0 && out.len() < MAX_DEPTH {
            // The stop frame, unless its memory serves another call now.
            // SAFETY: `frame` is in the live chain (function contract, as below).
            let runs = unsafe { word(frame + self.executable) } & !self.tag_bits;
            if frame == stop.frame && runs == stop.code {
                break;
            }
            // SAFETY: `frame` is in the live chain of a thread holding the GIL (function
            // contract): each frame and its executable are valid until that thread runs on.
            unsafe {
                let owner = *((frame + self.owner) as *const u8);
                if !self.shim_owners.contains(&owner) {
                    let code = word(frame + self.executable) & !self.tag_bits;
                    if code != 0 && word(code + self.ob_type) == code_type {
                        let flags = |(at, flag): (usize, u32)| *((code + at) as *const u32) & flag;
                        if self.internal_code.is_none_or(|f| flags(f) == 0) {
                            out.push(code);
                        }
                    }
                }
                frame = word(frame + self.previous);
            }
        }
    }
}

/// A frame a walk stops at, and the code object it ran then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Base {
    pub frame: usize,
    pub code: usize,
}

/// The pointer-sized word at `addr`.
///
/// # Safety
/// `addr` is a readable, aligned word of this process.
unsafe fn word(addr: usize) -> usize {
    // SAFETY: function contract.
    unsafe { *(addr as *const usize) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layout over words: a thread state of one word (its innermost frame), frames of four
    /// words (previous, executable, owner, unused) and code objects of four (flags at word 1,
    /// type at word 2).
    const LAYOUT: OwnFrames = OwnFrames {
        current_frame: 0,
        previous: 0,
        executable: 8,
        owner: 16,
        shim_owners: &[3],
        tag_bits: 1,
        ob_type: 16,
        internal_code: Some((8, 0x200_0000)),
    };
    const CODE_TYPE: usize = 0xc0de;

    fn code(flags: usize) -> Box<[usize; 4]> {
        Box::new([0, flags, CODE_TYPE, 0])
    }

    #[test]
    fn walks_innermost_first_leaving_out_shims_foreign_and_internal_code_and_stops_at_the_base() {
        let (a, b, c) = (code(0), code(0), code(0));
        let internal = code(0x200_0000);
        let foreign = Box::new([0usize, 0, 0xbad, 0]);
        let addr = |b: &[usize; 4]| b.as_ptr() as usize;
        // outermost a, then a shim, then b (its executable tagged), the interpreter's own
        // frame, a frame of a foreign object, then c innermost.
        let f_a = Box::new([0usize, addr(&a), 0, 0]);
        let f_shim = Box::new([addr(&f_a), addr(&c), 3, 0]);
        let f_b = Box::new([addr(&f_shim), addr(&b) | 1, 0, 0]);
        let f_int = Box::new([addr(&f_b), addr(&internal), 0, 0]);
        let f_for = Box::new([addr(&f_int), addr(&foreign), 0, 0]);
        let f_c = Box::new([addr(&f_for), addr(&c), 1, 0]);
        let tstate = Box::new([addr(&f_c)]);
        let ts = tstate.as_ptr() as usize;
        let mut out = Vec::new();
        // SAFETY: every address followed is one of the boxes above, alive to the end.
        unsafe {
            LAYOUT.codes(ts, CODE_TYPE, Base::default(), &mut out);
            assert_eq!(out, vec![addr(&c), addr(&b), addr(&a)]);
            // Stopped at b's frame: it and what is under it are left out.
            let base = Base {
                frame: addr(&f_b),
                code: addr(&b),
            };
            LAYOUT.codes(ts, CODE_TYPE, base, &mut out);
            assert_eq!(out, vec![addr(&c)]);
            // The base frame running another code object now is walked through.
            let stale = Base {
                frame: addr(&f_b),
                code: addr(&a),
            };
            LAYOUT.codes(ts, CODE_TYPE, stale, &mut out);
            assert_eq!(out.len(), 3);
            assert_eq!(
                LAYOUT.innermost(ts),
                Base {
                    frame: addr(&f_c),
                    code: addr(&c)
                }
            );
        }
    }
}
