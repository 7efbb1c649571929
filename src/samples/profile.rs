//! `Profile`: the samples of one run, as counts per distinct (thread, call stack). Functions
//! and frames are interned once, so that a sample of a stack seen before costs a hash lookup
//! of a few integers and no allocation.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use indexmap::{Equivalent, IndexSet};
use rustc_hash::FxBuildHasher;

use super::timebins::TimeBins;

/// Which threads a sample counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every thread, at every sample, whatever it is doing.
    Wall,
    /// Only the threads on a CPU (running or runnable) at that sample.
    Cpu,
    /// Only the thread holding the GIL at that sample.
    Gil,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "wall" => Some(Mode::Wall),
            "cpu" => Some(Mode::Cpu),
            "gil" => Some(Mode::Gil),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Mode::Wall => "wall",
            Mode::Cpu => "cpu",
            Mode::Gil => "gil",
        }
    }
}

/// A Python function as pstats names it: `(filename, firstlineno, name)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Function {
    pub filename: String,
    pub first_line: i64,
    pub name: String,
}

/// A frame as sampled: a function (index in `Profile::functions`) and the line it was executing
/// (0 when the instruction had no line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: u32,
    pub line: i32,
}

/// One thread of the target, as seen over the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Thread {
    /// The OS thread id (`threading.get_native_id()`); 0 when not known (Python 3.10 where the
    /// C library's thread descriptors cannot be read).
    pub native_id: u64,
    /// `threading.get_ident()`.
    pub ident: u64,
    /// The name `threading` gives it, when known.
    pub name: Option<String>,
    /// Ticks whose sample counted this thread (its stack was recorded); a sample taken late
    /// counts for every tick it missed.
    pub samples: u64,
    /// Of those, the ones where it was on a CPU (known in `cpu` mode, and in `wall` mode when
    /// the run reads thread states; otherwise 0).
    pub on_cpu: u64,
    /// Samples that saw the thread but did not count it: not on a CPU (`cpu` mode), not holding
    /// the GIL (`gil` mode), or in no Python code while off a CPU and without the GIL.
    pub idle: u64,
    /// Samples whose read of this thread's stack was torn (the target changed it under the
    /// read): dropped.
    pub dropped: u64,
    /// The process it belongs to, in a profile of several processes (`merge`); 0 in the
    /// profile of one.
    pub process: u32,
}

impl Thread {
    /// What tells it apart in a profile of several processes: its process and ids.
    fn key(&self) -> (u32, u64, u64) {
        (self.process, self.native_id, self.ident)
    }
}

/// How many samples (ticks) a distinct (thread, stack) got.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub samples: u64,
    /// Of them, the samples where the thread was on a CPU.
    pub on_cpu: u64,
}

/// A stack key borrowed from a buffer, hashed and compared as the owned key `(thread,
/// frames)` is, so that a lookup needs no allocation.
struct StackRef<'a>(u32, &'a [u32]);

impl Hash for StackRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // As the tuple (u32, Box<[u32]>) hashes: each field in order.
        self.0.hash(state);
        self.1.hash(state);
    }
}

impl Equivalent<(u32, Box<[u32]>)> for StackRef<'_> {
    fn equivalent(&self, key: &(u32, Box<[u32]>)) -> bool {
        self.0 == key.0 && *self.1 == *key.1
    }
}

/// The samples of a run.
#[derive(Clone, Debug)]
pub struct Profile {
    /// Seconds one sample stands for (the asked interval).
    pub interval: f64,
    pub mode: Mode,
    pub functions: IndexSet<Function>,
    /// Fx-hashed, as `stacks`: every sample looks up each of its frames (SipHash was a fifth of
    /// a sample's instructions).
    pub frames: IndexSet<Frame, FxBuildHasher>,
    pub threads: Vec<Thread>,
    /// (thread index, frame indices outermost first) -> its count, in first-seen order.
    pub stacks: indexmap::IndexMap<(u32, Box<[u32]>), Count, FxBuildHasher>,
    /// Ticks of the clock that asked for a sample, and samples actually taken (fewer when the
    /// sampler fell behind or a whole read failed).
    pub asked: u64,
    pub taken: u64,
    /// Stack samples deeper than the reader's limit, cut at their innermost frames (outermost
    /// kept), counted as the stack samples are (a late read for the ticks it missed).
    pub truncated: u64,
    /// Reads of a thread kept (counted or idle) after its first look was torn and it was read
    /// again, weighted as the others: with those dropped, the reads a lean towards code that
    /// reads cleanly comes from (`summary::reads_note`).
    pub reread: u64,
    /// Wall seconds from the first sample to the last.
    pub duration: f64,
    /// A blocking run: the reads taken with the target stopped, and the seconds it was
    /// stopped for them (not pickled: a pickled run is not known to have blocked).
    pub pauses: u64,
    pub paused: f64,
    /// The samples by time, for a run that kept them (a session's, a recording's window); not
    /// pickled nor merged.
    pub time: Option<TimeBins>,
    /// `(native id, 0)`, or `(0, ident)` for a thread without one -> its index.
    thread_index: HashMap<(u64, u64), u32>,
    scratch: Vec<u32>,
}

/// What tells threads apart: the OS id, or the ident when the OS id is not known (0).
fn thread_key(native_id: u64, ident: u64) -> (u64, u64) {
    match native_id {
        0 => (0, ident),
        _ => (native_id, 0),
    }
}

impl Profile {
    pub fn new(interval: f64, mode: Mode) -> Profile {
        Profile {
            interval,
            mode,
            functions: IndexSet::new(),
            frames: IndexSet::default(),
            threads: Vec::new(),
            stacks: indexmap::IndexMap::default(),
            asked: 0,
            taken: 0,
            truncated: 0,
            reread: 0,
            duration: 0.0,
            pauses: 0,
            paused: 0.0,
            time: None,
            thread_index: HashMap::new(),
            scratch: Vec::new(),
        }
    }

    /// The index of function `f`, added when new.
    pub fn function(&mut self, f: Function) -> u32 {
        let (i, _) = self.functions.insert_full(f);
        i as u32
    }

    /// The index of the thread with OS id `native_id`, added when new (with its ident); a
    /// thread whose OS id is not known (0) is told apart by its ident.
    pub fn thread(&mut self, native_id: u64, ident: u64) -> u32 {
        let key = thread_key(native_id, ident);
        if let Some(&i) = self.thread_index.get(&key) {
            // An OS id reused by a later thread: the same lane, the newest ident.
            self.threads[i as usize].ident = ident;
            return i;
        }
        let i = self.threads.len() as u32;
        self.threads.push(Thread {
            native_id,
            ident,
            ..Thread::default()
        });
        self.thread_index.insert(key, i);
        i
    }

    /// Rebuilds the lookup of `thread` from `threads`, after they were filled in directly (as
    /// an unpickled profile's are).
    pub fn reindex_threads(&mut self) {
        self.thread_index = self
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| (thread_key(t.native_id, t.ident), i as u32))
            .collect();
    }

    /// Adds a thread of another process (a merge's): not looked up by its ids, which another
    /// process may share. Its index.
    pub fn push_thread(&mut self, thread: Thread) -> u32 {
        self.threads.push(thread);
        (self.threads.len() - 1) as u32
    }

    /// Records a sample of thread `thread`, whose frames are given innermost first, standing
    /// for `weight` ticks (more than 1 when it came late: it stands for the ticks it missed,
    /// so that a sampler starved of CPU does not shift the shares). A stack seen before costs
    /// no allocation. Returns the stack's index in `stacks`.
    pub fn add(
        &mut self,
        thread: u32,
        innermost_first: &[Frame],
        on_cpu: bool,
        weight: u64,
    ) -> u32 {
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        for f in innermost_first.iter().rev() {
            let (i, _) = self.frames.insert_full(*f);
            ids.push(i as u32);
        }
        let on_cpu_weight = if on_cpu { weight } else { 0 };
        let index = match self.stacks.get_index_of(&StackRef(thread, &ids)) {
            Some(i) => i,
            None => {
                let entry = self.stacks.entry((thread, ids.as_slice().into()));
                let i = entry.index();
                entry.or_default();
                i
            }
        };
        let count = &mut self.stacks[index];
        count.samples += weight;
        count.on_cpu += on_cpu_weight;
        self.scratch = ids;
        if let Some(t) = self.threads.get_mut(thread as usize) {
            t.samples += weight;
            t.on_cpu += on_cpu_weight;
        }
        index as u32
    }

    /// Removes the stacks with no samples (a window's or a difference's), renumbering the
    /// stacks its samples by time name.
    pub fn drop_unsampled(&mut self) {
        let mut kept = 0u32;
        let renumber: Vec<u32> = self
            .stacks
            .values()
            .map(|c| match c.samples > 0 {
                true => {
                    kept += 1;
                    kept - 1
                }
                false => u32::MAX,
            })
            .collect();
        self.stacks.retain(|_, c| c.samples > 0);
        self.time = self.time.take().map(|t| t.renumbered(&renumber));
    }

    /// The samples taken since `base`, an earlier copy of this run's profile: counts less
    /// base's. Threads and stacks are matched by what they are (a merge of several processes
    /// is made anew each time, and its numbers move); the samples by time are kept when base's
    /// tables are the first of these (a session's, which only grow), else dropped.
    pub fn since(&self, base: &Profile) -> Profile {
        let mut p = self.clone();
        let before: HashMap<_, Count> = base
            .stacks
            .iter()
            .filter_map(|(k, c)| Some((base.stack_key(k)?, *c)))
            .collect();
        for (k, c) in p.stacks.iter_mut() {
            if let Some(b) = self.stack_key(k).and_then(|key| before.get(&key)) {
                c.samples = c.samples.saturating_sub(b.samples);
                c.on_cpu = c.on_cpu.saturating_sub(b.on_cpu);
            }
        }
        let threads: HashMap<_, &Thread> = base.threads.iter().map(|t| (t.key(), t)).collect();
        for t in &mut p.threads {
            if let Some(b) = threads.get(&t.key()) {
                t.samples = t.samples.saturating_sub(b.samples);
                t.on_cpu = t.on_cpu.saturating_sub(b.on_cpu);
                t.idle = t.idle.saturating_sub(b.idle);
                t.dropped = t.dropped.saturating_sub(b.dropped);
            }
        }
        p.asked = p.asked.saturating_sub(base.asked);
        p.taken = p.taken.saturating_sub(base.taken);
        p.truncated = p.truncated.saturating_sub(base.truncated);
        p.reread = p.reread.saturating_sub(base.reread);
        p.duration = (p.duration - base.duration).max(0.0);
        p.pauses = p.pauses.saturating_sub(base.pauses);
        p.paused = (p.paused - base.paused).max(0.0);
        let grown = base
            .stacks
            .keys()
            .zip(self.stacks.keys())
            .all(|(a, b)| a == b)
            && base.frames.iter().zip(&self.frames).all(|(a, b)| a == b)
            && base
                .functions
                .iter()
                .zip(&self.functions)
                .all(|(a, b)| a == b)
            && base.stacks.len() <= self.stacks.len();
        match (&mut p.time, &base.time, grown) {
            (Some(now), Some(then), true) => now.subtract(then),
            _ => p.time = None,
        }
        p.drop_unsampled();
        p
    }

    /// A stack as what it is: its thread's process and ids, and its functions and lines.
    #[allow(clippy::type_complexity)]
    fn stack_key(
        &self,
        (thread, frames): &(u32, Box<[u32]>),
    ) -> Option<((u32, u64, u64), Vec<(&Function, i32)>)> {
        let t = self.threads.get(*thread as usize)?;
        let path = frames
            .iter()
            .map(|&f| {
                let fr = self.frames.get_index(f as usize)?;
                Some((self.functions.get_index(fr.function as usize)?, fr.line))
            })
            .collect::<Option<Vec<_>>>()?;
        Some((t.key(), path))
    }

    /// The name a thread is shown under: its `threading` name, else `Thread <native id>` (or
    /// `Thread <ident>` when the OS id is not known); ` (pid N)` after it in a profile of
    /// several processes.
    pub fn thread_label(&self, thread: u32) -> String {
        let label = match self.threads.get(thread as usize) {
            Some(Thread {
                name: Some(name), ..
            }) => name.clone(),
            Some(t) if t.native_id == 0 => format!("Thread {}", t.ident),
            Some(t) => format!("Thread {}", t.native_id),
            None => format!("Thread #{thread}"),
        };
        match self.threads.get(thread as usize).map(|t| t.process) {
            Some(pid) if pid != 0 => format!("{label} (pid {pid})"),
            _ => label,
        }
    }

    /// How the outputs head a thread: its name and OS id, `MainThread (tid 4242)`, or
    /// `Thread (tid 4242)` when it has no name (two threads of one name stay apart); its ident,
    /// `(ident 1401...)`, when the OS id is not known. In a profile of several processes, its
    /// process's too: `Thread-1 (pid 4242, tid 4250)`, `MainThread (pid 4242)` (its OS id is
    /// the pid).
    pub fn thread_title(&self, thread: u32) -> String {
        match self.threads.get(thread as usize) {
            Some(t) => {
                let name = t.name.as_deref().unwrap_or("Thread");
                match (t.process, t.native_id) {
                    (0, 0) => format!("{name} (ident {})", t.ident),
                    (0, tid) => format!("{name} (tid {tid})"),
                    (pid, 0) => format!("{name} (pid {pid}, ident {})", t.ident),
                    (pid, tid) if tid == u64::from(pid) => format!("{name} (pid {pid})"),
                    (pid, tid) => format!("{name} (pid {pid}, tid {tid})"),
                }
            }
            None => format!("Thread #{thread}"),
        }
    }

    /// Samples of torn reads, over all threads.
    pub fn dropped(&self) -> u64 {
        // Saturating: an unpickled profile's counts are whatever its bytes say.
        self.threads
            .iter()
            .fold(0, |all, t| all.saturating_add(t.dropped))
    }

    /// Stack samples recorded, over all threads.
    pub fn samples(&self) -> u64 {
        self.threads.iter().map(|t| t.samples).sum()
    }

    /// Each thread's stacks with samples (indices into `stacks`, in their order), found in one
    /// pass: the outputs that go thread by thread read them from here.
    pub fn stacks_by_thread(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.threads.len()];
        for (i, ((t, _), c)) in self.stacks.iter().enumerate() {
            if let Some(list) = out.get_mut(*t as usize).filter(|_| c.samples > 0) {
                list.push(i);
            }
        }
        out
    }

    /// The function of frame `frame`.
    pub fn function_of(&self, frame: u32) -> Option<&Function> {
        let f = self.frames.get_index(frame as usize)?;
        self.functions.get_index(f.function as usize)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A profile of two threads: main runs `main -> f -> g` (3 samples, 1 on a CPU) and
    /// `main -> f` (1), worker runs `run -> g` (2).
    pub fn small() -> Profile {
        let mut p = Profile::new(0.001, Mode::Wall);
        let main = function(&mut p, "prog.py", 1, "main");
        let f = function(&mut p, "prog.py", 10, "f");
        let g = function(&mut p, "prog.py", 20, "g");
        let run = function(&mut p, "prog.py", 30, "run");
        let t0 = p.thread(100, 7);
        let t1 = p.thread(101, 8);
        p.threads[t0 as usize].name = Some("MainThread".into());
        let fr = |function, line| Frame { function, line };
        let deep = [fr(g, 21), fr(f, 11), fr(main, 2)];
        p.add(t0, &deep, true, 1);
        p.add(t0, &deep, false, 1);
        p.add(t0, &deep, false, 1);
        p.add(t0, &[fr(f, 12), fr(main, 2)], false, 1);
        p.add(t1, &[fr(g, 22), fr(run, 31)], false, 1);
        p.add(t1, &[fr(g, 22), fr(run, 31)], false, 1);
        p.asked = 4;
        p.taken = 4;
        p
    }

    #[test]
    fn since_an_earlier_copy_counts_only_what_came_after() {
        let mut p = small();
        let base = p.clone();
        let f = p.functions.get_index_of(&Function {
            filename: "prog.py".into(),
            first_line: 10,
            name: "f".into(),
        });
        let f = f.unwrap() as u32;
        p.add(
            0,
            &[Frame {
                function: f,
                line: 13,
            }],
            true,
            2,
        );
        p.add(
            1,
            &[Frame {
                function: f,
                line: 12,
            }],
            false,
            1,
        );
        p.asked += 3;
        p.taken += 2;
        let d = p.since(&base);
        assert_eq!(d.stacks.len(), 2);
        assert!(d.stacks.values().all(|c| c.samples > 0));
        assert_eq!((d.asked, d.taken), (3, 2));
        assert_eq!((d.threads[0].samples, d.threads[0].on_cpu), (2, 2));
        assert_eq!(d.threads[1].samples, 1);
    }

    /// Adds function `name` of `filename` whose first line is `first_line`.
    pub fn function(p: &mut Profile, filename: &str, first_line: i64, name: &str) -> u32 {
        p.function(Function {
            filename: filename.into(),
            first_line,
            name: name.into(),
        })
    }

    /// Records one sample of `thread` at `frames`, (function, line) pairs innermost first.
    pub fn sample(p: &mut Profile, thread: u32, frames: &[(u32, i32)], on_cpu: bool) {
        let frames: Vec<Frame> = frames
            .iter()
            .map(|&(function, line)| Frame { function, line })
            .collect();
        p.add(thread, &frames, on_cpu, 1);
    }

    /// `small()` and a thread (OS id 102) sampled once in function `name` of `filename`, at no
    /// line: the odd names a test wants carried through.
    pub fn with_odd(filename: &str, name: &str) -> Profile {
        let mut p = small();
        let odd = function(&mut p, filename, 0, name);
        let t = p.thread(102, 9);
        sample(&mut p, t, &[(odd, 0)], false);
        p
    }

    /// A writer that fails with OS error `.0`, as a full disk or a closed pipe does.
    pub struct Refusing(pub i32);

    impl std::io::Write for Refusing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(self.0))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn stacks_are_counted_once_per_distinct_thread_and_stack() {
        let p = small();
        assert_eq!(p.stacks.len(), 3);
        assert_eq!(p.samples(), 6);
        let (key, count) = p.stacks.get_index(0).expect("a stack");
        assert_eq!(key.0, 0);
        assert_eq!(key.1.len(), 3);
        assert_eq!(
            p.function_of(key.1[0]).map(|f| f.name.as_str()),
            Some("main")
        );
        assert_eq!((count.samples, count.on_cpu), (3, 1));
        assert_eq!(p.threads[0].samples, 4);
        assert_eq!(p.thread_label(0), "MainThread");
        assert_eq!(p.thread_label(1), "Thread 101");
        assert_eq!(p.thread_title(0), "MainThread (tid 100)");
        assert_eq!(p.thread_title(1), "Thread (tid 101)");
    }

    #[test]
    fn a_reused_os_id_keeps_its_lane() {
        let mut p = Profile::new(0.001, Mode::Cpu);
        assert_eq!(p.thread(5, 1), 0);
        assert_eq!(p.thread(6, 2), 1);
        assert_eq!(p.thread(5, 3), 0);
        assert_eq!(p.threads[0].ident, 3);
        // Threads whose OS id is not known (3.10 without glibc) are told apart by ident.
        assert_eq!(p.thread(0, 70), 2);
        assert_eq!(p.thread(0, 71), 3);
        assert_eq!(p.thread(0, 70), 2);
        assert_eq!(p.thread_label(3), "Thread 71");
        assert_eq!(p.thread_title(2), "Thread (ident 70)");
        assert_eq!(Mode::parse("gil"), Some(Mode::Gil));
        assert_eq!(Mode::parse("cpu").map(Mode::name), Some("cpu"));
        assert_eq!(Mode::parse("exception"), None);
    }
}
