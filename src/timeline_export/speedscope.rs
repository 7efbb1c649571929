//! speedscope's file format (https://www.speedscope.app/file-format-schema.json) of a
//! timeline: one evented profile per thread, the frames shared.

use std::io::{self, Write};

use super::Names;
use crate::core::format::json_str;
use crate::core::timeline::{is_call, Event, ENTER};

/// Writes speedscope's JSON file format: one evented profile per thread (open and close events
/// with frame indices, nanoseconds from the earliest kept event), the frames shared.
pub fn write_speedscope<W: Write>(
    w: &mut W,
    events: &[Event],
    names: &Names<'_>,
    title: &str,
) -> io::Result<()> {
    let origin = events.iter().map(|e| e.t).min().unwrap_or(0);
    let ns =
        |t: i64| ((t.wrapping_sub(origin)) as f64 * names.seconds_per_unit * 1e9).round() as i64;
    // Frame indices in order of first appearance.
    let mut frames: Vec<usize> = Vec::new();
    let mut index: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for e in events.iter().filter(|e| is_call(e.kind)) {
        index.entry(e.key).or_insert_with(|| {
            frames.push(e.key);
            frames.len() - 1
        });
    }
    w.write_all(b"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"name\":")?;
    json_str(w, title)?;
    w.write_all(b",\"exporter\":")?;
    json_str(w, concat!("rprofile ", env!("CARGO_PKG_VERSION")))?;
    w.write_all(b",\"activeProfileIndex\":0,\"shared\":{\"frames\":[")?;
    for (i, &key) in frames.iter().enumerate() {
        let (name, file, line) = (names.function)(key);
        w.write_all(if i == 0 {
            b"\n{\"name\":"
        } else {
            b",\n{\"name\":"
        })?;
        json_str(w, name)?;
        if file != "~" {
            w.write_all(b",\"file\":")?;
            json_str(w, file)?;
            write!(w, ",\"line\":{line}")?;
        }
        w.write_all(b"}")?;
    }
    w.write_all(b"]},\"profiles\":[")?;
    let end = events.iter().map(|e| ns(e.t)).max().unwrap_or(0).max(0);
    let n_threads = events
        .iter()
        .map(|e| e.thread as usize + 1)
        .max()
        .unwrap_or(0);
    let mut first_profile = true;
    for th in 0..n_threads {
        let mine: Vec<&Event> = events
            .iter()
            .filter(|e| e.thread as usize == th && is_call(e.kind))
            .collect();
        if mine.is_empty() {
            continue;
        }
        // Leaves whose enters were dropped open at the start, outermost first; calls still
        // open at the end close there, so every profile nests properly.
        let mut open: Vec<usize> = Vec::new();
        let mut unmatched: Vec<usize> = Vec::new();
        for e in &mine {
            if e.kind == ENTER {
                open.push(e.key);
            } else if open.pop().is_none() {
                unmatched.push(e.key);
            }
        }
        let name = names
            .threads
            .get(th)
            .map_or_else(|| format!("thread {th}"), |t| t.1.clone());
        w.write_all(if first_profile {
            b"\n{\"type\":\"evented\",\"name\":"
        } else {
            b",\n{\"type\":\"evented\",\"name\":"
        })?;
        first_profile = false;
        json_str(w, &name)?;
        write!(
            w,
            ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":{end},\"events\":["
        )?;
        let mut first = true;
        let mut ev = |w: &mut W, open: bool, key: usize, at: i64| -> io::Result<()> {
            let sep = if first { "\n" } else { ",\n" };
            first = false;
            write!(
                w,
                "{sep}{{\"type\":\"{}\",\"frame\":{},\"at\":{at}}}",
                if open { 'O' } else { 'C' },
                index[&key]
            )
        };
        for &key in unmatched.iter().rev() {
            ev(w, true, key, 0)?;
        }
        // Each close names the frame it closes (speedscope checks), even where the leave event
        // named another function.
        let mut stack: Vec<usize> = unmatched.iter().rev().copied().collect();
        // speedscope needs times that never go back within a profile (a bias, a Python timer
        // or a per-thread clock can): each is at least the one before it.
        let mut last = 0i64;
        for e in &mine {
            let at = ns(e.t).max(last);
            last = at;
            if e.kind == ENTER {
                stack.push(e.key);
                ev(w, true, e.key, at)?;
            } else if let Some(key) = stack.pop() {
                ev(w, false, key, at)?;
            }
        }
        while let Some(key) = stack.pop() {
            ev(w, false, key, end.max(last))?;
        }
        w.write_all(b"]}")?;
    }
    w.write_all(b"]}\n")?;
    Ok(())
}
