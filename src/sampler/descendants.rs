//! `Descendants`: the processes a process started and the ones they started, found from
//! outside it in `/proc` and looked for again at each `poll`, with what each one's `stat` says.
//!
//! The kernel lists a thread's children in `/proc/PID/task/TID/children` (a child belongs to
//! the thread that forked it, so every thread's file is read). Where it has no such file (a
//! kernel built without CONFIG_PROC_CHILDREN) the parent of every process on the machine is
//! read from its `/proc/PID/stat` instead, which costs a read per process. A process once found
//! is followed until it is gone, also after its parent exited (it is then another process's
//! child); one that starts, and whose parent exits, between two polls is not found.
//!
//! Cost: a poll looks only when the kernel gave out a pid since the last one (the last field of
//! `/proc/loadavg`, 1 us to read), unless asked for a full look (exits and execs, which give
//! out no pid); and the files of a process followed are kept open, since reading an open
//! `/proc` file costs a tenth of opening it again (3 us against 27 for a `stat` here). An open
//! `stat` fails once its process is gone, whoever has the pid by then.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
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

/// A process followed: what its `stat` said last, and its files, kept open.
struct Known {
    stat: Stat,
    stat_file: File,
    /// Its threads' `children` files, by thread id.
    children: HashMap<u64, File>,
}

/// The descendants of one process, polled.
pub struct Descendants {
    /// Where `/proc` is (a folder of fake entries in tests).
    proc: PathBuf,
    root: i32,
    /// The root and every descendant followed, in the order found.
    known: IndexMap<i32, Known>,
    /// Whether the kernel lists children per thread (`None`: not yet known).
    children_files: Option<bool>,
    /// `/proc/loadavg` (`None`: not there, every poll looks) and its last field as last read.
    loadavg: Option<File>,
    last_pid: Vec<u8>,
    /// Buffers kept from poll to poll.
    buf: Vec<u8>,
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
            loadavg: File::open(proc.join("loadavg")).ok(),
            last_pid: Vec::new(),
            buf: Vec::new(),
            kids: Vec::new(),
        }
    }

    /// Looks again, when a pid was given out since the last look or `full` (which also sees
    /// exits and execs in every known process's `stat`): the descendants that started since
    /// (a parent before its children, siblings by pid), each once. Processes that are gone
    /// are forgotten: `stat` no longer knows them.
    pub fn poll(&mut self, full: bool) -> Vec<Found> {
        if self.children_files.is_none() {
            self.children_files = Some(self.has_children_files());
        }
        // Before looking: a process that starts while we look is seen now or next time.
        let given = self.pid_given();
        if self.known.is_empty() {
            if let Some(root) = self.open(self.root) {
                self.known.insert(self.root, root);
            }
        } else if !given && !full {
            return Vec::new();
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
        self.known.get(&pid).map(|k| &k.stat)
    }

    /// Process `pid`'s wait status, read now, if it exited and its parent did not reap it yet.
    pub fn exit_status(&mut self, pid: i32) -> Option<i32> {
        let known = self.known.get(&pid)?;
        read_whole(&known.stat_file, &mut self.buf).ok()?;
        let stat = parse_stat(&String::from_utf8_lossy(&self.buf))?;
        (stat.state == b'Z').then_some(stat.exit_code).flatten()
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
                if let Some(known) = self.open(kid) {
                    found.push(Found {
                        pid: kid,
                        stat: known.stat,
                    });
                    self.known.insert(kid, known);
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
                let path = entry.path().join("stat");
                let Some(pid) = pid else { continue };
                if let Some(stat) = File::open(path).ok().and_then(|f| self.read_stat(&f)) {
                    all.push((pid, stat));
                }
            }
        }
        all.sort_unstable_by_key(|(pid, _)| *pid);
        let mut queue: Vec<i32> = self.known.keys().copied().collect();
        let mut i = 0;
        while i < queue.len() {
            let pid = queue[i];
            i += 1;
            if !self.refresh(pid) {
                continue;
            }
            for &(kid, stat) in all.iter().filter(|(_, s)| s.ppid == pid) {
                if self.known.contains_key(&kid) {
                    continue;
                }
                if let Some(known) = self.open(kid) {
                    found.push(Found { pid: kid, stat });
                    self.known.insert(kid, known);
                    queue.push(kid);
                }
            }
        }
    }

    /// Process `pid`'s `stat`, opened and read; `None` when it is gone.
    fn open(&mut self, pid: i32) -> Option<Known> {
        let stat_file = File::open(self.proc.join(pid.to_string()).join("stat")).ok()?;
        let stat = self.read_stat(&stat_file)?;
        Some(Known {
            stat,
            stat_file,
            children: HashMap::new(),
        })
    }

    /// Reads known process `pid`'s `stat` again; forgets it and says false when it is gone
    /// (its file fails, or says another process: a fake `/proc`'s files stay readable).
    fn refresh(&mut self, pid: i32) -> bool {
        let Some(known) = self.known.get(&pid) else {
            return false;
        };
        let now = read_whole(&known.stat_file, &mut self.buf)
            .ok()
            .and_then(|()| parse_stat(&String::from_utf8_lossy(&self.buf)));
        match (now, self.known.get_mut(&pid)) {
            (Some(stat), Some(known)) if stat.start_time == known.stat.start_time => {
                known.stat = stat;
                true
            }
            _ => {
                self.known.shift_remove(&pid);
                false
            }
        }
    }

    /// The children of every thread of known process `pid` into `out`, by pid (none when it
    /// is gone). A thread's file is opened once; those of threads that ended are closed.
    fn children_of(&mut self, pid: i32, out: &mut Vec<i32>) {
        out.clear();
        let task = self.proc.join(pid.to_string()).join("task");
        let (Ok(threads), Some(known)) = (fs::read_dir(&task), self.known.get_mut(&pid)) else {
            return;
        };
        let mut alive = Vec::new();
        for thread in threads.flatten() {
            let Some(tid) = thread
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            alive.push(tid);
            let file = match known.children.entry(tid) {
                Entry::Occupied(open) => open.into_mut(),
                // A thread that ended since the listing has no file: it has no children left.
                Entry::Vacant(new) => match File::open(thread.path().join("children")) {
                    Ok(file) => new.insert(file),
                    Err(_) => continue,
                },
            };
            if read_whole(file, &mut self.buf).is_ok() {
                let text = String::from_utf8_lossy(&self.buf);
                out.extend(
                    text.split_ascii_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
        known.children.retain(|tid, _| alive.contains(tid));
        out.sort_unstable();
    }

    fn read_stat(&mut self, file: &File) -> Option<Stat> {
        read_whole(file, &mut self.buf).ok()?;
        parse_stat(&String::from_utf8_lossy(&self.buf))
    }

    /// Whether the kernel gave out a pid since the last call (`/proc/loadavg`'s last field
    /// moved); true when that cannot be told.
    fn pid_given(&mut self) -> bool {
        let Some(loadavg) = &self.loadavg else {
            return true;
        };
        if read_whole(loadavg, &mut self.buf).is_err() {
            return true;
        }
        let last = self
            .buf
            .split(|b| b.is_ascii_whitespace())
            .rfind(|w| !w.is_empty())
            .unwrap_or_default();
        if last == self.last_pid.as_slice() {
            return false;
        }
        self.last_pid = last.to_vec();
        true
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

/// Reads the whole of `file` from its start into `buf`: a `/proc` file is made again at each
/// read from offset 0, and fills a read as far as it can, so a short read is its end.
fn read_whole(file: &File, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.clear();
    loop {
        let at = buf.len();
        let room = at.max(4096);
        buf.resize(at + room, 0);
        let n = file.read_at(&mut buf[at..], at as u64)?;
        buf.truncate(at + n);
        if n < room {
            return Ok(());
        }
    }
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

        /// Process `pid` exits: its `stat` no longer reads (a real one's open file fails; a
        /// fake's, removed, would still read as it was).
        fn exit(&self, pid: i32) {
            let dir = self.0.join(pid.to_string());
            fs::write(dir.join("stat"), "").expect("stat");
            fs::remove_dir_all(dir).expect("remove");
        }

        /// `/proc/loadavg` with `last` as the last pid given out.
        fn given(&self, last: i32) {
            let text = format!("0.50 0.40 0.30 1/100 {last}\n");
            fs::write(self.0.join("loadavg"), text).expect("loadavg");
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
        let found = d.poll(true);
        assert_eq!(pids(&found), [11, 12, 13]);
        assert_eq!(found[2].stat.ppid, 11);
        assert!(d.cheap());
        assert_eq!(pids(&d.poll(true)), Vec::<i32>::new());
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
        assert_eq!(pids(&d.poll(true)), [21, 22]);
        // 21 exits: 22 is init's child now, and starts 23.
        proc.exit(21);
        proc.process(20, 1, 5, &[(20, &[])]);
        proc.process(22, 1, 7, &[(22, &[23])]);
        proc.process(23, 22, 8, &[(23, &[])]);
        assert_eq!(pids(&d.poll(true)), [23]);
        assert_eq!(d.stat(21), None);
        assert_eq!(d.stat(22).map(|s| s.ppid), Some(1));
    }

    #[test]
    fn a_reused_pid_is_another_process() {
        let proc = FakeProc::new("reuse");
        proc.process(30, 1, 5, &[(30, &[31])]);
        proc.process(31, 30, 6, &[(31, &[])]);
        let mut d = Descendants::under(&proc.0, 30);
        assert_eq!(pids(&d.poll(true)), [31]);
        // 31 exits and an unrelated process gets its pid: forgotten, not reported.
        proc.process(30, 1, 5, &[(30, &[])]);
        proc.process(31, 1, 9, &[(31, &[])]);
        assert_eq!(pids(&d.poll(true)), Vec::<i32>::new());
        assert_eq!(d.stat(31), None);
        // Our process starts a child that gets pid 31 again: a new descendant.
        proc.process(30, 1, 5, &[(30, &[31])]);
        proc.process(31, 30, 10, &[(31, &[])]);
        let found = d.poll(true);
        assert_eq!(pids(&found), [31]);
        assert_eq!(found[0].stat.start_time, 10);
    }

    #[test]
    fn a_poll_looks_only_when_a_pid_was_given_out_unless_full() {
        let proc = FakeProc::new("gate");
        proc.given(50);
        proc.process(50, 1, 5, &[(50, &[])]);
        let mut d = Descendants::under(&proc.0, 50);
        assert_eq!(pids(&d.poll(false)), Vec::<i32>::new());
        // A child: not looked for while the last pid stays, found once it moves.
        proc.process(50, 1, 5, &[(50, &[51])]);
        proc.process(51, 50, 6, &[(51, &[])]);
        assert_eq!(pids(&d.poll(false)), Vec::<i32>::new());
        proc.given(51);
        assert_eq!(pids(&d.poll(false)), [51]);
        // An exit gives out no pid: a full poll sees it.
        proc.exit(51);
        proc.process(50, 1, 5, &[(50, &[])]);
        assert!(d.poll(false).is_empty() && d.stat(51).is_some());
        assert!(d.poll(true).is_empty() && d.stat(51).is_none());
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
        assert_eq!(pids(&d.poll(true)), [41, 42]);
        assert!(!d.cheap());
        proc.exit(41);
        proc.process(42, 1, 7, &[]);
        proc.process(44, 42, 8, &[]);
        assert_eq!(pids(&d.poll(true)), [44]);
        assert_eq!(d.stat(41), None);
    }

    #[test]
    fn a_killed_child_says_so_until_it_is_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let pid = child.id() as i32;
        let mut d = Descendants::new(std::process::id() as i32);
        assert!(d.poll(true).iter().any(|f| f.pid == pid));
        assert_eq!(d.exit_status(pid), None);
        child.kill().expect("kill");
        // Until the kernel has made it a zombie.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut status = None;
        while status.is_none() && std::time::Instant::now() < deadline {
            status = d.exit_status(pid);
        }
        assert_eq!(status, Some(libc::SIGKILL));
        let _ = child.wait();
        assert_eq!(d.exit_status(pid), None);
        d.poll(true);
        assert_eq!(d.stat(pid), None);
    }

    #[test]
    fn this_process_is_its_childs_parent() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        let mut d = Descendants::new(std::process::id() as i32);
        let found = d.poll(true);
        let _ = child.kill();
        let _ = child.wait();
        let ours = found.iter().find(|f| f.pid == child.id() as i32);
        assert_eq!(ours.map(|f| f.stat.ppid), Some(std::process::id() as i32));
    }
}
