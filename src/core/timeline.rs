//! The event timeline (`Profile(timeline=True)`): every call and return, with its time, thread
//! and depth, in a bounded buffer allocated (and its memory touched) before profiling starts, so
//! recording an event is a few stores; and the spans its calls and returns pair into. The
//! exports made from it (Chrome trace events, speedscope) are `timeline_export`'s.
//!
//! Python-free like the aggregator: functions are opaque keys, times are timer units, threads
//! are small indices; the profiler's `timeline_view` names them.

/// A function starts (or a coroutine resumes).
pub const ENTER: u8 = 0;
/// A function returns, unwinds or yields (or a coroutine awaits).
pub const LEAVE: u8 = 1;
/// Memory events (`memory=True`): a block allocated by malloc, calloc or realloc, a block
/// freed, and the old block of a realloc that moved or resized it. Their key is the function
/// running when it happened.
pub const MALLOC: u8 = 2;
pub const CALLOC: u8 = 3;
pub const REALLOC: u8 = 4;
pub const FREE: u8 = 5;
pub const REALLOC_FREE: u8 = 6;

/// Object events (`types=True`): an object of a counted type made, and one of those freed.
/// Their key is the function running, their `depth` the type's index among the counted types.
pub const OBJECT_NEW: u8 = 7;
pub const OBJECT_FREE: u8 = 8;

/// Whether an event of `kind` is a call or a return.
#[inline]
pub fn is_call(kind: u8) -> bool {
    kind <= LEAVE
}

/// Whether an event of `kind` is a memory event.
#[inline]
pub fn is_memory(kind: u8) -> bool {
    (MALLOC..=REALLOC_FREE).contains(&kind)
}

/// Whether an event of `kind` is an object event.
#[inline]
pub fn is_object(kind: u8) -> bool {
    kind == OBJECT_NEW || kind == OBJECT_FREE
}

/// One recorded event: 24 bytes, laid out as declared (the hot path writes it as three words).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Event {
    /// Timer units, as the stats count them.
    pub t: i64,
    /// The function's key (code object or builtin address), as in the aggregator.
    pub key: usize,
    /// A call or return: open calls below this one on its thread's stack. A memory event: the
    /// low 32 bits of its size in bytes (the high bits are in `hi`). An object event: the
    /// type's index among the counted types.
    pub depth: u32,
    /// Index into [`Timeline::threads`].
    pub thread: u16,
    pub kind: u8,
    /// A memory event: bits 32-39 of its size (blocks up to 1 TiB; larger ones saturate).
    pub hi: u8,
}

impl Event {
    /// A memory event's size in bytes.
    pub fn bytes(&self) -> u64 {
        (self.hi as u64) << 32 | self.depth as u64
    }

    /// How a memory event changes the live bytes: + for a block allocated, - for one freed,
    /// 0 for a call or return.
    pub fn delta(&self) -> i64 {
        match self.kind {
            MALLOC | CALLOC | REALLOC => self.bytes() as i64,
            FREE | REALLOC_FREE => -(self.bytes() as i64),
            _ => 0,
        }
    }
}

/// What to do with an event when the buffer is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// A ring: the oldest event is overwritten.
    KeepNewest,
    /// Later events are dropped.
    KeepOldest,
}

impl WhenFull {
    pub fn from_name(name: &str) -> Option<WhenFull> {
        match name {
            "keep_newest" => Some(WhenFull::KeepNewest),
            "keep_oldest" => Some(WhenFull::KeepOldest),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            WhenFull::KeepNewest => "keep_newest",
            WhenFull::KeepOldest => "keep_oldest",
        }
    }
}

/// The bounded event buffer. `repr(C)`, with what every event reads and writes in the first
/// cache line.
#[derive(Debug)]
#[repr(C)]
pub struct Timeline {
    /// All slots, allocated and written at creation (never resized). Until it is first full,
    /// `buf[..next]` holds the events; after, all of it does, the oldest at `next` (the slot
    /// `at` names).
    buf: Vec<Event>,
    /// Where the next event goes, in bytes from the start of `buf` (`next * EVENT_BYTES`): the
    /// hot path stores at an offset, with no index to scale.
    at: usize,
    /// An event takes the short path while `at < end`: the buffer's size in bytes until it is
    /// first full, 0 after (then every event goes through [`Timeline::push_full`]).
    end: usize,
    /// The thread index of the events being recorded, where it sits in an event's last word
    /// (`current << 32`), so that word is made with one `or` of the depth and the kind.
    lane: u64,
    /// The thread events are being recorded for (index into `threads`).
    current: u16,
    /// The buffer has been filled.
    full: bool,
    pub when_full: WhenFull,
    /// The time of the latest event before the last [`Timeline::clear`] (see
    /// [`Timeline::last_t`]).
    cleared_t: i64,
    /// Events not kept because the buffer was full.
    pub dropped: u64,
    /// The threads seen: the interpreter's thread id (never reused within a process) and the
    /// `threading` ident.
    pub threads: Vec<(u64, u64)>,
    /// The live bytes that memory events no longer kept (overwritten by the ring) added up to:
    /// what the tracked memory was at the first kept event.
    pub memory_base: i64,
}

/// The size of an event in the buffer.
const EVENT_BYTES: usize = std::mem::size_of::<Event>();

/// Writes the three words of an event at `w` without reading its cache line first
/// (non-temporal stores on x86_64): the buffer is written once, in order, and read only after
/// profiling, so the line would be fetched from memory for nothing. Such stores are ordered
/// only weakly with other stores: the writing thread's readers of the buffer fence first
/// ([`fence`]); another thread reads it only after taking the GIL from the writer, whose
/// release is a locked instruction, which no earlier store passes. (One `asm!` block, as the
/// intrinsic made the compiler compute the address anew for each store.)
///
/// # Safety
/// `w` is valid for a 24-byte write and 8-byte aligned.
#[inline(always)]
unsafe fn stream3(w: *mut i64, a: i64, b: i64, c: i64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `w` is valid for a 24-byte write and 8-byte aligned (function contract), as
    // `movnti` needs; `movnti` is SSE2, part of every x86_64 target; the block
    // writes only those 24 bytes, touches no stack and no flags.
    unsafe {
        std::arch::asm!(
            "movnti qword ptr [{w}], {a}",
            "movnti qword ptr [{w} + 8], {b}",
            "movnti qword ptr [{w} + 16], {c}",
            w = in(reg) w,
            a = in(reg) a,
            b = in(reg) b,
            c = in(reg) c,
            options(nostack, preserves_flags),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: `w` is valid for a 24-byte write and 8-byte aligned (function contract): three
    // aligned i64 writes inside it.
    unsafe {
        w.write(a);
        w.add(1).write(b);
        w.add(2).write(c);
    };
}

/// Orders the buffer's non-temporal stores ([`stream3`]) before the reads that follow.
#[inline(always)]
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no operands and no precondition.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// A free place in the buffer ([`Timeline::free_slot`]), the one at the timeline's `at`: the
/// timeline is borrowed while it lives, so the place stays free and in bounds (`at < end <=
/// buf.len() * EVENT_BYTES`, a multiple of `EVENT_BYTES`) until [`Slot::record`] fills it.
/// `at` is read again then rather than kept: the fast paths hold one value fewer meanwhile.
pub struct Slot<'a> {
    tl: &'a mut Timeline,
}

impl Slot<'_> {
    /// A call or return event (`kind`) of the current thread, into this place.
    #[inline(always)]
    pub fn record(self, kind: u8, t: i64, key: usize, depth: usize) {
        // (A depth past u32::MAX would need a stack of over 4 billion calls: it is truncated,
        // not tested for, on this path.)
        let tail = depth as u32 as u64 | self.tl.lane | (kind as u64) << 48;
        self.write(t, key, tail);
    }

    /// Writes the event whose words are `t`, `key` and `tail` (depth, thread, kind and hi, as
    /// `Event` lays them out) here.
    #[inline(always)]
    fn write(self, t: i64, key: usize, tail: u64) {
        let tl = self.tl;
        let at = tl.at;
        #[cfg(target_endian = "little")]
        // SAFETY: `at` is in bounds and a multiple of `EVENT_BYTES` (the slot's invariant; see
        // `push_full` for `end`), so it starts an event, 8-byte aligned. `Event` is `repr(C)`:
        // t, key, then the 8 bytes of depth, thread, kind and hi in that order, no padding; any
        // bits are a valid value of each field.
        unsafe {
            let w = tl.buf.as_mut_ptr().cast::<u8>().add(at).cast::<i64>();
            stream3(w, t, key as i64, tail as i64);
        }
        #[cfg(not(target_endian = "little"))]
        // SAFETY: as above.
        unsafe {
            let e = tl.buf.as_mut_ptr().cast::<u8>().add(at).cast::<Event>();
            e.write(Event {
                t,
                key,
                depth: tail as u32,
                thread: (tail >> 32) as u16,
                kind: (tail >> 48) as u8,
                hi: (tail >> 56) as u8,
            });
        }
        tl.at = at + EVENT_BYTES;
    }

    /// Writes `event` here with ordinary stores: for memory events. The allocator hooks run a
    /// locked instruction per allocation (their re-entrancy guard), which flushes a line
    /// partly written by streamed stores to memory: streamed, a memory event cost 177 ns more
    /// than this (memory_bench, 3.13).
    fn put(self, event: Event) {
        let tl = self.tl;
        let at = tl.at;
        // SAFETY: `at` is in bounds and starts an event (the slot's invariant).
        unsafe {
            tl.buf
                .as_mut_ptr()
                .cast::<u8>()
                .add(at)
                .cast::<Event>()
                .write(event)
        };
        tl.at = at + EVENT_BYTES;
    }
}

impl Timeline {
    /// A buffer of `capacity` events (at least one), its memory touched now rather than while
    /// profiling.
    pub fn new(capacity: usize, when_full: WhenFull) -> Timeline {
        Timeline::with_buffer(vec![Event::default(); capacity.max(1)], when_full)
    }

    /// [`Timeline::new`], or `None` if the memory for `capacity` events cannot be had.
    pub fn try_new(capacity: usize, when_full: WhenFull) -> Option<Timeline> {
        let capacity = capacity.max(1);
        let mut buf = Vec::new();
        buf.try_reserve_exact(capacity).ok()?;
        buf.resize(capacity, Event::default());
        Some(Timeline::with_buffer(buf, when_full))
    }

    fn with_buffer(buf: Vec<Event>, when_full: WhenFull) -> Timeline {
        Timeline {
            end: buf.len() * EVENT_BYTES,
            buf,
            at: 0,
            lane: 0,
            current: 0,
            full: false,
            when_full,
            cleared_t: 0,
            dropped: 0,
            threads: Vec::new(),
            memory_base: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// The slot the next event goes to.
    fn next(&self) -> usize {
        self.at / EVENT_BYTES
    }

    pub fn len(&self) -> usize {
        if self.full {
            self.buf.len()
        } else {
            self.next()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The time of the latest event recorded (for a leave that has no time of its own): read
    /// from the buffer, so recording an event stores nothing more. (With `keep_oldest` and the
    /// buffer full, the latest kept one's: the later ones are dropped, and so is every event
    /// that would use their time.)
    pub fn last_t(&self) -> i64 {
        let cap = self.buf.len();
        let latest = match (self.full, self.next()) {
            (false, 0) => return self.cleared_t,
            (false, i) => i - 1,
            (true, i) => (i + cap - 1) % cap,
        };
        fence();
        self.buf.get(latest).map_or(self.cleared_t, |e| e.t)
    }

    fn set_current(&mut self, i: u16) {
        self.current = i;
        self.lane = (i as u64) << 32;
    }

    /// Records the following events as the thread with interpreter id `id` and ident `ident`.
    pub fn set_thread(&mut self, id: u64, ident: u64) {
        let i = match self.threads.iter().position(|&t| t.0 == id) {
            Some(i) => i,
            None => {
                self.threads.push((id, ident));
                self.threads.len() - 1
            }
        };
        // More than 65,536 threads in one timeline share the last index (named by the first).
        self.set_current(i.min(u16::MAX as usize) as u16);
    }

    /// The next event's place if it fits without the buffer's full-buffer policy: what the
    /// callbacks' fast paths record into, with no call, so that they stay leaves.
    #[inline(always)]
    pub fn free_slot(&mut self) -> Option<Slot<'_>> {
        (self.at < self.end).then_some(Slot { tl: self })
    }

    /// A call or return event (`kind`) of the current thread.
    #[inline(always)]
    pub fn record(&mut self, kind: u8, t: i64, key: usize, depth: usize) {
        if let Some(slot) = self.free_slot() {
            return slot.record(kind, t, key, depth);
        }
        self.push_full(Event {
            t,
            key,
            depth: depth as u32,
            thread: self.current,
            kind,
            hi: 0,
        });
    }

    /// Records a memory event of `kind` and `bytes` at `t`, run by `key`; on the lane of the
    /// thread `lane` (interpreter id, ident) if given (the allocating thread, which need not be
    /// the one whose events came last), else on the current one.
    pub fn record_memory(
        &mut self,
        kind: u8,
        t: i64,
        key: usize,
        bytes: u64,
        lane: Option<(u64, u64)>,
    ) {
        let bytes = bytes.min((1 << 40) - 1);
        self.record_on(lane, t, key, bytes as u32, kind, (bytes >> 32) as u8);
    }

    /// Records an object event of `kind` (`OBJECT_NEW` or `OBJECT_FREE`) of the counted type
    /// `type_index` at `t`, run by `key`; on the lane `lane` as `record_memory`.
    pub fn record_object(
        &mut self,
        kind: u8,
        t: i64,
        key: usize,
        type_index: u32,
        lane: Option<(u64, u64)>,
    ) {
        self.record_on(lane, t, key, type_index, kind, 0);
    }

    fn record_on(
        &mut self,
        lane: Option<(u64, u64)>,
        t: i64,
        key: usize,
        depth: u32,
        kind: u8,
        hi: u8,
    ) {
        let current = self.current;
        if let Some((id, ident)) = lane {
            if self.threads.get(current as usize).map(|t| t.0) != Some(id) {
                self.set_thread(id, ident);
            }
        }
        let event = Event {
            t,
            key,
            depth,
            thread: self.current,
            kind,
            hi,
        };
        match self.free_slot() {
            Some(slot) => slot.put(event),
            None => self.push_full(event),
        }
        self.set_current(current);
    }

    /// An event when the buffer is (or just became) full: kept in a ring, or dropped.
    #[cold]
    #[inline(never)]
    fn push_full(&mut self, event: Event) {
        let cap = self.buf.len();
        if !self.full {
            self.full = true;
            self.end = 0;
            self.at = 0;
        }
        self.dropped += 1;
        if self.when_full == WhenFull::KeepOldest {
            return;
        }
        let i = self.next();
        self.at = if i + 1 >= cap { 0 } else { i + 1 } * EVENT_BYTES;
        fence();
        if let Some(slot) = self.buf.get_mut(i) {
            // The overwritten event's memory change now belongs to what came before the kept ones.
            self.memory_base += slot.delta();
            *slot = event;
        }
    }

    /// The kept events, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Event> + '_ {
        fence();
        let next = self.next();
        let (older, newer) = if self.full {
            let (a, b) = self.buf.split_at(next);
            (b, a)
        } else {
            (&self.buf[..next], &self.buf[..0])
        };
        older.iter().chain(newer.iter())
    }

    /// Forgets every event and thread (the buffer stays allocated).
    pub fn clear(&mut self) {
        self.cleared_t = self.last_t();
        self.at = 0;
        self.end = self.buf.len() * EVENT_BYTES;
        self.full = false;
        self.dropped = 0;
        self.threads.clear();
        self.set_current(0);
        self.memory_base = 0;
    }
}

/// A completed (or cut) call: what a trace shows as one slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub thread: u16,
    pub key: usize,
    pub start: i64,
    pub end: i64,
    pub depth: u32,
}

/// Pairs each thread's enters and leaves into spans, in the order they end. A leave whose enter
/// is no longer in the buffer (a ring that wrapped) starts at the first kept event; a call still
/// open at the end (a buffer that kept the oldest events) ends at the last kept event.
pub fn spans(events: &[Event]) -> Vec<Span> {
    let Some(first) = events.first() else {
        return Vec::new();
    };
    let (t_first, t_last) = (first.t, events.last().map_or(first.t, |e| e.t));
    let mut stacks: Vec<Vec<(usize, i64, u32)>> = Vec::new();
    let mut out = Vec::with_capacity(events.len() / 2 + 1);
    for e in events {
        let th = e.thread as usize;
        if stacks.len() <= th {
            stacks.resize_with(th + 1, Vec::new);
        }
        let stack = &mut stacks[th];
        if e.kind == ENTER {
            stack.push((e.key, e.t, e.depth));
            continue;
        }
        if e.kind != LEAVE {
            continue;
        }
        let (key, start, depth) = stack.pop().unwrap_or((e.key, t_first, e.depth));
        out.push(Span {
            thread: e.thread,
            key,
            start,
            end: e.t,
            depth,
        });
    }
    for (th, stack) in stacks.iter_mut().enumerate() {
        while let Some((key, start, depth)) = stack.pop() {
            out.push(Span {
                thread: th as u16,
                key,
                start,
                end: t_last,
                depth,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tl_with(cap: usize, when: WhenFull, n: usize) -> Timeline {
        let mut tl = Timeline::new(cap, when);
        tl.set_thread(7, 7);
        for i in 0..n {
            tl.record(
                if i % 2 == 0 { ENTER } else { LEAVE },
                i as i64,
                100 + i / 2,
                0,
            );
        }
        tl
    }

    #[test]
    fn a_ring_keeps_the_newest_events_in_order() {
        let tl = tl_with(4, WhenFull::KeepNewest, 10);
        let ts: Vec<i64> = tl.iter().map(|e| e.t).collect();
        assert_eq!(ts, vec![6, 7, 8, 9]);
        assert_eq!(tl.dropped, 6);
    }

    #[test]
    fn every_fill_level_keeps_what_a_plain_model_keeps() {
        // Below, at and past capacity, for both policies, and again after clear(): the kept
        // events and the dropped count are those of a list trimmed by hand.
        for cap in 1..6 {
            for n in 0..14 {
                for when in [WhenFull::KeepNewest, WhenFull::KeepOldest] {
                    let mut tl = tl_with(cap, when, n);
                    for round in 0..2 {
                        let all: Vec<i64> = (0..n as i64).collect();
                        let kept = match when {
                            WhenFull::KeepNewest => all[n.saturating_sub(cap)..].to_vec(),
                            WhenFull::KeepOldest => all[..n.min(cap)].to_vec(),
                        };
                        let ts: Vec<i64> = tl.iter().map(|e| e.t).collect();
                        assert_eq!(ts, kept, "cap {cap}, n {n}, {when:?}, round {round}");
                        assert_eq!(tl.len(), kept.len());
                        assert_eq!(tl.dropped as usize, n - kept.len());
                        tl.clear();
                        assert!(tl.is_empty());
                        for i in 0..n {
                            tl.record(ENTER, i as i64, 1, 0);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn keep_oldest_drops_later_events() {
        let tl = tl_with(4, WhenFull::KeepOldest, 10);
        let ts: Vec<i64> = tl.iter().map(|e| e.t).collect();
        assert_eq!(ts, vec![0, 1, 2, 3]);
        assert_eq!(tl.dropped, 6);
    }

    #[test]
    fn spans_pair_calls_per_thread_and_close_cut_ones() {
        let mut tl = Timeline::new(16, WhenFull::KeepNewest);
        tl.set_thread(1, 1);
        tl.record(LEAVE, 5, 9, 0); // its enter was dropped
        tl.record(ENTER, 6, 1, 0);
        tl.set_thread(2, 2);
        tl.record(ENTER, 7, 2, 0);
        tl.set_thread(1, 1);
        tl.record(ENTER, 8, 3, 1);
        tl.record(LEAVE, 9, 3, 1);
        tl.set_thread(2, 2);
        tl.record(LEAVE, 10, 2, 0);
        let ev: Vec<Event> = tl.iter().copied().collect();
        let s = spans(&ev);
        let got: Vec<(u16, usize, i64, i64)> = s
            .iter()
            .map(|s| (s.thread, s.key, s.start, s.end))
            .collect();
        assert_eq!(
            got,
            vec![(0, 9, 5, 5), (0, 3, 8, 9), (1, 2, 7, 10), (0, 1, 6, 10)]
        );
    }

    #[test]
    fn memory_events_keep_their_size_and_the_ring_carries_their_bytes() {
        let mut tl = Timeline::new(3, WhenFull::KeepNewest);
        tl.set_thread(1, 1);
        tl.record(ENTER, 1, 10, 0);
        tl.record_memory(MALLOC, 2, 10, 5 << 32 | 7, None);
        tl.record_memory(FREE, 3, 10, 100, Some((2, 2)));
        let ev: Vec<Event> = tl.iter().copied().collect();
        assert_eq!(ev[1].bytes(), 5u64 << 32 | 7);
        assert_eq!(ev[1].delta(), (5i64 << 32 | 7));
        assert_eq!(ev[2].delta(), -100);
        // The free went on thread 2's lane; the calls that follow stay on thread 1's.
        assert_eq!((ev[1].thread, ev[2].thread), (0, 1));
        tl.record(LEAVE, 4, 10, 0);
        assert_eq!(tl.iter().last().map(|e| e.thread), Some(0));
        assert_eq!(tl.memory_base, 0); // the enter went
        tl.record(ENTER, 5, 11, 0);
        assert_eq!(tl.memory_base, (5i64 << 32 | 7));
        tl.record(ENTER, 6, 12, 1);
        assert_eq!(tl.memory_base, (5i64 << 32 | 7) - 100);
        // Sizes past 1 TiB saturate rather than wrap.
        tl.record_memory(CALLOC, 7, 12, u64::MAX, None);
        assert_eq!(tl.iter().last().map(|e| e.bytes()), Some((1 << 40) - 1));
        tl.clear();
        assert_eq!(tl.memory_base, 0);
    }

    #[test]
    fn last_t_is_the_latest_recorded_events_time() {
        let mut tl = Timeline::new(3, WhenFull::KeepNewest);
        assert_eq!(tl.last_t(), 0);
        tl.record(ENTER, 5, 1, 0);
        tl.record_memory(MALLOC, 7, 1, 8, None);
        assert_eq!(tl.last_t(), 7);
        // The ring wraps: the latest is just before the oldest kept.
        tl.record(LEAVE, 9, 1, 0);
        tl.record(ENTER, 11, 2, 0);
        assert_eq!((tl.next(), tl.last_t()), (1, 11));
        tl.record(LEAVE, 12, 2, 0);
        tl.record(ENTER, 13, 3, 0);
        assert_eq!((tl.next(), tl.last_t()), (0, 13));
        // Cleared: the time of the latest event before, until one is recorded.
        tl.clear();
        assert_eq!(tl.last_t(), 13);
        tl.record(ENTER, 20, 1, 0);
        assert_eq!(tl.last_t(), 20);
        // keep_oldest, full: the latest kept (later ones, and what would use their time, go).
        let mut old = Timeline::new(2, WhenFull::KeepOldest);
        for t in [1, 2, 3, 4] {
            old.record(ENTER, t, 1, 0);
        }
        assert_eq!((old.last_t(), old.dropped), (2, 2));
    }

    #[test]
    fn a_free_slot_records_what_record_writes() {
        let mut a = Timeline::new(8, WhenFull::KeepOldest);
        let mut b = Timeline::new(8, WhenFull::KeepOldest);
        for tl in [&mut a, &mut b] {
            tl.set_thread(7, 70);
            tl.set_thread(9, 90);
        }
        let events = [
            (ENTER, 5, 0x1230, 3),
            (LEAVE, 9, usize::MAX - 7, 70_000),
            (ENTER, -1, 8, 0),
        ];
        for &(kind, t, key, depth) in &events {
            a.record(kind, t, key, depth);
            b.free_slot().expect("room").record(kind, t, key, depth);
        }
        assert_eq!(a.buf[..events.len()], b.buf[..events.len()]);
        assert_eq!((a.at, a.last_t()), (b.at, b.last_t()));
        assert_eq!(b.buf[1].thread, 1);
        // No place once the buffer is full, whatever its policy.
        let mut full = Timeline::new(1, WhenFull::KeepNewest);
        full.free_slot().expect("room").record(ENTER, 1, 2, 0);
        assert!(full.free_slot().is_none());
    }
}
