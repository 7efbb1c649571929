//! `Snapshot`: what the last sample read of the target, read again in one system call at the
//! start of the next one. A sample of a 20-frame stack reads the runtime's interpreter list, the
//! thread state, a few frame ranges and the code objects' headers: nine calls one after the
//! other, each ~1.8 us of kernel time, where one call with an iovec per range costs ~1.4 us
//! and ~0.4 us a range. A read the snapshot does not hold goes to the target as before and is
//! remembered for the next sample; `refresh` reads again at once what the sample read so far (a
//! torn thread is read anew, not from the same bytes). A thread read again from a `refresh` or
//! an `adopt`ed read still takes code objects' headers from what `begin` read, and the threads
//! after it are read from there (`restore`).

use std::io;

use super::memory;

/// Ranges read in one call at most: a sample that reads more has them read as it goes.
const MAX_RANGES: usize = 64;
/// Bytes read in one call at most.
const MAX_BYTES: usize = 64 << 10;
/// Samples whose ranges the next one reads at its start.
const GENERATIONS: usize = 4;
/// Ranges closer than this are read as one (a frame's fields, frames side by side): a range of
/// its own costs the kernel more than copying a kilobyte.
const NEAR: u64 = 1024;

/// The ranges a sample read, and (after `begin`) their bytes as one call read them.
#[derive(Default)]
pub struct Snapshot {
    /// `(address, length, offset in bytes)` of the ranges read at `begin`, in address order.
    held: Vec<(u64, usize, usize)>,
    bytes: Vec<u8>,
    /// The range of `held` that served the last read: a walk's reads follow one another.
    last: usize,
    /// The ranges read (served or not) since `begin`, and those of the samples before: the
    /// next `begin`'s (a stack that alternates between callees has each read from it).
    wanted: Vec<(u64, usize)>,
    /// Code objects' headers read since `begin`: the next `begin`'s, not `refresh`'s.
    headers: Vec<(u64, usize)>,
    before: [Vec<(u64, usize)>; GENERATIONS],
    ranges: Vec<(u64, usize)>,
    /// What `refresh` reads again, before it is merged.
    asked: Vec<(u64, usize)>,
    /// What `begin` held, set aside while a `refresh` or an `adopt` serves a thread read again:
    /// its code objects' headers (`held_header`), and the next threads once `restore`d.
    earlier: Vec<(u64, usize, usize)>,
    earlier_bytes: Vec<u8>,
    aside: bool,
}

/// The index in `held` of a range that holds `len` bytes at `addr`, trying `last` first.
fn find(held: &[(u64, usize, usize)], last: usize, addr: u64, len: usize) -> Option<usize> {
    let end = addr.checked_add(len as u64)?;
    let holds = |&(start, n, _): &(u64, usize, usize)| start <= addr && end <= start + n as u64;
    if held.get(last).is_some_and(holds) {
        return Some(last);
    }
    held.iter().position(holds)
}

/// Fills `out` from `addr` out of `bytes`, where range `held` (one that `find` gave) lies.
fn copy_out((start, _, offset): (u64, usize, usize), bytes: &[u8], addr: u64, out: &mut [u8]) {
    let at = offset + (addr - start) as usize;
    out.copy_from_slice(&bytes[at..at + out.len()]);
}

/// Sorts `wanted` and merges it into `ranges` (ranges closer than `NEAR` as one); the bytes
/// they span.
fn merge(wanted: &mut [(u64, usize)], ranges: &mut Vec<(u64, usize)>) -> usize {
    wanted.sort_unstable();
    let mut total = 0usize;
    for &(addr, len) in wanted.iter() {
        let end = addr.saturating_add(len as u64);
        match ranges.last_mut() {
            Some((start, n)) if addr <= start.saturating_add(*n as u64 + NEAR) => {
                let merged = end.max(*start + *n as u64) - *start;
                total += merged as usize - *n;
                *n = merged as usize;
            }
            _ => {
                total += len;
                ranges.push((addr, len));
            }
        }
    }
    total
}

impl Snapshot {
    /// Starts a sample: reads in one call, merged, the ranges the last `GENERATIONS` samples
    /// read. A range the kernel cannot read (unmapped since) and those after it are not held.
    pub fn begin(&mut self, pid: i32) {
        self.held.clear();
        self.ranges.clear();
        self.earlier.clear();
        self.aside = false;
        // The oldest generation goes; the last sample's, merged on its own (its walks read the
        // same frames again and again), becomes the newest of `before`, and `wanted` holds
        // every generation's ranges: a few merged ranges a generation to sort, not every read.
        self.before.rotate_right(1);
        self.wanted.extend_from_slice(&self.headers);
        self.headers.clear();
        self.before[0].clear();
        merge(&mut self.wanted, &mut self.before[0]);
        self.wanted.clear();
        // A stack read the same way sample after sample is sorted once, not once a generation.
        for (i, generation) in self.before.iter().enumerate() {
            if !self.before[..i].contains(generation) {
                self.wanted.extend_from_slice(generation);
            }
        }
        let total = merge(&mut self.wanted, &mut self.ranges);
        self.wanted.clear();
        self.hold(pid, total);
    }

    /// Reads anew, in one call, what was read since `begin` but code objects' headers: a thread
    /// torn by a change under its walk is read again from the target at one instant, not range
    /// by range as it goes, and never from the bytes the torn walk read.
    pub fn refresh(&mut self, pid: i32) {
        self.asked.clear();
        self.asked.extend_from_slice(&self.wanted);
        self.set_aside();
        self.held.clear();
        self.ranges.clear();
        let total = merge(&mut self.asked, &mut self.ranges);
        self.hold(pid, total);
    }

    /// Reads `ranges` (`total` bytes) in one call and holds what was read: a range the
    /// kernel cannot read (unmapped since) and those after it are not held.
    fn hold(&mut self, pid: i32, total: usize) {
        self.last = 0;
        if self.ranges.len() > MAX_RANGES || total > MAX_BYTES {
            // A sample that read this much reads as it goes (no range is dropped at random).
            return;
        }
        let Ok(read) = memory::read_ranges(pid, &self.ranges, &mut self.bytes) else {
            return;
        };
        let mut offset = 0usize;
        for &(addr, len) in &self.ranges {
            if offset + len > read {
                break;
            }
            self.held.push((addr, len, offset));
            offset += len;
        }
    }

    /// Serves, in place of what `begin` read, `bytes`: the ranges `ranges` one after the
    /// other, as one later call read them.
    pub fn adopt(&mut self, ranges: &[(u64, usize)], bytes: &[u8]) {
        self.set_aside();
        self.held.clear();
        self.bytes.clear();
        self.bytes.extend_from_slice(bytes);
        self.last = 0;
        let mut offset = 0usize;
        for &(addr, len) in ranges {
            if offset + len > bytes.len() {
                break;
            }
            self.held.push((addr, len, offset));
            offset += len;
        }
    }

    /// Fills `out` from `addr`: from what `begin` read if it holds the whole range, else from
    /// the target through `fresh`. Either way a range read is read at the next `begin`.
    pub fn read(
        &mut self,
        addr: u64,
        out: &mut [u8],
        fresh: impl FnOnce(&mut [u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if !self.held(addr, out) {
            fresh(out)?;
            self.note(addr, out.len());
        }
        Ok(())
    }

    /// Fills `out` from `addr` if what `begin` read holds the whole range (which is then read
    /// at the next `begin`); whether it did.
    pub fn held(&mut self, addr: u64, out: &mut [u8]) -> bool {
        let Some(i) = find(&self.held, self.last, addr, out.len()) else {
            return false;
        };
        self.last = i;
        copy_out(self.held[i], &self.bytes, addr, out);
        self.note(addr, out.len());
        true
    }

    /// As `held`, for a code object's header, and else from what `begin` read if it was set
    /// aside: the cache checks a header, read in this sample as the first walk's were (a walk
    /// again meets code objects that a failed check did not read).
    pub fn held_header(&mut self, addr: u64, out: &mut [u8]) -> bool {
        let (held, bytes) = match find(&self.held, self.last, addr, out.len()) {
            Some(i) => (self.held[i], &self.bytes),
            None if self.aside => match find(&self.earlier, 0, addr, out.len()) {
                Some(i) => (self.earlier[i], &self.earlier_bytes),
                None => return false,
            },
            None => return false,
        };
        copy_out(held, bytes, addr, out);
        self.note_header(addr, out.len());
        true
    }

    /// Asks for the code object's header of `len` bytes at `addr` at the next `begin`.
    pub fn note_header(&mut self, addr: u64, len: usize) {
        self.headers.push((addr, len));
    }

    /// Sets what `begin` read aside, once a sample, for `held_header` and `restore`.
    fn set_aside(&mut self) {
        if !self.aside {
            self.swap_earlier();
            self.aside = true;
        }
    }

    /// Swaps what is served with what is set aside.
    fn swap_earlier(&mut self) {
        std::mem::swap(&mut self.held, &mut self.earlier);
        std::mem::swap(&mut self.bytes, &mut self.earlier_bytes);
    }

    /// Serves again what `begin` read, once a thread read again is done: the threads after it
    /// are read from the sample's start, as the ones before it were.
    pub fn restore(&mut self) {
        if std::mem::take(&mut self.aside) {
            self.swap_earlier();
            self.earlier.clear();
            self.last = 0;
        }
    }

    /// Asks for `len` bytes at `addr` (read from the target without the snapshot) at the next
    /// `begin`.
    pub fn note(&mut self, addr: u64, len: usize) {
        let end = addr.saturating_add(len as u64);
        // Reads near the last one (a walk's frames side by side) are kept as one range.
        if let Some((start, n)) = self.wanted.last_mut() {
            let last_end = start.saturating_add(*n as u64);
            if addr <= last_end.saturating_add(NEAR) && *start <= end.saturating_add(NEAR) {
                let lo = addr.min(*start);
                *n = (end.max(last_end) - lo) as usize;
                *start = lo;
                return;
            }
        }
        self.wanted.push((addr, len));
    }

    /// The native-endian `u64` at `addr`, as `read` gives it.
    pub fn read_u64(&mut self, pid: i32, addr: u64) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b, |out| memory::read(pid, addr, out))?;
        Ok(u64::from_ne_bytes(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::own_pid;

    #[test]
    fn what_a_sample_read_is_served_by_the_next_until_refreshed() {
        let mut data = [1u64, 2, 3, 4];
        let base = data.as_ptr() as u64;
        let pid = own_pid();
        let mut snap = Snapshot::default();
        snap.begin(pid);
        assert_eq!(snap.read_u64(pid, base + 8).ok(), Some(2));
        assert_eq!(snap.read_u64(pid, base + 24).ok(), Some(4));
        // The next sample reads both at its start: a change after that is not seen...
        snap.begin(pid);
        data[1] = 20;
        std::hint::black_box(&data);
        let mut fresh_reads = 0;
        let mut b = [0u8; 8];
        let fresh = |out: &mut [u8]| {
            fresh_reads += 1;
            memory::read(pid, base + 8, out)
        };
        assert!(snap.read(base + 8, &mut b, fresh).is_ok());
        assert_eq!((u64::from_ne_bytes(b), fresh_reads), (2, 0));
        // ...until it is refreshed: what it held and what was read since, read anew in one
        // call (no read from the target as it goes).
        assert_eq!(snap.read_u64(pid, base).ok(), Some(1));
        data[0] = 10;
        let seen = std::hint::black_box(&data);
        snap.refresh(pid);
        let mut fresh_reads = 0;
        let fresh = |out: &mut [u8]| {
            fresh_reads += 1;
            memory::read(pid, base + 8, out)
        };
        assert!(snap.read(base + 8, &mut b, fresh).is_ok());
        assert_eq!((u64::from_ne_bytes(b), fresh_reads), (seen[1], 0));
        assert_eq!(snap.read_u64(pid, base).ok(), Some(seen[0]));
        // An unmapped range is an error, and is not asked for at the next start.
        assert!(snap.read_u64(pid, 8).is_err());
        snap.begin(pid);
        assert!(snap.read_u64(pid, 8).is_err());
        assert_eq!(snap.read_u64(pid, base + 8).ok(), Some(20));
    }

    #[test]
    fn a_refresh_reads_again_all_but_headers_which_come_from_begin_as_the_next_threads_do() {
        let mut data = [1u64, 2, 3, 4];
        let base = data.as_ptr() as u64;
        let pid = own_pid();
        let mut snap = Snapshot::default();
        snap.begin(pid);
        let mut header = [0u8; 8];
        assert!(!snap.held_header(base + 24, &mut header));
        snap.note_header(base + 24, 8);
        assert_eq!(snap.read_u64(pid, base).ok(), Some(1));
        // The next sample holds both; a walk of the first word tears, and it changed since.
        snap.begin(pid);
        assert_eq!(snap.read_u64(pid, base).ok(), Some(1));
        data[0] = 10;
        data[3] = 40;
        let seen = std::hint::black_box(&data);
        snap.refresh(pid);
        // The refresh read the word anew, and not the header, which `begin`'s read serves.
        let mut b = [0u8; 8];
        assert!(snap.held(base, &mut b));
        assert_eq!(u64::from_ne_bytes(b), seen[0]);
        assert!(!snap.held(base + 24, &mut b));
        assert!(snap.held_header(base + 24, &mut header));
        assert_eq!(u64::from_ne_bytes(header), 4);
        // Once that thread is done, the next is read from `begin`'s read again.
        snap.restore();
        assert!(snap.held(base, &mut b));
        assert_eq!(u64::from_ne_bytes(b), 1);
        assert!(snap.held(base + 24, &mut b));
        assert_eq!(u64::from_ne_bytes(b), 4);
    }

    #[test]
    fn an_adopted_read_is_served_in_place_of_what_begin_read() {
        let data = [1u64, 2, 3, 4];
        let base = data.as_ptr() as u64;
        let pid = own_pid();
        let mut snap = Snapshot::default();
        snap.begin(pid);
        assert_eq!(snap.read_u64(pid, base).ok(), Some(1));
        snap.begin(pid);
        // Bytes another read found: the second and fourth words as 20 and 40.
        let bytes: Vec<u8> = [20u64, 40].iter().flat_map(|w| w.to_ne_bytes()).collect();
        snap.adopt(&[(base + 8, 8), (base + 24, 8), (base + 32, 8)], &bytes);
        assert_eq!(snap.read_u64(pid, base + 8).ok(), Some(20));
        assert_eq!(snap.read_u64(pid, base + 24).ok(), Some(40));
        // What `begin` held is not served any more, nor a range past the adopted bytes.
        let mut fresh_reads = 0;
        let mut b = [0u8; 8];
        let fresh = |out: &mut [u8]| {
            fresh_reads += 1;
            memory::read(pid, base, out)
        };
        assert!(snap.read(base, &mut b, fresh).is_ok());
        assert_eq!((u64::from_ne_bytes(b), fresh_reads), (1, 1));
        let mut b = [0u8; 8];
        assert!(!snap.held(base + 32, &mut b));
    }
}
