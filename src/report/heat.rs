//! Line heat of a sampling run: for the hottest source files, each line's self samples (the
//! line executing) and cumulative samples (the line on the stack, once per stack), over all
//! threads and per thread; with the files' text, read when the report is written (a file that
//! cannot be read is left out: `<string>`, a deleted file).

use std::collections::HashMap;

use crate::samples::profile::Profile;

use super::json::Json;

/// Files shown, at most.
pub const MAX_FILES: usize = 12;
/// Bigger sources are not captured.
const MAX_BYTES: u64 = 4 << 20;

#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct Tally {
    own: u64,
    cum: u64,
    /// The last stack counted in `cum`, plus one.
    stamp: usize,
}

/// One file's heat.
#[derive(Debug, PartialEq)]
pub struct FileHeat {
    pub path: String,
    pub source: String,
    /// `(line, self, cumulative)`, by line.
    pub lines: Vec<(i64, u64, u64)>,
    /// `(thread index, line, self, cumulative)`, with more than one thread.
    pub threads: Vec<(u32, i64, u64, u64)>,
}

/// The heat of the hottest files (by self samples plus their hottest line's cumulative
/// samples) whose source `read` gives.
pub fn heat(p: &Profile, read: &dyn Fn(&str) -> Option<String>) -> Vec<FileHeat> {
    // (file, line) and (thread, file, line) tallies; files are function filenames.
    let mut all: HashMap<(&str, i64), Tally> = HashMap::new();
    let mut per: HashMap<(u32, &str, i64), Tally> = HashMap::new();
    let threads = p.threads.iter().filter(|t| t.samples > 0).count();
    for (n, ((thread, frames), c)) in p.stacks.iter().enumerate() {
        if c.samples == 0 {
            continue;
        }
        let stamp = n + 1;
        let at = |fr: u32| {
            let fr = p.frames.get_index(fr as usize)?;
            let f = p.functions.get_index(fr.function as usize)?;
            Some((f.filename.as_str(), fr.line as i64))
        };
        for (i, &fr) in frames.iter().enumerate() {
            let Some((file, line)) = at(fr) else { continue };
            let innermost = i + 1 == frames.len();
            let count = |t: &mut Tally| {
                if t.stamp != stamp {
                    t.stamp = stamp;
                    t.cum += c.samples;
                }
                if innermost {
                    t.own += c.samples;
                }
            };
            count(all.entry((file, line)).or_default());
            if threads > 1 {
                count(per.entry((*thread, file, line)).or_default());
            }
        }
    }
    let mut files: HashMap<&str, (u64, u64)> = HashMap::new();
    for (&(file, _), t) in &all {
        let e = files.entry(file).or_default();
        e.0 += t.own;
        e.1 = e.1.max(t.cum);
    }
    let mut ranked: Vec<(&str, u64)> = files.into_iter().map(|(f, (o, c))| (f, o + c)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out = Vec::new();
    for (file, _) in ranked {
        if out.len() >= MAX_FILES {
            break;
        }
        let Some(source) = read(file) else { continue };
        let mut lines: Vec<(i64, u64, u64)> = all
            .iter()
            .filter(|((f, _), _)| *f == file)
            .map(|(&(_, line), t)| (line, t.own, t.cum))
            .collect();
        lines.sort_unstable();
        let mut threads: Vec<(u32, i64, u64, u64)> = per
            .iter()
            .filter(|((_, f, _), _)| *f == file)
            .map(|(&(th, _, line), t)| (th, line, t.own, t.cum))
            .collect();
        threads.sort_unstable();
        out.push(FileHeat {
            path: file.to_string(),
            source,
            lines,
            threads,
        });
    }
    out
}

/// A source file's text, if it is a readable file of reasonable size (invalid UTF-8 replaced).
pub fn read_source(path: &str) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Writes `"heat": [{"file", "src", "lines": [line, self, cum, ...], "threads": [thread, line,
/// self, cum, ...]}, ...]`.
pub fn write(j: &mut Json, files: &[FileHeat]) {
    let n = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
    j.key("heat");
    j.open_array();
    for f in files {
        j.open_object();
        j.key("file");
        j.str(&f.path);
        j.key("src");
        j.str(&f.source);
        j.ints(
            "lines",
            f.lines.iter().flat_map(|&(l, o, c)| [l, n(o), n(c)]),
        );
        j.ints(
            "threads",
            f.threads
                .iter()
                .flat_map(|&(t, l, o, c)| [t as i64, l, n(o), n(c)]),
        );
        j.close_object();
    }
    j.close_array();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::small;

    #[test]
    fn lines_get_self_and_cumulative_samples_per_file_and_thread() {
        let p = small();
        let read = |f: &str| (f == "prog.py").then(|| "line one\n".to_string());
        let h = heat(&p, &read);
        assert_eq!(h.len(), 1);
        let f = &h[0];
        assert_eq!(f.path, "prog.py");
        assert_eq!(
            f.lines,
            [
                (2, 0, 4),
                (11, 0, 3),
                (12, 1, 1),
                (21, 3, 3),
                (22, 2, 2),
                (31, 0, 2)
            ]
        );
        assert!(f.threads.contains(&(1, 22, 2, 2)));
        assert!(f.threads.contains(&(0, 21, 3, 3)));
        assert!(heat(&p, &|_| None).is_empty());
    }

    #[test]
    fn sources_are_read_when_they_are_files() {
        assert!(read_source("/nonexistent/x.py").is_none());
        assert!(read_source("/").is_none());
        let me = read_source(file!());
        assert!(me.is_none_or(|s| s.contains("fn read_source")));
    }
}
