//! `OwnFrames`: the calling thread's Python frames, read in place in this process with the
//! layout the sampler reads another process with (3.13+: this runtime's `_Py_DebugOffsets`).
//! `Profile(types=True, calls=False)` charges each object to these frames rather than to the
//! calls a profile hook recorded, so that no hook runs at each call. Left out, as
//! `PyFrame_GetBack` leaves them out: shims, the interpreter's own code, and frames that have
//! not reached their first traceable instruction (a generator being made, its cells being set
//! up), whose objects a call profile charges to the caller, the call not started yet.

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
    /// `_PyInterpreterFrame.previous`, `.f_executable`, `.owner`, `.instr_ptr`.
    previous: usize,
    executable: usize,
    owner: usize,
    instr_ptr: usize,
    /// Owners of frames that run no Python code (the interpreter's entry, C-stack shims).
    shim_owners: &'static [u8],
    /// `FRAME_OWNED_BY_GENERATOR`: a generator's frame, which has always started.
    owned_by_generator: u8,
    /// 3.14+: the tag bits of `f_executable`, a `_PyStackRef`.
    tag_bits: usize,
    /// `PyObject.ob_type`.
    ob_type: usize,
    /// Where a code object's flags are and the flag of the interpreter's own code, which is no
    /// function of the program (`StackFacts::internal_code`).
    internal_code: Option<(usize, u32)>,
    /// `PyCodeObject.co_code_adaptive` and `_co_firsttraceable` (an `int`, in code units of
    /// `code_unit` bytes), if the version says where.
    first_traceable: Option<(usize, usize)>,
    code_unit: usize,
}

impl OwnFrames {
    /// The layout of this process's interpreter: an error unless it is a 3.13+ one whose thread
    /// state points at its innermost interpreter frame.
    pub fn of_this_process() -> Result<OwnFrames, Error> {
        let pid = i32::try_from(std::process::id())
            .map_err(|_| Error::Unsupported("a process id beyond i32".into()))?;
        let rt = runtime::find_runtime(pid).map_err(|e| Error::Unsupported(e.to_string()))?;
        let (facts, o) = layout::resolve(&rt)?;
        let unsupported = || {
            Error::Unsupported(
                "this interpreter's frames are read in place from Python 3.13 on".into(),
            )
        };
        let owner = match (o.thread_cframe, facts.frame_kind, o.frame_owner) {
            (None, FrameKind::Interpreter311, Some(owner)) if rt.version_hex.is_some() => owner,
            _ => return Err(unsupported()),
        };
        let ob_type =
            layout::published(&rt, "frames")?.get(layout::words_of(&rt)?.pyobject_ob_type)?;
        let size = |v: u64| usize::try_from(v).map_err(|_| Error::Layout(format!("offset {v}")));
        let first_traceable = match (o.code_adaptive, facts.first_traceable_before_adaptive) {
            (Some(adaptive), Some(before)) => {
                let at = adaptive.checked_sub(before).ok_or_else(unsupported)?;
                Some((size(adaptive)?, size(at)?))
            }
            _ => None,
        };
        Ok(OwnFrames {
            current_frame: size(o.current_frame)?,
            previous: size(o.frame_previous)?,
            executable: size(o.frame_executable)?,
            owner: size(owner)?,
            instr_ptr: size(o.frame_instr_ptr)?,
            shim_owners: facts.shim_owners,
            owned_by_generator: facts.frame_owned_by_generator.ok_or_else(unsupported)?,
            tag_bits: size(facts.executable_tag_bits)?,
            ob_type: size(ob_type)?,
            internal_code: match facts.internal_code {
                Some((flags, flag)) => Some((size(flags)?, flag)),
                None => None,
            },
            first_traceable,
            code_unit: size(facts.code_unit)?,
        })
    }

    /// The code object the frame at `frame` runs, if it is a frame of the program's: `None`
    /// for a shim, a foreign executable, the interpreter's own code, or a call not started.
    ///
    /// # Safety
    /// `frame` is in the live chain of a thread holding the GIL, in this process.
    unsafe fn code_of(&self, frame: usize, code_type: usize) -> Option<usize> {
        // SAFETY: function contract: the frame and what it runs are valid while its thread
        // holds the GIL; only plain loads.
        unsafe {
            let owner = *((frame + self.owner) as *const u8);
            if self.shim_owners.contains(&owner) {
                return None;
            }
            let code = word(frame + self.executable) & !self.tag_bits;
            if code == 0 || word(code + self.ob_type) != code_type {
                return None;
            }
            if let Some((flags, flag)) = self.internal_code {
                if *((code + flags) as *const u32) & flag != 0 {
                    return None;
                }
            }
            if let (Some((adaptive, first)), false) =
                (self.first_traceable, owner == self.owned_by_generator)
            {
                let first = usize::try_from(*((code + first) as *const i32)).unwrap_or(0);
                let start = code + adaptive + first * self.code_unit;
                if word(frame + self.instr_ptr) < start {
                    return None;
                }
            }
            Some(code)
        }
    }

    /// The frame `up` frames of the program's under the innermost one of the thread whose
    /// state is at `tstate`, with what it runs (0s: there is none): where `codes` is to stop.
    ///
    /// # Safety
    /// As for [`OwnFrames::codes`].
    pub unsafe fn frame_at(&self, tstate: usize, code_type: usize, up: usize) -> Base {
        let mut left = up;
        // SAFETY: `tstate` is live and its frame chain stays (function contract).
        unsafe {
            let mut frame = word(tstate + self.current_frame);
            for _ in 0..MAX_DEPTH {
                if frame == 0 {
                    break;
                }
                if let Some(code) = self.code_of(frame, code_type) {
                    if left == 0 {
                        return Base { frame, code };
                    }
                    left -= 1;
                }
                frame = word(frame + self.previous);
            }
        }
        Base::default()
    }

    /// The code objects (addresses) of the program's frames of the thread whose state is at
    /// `tstate`, innermost first, at most `limit` of them, into `out`, down to the frame `stop`
    /// (left out with the frames under it: those that ran before the profiler was enabled);
    /// `code_type` is the type of code objects.
    ///
    /// # Safety
    /// `tstate` is the calling thread's live `PyThreadState`, that thread holds the GIL (its
    /// frames stay as they are), and `self` was made in this process.
    pub unsafe fn codes(
        &self,
        tstate: usize,
        code_type: usize,
        stop: Base,
        limit: usize,
        out: &mut Vec<usize>,
    ) {
        out.clear();
        // SAFETY: `tstate` is live (function contract); the field is a pointer.
        let mut frame = unsafe { word(tstate + self.current_frame) };
        let limit = limit.min(MAX_DEPTH);
        while frame != 0 && out.len() < limit {
            // SAFETY: `frame` is in the live chain of a thread holding the GIL (function
            // contract): each frame and its executable are valid until that thread runs on.
            unsafe {
                if let Some(code) = self.code_of(frame, code_type) {
                    // The stop frame, unless its memory serves another call now.
                    if frame == stop.frame && code == stop.code {
                        break;
                    }
                    out.push(code);
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
    /// words (previous, executable, owner, instruction pointer) and code objects of six (flags
    /// at word 1, type at word 2, first traceable instruction at word 3, instructions from
    /// word 4 on).
    const LAYOUT: OwnFrames = OwnFrames {
        current_frame: 0,
        previous: 0,
        executable: 8,
        owner: 16,
        instr_ptr: 24,
        shim_owners: &[3],
        owned_by_generator: 1,
        tag_bits: 1,
        ob_type: 16,
        internal_code: Some((8, 0x200_0000)),
        first_traceable: Some((32, 24)),
        code_unit: 2,
    };
    const CODE_TYPE: usize = 0xc0de;

    fn code(flags: usize, first_traceable: usize) -> Box<[usize; 6]> {
        Box::new([0, flags, CODE_TYPE, first_traceable, 0, 0])
    }

    fn addr<T>(b: &T) -> usize {
        b as *const T as usize
    }

    /// A frame linked to `previous`, running `code` (its address, maybe tagged) with `owner`,
    /// at code unit `unit` of it.
    fn frame(previous: usize, code: usize, owner: usize, unit: usize) -> Box<[usize; 4]> {
        Box::new([previous, code, owner, (code & !1) + 32 + unit * 2])
    }

    #[test]
    fn walks_innermost_first_leaving_out_what_is_no_frame_of_the_program_down_to_the_base() {
        let (a, b, c) = (code(0, 0), code(0, 0), code(0, 0));
        let internal = code(0x200_0000, 0);
        let foreign = Box::new([0usize, 0, 0xbad, 0, 0, 0]);
        // A generator function's code: its first traceable instruction is its third.
        let g = code(0, 2);
        // Outermost a, then a shim, then b (its executable tagged), the interpreter's own
        // frame, a frame of a foreign object, a generator being made (before its first
        // traceable instruction), then c innermost.
        let f_a = frame(0, addr(&*a), 0, 5);
        let f_shim = frame(addr(&*f_a), addr(&*c), 3, 0);
        let f_b = frame(addr(&*f_shim), addr(&*b) | 1, 0, 0);
        let f_int = frame(addr(&*f_b), addr(&*internal), 0, 0);
        let f_for = frame(addr(&*f_int), addr(&*foreign), 0, 0);
        let f_new = frame(addr(&*f_for), addr(&*g), 0, 1);
        let f_c = frame(addr(&*f_new), addr(&*c), 1, 0);
        let tstate = Box::new([addr(&*f_c)]);
        let ts = addr(&*tstate);
        let mut out = Vec::new();
        let all = MAX_DEPTH;
        // SAFETY: every address followed is one of the boxes above, alive to the end.
        unsafe {
            LAYOUT.codes(ts, CODE_TYPE, Base::default(), all, &mut out);
            assert_eq!(out, vec![addr(&*c), addr(&*b), addr(&*a)]);
            LAYOUT.codes(ts, CODE_TYPE, Base::default(), 1, &mut out);
            assert_eq!(out, vec![addr(&*c)]);
            // The generator once started (at its third instruction) is a frame of its own.
            let f_started = frame(addr(&*f_for), addr(&*g), 0, 2);
            let f_c2 = frame(addr(&*f_started), addr(&*c), 1, 0);
            let tstate2 = Box::new([addr(&*f_c2)]);
            LAYOUT.codes(addr(&*tstate2), CODE_TYPE, Base::default(), all, &mut out);
            assert_eq!(out, vec![addr(&*c), addr(&*g), addr(&*b), addr(&*a)]);
            // Stopped at b's frame: it and what is under it are left out.
            let base = LAYOUT.frame_at(ts, CODE_TYPE, 1);
            assert_eq!(
                base,
                Base {
                    frame: addr(&*f_b),
                    code: addr(&*b)
                }
            );
            LAYOUT.codes(ts, CODE_TYPE, base, all, &mut out);
            assert_eq!(out, vec![addr(&*c)]);
            // The base frame running another code object now is walked through.
            let stale = Base {
                frame: addr(&*f_b),
                code: addr(&*a),
            };
            LAYOUT.codes(ts, CODE_TYPE, stale, all, &mut out);
            assert_eq!(out.len(), 3);
            // The innermost frame of the program's; none beyond the outermost.
            assert_eq!(LAYOUT.frame_at(ts, CODE_TYPE, 0).frame, addr(&*f_c));
            assert_eq!(LAYOUT.frame_at(ts, CODE_TYPE, 3), Base::default());
        }
    }
}
