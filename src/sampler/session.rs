//! `Session`: a sampling run over one process: a clock that asks for a sample every interval
//! (`clock`), the stack reader, and what the mode keeps of each read, into a
//! `samples::Profile`. A tick that is already past when a read ends is counted as asked but
//! not taken. The run ends when asked to, after its duration, when the target exits, or when
//! its reads keep failing (it exec'd another program). `family` drives several sessions on one
//! clock through `sample` and `finish`. A blocking run (`Options::blocking`) holds the target
//! (`pause`) from `hold` to `finish`, on the thread that samples: each read is taken with
//! every thread of the target stopped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::clock::{self, Clock};
use super::names;
use super::pause::{Pause, Refused, SERVE_EVERY};
use super::requests::Inbox;
pub use super::requests::{Answer, Request};
use super::runtime::Runtime;
use super::stacks::{Error, StackReader, ThreadSample, MAX_FRAMES};
use super::status::{self, Gil, ThreadStates};
use crate::samples::profile::{Frame, Function, Mode, Profile};
use crate::samples::recording::Recording;
use crate::samples::seen::Seen;
use crate::samples::stalls::{self, Stall};
use crate::samples::timebins::TimeBins;

/// The reading thread's priority: below the target's, which goes first on a busy machine.
const NICE: i32 = 10;

/// The highest rate a run takes: a read of a 20-frame stack costs tens of microseconds of the
/// sampler's CPU, so beyond this most ticks would go unread and late reads would stand in for
/// them; a rate the reads cannot keep up with is refused, not pretended.
pub const MAX_RATE: f64 = 20_000.0;

/// Whole reads that fail in a row before the run ends: the target is gone or is no longer
/// the program it was.
pub const MAX_FAILED_READS: u32 = 200;

/// Stops and reads again of a blocking read in which a thread was torn: stopped where the
/// interpreter is between two stores of one change (a generator's frame unlinked before the
/// thread's innermost frame moved: the C compiler orders such stores as it likes), it is let
/// run for tens of microseconds and read anew, rather than dropped.
const STOPPED_REREADS: u32 = 3;
/// The longest a torn thread is waited for to run before it is read again.
const TORN_RUN_WAIT: Duration = Duration::from_millis(20);

/// The least time between two reads of the threads' names (a read costs ~20 us a thread).
const NAMES_EVERY: Duration = Duration::from_millis(20);
/// How long a new thread's name is looked for (it may start before `threading` lists it;
/// threads started by `_thread` or from C are never listed).
const NAMES_WAIT: Duration = Duration::from_secs(1);

/// How a run is asked to go.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Samples a second.
    pub rate: f64,
    pub mode: Mode,
    /// Stop after this long; `None`: until stopped or the target exits.
    pub duration: Option<Duration>,
    /// Read whether each thread is on a CPU at each sample (always in `cpu` mode; in `wall`
    /// mode for the per-line CPU seconds, where threads have OS ids).
    pub cpu_states: bool,
    /// Every thread; `false`: only the main thread (`ThreadSample::main`).
    pub all_threads: bool,
    /// Stop the target's threads for each read (`pause`): no torn read, at a cost to it.
    pub blocking: bool,
    /// Keep the samples of the last this many seconds only, in time order (a flight
    /// recorder): the run's profile is theirs, and any window of them can be asked for.
    pub record_last: Option<f64>,
    /// Keep every sample in time order (for the stalls), when `record_last` does not bound
    /// them.
    pub record_all: bool,
}

/// Why a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Stopped by its owner.
    Stopped,
    /// Its duration passed.
    Duration,
    /// The target exited.
    Exited,
    /// Reads kept failing: the last error.
    Failed(String),
}

/// One run over one process.
pub struct Session {
    reader: StackReader,
    options: Options,
    pub profile: Profile,
    threads: Vec<ThreadSample>,
    states: ThreadStates,
    /// Where the GIL is (`gil` mode only).
    gil: Option<Gil>,
    /// The target, for reading its threads' names.
    runtime: Runtime,
    /// When names were last read; a thread seen for the first time asks for a new read.
    names_read: Option<Instant>,
    names_wanted: bool,
    /// When each thread of the profile was first seen (a thread may be seen before
    /// `threading` lists it: its name is asked for again for a while).
    first_seen: Vec<Instant>,
    /// The reader's function index -> the profile's.
    functions: Vec<u32>,
    frames: Vec<Frame>,
    truncated_function: Option<u32>,
    /// Ticks read so far, for whoever watches the run from another thread (a progress line).
    pub reads: Arc<AtomicU64>,
    /// A blocking run's hold on the target, from `hold` (on the sampling thread) to `finish`.
    pause: Option<Pause>,
    /// A blocking run's threads on a CPU (by OS id) just before they were stopped: stopped,
    /// every thread reads as such.
    on_cpu_before: Vec<(u64, bool)>,
    /// When the session began: reads are timed from here.
    started: Instant,
    /// The samples in time order (`Options::record_last`).
    recording: Option<Recording>,
    /// Requests for the recent samples (`requests`).
    inbox: Inbox,
}

impl Session {
    /// A run over the process of `rt`; fails when its stacks (or, in `gil` mode, its GIL)
    /// cannot be found, or in `cpu` mode when its threads' OS ids are not known (3.10 where
    /// the C library's thread descriptors cannot be read: the states are read by OS id).
    pub fn new(rt: &Runtime, mut options: Options) -> Result<Session, Error> {
        let reader = StackReader::new(rt)?;
        if !reader.os_ids() {
            if options.mode == Mode::Cpu {
                return Err(Error::Unsupported(format!(
                    "cpu mode needs the OS id of each thread, which the thread states of \
                     Python 3.10 do not keep and which could not be read from its C library \
                     (glibc on x86-64 only) in process {}: use wall or gil mode",
                    rt.pid
                )));
            }
            options.cpu_states = false;
        }
        let gil = match options.mode {
            Mode::Gil => Some(Gil::find(rt)?),
            _ => None,
        };
        let interval = 1.0 / options.rate;
        let mut profile = Profile::new(interval, options.mode);
        profile.time = Some(TimeBins::new(0, (interval * 1e6) as u64));
        Ok(Session {
            reader,
            options,
            profile,
            threads: Vec::new(),
            states: ThreadStates::new(rt.pid),
            gil,
            runtime: rt.clone(),
            names_read: None,
            names_wanted: false,
            first_seen: Vec::new(),
            functions: Vec::new(),
            frames: Vec::new(),
            truncated_function: None,
            reads: Arc::new(AtomicU64::new(0)),
            pause: None,
            on_cpu_before: Vec::new(),
            started: Instant::now(),
            recording: match (options.record_last, options.record_all) {
                (Some(s), _) => Some(Recording::new(Some(s))),
                (None, true) => Some(Recording::new(None)),
                (None, false) => None,
            },
            inbox: Inbox::default(),
        })
    }

    /// Where to ask, from another thread, for the recent samples while the run goes on.
    pub fn requests(&mut self) -> Sender<Request> {
        self.inbox.open()
    }

    /// Answers the requests waiting (between two reads).
    fn serve_requests(&self) {
        self.inbox.answer(|request| Answer {
            profile: match request.whole {
                true => self.since_start(),
                false => self.recent(request.seconds),
            },
            stalls: request.stalls.map_or_else(Vec::new, |min| self.stalls(min)),
        });
    }

    /// The stalls of `min_seconds` or longer of what the run kept in time order (none without
    /// a recording), in its own profile's terms.
    pub fn stalls(&self, min_seconds: f64) -> Vec<Stall> {
        match &self.recording {
            Some(recording) => stalls::stalls(&self.profile, recording, min_seconds),
            None => Vec::new(),
        }
    }

    /// The profile of the last `seconds` (`None`: all the run kept); without a recording, of
    /// everything so far (`seconds` is not asked for then).
    pub fn recent(&self, seconds: Option<f64>) -> Profile {
        match &self.recording {
            Some(recording) => recording.window(&self.profile, seconds),
            None => self.since_start(),
        }
    }

    /// Everything sampled so far.
    pub fn since_start(&self) -> Profile {
        let mut p = self.profile.clone();
        p.duration = self.started.elapsed().as_secs_f64();
        p
    }

    /// Goes on adding to `profile` (and its recording in time order, when it kept one)
    /// instead of its own (new, empty) ones: the same process, once it exec'd another Python
    /// (its threads keep their lanes). `since`: how long ago that profile's session began, so
    /// that times go on from there.
    pub fn resume(&mut self, profile: Profile, recording: Option<Recording>, since: Duration) {
        self.first_seen = vec![Instant::now(); profile.threads.len()];
        self.profile = profile;
        if let (Some(kept), Some(_)) = (recording, &self.recording) {
            self.recording = Some(kept);
        }
        self.started = Instant::now().checked_sub(since).unwrap_or(self.started);
    }

    /// A blocking run's hold on the target: every thread seized, on the calling thread, which
    /// is the one that samples from now on (ptrace's tracer). Refused with why in one line
    /// when ptrace is not permitted. Nothing for a run that does not block.
    pub fn hold(&mut self) -> Result<(), Refused> {
        if self.options.blocking && self.pause.is_none() {
            self.pause = Some(Pause::seize(self.runtime.pid)?);
            // A torn read of a stopped target is no race that reading again would get past.
            self.reader.rereads = 0;
        }
        Ok(())
    }

    /// Between a blocking run's samples: the signals sent to the target passed on.
    pub fn serve(&mut self) {
        if let Some(pause) = self.pause.as_mut() {
            pause.serve();
        }
    }

    /// Samples until `stop` is set, the duration passes, or the target is gone.
    pub fn run(&mut self, stop: &AtomicBool) -> End {
        // A blocking run's target waits for each read: its reader yields to nothing else.
        clock::prepare_thread(if self.options.blocking { 0 } else { NICE });
        let mut clock = Clock::start(self.options.rate);
        if let Err(Refused(why)) = self.hold() {
            let end = End::Failed(why);
            self.finish(&end, clock.elapsed());
            return end;
        }
        let mut weight = 0u64;
        let mut failed = 0u32;
        let end = loop {
            let elapsed = clock.elapsed();
            if let Some(end) = asked_to_end(stop, elapsed, self.options.duration) {
                break end;
            }
            // Ticks missed while reading (or while this thread waited for a CPU) are not made
            // up; the next sample stands for them.
            let passed = match self.pause.as_mut() {
                Some(pause) => clock.wait_serving(elapsed, stop, SERVE_EVERY, || pause.serve()),
                None => clock.wait(elapsed, stop),
            };
            self.profile.asked += passed;
            weight += passed;
            let read = self.sample(weight);
            self.reads.store(self.profile.taken, Ordering::Relaxed);
            self.serve_requests();
            if let Some(end) = outcome(read, &mut weight, &mut failed) {
                break end;
            }
        };
        self.finish(&end, clock.elapsed());
        end
    }

    /// Ends a run that lasted `duration`: names the threads as they are now (a thread may have
    /// been renamed since it was first seen), unless the target is gone.
    pub fn finish(&mut self, end: &End, duration: Duration) {
        // Let go of the target first, on the thread that holds it.
        if let Some(mut pause) = self.pause.take() {
            pause.release();
        }
        self.profile.duration = duration.as_secs_f64();
        if *end != End::Exited {
            self.name_threads();
        }
    }

    /// Names the threads of the last read from the target's `threading` module. Names are
    /// read when a thread is first seen (at most every `NAMES_EVERY`) and at the end; only
    /// the threads alive in the last read (and kept: the main one alone when only it is) are
    /// named, since a dead thread's ident may be a live one's now. A failed read leaves names
    /// as they were.
    fn name_threads(&mut self) {
        self.names_read = Some(Instant::now());
        self.names_wanted = false;
        let Ok(names) = names::thread_names(&self.runtime) else {
            return;
        };
        for t in &self.threads {
            if !self.options.all_threads && !t.main {
                continue;
            }
            let index = self.profile.thread(t.native_thread_id, t.thread_id) as usize;
            match names.get(&t.thread_id) {
                Some(name) => self.profile.threads[index].name = Some(name.clone()),
                None => {
                    let young = self
                        .first_seen
                        .get(index)
                        .is_some_and(|at| at.elapsed() < NAMES_WAIT);
                    self.names_wanted |= young && self.profile.threads[index].name.is_none();
                }
            }
        }
    }

    /// One read of every thread, kept nowhere: whether the target can be read at all, and how
    /// many threads it has (none before its interpreter made its first).
    pub fn check(&mut self) -> Result<usize, Error> {
        let mut threads = std::mem::take(&mut self.threads);
        let read = self.reader.read(&mut threads);
        let count = threads.len();
        self.threads = threads;
        read.map(|()| count)
    }

    /// What the run collected (a flight recorder's: its last seconds).
    pub fn into_profile(self) -> Profile {
        self.into_parts().0
    }

    /// What the run collected, and for a flight recorder the whole profile and the recording
    /// that later windows are taken from.
    pub fn into_parts(self) -> (Profile, Option<(Profile, Recording)>) {
        match self.recording {
            Some(recording) if recording.keeps().is_none() => {
                let whole = self.profile.clone();
                (self.profile, Some((whole, recording)))
            }
            Some(recording) => {
                let mut kept = recording.window(&self.profile, None);
                kept.pauses = self.profile.pauses;
                kept.paused = self.profile.paused;
                (kept, Some((self.profile, recording)))
            }
            None => (self.profile, None),
        }
    }

    /// One sample, standing for `weight` ticks: read every thread, keep those the mode counts.
    pub fn sample(&mut self, weight: u64) -> Result<(), Error> {
        if let Err(Refused(why)) = self.hold() {
            return Err(Error::Unsupported(why));
        }
        let at = self.started.elapsed().as_micros() as u64;
        let mut threads = std::mem::take(&mut self.threads);
        let read = match self.pause.is_some() {
            true => self.read_stopped(&mut threads),
            false => self.reader.read(&mut threads).and_then(|()| self.holder()),
        };
        let kept = read.and_then(|holder| self.keep(&threads, weight, holder, at));
        self.threads = threads;
        if self.names_wanted && self.names_read.is_none_or(|at| at.elapsed() >= NAMES_EVERY) {
            self.name_threads();
        }
        kept
    }

    /// Where the GIL is (`gil` mode), as the last read saw it.
    fn holder(&self) -> Result<Option<u64>, Error> {
        match &self.gil {
            Some(gil) => Ok(gil.holder()?),
            None => Ok(None),
        }
    }

    /// A blocking read: which threads are on a CPU (before they stop and all read as
    /// stopped), every thread stopped, the stacks and the GIL's holder read, the threads let
    /// go, on every path.
    fn read_stopped(&mut self, threads: &mut Vec<ThreadSample>) -> Result<Option<u64>, Error> {
        self.on_cpu_before.clear();
        if self.options.cpu_states {
            for t in threads.iter() {
                let on_cpu = self.states.running(t.native_thread_id).unwrap_or(false);
                self.on_cpu_before.push((t.native_thread_id, on_cpu));
            }
        }
        let mut read = Err(Error::Io(std::io::Error::from_raw_os_error(libc::ESRCH)));
        // The threads an earlier stop found torn: kept now, they were read again (the
        // summary's torn share counts them, as without --blocking).
        let mut torn_before: Vec<u64> = Vec::new();
        for again in 0..=STOPPED_REREADS {
            if again > 0 {
                // Let the torn threads run a little past the point where they were caught.
                self.let_torn_run(threads, Duration::from_micros(20 << again));
            }
            let Some(pause) = self.pause.as_mut() else {
                break;
            };
            pause.stop()?;
            read = self.reader.read(threads).and_then(|()| self.holder());
            if let Some(pause) = self.pause.as_mut() {
                let stopped = pause.resume();
                self.profile.pauses += 1;
                self.profile.paused += stopped.as_secs_f64();
            }
            for t in threads.iter_mut() {
                t.read_again |= torn_before.contains(&t.tstate);
            }
            if read.is_err() || !threads.iter().any(|t| t.torn) {
                break;
            }
            torn_before.extend(threads.iter().filter(|t| t.torn).map(|t| t.tstate));
        }
        read
    }

    /// Waits, with the target running, until each torn thread of `threads` has been on a CPU
    /// for `slice` more (or not far from it) since now: a fixed sleep is no run for a thread
    /// that waits for a CPU on a loaded machine. At most `TORN_RUN_WAIT`; a thread whose run
    /// time cannot be read is given `slice` of sleep.
    fn let_torn_run(&self, threads: &[ThreadSample], slice: Duration) {
        let pid = self.runtime.pid;
        let before: Vec<(u64, Option<u64>)> = threads
            .iter()
            .filter(|t| t.torn)
            .map(|t| {
                (
                    t.native_thread_id,
                    status::run_time(pid, t.native_thread_id),
                )
            })
            .collect();
        let until = Instant::now() + TORN_RUN_WAIT;
        let want = slice.as_nanos() as u64 / 2;
        loop {
            std::thread::sleep(slice);
            let ran = before.iter().all(|&(tid, at)| match at {
                Some(at) => status::run_time(pid, tid).is_none_or(|now| now >= at + want),
                None => true,
            });
            if ran || Instant::now() >= until {
                return;
            }
        }
    }

    /// Whether thread `tid` was on a CPU at this sample.
    fn on_cpu(&mut self, tid: u64) -> bool {
        if !self.options.cpu_states {
            return false;
        }
        if self.pause.is_some() {
            // A thread new since the last read was not asked before it stopped: not counted.
            return self
                .on_cpu_before
                .iter()
                .any(|&(t, on_cpu)| t == tid && on_cpu);
        }
        self.states.running(tid).unwrap_or(false)
    }

    /// Counts what a read at `at` (microseconds into the session) saw, as the mode says.
    fn keep(
        &mut self,
        threads: &[ThreadSample],
        weight: u64,
        holder: Option<u64>,
        at: u64,
    ) -> Result<(), Error> {
        self.profile.taken += 1;
        if let Some(recording) = &mut self.recording {
            recording.tick(at, weight);
        }
        self.sync_functions();
        // Oldest first: an interpreter lists its newest thread first, and a run that starts
        // after the program's threads did would list them before MainThread.
        for t in threads.iter().rev() {
            if !self.options.all_threads && !t.main {
                continue;
            }
            let known = self.profile.threads.len();
            let index = self.profile.thread(t.native_thread_id, t.thread_id);
            if index as usize >= known {
                self.names_wanted = true;
                self.first_seen.push(Instant::now());
                if t.main {
                    // What threading calls it, also before (or without) threading's import.
                    self.profile.threads[index as usize].name = Some("MainThread".into());
                }
            }
            if t.torn || t.frames.is_empty() {
                // Not asked about, but alive: its stat file stays open.
                if self.options.cpu_states {
                    self.states.keep_open(t.native_thread_id);
                }
            }
            if t.torn {
                self.profile.threads[index as usize].dropped += 1;
                self.mark(Seen::Dropped { thread: index }, 1, at, false);
                continue;
            }
            let again = t.read_again;
            if t.frames.is_empty() {
                // In no Python code at both looks (a C thread with a thread state): no stack to
                // count. Off a CPU and without the GIL it is idle; on a CPU or holding the GIL
                // no count fits it, and it is counted nowhere.
                let busy = self.on_cpu(t.native_thread_id)
                    || (self.options.mode == Mode::Gil && holder == Some(t.tstate));
                if !busy {
                    self.profile.threads[index as usize].idle += weight;
                    self.mark(Seen::Idle { thread: index }, weight, at, again);
                }
                continue;
            }
            let on_cpu = self.on_cpu(t.native_thread_id);
            let counted = match self.options.mode {
                Mode::Wall => true,
                Mode::Cpu => on_cpu,
                Mode::Gil => holder == Some(t.tstate),
            };
            if !counted {
                self.profile.threads[index as usize].idle += weight;
                self.mark(Seen::Idle { thread: index }, weight, at, again);
                continue;
            }
            self.frames.clear();
            self.frames.extend(t.frames.iter().map(|f| Frame {
                function: self.functions[f.function as usize],
                line: f.line,
            }));
            if t.truncated {
                // In the unit of the stack samples it is one of.
                self.profile.truncated += weight;
                let marker = *self.truncated_function.get_or_insert_with(|| {
                    self.profile.function(Function {
                        filename: "~".into(),
                        first_line: 0,
                        name: format!("<stack cut at {MAX_FRAMES} frames>"),
                    })
                });
                self.frames.push(Frame {
                    function: marker,
                    line: 0,
                });
            }
            let stack = self.profile.add(index, &self.frames, on_cpu, weight);
            let cut = t.truncated;
            self.mark(Seen::Counted { stack, on_cpu, cut }, weight, at, again);
        }
        if self.options.cpu_states {
            self.states.sweep();
        }
        Ok(())
    }

    /// Records what the read at `at` saw of one thread: by time, and in the recording when the
    /// run keeps one; `again`: kept after a read again (counted in `Profile::reread` as the
    /// read is counted, so that those the counts leave out are not in it either).
    fn mark(&mut self, seen: Seen, weight: u64, at: u64, again: bool) {
        if again {
            self.profile.reread += weight;
        }
        if let Some(time) = &mut self.profile.time {
            time.add(at, seen, weight);
        }
        if let Some(recording) = &mut self.recording {
            recording.mark(seen, weight, again);
        }
    }

    /// Maps the reader's new functions into the profile.
    fn sync_functions(&mut self) {
        for f in self.reader.functions.iter().skip(self.functions.len()) {
            let (i, _) = self.profile.functions.insert_full(f.clone());
            self.functions.push(i as u32);
        }
    }

    /// The reader, for what else is read from the same process (thread names).
    pub fn reader(&self) -> &StackReader {
        &self.reader
    }
}

/// Whether a run `elapsed` in, which lasts `duration` (`None`: until stopped), is to end
/// now: it was stopped, or its duration passed.
pub fn asked_to_end(
    stop: &AtomicBool,
    elapsed: Duration,
    duration: Option<Duration>,
) -> Option<End> {
    if stop.load(Ordering::Relaxed) {
        return Some(End::Stopped);
    }
    duration
        .is_some_and(|d| elapsed >= d)
        .then_some(End::Duration)
}

/// What a sample's read means for its run: `None` to go on (the weight spent when the read
/// was kept, a failure counted when not), or why the run ends: the target exited (no such
/// process), or reads failed `MAX_FAILED_READS` times in a row.
pub fn outcome(read: Result<(), Error>, weight: &mut u64, failed: &mut u32) -> Option<End> {
    match read {
        Ok(()) => {
            *failed = 0;
            *weight = 0;
            None
        }
        Err(Error::Io(e)) if e.raw_os_error() == Some(libc::ESRCH) => Some(End::Exited),
        Err(e) => {
            *failed += 1;
            (*failed >= MAX_FAILED_READS).then(|| End::Failed(e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::stacks::fake310::Fake310;
    use super::*;

    #[test]
    fn without_os_ids_cpu_mode_is_refused_and_wall_mode_reads_no_cpu_states() {
        // A 3.10 runtime whose idents are no thread's: no OS id can be read.
        let mut fake = Fake310::new();
        let rt = Fake310::rt(fake.runtime([7, 8], 8));
        let options = |mode| Options {
            rate: 100.0,
            mode,
            duration: None,
            cpu_states: true,
            all_threads: false,
            blocking: false,
            record_last: None,
            record_all: false,
        };
        match Session::new(&rt, options(Mode::Cpu)) {
            Err(Error::Unsupported(why)) => assert!(why.contains("cpu mode"), "{why}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("cpu mode without OS ids"),
        }
        let mut session = Session::new(&rt, options(Mode::Wall)).expect("wall mode");
        assert!(!session.options.cpu_states);
        // Only the main thread (by the runtime's `main_thread`), told apart by its ident.
        assert!(session.sample(1).is_ok());
        let threads: Vec<_> = session
            .profile
            .threads
            .iter()
            .map(|t| (t.native_id, t.ident, t.name.clone()))
            .collect();
        assert_eq!(threads, [(0, 8, Some("MainThread".into()))]);
    }
}
