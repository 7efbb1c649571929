//! Chrome's trace-event JSON (object form) of a timeline: a complete event per call, the
//! threads' names, and counters for the tracked memory, the objects of each counted type and
//! the RSS samples.

use std::io::{self, Write};

use super::Names;
use crate::core::format::{decimal, json_str};
use crate::core::timeline::{is_memory, is_object, spans, Event, OBJECT_NEW};

/// Appends microseconds with nanosecond digits, as Chrome's trace format takes them (this runs
/// twice per event: formatting machinery would dominate the export).
fn micros(out: &mut Vec<u8>, ns: i64) {
    if ns < 0 {
        out.push(b'-');
    }
    let a = ns.unsigned_abs();
    decimal(out, (a / 1000) as i64);
    let frac = (a % 1000) as u16;
    out.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// Writes the Chrome trace-event JSON (object form): a complete event ("ph": "X") per span,
/// times in microseconds from the earliest kept event, and thread/process name metadata.
pub fn write_chrome<W: Write>(
    w: &mut W,
    events: &[Event],
    dropped: u64,
    counters: &Counters<'_>,
    names: &Names<'_>,
) -> io::Result<()> {
    let origin = events
        .iter()
        .map(|e| e.t)
        .chain(counters.rss.iter().map(|s| s.0))
        .min()
        .unwrap_or(0);
    let ns =
        |t: i64| ((t.wrapping_sub(origin)) as f64 * names.seconds_per_unit * 1e9).round() as i64;
    w.write_all(b"{\"traceEvents\":[\n")?;
    write!(
        w,
        "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"python\"}}}}",
        names.pid
    )?;
    for (ident, name) in names.threads {
        write!(
            w,
            ",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":",
            names.pid, ident
        )?;
        json_str(w, name)?;
        w.write_all(b"}}")?;
    }
    // Each function's fields after the times, escaped once.
    let mut tails: std::collections::HashMap<usize, Vec<u8>> = std::collections::HashMap::new();
    let mut line = Vec::with_capacity(256);
    for s in spans(events) {
        let tail = match tails.entry(s.key) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                let (name, file, lineno) = (names.function)(s.key);
                let mut t = b",\"name\":".to_vec();
                json_str(&mut t, name)?;
                t.extend_from_slice(if file == "~" {
                    b",\"cat\":\"builtin\",\"args\":{\"file\":"
                } else {
                    b",\"cat\":\"python\",\"args\":{\"file\":"
                });
                json_str(&mut t, file)?;
                write!(t, ",\"line\":{lineno}}}}}")?;
                v.insert(t)
            }
        };
        let tid = names.threads.get(s.thread as usize).map_or(0, |t| t.0);
        // A bias or a Python timer can make a clock go back: no slice lasts less than nothing.
        let (start, end) = (ns(s.start), ns(s.end));
        let end = end.max(start);
        line.clear();
        line.extend_from_slice(b",\n{\"ph\":\"X\",\"pid\":");
        decimal(&mut line, i64::from(names.pid));
        line.extend_from_slice(b",\"tid\":");
        decimal(&mut line, i64::try_from(tid).unwrap_or(i64::MAX));
        line.extend_from_slice(b",\"ts\":");
        micros(&mut line, start);
        line.extend_from_slice(b",\"dur\":");
        micros(&mut line, end - start);
        line.extend_from_slice(tail);
        w.write_all(&line)?;
    }
    write_counters(w, events, counters, names.pid, &ns)?;
    write!(
        w,
        "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"dropped_events\":{}}}}}\n",
        dropped
    )?;
    Ok(())
}

/// What a Chrome trace shows besides the calls.
pub struct Counters<'a> {
    /// The tracked live bytes at the first kept event ([`Timeline::memory_base`](crate::core::timeline::Timeline::memory_base)).
    pub memory_base: i64,
    /// RSS samples: (time in timer units, bytes).
    pub rss: &'a [(i64, u64)],
    /// The counted types' names, by the index object events carry (`types=True`).
    pub types: &'a [String],
}

fn counter_line(out: &mut Vec<u8>, pid: u32, ns: i64, name: &str, arg: &str, value: i64) {
    out.extend_from_slice(b",\n{\"ph\":\"C\",\"pid\":");
    decimal(out, i64::from(pid));
    out.extend_from_slice(b",\"tid\":0,\"ts\":");
    micros(out, ns);
    out.extend_from_slice(b",\"name\":");
    // Writing into a Vec cannot fail; a type's name may hold any character.
    let _ = json_str(out, name);
    out.extend_from_slice(b",\"args\":{\"");
    out.extend_from_slice(arg.as_bytes());
    out.extend_from_slice(b"\":");
    decimal(out, value);
    out.extend_from_slice(b"}}");
}

/// A counter per counted type, `objects: NAME`: its objects made minus those freed since the
/// first kept event (the objects alive of those made while profiling when none was dropped).
fn write_object_counters<W: Write>(
    w: &mut W,
    events: &[Event],
    types: &[String],
    pid: u32,
    ns: &dyn Fn(i64) -> i64,
) -> io::Result<()> {
    let mut line = Vec::with_capacity(128);
    let mut alive = vec![0i64; types.len()];
    for e in events.iter().filter(|e| is_object(e.kind)) {
        let i = e.depth as usize;
        let (Some(name), Some(n)) = (types.get(i), alive.get_mut(i)) else {
            continue;
        };
        *n += if e.kind == OBJECT_NEW { 1 } else { -1 };
        line.clear();
        counter_line(
            &mut line,
            pid,
            ns(e.t),
            &format!("objects: {name}"),
            "alive",
            *n,
        );
        w.write_all(&line)?;
    }
    Ok(())
}

/// The memory counter (tracked live bytes after the memory events, the last value of each
/// microsecond, which is as fine as the trace's times go) and the RSS counter.
fn write_counters<W: Write>(
    w: &mut W,
    events: &[Event],
    counters: &Counters<'_>,
    pid: u32,
    ns: &dyn Fn(i64) -> i64,
) -> io::Result<()> {
    let mut line = Vec::with_capacity(128);
    let mut live = counters.memory_base;
    let mut pending: Option<(i64, i64)> = None;
    for e in events.iter().filter(|e| is_memory(e.kind)) {
        live += e.delta();
        let at = ns(e.t);
        if let Some((t, v)) = pending {
            if t.div_euclid(1000) != at.div_euclid(1000) {
                line.clear();
                counter_line(&mut line, pid, t, "memory", "tracked bytes", v);
                w.write_all(&line)?;
            }
        }
        pending = Some((at, live));
    }
    if let Some((t, v)) = pending {
        line.clear();
        counter_line(&mut line, pid, t, "memory", "tracked bytes", v);
        w.write_all(&line)?;
    }
    write_object_counters(w, events, counters.types, pid, ns)?;
    for &(t, bytes) in counters.rss {
        line.clear();
        counter_line(
            &mut line,
            pid,
            ns(t),
            "rss",
            "bytes",
            bytes.min(i64::MAX as u64) as i64,
        );
        w.write_all(&line)?;
    }
    Ok(())
}
