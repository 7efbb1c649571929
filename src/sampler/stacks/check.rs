//! `check_chain`: whether a walk's chain is a stack the thread had, read again in one system
//! call between two looks at where the thread's innermost frame is.

use super::{cframe_words, Link, StackReader, PAGE};
use crate::sampler::error::Error;
use crate::sampler::memory;
use crate::sampler::remote::at;

/// Where in the walk's `chain` the frames innermost at a check's first look (`now`) and last
/// look (`then`) are: the walk's first frame, or callers of it that the frames before returned
/// to (during the walk, or between the looks). `None` unless both are there and the last is the
/// first or a caller of it: a frame called between the looks may lie where the walk (and the
/// check, before the thread wrote it) read a stale one.
fn looked(chain: &[Link], now: u64, then: u64) -> Option<(usize, usize)> {
    let found = |frame: u64| chain.iter().position(|l| l.frame == frame);
    let (first, last) = (found(now)?, found(then)?);
    (first <= last).then_some((first, last))
}

/// Ends a range of `check_chain`'s frames, `(start, end of its frames, end of their page)`:
/// the frames to `ranges`, the page's rest past them to `tails` while there is room (else it is
/// not read, and a walk that needs it reads it); the frames' bytes.
fn close(
    (start, end, hi): (u64, u64, u64),
    ranges: &mut Vec<(u64, usize)>,
    tails: &mut [(u64, usize)],
    count: &mut usize,
) -> usize {
    ranges.push((start, (end - start) as usize));
    if let Some(slot) = tails.get_mut(*count).filter(|_| hi > end) {
        *slot = (end, (hi - end) as usize);
        *count += 1;
    }
    (end - start) as usize
}

/// `check_chain`'s ranges to read, its chain's frames in address order, and where each frame's
/// link bytes are in the read.
#[derive(Default)]
pub(super) struct CheckPlan {
    ranges: Vec<(u64, usize)>,
    order: Vec<usize>,
    place: Vec<usize>,
}

impl StackReader {
    /// Reads again, in one system call, where the thread's innermost frame is, each walked
    /// frame's `previous` and code object, and where the innermost frame is once more; fails
    /// unless all are as the walk read them, from the frame innermost at the first look (the
    /// walk's first, or a caller of it that the frames read before it returned to) outwards,
    /// and the frame innermost at the last look is that one or a caller of it (`looked`).
    /// Returns how many Python frames returned by the last look: the stack is the walk's
    /// without them. The walk read frame after frame while the thread ran: a frame may have
    /// returned and its memory been taken by another call (`mid_a` read under a stale
    /// `leaf_b`), or a generator may have yielded and unlinked its `previous` (a stack cut at
    /// the generator). Frames that lie close together (3.11+'s data stack) are read as one
    /// range, so that they are copied at nearly one instant, and the innermost frame's place is
    /// read before and after them: a chain found unchanged between two looks, which the thread
    /// only returned along, is its stack at the last. A thread the walk found in no Python code
    /// is checked too: 3.11-3.12 read its cframe after the call that ran in it returned. The
    /// frames are read whole, then the thread state as its span, then (3.11+) the rest of the
    /// data stack's page past the frames, out of the window between the looks: a check that
    /// fails hands its read to the snapshot (`Snapshot::adopt`), and the next walk reads from
    /// it, one call a walk, starting at the innermost frame that read found first.
    pub(super) fn check_chain(&mut self, tstate: u64, head: &[u8]) -> Result<usize, Error> {
        let o = self.off;
        let (link, frame, thread) = (self.spans.link, self.spans.frame, self.spans.thread);
        // Where the innermost frame is: the thread state's own field, or (3.11-3.12) its
        // `cframe` pointer and that cframe's field. Read first as words, last as the thread
        // state's span (and the cframe's words): a read that fails the check is the next walk's.
        let cframe = o.thread_cframe.map(|c| (c, thread.u64_at(head, c)));
        if self.chain.is_empty() && cframe.is_some_and(|(_, was)| was == 0) {
            // No cframe to read (a thread state not yet set up): no frame, as read.
            return Ok(0);
        }
        let mut plan = std::mem::take(&mut self.plan);
        let CheckPlan {
            ranges,
            order,
            place,
        } = &mut plan;
        ranges.clear();
        // 3.11-3.12: the cframe before the walk's too, when a C call under Python frames of the
        // chain made it (a generator that `str.join` resumes): the thread goes back to it each
        // time the callee returns or yields, and its innermost frame is then one of the walk's.
        // (3.12 marks where C called in with a shim frame, 3.11 with an entry frame.)
        let called_from_c = |l: &Link| !l.python || l.entry;
        let beyond_c = match self.chain.iter().position(called_from_c) {
            Some(i) => self.chain[i + 1..].iter().any(|l| l.python),
            None => false,
        };
        let outer = (beyond_c && self.outer_cframe != 0).then_some(self.outer_cframe);
        match cframe {
            Some((field, cframe)) => {
                ranges.push((at(tstate, field)?, 8));
                ranges.push((at(cframe, o.current_frame)?, 8));
                if let Some(outer) = outer {
                    ranges.push((at(outer, o.current_frame)?, 8));
                }
            }
            None => ranges.push((at(tstate, o.current_frame)?, 8)),
        }
        let words = ranges.len();
        // The frames whole, as few ranges: in address order, merged while the gap to the next
        // is under `NEAR`; one on the data stack to the end of its page, where the frames of a
        // stack grown since lie.
        const NEAR: u64 = 512;
        order.clear();
        order.extend(0..self.chain.len());
        order.sort_unstable_by_key(|&i| self.chain[i].frame);
        // Per frame of the chain: where its link bytes start in the read.
        place.clear();
        place.resize(self.chain.len(), 0);
        let mut offset = words * 8;
        // A range: where it starts, where the frames in it end, and where the data stack's page
        // ends past them (`hi` past the frames' ends).
        let mut open: Option<(u64, u64, u64)> = None;
        // One for each data stack chunk the frames lie in: a stack spans one, rarely two.
        let mut tails = [(0u64, 0usize); 4];
        let mut tail_count = 0;
        for &i in order.iter() {
            let lo = at(self.chain[i].frame, frame.lo)?;
            let end = at(lo, frame.bytes() as u64)?;
            let mut hi = end;
            if self.chain[i].on_data_stack {
                hi = ((hi - 1) | (PAGE - 1)).saturating_add(1);
            }
            open = match open {
                Some((start, e, h)) if lo <= h.saturating_add(NEAR) => {
                    Some((start, e.max(end), h.max(hi)))
                }
                Some(closed) => {
                    offset += close(closed, ranges, &mut tails, &mut tail_count);
                    Some((lo, end, hi))
                }
                None => Some((lo, end, hi)),
            };
            if let Some((start, _, _)) = open {
                place[i] = offset + (lo - start + (link.lo - frame.lo)) as usize;
            }
        }
        if let Some(closed) = open {
            close(closed, ranges, &mut tails, &mut tail_count);
        }
        let after = ranges.iter().map(|r| r.1).sum::<usize>();
        ranges.push((at(tstate, thread.lo)?, thread.bytes()));
        // Last, each cframe's `current_frame` with its `previous` (3.11-3.12): all that a walk
        // from this read (`adopt`) asks of a cframe, else a system call of its own.
        let last_words = cframe_words(&o);
        if let Some((_, cframe)) = cframe {
            ranges.push((at(cframe, last_words.lo)?, last_words.bytes()));
            if let Some(outer) = outer {
                ranges.push((at(outer, last_words.lo)?, last_words.bytes()));
            }
        }
        // The pages' rest past the frames, read after the last look: what the next walk reads of
        // a stack grown since, kept out of the window between the two looks.
        ranges.extend_from_slice(&tails[..tail_count]);
        let mut bytes = std::mem::take(&mut self.check);
        let read = memory::read_ranges(self.pid, ranges, &mut bytes);
        // Every range asked for (a call reads at most `IOV_MAX`: a chain of more frames far
        // apart is read short, without the thread state).
        let asked = ranges.iter().map(|r| r.1).sum::<usize>();
        let whole = read.is_ok_and(|n| n == asked && n == bytes.len());
        let word = |b: &[u8], i: usize| {
            let w = b.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok());
            w.map_or(0, u64::from_ne_bytes)
        };
        // 3.11-3.12: which cframe a look found the thread under, the walk's (0) or the one
        // before it (1); its innermost frame is the word read for it.
        let under = |c: u64| match cframe {
            Some((_, was)) if c == was => Some(0),
            _ if outer == Some(c) => Some(1),
            _ => None,
        };
        // The innermost frame read first (and under which cframe): the first word, or
        // (3.11-3.12) the one read for the cframe the first word names.
        let (now, now_under) = match cframe {
            Some(_) => match under(word(&bytes, 0)) {
                Some(k) => (Some(word(&bytes, 8 + 8 * k)), Some(k)),
                None => (None, None),
            },
            None => (Some(word(&bytes, 0)), Some(0)),
        };
        let field = |f: u64| after + (f - thread.lo) as usize;
        // Where the innermost frame read last is in the read: the span's field, or (3.11-3.12)
        // the word after it read for the cframe the span names.
        let last = match cframe {
            Some((c, _)) => {
                let at = |k: usize| after + thread.bytes() + last_words.bytes() * k;
                let current = (o.current_frame - last_words.lo) as usize;
                under(word(&bytes, field(c))).map(|k| (at(k) + current, k))
            }
            None => Some((field(o.current_frame), 0)),
        };
        let then_at = last.map(|(at, _)| at);
        let then = then_at.map(|at| word(&bytes, at));
        // The thread the walk named, still: a span read before its thread started (3.10: with
        // its creator's ident; 3.11+: with no OS id) does not name the frames found since.
        let ids = [Some(o.thread_id), o.native_thread_id];
        let same_thread = ids
            .into_iter()
            .flatten()
            .all(|f| word(&bytes, field(f)) == thread.u64_at(head, f));
        let held = whole && now.is_some() && then.is_some() && same_thread;
        // A thread that runs no Python code: so at both looks. (A cframe read after its call
        // returned reads 0, or whatever the C stack holds there since.)
        if self.chain.is_empty() && held && now == Some(0) && then == Some(0) {
            self.check = bytes;
            self.plan = plan;
            return Ok(0);
        }
        let now = now.unwrap_or(0);
        let looks = held
            .then(|| looked(&self.chain, now, then.unwrap_or(0)))
            .flatten();
        let from = looks.map(|(first, _)| first);
        let same = from.is_some_and(|from| {
            self.chain[from..]
                .iter()
                .zip(&place[from..])
                .all(|(l, &at)| {
                    bytes.get(at..at + link.bytes()).is_some_and(|raw| {
                        link.u64_at(raw, o.frame_previous) == l.previous
                            && link.u64_at(raw, o.frame_executable) == l.code
                    })
                })
        });
        let checked = match looks {
            // The stack at the last look, from its innermost frame out, each frame as the walk
            // read it from the first look's on.
            Some((first, last)) if same && self.placed(first) => {
                Ok(self.chain[..last].iter().filter(|l| l.shown()).count())
            }
            _ => {
                // The next walk reads what this read found, not the target once more, from the
                // innermost frame it found first, before the frames, written where the one found
                // last was, as a walk of the target does: from the one found last, a caller
                // called since would be read over its callee's stale slot (a crossing).
                // (Under one cframe at both looks: the next walk reads the span's.)
                let slot = then_at.and_then(|at| bytes.get_mut(at..at + 8));
                let one_cframe = now_under == last.map(|(_, k)| k);
                if let (true, Some(slot)) = (whole && now != 0 && one_cframe, slot) {
                    slot.copy_from_slice(&now.to_ne_bytes());
                    self.snap.adopt(&ranges[words..], &bytes[words * 8..]);
                    self.adopted = true;
                }
                Err(Error::Layout("the stack changed while it was read".into()))
            }
        };
        self.check = bytes;
        self.plan = plan;
        checked
    }

    /// Whether each frame of the chain from `from` outwards that lies on the data stack has
    /// its callee there right after it, or at the start of a new chunk: else the walk paired it
    /// with a call made in the slot afterwards. A callee called from C (a shim on the C stack
    /// between them, or 3.11's `is_entry`) may lie further on: a finalizer run as a frame
    /// returns is pushed after the frame being cleared, which is already unlinked.
    pub(super) fn placed(&self, from: usize) -> bool {
        let Some(p) = self.facts.frame_placing else {
            return true;
        };
        let tag = self.facts.executable_tag_bits;
        let mut callee: Option<&Link> = None;
        let mut from_c = false;
        for l in &self.chain[from..] {
            if !l.python {
                from_c = true;
                continue;
            }
            if let Some(e) = callee.filter(|e| e.on_data_stack && l.on_data_stack) {
                let size = self
                    .codes
                    .get(&(l.code & !tag))
                    .map_or(0, |c| c.frame_bytes);
                let end = l.frame.wrapping_add(size);
                let placed = e.frame == end || ((from_c || e.entry) && e.frame > end);
                if size != 0 && !placed && e.frame % PAGE != p.chunk_data {
                    return false;
                }
            }
            callee = Some(l);
            from_c = false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_takes_the_stack_at_its_last_look_when_the_thread_returned_not_called_since() {
        let link = |frame| Link {
            frame,
            previous: frame - 0x100,
            code: 7,
            python: true,
            on_data_stack: true,
            internal: false,
            entry: false,
        };
        // Innermost first: 0x1300 called by 0x1200, called by 0x1100.
        let chain = [link(0x1300), link(0x1200), link(0x1100)];
        assert_eq!(looked(&chain, 0x1300, 0x1300), Some((0, 0)));
        // Returned from 0x1300 to 0x1200 between the looks: the stack from 0x1200.
        assert_eq!(looked(&chain, 0x1300, 0x1200), Some((0, 1)));
        assert_eq!(looked(&chain, 0x1200, 0x1100), Some((1, 2)));
        // Called from 0x1200 into 0x1300's slot between the looks: what was read there may be
        // the frame that returned, not the one called.
        assert_eq!(looked(&chain, 0x1200, 0x1300), None);
        // A look at a frame the walk did not read.
        assert_eq!(looked(&chain, 0x1400, 0x1300), None);
        assert_eq!(looked(&chain, 0x1300, 0x1400), None);
        assert_eq!(looked(&[], 0, 0), None);
    }

    #[test]
    fn a_checks_frames_are_read_between_its_looks_and_their_pages_rest_after() {
        let (mut ranges, mut tails, mut count) = (Vec::new(), [(0u64, 0usize); 2], 0);
        // Frames on the data stack from 0x1010 to 0x1200: the page's rest is a tail.
        assert_eq!(
            close(
                (0x1010, 0x1200, 0x2000),
                &mut ranges,
                &mut tails,
                &mut count
            ),
            0x1f0
        );
        // Frames elsewhere (a shim frame on the C stack): no tail.
        assert_eq!(
            close(
                (0x5000, 0x5048, 0x5048),
                &mut ranges,
                &mut tails,
                &mut count
            ),
            0x48
        );
        assert_eq!(
            close(
                (0x9000, 0x9100, 0xa000),
                &mut ranges,
                &mut tails,
                &mut count
            ),
            0x100
        );
        // No room left: this page's rest is not read, its frames are.
        assert_eq!(
            close(
                (0xb000, 0xb100, 0xc000),
                &mut ranges,
                &mut tails,
                &mut count
            ),
            0x100
        );
        assert_eq!(
            ranges,
            [
                (0x1010, 0x1f0),
                (0x5000, 0x48),
                (0x9000, 0x100),
                (0xb000, 0x100)
            ]
        );
        assert_eq!((count, tails), (2, [(0x1200, 0xe00), (0x9100, 0xf00)]));
    }
}
