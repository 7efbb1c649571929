//! The target's OS thread ids: the list of its threads (`/proc/PID/task`), and for Python 3.10,
//! whose thread states keep `threading.get_ident()` (the `pthread_t`) but no native id, a
//! thread's id read from its C library: in glibc a `pthread_t` is the address of the thread's
//! descriptor (`struct pthread`, `nptl/descr.h`), which holds the kernel's id of the thread.
//!
//! That layout is glibc's, per architecture, not Python's: one row, x86-64's, whose descriptor
//! starts with the TCB (`tcbhead_t`, whose `tcb` and `self` words point back at the descriptor),
//! then a list link, then `tid`. Each read (one system call per thread and sample) checks the
//! two words, and a stack reader checks once that the ids read are the process's threads
//! (`consistent`). Elsewhere (musl, another architecture) there is no row, or the check fails,
//! and 3.10's threads have no OS id.

use std::fs;
use std::io;

use super::memory;
use super::remote::at;

/// Threads listed at most.
pub const MAX_TASKS: usize = 1 << 16;

/// Where glibc's thread descriptor keeps what is read: byte offsets from its start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PthreadLayout {
    /// `header.tcb` and `header.self`: both the descriptor's own address.
    pub tcb: u64,
    pub this: u64,
    /// `tid`, a `pid_t`; glibc clears it as the thread exits.
    pub tid: u64,
}

/// x86-64 glibc: `tcbhead_t` is 704 bytes (kept so for programs that depend on its size, such
/// as AddressSanitizer), `list_t` 16 (offsetof checked on glibc 2.36).
#[cfg(target_arch = "x86_64")]
pub const GLIBC: Option<PthreadLayout> = Some(PthreadLayout {
    tcb: 0,
    this: 16,
    tid: 720,
});
/// No row for other architectures: their descriptors have no self pointer to check a read by.
#[cfg(not(target_arch = "x86_64"))]
pub const GLIBC: Option<PthreadLayout> = None;

/// Bytes read at each of the two places: the two words, and the `tid` with what follows it.
const SPAN: usize = 24;

/// Reads threads' OS ids from their glibc descriptors in one process.
pub struct Tids {
    pid: i32,
    layout: PthreadLayout,
    buf: Vec<u8>,
}

impl Tids {
    pub fn new(pid: i32, layout: PthreadLayout) -> Tids {
        Tids {
            pid,
            layout,
            buf: Vec::new(),
        }
    }

    /// The OS id of the thread whose `pthread_t` is `pthread` (one system call); `None` when
    /// its descriptor cannot be read or is not one (the thread ended and its stack is gone),
    /// or it has exited (a `tid` of 0).
    pub fn tid_of(&mut self, pthread: u64) -> Option<u64> {
        let l = self.layout;
        let starts = [
            at(pthread, l.tcb.min(l.this)).ok()?,
            at(pthread, l.tid).ok()?,
        ];
        if memory::read_many(self.pid, &starts, SPAN, &mut self.buf).ok()? != starts.len() {
            return None;
        }
        let word = |offset: u64| -> Option<u64> {
            let i = usize::try_from(offset.checked_sub(l.tcb.min(l.this))?).ok()?;
            Some(u64::from_ne_bytes(self.buf.get(i..i + 8)?.try_into().ok()?))
        };
        if word(l.tcb)? != pthread || word(l.this)? != pthread {
            return None;
        }
        let tid = i32::from_ne_bytes(self.buf.get(SPAN..SPAN + 4)?.try_into().ok()?);
        u64::try_from(tid).ok().filter(|&t| t > 0)
    }
}

/// Whether the OS ids read for a process's thread states hold together: `threads` is
/// `(ident, tid)` per thread state, 0 where none was read. At least one was read, each one read
/// is one of the process's threads (`tasks`), and it is the process id exactly for the thread
/// whose ident is `main_ident` (an id read at the wrong place, as the process id in a word next
/// to `tid`, fails this). Two thread states may share an ident for a moment: a new thread's
/// state has its creator's until the thread starts.
pub fn consistent(pid: i32, threads: &[(u64, u64)], main_ident: u64, tasks: &[u64]) -> bool {
    let pid = u64::try_from(pid).unwrap_or(0);
    let read = || threads.iter().filter(|t| t.1 != 0);
    read().next().is_some()
        && read().all(|&(ident, tid)| tasks.contains(&tid) && (tid == pid) == (ident == main_ident))
}

/// The ids of process `pid`'s threads (`/proc/PID/task`), at most `MAX_TASKS`; `ESRCH` when
/// there is no such process.
pub fn thread_ids(pid: i32) -> io::Result<Vec<u64>> {
    let mut ids = Vec::new();
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => io::Error::from_raw_os_error(libc::ESRCH),
        _ => e,
    })?;
    for entry in tasks {
        if ids.len() == MAX_TASKS {
            break;
        }
        if let Some(id) = entry?.file_name().to_str().and_then(|n| n.parse().ok()) {
            ids.push(id);
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::own_pid;
    use std::sync::mpsc;
    use std::thread;

    /// This thread's `pthread_t` and OS id.
    fn me() -> (u64, u64) {
        // SAFETY: pthread_self and gettid have no preconditions and cannot fail.
        unsafe { (libc::pthread_self() as u64, libc::gettid() as u64) }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn glibc_descriptors_give_each_thread_its_os_id() {
        let Some(layout) = GLIBC else {
            return;
        };
        let mut tids = Tids::new(own_pid(), layout);
        let (main, main_tid) = me();
        assert_eq!(tids.tid_of(main), Some(main_tid));
        let (tx, rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let other = thread::spawn(move || {
            let _ = tx.send(me());
            let _ = done_rx.recv();
        });
        let Ok((pthread, tid)) = rx.recv() else {
            panic!("the thread sent nothing");
        };
        assert_ne!(tid, main_tid);
        assert_eq!(tids.tid_of(pthread), Some(tid));
        let tasks = thread_ids(own_pid()).unwrap_or_default();
        assert!(tasks.contains(&tid) && tasks.contains(&main_tid));
        // Not a descriptor: its words do not point back at it.
        let plain = [0u64; 128];
        assert_eq!(tids.tid_of(plain.as_ptr() as u64), None);
        assert_eq!(tids.tid_of(8), None);
        let _ = done_tx.send(());
        assert!(other.join().is_ok());
    }

    #[test]
    fn ids_hold_together_when_they_are_the_process_threads_and_main_is_the_pid() {
        let tasks = [100, 101, 102];
        // 100 is the process; the main thread's ident is 7.
        assert!(consistent(100, &[(7, 100), (8, 101)], 7, &tasks));
        // A thread whose id was not read does not count; a new thread with its creator's ident.
        assert!(consistent(100, &[(7, 100), (9, 0), (7, 100)], 7, &tasks));
        // No id read at all, an id that is no thread, the pid read for every thread (a word
        // beside `tid`), the main thread not the process.
        assert!(!consistent(100, &[(7, 0)], 7, &tasks));
        assert!(!consistent(100, &[(7, 100), (8, 555)], 7, &tasks));
        assert!(!consistent(100, &[(7, 100), (8, 100)], 7, &tasks));
        assert!(!consistent(100, &[(7, 101), (8, 100)], 7, &tasks));
        // A main thread that runs no Python: no thread state is the process.
        assert!(consistent(100, &[(8, 101)], 7, &tasks));
    }

    #[test]
    fn the_threads_of_a_process_and_of_none() {
        let (_, tid) = me();
        assert!(thread_ids(own_pid()).is_ok_and(|ids| ids.contains(&tid)));
        let missing = thread_ids(i32::MAX).map_err(|e| e.raw_os_error());
        assert_eq!(missing, Err(Some(libc::ESRCH)));
    }
}
