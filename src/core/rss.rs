//! The process's resident set size, sampled from a background thread (`Profile(rss=True)`):
//! read from `/proc/self/statm` every interval and kept when it moved by at least the trigger
//! since the last kept sample. The profiled program's events never read `/proc`.
//!
//! Python-free: the thread never takes the GIL; samples are stamped with the default clock's
//! units (as the timeline's events are with the default timer).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::core::clock;
use crate::core::timeline::WhenFull;

/// Reads the RSS in bytes from an open `/proc/self/statm`.
pub struct Reader {
    file: File,
    page: u64,
    text: Vec<u8>,
}

impl Reader {
    /// Opens `/proc/self/statm` and reads it once (an error here means there is no RSS to read).
    pub fn open() -> io::Result<Reader> {
        let file = File::open("/proc/self/statm")?;
        let mut r = Reader {
            file,
            page: page_size(),
            text: Vec::with_capacity(128),
        };
        r.read()?;
        Ok(r)
    }

    pub fn read(&mut self) -> io::Result<u64> {
        self.file.seek(SeekFrom::Start(0))?;
        self.text.clear();
        (&self.file).read_to_end(&mut self.text)?;
        parse_statm(&self.text)
            .map(|pages| pages.saturating_mul(self.page))
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidData, "unreadable /proc/self/statm")
            })
    }
}

/// The resident pages: the second field of `statm`.
fn parse_statm(text: &[u8]) -> Option<u64> {
    let field = text.split(|&b| b == b' ').nth(1)?;
    let digits = std::str::from_utf8(field).ok()?.trim();
    digits.parse().ok()
}

pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

/// The kept samples, bounded as the timeline is.
#[derive(Debug)]
pub struct Samples {
    pub kept: VecDeque<(i64, u64)>,
    capacity: usize,
    when_full: WhenFull,
    pub dropped: u64,
    /// The last kept value, which the trigger is measured from.
    last: Option<u64>,
}

impl Samples {
    pub fn new(capacity: usize, when_full: WhenFull) -> Samples {
        Samples {
            kept: VecDeque::new(),
            capacity: capacity.max(1),
            when_full,
            dropped: 0,
            last: None,
        }
    }

    /// Keeps `(t, bytes)` if it moved by at least `trigger` since the last kept sample (or
    /// `always`).
    pub fn offer(&mut self, t: i64, bytes: u64, trigger: u64, always: bool) {
        if let Some(last) = self.last {
            if !always && last.abs_diff(bytes) < trigger {
                return;
            }
        }
        self.last = Some(bytes);
        if self.kept.len() == self.capacity {
            self.dropped += 1;
            if self.when_full == WhenFull::KeepOldest {
                return;
            }
            self.kept.pop_front();
        }
        self.kept.push_back((t, bytes));
    }

    pub fn clear(&mut self) {
        self.kept.clear();
        self.dropped = 0;
        self.last = None;
    }

    /// Forgets the samples after the first `keep` (a start that did not happen).
    fn truncate(&mut self, keep: usize) {
        self.kept.truncate(keep);
        self.last = self.kept.back().map(|s| s.1);
    }
}

struct Shared {
    samples: Mutex<Samples>,
    stop: Mutex<bool>,
    wake: Condvar,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; if something did, the data is still whole.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The sampler: its settings, its samples, and its thread while profiling is enabled.
pub struct Sampler {
    pub interval: Duration,
    pub trigger: u64,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// The process the thread was started in (a forked child has no such thread).
    pid: u32,
    /// Samples kept before the latest start.
    kept_before_start: usize,
}

impl Sampler {
    pub fn new(interval: Duration, trigger: u64, capacity: usize, when_full: WhenFull) -> Sampler {
        Sampler {
            interval,
            trigger,
            shared: Sampler::new_shared(Samples::new(capacity, when_full)),
            thread: None,
            pid: std::process::id(),
            kept_before_start: 0,
        }
    }

    fn new_shared(samples: Samples) -> Arc<Shared> {
        Arc::new(Shared {
            samples: Mutex::new(samples),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        })
    }

    /// In a child forked while the thread ran: that thread does not exist here and the locks
    /// may have been held by it; the samples are kept if they can be read, on new locks.
    /// Whether the parent's thread was running (this process's sampling stops with it).
    fn after_fork(&mut self) -> bool {
        if self.pid == std::process::id() {
            return false;
        }
        self.pid = std::process::id();
        let was_running = self.thread.take().is_some_and(|handle| {
            // Joining or detaching a thread of the parent is not possible here.
            std::mem::forget(handle);
            true
        });
        let samples = match self.shared.samples.try_lock() {
            Ok(s) => Samples {
                kept: s.kept.clone(),
                capacity: s.capacity,
                when_full: s.when_full,
                dropped: s.dropped,
                last: s.last,
            },
            Err(_) => Samples::new(1, WhenFull::KeepNewest),
        };
        self.shared = Sampler::new_shared(samples);
        was_running
    }

    /// Starts sampling (a sample now, then one per interval). An error if the RSS cannot be
    /// read or no thread can be started.
    pub fn start(&mut self) -> io::Result<()> {
        self.after_fork();
        if self.thread.is_some() {
            return Ok(());
        }
        let mut reader = Reader::open()?;
        let first = reader.read()?;
        {
            let mut samples = lock(&self.shared.samples);
            self.kept_before_start = samples.kept.len();
            samples.offer(clock::now(), first, self.trigger, true);
        }
        *lock(&self.shared.stop) = false;
        let shared = Arc::clone(&self.shared);
        let (interval, trigger) = (self.interval, self.trigger);
        let handle = std::thread::Builder::new()
            .name("rprofile-rss".into())
            .spawn(move || run(&shared, reader, interval, trigger))?;
        self.thread = Some(handle);
        Ok(())
    }

    /// Stops the thread (waiting at most for one read) and keeps a last sample.
    pub fn stop(&mut self) {
        if self.halt() {
            self.final_sample();
        }
    }

    /// Stops the thread and forgets the samples of this start (the enable that started it
    /// failed).
    pub fn cancel(&mut self) {
        self.halt();
        lock(&self.shared.samples).truncate(self.kept_before_start);
    }

    /// Stops the thread: whether one ran (in a forked child: whether the parent's ran, as the
    /// samples it left may have been lost with a lock it held).
    fn halt(&mut self) -> bool {
        if self.after_fork() {
            return true;
        }
        let Some(handle) = self.thread.take() else {
            return false;
        };
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        let _ = handle.join();
        true
    }

    fn final_sample(&self) {
        if let Ok(mut r) = Reader::open() {
            if let Ok(bytes) = r.read() {
                lock(&self.shared.samples).offer(clock::now(), bytes, self.trigger, true);
            }
        }
    }

    /// A copy of the kept samples and how many were dropped.
    pub fn samples(&self) -> (Vec<(i64, u64)>, u64) {
        let copy = |s: &Samples| (s.kept.iter().copied().collect(), s.dropped);
        if self.pid != std::process::id() {
            // A forked child: the lock may be held by a thread that is not here.
            return self
                .shared
                .samples
                .try_lock()
                .map_or((Vec::new(), 0), |s| copy(&s));
        }
        copy(&lock(&self.shared.samples))
    }

    pub fn clear(&mut self) {
        self.after_fork();
        lock(&self.shared.samples).clear();
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(shared: &Shared, mut reader: Reader, interval: Duration, trigger: u64) {
    let mut stop = lock(&shared.stop);
    loop {
        let (guard, _) = shared
            .wake
            .wait_timeout_while(stop, interval, |s| !*s)
            .unwrap_or_else(PoisonError::into_inner);
        stop = guard;
        if *stop {
            return;
        }
        match reader.read() {
            Ok(bytes) => lock(&shared.samples).offer(clock::now(), bytes, trigger, false),
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statm_gives_resident_pages() {
        assert_eq!(parse_statm(b"1000 250 30 4 0 100 0\n"), Some(250));
        assert_eq!(parse_statm(b"1000"), None);
        assert_eq!(parse_statm(b"1000 x 3"), None);
    }

    #[test]
    fn samples_are_kept_when_they_move_by_the_trigger() {
        let mut s = Samples::new(10, WhenFull::KeepNewest);
        s.offer(1, 100, 50, true);
        s.offer(2, 120, 50, false);
        s.offer(3, 160, 50, false);
        s.offer(4, 90, 50, false);
        s.offer(5, 95, 50, true);
        let got: Vec<_> = s.kept.iter().copied().collect();
        assert_eq!(got, vec![(1, 100), (3, 160), (4, 90), (5, 95)]);
    }

    #[test]
    fn samples_are_bounded_as_the_timeline() {
        let mut s = Samples::new(2, WhenFull::KeepNewest);
        for i in 0..5 {
            s.offer(i, i as u64, 0, false);
        }
        assert_eq!(s.kept, VecDeque::from(vec![(3, 3), (4, 4)]));
        assert_eq!(s.dropped, 3);
        let mut s = Samples::new(2, WhenFull::KeepOldest);
        for i in 0..5 {
            s.offer(i, i as u64, 0, false);
        }
        assert_eq!(s.kept, VecDeque::from(vec![(0, 0), (1, 1)]));
    }

    #[test]
    fn the_sampler_reads_this_process() {
        // Kept (black_box) until the samples are taken: a release build would drop it unread.
        let block = std::hint::black_box(vec![1u8; 8 << 20]);
        let mut s = Sampler::new(Duration::from_millis(1), 0, 1000, WhenFull::KeepNewest);
        s.start().expect("this machine has /proc");
        // 30 ticks' time, longer when the machine is loaded enough to hold the sampler back.
        std::thread::sleep(Duration::from_millis(30));
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while s.samples().0.len() < 3 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        s.stop();
        std::hint::black_box(&block);
        let (kept, _) = s.samples();
        assert!(kept.len() >= 3, "{kept:?}");
        assert!(kept.iter().all(|&(_, b)| b >= block.len() as u64));
        assert!(kept.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}
