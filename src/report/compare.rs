//! Two profiles compared, function by function (paired by `pairs`): calls and times before
//! and after, ranked by how much the function's own time changed (then its cumulative time);
//! and that ranking as a terminal table (`python -m rprofile.stats --compare` without
//! `--html`).

use crate::samples::table::figures_table;
use crate::stats::model::Model;

use super::pairs::Pairing;

/// A function's figures in one profile: ncalls, primitive calls, tottime, cumtime.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    pub nc: i64,
    pub cc: i64,
    pub tt: f64,
    pub ct: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// `filename:lineno(function)`.
    pub name: String,
    pub before: Option<Figures>,
    pub after: Option<Figures>,
}

impl Change {
    fn get(f: Option<Figures>) -> Figures {
        f.unwrap_or_default()
    }

    pub fn d_tt(&self) -> f64 {
        Change::get(self.after).tt - Change::get(self.before).tt
    }

    pub fn d_ct(&self) -> f64 {
        Change::get(self.after).ct - Change::get(self.before).ct
    }
}

fn figures(m: &Model) -> Vec<(String, Figures)> {
    m.stats
        .iter()
        .map(|(&f, r)| {
            let mut name = Vec::new();
            m.std_name(f, &mut name);
            let fig = Figures {
                nc: r.nc,
                cc: r.cc,
                tt: r.tt,
                ct: r.ct,
            };
            (String::from_utf8_lossy(&name).into_owned(), fig)
        })
        .collect()
}

/// Every function of either profile (a pair of `pairing` is one, named as after), by the size
/// of its tottime change, then of its cumtime change, then as `after` lists them, then the
/// functions gone.
pub fn changes(before: &Model, after: &Model, pairing: &Pairing) -> Vec<Change> {
    let mut out: Vec<Change> = figures(after)
        .into_iter()
        .map(|(name, fig)| Change {
            name,
            before: None,
            after: Some(fig),
        })
        .collect();
    for (b, (name, fig)) in figures(before).into_iter().enumerate() {
        match pairing.after_of.get(b).copied().flatten() {
            Some((a, _)) if a < out.len() => out[a].before = Some(fig),
            _ => out.push(Change {
                name,
                before: Some(fig),
                after: None,
            }),
        }
    }
    let size = |x: f64| if x.is_nan() { 0.0 } else { x.abs() };
    out.sort_by(|a, b| {
        size(b.d_tt())
            .total_cmp(&size(a.d_tt()))
            .then(size(b.d_ct()).total_cmp(&size(a.d_ct())))
    });
    out
}

fn calls(f: Option<Figures>) -> String {
    match f {
        None => "-".into(),
        Some(f) if f.nc == f.cc => f.nc.to_string(),
        Some(f) => format!("{}/{}", f.nc, f.cc),
    }
}

fn secs(f: Option<Figures>, pick: fn(&Figures) -> f64) -> String {
    f.map_or_else(|| "-".into(), |f| format!("{:.6}", pick(&f)))
}

fn delta(x: f64, base: Option<f64>) -> String {
    let pct = match base {
        Some(b) if b != 0.0 => format!(" ({:+.0}%)", 100.0 * x / b),
        _ => String::new(),
    };
    format!("{x:+.6}{pct}")
}

/// The first `limit` changes as a table fitted to `width` columns.
pub fn table(changes: &[Change], limit: usize, width: u16) -> String {
    let header = [
        "calls before",
        "calls after",
        "tottime before",
        "tottime after",
        "tottime change",
        "cumtime before",
        "cumtime after",
        "cumtime change",
        "filename:lineno(function)",
    ];
    let rows = changes.iter().take(limit).map(|c| {
        [
            calls(c.before),
            calls(c.after),
            secs(c.before, |f| f.tt),
            secs(c.after, |f| f.tt),
            delta(c.d_tt(), c.before.map(|f| f.tt)),
            secs(c.before, |f| f.ct),
            secs(c.after, |f| f.ct),
            delta(c.d_ct(), c.before.map(|f| f.ct)),
            c.name.clone(),
        ]
    });
    let full = figures_table(&header, rows, header.len() - 1, width);
    if full
        .lines()
        .all(|l| l.chars().count() <= usize::from(width))
    {
        return full;
    }
    // Too narrow for before and after side by side (issue 34: 231 columns in an 80-column
    // terminal): the figures after, and their changes.
    let header = [
        "calls",
        "tottime",
        "tottime change",
        "cumtime",
        "cumtime change",
        "filename:lineno(function)",
    ];
    let rows = changes.iter().take(limit).map(|c| {
        [
            calls(c.after),
            secs(c.after, |f| f.tt),
            delta(c.d_tt(), c.before.map(|f| f.tt)),
            secs(c.after, |f| f.ct),
            delta(c.d_ct(), c.before.map(|f| f.ct)),
            c.name.clone(),
        ]
    });
    figures_table(&header, rows, header.len() - 1, width)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::model::Record;

    fn model(rows: &[(&str, i64, f64)]) -> Model {
        let mut m = Model::default();
        for &(name, nc, tt) in rows {
            let f = m.func_id(b"p.py", 1, name.as_bytes());
            m.stats.insert(
                f,
                Record {
                    cc: nc,
                    nc,
                    tt,
                    ct: tt * 2.0,
                    ints: 0,
                    callers: Vec::new(),
                },
            );
        }
        m
    }

    #[test]
    fn the_changed_function_comes_first_and_new_and_gone_ones_are_kept() {
        let before = model(&[("same", 1, 1.0), ("slow", 10, 1.0), ("gone", 1, 0.1)]);
        let after = model(&[("same", 1, 1.0), ("slow", 1000, 5.0), ("new", 2, 0.2)]);
        let c = changes(&before, &after, &super::super::pairs::pair(&before, &after));
        let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "p.py:1(slow)",
                "p.py:1(new)",
                "p.py:1(gone)",
                "p.py:1(same)"
            ]
        );
        assert_eq!(c[0].d_tt(), 4.0);
        assert_eq!(c[1].before, None);
        assert_eq!(c[2].after, None);
        let t = table(&c, 2, 200);
        assert!(t.contains("+4.000000 (+400%)"), "{t}");
        assert!(t.contains("p.py:1(slow)"));
        assert!(!t.contains("gone"));
        assert_eq!(t.lines().count(), 4);
    }
}
