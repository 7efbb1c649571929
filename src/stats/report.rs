//! The text of pstats' reports: `print_line`, `print_call_heading` and `print_call_line`, byte
//! for byte. The caller of these functions writes the text to the stream.

use super::model::{char_len, CallValue, Edge, Model, Record};
use crate::core::format::{decimal, put_digits, PAIRS};

/// Right-aligned text built from its last character to its first, then appended padded to a
/// width: a report's number columns without a copy or a length check per piece.
struct Field {
    buf: [u8; FIELD],
    start: usize,
}

/// Room for two i64 with their signs and a separator (the widest calls column).
const FIELD: usize = 48;

impl Field {
    fn new() -> Self {
        Field {
            buf: [b' '; FIELD],
            start: FIELD,
        }
    }

    fn byte(&mut self, b: u8) {
        self.start -= 1;
        self.buf[self.start] = b;
    }

    fn unsigned(&mut self, m: u64) {
        self.start = put_digits(&mut self.buf, self.start, m);
    }

    fn pair(&mut self, n: usize) {
        self.start -= 2;
        self.buf[self.start..self.start + 2].copy_from_slice(&PAIRS[2 * n..2 * n + 2]);
    }

    fn signed(&mut self, n: i64) {
        self.unsigned(n.unsigned_abs());
        if n < 0 {
            self.byte(b'-');
        }
    }

    /// Appends the text right-justified in `W` columns: a copy of a constant size when it fits.
    fn put<const W: usize>(&self, out: &mut Vec<u8>) {
        if self.start >= FIELD - W {
            out.extend_from_slice(&self.buf[FIELD - W..]);
        } else {
            out.extend_from_slice(&self.buf[self.start..]);
        }
    }
}

/// `"%8.3f" % x`: the exact binary value rounded to thousandths, ties to even, as Python's
/// formatting does; NaN and the infinities are spelled as Python spells them.
pub fn f8(out: &mut Vec<u8>, x: f64) {
    let mut field = Field::new();
    if let Some((negative, n)) = thousandths(x) {
        let (whole, part) = (n / 1000, (n % 1000) as usize);
        field.pair(part % 100);
        field.byte(b'0' + (part / 100) as u8);
        field.byte(b'.');
        field.unsigned(whole);
        if negative {
            field.byte(b'-');
        }
        return field.put::<8>(out);
    }
    let text = if x.is_nan() {
        "nan".to_string()
    } else if x.is_infinite() {
        (if x > 0.0 { "inf" } else { "-inf" }).to_string()
    } else {
        // Beyond 2**64 thousandths: Rust's `{:.3}` rounds exactly, ties to even, as Python.
        format!("{x:.3}")
    };
    pad_left(out, text.as_bytes(), 8);
}

/// `x` rounded to thousandths as Python's `%.3f` rounds it: the sign and the rounded
/// `|x| * 1000`, or `None` for NaN, the infinities and when that exceeds a u64.
fn thousandths(x: f64) -> Option<(bool, u64)> {
    let bits = x.to_bits();
    let negative = bits >> 63 == 1;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    if exp == 0x7ff {
        return None;
    }
    // |x| = mant * 2**e exactly, and mant * 1000 < 2**63.
    let (mant, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp - 1075)
    };
    let scaled = mant * 1000;
    if e >= 0 {
        if e > 64 {
            return None;
        }
        // Below 2**127: no bit is shifted out.
        return u64::try_from((scaled as u128) << e)
            .ok()
            .map(|n| (negative, n));
    }
    let shift = (-e) as u32;
    if shift >= 64 {
        // |x| < 2**-11: fewer than 0.5 thousandths.
        return Some((negative, 0));
    }
    let q = scaled >> shift;
    let rem = scaled & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    let up = rem > half || (rem == half && q & 1 == 1);
    Some((negative, q + up as u64))
}

/// `"%d/%d" % (a, b)` if they differ, else `"%d" % a`, right-justified to `W` columns.
fn calls_column<const W: usize>(out: &mut Vec<u8>, a: i64, b: i64) {
    let mut field = Field::new();
    field.signed(b);
    if a != b {
        field.byte(b'/');
        field.signed(a);
    }
    field.put::<W>(out);
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

/// Where a report's text goes. `line_done` follows every line, so a writer can hand the text
/// on in chunks: a report of megabytes (a function with thousands of callers) never sits whole
/// in memory, and fresh memory costs more here than the formatting.
pub trait Sink {
    type Error;
    fn text(&mut self) -> &mut Vec<u8>;
    fn line_done(&mut self) -> Result<(), Self::Error>;
}

/// The whole text in one buffer.
impl Sink for Vec<u8> {
    type Error = std::convert::Infallible;

    fn text(&mut self) -> &mut Vec<u8> {
        self
    }

    fn line_done(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Why a report stopped early: a function it needed is not in the stats dict (pstats raises
/// KeyError for it, after printing what came before), or the sink failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop<E> {
    Missing(u32),
    Sink(E),
}

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

/// A line for each function of `list`: its ncalls column, the columns `figures` writes after
/// it (each followed by a space), its name.
fn rows<S: Sink>(
    model: &Model,
    list: &[u32],
    sink: &mut S,
    figures: impl Fn(&mut Vec<u8>, &Record),
) -> Result<(), Stop<S::Error>> {
    for (i, &func) in list.iter().enumerate() {
        if i % ROWS_AHEAD == 0 {
            model.prefetch_rows(&list[i..list.len().min(i + ROWS_AHEAD)]);
        }
        let r = model.stats.get(&func).ok_or(Stop::Missing(func))?;
        let out = sink.text();
        calls_column::<9>(out, r.nc, r.cc);
        out.push(b' ');
        figures(out, r);
        model.std_name(func, out);
        out.push(b'\n');
        sink.line_done().map_err(Stop::Sink)?;
    }
    Ok(())
}

/// `print_line(func)` for each function of `list`.
pub fn lines<S: Sink>(model: &Model, list: &[u32], sink: &mut S) -> Result<(), Stop<S::Error>> {
    rows(model, list, sink, |out, r| {
        time_and_per_call(out, r.tt, r.nc);
        time_and_per_call(out, r.ct, r.cc);
    })
}

/// The column titles of `sample_lines`: as Python 3.15's `profiling.sampling` prints its own
/// table, each function's samples running and on the stack as shares of all samples, beside the
/// seconds they stand for (no per-call quotient: a sample is no call).
pub const SAMPLE_TITLE: &str =
    " nsamples  sample%  tottime   cumul%  cumtime filename:lineno(function)\n";

/// A share of `total`, in percent, as `"%8.1f"` formats it (blank when there is no total),
/// followed by a space.
fn share(out: &mut Vec<u8>, part: i64, total: i64) {
    if total <= 0 {
        out.extend_from_slice(b"        ");
    } else {
        let pct = 100.0 * part as f64 / total as f64;
        out.extend_from_slice(format!("{pct:8.1}").as_bytes());
    }
    out.push(b' ');
}

/// The rows of a sampled profile's table (`SAMPLE_TITLE`) for each function of `list`: nc/cc
/// as pstats prints ncalls (samples on the stack / running), each one's share of `total` (the
/// samples taken), tottime and cumtime.
pub fn sample_lines<S: Sink>(
    model: &Model,
    list: &[u32],
    total: i64,
    sink: &mut S,
) -> Result<(), Stop<S::Error>> {
    rows(model, list, sink, |out, r| {
        share(out, r.cc, total);
        f8(out, r.tt);
        out.push(b' ');
        share(out, r.nc, total);
        f8(out, r.ct);
        out.push(b' ');
    })
}

/// pstats' sub-header over callers' figures in cProfile's tuple form.
pub const CALL_COLUMNS: &str = "    ncalls  tottime  cumtime";

/// `print_call_heading(width, title)`: the column header, and the sub-header `columns` (pstats'
/// is `CALL_COLUMNS`) when the first row that has callers has them in cProfile's tuple form.
pub fn call_heading(model: &Model, width: usize, title: &str, columns: &str, out: &mut Vec<u8>) {
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
        out.extend_from_slice(columns.as_bytes());
        out.push(b'\n');
    }
}

/// `print_call_line(width, source, calls, arrow)`: the function, then one line per caller or
/// callee in key order.
pub fn call_line<S: Sink>(
    model: &Model,
    width: usize,
    source: u32,
    calls: &[Edge],
    arrow: &str,
    sink: &mut S,
) -> Result<(), Stop<S::Error>> {
    let mut name = Vec::new();
    model.std_name(source, &mut name);
    let out = sink.text();
    pad_right(out, &name, width);
    out.extend_from_slice(arrow.as_bytes());
    out.push(b' ');
    if calls.is_empty() {
        out.push(b'\n');
        return sink.line_done().map_err(Stop::Sink);
    }
    let sorted = by_key(model, calls);
    for (i, &e) in sorted.iter().enumerate() {
        if let Some(ahead) = sorted.get(i + 2 * AHEAD) {
            model.prefetch_name_slot(ahead.func);
        }
        if let Some(ahead) = sorted.get(i + AHEAD) {
            model.prefetch_name(ahead.func);
        }
        let first = i == 0;
        let out = sink.text();
        match e.value {
            CallValue::Tuple { nc, cc, tt, ct, .. } => {
                if first {
                    calls_column::<7>(out, nc, cc);
                } else {
                    out.resize(out.len() + width + 1, b' ');
                    calls_column::<9>(out, nc, cc);
                }
                out.push(b' ');
                f8(out, tt);
                out.push(b' ');
                f8(out, ct);
                out.extend_from_slice(b"  ");
                model.std_name(e.func, out);
            }
            CallValue::Count(n) => {
                let ct = model.stats.get(&e.func).ok_or(Stop::Missing(e.func))?.ct;
                if !first {
                    out.resize(out.len() + width + 3, b' ');
                }
                model.std_name(e.func, out);
                out.push(b'(');
                decimal(out, n);
                out.extend_from_slice(b") ");
                f8(out, ct);
            }
        }
        out.push(b'\n');
        sink.line_done().map_err(Stop::Sink)?;
    }
    Ok(())
}

/// How many edges ahead of the one being handled a loop over a call list asks for memory.
const AHEAD: usize = 8;

/// How many functions' rows a listing asks for at once.
pub const ROWS_AHEAD: usize = 32;

/// The edges sorted by their function's key, (file, line, name), as pstats sorts a caller
/// dict's keys. The callers' distinct files (a few hundred for a hub of thousands) are ranked
/// once, so most comparisons are of integers; names are compared only where file and line tie.
/// Keys are distinct, so an unstable sort gives pstats' order.
fn by_key<'a>(model: &Model, calls: &'a [Edge]) -> Vec<&'a Edge> {
    let mut ranks: rustc_hash::FxHashMap<u32, u32> = Default::default();
    for (i, e) in calls.iter().enumerate() {
        if let Some(ahead) = calls.get(i + AHEAD) {
            model.prefetch_func(ahead.func);
        }
        ranks.entry(model.func(e.func).file).or_insert(0);
    }
    let mut distinct: Vec<u32> = ranks.keys().copied().collect();
    distinct.sort_unstable_by(|&a, &b| model.string(a).cmp(model.string(b)));
    for (rank, f) in distinct.into_iter().enumerate() {
        ranks.insert(f, rank as u32);
    }
    let rank = |e: &Edge| ranks.get(&model.func(e.func).file).copied().unwrap_or(0);
    let by_name = |a: &Edge, b: &Edge| {
        let (na, nb) = (model.func(a.func).name, model.func(b.func).name);
        if na == nb {
            std::cmp::Ordering::Equal
        } else {
            model.string(na).cmp(model.string(nb))
        }
    };
    if calls.len() > u32::MAX as usize
        || calls
            .iter()
            .any(|e| i32::try_from(model.func(e.func).line).is_err())
    {
        // Lines beyond 32 bits (never written by a profiler): tuples compared field by field.
        let mut sorted: Vec<&Edge> = calls.iter().collect();
        sorted.sort_unstable_by(|a, b| {
            (rank(a), model.func(a.func).line)
                .cmp(&(rank(b), model.func(b.func).line))
                .then_with(|| by_name(a, b))
        });
        return sorted;
    }
    // (file rank, line, index) in one integer: the sort compares integers without a call, and
    // runs of one (file, line) are then put in name order.
    let mut keys: Vec<u128> = calls
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let line = model.func(e.func).line as i32 as u32 ^ 0x8000_0000;
            (rank(e) as u128) << 64 | (line as u128) << 32 | i as u128
        })
        .collect();
    keys.sort_unstable();
    let mut sorted: Vec<&Edge> = keys.iter().map(|&k| &calls[k as u32 as usize]).collect();
    let mut start = 0;
    while start < keys.len() {
        let run = keys[start..]
            .iter()
            .take_while(|&&k| k >> 32 == keys[start] >> 32)
            .count();
        if run > 1 {
            sorted[start..start + run].sort_unstable_by(|a, b| by_name(a, b));
        }
        start += run;
    }
    sorted
}

/// `print_callers`' body: each listed function with its callers.
pub fn callers<S: Sink>(
    model: &Model,
    width: usize,
    list: &[u32],
    sink: &mut S,
) -> Result<(), Stop<S::Error>> {
    for &func in list {
        let r = model.stats.get(&func).ok_or(Stop::Missing(func))?;
        call_line(model, width, func, &r.callers, "<-", sink)?;
    }
    Ok(())
}

/// `print_callees`' body, from the callee lists `calc_callees` made.
pub fn callees<S: Sink>(
    model: &Model,
    all: &super::model::Callees,
    width: usize,
    list: &[u32],
    sink: &mut S,
) -> Result<(), Stop<S::Error>> {
    for &func in list {
        call_line(model, width, func, all.of(func), "->", sink)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f8s(x: f64) -> String {
        let mut out = Vec::new();
        f8(&mut out, x);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn fixed_point_rounds_the_exact_value_half_to_even() {
        // 1/16 and 3/16 are exact: ties, rounded to the even thousandth (as Python's %.3f).
        assert_eq!(f8s(0.0625), "   0.062");
        assert_eq!(f8s(0.1875), "   0.188");
        // 0.0005 is a little above its decimal (binary), so it rounds up.
        assert_eq!(f8s(0.0005), "   0.001");
        assert_eq!(f8s(-0.0), "  -0.000");
        assert_eq!(f8s(-1e-300), "  -0.000");
        assert_eq!(f8s(5e-324), "   0.000");
        assert_eq!(f8s(1234567.0), "1234567.000");
        assert_eq!(f8s(f64::NAN), "     nan");
        assert_eq!(f8s(f64::NEG_INFINITY), "    -inf");
        // Beyond the fast path (2**60 and up) the general formatter takes over.
        assert_eq!(f8s(1e20), "100000000000000000000.000");
    }

    #[test]
    fn fixed_point_matches_the_exact_formatter() {
        // Rust's `{:.3}` rounds the exact value half to even, as Python does: random bit
        // patterns (every exponent), ties of thousandths (k/2000 with few bits), and their
        // neighbours one ulp away.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for i in 0..200_000u64 {
            let x = match i % 3 {
                0 => f64::from_bits(next()),
                1 => (next() % 4_000_000) as f64 / 2000.0,
                _ => {
                    let t = (next() % 4_000_000) as f64 / 16_000.0;
                    f64::from_bits(t.to_bits().wrapping_add(next() % 3).wrapping_sub(1))
                }
            };
            if x.is_finite() {
                assert_eq!(f8s(x), format!("{x:8.3}"), "{x:e}");
            }
        }
    }

    #[test]
    fn calls_columns() {
        let mut out = Vec::new();
        calls_column::<9>(&mut out, 12, 3);
        calls_column::<7>(&mut out, 5, 5);
        calls_column::<3>(&mut out, -12345, i64::MIN);
        assert_eq!(out, b"     12/3      5-12345/-9223372036854775808");
    }
}
