//! The two direct-mapped caches in front of an aggregator's hash tables: key -> entry, and
//! (caller entry, callee key) -> edge. Most events are answered by one probe of one of them.
//!
//! A set sized for the event paths takes 80 KB. With `threads=True` every thread has its own
//! aggregator, and a program that starts thousands of threads would keep a set for each; so a
//! set can be taken from an aggregator, which keeps a one-slot set (every lookup then misses and
//! goes to the tables: slower, never wrong), and given to another. What a set holds are places
//! in one aggregator's arrays, so a set is emptied when it is taken.

use crate::core::counters::EntryId;

/// Slots of a full key cache and edge cache (powers of two: an index is masked).
pub const KEY_SLOTS: usize = 1024;
pub const EDGE_SLOTS: usize = 2048;

/// One slot of the edge cache: the edge at `edge_at` from the entry at `caller_at` to the entry
/// at `callee_at`, whose key is `key` (places as `counters::entry_at` and `sub_at` give them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeSlot {
    pub key: usize,
    pub caller_at: usize,
    pub callee_at: usize,
    pub edge_at: usize,
}

/// An empty edge slot: no entry is at `usize::MAX`.
const NO_EDGE: EdgeSlot = EdgeSlot {
    key: 0,
    caller_at: usize::MAX,
    callee_at: usize::MAX,
    edge_at: 0,
};

/// An empty key slot: key 0 is never looked up (the event paths test for it).
const NO_KEY: (usize, EntryId) = (0, 0);

/// A set no aggregator uses, empty: what [`crate::core::aggregator::Aggregator::take_caches`] gives
/// and `put_caches` takes. It has no way to be filled, so a set cannot reach an aggregator with
/// another's places in it (the event paths follow them unchecked).
#[derive(Debug)]
pub struct EmptyCaches(Caches);

impl EmptyCaches {
    /// A new set of the size the event paths want.
    pub fn full() -> EmptyCaches {
        EmptyCaches(Caches::full())
    }

    /// Empties `c` to make it one.
    pub(crate) fn from_cleared(mut c: Caches) -> EmptyCaches {
        c.clear();
        EmptyCaches(c)
    }

    pub(crate) fn into_inner(self) -> Caches {
        self.0
    }
}

/// One aggregator's caches. The masks are the slot counts less one (the edges' shifted left by
/// 4; the fields are private and only [`Caches::with_slots`] sets them), so a masked index is
/// always in bounds.
#[derive(Debug)]
pub struct Caches {
    edges: Box<[EdgeSlot]>,
    edge_mask_x16: usize,
    keys: Box<[(usize, EntryId)]>,
    key_mask: usize,
}

impl Caches {
    /// An empty set of the size the event paths want.
    pub(crate) fn full() -> Caches {
        Caches::with_slots(KEY_SLOTS, EDGE_SLOTS)
    }

    /// An empty set of one slot each: what an aggregator keeps while another uses its set.
    pub(crate) fn minimal() -> Caches {
        Caches::with_slots(1, 1)
    }

    fn with_slots(keys: usize, edges: usize) -> Caches {
        assert!(keys.is_power_of_two() && edges.is_power_of_two());
        Caches {
            edges: vec![NO_EDGE; edges].into_boxed_slice(),
            edge_mask_x16: (edges - 1) << 4,
            keys: vec![NO_KEY; keys].into_boxed_slice(),
            key_mask: keys - 1,
        }
    }

    /// Whether this is a set of the size the event paths want (not a minimal one).
    pub fn is_full(&self) -> bool {
        self.edges.len() == EDGE_SLOTS
    }

    /// Forgets every slot.
    pub(crate) fn clear(&mut self) {
        self.edges.fill(NO_EDGE);
        self.keys.fill(NO_KEY);
    }

    /// Whether every slot is empty.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.edges.iter().all(|e| *e == NO_EDGE) && self.keys.iter().all(|k| *k == NO_KEY)
    }

    /// Where the edge slot of a call of `key` by the entry at `caller_at` is, in halves of
    /// its byte offset: the index of [`Caches::edge_index`] times 16, found without shifting
    /// (the slot size, 32, is then an address scale of 2).
    #[inline(always)]
    fn edge_offset_half(&self, caller_at: usize, key: usize) -> usize {
        const _: () = assert!(std::mem::size_of::<EdgeSlot>() == 32);
        (key ^ caller_at) & self.edge_mask_x16
    }

    #[inline(always)]
    fn edge_index(&self, caller_at: usize, key: usize) -> usize {
        // Keys are addresses of objects at least 16 bytes apart, and callers' places multiples
        // of an entry's size (48): their low bits mixed by a xor spread a caller's callees, and
        // one callee's callers, over the slots: fewer instructions a call than a multiplicative
        // hash, for a few more misses.
        self.edge_offset_half(caller_at, key) >> 4
    }

    #[inline(always)]
    fn key_index(&self, key: usize) -> usize {
        // Fibonacci hashing: the top bits of the product spread aligned addresses over the
        // slots (of a full set; a minimal one masks them to its one slot).
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - KEY_SLOTS.trailing_zeros()))
            as usize
            & self.key_mask
    }

    /// The edge slot for a call of `key` by the entry at `caller_at`.
    #[inline(always)]
    pub fn edge(&self, caller_at: usize, key: usize) -> EdgeSlot {
        let half = self.edge_offset_half(caller_at, key);
        debug_assert!(half * 2 < std::mem::size_of_val(&*self.edges));
        // SAFETY: `half` is the slot's index (masked by `edges.len() - 1`) times 16, so twice
        // it is the byte offset of a slot inside `edges`.
        unsafe { *self.edges.as_ptr().byte_add(half * 2) }
    }

    /// Stores the edge slot for a call of `key` by the entry at `caller_at`.
    #[inline(always)]
    pub(crate) fn set_edge(&mut self, slot: EdgeSlot) {
        let i = self.edge_index(slot.caller_at, slot.key);
        // SAFETY: masked by `edges.len() - 1`.
        unsafe { *self.edges.get_unchecked_mut(i) = slot };
    }

    /// The key slot for `key`: the key it holds and that key's entry.
    #[inline(always)]
    pub fn key(&self, key: usize) -> (usize, EntryId) {
        let i = self.key_index(key);
        // SAFETY: masked by `key_mask`, which is `keys.len() - 1`.
        unsafe { *self.keys.get_unchecked(i) }
    }

    /// Stores `id` as the entry of `key`.
    #[inline(always)]
    pub(crate) fn set_key(&mut self, key: usize, id: EntryId) {
        let i = self.key_index(key);
        // SAFETY: as in `key`.
        unsafe { *self.keys.get_unchecked_mut(i) = (key, id) };
    }

    /// Bytes this set takes on the heap.
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.edges) + std::mem::size_of_val(&*self.keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minimal_set_keeps_what_it_was_given_last() {
        let mut c = Caches::minimal();
        assert!(!c.is_full() && c.is_empty());
        c.set_key(0x1000, 3);
        c.set_key(0x2000, 4);
        assert_eq!(c.key(0x1000), (0x2000, 4));
        let slot = EdgeSlot {
            key: 0x3000,
            caller_at: 48,
            callee_at: 96,
            edge_at: 0,
        };
        c.set_edge(slot);
        assert_eq!(c.edge(48, 0x3000), slot);
        assert_eq!(c.edge(0, 0x10), slot, "one slot: every probe lands on it");
        c.clear();
        assert!(c.is_empty());
    }

    #[test]
    fn a_full_set_spreads_keys_and_edges() {
        let mut c = Caches::full();
        assert!(c.is_full() && c.is_empty());
        assert_eq!(c.heap_bytes(), 80 * 1024);
        for k in 1..=64usize {
            c.set_key(k * 0x40, k as EntryId);
        }
        // Fibonacci hashing puts 64 consecutive aligned keys in 64 distinct slots.
        for k in 1..=64usize {
            assert_eq!(c.key(k * 0x40), (k * 0x40, k as EntryId));
        }
        for k in 1..=64usize {
            c.set_edge(EdgeSlot {
                key: k * 0x40,
                caller_at: 48,
                callee_at: k * 48,
                edge_at: k * 64,
            });
        }
        for k in 1..=64usize {
            assert_eq!(c.edge(48, k * 0x40).callee_at, k * 48);
        }
        c.clear();
        assert!(c.is_empty());
    }
}
