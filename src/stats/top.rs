//! The heaviest functions of a profile, as a profile of their own: what a report that must stay
//! small (the one a notebook shows inline) keeps of a big profile. The functions left out become
//! one row holding their calls and their own time, so the totals (calls, seconds, percentages)
//! stay those of the whole profile.

use super::model::{Edge, Model, Record};

/// The name of the row that stands for the `n` functions left out (a built-in's form, `~:0`,
/// which reports print in braces).
pub fn rest_name(n: usize) -> String {
    format!("<{n} more functions: their own time>")
}

/// Row positions of `m` by `time`, largest first (NaN last), ties in dict order.
fn ranked(m: &Model, time: impl Fn(&Record) -> f64) -> Vec<usize> {
    let key = |i: usize| {
        let t = m.stats.get_index(i).map_or(f64::NAN, |(_, r)| time(r));
        if t.is_nan() {
            f64::NEG_INFINITY
        } else {
            t
        }
    };
    let mut rows: Vec<usize> = (0..m.stats.len()).collect();
    rows.sort_by(|&a, &b| key(b).total_cmp(&key(a)));
    rows
}

/// At most `n` rows of `m` (half of them the largest tottimes, the rest the largest cumtimes),
/// in `m`'s order, with the callers among them; plus, when rows were left out, one row of their
/// summed calls and tottime (its cumtime the same: it calls nothing shown).
pub fn top(m: &Model, n: usize) -> Model {
    if m.stats.len() <= n {
        return m.clone();
    }
    let mut keep = vec![false; m.stats.len()];
    let mut kept = 0;
    let by_tt = ranked(m, |r| r.tt);
    for &i in by_tt.iter().take(n.div_ceil(2)) {
        keep[i] = true;
        kept += 1;
    }
    for i in ranked(m, |r| r.ct) {
        if kept == n {
            break;
        }
        if !keep[i] {
            keep[i] = true;
            kept += 1;
        }
    }
    let mut out = Model::default();
    out.sampled = m.sampled;
    // New ids of the kept rows' functions, made in the dict's order.
    let mut new_id = vec![u32::MAX; m.funcs.len()];
    for (i, (&func, _)) in m.stats.iter().enumerate() {
        if keep[i] {
            let f = m.func(func);
            new_id[func as usize] = out.func_id(m.string(f.file), f.line, m.string(f.name));
        }
    }
    let (mut cc, mut nc, mut tt) = (0i64, 0i64, 0.0f64);
    for (i, (&func, r)) in m.stats.iter().enumerate() {
        if !keep[i] {
            cc = cc.saturating_add(r.cc);
            nc = nc.saturating_add(r.nc);
            tt += r.tt;
            continue;
        }
        let callers = r
            .callers
            .iter()
            .filter(|e| new_id[e.func as usize] != u32::MAX)
            .map(|e| Edge {
                func: new_id[e.func as usize],
                value: e.value,
            })
            .collect();
        let row = Record {
            callers,
            ..r.clone()
        };
        out.stats.insert(new_id[func as usize], row);
    }
    let rest = out.func_id(b"~", 0, rest_name(m.stats.len() - kept).as_bytes());
    out.stats.entry(rest).or_insert(Record {
        cc,
        nc,
        tt,
        ct: tt,
        ints: 0,
        callers: Vec::new(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::model::CallValue;

    fn model(rows: &[(&str, f64, f64, &[&str])]) -> Model {
        let mut m = Model::default();
        for &(name, tt, ct, callers) in rows {
            let f = m.func_id(b"a.py", 1, name.as_bytes());
            let callers = callers
                .iter()
                .map(|c| Edge {
                    func: m.func_id(b"a.py", 1, c.as_bytes()),
                    value: CallValue::floats(1, 1, tt, ct),
                })
                .collect();
            m.stats.insert(
                f,
                Record {
                    cc: 2,
                    nc: 3,
                    tt,
                    ct,
                    ints: 0,
                    callers,
                },
            );
        }
        m
    }

    fn names(m: &Model) -> Vec<String> {
        m.stats
            .keys()
            .map(|&f| String::from_utf8_lossy(m.string(m.func(f).name)).into_owned())
            .collect()
    }

    #[test]
    fn a_small_profile_is_kept_whole() {
        let m = model(&[("f", 1.0, 2.0, &[]), ("g", 0.5, 0.5, &["f"])]);
        let t = top(&m, 2);
        assert_eq!(names(&t), ["f", "g"]);
        assert_eq!(t.stats, m.stats);
    }

    #[test]
    fn keeps_the_largest_tottimes_and_cumtimes_in_order_and_sums_the_rest() {
        // main calls a, b, c, d; c is the hot leaf, main and a have the largest cumtimes.
        let m = model(&[
            ("main", 0.1, 10.0, &[]),
            ("a", 0.2, 9.0, &["main"]),
            ("b", 0.3, 0.3, &["main"]),
            ("c", 8.0, 8.0, &["a"]),
            ("d", 0.4, 0.4, &["b"]),
        ]);
        let t = top(&m, 3);
        // Two by tottime (c, d), one by cumtime (main); a and b are summed.
        let rest = rest_name(2);
        assert_eq!(names(&t), ["main", "c", "d", rest.as_str()]);
        let rest_row = t.stats.get_index(3).unwrap().1;
        assert_eq!((rest_row.cc, rest_row.nc), (4, 6));
        assert!((rest_row.tt - 0.5).abs() < 1e-12 && rest_row.ct == rest_row.tt);
        let total = |m: &Model| m.stats.values().map(|r| r.tt).sum::<f64>();
        assert!((total(&t) - total(&m)).abs() < 1e-12);
        // Callers left out are dropped from the kept rows' lists; kept ones stay.
        let c = t.stats.get_index(1).unwrap().1;
        assert!(c.callers.is_empty());
        let d = t.stats.get_index(2).unwrap().1;
        assert!(d.callers.is_empty());
        let t = top(&m, 4);
        let c = t
            .stats
            .iter()
            .find(|(&f, _)| t.string(t.func(f).name) == b"c")
            .unwrap()
            .1;
        assert_eq!(c.callers.len(), 1);
        assert_eq!(t.string(t.func(c.callers[0].func).name), b"a");
    }

    #[test]
    fn nan_times_rank_last_and_the_sampled_mark_stays() {
        let mut m = model(&[("x", f64::NAN, f64::NAN, &[]), ("y", 1.0, 1.0, &[])]);
        m.sampled = true;
        let t = top(&m, 1);
        assert_eq!(names(&t)[0], "y");
        assert!(t.sampled);
    }
}
