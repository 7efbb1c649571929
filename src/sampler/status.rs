//! Which of the target's threads are on a CPU, and which holds the GIL: what the sampler's `cpu`
//! and `gil` modes keep a sample for.
//!
//! - `ThreadStates`: the OS state of each thread (`/proc/PID/task/TID/stat`), asked for every
//!   thread at every sample, so each thread's file stays open and is re-read in place (`pread`
//!   at 0 makes the kernel write the line afresh) into one reused buffer.
//! - `Gil`: where the main interpreter's GIL is (`versions::gil_layout`; on 3.13+ the runtime's
//!   own debug offsets), found once; then each sample is one read of `last_holder` and
//!   `locked`, which sit side by side. Between a thread setting `locked` and naming itself
//!   `last_holder` the previous holder is still named: a sample in that window is misattributed,
//!   which only pausing the target would avoid.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use rustc_hash::FxBuildHasher;

use super::error::Error;
use super::layout::{self, known_version};
use super::memory;
use super::remote::{self, at};
use super::runtime::Runtime;
use super::versions::{self, GilLayout, GilPlace};

/// The state letter of a thread that is on a CPU or waiting for one.
const RUNNING: u8 = b'R';
/// The stat line's head: pid (at most 7 digits), ` (`, comm (15 bytes for a user thread, 64 for
/// the longest kernel names), `) `, the state. The rest of the line is not read.
const STAT_HEAD: usize = 128;
/// Stat files kept open at most: below the usual 1,024-descriptor limit with room for the
/// sampler's other files; threads beyond it are opened at each ask.
const MAX_OPEN: usize = 512;

/// One thread's open stat file.
struct Task {
    file: File,
    /// Asked about since the last `sweep`: a thread not asked about has ended.
    seen: bool,
}

/// The OS states of one process's threads, with each thread's stat file kept open.
pub struct ThreadStates {
    pid: i32,
    tasks: HashMap<u64, Task, FxBuildHasher>,
    buf: [u8; STAT_HEAD],
}

impl ThreadStates {
    pub fn new(pid: i32) -> Self {
        ThreadStates {
            pid,
            tasks: HashMap::default(),
            buf: [0; STAT_HEAD],
        }
    }

    /// Whether thread `tid` is running or runnable (state `R`); `false` for a thread that has
    /// ended, which is no error: threads end between the stack walk and this ask.
    pub fn running(&mut self, tid: u64) -> io::Result<bool> {
        Ok(self.state(tid)? == Some(RUNNING))
    }

    /// Thread `tid`'s state letter (`R`, `S`, `D`, `Z`, ...), `None` when it has ended.
    pub fn state(&mut self, tid: u64) -> io::Result<Option<u8>> {
        if let Some(task) = self.tasks.get_mut(&tid) {
            task.seen = true;
            match task.file.read_at(&mut self.buf, 0) {
                Ok(n) => return parse(&self.buf[..n]).map(Some),
                // The thread ended; its id may be a new thread's now, so it is opened again.
                Err(e) if gone(&e) => {
                    self.tasks.remove(&tid);
                }
                Err(e) => return Err(e),
            }
        }
        let path = format!("/proc/{}/task/{tid}/stat", self.pid);
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let n = match file.read_at(&mut self.buf, 0) {
            Ok(n) => n,
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let state = parse(&self.buf[..n])?;
        if self.tasks.len() < MAX_OPEN {
            self.tasks.insert(tid, Task { file, seen: true });
        }
        Ok(Some(state))
    }

    /// Keeps thread `tid`'s file open at the next sweep though it was not asked about: a thread
    /// read torn (or with no frames) at this sample is alive, and is asked about at the next.
    pub fn keep_open(&mut self, tid: u64) {
        if let Some(task) = self.tasks.get_mut(&tid) {
            task.seen = true;
        }
    }

    /// Closes the files of the threads not asked about since the last sweep (threads that
    /// ended, or that the sampler no longer sees): one pass, no list of live threads needed.
    pub fn sweep(&mut self) {
        self.tasks
            .retain(|_, task| std::mem::replace(&mut task.seen, false));
    }

    /// How many stat files are open.
    pub fn open_files(&self) -> usize {
        self.tasks.len()
    }
}

/// A failure that means the thread (or the whole process) is gone.
/// Nanoseconds thread `tid` of process `pid` has run on a CPU (`schedstat`'s first field),
/// or `None` when it cannot be read (the thread is gone, or the kernel keeps no such figure).
pub fn run_time(pid: i32, tid: u64) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn gone(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH))
}

fn parse(stat: &[u8]) -> io::Result<u8> {
    state_of(stat).ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))
}

/// The state letter of a stat line: the field after the `)` that closes the command name,
/// which may itself hold spaces and parentheses, so the last `)` is the closing one.
pub fn state_of(stat: &[u8]) -> Option<u8> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    match stat.get(close + 1..close + 3)? {
        [b' ', s] if s.is_ascii_alphabetic() => Some(*s),
        _ => None,
    }
}

/// Bytes read per sample at most: `last_holder` and `locked` and what lies between them.
const MAX_WINDOW: usize = 64;

/// The main interpreter's GIL in a target, found once: each `holder()` is one read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gil {
    pid: i32,
    /// The range read per sample, which holds `last_holder` and `locked`.
    start: u64,
    len: usize,
    /// Where those two are in it.
    holder_at: usize,
    locked_at: usize,
}

impl Gil {
    /// Finds the GIL of the process of `rt` and checks it: a 3.12+ main interpreter owns its
    /// GIL, and a GIL's `locked` is 0 or 1 (-1 before it is made).
    pub fn find(rt: &Runtime) -> Result<Gil, Error> {
        let (major, minor) = known_version(rt)?;
        let table = versions::gil_layout(major, minor).ok_or_else(|| {
            Error::Unsupported(format!(
                "finding the GIL of Python {major}.{minor} is not supported (process {})",
                rt.pid
            ))
        })?;
        let layout = match rt.version_hex {
            Some(_) => published(rt, table)?,
            None => *table,
        };
        let gil = match layout.place {
            GilPlace::Runtime { gil } => at(rt.address, gil)?,
            GilPlace::MainInterpreter {
                interpreters_main,
                ceval_gil,
                own_gil,
                ..
            } => {
                let main = remote::read_u64(rt.pid, at(rt.address, interpreters_main)?)?;
                let gil = remote::read_u64(rt.pid, at(main, ceval_gil)?)?;
                if main == 0 || gil != at(main, own_gil)? {
                    return Err(Error::Layout(format!(
                        "the main interpreter {main:#x} has its GIL at {gil:#x}, not at its \
                         own +{own_gil:#x}"
                    )));
                }
                gil
            }
        };
        let found = Gil::at(rt.pid, gil, &layout)?;
        let (locked, _) = found.read()?;
        if !matches!(locked, 0 | 1) {
            return Err(Error::Layout(format!(
                "the GIL at {gil:#x} has locked = {locked}: not a GIL in use"
            )));
        }
        Ok(found)
    }

    /// The GIL at `gil` in process `pid`, laid out as `layout` says.
    fn at(pid: i32, gil: u64, layout: &GilLayout) -> Result<Gil, Error> {
        let lo = layout.last_holder.min(layout.locked);
        let hi = (layout.last_holder.saturating_add(8)).max(layout.locked.saturating_add(4));
        let offset = |field: u64| usize::try_from(field - lo).unwrap_or(MAX_WINDOW);
        let len = offset(hi);
        if len > MAX_WINDOW {
            return Err(Error::Layout(format!(
                "the GIL's last_holder (+{}) and locked (+{}) are {len} bytes apart",
                layout.last_holder, layout.locked
            )));
        }
        Ok(Gil {
            pid,
            start: at(gil, lo)?,
            len,
            holder_at: offset(layout.last_holder),
            locked_at: offset(layout.locked),
        })
    }

    /// The address of the `PyThreadState` that holds the GIL, `None` when none does.
    pub fn holder(&self) -> io::Result<Option<u64>> {
        match self.read()? {
            (0, _) => Ok(None),
            (1, holder) => Ok(Some(holder).filter(|&h| h != 0)),
            _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }

    /// `(locked, last_holder)`, in one read.
    fn read(&self) -> io::Result<(i32, u64)> {
        let mut buf = [0u8; MAX_WINDOW];
        let invalid = || io::Error::from_raw_os_error(libc::EINVAL);
        let window = buf.get_mut(..self.len).ok_or_else(invalid)?;
        memory::read(self.pid, self.start, window)?;
        let field = |at: usize, n: usize| window.get(at..at + n).ok_or_else(invalid);
        let locked = field(self.locked_at, 4)?;
        let holder = field(self.holder_at, 8)?;
        Ok((
            i32::from_ne_bytes([locked[0], locked[1], locked[2], locked[3]]),
            u64::from_ne_bytes([
                holder[0], holder[1], holder[2], holder[3], holder[4], holder[5], holder[6],
                holder[7],
            ]),
        ))
    }
}

/// The GIL layout as 3.13+'s `_Py_DebugOffsets` publish it (they give `locked` and
/// `last_holder` from the interpreter's start; the table gives where `.main` is from `.head`).
fn published(rt: &Runtime, table: &GilLayout) -> Result<GilLayout, Error> {
    let GilPlace::MainInterpreter {
        interpreters_head,
        interpreters_main,
        ..
    } = table.place
    else {
        return Ok(*table);
    };
    let w = layout::words_of(rt)?;
    let words = layout::published(rt, "GIL")?;
    let head = words.get(w.runtime_interpreters_head)?;
    let own_gil = words.get(w.interp_gil_runtime_state)?;
    let inside = |i: usize| {
        words.get(i)?.checked_sub(own_gil).ok_or_else(|| {
            Error::Layout(format!("_Py_DebugOffsets word {i} is not inside the GIL"))
        })
    };
    let main_after_head = interpreters_main.saturating_sub(interpreters_head);
    Ok(GilLayout {
        place: GilPlace::MainInterpreter {
            interpreters_head: head,
            interpreters_main: head + main_after_head,
            ceval_gil: words.get(w.interp_ceval_gil)?,
            own_gil,
        },
        last_holder: inside(w.interp_gil_holder)?,
        locked: inside(w.interp_gil_locked)?,
    })
}

/// The address of the `PyThreadState` that holds the GIL of the process of `rt` (its main
/// interpreter's), `None` when none does: `Gil::find` and one read, for a single look.
pub fn gil_holder(rt: &Runtime) -> Result<Option<u64>, Error> {
    Ok(Gil::find(rt)?.holder()?)
}

#[cfg(test)]
mod tests {
    use super::super::tids;
    use super::*;
    use crate::sampler::own_pid;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    #[test]
    fn the_state_follows_the_last_closing_parenthesis() {
        assert_eq!(state_of(b"1234 (python3) R 1 2 3"), Some(b'R'));
        assert_eq!(state_of(b"1234 (my thread) S 1 2 3"), Some(b'S'));
        assert_eq!(state_of(b"1234 (a) b (c) D 1 2 3"), Some(b'D'));
        assert_eq!(state_of(b"1234 ()) R () Z 1 2 3"), Some(b'Z'));
        assert_eq!(state_of(b"1234 ( ) ) ) T 1"), Some(b'T'));
        assert_eq!(state_of(b"1234 (x)R 1"), None);
        assert_eq!(state_of(b"1234 (x) "), None);
        assert_eq!(state_of(b"1234 (x"), None);
        assert_eq!(state_of(b""), None);
    }

    /// Polls `tid`'s state until it is `want`, for up to 5 seconds.
    fn reaches(states: &mut ThreadStates, tid: u64, want: u8) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if states.state(tid).ok().flatten() == Some(want) {
                return true;
            }
            thread::sleep(Duration::from_millis(5));
        }
        false
    }

    /// Polls until thread `tid` has gone, for up to 5 seconds.
    fn ends(states: &mut ThreadStates, tid: u64) -> bool {
        let until = Instant::now() + Duration::from_secs(5);
        while Instant::now() < until {
            if matches!(states.state(tid), Ok(None)) {
                return true;
            }
            thread::sleep(Duration::from_millis(5));
        }
        false
    }

    #[test]
    fn a_spinning_thread_runs_and_a_sleeping_one_does_not() {
        let stop = Arc::new(AtomicBool::new(false));
        let spin_tid = Arc::new(AtomicI32::new(0));
        let sleep_tid = Arc::new(AtomicI32::new(0));
        let spinner = {
            let (stop, tid) = (stop.clone(), spin_tid.clone());
            thread::spawn(move || {
                // SAFETY: gettid has no preconditions and cannot fail.
                tid.store(unsafe { libc::gettid() }, Ordering::SeqCst);
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        };
        let sleeper = {
            let (stop, tid) = (stop.clone(), sleep_tid.clone());
            thread::spawn(move || {
                // SAFETY: as above.
                tid.store(unsafe { libc::gettid() }, Ordering::SeqCst);
                while !stop.load(Ordering::Relaxed) {
                    thread::sleep(Duration::from_millis(20));
                }
            })
        };
        while spin_tid.load(Ordering::SeqCst) == 0 || sleep_tid.load(Ordering::SeqCst) == 0 {
            thread::yield_now();
        }
        let spin = spin_tid.load(Ordering::SeqCst) as u64;
        let sleep = sleep_tid.load(Ordering::SeqCst) as u64;
        let mut states = ThreadStates::new(own_pid());
        assert!(reaches(&mut states, sleep, b'S'));
        assert!(states.running(spin).unwrap_or(false));
        // Re-read through the open files: the spinner stays runnable throughout.
        for _ in 0..100 {
            assert_eq!(states.running(spin).ok(), Some(true));
        }
        assert_eq!(states.open_files(), 2);
        assert!(tids::thread_ids(own_pid()).is_ok_and(|ids| ids.contains(&spin)));

        stop.store(true, Ordering::SeqCst);
        assert!(spinner.join().is_ok() && sleeper.join().is_ok());
        // A joined thread may still be finishing its exit in the kernel for a moment; once
        // gone it is not running, and that is no error.
        assert!(ends(&mut states, spin) && ends(&mut states, sleep));
        assert_eq!(states.running(spin).ok(), Some(false));
        assert_eq!(states.open_files(), 0);
    }

    #[test]
    fn the_sweep_keeps_the_threads_asked_about() {
        // SAFETY: gettid has no preconditions and cannot fail.
        let me = unsafe { libc::gettid() } as u64;
        let mut states = ThreadStates::new(own_pid());
        assert_eq!(states.running(me).ok(), Some(true));
        states.sweep();
        assert_eq!(states.open_files(), 1);
        // Kept open though not asked about (read torn at a sample)...
        states.keep_open(me);
        states.sweep();
        assert_eq!(states.open_files(), 1);
        // ...and closed at the sweep after a sample that saw it no more.
        states.sweep();
        assert_eq!(states.open_files(), 0);
        states.keep_open(me);
        assert_eq!(states.open_files(), 0);
        // An id that is no thread of this process is not running, and opens nothing.
        assert_eq!(states.running(u64::from(u32::MAX)).ok(), Some(false));
        assert_eq!(states.open_files(), 0);
        assert!(ThreadStates::new(i32::MAX).running(1).is_ok_and(|r| !r));
    }

    /// `_gil_runtime_state`'s head as every version lays it out: interval, last_holder, locked.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct FakeGil {
        interval: u64,
        last_holder: u64,
        locked: i32,
    }

    fn runtime(version: (u8, u8), address: u64) -> Runtime {
        Runtime {
            pid: own_pid(),
            address,
            library: PathBuf::from("libpython3.X.so"),
            version: Some(version),
            version_hex: None,
        }
    }

    fn put<T: Copy>(buf: &mut [u8], at: usize, value: T) {
        assert!(at + size_of::<T>() <= buf.len());
        // SAFETY: the range is inside `buf` (checked above), and write_unaligned takes any
        // alignment; T is plain data.
        unsafe { std::ptr::write_unaligned(buf.as_mut_ptr().add(at).cast::<T>(), value) };
    }

    #[test]
    fn the_holder_of_a_gil_in_the_runtime() {
        let mut rt = vec![0u8; 512];
        put(
            &mut rt,
            360,
            FakeGil {
                interval: 5000,
                last_holder: 0xabc0,
                locked: 1,
            },
        );
        let addr = rt.as_ptr() as u64;
        let found = Gil::find(&runtime((3, 11), addr));
        assert_eq!(found.as_ref().ok().map(|g| g.len), Some(12));
        assert_eq!(found.ok().and_then(|g| g.holder().ok()), Some(Some(0xabc0)));
        put(&mut rt, 376, 0i32);
        assert!(matches!(gil_holder(&runtime((3, 11), addr)), Ok(None)));
        // Not yet made (-1): the layout is refused on attach.
        put(&mut rt, 376, -1i32);
        assert!(matches!(
            Gil::find(&runtime((3, 11), addr)),
            Err(Error::Layout(_))
        ));
        assert!(matches!(
            Gil::find(&runtime((3, 9), addr)),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn the_holder_of_the_main_interpreters_gil() {
        let mut interp = vec![0u8; 1100];
        let main = interp.as_ptr() as u64;
        put(&mut interp, 384, main + 1040);
        put(
            &mut interp,
            1040,
            FakeGil {
                interval: 5000,
                last_holder: 0xdef0,
                locked: 1,
            },
        );
        let mut rt = vec![0u8; 64];
        put(&mut rt, 48, main);
        let addr = rt.as_ptr() as u64;
        assert!(matches!(
            gil_holder(&runtime((3, 12), addr)),
            Ok(Some(0xdef0))
        ));
        // A main interpreter whose GIL is not its own: not this layout.
        put(&mut interp, 384, main + 8);
        assert!(matches!(
            Gil::find(&runtime((3, 12), addr)),
            Err(Error::Layout(_))
        ));
        put(&mut rt, 48, 0u64);
        assert!(Gil::find(&runtime((3, 12), addr)).is_err());
    }
}
