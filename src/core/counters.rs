//! The counters `_lsprof` keeps for a function and, the same five, for a (caller, callee) edge,
//! with the ways a completed call is charged to them; and where an entry or an edge sits in the
//! aggregator's arrays, in bytes, as the event paths reach them.

use std::ops::{Deref, DerefMut};

/// Index of an entry in `Aggregator::entries`.
pub type EntryId = u32;

/// What is counted for a function and for a caller edge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Counters {
    /// Inclusive time, counted only at the outermost activation of a recursion.
    pub tt: i64,
    /// Inline time: inclusive time minus time spent in profiled callees.
    pub it: i64,
    /// Completed calls, recursive ones included.
    pub callcount: i64,
    /// Calls that completed while another activation of the same entry was open.
    pub reccallcount: i64,
    /// Open activations; `i64` and wrapping so mismatched events cannot overflow-panic.
    pub recursion_level: i64,
}

impl Counters {
    /// Charges a completed call (inclusive time `tt`, inline time `it`), as `_lsprof` does:
    /// inclusive time only at the outermost activation of a recursion.
    #[inline(always)]
    pub fn close(&mut self, tt: i64, it: i64) {
        self.recursion_level = self.recursion_level.wrapping_sub(1);
        // (The fences, no instruction and unlike each other, keep the two adds apart: as one
        // add of a selected value at a selected place it took registers that every cached
        // leave then saved.)
        if self.recursion_level == 0 {
            self.tt = self.tt.wrapping_add(tt);
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::Release);
        } else {
            self.reccallcount += 1;
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::Acquire);
        }
        self.it = self.it.wrapping_add(it);
        self.callcount += 1;
    }

    /// [`Counters::close`] for a call whose level was pending (see `frames::Stack`): the level
    /// was zero before it and is again, so the call was the outermost and its inclusive time
    /// is added.
    ///
    /// It ends with a compiler fence (no instruction): ending as `close` ends, the optimizer
    /// merged their updates into one add of a selected value at a selected place, two
    /// instructions and a saved register more on the cached leave of a leaf call (reordering
    /// the adds made it merge all three).
    #[inline(always)]
    pub fn close_pending(&mut self, tt: i64, it: i64) {
        self.tt = self.tt.wrapping_add(tt);
        self.it = self.it.wrapping_add(it);
        self.callcount += 1;
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }

    /// [`Counters::close`] for a call whose level was deferred (see `frames::Stack`): the level
    /// stays above zero after it, so the call is a recursive one and its inclusive time is not
    /// added.
    #[inline(always)]
    pub fn close_deferred(&mut self, it: i64) {
        self.reccallcount += 1;
        self.it = self.it.wrapping_add(it);
        self.callcount += 1;
    }

    /// Closes a call opened by a cached enter, by what that enter noted for these counters in
    /// the call's `deferred` bits (`defer` and `pending` say which bits are this side's).
    #[inline(always)]
    pub fn close_as_opened(&mut self, deferred: u8, defer: u8, pending: u8, tt: i64, it: i64) {
        if deferred & defer != 0 {
            self.close_deferred(it);
        } else if deferred & pending != 0 {
            debug_assert_eq!(self.recursion_level, 0);
            self.close_pending(tt, it);
        } else {
            self.close(tt, it);
        }
    }

    /// Adds another part's totals (its open levels are not totals).
    pub fn add_totals(&mut self, other: &Counters) {
        self.tt = self.tt.wrapping_add(other.tt);
        self.it = self.it.wrapping_add(other.it);
        self.callcount = self.callcount.wrapping_add(other.callcount);
        self.reccallcount = self.reccallcount.wrapping_add(other.reccallcount);
    }
}

/// Totals for one function (one key); it reads as its counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Entry {
    /// The key the entry was created for; its address order is cProfile's listing order.
    pub key: usize,
    pub counts: Counters,
}

/// Totals for one (caller, callee) pair, with its own recursion level as `_lsprof` keeps it;
/// it reads as its counters. (Counters first, then the two ids: the layout the event paths were
/// tuned with.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SubEntry {
    pub counts: Counters,
    pub caller: EntryId,
    pub callee: EntryId,
}

impl Deref for Entry {
    type Target = Counters;
    #[inline(always)]
    fn deref(&self) -> &Counters {
        &self.counts
    }
}

impl DerefMut for Entry {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Counters {
        &mut self.counts
    }
}

impl Deref for SubEntry {
    type Target = Counters;
    #[inline(always)]
    fn deref(&self) -> &Counters {
        &self.counts
    }
}

impl DerefMut for SubEntry {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Counters {
        &mut self.counts
    }
}

/// Byte sizes of an entry and an edge.
pub const ENTRY_SIZE: usize = std::mem::size_of::<Entry>();
pub const SUB_SIZE: usize = std::mem::size_of::<SubEntry>();

/// Where entry `id` is in `Aggregator::entries`, in bytes from its start. Calls on a stack and
/// the edge cache keep these rather than ids: the event paths then reach an entry with one
/// addition (an id takes a multiplication by the entry's size first).
#[inline(always)]
pub fn entry_at(id: EntryId) -> usize {
    id as usize * ENTRY_SIZE
}

/// Where edge `i` is in `Aggregator::subs`, in bytes (as [`entry_at`]).
#[inline(always)]
pub fn sub_at(i: u32) -> usize {
    i as usize * SUB_SIZE
}

/// No edge (no caller, or subcalls off when the call was entered), as a place: no edge is
/// that far in.
pub const NO_SUB_AT: usize = usize::MAX;

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn entries_and_edges_keep_the_layout_the_event_paths_were_tuned_for() {
        assert_eq!((ENTRY_SIZE, SUB_SIZE), (48, 48));
        assert_eq!(offset_of!(Entry, key), 0);
        assert_eq!(offset_of!(Entry, counts), 8);
        assert_eq!(offset_of!(SubEntry, counts), 0);
        assert_eq!(
            (offset_of!(SubEntry, caller), offset_of!(SubEntry, callee)),
            (40, 44)
        );
        let order = [
            offset_of!(Counters, tt),
            offset_of!(Counters, it),
            offset_of!(Counters, callcount),
            offset_of!(Counters, reccallcount),
            offset_of!(Counters, recursion_level),
        ];
        assert_eq!(order, [0, 8, 16, 24, 32]);
    }

    #[test]
    fn a_recursive_close_counts_the_call_but_not_its_inclusive_time() {
        let mut c = Counters {
            recursion_level: 2,
            ..Default::default()
        };
        c.close(10, 4);
        assert_eq!((c.tt, c.it, c.callcount, c.reccallcount), (0, 4, 1, 1));
        c.close(30, 6);
        assert_eq!((c.tt, c.it, c.callcount, c.reccallcount), (30, 10, 2, 1));
        assert_eq!(c.recursion_level, 0);
    }
}
