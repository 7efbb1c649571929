//! `Family`: a sampling run over a process and every process it starts, and those start, on
//! one clock: each tick reads every live Python process of the family in turn, each into its
//! own `Profile`, so that a process that exits (or is killed) ends its own profile only.
//!
//! New processes are looked for every `POLL_EVERY` (`descendants`). One is read once its
//! interpreter has a thread (a child that execs Python is tried again while it starts, backing
//! off, for `STARTING`; one that never is Python is left, its own children still followed).
//! A process that execs another program (its `stat` says its code moved) is found again:
//! another Python is read on into the same profile, under its new command line; what was read
//! of a fork that exec'd at once (`EXEC_WINDOW`) is dropped. multiprocessing's helpers are not
//! read. The run ends when it is asked to, after its duration, or when no process of the family
//! is left to read.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

use super::clock::{self, Clock};
use super::descendants::{Descendants, Stat};
use super::pause::{Refused, SERVE_EVERY};
use super::requests::{Answer, Inbox, Request};
use super::runtime::{self, find_runtime_with, Runtime, Symbols};
use super::session::{asked_to_end, outcome, End, Options, Session};
use super::stacks::Error;
use crate::samples::merge;
use crate::samples::profile::Profile;
use crate::samples::recording::Recording;
use crate::samples::stalls::{self, Stall};

/// How often the family's new processes are looked for: a child is read from at most this
/// long after it started. A scan of every process (no children files) costs more: less often.
const POLL_EVERY: Duration = Duration::from_millis(5);
const POLL_EVERY_SCAN: Duration = Duration::from_millis(50);
/// How often every process's `stat` is read again whether or not a process started: execs,
/// and exits of processes that are not read.
const FULL_POLL_EVERY: Duration = Duration::from_millis(50);
/// How long a new process (or one that exec'd) is tried while its interpreter is not there,
/// and the longest wait between two tries (each reads its memory map).
const STARTING: Duration = Duration::from_secs(2);
const MAX_TRY_DELAY: Duration = Duration::from_millis(50);
/// A process that execs this soon after it was first read was a fork about to exec (what
/// `subprocess` and multiprocessing's spawn do): what was read of it, its parent's stacks as
/// the fork copied them, is dropped.
const EXEC_WINDOW: Duration = Duration::from_millis(50);
/// Failed reads in a row after which a process is looked at again (it may have exec'd).
const REEXAMINE_AFTER: u32 = 10;
/// The reading thread's priority: the target's own. A family often has more busy processes
/// than there are cores (a pool of workers), and at nice 10 the sampler then gets so little
/// CPU that it finds short-lived workers only after they exited.
const NICE: i32 = 0;
/// Why a process found was not read, before it was tried.
const NOT_YET: &str = "not read yet";
/// Processes followed at most; later ones are counted, not read.
pub const MAX_PROCESSES: usize = 1024;

/// Where a process of the family is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Not read (yet): since when it is waited for (the run's time), the next try, and why it
    /// was not read at the last.
    Waiting {
        since: Duration,
        next_try: Duration,
        why: String,
    },
    Sampling,
    /// Read no more: why (it exited, its reads failed, it became a program that is not Python).
    Ended(End),
    /// Never read, and why (not Python, exited first, not permitted, a version not read).
    Ignored(String),
}

/// One process of the family.
pub struct Member {
    pub pid: i32,
    /// Its parent when it was found.
    pub ppid: i32,
    /// Its command line (`argv`), as last read (an exec'd program's once it is read).
    pub argv: Vec<String>,
    pub state: State,
    /// Its wait status once it exited (`exit(3)` is 0x300, SIGKILL 9), when seen before its
    /// parent reaped it.
    pub exit_status: Option<i32>,
    session: Option<Session>,
    /// What was sampled, while no session holds it (a flight recorder's: its last seconds).
    profile: Option<Profile>,
    /// With it, a flight recorder's whole profile and recording.
    recorded: Option<(Profile, Recording)>,
    /// The program it was last found running (`Stat::image`) and that program's runtime.
    image: Option<(u64, u64)>,
    runtime: Option<(u64, PathBuf)>,
    /// When it was first read (the run's time), for its profile's duration, and last read.
    first_read: Option<Duration>,
    last_read: Duration,
    weight: u64,
    failed: u32,
    /// Its reads failed and it was found running the same program: not looked at again
    /// before a read succeeds.
    examined: bool,
}

impl Member {
    fn new(pid: i32, ppid: i32, argv: Vec<String>, now: Duration) -> Member {
        Member {
            pid,
            ppid,
            argv,
            state: State::Waiting {
                since: now,
                next_try: now,
                why: NOT_YET.into(),
            },
            exit_status: None,
            session: None,
            profile: None,
            recorded: None,
            image: None,
            runtime: None,
            first_read: None,
            last_read: Duration::ZERO,
            weight: 0,
            failed: 0,
            examined: false,
        }
    }

    /// What was sampled of it; `None` when it was never read.
    pub fn profile(&self) -> Option<&Profile> {
        match &self.session {
            Some(s) => Some(&s.profile),
            None => self.profile.as_ref(),
        }
    }

    pub fn into_profile(self) -> Option<Profile> {
        match self.session {
            Some(s) => Some(s.into_profile()),
            None => self.profile,
        }
    }

    /// Still to be read, or being read.
    fn live(&self) -> bool {
        matches!(self.state, State::Sampling | State::Waiting { .. })
    }

    /// Ends its sampling (`now`: the run's time) and keeps what it collected.
    fn end(&mut self, end: End, now: Duration) {
        if let Some(mut session) = self.session.take() {
            let since = self.first_read.unwrap_or_default();
            session.finish(&end, now.saturating_sub(since));
            let (profile, recorded) = session.into_parts();
            self.profile = Some(profile);
            self.recorded = recorded;
        }
        self.state = match (&self.profile, end) {
            // Why it was not read so far says more than that it exited (a shell that ran).
            (None, End::Exited) => match &self.state {
                State::Waiting { why, .. } if why != NOT_YET => State::Ignored(why.clone()),
                _ => State::Ignored("exited before it could be read".into()),
            },
            (None, End::Failed(why)) => State::Ignored(why),
            (_, end) => State::Ended(end),
        };
    }

    /// Whether it exited, by its `stat` now (`None`: it is gone; `Z`: it waits to be reaped);
    /// if so it keeps its wait status and, when still read or waited for, ends as exited.
    fn end_if_exited(&mut self, stat: Option<Stat>, now: Duration) -> bool {
        let exited = stat.is_none_or(|s| s.state == b'Z');
        if exited {
            if let Some(code) = stat.and_then(|s| s.exit_code) {
                self.exit_status = Some(code);
            }
            if self.live() {
                self.end(End::Exited, now);
            }
        }
        exited
    }

    /// Stops waiting for it: it is not read (or, read before, not read again).
    fn give_up(&mut self, why: String) {
        self.state = match self.profile {
            None => State::Ignored(why),
            Some(_) => State::Ended(End::Failed(why)),
        };
    }
}

/// A run over a process and its descendants.
pub struct Family {
    options: Options,
    descendants: Descendants,
    symbols: Symbols,
    pub members: Vec<Member>,
    /// Processes found beyond `MAX_PROCESSES`, not read.
    pub unfollowed: u64,
    /// Ticks at which a process was read, for whoever watches the run from another thread.
    pub reads: Arc<AtomicU64>,
    /// Requests for the recent samples (`requests`).
    inbox: Inbox,
}

impl Family {
    /// A run over the process of `root` (already made and checked) and the processes it
    /// starts; `symbols` holds what was read of its interpreter's file (`find_runtime_with`).
    pub fn new(root: Session, rt: &Runtime, options: Options, symbols: Symbols) -> Family {
        let descendants = Descendants::new(rt.pid);
        let argv = descendants.argv(rt.pid).unwrap_or_default();
        // Its parent and program from the first poll's `stat`.
        let mut member = Member::new(rt.pid, 0, argv, Duration::ZERO);
        member.session = Some(root);
        member.state = State::Sampling;
        member.runtime = Some((rt.address, rt.library.clone()));
        member.first_read = Some(Duration::ZERO);
        Family {
            options,
            descendants,
            symbols,
            members: vec![member],
            unfollowed: 0,
            reads: Arc::new(AtomicU64::new(0)),
            inbox: Inbox::default(),
        }
    }

    /// Where to ask, from another thread, for the recent samples of the whole family (its
    /// processes merged, as at the end) while the run goes on.
    pub fn requests(&mut self) -> Sender<Request> {
        self.inbox.open()
    }

    /// Answers the requests waiting (between two reads): the merge of the processes read now
    /// (their last `seconds`), or of every process (`whole`), and their stalls in its terms.
    fn serve_requests(&self) {
        self.inbox.answer(|request| {
            let mut parts: Vec<(u32, Profile, Vec<Stall>)> = Vec::new();
            for m in &self.members {
                let since = m.first_read.unwrap_or_default().as_secs_f64();
                // Stalls in the family's time: from the run's start, not the process's.
                let timed = |mut found: Vec<Stall>| {
                    found.iter_mut().for_each(|st| st.start += since);
                    found
                };
                let pid = m.pid as u32;
                match (&m.session, &m.recorded, &m.profile) {
                    (Some(s), _, _) => {
                        let found =
                            timed(request.stalls.map_or_else(Vec::new, |min| s.stalls(min)));
                        let profile = match request.whole {
                            true => s.since_start(),
                            false => s.recent(request.seconds),
                        };
                        parts.push((pid, profile, found));
                    }
                    // A process that ended is in everything since the start, and in the last
                    // seconds with no samples (its threads keep their places in the merge).
                    (None, Some((whole, recording)), _) => {
                        let found = request
                            .stalls
                            .map_or_else(Vec::new, |min| stalls::stalls(whole, recording, min));
                        let profile = match request.whole {
                            true => whole.clone(),
                            false => whole.since(whole),
                        };
                        parts.push((pid, profile, timed(found)));
                    }
                    (None, None, Some(p)) => {
                        let profile = match request.whole {
                            true => p.clone(),
                            false => p.since(p),
                        };
                        parts.push((pid, profile, Vec::new()));
                    }
                    (None, None, None) => {}
                }
            }
            let options = &self.options;
            let profile = merge::merge(
                1.0 / options.rate,
                options.mode,
                parts.iter().map(|(pid, p, _)| (*pid, p)),
            );
            let mut stalls = Vec::new();
            let mut first_thread = 0u32;
            for (_, part, found) in &parts {
                stalls.extend(
                    found
                        .iter()
                        .map(|st| st.in_merge(part, &profile, first_thread)),
                );
                first_thread += part.threads.len() as u32;
            }
            stalls.sort_by(|a, b| a.start.total_cmp(&b.start));
            Answer { profile, stalls }
        });
    }

    /// Samples until `stop` is set, the duration passes, or no process is left to read.
    pub fn run(&mut self, stop: &AtomicBool) -> End {
        clock::prepare_thread(NICE);
        let mut clock = Clock::start(self.options.rate);
        let poll_every = if self.descendants.cheap() {
            POLL_EVERY
        } else {
            POLL_EVERY_SCAN
        };
        let (mut next_poll, mut next_full) = (Duration::ZERO, Duration::ZERO);
        let end = loop {
            let elapsed = clock.elapsed();
            if let Some(end) = asked_to_end(stop, elapsed, self.options.duration) {
                break end;
            }
            // Right after the last reads, while the next tick is farthest.
            if elapsed >= next_poll {
                let full = elapsed >= next_full;
                self.poll(elapsed, full);
                next_poll = elapsed + poll_every;
                if full {
                    next_full = elapsed + FULL_POLL_EVERY;
                }
            }
            if !self.members.iter().any(Member::live) {
                break End::Exited;
            }
            let passed = match self.options.blocking {
                true => {
                    let members = &mut self.members;
                    clock.wait_serving(elapsed, stop, SERVE_EVERY, || {
                        members
                            .iter_mut()
                            .filter_map(|m| m.session.as_mut())
                            .for_each(Session::serve)
                    })
                }
                false => clock.wait(elapsed, stop),
            };
            if self.members.iter().any(|m| m.session.is_some()) {
                self.reads.fetch_add(1, Ordering::Relaxed);
            }
            for m in &mut self.members {
                let Some(session) = m.session.as_mut() else {
                    continue;
                };
                session.profile.asked += passed;
                m.weight += passed;
                let read = session.sample(m.weight);
                if let Some(end) = outcome(read, &mut m.weight, &mut m.failed) {
                    if end == End::Exited {
                        m.exit_status = self.descendants.exit_status(m.pid);
                    }
                    m.end(end, clock.elapsed());
                } else if m.failed == 0 {
                    m.examined = false;
                    m.last_read = elapsed;
                }
            }
            self.serve_requests();
        };
        let now = clock.elapsed();
        self.end_the_exited(now);
        for m in &mut self.members {
            match m.state {
                State::Sampling => m.end(end.clone(), now),
                // Why it was not read so far stays why (a shell that still waits for its child).
                State::Waiting { ref why, .. } => {
                    let why = match why.as_str() {
                        NOT_YET => "the run ended before it was read".into(),
                        why => why.to_string(),
                    };
                    m.give_up(why);
                }
                _ => {}
            }
        }
        end
    }

    /// At the run's end, the processes that exited since the last look end as exited, not by
    /// the run's end: a dying process's reads fail, and one looked at again then is no longer
    /// Python (it would be listed as not Python).
    fn end_the_exited(&mut self, now: Duration) {
        // Every followed process's `stat` read again (what is found new now is not followed).
        let _ = self.descendants.poll(true);
        for m in &mut self.members {
            m.end_if_exited(self.descendants.stat(m.pid).copied(), now);
        }
    }

    /// Finds the family's new processes, and (`full`) what became of the known ones.
    fn poll(&mut self, now: Duration, full: bool) {
        for found in self.descendants.poll(full) {
            if self.members.len() >= MAX_PROCESSES {
                self.unfollowed += 1;
                continue;
            }
            let argv = self.descendants.argv(found.pid).unwrap_or_default();
            let mut member = Member::new(found.pid, found.stat.ppid, argv, now);
            member.image = Some(found.stat.image);
            self.members.push(member);
        }
        for i in 0..self.members.len() {
            let stat = self.descendants.stat(self.members[i].pid).copied();
            self.follow(i, stat, now);
        }
    }

    /// What member `i` does next, from its `stat` now (`None`: it is gone).
    fn follow(&mut self, i: usize, stat: Option<Stat>, now: Duration) {
        let m = &mut self.members[i];
        if m.end_if_exited(stat, now) {
            return;
        }
        let image = stat.map(|s| s.image);
        let exec = m.image.is_some() && image != m.image;
        if m.image.is_none() {
            m.image = image;
            m.ppid = stat.map_or(0, |s| s.ppid);
        }
        match m.state.clone() {
            State::Sampling if exec || (m.failed >= REEXAMINE_AFTER && !m.examined) => {
                m.image = image;
                self.reexamine(i, now);
            }
            State::Waiting {
                since,
                next_try,
                why,
            } => {
                if exec {
                    m.image = image;
                    m.state = waiting(now, now, why);
                    self.try_start(i, now);
                } else if now.saturating_sub(since) >= STARTING {
                    m.give_up(why);
                } else if now >= next_try {
                    self.try_start(i, now);
                }
            }
            // A process left (not Python) or ended (its program was no longer Python) that
            // execs again may be Python now.
            State::Ignored(_) | State::Ended(End::Failed(_)) if exec => {
                m.image = image;
                m.state = waiting(now, now, "exec'd".into());
                self.try_start(i, now);
            }
            _ => {}
        }
    }

    /// Member `i`'s reads failed, or it exec'd: reads on with the runtime it runs now, or
    /// waits for one (an exec'd Python loads its interpreter first).
    fn reexamine(&mut self, i: usize, now: Duration) {
        let pid = self.members[i].pid;
        let found = find_runtime_with(pid, &mut self.symbols);
        let m = &mut self.members[i];
        if let Ok(rt) = &found {
            if m.runtime.as_ref() == Some(&(rt.address, rt.library.clone())) && m.failed > 0 {
                // The same program: the failures go on counting towards the run's end.
                m.examined = true;
                return;
            }
        }
        if let Some(session) = m.session.take() {
            m.profile = Some(session.into_profile());
        }
        // Reads of the program it ran succeeded only until it exec'd: how long they went on
        // is how long it ran that program (at most), however late this is seen.
        let ran = m
            .last_read
            .saturating_sub(m.first_read.unwrap_or(m.last_read));
        if ran < EXEC_WINDOW {
            m.profile = None;
            m.first_read = None;
        }
        m.state = waiting(now, now, "exec'd".into());
        m.runtime = None;
        self.try_start(i, now);
    }

    /// Tries to read member `i` as Python: a session once its interpreter has a thread.
    fn try_start(&mut self, i: usize, now: Duration) {
        let pid = self.members[i].pid;
        if let Some(argv) = self.descendants.argv(pid) {
            self.members[i].argv = argv;
        }
        if let Some(helper) = self.helper(i) {
            // Samples from before it exec'd the helper are its parent's stacks: dropped too.
            let why = format!("multiprocessing's {helper}, not the program's work");
            self.members[i].profile = None;
            self.members[i].give_up(why);
            return;
        }
        let attempt = find_runtime_with(pid, &mut self.symbols);
        let m = &mut self.members[i];
        let State::Waiting { since, .. } = m.state else {
            return;
        };
        // Tries back off (each reads the map of a process that may never be Python): the next
        // after half the time waited so far.
        let delay = (now.saturating_sub(since) / 2).clamp(POLL_EVERY, MAX_TRY_DELAY);
        let rt = match attempt {
            Ok(rt) => rt,
            Err(runtime::Error::NotPython(why)) => {
                m.state = waiting(since, now + delay, why);
                return;
            }
            Err(runtime::Error::Io { error, .. }) if error.raw_os_error() == Some(libc::ESRCH) => {
                m.end(End::Exited, now);
                return;
            }
            Err(runtime::Error::Io { error, .. }) if starting_io(&error) => {
                m.state = waiting(since, now + delay, error.to_string());
                return;
            }
            Err(e) => {
                // Not permitted, or its files cannot be read: that does not pass.
                m.give_up(e.to_string());
                return;
            }
        };
        let mut session = match Session::new(&rt, self.options) {
            Ok(mut session) => {
                // Times go on from its first read, the start of the session that ended.
                let since = now.saturating_sub(m.first_read.unwrap_or(now));
                match (m.recorded.take(), m.profile.take()) {
                    (Some((whole, recording)), _) => session.resume(whole, Some(recording), since),
                    (None, Some(profile)) => session.resume(profile, None, since),
                    (None, None) => {}
                }
                session
            }
            Err(e) if starting(&e) => {
                m.state = waiting(since, now + delay, e.to_string());
                return;
            }
            Err(e) => {
                m.give_up(e.to_string());
                return;
            }
        };
        match session.check() {
            Ok(threads) if threads > 0 => {
                // A blocking run holds each process it reads, from its first read.
                if let Err(Refused(why)) = session.hold() {
                    m.profile = keep(session);
                    m.give_up(why);
                    return;
                }
                m.runtime = Some((rt.address, rt.library.clone()));
                m.first_read.get_or_insert(now);
                m.last_read = now;
                m.session = Some(session);
                m.state = State::Sampling;
                m.weight = 0;
                m.failed = 0;
                m.examined = false;
            }
            Ok(_) => {
                m.profile = keep(session);
                m.state = waiting(
                    since,
                    now + delay,
                    "its interpreter has no thread yet".into(),
                );
            }
            Err(Error::Io(e)) if e.raw_os_error() == Some(libc::ESRCH) => {
                m.profile = keep(session);
                m.end(End::Exited, now);
            }
            Err(e) => {
                m.profile = keep(session);
                m.state = waiting(since, now + delay, e.to_string());
            }
        }
    }

    /// Which of multiprocessing's helper processes member `i` is, if it is one: its resource
    /// tracker or its forkserver, which idle beside the program and outlive it. A fork of the
    /// forkserver (its command line, its child) is a worker, not a helper.
    fn helper(&self, i: usize) -> Option<&'static str> {
        let m = &self.members[i];
        let kind = helper_kind(&m.argv)?;
        let forked = self
            .members
            .iter()
            .any(|p| p.pid == m.ppid && p.argv == m.argv);
        (!forked).then_some(kind)
    }

    /// A blocking run's hold on the process it was started on (see `Session::hold`), on the
    /// thread that samples.
    pub fn hold(&mut self) -> Result<(), Refused> {
        match self.members.first_mut().and_then(|m| m.session.as_mut()) {
            Some(session) => session.hold(),
            None => Ok(()),
        }
    }

    /// How the run goes.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The processes found, the root first, in the order found.
    pub fn into_members(self) -> Vec<Member> {
        self.members
    }
}

/// The helper `argv` runs, by the code it gives `-c` (multiprocessing starts its helpers so;
/// 3.15's forkserver code first imports `sys`, for the arguments it passes after it).
fn helper_kind(argv: &[String]) -> Option<&'static str> {
    let code = argv.iter().skip_while(|a| *a != "-c").nth(1)?;
    let code = code.strip_prefix("import sys; ").unwrap_or(code);
    [
        (
            "from multiprocessing.resource_tracker import",
            "resource tracker",
        ),
        (
            "from multiprocessing.semaphore_tracker import",
            "resource tracker",
        ),
        ("from multiprocessing.forkserver import", "forkserver"),
    ]
    .into_iter()
    .find_map(|(start, kind)| code.starts_with(start).then_some(kind))
}

/// An error that an interpreter gives while it starts (or a fork while it execs), and then no
/// more: pointers it has not set yet lead nowhere (EFAULT, EIO) or to what does not hang
/// together. Tried again until `STARTING` passed. Not permitted, or a version or layout that
/// is not read, does not pass.
fn starting(e: &Error) -> bool {
    match e {
        Error::Io(e) => starting_io(e),
        Error::Layout(_) | Error::NotReady(_) => true,
        Error::Unsupported(_) => false,
    }
}

fn starting_io(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EFAULT | libc::EIO))
}

fn waiting(since: Duration, next_try: Duration, why: String) -> State {
    State::Waiting {
        since,
        next_try,
        why,
    }
}

/// A session's profile when it held samples of an earlier program of the same process.
fn keep(session: Session) -> Option<Profile> {
    let profile = session.into_profile();
    (profile.taken > 0 || !profile.threads.is_empty()).then_some(profile)
}

#[cfg(test)]
mod tests {
    use super::super::stacks::fake310::Fake310;
    use super::*;
    use crate::samples::profile::Mode;

    fn options(duration: f64) -> Options {
        Options {
            rate: 1000.0,
            mode: Mode::Wall,
            duration: Some(Duration::from_secs_f64(duration)),
            cpu_states: false,
            all_threads: true,
            blocking: false,
            record_last: None,
            record_all: false,
        }
    }

    #[test]
    fn a_child_that_is_not_python_is_found_and_left_unread() {
        // The root is a fake 3.10 runtime in this process; its child runs `sleep`.
        let mut fake = Fake310::new();
        let rt = Fake310::rt(fake.runtime([7, 8], 8));
        let root = Session::new(&rt, options(0.3)).expect("session");
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let mut family = Family::new(root, &rt, options(0.3), Symbols::default());
        let end = family.run(&AtomicBool::new(false));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(end, End::Duration);
        let root = &family.members[0];
        assert_eq!(root.state, State::Ended(End::Duration));
        let sampled = root.profile().expect("the root's samples");
        assert!(sampled.samples() > 0);
        assert!(sampled.functions.iter().any(|f| f.name == "f"));
        let sleep = family
            .members
            .iter()
            .find(|m| m.pid == child.id() as i32)
            .expect("the child found");
        assert_eq!(sleep.argv, ["sleep", "5"]);
        assert_eq!(sleep.ppid, std::process::id() as i32);
        assert!(sleep.profile().is_none());
        match &sleep.state {
            State::Ignored(why) => assert!(why.contains("not Python"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn what_a_starting_interpreter_gives_is_waited_through_and_a_refusal_is_not() {
        let io = |errno| Error::Io(std::io::Error::from_raw_os_error(errno));
        // A pointer it has not set yet, or a layout read half made.
        assert!(starting(&io(libc::EFAULT)) && starting(&io(libc::EIO)));
        assert!(starting(&Error::Layout("torn".into())));
        assert!(starting(&crate::sampler::stacks::not_ready(5)));
        // Not permitted, or a version that is not read: trying again changes nothing.
        assert!(!starting(&io(libc::EPERM)) && !starting(&io(libc::EACCES)));
        assert!(!starting(&Error::Unsupported("3.9".into())));
    }

    #[test]
    fn a_process_that_exited_since_the_last_look_ends_as_exited_with_what_it_had() {
        // Two children of this process, found by a poll; one had been read, its reads failed as
        // it died, and it was waited for again (no longer Python) when the run ended.
        let mut fake = Fake310::new();
        let rt = Fake310::rt(fake.runtime([7, 8], 8));
        let root = Session::new(&rt, options(1.0)).expect("session");
        let spawn = || {
            std::process::Command::new("sleep")
                .arg("5")
                .spawn()
                .expect("sleep")
        };
        let (mut dying, mut living) = (spawn(), spawn());
        let mut family = Family::new(root, &rt, options(1.0), Symbols::default());
        family.poll(Duration::ZERO, true);
        let at = |f: &Family, pid: u32| {
            f.members
                .iter()
                .position(|m| m.pid == pid as i32)
                .expect("found")
        };
        let (d, l) = (at(&family, dying.id()), at(&family, living.id()));
        family.members[d].profile = Some(Profile::new(0.001, Mode::Wall));
        family.members[d].state = waiting(Duration::ZERO, Duration::from_secs(60), "x".into());
        let _ = dying.kill();
        let _ = dying.wait();
        family.end_the_exited(Duration::from_millis(30));
        let _ = living.kill();
        let _ = living.wait();
        assert_eq!(family.members[d].state, State::Ended(End::Exited));
        assert!(family.members[d].profile().is_some());
        // The one still running is left as it was, for the run's end to say why.
        assert!(matches!(family.members[l].state, State::Waiting { .. }));
        assert!(family.members[0].live());
    }

    #[test]
    fn multiprocessing_helpers_are_told_by_the_code_they_run() {
        let argv = |code: &str| -> Vec<String> {
            ["python3.12", "-B", "-c", code].map(String::from).to_vec()
        };
        let tracker = argv("from multiprocessing.resource_tracker import main;main(5)");
        assert_eq!(helper_kind(&tracker), Some("resource tracker"));
        let server = argv("from multiprocessing.forkserver import main; main(10, 11)");
        assert_eq!(helper_kind(&server), Some("forkserver"));
        let server_315 = argv("import sys; from multiprocessing.forkserver import main; main(1)");
        assert_eq!(helper_kind(&server_315), Some("forkserver"));
        let spawned = argv("from multiprocessing.spawn import spawn_main; spawn_main()");
        assert_eq!(helper_kind(&spawned), None);
        assert_eq!(helper_kind(&["python".into(), "-c".into()]), None);
        assert_eq!(helper_kind(&["python".into(), "prog.py".into()]), None);
    }

    #[test]
    fn a_process_ends_its_own_profile_and_one_never_read_says_why() {
        let mut fake = Fake310::new();
        let rt = Fake310::rt(fake.runtime([7, 8], 8));
        let mut session = Session::new(&rt, options(1.0)).expect("session");
        session.sample(1).expect("a read");
        let mut read = Member::new(1, 0, vec!["python".into()], Duration::ZERO);
        read.session = Some(session);
        read.state = State::Sampling;
        read.end(End::Exited, Duration::from_millis(40));
        assert_eq!(read.state, State::Ended(End::Exited));
        let profile = read.profile().expect("kept");
        assert_eq!(profile.samples(), 1);
        assert_eq!(profile.duration, 0.04);

        let mut gone = Member::new(2, 1, Vec::new(), Duration::ZERO);
        gone.end(End::Exited, Duration::from_millis(5));
        let why = State::Ignored("exited before it could be read".into());
        assert_eq!(gone.state, why);
        let mut odd = Member::new(3, 1, Vec::new(), Duration::ZERO);
        odd.give_up("not Python".into());
        assert_eq!(odd.state, State::Ignored("not Python".into()));
        assert!(!odd.live() && !gone.live());
    }
}
