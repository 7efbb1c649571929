//! The storage of a call stack: a growable array of [`Context`]s kept as three pointers (its
//! start, the end of its calls, the end of its room). The cached enter and leave find the call
//! on top, and test for room and for an empty stack, by comparing pointers: a `Vec` kept its
//! length, and each of them turned it into an address (a multiplication by the element size and
//! an addition) and stored it back, about three instructions more on each event.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr;

use crate::core::aggregator::Context;

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
