//! `Descendants`: the processes a process started and the ones they started, found from
//! outside it in `/proc` and looked for again at each `poll`, with what each one's `stat` says.
//!
//! The kernel lists a thread's children in `/proc/PID/task/TID/children` (a child belongs to
//! the thread that forked it, so every thread's file is read). Where it has no such file (a
//! kernel built without CONFIG_PROC_CHILDREN) the parent of every process on the machine is
//! read from its `/proc/PID/stat` instead, which costs a read per process. A process once found
//! is followed until it is gone, also after its parent exited (it is then another process's
//! child); one that starts, and whose parent exits, between two polls is not found. A process
//! is its pid and its start time, so that a pid that an unrelated process reuses is not taken
//! for it.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use indexmap::IndexMap;

/// What `/proc/PID/stat` says of a process (the fields followed here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// `R`, `S`, `D`, `Z` (exited, not yet reaped by its parent), ...
    pub state: u8,
    pub ppid: i32,
    /// Clock ticks after boot when it started: with the pid, which process this is.
    pub start_time: u64,
    /// Where its program's code and stack start: both move when it execs a program (the
    /// addresses are randomized), so a change says it did. Zeros when we may not read them.
    pub image: (u64, u64),
    /// Once it exited (state `Z`): its wait status as `waitpid` gives it (`exit(3)` is
    /// 0x300, SIGKILL 9); `None` where the kernel does not say (before 3.5).
    pub exit_code: Option<i32>,
}

/// Parses the text of `/proc/PID/stat`; `None` when it is not in the kernel's format. The
/// command (field 2) is in parentheses and may itself hold spaces and parentheses: the fields
/// after it start after the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let rest = text.get(text.rfind(')')? + 1..)?;
    let mut fields = rest.split_ascii_whitespace();
    // Fields are numbered from 1 (pid) as in proc(5); `nth(n)` skips n.
    let state = *fields.next()?.as_bytes().first()?; // 3
    let ppid = fields.next()?.parse().ok()?; // 4
    let start_time = fields.nth(17)?.parse().ok()?; // 22
    let start_code = fields.nth(3)?.parse().ok()?; // 26
    let start_stack = fields.nth(1)?.parse().ok()?; // 28
    let exit_code = fields.nth(23).and_then(|f| f.parse().ok()); // 52
    Some(Stat {
        state,
        ppid,
        start_time,
        image: (start_code, start_stack),
        exit_code,
    })
}

/// A process found under the root, in the poll that found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub pid: i32,
    pub stat: Stat,
}

/// The descendants of one process, polled.
pub struct Descendants {
    /// Where `/proc` is (a folder of fake entries in tests).
    proc: PathBuf,
    root: i32,
    /// The root and every descendant followed, in the order found, with its `stat` as of the
    /// last poll that saw it.
    known: IndexMap<i32, Stat>,
    /// Whether the kernel lists children per thread (`None`: not yet known).
    children_files: Option<bool>,
    /// Buffers kept from poll to poll.
    text: String,
    kids: Vec<i32>,
}

impl Descendants {
    /// The descendants of `root`, none known yet: the first poll finds those running then.
    pub fn new(root: i32) -> Descendants {
        Descendants::under(Path::new("/proc"), root)
    }

    /// As `new`, with `/proc` at `proc`.
    pub fn under(proc: &Path, root: i32) -> Descendants {
        Descendants {
            proc: proc.to_path_buf(),
            root,
            known: IndexMap::new(),
            children_files: None,
            text: String::new(),
            kids: Vec::new(),
        }
    }

    /// Looks again: the descendants that started since the last poll (a parent before its
    /// children, siblings by pid), each once. Processes that are gone (or whose pid is now another process's)
    /// are forgotten: `stat` no longer knows them.
    pub fn poll(&mut self) -> Vec<Found> {
        if self.children_files.is_none() {
            self.children_files = Some(self.has_children_files());
        }
        if self.known.is_empty() {
            if let Some(stat) = self.read_stat(self.root) {
                self.known.insert(self.root, stat);
            }
        }
        let mut found = Vec::new();
        if self.children_files == Some(true) {
            self.poll_children_files(&mut found);
        } else {
            self.poll_all_processes(&mut found);
        }
        found
    }

    /// What the last poll read of process `pid`'s `stat`; `None` when it is not followed (never
    /// found, or gone).
    pub fn stat(&self, pid: i32) -> Option<&Stat> {
        self.known.get(&pid)
    }

    /// Process `pid`'s command line (its `argv`, from `/proc/PID/cmdline`); `None` when it
    /// is gone or has none (it exited and waits to be reaped).
    pub fn argv(&self, pid: i32) -> Option<Vec<String>> {
        let raw = fs::read(self.proc.join(pid.to_string()).join("cmdline")).ok()?;
        let raw = raw.strip_suffix(b"\0").unwrap_or(&raw);
        let argv: Vec<String> = raw
            .split(|&b| b == 0)
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        (!raw.is_empty()).then_some(argv)
    }

    /// Whether children are found from the kernel's per-thread lists (cheap), rather than by
    /// reading every process's `stat`.
    pub fn cheap(&self) -> bool {
        self.children_files != Some(false)
    }

    /// Every known process again, and the children each lists, depth first by discovery.
    fn poll_children_files(&mut self, found: &mut Vec<Found>) {
        let mut queue: Vec<i32> = self.known.keys().copied().collect();
        let fresh_from = queue.len();
        let mut i = 0;
        while i < queue.len() {
            let pid = queue[i];
            i += 1;
            if i <= fresh_from && !self.refresh(pid) {
                continue;
            }
            let mut kids = std::mem::take(&mut self.kids);
            self.children_of(pid, &mut kids);
            for &kid in &kids {
                if self.known.contains_key(&kid) {
                    continue;
                }
                // A child that is already gone again is not followed.
                if let Some(stat) = self.read_stat(kid) {
                    self.known.insert(kid, stat);
                    found.push(Found { pid: kid, stat });
                    queue.push(kid);
                }
            }
            self.kids = kids;
        }
    }

    /// Every process on the machine by its parent, then the known ones' children from that.
    fn poll_all_processes(&mut self, found: &mut Vec<Found>) {
        let mut all: Vec<(i32, Stat)> = Vec::new();
        if let Ok(entries) = fs::read_dir(&self.proc) {
            for entry in entries.flatten() {
                let pid = entry.file_name().to_str().and_then(|n| n.parse().ok());
                if let Some(stat) = pid.and_then(|pid| self.read_stat(pid)) {
                    all.push((pid.unwrap_or_default(), stat));
                }
            }
        }
        all.sort_unstable_by_key(|(pid, _)| *pid);
        let now = |pid: i32| {
            all.binary_search_by_key(&pid, |(p, _)| *p)
                .ok()
                .map(|i| all[i].1)
        };
        let mut queue: Vec<i32> = self.known.keys().copied().collect();
        let mut i = 0;
        while i < queue.len() {
            let pid = queue[i];
            i += 1;
            match now(pid) {
                Some(stat)
                    if self.known.get(&pid).map(|s| s.start_time) == Some(stat.start_time) =>
                {
                    self.known.insert(pid, stat);
                }
                _ => {
                    self.known.shift_remove(&pid);
                    continue;
                }
            }
            for &(kid, stat) in all.iter().filter(|(_, s)| s.ppid == pid) {
                if !self.known.contains_key(&kid) {
                    self.known.insert(kid, stat);
                    found.push(Found { pid: kid, stat });
                    queue.push(kid);
                }
            }
        }
    }

    /// Reads known process `pid`'s `stat` again; forgets it and says false when it is gone or
    /// its pid is another process's now.
    fn refresh(&mut self, pid: i32) -> bool {
        match self.read_stat(pid) {
            Some(stat) if self.known.get(&pid).map(|s| s.start_time) == Some(stat.start_time) => {
                self.known.insert(pid, stat);
                true
            }
            _ => {
                self.known.shift_remove(&pid);
                false
            }
        }
    }

    /// The children of every thread of process `pid` into `out`, by pid (none when it is gone).
    fn children_of(&mut self, pid: i32, out: &mut Vec<i32>) {
        out.clear();
        let task = self.proc.join(pid.to_string()).join("task");
        let Ok(threads) = fs::read_dir(&task) else {
            return;
        };
        for thread in threads.flatten() {
            // A thread that ended since the listing has no file: it has no children left.
            if read_into(&thread.path().join("children"), &mut self.text).is_ok() {
                out.extend(
                    self.text
                        .split_ascii_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
        out.sort_unstable();
    }

    fn read_stat(&mut self, pid: i32) -> Option<Stat> {
        let path = self.proc.join(pid.to_string()).join("stat");
        read_into(&path, &mut self.text).ok()?;
        parse_stat(&self.text)
    }

    /// Whether the root's main thread has a `children` file (the kernel's option).
    fn has_children_files(&self) -> bool {
        let root = self.root.to_string();
        let path = self
            .proc
            .join(&root)
            .join("task")
            .join(&root)
            .join("children");
        path.exists()
    }
}

/// Reads the file at `path` into `text` (emptied first).
fn read_into(path: &Path, text: &mut String) -> io::Result<()> {
    text.clear();
    fs::File::open(path)?.read_to_string(text).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/proc` in a folder of its own, removed when dropped.
    struct FakeProc(PathBuf);

    impl FakeProc {
        fn new(name: &str) -> FakeProc {
            let dir = std::env::temp_dir().join(format!(
                "rprofile-descendants-{}-{name}",
                std::process::id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).expect("temp dir");
            FakeProc(dir)
        }

        /// Process `pid` (child of `ppid`, started at `start`), whose threads `tasks` list
        /// their children; `tasks` empty: a kernel without the children files.
        fn process(&self, pid: i32, ppid: i32, start: u64, tasks: &[(i32, &[i32])]) {
            let dir = self.0.join(pid.to_string());
            fs::create_dir_all(dir.join("task")).expect("dir");
            let stat = format!(
                "{pid} (py (x) y) S {ppid} 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {start} 0 0 0 \
                 4096 8192 {} 0 0\n",
                start * 16
            );
            fs::write(dir.join("stat"), stat).expect("stat");
            fs::write(dir.join("cmdline"), format!("python\0prog{pid}.py\0")).expect("cmd");
            for (tid, kids) in tasks {
                let task = dir.join("task").join(tid.to_string());
                fs::create_dir_all(&task).expect("task");
                let list: String = kids.iter().map(|k| format!("{k} ")).collect();
                fs::write(task.join("children"), list).expect("children");
            }
        }

        fn exit(&self, pid: i32) {
            fs::remove_dir_all(self.0.join(pid.to_string())).expect("remove");
        }
    }

    impl Drop for FakeProc {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn pids(found: &[Found]) -> Vec<i32> {
        found.iter().map(|f| f.pid).collect()
    }

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let text = "42 (a) b) (c) R 7 42 42 0 -1 4194560 10 0 0 0 5 1 0 0 20 0 2 0 \
                    123456 1000 100 18446744073709551615 94000 95000 140000 0 0\n";
        assert_eq!(
            parse_stat(text),
            Some(Stat {
                state: b'R',
                ppid: 7,
                start_time: 123456,
                image: (94000, 140000),
                exit_code: None,
            })
        );
        // A zombie killed by SIGKILL, as a 6.x kernel writes it (52 fields).
        let zombie = format!("43 (python3.12) Z 7 {} 9\n", ["0"; 47].join(" "));
        let stat = parse_stat(&zombie).expect("a stat");
        assert_eq!((stat.state, stat.exit_code), (b'Z', Some(9)));
        assert_eq!(parse_stat("42 (a) R 7"), None);
        assert_eq!(parse_stat("no parenthesis"), None);
        assert_eq!(parse_stat(""), None);
    }

    #[test]
    fn children_and_their_children_are_found_once_parents_first() {
        let proc = FakeProc::new("tree");
        // 10's second thread forked 12; 11 forked 13.
        proc.process(10, 1, 5, &[(10, &[11]), (14, &[12])]);
        proc.process(11, 10, 6, &[(11, &[13])]);
        proc.process(12, 10, 6, &[(12, &[])]);
        proc.process(13, 11, 7, &[(13, &[])]);
        proc.process(99, 1, 7, &[(99, &[])]);
        let mut d = Descendants::under(&proc.0, 10);
        let found = d.poll();
        assert_eq!(pids(&found), [11, 12, 13]);
        assert_eq!(found[2].stat.ppid, 11);
        assert!(d.cheap());
        assert_eq!(pids(&d.poll()), Vec::<i32>::new());
        assert_eq!(d.stat(99), None);
        assert_eq!(d.stat(13).map(|s| s.start_time), Some(7));
        assert_eq!(d.argv(13), Some(vec!["python".into(), "prog13.py".into()]));
        assert_eq!(d.argv(98), None);
    }

    #[test]
    fn an_orphan_is_still_followed_and_the_gone_are_forgotten() {
        let proc = FakeProc::new("orphan");
        proc.process(20, 1, 5, &[(20, &[21])]);
        proc.process(21, 20, 6, &[(21, &[22])]);
        proc.process(22, 21, 7, &[(22, &[])]);
        let mut d = Descendants::under(&proc.0, 20);
        assert_eq!(pids(&d.poll()), [21, 22]);
        // 21 exits: 22 is init's child now, and starts 23.
        proc.exit(21);
        proc.process(20, 1, 5, &[(20, &[])]);
        proc.process(22, 1, 7, &[(22, &[23])]);
        proc.process(23, 22, 8, &[(23, &[])]);
        assert_eq!(pids(&d.poll()), [23]);
        assert_eq!(d.stat(21), None);
        assert_eq!(d.stat(22).map(|s| s.ppid), Some(1));
    }

    #[test]
    fn a_reused_pid_is_another_process() {
        let proc = FakeProc::new("reuse");
        proc.process(30, 1, 5, &[(30, &[31])]);
        proc.process(31, 30, 6, &[(31, &[])]);
        let mut d = Descendants::under(&proc.0, 30);
        assert_eq!(pids(&d.poll()), [31]);
        // 31 exits and an unrelated process gets its pid: forgotten, not reported.
        proc.process(30, 1, 5, &[(30, &[])]);
        proc.process(31, 1, 9, &[(31, &[])]);
        assert_eq!(pids(&d.poll()), Vec::<i32>::new());
        assert_eq!(d.stat(31), None);
        // Our process starts a child that gets pid 31 again: a new descendant.
        proc.process(30, 1, 5, &[(30, &[31])]);
        proc.process(31, 30, 10, &[(31, &[])]);
        let found = d.poll();
        assert_eq!(pids(&found), [31]);
        assert_eq!(found[0].stat.start_time, 10);
    }

    #[test]
    fn without_children_files_every_process_is_read() {
        let proc = FakeProc::new("scan");
        proc.process(40, 1, 5, &[]);
        proc.process(41, 40, 6, &[]);
        proc.process(42, 41, 7, &[]);
        proc.process(43, 1, 7, &[]);
        fs::create_dir_all(proc.0.join("self")).expect("dir");
        let mut d = Descendants::under(&proc.0, 40);
        assert_eq!(pids(&d.poll()), [41, 42]);
        assert!(!d.cheap());
        proc.exit(41);
        proc.process(42, 1, 7, &[]);
        proc.process(44, 42, 8, &[]);
        assert_eq!(pids(&d.poll()), [44]);
        assert_eq!(d.stat(41), None);
    }

    #[test]
    fn this_process_is_its_childs_parent() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let mut d = Descendants::new(std::process::id() as i32);
        let found = d.poll();
        let _ = child.kill();
        let _ = child.wait();
        let ours = found.iter().find(|f| f.pid == child.id() as i32);
        assert_eq!(ours.map(|f| f.stat.ppid), Some(std::process::id() as i32));
    }
}
