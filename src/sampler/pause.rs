//! `Pause`: blocking sampling's hold on one process (`--blocking`). Every thread (task) of the
//! target is seized with ptrace once (`PTRACE_SEIZE` does not stop it); for each sample every
//! thread is stopped (`PTRACE_INTERRUPT`, its stop waited for), the stacks are read, and the
//! threads go on (`PTRACE_CONT`); threads that start are seized as `/proc/PID/task` lists
//! them. Dropping it (or `release`) detaches every thread, on every path: the target is never
//! left stopped or traced. ptrace, not SIGSTOP/SIGCONT: a stop signal is seen by the target's
//! parent (job control) and stops the whole process, not one read's worth of it.
//!
//! A seized thread also stops whenever a signal is delivered to it (a signal-delivery stop):
//! `serve` (between samples, every `SERVE_EVERY` while the sampler waits) and each sample's
//! wait re-inject that signal, so the target gets every signal it was sent, at most a slice
//! late. A stop signal (SIGSTOP, SIGTSTP) re-injected stops the group as usual; such a thread
//! is left in its group stop (`PTRACE_LISTEN`), so that SIGCONT resumes it as without us.
//! The kernel gives a signal sent to the process to a thread that is not stopped: the leader
//! is stopped last and resumed first, and takes a signal that came while all were stopped
//! before the others go on, so that signals reach the main thread as without us.
//!
//! ptrace ties a tracee to the thread that seized it: every call here is made on that thread
//! (the sampler's), and ptrace stops are reported to `waitpid` in the tracer's whole thread
//! group, so no other thread of this process may wait for the target (the command line waits
//! for its program by `/proc` while a blocking run reads it).

use std::collections::HashMap;
use std::io;
use std::time::{Duration, Instant};

use super::tids;

/// How often a blocking run looks at its tracees between samples: a signal sent to the target
/// reaches it at most this late.
pub const SERVE_EVERY: Duration = Duration::from_millis(1);
/// How long a sample waits for a thread to stop: a thread blocked where no signal wakes it
/// (a `vfork` parent until its child execs) runs no Python meanwhile; the sample reads it
/// as it is, and its stop, when it comes, is resumed by `serve`.
const STOP_WAIT: Duration = Duration::from_millis(20);
/// How long a stop is waited for by looking again at once, before sleeping between looks.
const SPIN: Duration = Duration::from_micros(200);
/// How long the release waits for threads to stop so that they can be detached.
const RELEASE_WAIT: Duration = Duration::from_secs(2);
/// Listings of the threads per sample at most: a thread that started while the others were
/// being stopped is stopped too, unless threads keep starting.
const LISTINGS: usize = 4;
/// `PTRACE_EVENT_STOP` (not in the libc crate for glibc): the stop a `PTRACE_INTERRUPT` or a
/// group stop reports to a seizing tracer, in the wait status's third byte.
const PTRACE_EVENT_STOP: i32 = 128;

/// How a stopped thread goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    /// `PTRACE_CONT` delivering this signal (0: none).
    Cont(i32),
    /// In a group stop (SIGSTOP, SIGTSTP...): `PTRACE_LISTEN`, stopped until SIGCONT.
    Listen,
}

/// Where a seized thread is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Task {
    Running,
    /// Interrupted; its stop not seen yet.
    Interrupted,
    Stopped(Resume),
}

/// What one wait status says of a seized thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// It stopped for us (an interrupt), or in a group stop: resumed as said.
    Stop(Resume),
    /// A signal is being delivered to it: it is stopped until it is passed on.
    Signal(i32),
    /// It exited (its zombie is reaped by this wait).
    Gone,
}

/// Why blocking sampling cannot hold a process.
#[derive(Debug)]
pub struct Refused(pub String);

/// The hold on one process's threads, made and used on one thread (the tracer).
pub struct Pause {
    pid: i32,
    /// The target is a child of this process (a run that started it): its exit is left to
    /// be reaped by its parent's wait here, which would get nothing once a tracer's wait in
    /// the same process had reaped it. Any other target's exit is reaped by the tracer's wait
    /// (which hands it on to its own parent, who sees nothing of it before).
    own_child: bool,
    tasks: HashMap<i32, Task>,
    /// Reads taken while some thread would not stop in time (read as it was, running).
    pub unstopped: u64,
    /// When the first thread of this stop was interrupted (`None`: not stopped now).
    since: Option<Instant>,
}

impl Pause {
    /// Seizes every thread of process `pid`; refused (with why, in one line) when ptrace is
    /// not permitted: another tracer holds it (a debugger, another blocking sampler), or the
    /// system forbids it.
    pub fn seize(pid: i32) -> Result<Pause, Refused> {
        let mut pause = Pause {
            pid,
            own_child: parent_of(pid) == Some(std::process::id() as i32),
            tasks: HashMap::new(),
            unstopped: 0,
            since: None,
        };
        let ids = tids::thread_ids(pid).map_err(|e| Refused(format!("process {pid}: {e}")))?;
        for tid in ids {
            let Ok(tid) = i32::try_from(tid) else {
                continue;
            };
            match seize(tid) {
                Ok(()) => {
                    pause.tasks.insert(tid, Task::Running);
                }
                // A thread that ended since it was listed.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) && tid != pid => {}
                Err(e) => return Err(refusal(pid, &e)),
            }
        }
        Ok(pause)
    }

    /// Stops every thread for a read: those seized, and any listed since (seized now).
    pub fn stop(&mut self) -> io::Result<()> {
        self.serve();
        let mut interrupted = false;
        for _ in 0..LISTINGS {
            let new = self.seize_listed()?;
            if interrupted && !new {
                break;
            }
            self.interrupt_all(STOP_WAIT);
            interrupted = true;
        }
        if self.tasks.values().any(|t| *t == Task::Interrupted) {
            self.unstopped += 1;
        }
        if self.tasks.is_empty() {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    }

    /// Seizes the threads `/proc/PID/task` lists that are not held yet; whether there were any.
    fn seize_listed(&mut self) -> io::Result<bool> {
        let mut new = false;
        for tid in tids::thread_ids(self.pid)?
            .into_iter()
            .filter_map(|t| i32::try_from(t).ok())
        {
            if !self.tasks.contains_key(&tid) && seize(tid).is_ok() {
                self.tasks.insert(tid, Task::Running);
                new = true;
            }
        }
        Ok(new)
    }

    /// Interrupts every running thread and waits for each to stop, until `wait` has passed:
    /// the other threads first, the leader once they stopped. A signal sent to the process
    /// goes to a thread that is not stopped: the leader, as it would without us (CPython
    /// before 3.13 can leave a signal that lands on another thread unhandled).
    fn interrupt_all(&mut self, wait: Duration) {
        let start = Instant::now();
        let others: Vec<i32> = self
            .tasks
            .keys()
            .copied()
            .filter(|&t| t != self.pid)
            .collect();
        self.interrupt(&others, start, wait);
        if self.tasks.contains_key(&self.pid) {
            self.interrupt(&[self.pid], start, wait);
        }
    }

    /// Interrupts the running threads of `tids` and waits for each to stop, until `wait` has
    /// passed since `start`.
    fn interrupt(&mut self, tids: &[i32], start: Instant, wait: Duration) {
        for &tid in tids {
            if self.tasks.get(&tid) != Some(&Task::Running) {
                continue;
            }
            self.since.get_or_insert_with(Instant::now);
            // SAFETY: PTRACE_INTERRUPT takes no address or data; `tid` is our tracee.
            let r = unsafe { libc::ptrace(libc::PTRACE_INTERRUPT, tid, 0usize, 0usize) };
            if r == 0 {
                self.tasks.insert(tid, Task::Interrupted);
            } else {
                // Gone: its zombie reaped if it can be, forgotten.
                let _ = self.wait(tid);
                self.tasks.remove(&tid);
            }
        }
        let spun = Instant::now();
        let mut nap = Duration::from_micros(2);
        for &tid in tids {
            while self.tasks.get(&tid) == Some(&Task::Interrupted) {
                match self.wait(tid) {
                    Ok(Some(event)) => self.on_event(tid, event),
                    // A running thread stops within microseconds: look again at once. A
                    // sleep, or a yield to the other tasks of a loaded machine, would take
                    // milliseconds (measured: 3-6 ms a sample at load 6 on 2 cores).
                    Ok(None) if spun.elapsed() < SPIN => std::hint::spin_loop(),
                    Ok(None) if start.elapsed() < wait => {
                        std::thread::sleep(nap);
                        nap = (nap * 2).min(Duration::from_micros(200));
                    }
                    // Left to stop later (`serve` resumes it); read as it is meanwhile.
                    Ok(None) => break,
                    Err(_) => {
                        self.tasks.remove(&tid);
                    }
                }
            }
        }
    }

    /// A wait's news of `tid`.
    fn on_event(&mut self, tid: i32, event: Event) {
        match event {
            Event::Gone => {
                self.tasks.remove(&tid);
            }
            Event::Stop(resume) => {
                self.tasks.insert(tid, Task::Stopped(resume));
            }
            // Stopped with a signal on its way: read as it is, the signal passed on at resume
            // (the interrupt's own stop may follow; `serve` resumes it).
            Event::Signal(sig) => {
                self.tasks.insert(tid, Task::Stopped(Resume::Cont(sig)));
            }
        }
    }

    /// Lets every stopped thread go on, each as its stop asks, the leader first (a signal
    /// sent while all were stopped is taken by the first to run); how long since the first
    /// was interrupted.
    pub fn resume(&mut self) -> Duration {
        let mut stopped: Vec<(i32, Resume)> = self
            .tasks
            .iter()
            .filter_map(|(&tid, t)| match t {
                Task::Stopped(r) => Some((tid, *r)),
                _ => None,
            })
            .collect();
        stopped.sort_by_key(|&(tid, _)| tid != self.pid);
        // A leader left in a group stop (SIGSTOP) takes no signal until SIGCONT.
        let hand_over = stopped
            .first()
            .is_some_and(|&(tid, how)| tid == self.pid && how != Resume::Listen)
            && leader_would_take_shared(self.pid);
        for (tid, how) in stopped {
            match restart(tid, how) {
                Ok(()) => {
                    self.tasks.insert(tid, Task::Running);
                    if tid == self.pid && hand_over {
                        self.leader_takes_its_signal();
                    }
                }
                Err(_) => {
                    let _ = self.wait(tid);
                    self.tasks.remove(&tid);
                }
            }
        }
        self.since.take().map_or(Duration::ZERO, |t| t.elapsed())
    }

    /// With the other threads still stopped, lets the leader (resumed) take the signal sent
    /// to the process while all were stopped, and passes it on; at most `STOP_WAIT`.
    fn leader_takes_its_signal(&mut self) {
        let start = Instant::now();
        while start.elapsed() < STOP_WAIT {
            let how = match self.wait(self.pid) {
                Ok(None) => {
                    std::hint::spin_loop();
                    continue;
                }
                Ok(Some(Event::Signal(sig))) => Resume::Cont(sig),
                Ok(Some(Event::Stop(how))) => how,
                Ok(Some(Event::Gone)) | Err(_) => {
                    self.tasks.remove(&self.pid);
                    return;
                }
            };
            if restart(self.pid, how).is_err() {
                self.tasks.remove(&self.pid);
                return;
            }
            if how != Resume::Cont(0) {
                return;
            }
        }
    }

    /// Between samples: passes on the signals delivered to running threads, resumes a stop
    /// that came late, reaps threads that exited. Costs one `waitpid` per thread.
    pub fn serve(&mut self) {
        let running: Vec<i32> = self
            .tasks
            .iter()
            .filter(|(_, t)| matches!(t, Task::Running | Task::Interrupted))
            .map(|(&tid, _)| tid)
            .collect();
        for tid in running {
            let how = match self.wait(tid) {
                Ok(None) => continue,
                Ok(Some(Event::Stop(how))) => how,
                Ok(Some(Event::Signal(sig))) => Resume::Cont(sig),
                Ok(Some(Event::Gone)) | Err(_) => {
                    self.tasks.remove(&tid);
                    continue;
                }
            };
            if restart(tid, how).is_ok() {
                self.tasks.insert(tid, Task::Running);
            } else {
                self.tasks.remove(&tid);
            }
        }
    }

    /// Detaches every thread: stopped ones at once (with the signal they hold), running ones
    /// once stopped (ptrace detaches only a stopped tracee). Must run on the tracer's thread.
    pub fn release(&mut self) {
        self.serve();
        self.interrupt_all(RELEASE_WAIT);
        let mut tasks: Vec<(i32, Task)> = self.tasks.drain().collect();
        // The leader first, to run first: see `resume`.
        tasks.sort_by_key(|&(tid, _)| tid != self.pid);
        for (tid, task) in tasks {
            let sig = match task {
                Task::Stopped(Resume::Cont(sig)) => sig,
                // A group stop stays one once detached.
                Task::Stopped(Resume::Listen) => 0,
                // Would not stop (blocked in the kernel): the kernel detaches it when this
                // thread exits.
                Task::Running | Task::Interrupted => continue,
            };
            // SAFETY: PTRACE_DETACH takes the signal to deliver as data; `tid` is a stopped
            // tracee of this thread.
            unsafe {
                libc::ptrace(libc::PTRACE_DETACH, tid, 0usize, sig as usize);
            }
        }
    }

    /// The process held.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Threads held now.
    pub fn threads(&self) -> usize {
        self.tasks.len()
    }
}

impl Drop for Pause {
    fn drop(&mut self) {
        self.release();
    }
}

impl Pause {
    /// What `tid` has to report, without waiting (see `wait_status`). The target's own exit,
    /// when it is this process's child, is left for its parent to reap: its leader is only
    /// waited for once a look that reaps nothing saw a stop to take, so an exit between the
    /// look and the wait cannot be taken (only a SIGKILL of a thread held stopped could).
    fn wait(&self, tid: i32) -> io::Result<Option<Event>> {
        if self.own_child && tid == self.pid {
            match pending(tid)? {
                Pending::Nothing => return Ok(None),
                Pending::Exit => return Ok(Some(Event::Gone)),
                Pending::Stop => {}
            }
        }
        wait_status(tid, libc::WNOHANG)
    }
}

/// What a tracee has to report, seen without taking it.
enum Pending {
    Nothing,
    Exit,
    Stop,
}

/// What tracee `tid` has to report, its report left in place (`WNOWAIT`).
fn pending(tid: i32) -> io::Result<Pending> {
    // SAFETY: siginfo_t is plain data, all zeros a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let flags = libc::WEXITED | libc::WSTOPPED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL;
    // SAFETY: `info` is a valid siginfo_t to write; P_PID selects the one tracee.
    let r = unsafe { libc::waitid(libc::P_PID, tid as libc::id_t, &mut info, flags) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info`, a SIGCHLD-kind siginfo (si_pid 0: nothing to report).
    if unsafe { info.si_pid() } != tid {
        return Ok(Pending::Nothing);
    }
    Ok(match info.si_code {
        libc::CLD_EXITED | libc::CLD_KILLED | libc::CLD_DUMPED => Pending::Exit,
        _ => Pending::Stop,
    })
}

/// `PTRACE_PEEKSIGINFO_SHARED` (linux/ptrace.h): peek at the process's queue, not the thread's.
const PEEK_SHARED: u32 = 1;

/// Whether a signal sent to the process waits in its shared queue that its leader (stopped)
/// does not block: resumed, the leader takes it, unless another thread is quicker.
fn leader_would_take_shared(leader: i32) -> bool {
    // SAFETY: siginfo_t is plain data, all zeros a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let mut args = libc::ptrace_peeksiginfo_args {
        off: 0,
        flags: PEEK_SHARED,
        nr: 1,
    };
    // SAFETY: PTRACE_PEEKSIGINFO writes at most `nr` (1) siginfo_t to `info`; `leader` is a
    // stopped tracee.
    let n = unsafe {
        libc::ptrace(
            libc::PTRACE_PEEKSIGINFO,
            leader,
            &mut args as *mut libc::ptrace_peeksiginfo_args,
            &mut info as *mut libc::siginfo_t,
        )
    };
    if n != 1 {
        return false;
    }
    let mut blocked: u64 = 0;
    // SAFETY: PTRACE_GETSIGMASK writes the kernel's sigset (8 bytes, its size passed) to
    // `blocked`; `leader` is a stopped tracee.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_GETSIGMASK,
            leader,
            std::mem::size_of::<u64>(),
            &mut blocked as *mut u64,
        )
    };
    let bit = u32::try_from(info.si_signo - 1)
        .ok()
        .and_then(|b| 1u64.checked_shl(b));
    r == 0 && bit.is_some_and(|bit| blocked & bit == 0)
}

/// The parent of process `pid`, from `/proc/PID/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 2..)?).ok()?;
    rest.split(' ').nth(1)?.parse().ok()
}

/// `PTRACE_SEIZE` of one thread, with no options: no event but stops and signals is reported.
fn seize(tid: i32) -> io::Result<()> {
    // SAFETY: PTRACE_SEIZE takes no address and its options (0) as data.
    let r = unsafe { libc::ptrace(libc::PTRACE_SEIZE, tid, 0usize, 0usize) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Restarts a stopped tracee as `how` says.
fn restart(tid: i32, how: Resume) -> io::Result<()> {
    let r = match how {
        // SAFETY: PTRACE_CONT takes the signal to deliver as data; `tid` is a stopped tracee.
        Resume::Cont(sig) => unsafe { libc::ptrace(libc::PTRACE_CONT, tid, 0usize, sig as usize) },
        // SAFETY: PTRACE_LISTEN takes no address or data; `tid` is a seized, stopped tracee.
        Resume::Listen => unsafe { libc::ptrace(libc::PTRACE_LISTEN, tid, 0usize, 0usize) },
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One `waitpid` for tracee `tid` (`flags`: `WNOHANG` or 0): `None` when it has nothing to
/// report. `ECHILD` when it is not (or no longer) a tracee of this thread.
fn wait_status(tid: i32, flags: i32) -> io::Result<Option<Event>> {
    let mut status = 0;
    // SAFETY: `status` is a valid int to write; __WALL waits for threads (clones) too.
    let r = unsafe { libc::waitpid(tid, &mut status, flags | libc::__WALL) };
    match r {
        0 => Ok(None),
        r if r == tid => Ok(Some(event(status))),
        _ => Err(io::Error::last_os_error()),
    }
}

/// What a wait status of a seized tracee means.
fn event(status: i32) -> Event {
    if !libc::WIFSTOPPED(status) {
        return Event::Gone;
    }
    let sig = libc::WSTOPSIG(status);
    if status >> 16 == PTRACE_EVENT_STOP {
        // An interrupt's stop reports SIGTRAP; a group stop, the signal that stopped it.
        return match sig {
            libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU => {
                Event::Stop(Resume::Listen)
            }
            _ => Event::Stop(Resume::Cont(0)),
        };
    }
    if status >> 16 != 0 {
        // No other event was asked for; resumed with nothing delivered.
        return Event::Stop(Resume::Cont(0));
    }
    Event::Signal(sig)
}

/// Why process `pid` cannot be seized, in one line: who traces it already, or what refused.
fn refusal(pid: i32, e: &io::Error) -> Refused {
    // /proc names the tracing thread: its process is named.
    let tracer = tracer_of(pid)
        .filter(|&t| t != 0)
        .map(|t| field(t, "Tgid:").unwrap_or(t));
    Refused(match (e.raw_os_error(), tracer) {
        (Some(libc::EPERM), Some(tracer)) => format!(
            "cannot stop process {pid} for --blocking: it is already traced by process \
             {tracer}{} (a debugger or another blocking sampler); sample it without --blocking",
            comm(tracer).map(|c| format!(" ({c})")).unwrap_or_default()
        ),
        (Some(libc::EPERM), None) => format!(
            "cannot stop process {pid} for --blocking: ptrace is not permitted here ({e}); \
             sample it without --blocking"
        ),
        (Some(libc::ESRCH), _) => format!("process {pid}: no such process"),
        _ => format!(
            "cannot stop process {pid} for --blocking: ptrace failed ({e}); sample it without \
             --blocking"
        ),
    })
}

/// The `TracerPid` of `/proc/PID/status`: the tracing thread (0: not traced).
pub fn tracer_of(pid: i32) -> Option<i32> {
    field(pid, "TracerPid:")
}

/// A number field of `/proc/PID/status`, named with its colon.
fn field(pid: i32, name: &str) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().parse().ok())
}

fn comm(pid: i32) -> Option<String> {
    let c = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(c.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};
    use std::sync::mpsc;

    fn state(pid: i32) -> Option<u8> {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        super::super::status::state_of(&stat)
    }

    /// `sleep SECONDS` started by another thread, which lives until the sender is dropped: as
    /// in a run, the tracer (this thread) is not the child's parent thread, whose waits keep
    /// the child's exit status.
    fn sleep_apart(seconds: &str) -> (Child, mpsc::Sender<()>) {
        let (tx, rx) = mpsc::channel();
        let (done, wait) = mpsc::channel::<()>();
        let seconds = seconds.to_string();
        std::thread::spawn(move || {
            let child = Command::new("sleep")
                .arg(seconds)
                .stdin(Stdio::null())
                .spawn();
            let _ = tx.send(child);
            let _ = wait.recv();
        });
        let child = rx.recv().expect("sent").expect("sleep");
        (child, done)
    }

    #[test]
    fn a_held_process_stops_for_each_read_and_is_let_go_untraced() {
        let (mut child, _parent) = sleep_apart("5");
        let pid = child.id() as i32;
        let mut pause = Pause::seize(pid).expect("seized");
        // SAFETY: gettid has no preconditions.
        assert_eq!(tracer_of(pid), Some(unsafe { libc::gettid() }));
        for _ in 0..3 {
            pause.stop().expect("stopped");
            assert_eq!(state(pid), Some(b't'));
            pause.resume();
            assert_ne!(state(pid), Some(b't'));
        }
        assert_eq!(pause.unstopped, 0);
        drop(pause);
        assert_eq!(tracer_of(pid), Some(0));
        assert!(matches!(state(pid), Some(b'S' | b'R')));
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn a_second_hold_is_refused_saying_who_holds_it() {
        let (mut child, _parent) = sleep_apart("5");
        let pid = child.id() as i32;
        let pause = Pause::seize(pid).expect("seized");
        // Another thread of this process is another tracer.
        let second = std::thread::spawn(move || Pause::seize(pid).map(|_| ()));
        match second.join().expect("joined") {
            Err(Refused(why)) => assert!(why.contains("already traced by process"), "{why}"),
            Ok(()) => panic!("seized twice"),
        }
        drop(pause);
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn the_exit_status_of_a_held_child_is_left_for_its_parent() {
        use std::os::unix::process::ExitStatusExt;
        // Served without a break while it exits: a wait that took its exit would leave the
        // parent's wait nothing (Python's Popen then says 0). The race is narrow: 20 tries.
        for _ in 0..20 {
            let (tx, rx) = mpsc::channel();
            let (done, wait) = mpsc::channel::<()>();
            std::thread::spawn(move || {
                let child = Command::new("sh")
                    .args(["-c", "sleep 0.05; exit 3"])
                    .stdin(Stdio::null())
                    .spawn();
                let _ = tx.send(child);
                let _ = wait.recv();
            });
            let mut child = rx.recv().expect("sent").expect("sh");
            let pid = child.id() as i32;
            let mut pause = Pause::seize(pid).expect("seized");
            let start = Instant::now();
            while pause.threads() > 0 && start.elapsed() < Duration::from_secs(10) {
                pause.serve();
            }
            drop(pause);
            let status = child.wait().expect("its status left to wait for");
            assert_eq!((status.code(), status.signal()), (Some(3), None));
            drop(done);
        }
    }

    #[test]
    fn a_signal_delivered_while_held_reaches_the_target() {
        // SIGTERM's default action ends `sleep`: lost, it would sleep on.
        let (mut child, _parent) = sleep_apart("30");
        let pid = child.id() as i32;
        let mut pause = Pause::seize(pid).expect("seized");
        // SAFETY: kill with a valid signal to our own child.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let start = Instant::now();
        while pause.threads() > 0 && start.elapsed() < Duration::from_secs(10) {
            let _ = pause.stop();
            pause.resume();
            std::thread::sleep(SERVE_EVERY);
            pause.serve();
        }
        assert_eq!(pause.threads(), 0);
        drop(pause);
        let status = child.wait().expect("waited");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
    }
}
