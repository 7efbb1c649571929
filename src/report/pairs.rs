//! Which function of one profile is which of another, for a comparison: by the exact key
//! `(file, line, name)`; then by the path with the leading directories that differ between
//! the two replaced (two checkouts of one program, two virtualenvs); then by the name with
//! addresses masked (`{built-in method __new__ of type object at 0x7f...}` moves every run).

use std::collections::{HashMap, HashSet, VecDeque};

use crate::stats::model::Model;

/// How a function before was paired with one after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    Key,
    Path,
    Address,
}

/// The pairs of a comparison, by row (place in the model's stats).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pairing {
    /// For each row before, the row after it is paired with and how.
    pub after_of: Vec<Option<(usize, How)>>,
    pub by_key: usize,
    pub by_path: usize,
    pub by_address: usize,
    /// Rows of either profile left without a pair.
    pub before_alone: usize,
    pub after_alone: usize,
    /// The leading directories replaced `(before, after)`, most used first.
    pub prefixes: Vec<(String, String)>,
}

impl Pairing {
    /// How many were paired each way and how many were not, in a sentence.
    pub fn describe(&self) -> String {
        let leads: Vec<String> = self
            .prefixes
            .iter()
            .take(3)
            .map(|(from, to)| format!("{from} -> {to}"))
            .collect();
        let leads = if leads.is_empty() {
            String::new()
        } else {
            format!(" ({})", leads.join(", "))
        };
        format!(
            "Functions paired: {} by key, {} by path{leads}, {} by name with addresses masked; \
             {} only before, {} only after.",
            self.by_key, self.by_path, self.by_address, self.before_alone, self.after_alone
        )
    }
}

/// A function's file, line and name.
type Key<'m> = (&'m [u8], i64, &'m [u8]);

fn key(m: &Model, row: usize) -> Option<Key<'_>> {
    let (&f, _) = m.stats.get_index(row)?;
    let func = m.func(f);
    Some((m.string(func.file), func.line, m.string(func.name)))
}

/// `s` with every `0x` and hex digits after it written `0x...`.
pub fn mask_addresses(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let digits = s[i..].starts_with(b"0x")
            && s.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
            && (i == 0 || !s[i - 1].is_ascii_alphanumeric());
        if digits {
            out.extend_from_slice(b"0x...");
            i += 2;
            while s.get(i).is_some_and(|c| c.is_ascii_hexdigit()) {
                i += 1;
            }
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

fn parts(path: &[u8]) -> Vec<&[u8]> {
    path.split(|&c| c == b'/').collect()
}

/// The leading directories `(before, after)` whose replacement turns files before into files
/// after, most files first: each file before votes for the split that shares the most trailing
/// path parts with a file of the same name after.
fn prefixes(before: &[&[u8]], after: &[&[u8]]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut by_name: HashMap<&[u8], Vec<Vec<&[u8]>>> = HashMap::new();
    for a in after {
        let p = parts(a);
        if let Some(&name) = p.last() {
            by_name.entry(name).or_default().push(p);
        }
    }
    let mut votes: HashMap<(Vec<u8>, Vec<u8>), usize> = HashMap::new();
    for b in before {
        let pb = parts(b);
        let Some(candidates) = pb.last().and_then(|name| by_name.get(name)) else {
            continue;
        };
        let shared = |pa: &Vec<&[u8]>| {
            pa.iter()
                .rev()
                .zip(pb.iter().rev())
                .take_while(|(x, y)| x == y)
                .count()
        };
        if let Some(pa) = candidates.iter().max_by_key(|pa| shared(pa)) {
            let k = shared(pa);
            let lead = |p: &[&[u8]]| p[..p.len() - k].join(&b'/');
            *votes.entry((lead(&pb), lead(pa))).or_default() += 1;
        }
    }
    let mut out: Vec<_> = votes.into_iter().collect();
    // Most votes, then the longer lead, then in order: the same every run.
    out.sort_by(|a, b| {
        (b.1.cmp(&a.1))
            .then_with(|| b.0 .0.len().cmp(&a.0 .0.len()))
            .then_with(|| a.0.cmp(&b.0))
    });
    out.into_iter().map(|(p, _)| p).collect()
}

/// `file` with its leading directories `from` replaced by `to`, when it starts with them.
fn replaced(file: &[u8], from: &[u8], to: &[u8]) -> Option<Vec<u8>> {
    let rest = if from.is_empty() {
        file
    } else {
        file.strip_prefix(from)?.strip_prefix(b"/")?
    };
    let mut out = to.to_vec();
    if !to.is_empty() {
        out.push(b'/');
    }
    out.extend_from_slice(rest);
    Some(out)
}

/// The distinct files (not built-ins' `~`) of the rows of `keys` that `alone` keeps.
fn files_of<'m>(keys: &[Option<Key<'m>>], alone: impl Fn(usize) -> bool) -> Vec<&'m [u8]> {
    let mut files: Vec<&[u8]> = (0..keys.len())
        .filter(|&r| alone(r))
        .filter_map(|r| keys[r].map(|k| k.0))
        .filter(|f| *f != b"~")
        .collect();
    files.sort_unstable();
    files.dedup();
    files
}

/// Pairs the functions of `before` with those of `after`, each at most once.
pub fn pair(before: &Model, after: &Model) -> Pairing {
    let keys_b: Vec<Option<Key<'_>>> = (0..before.stats.len()).map(|r| key(before, r)).collect();
    let keys_a: Vec<Option<Key<'_>>> = (0..after.stats.len()).map(|r| key(after, r)).collect();
    let mut after_of: Vec<Option<(usize, How)>> = vec![None; keys_b.len()];
    let mut taken = vec![false; keys_a.len()];
    let row_after = |file: &[u8], line: i64, name: &[u8]| {
        let f = after.find_func(file, line, name)?;
        after.stats.get_index_of(&f)
    };
    // 1. The exact key.
    for (b, k) in keys_b.iter().enumerate() {
        if let Some(a) = k.and_then(|(file, line, name)| row_after(file, line, name)) {
            if !taken[a] {
                after_of[b] = Some((a, How::Key));
                taken[a] = true;
            }
        }
    }
    // 2. The path, its differing leading directories replaced.
    let files_b = files_of(&keys_b, |b| after_of[b].is_none());
    let files_a = files_of(&keys_a, |a| !taken[a]);
    let leads = prefixes(&files_b, &files_a);
    let known: HashSet<&[u8]> = files_a.iter().copied().collect();
    // Each file before that is one after once a lead is replaced: that file, and which lead.
    let moved: HashMap<&[u8], (Vec<u8>, usize)> = files_b
        .iter()
        .filter_map(|&f| {
            let hit = leads.iter().enumerate().find_map(|(i, (from, to))| {
                let g = replaced(f, from, to)?;
                known.contains(g.as_slice()).then_some((g, i))
            })?;
            Some((f, hit))
        })
        .collect();
    let mut used = vec![false; leads.len()];
    for (b, k) in keys_b.iter().enumerate() {
        let Some((file, line, name)) = k.filter(|_| after_of[b].is_none()) else {
            continue;
        };
        let Some((g, i)) = moved.get(file) else {
            continue;
        };
        if let Some(a) = row_after(g, line, name).filter(|&a| !taken[a]) {
            after_of[b] = Some((a, How::Path));
            taken[a] = true;
            used[*i] = true;
        }
    }
    // 3. The name with addresses masked, in the profiles' order.
    let masked = |k: Key<'_>| {
        let name = mask_addresses(k.2);
        (name != k.2).then_some((k.1, name))
    };
    let mut queue: HashMap<(Vec<u8>, i64, Vec<u8>), VecDeque<usize>> = HashMap::new();
    for (a, k) in keys_a.iter().enumerate() {
        if let Some((line, name)) = k.filter(|_| !taken[a]).and_then(masked) {
            let file = k.map_or(Vec::new(), |k| k.0.to_vec());
            queue.entry((file, line, name)).or_default().push_back(a);
        }
    }
    for (b, k) in keys_b.iter().enumerate() {
        let Some(k) = k.filter(|_| after_of[b].is_none()) else {
            continue;
        };
        let Some((line, name)) = masked(k) else {
            continue;
        };
        let file = moved.get(k.0).map_or_else(|| k.0.to_vec(), |m| m.0.clone());
        if let Some(a) = queue
            .get_mut(&(file, line, name))
            .and_then(VecDeque::pop_front)
        {
            after_of[b] = Some((a, How::Address));
            taken[a] = true;
        }
    }
    let count = |how: How| {
        after_of
            .iter()
            .filter(|x| x.is_some_and(|x| x.1 == how))
            .count()
    };
    let text = |s: &[u8]| String::from_utf8_lossy(s).into_owned();
    Pairing {
        by_key: count(How::Key),
        by_path: count(How::Path),
        by_address: count(How::Address),
        before_alone: after_of.iter().filter(|x| x.is_none()).count(),
        after_alone: taken.iter().filter(|&&t| !t).count(),
        prefixes: (leads.iter().zip(used))
            .filter(|(_, u)| *u)
            .map(|((from, to), _)| (text(from), text(to)))
            .collect(),
        after_of,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::model::Record;

    fn model(keys: &[(&str, i64, &str)]) -> Model {
        let mut m = Model::default();
        for &(file, line, name) in keys {
            let f = m.func_id(file.as_bytes(), line, name.as_bytes());
            let r = Record {
                cc: 1,
                nc: 1,
                tt: 1.0,
                ct: 1.0,
                ints: 0,
                callers: Vec::new(),
            };
            m.stats.insert(f, r);
        }
        m
    }

    #[test]
    fn two_checkouts_and_addresses_pair_each_their_way() {
        let before = model(&[
            ("/home/u/a/proj/main.py", 1, "main"),
            ("/home/u/a/proj/pkg/util.py", 3, "helper"),
            ("/usr/lib/python3.12/json/__init__.py", 183, "dumps"),
            (
                "~",
                0,
                "<built-in method __new__ of type object at 0x7f12ab>",
            ),
            ("/home/u/a/proj/old.py", 1, "gone"),
        ]);
        let after = model(&[
            (
                "~",
                0,
                "<built-in method __new__ of type object at 0x7e0099>",
            ),
            ("/usr/lib/python3.12/json/__init__.py", 183, "dumps"),
            ("/tmp/b/proj/pkg/util.py", 3, "helper"),
            ("/tmp/b/proj/main.py", 1, "main"),
            ("/tmp/b/proj/new.py", 1, "new"),
        ]);
        let p = pair(&before, &after);
        let how = |b: usize| p.after_of[b];
        assert_eq!(how(0), Some((3, How::Path)));
        assert_eq!(how(1), Some((2, How::Path)));
        assert_eq!(how(2), Some((1, How::Key)));
        assert_eq!(how(3), Some((0, How::Address)));
        assert_eq!(how(4), None);
        assert_eq!((p.by_key, p.by_path, p.by_address), (1, 2, 1));
        assert_eq!((p.before_alone, p.after_alone), (1, 1));
        assert_eq!(
            p.prefixes,
            [("/home/u/a".to_string(), "/tmp/b".to_string())]
        );
    }

    #[test]
    fn a_relative_path_pairs_with_an_absolute_one() {
        let before = model(&[("prog.py", 1, "f")]);
        let after = model(&[("/work/prog.py", 1, "f")]);
        assert_eq!(pair(&before, &after).after_of, [Some((0, How::Path))]);
        assert_eq!(pair(&after, &before).after_of, [Some((0, How::Path))]);
    }

    #[test]
    fn addresses_are_masked_only_where_they_are_numbers() {
        assert_eq!(
            mask_addresses(b"<built-in method x of T object at 0x7fA9>"),
            b"<built-in method x of T object at 0x...>"
        );
        assert_eq!(mask_addresses(b"f0x12 0x 0xg"), b"f0x12 0x 0xg");
    }
}
