//! The report's data: what the page shows, computed from the stats model (and a sampling run,
//! a timeline's paths, threads, memory, a profile to compare with) and written as one JSON
//! object. Columns of numbers rather than objects per function, so that 100,000 functions and
//! a million caller edges stay a few megabytes; times are integers in one unit (a power of ten
//! of seconds, nine digits for the largest time), and each row's place in pstats' sort by
//! tottime and by cumtime is given, so that the page sorts as pstats does, ties included.

use crate::stats::model::{CallValue, Model, TT_INT};
use crate::stats::sort::{self, Field};

use super::funcs::Funcs;
use super::json::Json;
use super::pairs::Pairing;
use super::{Dropped, Inputs, MemoryRow, StallsInput, ThreadInput, TypeRow};

/// Seconds per time unit for times up to `max`: a power of ten giving the largest nine digits.
pub fn unit_for(max: f64) -> f64 {
    if !(max.is_finite() && max > 0.0) {
        return 1e-6;
    }
    10f64.powi(max.log10().floor() as i32 - 8)
}

/// The largest time of a model's rows.
fn max_time(m: &Model) -> f64 {
    m.stats
        .values()
        .flat_map(|r| [r.tt.abs(), r.ct.abs()])
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
}

/// Each row's place (by dict position) in pstats' descending sort on `field`.
fn ranks(m: &Model, field: Field) -> Vec<i64> {
    let time = |r: &crate::stats::model::Record| if field == Field::TotTime { r.tt } else { r.ct };
    let order: Vec<usize> = if m.stats.values().any(|r| time(r).is_nan()) {
        // No total order for pstats either: NaN last, the rest as it sorts them.
        let mut rows: Vec<usize> = (0..m.stats.len()).collect();
        let key = |i: usize| {
            let t = m.stats.get_index(i).map_or(f64::NAN, |(_, r)| time(r));
            if t.is_nan() {
                f64::NEG_INFINITY
            } else {
                t
            }
        };
        rows.sort_by(|&a, &b| key(b).total_cmp(&key(a)));
        rows
    } else {
        sort::sort(m, &[(field, -1)])
            .into_iter()
            .filter_map(|f| m.stats.get_index_of(&f))
            .collect()
    };
    let mut rank = vec![0i64; m.stats.len()];
    for (pos, row) in order.into_iter().enumerate() {
        rank[row] = pos as i64;
    }
    rank
}

/// Writes the figures of a model's rows as `"f"` (unless `implied`: the rows are functions 0,
/// 1, ...), `"cc"`, `"nc"`, `"tt"`, `"ct"` columns, and their places in pstats' sorts by tottime
/// and cumtime (function ids in `ids`, the model's id -> report id).
fn row_columns(j: &mut Json, m: &Model, ids: &[u32], q: &dyn Fn(f64) -> i64, implied: bool) {
    if !implied {
        j.ints("f", m.stats.keys().map(|&f| ids[f as usize] as i64));
    }
    j.ints("cc", m.stats.values().map(|r| r.cc));
    j.ints("nc", m.stats.values().map(|r| r.nc));
    j.ints("tt", m.stats.values().map(|r| q(r.tt)));
    j.ints("ct", m.stats.values().map(|r| q(r.ct)));
    j.ints("ttRank", ranks(m, Field::TotTime));
    j.ints("ctRank", ranks(m, Field::CumTime));
}

/// `get_top_level_stats`' totals: calls, primitive calls, time (in units).
fn totals(j: &mut Json, m: &Model, q: &dyn Fn(f64) -> i64) {
    let t = m.top_level_stats(0.0);
    j.key("total");
    j.open_object();
    j.key("calls");
    j.int(i64::try_from(t.total_calls).unwrap_or(i64::MAX));
    j.key("prim");
    j.int(i64::try_from(t.prim_calls).unwrap_or(i64::MAX));
    j.key("tt");
    j.int(q(t.total_tt));
    j.key("ttInt");
    j.bool(t.total_tt_int && !m.stats.is_empty() && m.stats.values().all(|r| r.ints & TT_INT != 0));
    j.close_object();
}

/// The caller edges of every row, in the rows' order: per row how many, then per edge the
/// caller and its figures. A row's callers are listed by their id, each id as the difference
/// from the one before (a row's first from 0): a few digits where whole ids take six. Times
/// are in `unit` (at least a microsecond, as the page shows them); `cc` only where it differs
/// from `nc` (pairs of edge and value); the edges that are plain counts (the `profile`
/// module's) listed apart.
fn callers(j: &mut Json, m: &Model, ids: &[u32], unit: f64) {
    let q = |x: f64| {
        if x.is_finite() {
            (x / unit).round() as i64
        } else {
            0
        }
    };
    // Each row's edges, sorted by the caller's id here.
    let mut sorted: Vec<(u32, CallValue)> = Vec::new();
    let mut start = Vec::with_capacity(m.stats.len() + 1);
    start.push(0usize);
    for r in m.stats.values() {
        let from = sorted.len();
        sorted.extend(r.callers.iter().map(|e| (ids[e.func as usize], e.value)));
        sorted[from..].sort_unstable_by_key(|e| e.0);
        start.push(sorted.len());
    }
    j.key("callers");
    j.open_object();
    j.key("unit");
    j.float(unit);
    j.ints("n", start.windows(2).map(|w| (w[1] - w[0]) as i64));
    j.ints(
        "f",
        start.windows(2).flat_map(|w| {
            let mut prev = 0i64;
            sorted[w[0]..w[1]].iter().map(move |e| {
                let d = e.0 as i64 - prev;
                prev = e.0 as i64;
                d
            })
        }),
    );
    let part = |e: &CallValue| match *e {
        CallValue::Tuple { nc, cc, tt, ct, .. } => (nc, cc, tt, ct),
        CallValue::Count(n) => (n, n, 0.0, 0.0),
    };
    j.ints("nc", sorted.iter().map(|e| part(&e.1).0));
    j.ints("tt", sorted.iter().map(|e| q(part(&e.1).2)));
    j.ints("ct", sorted.iter().map(|e| q(part(&e.1).3)));
    j.ints(
        "cc",
        sorted.iter().enumerate().flat_map(|(i, e)| {
            let (nc, cc, _, _) = part(&e.1);
            (nc != cc).then_some([i as i64, cc]).into_iter().flatten()
        }),
    );
    j.ints(
        "count",
        sorted
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e.1, CallValue::Count(_)))
            .map(|(i, _)| i as i64),
    );
    j.close_object();
}

fn memory(j: &mut Json, rows: &[MemoryRow], funcs: &mut Funcs) {
    j.key("memory");
    if rows.is_empty() {
        j.null();
        return;
    }
    j.open_object();
    let ids: Vec<i64> = rows
        .iter()
        .map(|r| funcs.of(r.file.as_bytes(), r.line, r.name.as_bytes()) as i64)
        .collect();
    j.ints("f", ids);
    let n = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
    j.ints("allocations", rows.iter().map(|r| n(r.allocations)));
    j.ints("allocated", rows.iter().map(|r| n(r.allocated)));
    j.ints("freed", rows.iter().map(|r| n(r.freed)));
    j.ints("net", rows.iter().map(|r| r.net));
    j.ints("peak", rows.iter().map(|r| r.peak));
    j.close_object();
}

/// `"types"`: a column per figure, a row per type; `"makers"`, per type, its functions'
/// `[function id, created, alive]`, most alive first; `"stacks"` the stacks of its survivors.
fn types(j: &mut Json, rows: &[TypeRow], funcs: &mut Funcs) {
    j.key("types");
    if rows.is_empty() {
        j.null();
        return;
    }
    let n = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
    j.open_object();
    j.strs("name", rows.iter().map(|r| r.name.as_str()));
    j.ints("created", rows.iter().map(|r| n(r.created)));
    j.ints("destroyed", rows.iter().map(|r| n(r.destroyed)));
    j.ints(
        "alive",
        rows.iter()
            .map(|r| n(r.created.saturating_sub(r.destroyed))),
    );
    j.ints("peak", rows.iter().map(|r| n(r.peak)));
    j.ints("older", rows.iter().map(|r| n(r.older_destroyed)));
    j.key("peakTime");
    j.open_array();
    for r in rows {
        j.float(r.peak_time);
    }
    j.close_array();
    j.key("makers");
    j.open_array();
    for r in rows {
        let mut makers: Vec<_> = r.makers.iter().collect();
        makers.sort_by(|a, b| b.4.cmp(&a.4).then(b.3.cmp(&a.3)));
        j.open_array();
        for (file, line, name, created, alive) in makers {
            j.open_array();
            j.int(funcs.of(file.as_bytes(), *line, name.as_bytes()) as i64);
            j.int(n(*created));
            j.int(n(*alive));
            j.close_array();
        }
        j.close_array();
    }
    j.close_array();
    // Per type: [alive, [function id, ...]] of each stack, outermost call first.
    j.key("stacks");
    j.open_array();
    for r in rows {
        j.open_array();
        for (alive, stack) in &r.stacks {
            j.open_array();
            j.int(n(*alive));
            j.open_array();
            for (file, line, name) in stack {
                j.int(funcs.of(file.as_bytes(), *line, name.as_bytes()) as i64);
            }
            j.close_array();
            j.close_array();
        }
        j.close_array();
    }
    j.close_array();
    j.close_object();
}

fn stalls(j: &mut Json, stalls: Option<&StallsInput>, funcs: &mut Funcs) {
    j.key("stalls");
    let Some(s) = stalls else {
        j.null();
        return;
    };
    j.open_object();
    j.key("minMs");
    j.float(s.min_seconds * 1e3);
    j.key("mode");
    j.str(&s.mode);
    j.key("what");
    j.str(&s.what);
    j.key("rows");
    j.open_array();
    for r in &s.rows {
        let ids: Vec<i64> = r
            .frames
            .iter()
            .map(|f| funcs.of(f.file.as_bytes(), f.first_line, f.name.as_bytes()) as i64)
            .collect();
        j.open_object();
        j.key("start");
        j.float(r.start);
        j.key("duration");
        j.float(r.duration);
        j.key("thread");
        j.str(&r.thread);
        j.key("index");
        j.int(i64::from(r.thread_index));
        j.key("samples");
        j.int(i64::try_from(r.samples).unwrap_or(i64::MAX));
        j.ints("f", ids);
        j.ints("line", r.frames.iter().map(|f| i64::from(f.line)));
        j.ints(
            "n",
            r.frames
                .iter()
                .map(|f| i64::try_from(f.samples).unwrap_or(i64::MAX)),
        );
        j.close_object();
    }
    j.close_array();
    j.close_object();
}

/// Writes the data members (not the enclosing braces) of the report of `inputs` into `j`,
/// except the function table, which is written last by `write_funcs` (every part adds to it).
/// `pairing`: the comparison's pairs (of `inputs.before`'s rows with the model's).
pub fn write(
    j: &mut Json,
    inputs: &Inputs<'_>,
    threads: &[ThreadInput<'_>],
    funcs: &mut Funcs,
    pairing: Option<&Pairing>,
) {
    let m = inputs.model;
    let ids = funcs.map_model(m, m.stats.keys().copied());
    let mut max = max_time(m);
    if let Some(b) = inputs.before {
        max = max.max(max_time(b));
    }
    for t in threads {
        max = max.max(max_time(&t.model));
    }
    // A sampling run's times are samples times the interval: in that unit they are exact.
    let unit = match inputs.sampled {
        Some(p) if p.interval > 0.0 => p.interval,
        _ => unit_for(max),
    };
    let q = move |x: f64| {
        if x.is_finite() {
            (x / unit).round() as i64
        } else {
            0
        }
    };
    j.key("unit");
    j.float(unit);
    j.key("sampled");
    j.bool(m.sampled || inputs.sampled.is_some());
    j.key("sort");
    j.str(inputs.sort.name());
    totals(j, m, &q);
    j.key("rows");
    j.open_object();
    row_columns(j, m, &ids, &q, true);
    j.close_object();
    callers(j, m, &ids, unit.max(1e-6));
    j.key("threads");
    j.open_array();
    for t in threads {
        let tm: &Model = &t.model;
        let tids = funcs.map_model(tm, tm.stats.keys().copied());
        j.open_object();
        j.key("name");
        j.str(&t.name);
        j.key("index");
        j.int(t.index.map_or(-1, i64::from));
        if let Some(s) = &t.samples {
            j.key("samples");
            j.open_object();
            for (k, v) in [
                ("counted", s.samples),
                ("onCpu", s.on_cpu),
                ("idle", s.idle),
                ("dropped", s.dropped),
            ] {
                j.key(k);
                j.int(i64::try_from(v).unwrap_or(i64::MAX));
            }
            j.close_object();
        }
        row_columns(j, tm, &tids, &q, false);
        j.close_object();
    }
    j.close_array();
    memory(j, &inputs.memory, funcs);
    types(j, &inputs.types, funcs);
    stalls(j, inputs.stalls.as_ref(), funcs);
    j.key("before");
    match inputs.before {
        None => j.null(),
        Some(b) => {
            let bids = funcs.map_model(b, b.stats.keys().copied());
            j.open_object();
            j.key("title");
            j.str(&inputs.before_title);
            totals(j, b, &q);
            row_columns(j, b, &bids, &q, false);
            if let Some(p) = pairing {
                pairs(j, p);
            }
            j.close_object();
        }
    }
}

/// `"pair"` (each row before: the row after it is paired with, or -1) and `"paired"`: how many
/// were paired each way, how many were left alone, the leading directories replaced.
fn pairs(j: &mut Json, p: &Pairing) {
    j.ints(
        "pair",
        p.after_of.iter().map(|x| x.map_or(-1, |(a, _)| a as i64)),
    );
    j.key("paired");
    j.open_object();
    for (k, n) in [
        ("key", p.by_key),
        ("path", p.by_path),
        ("address", p.by_address),
        ("before", p.before_alone),
        ("after", p.after_alone),
    ] {
        j.key(k);
        j.int(n as i64);
    }
    j.key("prefixes");
    j.open_array();
    for (from, to) in &p.prefixes {
        j.open_array();
        j.str(from);
        j.str(to);
        j.close_array();
    }
    j.close_array();
    j.close_object();
}

/// `"dropped": {"kept", "dropped", "keepNewest"}` of a timeline whose buffer was full, or null.
pub fn write_dropped(j: &mut Json, dropped: Option<Dropped>) {
    j.key("dropped");
    match dropped.filter(|d| d.dropped > 0) {
        None => j.null(),
        Some(d) => {
            let n = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
            j.open_object();
            j.key("kept");
            j.int(n(d.kept));
            j.key("dropped");
            j.int(n(d.dropped));
            j.key("keepNewest");
            j.bool(d.keep_newest);
            j.close_object();
        }
    }
}

/// The function table: `"strings"` and `"fn": {"file", "line", "name"}`.
pub fn write_funcs(j: &mut Json, funcs: &Funcs) {
    j.key("strings");
    j.open_array();
    for s in &funcs.strings {
        j.bytes(s);
    }
    j.close_array();
    j.key("fn");
    j.open_object();
    j.ints("file", funcs.file.iter().map(|&s| s as i64));
    j.ints("line", funcs.line.iter().copied());
    j.ints("name", funcs.name.iter().map(|&s| s as i64));
    j.close_object();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_give_the_largest_time_nine_digits() {
        assert_eq!(unit_for(123.456), 1e-6);
        assert!((unit_for(0.0042) - 1e-11).abs() < 1e-25);
        assert_eq!(unit_for(0.0), 1e-6);
        assert_eq!(unit_for(f64::NAN), 1e-6);
    }
}
