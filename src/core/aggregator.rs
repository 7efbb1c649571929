//! The call-tree aggregator: per-function and per-(caller, callee) counters fed by enter/leave
//! events, with the accounting rules of CPython's `_lsprof` (so the numbers come out identical).
//!
//! Entries are identified by an opaque `usize` key (the address of a code object or of a
//! builtin's `PyMethodDef`) and times are integers in timer units read by the caller, so the
//! accounting is tested with `cargo test` alone. A call stack (`frames::Stack`, one per thread)
//! is kept apart from the totals it feeds (`Aggregator::entries`/`subs`).

use std::hash::BuildHasher;

use hashbrown::{hash_table, HashTable};
use rustc_hash::FxBuildHasher;

use crate::core::counters::{
    entry_at, sub_at, Entry, EntryId, SubEntry, ENTRY_SIZE, NO_SUB_AT, SUB_SIZE,
};
use crate::core::frames::{
    matched, tag, Context, Stack, Suspended, DEFER_ENTRY, DEFER_SUB, MATCHED, PENDING,
    PENDING_ENTRY, PENDING_SUB, TAG_ALONE, UNADDED_ENTRY, UNADDED_SUB, UNMATCHED,
};
use crate::core::lookup_cache::{Caches, EdgeSlot, EmptyCaches};

/// A cached enter's change to one recursion level (see [`Stack`]): deferred when the level is
/// above zero, pending at zero, else (below zero, after unmatched events) raised. A call with
/// a deferred level is pushed on `stack`, so `settled` is brought down to it where the deferral
/// is decided, not by a test of the bits after both levels are opened (the common case, both
/// pending, then tests nothing).
#[inline(always)]
fn open_level(level: &mut i64, deferred: &mut u8, defer: u8, pending: u8, stack: &mut Stack) {
    let l = *level;
    // Zero first: a leaf called in a loop, the most frequent call.
    if l == 0 {
        *deferred |= pending;
    } else if l > 0 {
        *deferred |= defer;
        // (The new call's index: it is not pushed yet.)
        stack.settled = stack.settled.min(stack.frames.byte_len());
    } else {
        std::hint::cold_path();
        *level = l.wrapping_add(1);
    }
}

/// Totals for every function and caller edge seen, in creation order. `repr(C)`, with what
/// every event reads first (see `profiler::State`).
#[derive(Debug)]
#[repr(C)]
pub struct Aggregator {
    pub entries: Vec<Entry>,
    pub subs: Vec<SubEntry>,
    /// Recently seen keys and their entries, and recently used edges by (caller entry, callee
    /// key); most events are answered here. A caller alternating between a few callees finds
    /// each edge, and the callee's entry with it, in one probe keyed by what the event gives,
    /// so the call's updates need no lookup of the key first. A key is never reused while its
    /// entry exists (the entry holds the code object), and `clear` empties both.
    caches: Caches,
    /// Whether caller/callee pairs are recorded (cProfile's `subcalls`).
    pub subcalls: bool,
    /// Entry ids by key (the key is read from the entry).
    index: HashTable<EntryId>,
    /// Edge ids by (caller, callee), read from the edge.
    sub_index: HashTable<u32>,
}

/// Makes room for one more element: doubling up to `DOUBLE_UNTIL` elements, by an eighth
/// beyond. These arrays only grow when a new function or edge is first seen (never per event),
/// and a big profile should not carry up to twice its size in spare capacity; a small one's
/// spare room is small anyway, and growing by an eighth from the start copied the arrays a
/// dozen times over while a program's first functions were seen.
pub fn reserve_one<T>(v: &mut Vec<T>) {
    const DOUBLE_UNTIL: usize = 4096;
    if v.len() == v.capacity() {
        let n = v.len();
        v.reserve_exact(if n < DOUBLE_UNTIL { n.max(8) } else { n / 8 });
    }
}

fn key_hash(key: usize) -> u64 {
    FxBuildHasher.hash_one(key)
}

fn edge_hash(caller: EntryId, callee: EntryId) -> u64 {
    FxBuildHasher.hash_one((caller, callee))
}

impl Default for Aggregator {
    fn default() -> Self {
        Aggregator::new(true)
    }
}

impl Aggregator {
    pub fn new(subcalls: bool) -> Self {
        Aggregator::with_caches(subcalls, Caches::full())
    }

    /// An aggregator with minimal caches, until it is given a full set
    /// ([`Aggregator::put_caches`]).
    pub fn without_caches(subcalls: bool) -> Self {
        Aggregator::with_caches(subcalls, Caches::minimal())
    }

    fn with_caches(subcalls: bool, caches: Caches) -> Self {
        Aggregator {
            subcalls,
            caches,
            entries: Vec::new(),
            subs: Vec::new(),
            index: HashTable::new(),
            sub_index: HashTable::new(),
        }
    }

    /// Gives up this aggregator's caches, emptied (they held places in its own arrays), for
    /// another aggregator's use; a minimal set takes their place.
    pub fn take_caches(&mut self) -> EmptyCaches {
        EmptyCaches::from_cleared(std::mem::replace(&mut self.caches, Caches::minimal()))
    }

    /// Makes `c` this aggregator's caches.
    pub fn put_caches(&mut self, c: EmptyCaches) {
        self.caches = c.into_inner();
    }

    /// Bytes its caches take on the heap.
    pub fn cache_bytes(&self) -> usize {
        self.caches.heap_bytes()
    }

    /// Whether this aggregator has a full set of caches (see [`crate::core::lookup_cache`]).
    pub fn has_full_caches(&self) -> bool {
        self.caches.is_full()
    }

    /// The entry for `key`, if one exists.
    #[inline]
    pub fn get(&mut self, key: usize) -> Option<EntryId> {
        let (k, id) = self.caches.key(key);
        if k == key && key != 0 {
            return Some(id);
        }
        let id = self.find(key)?;
        self.caches.set_key(key, id);
        Some(id)
    }

    /// The entry for `key`, without touching the cache.
    pub fn find(&self, key: usize) -> Option<EntryId> {
        let entries = &self.entries;
        self.index
            .find(key_hash(key), |&id| entries[id as usize].key == key)
            .copied()
    }

    /// The entry for `key`, made if it has none, and whether it was made: one probe of the
    /// index where [`Aggregator::get`] then [`Aggregator::insert`] take two.
    #[cold]
    pub fn get_or_insert(&mut self, key: usize) -> (EntryId, bool) {
        let (k, id) = self.caches.key(key);
        if k == key && key != 0 {
            return (id, false);
        }
        let Aggregator {
            entries,
            index,
            caches,
            ..
        } = self;
        let found = index.entry(
            key_hash(key),
            |&id| entries[id as usize].key == key,
            |&i| key_hash(entries[i as usize].key),
        );
        let (id, made) = match found {
            hash_table::Entry::Occupied(o) => (*o.get(), false),
            hash_table::Entry::Vacant(v) => {
                let id = entries.len() as EntryId;
                reserve_one(entries);
                entries.push(Entry {
                    key,
                    ..Default::default()
                });
                v.insert(id);
                (id, true)
            }
        };
        caches.set_key(key, id);
        (id, made)
    }

    /// Creates the entry for a key that has none yet.
    #[cold]
    pub fn insert(&mut self, key: usize) -> EntryId {
        debug_assert!(self.find(key).is_none());
        let id = self.entries.len() as EntryId;
        reserve_one(&mut self.entries);
        self.entries.push(Entry {
            key,
            ..Default::default()
        });
        let entries = &self.entries;
        self.index
            .insert_unique(key_hash(key), id, |&i| key_hash(entries[i as usize].key));
        self.caches.set_key(key, id);
        id
    }

    /// The edge from `caller` to `callee` if the edge cache has it.
    #[inline(always)]
    fn cached_sub(&self, caller: EntryId, callee: EntryId) -> Option<u32> {
        let key = self.entries.get(callee as usize)?.key;
        let (caller_at, callee_at) = (entry_at(caller), entry_at(callee));
        let e = self.caches.edge(caller_at, key);
        (e.caller_at == caller_at && e.callee_at == callee_at)
            .then_some(e.edge_at / SUB_SIZE)
            .filter(|&i| i < self.subs.len())
            .map(|i| i as u32)
    }

    #[inline]
    fn sub_entry(&mut self, caller: EntryId, callee: EntryId, create: bool) -> Option<u32> {
        if let Some(i) = self.cached_sub(caller, callee) {
            return Some(i);
        }
        self.sub_entry_slow(caller, callee, create)
    }

    #[cold]
    fn sub_entry_slow(&mut self, caller: EntryId, callee: EntryId, create: bool) -> Option<u32> {
        let subs = &self.subs;
        let found = self
            .sub_index
            .find(edge_hash(caller, callee), |&i| {
                let s = &subs[i as usize];
                s.caller == caller && s.callee == callee
            })
            .copied();
        let i = match found {
            Some(i) => i,
            None if create => {
                let i = self.subs.len() as u32;
                reserve_one(&mut self.subs);
                self.subs.push(SubEntry {
                    caller,
                    callee,
                    ..Default::default()
                });
                let subs = &self.subs;
                self.sub_index
                    .insert_unique(edge_hash(caller, callee), i, |&j| {
                        let s = &subs[j as usize];
                        edge_hash(s.caller, s.callee)
                    });
                i
            }
            None => return None,
        };
        if let Some(&Entry { key, .. }) = self.entries.get(callee as usize) {
            let caller_at = entry_at(caller);
            self.caches.set_edge(EdgeSlot {
                key,
                caller_at,
                callee_at: entry_at(callee),
                edge_at: sub_at(i),
            });
        }
        Some(i)
    }

    /// Opens a call of `entry` on `stack`, its edge from `caller` if given (a task's coroutine
    /// charged to the one that created it), else from the call on top of the stack (whose time
    /// accounting is the same either way). The caller then reads the timer and stores it with
    /// [`Stack::set_top_t0`], because `_lsprof` reads the clock after all bookkeeping on enter
    /// (a Python timer is read before, see `events::enter_after_timer`).
    #[inline]
    pub fn enter(&mut self, stack: &mut Stack, entry: EntryId, caller: Option<EntryId>) {
        let parent = caller.or_else(|| stack.frames.last().map(|c| c.entry()));
        self.open(stack, entry, parent);
    }

    /// Pushes a call of `entry`, its edge (if subcalls are on) from `caller`.
    #[inline(always)]
    fn open(&mut self, stack: &mut Stack, entry: EntryId, caller: Option<EntryId>) {
        self.raise_pending(stack);
        let e = &mut self.entries[entry as usize];
        e.recursion_level = e.recursion_level.wrapping_add(1);
        let key = e.key;
        let mut sub = NO_SUB_AT;
        if self.subcalls {
            if let Some(caller) = caller {
                if let Some(i) = self.sub_entry(caller, entry, true) {
                    let s = &mut self.subs[i as usize];
                    s.recursion_level = s.recursion_level.wrapping_add(1);
                    sub = sub_at(i);
                }
            }
        }
        let deferred = matched(sub, stack.frames.len());
        stack.frames.push(Context {
            t0: 0,
            tag: tag(key, deferred),
            subt: 0,
            entry_at: entry_at(entry),
            sub_at: sub,
            deferred,
        });
    }

    /// The entry at `at`.
    ///
    /// # Safety
    /// `at` is [`entry_at`] of an entry that exists.
    #[inline(always)]
    unsafe fn entry_at_mut(&mut self, at: usize) -> &mut Entry {
        debug_assert!(at.is_multiple_of(ENTRY_SIZE) && at / ENTRY_SIZE < self.entries.len());
        // SAFETY: inside the array, at an element's start (function contract).
        unsafe { &mut *self.entries.as_mut_ptr().byte_add(at) }
    }

    /// The edge at `at`.
    ///
    /// # Safety
    /// `at` is [`sub_at`] of an edge that exists.
    #[inline(always)]
    unsafe fn sub_at_mut(&mut self, at: usize) -> &mut SubEntry {
        debug_assert!(at.is_multiple_of(SUB_SIZE) && at / SUB_SIZE < self.subs.len());
        // SAFETY: as in `entry_at_mut`.
        unsafe { &mut *self.subs.as_mut_ptr().byte_add(at) }
    }

    /// Whether the places `ctx` names are this aggregator's entry and edge (or no edge, and then
    /// no edge level unadded): true of every call on a stack this aggregator keeps (see
    /// [`Aggregator::enter_cached_as`]), tested where a call's places are followed outside the
    /// event paths.
    fn places_are_mine(&self, ctx: &Context) -> bool {
        let entry_ok = ctx.entry_at.is_multiple_of(ENTRY_SIZE)
            && ctx.entry_at / ENTRY_SIZE < self.entries.len();
        // A level deferred or pending on an edge is one of a call that has an edge: followed
        // with no test by `add_levels_own`.
        let sub_ok = if ctx.sub_at == NO_SUB_AT {
            ctx.deferred & UNADDED_SUB == 0
        } else {
            ctx.sub_at.is_multiple_of(SUB_SIZE) && ctx.sub_at / SUB_SIZE < self.subs.len()
        };
        entry_ok && sub_ok
    }

    /// [`Aggregator::enter`] for the common case only, changing nothing and returning false
    /// otherwise: the caller on top (if any) called `key` before and the edge cache still has
    /// the edge (which names the callee's entry), or with no caller, `key` is in the lookup
    /// cache; and the stack has room. Those tests come first and the updates need no call, so
    /// the profiler's hot path can be a leaf function. (A cached edge or key means its entries
    /// exist.) `now` is read once the tests have passed and is the new call's `t0` (`_lsprof`
    /// reads the clock after the bookkeeping on enter; only the stores of the push come after
    /// it here). It is given the new call's depth (its index on the stack).
    ///
    /// # Safety
    /// Every call on `stack` was pushed by this aggregator since its last `clear` (the calls of
    /// a stack name entries and edges by their places, followed here with no bounds test). On
    /// x86_64 ([`TAG_ALONE`]), no key given to this aggregator has its top bit set (the
    /// profiler's are user-space addresses of code objects and method definitions).
    #[inline(always)]
    pub unsafe fn enter_cached(
        &mut self,
        stack: &mut Stack,
        key: usize,
        now: impl FnOnce(usize) -> i64,
    ) -> bool {
        // SAFETY: the same contract.
        unsafe { self.enter_cached_as(stack, key, now, self.subcalls) }
    }

    /// [`Aggregator::enter_cached`] as if `subcalls` were the aggregator's flag: a caller that
    /// knows the flag passes it as a constant, and its test goes.
    ///
    /// # Safety
    /// As for [`Aggregator::enter_cached`].
    #[inline(always)]
    pub unsafe fn enter_cached_as(
        &mut self,
        stack: &mut Stack,
        key: usize,
        now: impl FnOnce(usize) -> i64,
        subcalls: bool,
    ) -> bool {
        if !stack.frames.has_room() {
            return false;
        }
        // Where the new call goes, and the caller just below it (see `Frames`). Nothing here
        // grows the stack, so it stays valid.
        let end = stack.frames.end();
        // SAFETY: on a stack that is not empty the place below `end` holds the top call.
        let top = (end != stack.frames.base()).then(|| unsafe { &mut *end.sub(1) });
        // Once the caches have answered, nothing can fail. The caller stops being on top (its
        // pending levels are raised first), then the new call's levels: a level already above
        // zero is left as it is (see `Stack`), stored only when it moves.
        match top {
            Some(top) if subcalls => {
                let slot = self.caches.edge(top.entry_at, key);
                if slot.key != key || slot.caller_at != top.entry_at {
                    return false;
                }
                // SAFETY: `top` is a call of this aggregator's (function contract).
                unsafe { self.raise_pending_of(top) };
                // A cached edge is a real one: the call has both a caller and an edge.
                let mut deferred = MATCHED;
                // SAFETY: the caches only name entries and edges that exist: a slot is written
                // when its entry or edge is made or found, neither array ever shrinks but in
                // `clear`, which empties both caches too.
                let s = unsafe { self.sub_at_mut(slot.edge_at) };
                open_level(
                    &mut s.recursion_level,
                    &mut deferred,
                    DEFER_SUB,
                    PENDING_SUB,
                    stack,
                );
                // SAFETY: as above for the callee; `end` and the room were found above.
                unsafe {
                    self.push_opened(stack, end, key, slot.callee_at, slot.edge_at, deferred, now)
                };
            }
            top => {
                let (k, id) = self.caches.key(key);
                // (An empty slot holds key 0.)
                if k != key || key == 0 {
                    return false;
                }
                let deferred = if let Some(top) = top {
                    // SAFETY: as above.
                    unsafe { self.raise_pending_of(top) };
                    // (A caller and no edge: subcalls are off.)
                    0
                } else {
                    MATCHED
                };
                // SAFETY: a cached key names an entry that exists (as above for the edges);
                // `end` and the room were found above.
                unsafe {
                    self.push_opened(stack, end, key, entry_at(id), NO_SUB_AT, deferred, now)
                };
            }
        }
        true
    }

    /// The end of [`Aggregator::enter_cached_as`] once its caches have answered, written out
    /// in each of its cases (the constants of each fold in, and no value is merged from two
    /// places: fewer registers). Opens the level of the entry at `at` and pushes the call at
    /// `end`.
    ///
    /// # Safety
    /// `at` is the place of an entry that exists and `sub_at` of an edge that does (or
    /// `NO_SUB_AT`); `end` is `stack`'s place after its last call (`Frames::end`), and the
    /// stack has room.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn push_opened(
        &mut self,
        stack: &mut Stack,
        end: *mut Context,
        key: usize,
        at: usize,
        sub_at: usize,
        mut deferred: u8,
        now: impl FnOnce(usize) -> i64,
    ) {
        // SAFETY: the entry exists (function contract).
        let e = unsafe { self.entry_at_mut(at) };
        // (A call only pending is on top, where `settle` looks anyway: `settled` bounds the
        // deferred ones.)
        open_level(
            &mut e.recursion_level,
            &mut deferred,
            DEFER_ENTRY,
            PENDING_ENTRY,
            stack,
        );
        let ctx = Context {
            // (The depth is read only where a timeline records it: otherwise it folds away.)
            t0: now(stack.frames.len()),
            tag: tag(key, deferred),
            subt: 0,
            entry_at: at,
            sub_at,
            deferred,
        };
        // SAFETY: `end` is the place after the last call, and there is room (function
        // contract): writing it then moving the end past it is what `push` does without its
        // growth path.
        unsafe {
            end.write(ctx);
            stack.frames.set_end(end.add(1));
        }
    }

    /// [`Aggregator::stop`] for the common case only, changing nothing and returning None
    /// otherwise: the leave of `key` is that of the call on top of `stack`, and its edge (if
    /// any) was opened with it. Then `now` is read, given the call's depth (as in
    /// [`Aggregator::enter_cached`]: a timeline can record the event there, before the call is
    /// closed), and the call closed at that time, which is returned.
    ///
    /// # Safety
    /// As for [`Aggregator::enter_cached`].
    #[inline(always)]
    pub unsafe fn stop_cached(
        &mut self,
        stack: &mut Stack,
        key: usize,
        now: impl FnOnce(usize) -> i64,
    ) -> Option<i64> {
        // SAFETY: the same contract.
        unsafe { self.stop_cached_as(stack, key, now, self.subcalls) }
    }

    /// [`Aggregator::stop_cached`] as if `subcalls` were the aggregator's flag (see
    /// [`Aggregator::enter_cached_as`]).
    ///
    /// # Safety
    /// As for [`Aggregator::enter_cached`].
    #[inline(always)]
    pub unsafe fn stop_cached_as(
        &mut self,
        stack: &mut Stack,
        key: usize,
        now: impl FnOnce(usize) -> i64,
        subcalls: bool,
    ) -> Option<i64> {
        let base = stack.frames.base();
        let end = stack.frames.end();
        if end == base {
            return None;
        }
        // The call on top, by its place (see `Frames`). Nothing below pushes, so it stays
        // valid.
        // SAFETY: the stack is not empty: the place below its end holds its top call.
        let top = unsafe { end.sub(1) };
        // SAFETY: `top` points to an initialized element (above).
        let Context {
            tag: top_tag,
            deferred,
            entry_at,
            sub_at,
            ..
        } = unsafe { *top };
        // An edge is charged when subcalls are on and a caller stays on the stack (as in
        // `stop`); the case where the call has one exactly when one is charged is the cached
        // one: with subcalls on, a MATCHED call of `key`, which its tag tells in one test.
        if subcalls {
            // The tag alone tells it where no key has its top bit set: on x86_64, where keys
            // are user-space addresses (the upper half is the kernel's; linear address masking
            // keeps bit 63 too). Elsewhere (aarch64 puts tags in a pointer's top byte) a key
            // could equal a call's flipped tag, and the bit is tested as well.
            debug_assert!(!TAG_ALONE || key & UNMATCHED == 0);
            if top_tag != key || (!TAG_ALONE && deferred & MATCHED == 0) {
                return None;
            }
        } else if tag(top_tag, deferred) != key || sub_at != NO_SUB_AT {
            return None;
        }
        // The tests are passed: from here on nothing can fail. (The depth is read only where a
        // timeline records it: otherwise it folds away.)
        let t = now(stack.frames.len() - 1);
        // SAFETY: as above; the stack is unchanged since. Read after the clock, not kept from
        // before it, for the same reason as `top`.
        let (t0, subt) = unsafe { ((*top).t0, (*top).subt) };
        let tt = t.wrapping_sub(t0);
        let it = tt.wrapping_sub(subt);
        // SAFETY: the pop of the top call (a `Context` needs no drop).
        unsafe { stack.frames.set_end(top) };
        // SAFETY: the call is this aggregator's (function contract): its entry exists.
        let e = unsafe { self.entry_at_mut(entry_at) };
        e.close_as_opened(deferred, DEFER_ENTRY, PENDING_ENTRY, tt, it);
        // Whether a caller stays on the stack: with subcalls on, a MATCHED call has an edge
        // exactly when it has a caller (see `matched`), and the edge, in a register anyway,
        // tells it; comparing with the stack's bottom kept one more value live to here (a
        // register saved on every cached leave).
        let has_caller = if subcalls {
            sub_at != NO_SUB_AT
        } else {
            top != base
        };
        debug_assert_eq!(has_caller, top != base);
        if has_caller {
            // SAFETY: a call below the top: the place below `top` holds it.
            let parent = unsafe { &mut *top.sub(1) };
            parent.subt = parent.subt.wrapping_add(tt);
            if subcalls {
                // SAFETY: as for the entry.
                let s = unsafe { self.sub_at_mut(sub_at) };
                s.close_as_opened(deferred, DEFER_SUB, PENDING_SUB, tt, it);
            }
        }
        Some(t)
    }

    /// Closes the top call of `stack` at time `now`, charging it to `entry`. As in `_lsprof`,
    /// `entry` is the one named by the leave event, which need not be the one the context was
    /// opened for (events of several threads share one stack on 3.12+).
    #[inline(always)]
    pub fn stop(&mut self, stack: &mut Stack, entry: EntryId, now: i64) {
        self.settle(stack);
        let Some(ctx) = stack.frames.pop() else {
            return;
        };
        let tt = now.wrapping_sub(ctx.t0);
        let it = tt.wrapping_sub(ctx.subt);
        let parent = stack.frames.last_mut().map(|p| {
            p.subt = p.subt.wrapping_add(tt);
            p.entry()
        });
        let e = &mut self.entries[entry as usize];
        e.close(tt, it);
        if self.subcalls {
            if let Some(caller) = parent {
                // The edge opened with this call, unless the leave names another function.
                let found = match ctx.sub() {
                    Some(i) if entry == ctx.entry() => Some(i),
                    _ => self.sub_entry(caller, entry, false),
                };
                if let Some(i) = found {
                    let s = &mut self.subs[i as usize];
                    s.close(tt, it);
                }
            }
        }
    }

    /// Sets aside the top call (a coroutine that awaits) at `now`: its caller is charged the
    /// time of this run, and the call stops counting as active for recursion until resumed.
    pub fn suspend(&mut self, stack: &mut Stack, now: i64) -> Option<Suspended> {
        self.settle(stack);
        let ctx = stack.frames.pop()?;
        if let Some(p) = stack.frames.last_mut() {
            p.subt = p.subt.wrapping_add(now.wrapping_sub(ctx.t0));
        }
        let e = &mut self.entries[ctx.entry() as usize];
        e.recursion_level = e.recursion_level.wrapping_sub(1);
        if let Some(i) = ctx.sub() {
            let s = &mut self.subs[i as usize];
            s.recursion_level = s.recursion_level.wrapping_sub(1);
        }
        Some(Suspended { ctx, at: now })
    }

    /// Puts a suspended call back on top of `stack` at `now`. The time it was suspended is
    /// not its own (added to its callees' share), and the caller it resumes under is charged
    /// only from now on: `stop` and `suspend` charge the caller `now - t0`, so the span so far
    /// is taken off in advance.
    pub fn resume(&mut self, stack: &mut Stack, s: Suspended, now: i64) {
        self.raise_pending(stack);
        let mut ctx = s.ctx;
        // Resumed under whatever caller is on top now (or none).
        ctx.deferred = ctx.deferred & !MATCHED | matched(ctx.sub_at, stack.frames.len());
        ctx.tag = tag(self.entries[ctx.entry() as usize].key, ctx.deferred);
        ctx.subt = ctx.subt.wrapping_add(now.wrapping_sub(s.at));
        if let Some(p) = stack.frames.last_mut() {
            p.subt = p.subt.wrapping_sub(now.wrapping_sub(ctx.t0));
        }
        let e = &mut self.entries[ctx.entry() as usize];
        e.recursion_level = e.recursion_level.wrapping_add(1);
        if let Some(i) = ctx.sub() {
            let sub = &mut self.subs[i as usize];
            sub.recursion_level = sub.recursion_level.wrapping_add(1);
        }
        stack.frames.push(ctx);
    }

    /// Adds the deferred recursion levels of the calls on `stack` to their counters, after
    /// which every level is `_lsprof`'s (see [`Stack`]). Cheap when nothing is deferred.
    #[inline]
    pub fn settle(&mut self, stack: &mut Stack) {
        if stack.settled < stack.frames.byte_len() {
            self.settle_from(stack);
        } else {
            self.raise_pending(stack);
        }
    }

    #[cold]
    fn settle_from(&mut self, stack: &mut Stack) {
        let start = stack.settled / std::mem::size_of::<Context>();
        for ctx in &mut stack.frames[start..] {
            self.add_levels(ctx, UNADDED_ENTRY | UNADDED_SUB);
        }
        stack.settled = stack.frames.byte_len();
    }

    /// Adds the levels of `ctx` that `bits` select and are not yet added, and marks them added.
    /// (A call naming places this aggregator does not have is left as it is.)
    #[inline(always)]
    fn add_levels(&mut self, ctx: &mut Context, bits: u8) {
        if self.places_are_mine(ctx) {
            // SAFETY: tested just above.
            unsafe { self.add_levels_own(ctx, bits) };
        }
    }

    /// [`Aggregator::add_levels`] for a call known to be this aggregator's.
    ///
    /// # Safety
    /// `ctx` names an entry and an edge (or none) of this aggregator's, and has no edge level
    /// unadded unless it names an edge ([`Aggregator::places_are_mine`] tests both).
    #[inline(always)]
    unsafe fn add_levels_own(&mut self, ctx: &mut Context, bits: u8) {
        let todo = ctx.deferred & bits;
        if todo & UNADDED_ENTRY != 0 {
            // SAFETY: the entry exists (function contract).
            let e = unsafe { self.entry_at_mut(ctx.entry_at) };
            e.recursion_level = e.recursion_level.wrapping_add(1);
        }
        // A level is deferred or pending on an edge only for a call that has one (the cached
        // enter sets those bits only with an edge from its cache; see the contract).
        if todo & UNADDED_SUB != 0 {
            debug_assert!(ctx.sub_at != NO_SUB_AT);
            // SAFETY: as for the entry.
            let s = unsafe { self.sub_at_mut(ctx.sub_at) };
            s.recursion_level = s.recursion_level.wrapping_add(1);
        }
        ctx.deferred &= !todo;
    }

    /// Raises the pending levels of the call on top, before a call is pushed above it.
    #[inline(always)]
    fn raise_pending(&mut self, stack: &mut Stack) {
        if let Some(top) = stack.frames.last_mut() {
            if top.deferred & PENDING != 0 {
                self.add_levels(top, PENDING);
            }
        }
    }

    /// [`Aggregator::raise_pending`] for the call on top, `top`, on the event paths.
    ///
    /// # Safety
    /// As for [`Aggregator::add_levels_own`].
    #[inline(always)]
    unsafe fn raise_pending_of(&mut self, top: &mut Context) {
        if top.deferred & PENDING != 0 {
            // SAFETY: the same contract.
            unsafe { self.add_levels_own(top, PENDING) };
        }
    }

    /// Pops the top call without charging it (a leave event for a key with no entry), its
    /// levels left counted, as `_lsprof` leaves them.
    pub fn discard_top(&mut self, stack: &mut Stack) {
        self.settle(stack);
        stack.frames.pop();
    }

    /// Forgets every entry and edge (cProfile's `clear()`).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.subs.clear();
        self.index.clear();
        self.sub_index.clear();
        self.caches.clear();
    }

    /// A copy of the totals, for building results while events may still arrive: the results
    /// are made of Python objects whose allocation can run the garbage collector, and so
    /// finalizers that make profile events of their own.
    pub fn totals(&self) -> Totals {
        Totals {
            entries: self.entries.clone(),
            subs: self.subs.clone(),
        }
    }
}

/// A detached copy of an aggregator's entries and edges.
#[derive(Debug, Clone, Default)]
pub struct Totals {
    pub entries: Vec<Entry>,
    pub subs: Vec<SubEntry>,
}

impl Totals {
    /// Several threads' totals as one profile: entries with the same key and edges between the
    /// same two keys are added up. Also returns, for each merged entry, where it was first seen
    /// (part, entry id), to find the object that names it.
    pub fn merge(parts: &[&Totals]) -> (Totals, Vec<(usize, EntryId)>) {
        let mut out = Totals::default();
        let mut origin = Vec::new();
        let mut by_key: std::collections::HashMap<usize, EntryId, FxBuildHasher> =
            Default::default();
        let mut maps: Vec<Vec<EntryId>> = Vec::with_capacity(parts.len());
        for (pi, part) in parts.iter().enumerate() {
            let mut map = Vec::with_capacity(part.entries.len());
            for (i, e) in part.entries.iter().enumerate() {
                let id = *by_key.entry(e.key).or_insert_with(|| {
                    out.entries.push(Entry {
                        key: e.key,
                        ..Default::default()
                    });
                    origin.push((pi, i as EntryId));
                    (out.entries.len() - 1) as EntryId
                });
                out.entries[id as usize].add_totals(e);
                map.push(id);
            }
            maps.push(map);
        }
        let mut edges: std::collections::HashMap<(EntryId, EntryId), usize, FxBuildHasher> =
            Default::default();
        for (pi, part) in parts.iter().enumerate() {
            for s in &part.subs {
                let (caller, callee) = (maps[pi][s.caller as usize], maps[pi][s.callee as usize]);
                let at = *edges.entry((caller, callee)).or_insert_with(|| {
                    out.subs.push(SubEntry {
                        caller,
                        callee,
                        ..Default::default()
                    });
                    out.subs.len() - 1
                });
                out.subs[at].add_totals(s);
            }
        }
        (out, origin)
    }

    /// Entry ids in ascending key order: the order in which `_lsprof`'s tree lists them, which
    /// decides pstats' "random" listing order and every tie in a sort.
    pub fn ids_by_key(&self) -> Vec<EntryId> {
        let mut keyed: Vec<(usize, EntryId)> = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.key, i as EntryId))
            .collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, id)| id).collect()
    }

    /// For each entry, the indices into `subs` of the edges it is the caller of, ordered by
    /// callee creation.
    pub fn calls_by_caller(&self) -> Vec<Vec<u32>> {
        let mut calls = vec![Vec::new(); self.entries.len()];
        for (i, s) in self.subs.iter().enumerate() {
            calls[s.caller as usize].push(i as u32);
        }
        // `_lsprof` lists a caller's calls by the address of the callee's entry, which follows
        // allocation order nearly always; the callee's creation order stands in for it.
        for list in calls.iter_mut().filter(|l| l.len() > 1) {
            list.sort_unstable_by_key(|&i| self.subs[i as usize].callee);
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny driver with a counting clock, as the differential tests use for cProfile.
    struct Driver {
        agg: Aggregator,
        stack: Stack,
        clock: i64,
        /// Events try the cached paths first, as the profiler's hot path does.
        fast: bool,
        /// Events the cached paths took.
        fast_taken: usize,
        /// Calls taken off the stack by `suspend`, latest last (as a coroutine's await).
        suspended: Vec<Suspended>,
    }

    impl Driver {
        fn new(subcalls: bool) -> Self {
            Driver {
                agg: Aggregator::new(subcalls),
                stack: Stack::default(),
                clock: 0,
                fast: false,
                fast_taken: 0,
                suspended: Vec::new(),
            }
        }
        fn new_fast(subcalls: bool) -> Self {
            Driver {
                fast: true,
                ..Driver::new(subcalls)
            }
        }
        fn tick(&mut self) -> i64 {
            self.clock += 1;
            self.clock
        }
        fn call(&mut self, key: usize) {
            let clock = &mut self.clock;
            let tick = |_| {
                *clock += 1;
                *clock
            };
            // SAFETY: the driver's stack is only ever used with its aggregator.
            if self.fast && unsafe { self.agg.enter_cached(&mut self.stack, key, tick) } {
                self.fast_taken += 1;
                return;
            }
            let id = self.agg.get_or_insert(key).0;
            self.agg.enter(&mut self.stack, id, None);
            let d = self.stack.depth() - 1;
            let t = self.tick();
            self.stack.set_t0(d, t);
        }
        fn ret(&mut self, key: usize) {
            let clock = &mut self.clock;
            let tick = |_| {
                *clock += 1;
                *clock
            };
            // SAFETY: as in `call`.
            if self.fast && unsafe { self.agg.stop_cached(&mut self.stack, key, tick) }.is_some() {
                self.fast_taken += 1;
                return;
            }
            if self.stack.is_empty() {
                return;
            }
            match self.agg.get(key) {
                Some(id) => {
                    let t = self.tick();
                    self.agg.stop(&mut self.stack, id, t);
                }
                None => self.agg.discard_top(&mut self.stack),
            }
        }
        /// Takes the call on top off the stack, as a coroutine's await does.
        fn suspend(&mut self) {
            let t = self.tick();
            if let Some(s) = self.agg.suspend(&mut self.stack, t) {
                self.suspended.push(s);
            }
        }
        /// Puts the latest suspended call back on top, under whatever caller is there now.
        fn resume(&mut self) {
            let t = self.tick();
            if let Some(s) = self.suspended.pop() {
                self.agg.resume(&mut self.stack, s, t);
            }
        }
        /// The counters as [`Aggregator::settle`] would leave them, without settling.
        fn settled_counters(&self) -> (Vec<Entry>, Vec<SubEntry>) {
            let (mut entries, mut subs) = (self.agg.entries.clone(), self.agg.subs.clone());
            for c in self.stack.frames.iter() {
                if c.deferred & UNADDED_ENTRY != 0 {
                    entries[c.entry() as usize].recursion_level += 1;
                }
                if let Some(i) = c.sub().filter(|_| c.deferred & UNADDED_SUB != 0) {
                    subs[i as usize].recursion_level += 1;
                }
            }
            (entries, subs)
        }
        fn entry(&self, key: usize) -> &Entry {
            &self.agg.entries[self.agg.find(key).unwrap() as usize]
        }
        fn sub(&self, caller: usize, callee: usize) -> &SubEntry {
            let (a, b) = (
                self.agg.find(caller).unwrap(),
                self.agg.find(callee).unwrap(),
            );
            self.agg
                .subs
                .iter()
                .find(|s| s.caller == a && s.callee == b)
                .unwrap()
        }
    }

    #[test]
    fn flat_calls_split_inline_and_inclusive_time() {
        let mut d = Driver::new(true);
        d.call(1); // t0 = 1
        d.call(2); // t0 = 2
        d.ret(2); // 3: tt 1
        d.call(2); // 4
        d.ret(2); // 5: tt 1
        d.ret(1); // 6: tt 5, it 3
        let e = d.entry(1);
        assert_eq!(
            (e.key, e.tt, e.it, e.callcount, e.reccallcount),
            (1, 5, 3, 1, 0)
        );
        assert_eq!(d.entry(2).callcount, 2);
        assert_eq!(d.entry(2).tt, 2);
        assert_eq!(d.sub(1, 2).callcount, 2);
        assert_eq!(d.sub(1, 2).tt, 2);
        assert!(d.stack.is_empty());
    }

    #[test]
    fn recursion_counts_inner_calls_as_recursive_and_time_once() {
        // fact(3): 1 -> 1 -> 1
        let mut d = Driver::new(true);
        d.call(7);
        d.call(7);
        d.call(7);
        d.ret(7);
        d.ret(7);
        d.ret(7);
        let e = d.entry(7);
        assert_eq!((e.callcount, e.reccallcount), (3, 2));
        assert_eq!(
            e.tt,
            6 - 1,
            "inclusive time counted at the outermost level only"
        );
        assert_eq!(e.it, 5);
        let s = d.sub(7, 7);
        assert_eq!((s.callcount, s.reccallcount), (2, 1));
    }

    #[test]
    fn mutual_recursion_counts_per_function_and_per_pair() {
        // a -> b -> a -> b
        let mut d = Driver::new(true);
        for k in [1, 2, 1, 2] {
            d.call(k);
        }
        for k in [2, 1, 2, 1] {
            d.ret(k);
        }
        assert_eq!((d.entry(1).callcount, d.entry(1).reccallcount), (2, 1));
        assert_eq!((d.entry(2).callcount, d.entry(2).reccallcount), (2, 1));
        assert_eq!((d.sub(1, 2).callcount, d.sub(1, 2).reccallcount), (2, 1));
        assert_eq!((d.sub(2, 1).callcount, d.sub(2, 1).reccallcount), (1, 0));
    }

    #[test]
    fn subcalls_off_records_no_edges() {
        let mut d = Driver::new(false);
        d.call(1);
        d.call(2);
        d.ret(2);
        d.ret(1);
        assert!(d.agg.subs.is_empty());
        assert_eq!(d.entry(2).callcount, 1);
    }

    #[test]
    fn unmatched_returns_are_ignored_on_an_empty_stack() {
        let mut d = Driver::new(true);
        d.ret(5);
        assert!(d.agg.entries.is_empty());
        assert_eq!(d.clock, 0, "no timer read for an ignored event");
    }

    #[test]
    fn a_leave_for_an_unknown_key_pops_without_reading_the_clock() {
        let mut d = Driver::new(true);
        d.call(1);
        let before = d.clock;
        d.ret(99);
        assert!(d.stack.is_empty());
        assert_eq!(d.clock, before);
        assert_eq!(d.entry(1).callcount, 0);
    }

    #[test]
    fn a_mismatched_leave_charges_the_named_entry_as_lsprof_does() {
        let mut d = Driver::new(true);
        d.call(1);
        d.ret(1);
        d.call(2);
        d.ret(1); // key 1 exists, but the open context is entry 2's
        let e1 = d.entry(1);
        assert_eq!(e1.callcount, 2);
        assert_eq!(e1.recursion_level, -1);
        assert_eq!(e1.reccallcount, 1, "the level did not reach 0");
        assert_eq!(d.entry(2).callcount, 0);
        // Later calls to 1 keep counting as recursive: the level returns to -1, not 0.
        d.call(1);
        d.ret(1);
        assert_eq!(d.entry(1).reccallcount, 2);
    }

    #[test]
    fn listing_order_is_by_key_and_clear_forgets_everything() {
        let mut d = Driver::new(true);
        for k in [30, 10, 20] {
            d.call(k);
            d.ret(k);
        }
        let keys: Vec<usize> = d
            .agg
            .totals()
            .ids_by_key()
            .iter()
            .map(|&i| d.agg.entries[i as usize].key)
            .collect();
        assert_eq!(keys, vec![10, 20, 30]);
        d.agg.clear();
        assert!(d.agg.entries.is_empty() && d.agg.get(10).is_none());
    }

    #[test]
    fn the_lookup_cache_never_answers_for_another_key() {
        let mut agg = Aggregator::new(true);
        // Far more keys than cache slots, so many share a slot.
        let keys: Vec<usize> = (1..5000).map(|i| i * 16).collect();
        let ids: Vec<EntryId> = keys.iter().map(|&k| agg.insert(k)).collect();
        for _ in 0..2 {
            for (k, id) in keys.iter().zip(&ids) {
                assert_eq!(agg.get(*k), Some(*id));
            }
        }
        assert_eq!(agg.get(7), None);
        agg.clear();
        assert!(keys.iter().all(|&k| agg.get(k).is_none()));
        assert_eq!(agg.get(0), None, "an empty slot is not an entry for key 0");
    }

    #[test]
    fn an_edge_is_found_again_after_other_callees() {
        let mut d = Driver::new(true);
        d.call(1);
        for k in [2, 3, 2, 2, 3] {
            d.call(k);
            d.ret(k);
        }
        d.ret(1);
        assert_eq!(d.sub(1, 2).callcount, 3);
        assert_eq!(d.sub(1, 3).callcount, 2);
        assert_eq!(d.agg.subs.len(), 2);
    }

    #[test]
    fn deep_recursion_does_not_overflow() {
        let mut d = Driver::new(true);
        for _ in 0..100_000 {
            d.call(1);
        }
        for _ in 0..100_000 {
            d.ret(1);
        }
        assert_eq!(d.entry(1).callcount, 100_000);
        assert_eq!(d.entry(1).reccallcount, 99_999);
    }

    /// Counts the allocations of the current thread only (tests run on several threads).
    mod counting {
        use std::alloc::{GlobalAlloc, Layout, System};
        use std::cell::Cell;

        pub struct Counting;

        thread_local! {
            pub static ALLOCS: Cell<u64> = const { Cell::new(0) };
        }

        // SAFETY: defers every operation to the system allocator; the counter is a const-init
        // thread local (no allocation to reach it); `try_with` copes with TLS teardown.
        unsafe impl GlobalAlloc for Counting {
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
                // SAFETY: same contract as ours.
                unsafe { System.alloc(layout) }
            }
            unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
                // SAFETY: same contract as ours.
                unsafe { System.dealloc(ptr, layout) }
            }
            unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
                let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
                // SAFETY: same contract as ours.
                unsafe { System.realloc(ptr, layout, new) }
            }
        }

        #[global_allocator]
        static GLOBAL: Counting = Counting;

        pub fn allocations() -> u64 {
            ALLOCS.with(|c| c.get())
        }
    }

    #[test]
    fn no_allocation_per_event_once_functions_and_edges_were_seen() {
        // A program shape with recursion, mutual recursion, loops over several callees and a
        // deep stack, run once to see every function and edge, then again under the counter.
        fn program(d: &mut Driver) {
            for round in 0..3 {
                d.call(1);
                for _ in 0..200 {
                    d.call(2);
                    d.ret(2);
                    d.call(3);
                    d.call(4);
                    d.ret(4);
                    d.ret(3);
                }
                for k in [5, 6, 5, 6, 5] {
                    d.call(k);
                }
                for k in [5, 6, 5, 6, 5] {
                    d.ret(k);
                }
                for _ in 0..(1000 + round) {
                    d.call(7);
                }
                for _ in 0..(1000 + round) {
                    d.ret(7);
                }
                d.ret(1);
            }
        }
        let mut d = Driver::new(true);
        program(&mut d);
        let before = counting::allocations();
        program(&mut d);
        assert_eq!(counting::allocations() - before, 0);
        assert_eq!(d.entry(7).callcount, 2 * (1000 + 1001 + 1002));
    }

    #[test]
    fn calls_by_caller_groups_edges() {
        let mut d = Driver::new(true);
        d.call(1);
        d.call(3);
        d.ret(3);
        d.call(2);
        d.ret(2);
        d.ret(1);
        let calls = d.agg.totals().calls_by_caller();
        let a = d.agg.get(1).unwrap() as usize;
        let callees: Vec<EntryId> = calls[a]
            .iter()
            .map(|&i| d.agg.subs[i as usize].callee)
            .collect();
        assert_eq!(callees.len(), 2);
        assert!(calls[d.agg.get(2).unwrap() as usize].is_empty());
    }

    #[test]
    fn cached_paths_are_taken_for_recursion_and_alternating_callees() {
        // Keys as the profiler's are: addresses of objects (code objects of one size here).
        let addr = |k: usize| 0x7f3a_0000_1030 + k * 208;
        let round = |d: &mut Driver| {
            d.call(addr(1));
            for k in [2, 3, 4, 2, 3, 4] {
                d.call(addr(k));
                d.call(addr(k));
                d.ret(addr(k));
                d.ret(addr(k));
            }
            d.ret(addr(1));
        };
        let mut d = Driver::new_fast(true);
        round(&mut d);
        let before = d.fast_taken;
        round(&mut d);
        round(&mut d);
        // Once every function and edge has been seen, every event takes the cached path.
        assert_eq!(d.fast_taken - before, 2 * 26);
    }

    /// A recursion on the cached paths leaves the levels of the inner calls deferred (no store
    /// per event), and its totals are the general path's: inclusive time only once, the inner
    /// calls counted as recursive, on the entry and on the self edge.
    #[test]
    fn recursion_defers_levels_and_counts_as_lsprof() {
        fn recurse(d: &mut Driver, depth: usize) {
            d.call(1);
            if depth > 0 {
                recurse(d, depth - 1);
            }
            d.ret(1);
        }
        let mut general = Driver::new(true);
        let mut fast = Driver::new_fast(true);
        for d in [&mut general, &mut fast] {
            d.call(7);
            recurse(d, 5);
            recurse(d, 5);
        }
        // Deep in the second recursion, before its returns: inner levels deferred.
        let mut probe = Driver::new_fast(true);
        probe.call(7);
        recurse(&mut probe, 5);
        for _ in 0..4 {
            probe.call(1);
        }
        let deferred = probe
            .stack
            .frames
            .iter()
            .filter(|c| c.deferred & !MATCHED != 0)
            .count();
        assert_eq!(
            deferred, 3,
            "the calls below the first repeat of the edge 1 -> 1 count"
        );
        assert_eq!(probe.entry(1).recursion_level, 1);
        probe.agg.settle(&mut probe.stack);
        assert_eq!(probe.entry(1).recursion_level, 4);
        assert_eq!(probe.sub(1, 1).recursion_level, 3);
        assert!(probe
            .stack
            .frames
            .iter()
            .all(|c| c.deferred & !MATCHED == 0));
        for d in [&mut general, &mut fast] {
            d.ret(7);
        }
        assert!(fast.fast_taken > 0);
        assert_eq!(general.agg.entries, fast.agg.entries);
        assert_eq!(general.agg.subs, fast.agg.subs);
        let e = fast.entry(1);
        assert_eq!(
            (e.callcount, e.reccallcount, e.recursion_level),
            (12, 10, 0)
        );
    }

    /// A leaf call (nothing called inside it) of a function not open leaves its levels pending
    /// on the cached paths, with no store to the counters on enter or leave; a call pushed
    /// above a pending one raises its levels first.
    #[test]
    fn leaf_calls_leave_levels_pending_until_a_call_is_pushed_above() {
        let mut general = Driver::new(true);
        let mut fast = Driver::new_fast(true);
        for d in [&mut general, &mut fast] {
            d.call(8);
            for _ in 0..3 {
                d.call(16);
                d.ret(16);
            }
        }
        fast.call(16);
        let top = *fast.stack.frames.last().unwrap();
        assert_eq!(top.deferred, PENDING_ENTRY | PENDING_SUB | MATCHED);
        assert_eq!(fast.entry(16).recursion_level, 0);
        assert_eq!(fast.sub(8, 16).recursion_level, 0);
        // A call inside it (the edge 16 -> 24 made on the general path): levels raised first.
        fast.call(24);
        assert_eq!(fast.stack.frames[1].deferred, MATCHED);
        assert_eq!(fast.entry(16).recursion_level, 1);
        assert_eq!(fast.sub(8, 16).recursion_level, 1);
        fast.ret(24);
        fast.ret(16);
        general.call(16);
        general.call(24);
        general.ret(24);
        general.ret(16);
        for d in [&mut general, &mut fast] {
            d.ret(8);
        }
        assert_eq!(general.agg.entries, fast.agg.entries);
        assert_eq!(general.agg.subs, fast.agg.subs);
        let e = fast.entry(16);
        assert_eq!((e.callcount, e.reccallcount, e.recursion_level), (4, 0, 0));
    }

    proptest::proptest! {
        /// The cached enter and leave paths do exactly what the general ones do, whatever the
        /// events: returns of functions not on top, of unknown functions, on an empty stack,
        /// with and without subcalls, keys colliding in the caches, and calls suspended and
        /// resumed under other callers (or none), whose cached leave must tell its caller.
        #[test]
        fn cached_paths_match_the_general_ones(
            subcalls: bool,
            events in proptest::collection::vec((0u8..9, 0usize..12), 0..400),
        ) {
            let mut general = Driver::new(subcalls);
            let mut fast = Driver::new_fast(subcalls);
            for &(kind, k) in &events {
                // Keys 1024 * KEY_SLOTS apart share a key-cache slot.
                let key = 1 + (k % 6) + (k / 6) * 1024 * crate::core::lookup_cache::KEY_SLOTS;
                for d in [&mut general, &mut fast] {
                    match kind {
                        0..=3 => d.call(key),
                        4..=6 => d.ret(key),
                        7 => d.suspend(),
                        _ => d.resume(),
                    }
                }
                // After every event, the counters with the deferred levels added are the
                // general path's.
                let (entries, subs) = fast.settled_counters();
                proptest::prop_assert_eq!(&general.agg.entries, &entries);
                // What `settle` relies on: deferred calls at or above `settled`, a pending
                // one only on top; and what the cached leave does: MATCHED as the stack is.
                let n = fast.stack.frames.len();
                for (i, c) in fast.stack.frames.iter().enumerate() {
                    if c.deferred & (DEFER_ENTRY | DEFER_SUB) != 0 {
                        proptest::prop_assert!(
                            i * std::mem::size_of::<Context>() >= fast.stack.settled
                        );
                    }
                    if c.deferred & PENDING != 0 {
                        proptest::prop_assert_eq!(i + 1, n);
                    }
                    proptest::prop_assert_eq!(c.deferred & MATCHED, matched(c.sub_at, i));
                    let key = fast.agg.entries[c.entry() as usize].key;
                    proptest::prop_assert_eq!(c.tag, tag(key, c.deferred));
                }
                proptest::prop_assert_eq!(&general.agg.subs, &subs);
            }
            fast.agg.settle(&mut fast.stack);
            proptest::prop_assert_eq!(&general.agg.entries, &fast.agg.entries);
            proptest::prop_assert_eq!(&general.agg.subs, &fast.agg.subs);
            proptest::prop_assert_eq!(general.stack.depth(), fast.stack.depth());
        }

        /// An aggregator counts the same whatever happens to its caches: taken from it (a
        /// minimal set in their place) or given another aggregator's, with calls open, as
        /// `threads::lend_caches` moves sets between threads' tracks. The other aggregator
        /// sees the same keys in another order, so a set that kept its places would be caught.
        #[test]
        fn counts_do_not_depend_on_whose_caches_an_aggregator_has(
            subcalls: bool,
            events in proptest::collection::vec((proptest::bool::ANY, 0usize..12), 0..400),
            swaps in proptest::collection::vec(0usize..400, 0..8),
        ) {
            let mut general = Driver::new(subcalls);
            let mut fast = Driver::new_fast(subcalls);
            let mut other_general = Driver::new(subcalls);
            let mut other = Driver::new_fast(subcalls);
            for (i, &(is_call, k)) in events.iter().enumerate() {
                if swaps.contains(&i) {
                    if fast.agg.has_full_caches() {
                        other.agg.put_caches(fast.agg.take_caches());
                    } else {
                        fast.agg.put_caches(other.agg.take_caches());
                    }
                }
                let key = |k: usize| 1 + (k % 6) + (k / 6) * 1024 * crate::core::lookup_cache::KEY_SLOTS;
                for d in [&mut general, &mut fast] {
                    if is_call { d.call(key(k)) } else { d.ret(key(k)) }
                }
                for d in [&mut other_general, &mut other] {
                    if is_call { d.call(key(11 - k)) } else { d.ret(key(11 - k)) }
                }
            }
            for (general, fast) in [(general, fast), (other_general, other)] {
                let mut fast = fast;
                fast.agg.settle(&mut fast.stack);
                proptest::prop_assert_eq!(&general.agg.entries, &fast.agg.entries);
                proptest::prop_assert_eq!(&general.agg.subs, &fast.agg.subs);
            }
        }
    }

    /// With a minimal set of caches an aggregator answers most lookups from its tables: the
    /// cached enters decline where the full set answers, and the counts are the same.
    #[test]
    fn a_minimal_set_of_caches_sends_enters_to_the_tables() {
        fn rounds(d: &mut Driver) -> usize {
            let before = d.fast_taken;
            for _ in 0..3 {
                d.call(0x100);
                for callee in [0x200, 0x300] {
                    d.call(callee);
                    d.ret(callee);
                }
                d.ret(0x100);
            }
            d.fast_taken - before
        }
        let mut d = Driver::new_fast(true);
        d.agg = Aggregator::without_caches(true);
        assert!(!d.agg.has_full_caches());
        // One slot each: 0x200 and 0x300 evict each other's edge (both called by 0x100), and
        // the top call's key slot is taken by the callees in between; the leaves need none.
        let minimal = rounds(&mut d);
        d.agg.put_caches(EmptyCaches::full());
        let full = rounds(&mut d);
        assert!(full > minimal, "{minimal} then {full}");
        assert_eq!(d.sub(0x100, 0x300).callcount, 6);
    }
}
