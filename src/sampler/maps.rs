//! The target's memory mappings, from `/proc/PID/maps`, and the one that holds the interpreter.
//!
//! A small parser rather than the `proc-maps` crate: its line parser is private (no tests on
//! sample text), it joins a path's words with single spaces (a path with two spaces in a row
//! is changed), and what we need from a line is five fields.

use std::io;
use std::path::{Path, PathBuf};

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// `rwxp` / `r--s`, as the kernel writes them.
    pub perms: String,
    /// Where in the file the mapping starts.
    pub offset: u64,
    /// The mapped file; `None` for anonymous memory, and pseudo-paths such as `[heap]` kept
    /// as they are.
    pub path: Option<PathBuf>,
}

/// A file mapped in the target, with the address of its lowest mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    pub path: PathBuf,
    /// The start of the file's first (lowest) mapping: where its first `PT_LOAD` was put.
    pub base: u64,
    /// That mapping's offset in the file (0 for the usual first `PT_LOAD`).
    pub offset: u64,
}

/// Reads and parses `/proc/PID/maps`. A process that does not exist is `ESRCH` (as `kill()`
/// says it), not the `ENOENT` of the missing `/proc` folder.
pub fn read(pid: i32) -> io::Result<Vec<Mapping>> {
    let path = format!("/proc/{pid}/maps");
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(parse(&text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            Err(io::Error::from_raw_os_error(libc::ESRCH))
        }
        Err(e) => Err(e),
    }
}

/// The mappings of `text`; a line that is not in the kernel's format is skipped (the kernel
/// writes none, and one odd line must not hide the rest).
pub fn parse(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mapping> {
    // address perms offset dev inode [path]; the path is the rest of the line after the
    // padding and may itself contain spaces.
    let (range, rest) = split_field(line)?;
    let (perms, rest) = split_field(rest)?;
    let (offset, rest) = split_field(rest)?;
    let (_dev, rest) = split_field(rest)?;
    let (_inode, rest) = split_field(rest)?;
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    let offset = u64::from_str_radix(offset, 16).ok()?;
    let path = rest.trim_start();
    Some(Mapping {
        start,
        end,
        perms: perms.to_string(),
        offset,
        path: (!path.is_empty()).then(|| PathBuf::from(path)),
    })
}

fn split_field(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start_matches(' ');
    let end = s.find(' ').unwrap_or(s.len());
    (end > 0).then(|| (&s[..end], &s[end..]))
}

/// The file that holds the interpreter runtime: `libpython3.X.so*` when Python is built with
/// `--enable-shared` (the executable is then a small stub), else the executable whose name
/// starts with `python` (a static build). `None` when neither is mapped.
pub fn find_python(maps: &[Mapping]) -> Option<Module> {
    let path = find_path(maps, |name| name.starts_with("libpython3"))
        .or_else(|| find_path(maps, |name| name.starts_with("python")))?;
    module(maps, path)
}

fn find_path(maps: &[Mapping], wanted: impl Fn(&str) -> bool) -> Option<&Path> {
    maps.iter()
        .filter_map(|m| m.path.as_deref())
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(&wanted))
}

/// The file `path` as mapped: its lowest mapping.
pub fn module(maps: &[Mapping], path: &Path) -> Option<Module> {
    maps.iter()
        .filter(|m| m.path.as_deref() == Some(path))
        .min_by_key(|m| m.start)
        .map(|m| Module {
            path: path.to_path_buf(),
            base: m.start,
            offset: m.offset,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHARED: &str = "\
55d0c6e4a000-55d0c6e4b000 r--p 00000000 fd:01 1183906                    /root/.pyenv/versions/3.12.1/bin/python3.12
55d0c6e4b000-55d0c6e4c000 r-xp 00001000 fd:01 1183906                    /root/.pyenv/versions/3.12.1/bin/python3.12
55d0c7a1e000-55d0c7b6e000 rw-p 00000000 00:00 0                          [heap]
7f2a1c000000-7f2a1c021000 rw-p 00000000 00:00 0 
7f2a1d200000-7f2a1d2a0000 r--p 00000000 fd:01 1183950                    /root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0
7f2a1d2a0000-7f2a1d4f0000 r-xp 000a0000 fd:01 1183950                    /root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0
7f2a1d4f0000-7f2a1d5a0000 r--p 002f0000 fd:01 1183950                    /root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0
7f2a1d5a0000-7f2a1d5f0000 rw-p 003a0000 fd:01 1183950                    /root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0
7ffc8e1f0000-7ffc8e211000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn parses_every_field_and_keeps_anonymous_mappings_pathless() {
        let maps = parse(SHARED);
        assert_eq!(maps.len(), 9);
        assert_eq!(
            maps[1],
            Mapping {
                start: 0x55d0c6e4b000,
                end: 0x55d0c6e4c000,
                perms: "r-xp".into(),
                offset: 0x1000,
                path: Some("/root/.pyenv/versions/3.12.1/bin/python3.12".into()),
            }
        );
        assert_eq!(maps[2].path.as_deref(), Some(Path::new("[heap]")));
        assert_eq!(maps[3].path, None);
    }

    #[test]
    fn a_path_keeps_its_spaces_and_odd_lines_are_skipped() {
        let text = "garbage\n1000-2000 r--p 00000000 fd:01 7    /opt/my  python/python3.11\n\
                    zz-2000 r--p 0 fd:01 7 /x\n";
        let maps = parse(text);
        assert_eq!(maps.len(), 1);
        assert_eq!(
            maps[0].path.as_deref(),
            Some(Path::new("/opt/my  python/python3.11"))
        );
    }

    #[test]
    fn a_shared_build_is_found_by_its_library_at_its_lowest_mapping() {
        let found = find_python(&parse(SHARED));
        assert_eq!(
            found,
            Some(Module {
                path: "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0".into(),
                base: 0x7f2a1d200000,
                offset: 0,
            })
        );
    }

    #[test]
    fn a_static_build_is_found_by_its_executable() {
        let text = "\
00400000-00420000 r--p 00000000 fd:01 12 /usr/local/bin/python3.11
00420000-00700000 r-xp 00020000 fd:01 12 /usr/local/bin/python3.11
7f0000000000-7f0000100000 r-xp 00000000 fd:01 13 /usr/lib/x86_64-linux-gnu/libc.so.6
";
        let found = find_python(&parse(text)).map(|m| (m.path, m.base));
        assert_eq!(found, Some(("/usr/local/bin/python3.11".into(), 0x400000)));
    }

    #[test]
    fn a_process_without_python_has_no_interpreter() {
        let text = "\
5600000000-5600001000 r-xp 00000000 fd:01 12 /usr/bin/sleep
7f0000000000-7f0000100000 r-xp 00000000 fd:01 13 /usr/lib/x86_64-linux-gnu/libc.so.6
";
        assert_eq!(find_python(&parse(text)), None);
        assert_eq!(find_python(&parse("")), None);
    }

    #[test]
    fn a_missing_process_is_esrch() {
        // Pids are below 2^22 on Linux, so this one never exists.
        let err = read(i32::MAX).map(|_| ()).map_err(|e| e.raw_os_error());
        assert_eq!(err, Err(Some(libc::ESRCH)));
    }
}
