//! The text of pstats' reports: `print_line`, `print_call_heading` and `print_call_line`, byte
//! for byte. The caller of these functions writes the text to the stream.

use std::fmt::Write as _;

use super::model::{char_len, CallValue, Edge, Model};
use super::sort::func_order;

/// `"%8.3f" % x`.
pub fn f8(out: &mut Vec<u8>, x: f64) {
    fixed3(out, x, 8);
}

/// `"%{width}.3f" % x`: Rust's `{:.3}` rounds the exact binary value to nearest, ties to even,
/// as Python's formatting does; NaN and the infinities are spelled as Python spells them.
pub fn fixed3(out: &mut Vec<u8>, x: f64, width: usize) {
    let mut s = String::with_capacity(16);
    if x.is_nan() {
        s.push_str("nan");
    } else if x.is_infinite() {
        s.push_str(if x > 0.0 { "inf" } else { "-inf" });
    } else {
        let _ = write!(s, "{x:.3}");
    }
    pad_left(out, s.as_bytes(), width);
}

fn pad_left(out: &mut Vec<u8>, s: &[u8], width: usize) {
    let n = char_len(s);
    out.extend(std::iter::repeat_n(b' ', width.saturating_sub(n)));
    out.extend_from_slice(s);
}

fn pad_right(out: &mut Vec<u8>, s: &[u8], width: usize) {
    let n = char_len(s);
    out.extend_from_slice(s);
    out.extend(std::iter::repeat_n(b' ', width.saturating_sub(n)));
}

/// A function that a report needed from the stats dict and did not find there (pstats raises
/// KeyError for it, after printing what came before).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Missing(pub u32);

/// A time and its per-call quotient (blank for no calls), each followed by a space.
fn time_and_per_call(out: &mut Vec<u8>, time: f64, calls: i64) {
    f8(out, time);
    out.push(b' ');
    if calls == 0 {
        out.extend_from_slice(b"        ");
    } else {
        f8(out, time / calls as f64);
    }
    out.push(b' ');
}

/// `print_line(func)` for each function of `list`.
pub fn lines(model: &Model, list: &[u32], out: &mut Vec<u8>) -> Result<(), Missing> {
    let mut name = Vec::new();
    for &func in list {
        let r = model.stats.get(&func).ok_or(Missing(func))?;
        let calls = if r.nc != r.cc {
            format!("{}/{}", r.nc, r.cc)
        } else {
            r.nc.to_string()
        };
        pad_left(out, calls.as_bytes(), 9);
        out.push(b' ');
        time_and_per_call(out, r.tt, r.nc);
        time_and_per_call(out, r.ct, r.cc);
        name.clear();
        model.std_name(func, &mut name);
        out.extend_from_slice(&name);
        out.push(b'\n');
    }
    Ok(())
}

/// `print_call_heading(width, title)`: the column header, and the sub-header when the first row
/// that has callers has them in cProfile's tuple form.
pub fn call_heading(model: &Model, width: usize, title: &str, out: &mut Vec<u8>) {
    pad_right(out, b"Function ", width);
    out.extend_from_slice(title.as_bytes());
    out.push(b'\n');
    let tuples = model
        .stats
        .values()
        .find_map(|r| r.callers.first())
        .is_some_and(|e| matches!(e.value, CallValue::Tuple { .. }));
    if tuples {
        out.extend(std::iter::repeat_n(b' ', width));
        out.extend_from_slice(b"    ncalls  tottime  cumtime\n");
    }
}

/// `print_call_line(width, source, calls, arrow)`: the function, then one line per caller or
/// callee in key order.
pub fn call_line(
    model: &Model,
    width: usize,
    source: u32,
    calls: &[Edge],
    arrow: &str,
    out: &mut Vec<u8>,
) -> Result<(), Missing> {
    let mut name = Vec::new();
    model.std_name(source, &mut name);
    pad_right(out, &name, width);
    out.extend_from_slice(arrow.as_bytes());
    out.push(b' ');
    if calls.is_empty() {
        out.push(b'\n');
        return Ok(());
    }
    let mut sorted: Vec<&Edge> = calls.iter().collect();
    sorted.sort_by(|a, b| func_order(model, a.func, b.func));
    for (i, e) in sorted.into_iter().enumerate() {
        name.clear();
        model.std_name(e.func, &mut name);
        let first = i == 0;
        match e.value {
            CallValue::Tuple { nc, cc, tt, ct, .. } => {
                if !first {
                    out.extend(std::iter::repeat_n(b' ', width + 1));
                }
                let calls = if nc != cc {
                    format!("{nc}/{cc}")
                } else {
                    nc.to_string()
                };
                pad_left(out, calls.as_bytes(), if first { 7 } else { 9 });
                out.push(b' ');
                f8(out, tt);
                out.push(b' ');
                f8(out, ct);
                out.extend_from_slice(b"  ");
                out.extend_from_slice(&name);
            }
            CallValue::Count(n) => {
                let ct = model.stats.get(&e.func).ok_or(Missing(e.func))?.ct;
                if !first {
                    out.extend(std::iter::repeat_n(b' ', width + 3));
                }
                out.extend_from_slice(&name);
                out.push(b'(');
                out.extend_from_slice(n.to_string().as_bytes());
                out.extend_from_slice(b") ");
                f8(out, ct);
            }
        }
        out.push(b'\n');
    }
    Ok(())
}

/// `print_callers`' body: each listed function with its callers.
pub fn callers(
    model: &Model,
    width: usize,
    list: &[u32],
    out: &mut Vec<u8>,
) -> Result<(), Missing> {
    for &func in list {
        let r = model.stats.get(&func).ok_or(Missing(func))?;
        call_line(model, width, func, &r.callers, "<-", out)?;
    }
    Ok(())
}

/// `print_callees`' body, from the callee lists `calc_callees` made.
pub fn callees(
    model: &Model,
    all: &super::model::Callees,
    width: usize,
    list: &[u32],
    out: &mut Vec<u8>,
) -> Result<(), Missing> {
    for &func in list {
        call_line(model, width, func, all.of(func), "->", out)?;
    }
    Ok(())
}
