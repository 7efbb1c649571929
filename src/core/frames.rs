//! A thread's call stack: its calls ([`Context`], with the bits that say which recursion levels
//! a call has not yet added), the [`Stack`] over them, and their storage, [`Frames`].
//!
//! [`Frames`] is a growable array kept as three pointers (its start, the end of its calls, the
//! end of its room): the cached enter and leave find the call on top, and test for room and for
//! an empty stack, by comparing pointers, where a `Vec`'s length would be turned into an address
//! and stored back on each event.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr;

use crate::core::counters::{EntryId, ENTRY_SIZE, NO_SUB_AT, SUB_SIZE};

/// One open call on a stack.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// Timer value when the call was entered (read last on enter).
    pub t0: i64,
    /// The key of `entry` as [`tag`] marks it: the return of this call is recognised without
    /// reading the entry, and when subcalls are on, whether it is the cached case, by one
    /// comparison with the event's key.
    pub tag: usize,
    /// Inclusive time of the callees that have completed so far.
    pub subt: i64,
    /// The call's entry, by its place in `Aggregator::entries` (`counters::entry_at`).
    pub entry_at: usize,
    /// The (caller, entry) edge opened with this call by its place in `Aggregator::subs`
    /// (`counters::sub_at`), or `NO_SUB_AT`; the matching leave charges it without a lookup.
    pub sub_at: usize,
    /// Which of this call's recursion levels (`DEFER_ENTRY`, `DEFER_SUB`, `PENDING_*`) are not
    /// yet added to its entry's and edge's counters (see [`Stack`]), and `MATCHED`.
    pub deferred: u8,
}

impl Context {
    /// The id of the call's entry.
    pub fn entry(&self) -> EntryId {
        (self.entry_at / ENTRY_SIZE) as EntryId
    }

    /// The id of the call's edge, if it has one.
    pub fn sub(&self) -> Option<u32> {
        (self.sub_at != NO_SUB_AT).then_some((self.sub_at / SUB_SIZE) as u32)
    }
}

/// The call's level on its entry is deferred.
pub const DEFER_ENTRY: u8 = 1;
/// The call's level on its edge is deferred.
pub const DEFER_SUB: u8 = 2;
/// The call's entry level is pending: it was zero, and is raised when the call stops being on
/// top (see [`Stack`]).
pub const PENDING_ENTRY: u8 = 4;
/// The call's edge level is pending.
pub const PENDING_SUB: u8 = 8;
/// Levels not yet added, on the entry and on the edge.
pub const UNADDED_ENTRY: u8 = DEFER_ENTRY | PENDING_ENTRY;
pub const UNADDED_SUB: u8 = DEFER_SUB | PENDING_SUB;
pub const PENDING: u8 = PENDING_ENTRY | PENDING_SUB;
/// The call has an edge exactly when it has a caller on the stack: what a cached leave with
/// subcalls on charges. Set when the call is pushed (the calls under it stay as long as it is
/// on the stack), and told to that leave by the call's [`tag`].
pub const MATCHED: u8 = 16;

/// What a call's tag flips in its key when the call is not [`MATCHED`].
pub const UNMATCHED: usize = 1 << (usize::BITS - 1);

/// Whether a cached leave may tell a MATCHED call by its tag alone: where event keys, addresses
/// of code objects and method definitions, never have [`UNMATCHED`] set (see
/// `stop_cached_as`).
pub const TAG_ALONE: bool = cfg!(target_arch = "x86_64");

/// The tag of a call of `key` with these `deferred` bits: the key itself when the call is
/// [`MATCHED`], else the key with its top bit flipped, which no event's key equals where keys
/// never have that bit set ([`TAG_ALONE`]).
#[inline(always)]
pub fn tag(key: usize, deferred: u8) -> usize {
    if deferred & MATCHED != 0 {
        key
    } else {
        key ^ UNMATCHED
    }
}

/// [`MATCHED`] for a call with edge `sub_at` pushed on a stack of `len` calls.
#[inline(always)]
pub fn matched(sub_at: usize, len: usize) -> u8 {
    if (sub_at != NO_SUB_AT) == (len != 0) {
        MATCHED
    } else {
        0
    }
}

/// A coroutine's open call while it is suspended, and when it was suspended.
#[derive(Debug, Clone, Copy)]
pub struct Suspended {
    pub ctx: Context,
    pub at: i64,
}

/// The shadow call stack of one thread of execution. Its storage is reused, so pushes and pops
/// do not allocate once it has reached the program's maximum depth.
///
/// Deferred recursion levels: `_lsprof` adds one to an entry's (and an edge's) recursion level
/// on every enter and takes it off on every leave, a read-modify-write of the same counter per
/// event that a loop or a recursion calling one function turns into a chain of dependent memory
/// updates, a large share of cProfile's overhead. The cached enter of a call whose
/// entry is already open (its level above zero) leaves the level as it is and marks the call;
/// the cached leave of a marked call then knows the level stays above zero after it (it is the
/// `else` of `_lsprof`'s test) and changes nothing either. Every other operation that reads a
/// level or pops a call first adds the marked calls' levels (`Aggregator::settle`), after
/// which the counters are exactly `_lsprof`'s. `settled` bounds that walk: the calls below it
/// (below the top if smaller) have no deferred level (the top may be pending). It is kept in
/// bytes from the bottom call's place, a call's index times its size: what the cached enter
/// has at hand with no division.
///
/// Pending levels: most calls in a loop are leaves (a builtin, a small method) whose entry
/// was not open. The cached enter of such a call does not raise the level from zero either: it
/// marks the call pending. Only the call on top can be pending; a call pushed above it first
/// raises its levels (a nested call needs to see its caller open), so the cached leave of a
/// call still pending knows nothing happened since its enter: the level is still zero, the
/// call was the outermost, and no level is stored on either side of a leaf call.
#[derive(Debug, Default)]
#[repr(C)]
pub struct Stack {
    pub frames: Frames,
    pub settled: usize,
}

impl Stack {
    /// Stores the enter time of the call just opened; a no-op if the stack was emptied meanwhile.
    #[inline]
    pub fn set_t0(&mut self, depth: usize, t0: i64) {
        if let Some(c) = self.frames.get_mut(depth) {
            c.t0 = t0;
        }
    }

    /// Stores the enter time of the call on top.
    #[inline]
    pub fn set_top_t0(&mut self, t0: i64) {
        if let Some(c) = self.frames.last_mut() {
            c.t0 = t0;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn depth(&self) -> usize {
        self.frames.len()
    }

    pub fn top_entry(&self) -> Option<EntryId> {
        self.frames.last().map(|c| c.entry())
    }
}

/// See the module documentation. Dereferences to the slice of its calls, bottom first.
#[repr(C)]
pub struct Frames {
    /// One past the call on top (`base` when empty).
    end: *mut Context,
    /// One past the room: the stack is full when `end` is here.
    limit: *mut Context,
    /// The bottom call's place.
    base: *mut Context,
    /// Owns the allocation. Its length stays 0: the calls live in its spare capacity, counted
    /// by `end` (a `Context` needs no drop).
    buf: Vec<Context>,
}

// SAFETY: the pointers point into the heap allocation `buf` owns, which moves with this value
// and which nothing else refers to: sending a `Frames` sends all of it.
unsafe impl Send for Frames {}

impl Default for Frames {
    fn default() -> Self {
        Frames::with_capacity(0)
    }
}

impl fmt::Debug for Frames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Frames {
    /// An empty stack with room for `n` calls without growing.
    pub fn with_capacity(n: usize) -> Self {
        let mut buf: Vec<Context> = Vec::with_capacity(n);
        let base = buf.as_mut_ptr();
        // SAFETY: one past the allocation's last element at most.
        let limit = unsafe { base.add(buf.capacity()) };
        Frames {
            end: base,
            limit,
            base,
            buf,
        }
    }

    /// The place after the call on top: the new call's, when there is room.
    #[inline(always)]
    pub fn end(&self) -> *mut Context {
        self.end
    }

    /// The bottom call's place (`end()` when the stack is empty).
    #[inline(always)]
    pub fn base(&self) -> *mut Context {
        self.base
    }

    /// Whether a call can be pushed without growing.
    #[inline(always)]
    pub fn has_room(&self) -> bool {
        self.end != self.limit
    }

    /// Moves the end of the calls to `end`: a push of a call written at the old end, or a pop.
    ///
    /// # Safety
    /// `end` lies within `base()..=` the end of the room, and every place below it holds an
    /// initialized call.
    #[inline(always)]
    pub unsafe fn set_end(&mut self, end: *mut Context) {
        self.end = end;
    }

    /// How many calls are on the stack. (Read from the pointers, with no slice made: a call
    /// may be borrowed through its place meanwhile, see `Aggregator::enter_cached_as`.)
    #[inline(always)]
    pub fn len(&self) -> usize {
        // SAFETY: both in one allocation, `end` at or above `base`.
        unsafe { self.end.offset_from(self.base) as usize }
    }

    /// [`Frames::len`] times the size of a call: the distance from the bottom call's place
    /// to the end, with no division.
    #[inline(always)]
    pub fn byte_len(&self) -> usize {
        self.end as usize - self.base as usize
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.end == self.base
    }

    /// How many calls the stack holds before it grows.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    pub fn push(&mut self, c: Context) {
        if !self.has_room() {
            self.grow();
        }
        // SAFETY: below the end of the room (just made sure of); the place is then initialized.
        unsafe {
            self.end.write(c);
            self.end = self.end.add(1);
        }
    }

    pub fn pop(&mut self) -> Option<Context> {
        if self.end == self.base {
            return None;
        }
        // SAFETY: the stack is not empty: the place below the end holds its top call.
        unsafe {
            self.end = self.end.sub(1);
            Some(self.end.read())
        }
    }

    pub fn clear(&mut self) {
        self.end = self.base;
    }

    /// Doubles the room (to 8 calls at least), keeping the calls.
    #[cold]
    fn grow(&mut self) {
        let len = self.len();
        let mut buf: Vec<Context> = Vec::with_capacity((self.capacity() * 2).max(8));
        // SAFETY: the `len` calls from `base` are initialized, and the new allocation has room
        // for them; the two do not overlap.
        unsafe { ptr::copy_nonoverlapping(self.base, buf.as_mut_ptr(), len) };
        let base = buf.as_mut_ptr();
        // SAFETY: within the new allocation (len < its capacity), one past it at most.
        unsafe {
            self.end = base.add(len);
            self.limit = base.add(buf.capacity());
        }
        self.base = base;
        // (The old allocation goes here, no pointer into it left.)
        self.buf = buf;
    }
}

impl Deref for Frames {
    type Target = [Context];

    fn deref(&self) -> &[Context] {
        // SAFETY: the places from `base` to `end` hold initialized calls, in one allocation.
        unsafe { std::slice::from_raw_parts(self.base, self.end.offset_from(self.base) as usize) }
    }
}

impl DerefMut for Frames {
    fn deref_mut(&mut self) -> &mut [Context] {
        // SAFETY: as in `deref`; borrowed mutably through `self`.
        unsafe {
            std::slice::from_raw_parts_mut(self.base, self.end.offset_from(self.base) as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(t0: i64) -> Context {
        Context {
            t0,
            tag: 0,
            subt: 0,
            entry_at: 0,
            sub_at: 0,
            deferred: 0,
        }
    }

    #[test]
    fn pushes_and_pops_across_growth_as_a_vec_does() {
        let mut frames = Frames::default();
        let mut model: Vec<i64> = Vec::new();
        assert!(frames.is_empty() && !frames.has_room());
        for i in 0..100 {
            frames.push(call(i));
            model.push(i);
            if i % 3 == 0 {
                assert_eq!(frames.pop().map(|c| c.t0), model.pop());
            }
            assert_eq!(frames.iter().map(|c| c.t0).collect::<Vec<_>>(), model);
            assert_eq!(frames.last().map(|c| c.t0), model.last().copied());
            assert!(frames.capacity() >= frames.len());
            // SAFETY: pointers of one allocation.
            let span = unsafe { frames.end().offset_from(frames.base()) };
            assert_eq!(span, model.len() as isize);
            assert_eq!(
                frames.byte_len(),
                model.len() * std::mem::size_of::<Context>()
            );
        }
        frames.clear();
        assert!(frames.is_empty() && frames.pop().is_none() && frames.has_room());
    }
}
