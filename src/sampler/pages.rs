//! `Pages`: the target's memory read a page at a time, kept for one walk of a thread's frames.
//! A thread's frames (3.11+) lie side by side in its data stack, so the frames of a 20-deep
//! stack are on one or two pages: two system calls instead of twenty (3.10's frame objects are
//! on the heap: a 20-deep stack takes about eight). A page that cannot be read whole falls back
//! to a read of just the bytes asked for.

use std::io;

use super::memory;

const PAGE: u64 = 4096;
/// Pages kept per walk; beyond these the oldest is reused.
const MAX_PAGES: usize = 16;

/// Pages of one process read during one walk.
#[derive(Default)]
pub struct Pages {
    /// `(page address, its bytes)`, the first `used` of them valid for this walk.
    pages: Vec<(u64, Box<[u8]>)>,
    used: usize,
    next: usize,
}

impl Pages {
    /// Forgets what was read: the target has run since.
    pub fn clear(&mut self) {
        self.used = 0;
        self.next = 0;
    }

    /// Fills `out` from `addr` in process `pid`, from pages read in this walk where it can.
    pub fn read(&mut self, pid: i32, addr: u64, out: &mut [u8]) -> io::Result<()> {
        let mut done = 0usize;
        while done < out.len() {
            let here = addr
                .checked_add(done as u64)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EFAULT))?;
            let page = here & !(PAGE - 1);
            let offset = (here - page) as usize;
            let n = (out.len() - done).min(PAGE as usize - offset);
            match self.page(pid, page) {
                Some(bytes) => out[done..done + n].copy_from_slice(&bytes[offset..offset + n]),
                // Not a whole page to read (its neighbour is unmapped): just these bytes.
                None => memory::read(pid, here, &mut out[done..done + n])?,
            }
            done += n;
        }
        Ok(())
    }

    /// The bytes of the page at `page`, read now if not yet in this walk; `None` if it
    /// cannot be read whole.
    fn page(&mut self, pid: i32, page: u64) -> Option<&[u8]> {
        if let Some(i) = self.pages[..self.used].iter().position(|p| p.0 == page) {
            return Some(&self.pages[i].1);
        }
        let slot = if self.used < MAX_PAGES {
            self.used += 1;
            self.used - 1
        } else {
            self.next = (self.next + 1) % MAX_PAGES;
            self.next
        };
        if self.pages.len() <= slot {
            self.pages
                .push((0, vec![0u8; PAGE as usize].into_boxed_slice()));
        }
        let entry = &mut self.pages[slot];
        if memory::read(pid, page, &mut entry.1).is_err() {
            // Keep the slots before it valid; this one is not.
            entry.0 = u64::MAX;
            return None;
        }
        entry.0 = page;
        Some(&entry.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::own_pid;

    #[test]
    fn reads_across_pages_as_a_plain_read_does() {
        let data: Vec<u8> = (0..3 * PAGE as usize).map(|i| (i % 251) as u8).collect();
        let base = data.as_ptr() as u64;
        let mut pages = Pages::default();
        for (start, len) in [
            (0u64, 8usize),
            (PAGE - 4, 8),
            (100, 2 * PAGE as usize),
            (7, 1),
        ] {
            let mut got = vec![0u8; len];
            pages
                .read(own_pid(), base + start, &mut got)
                .expect("mapped");
            assert_eq!(got, data[start as usize..start as usize + len]);
        }
        pages.clear();
        let mut got = [0u8; 8];
        assert!(pages.read(own_pid(), 8, &mut got).is_err());
    }
}
