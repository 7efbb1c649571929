//! The text of pstats' reports: `print_line`, `print_call_heading` and `print_call_line`, byte
//! for byte. The caller of these functions writes the text to the stream.

use super::model::{char_len, CallValue, Edge, Model};

/// `"%8.3f" % x`.
pub fn f8(out: &mut Vec<u8>, x: f64) {
    fixed3(out, x, 8);
}

/// `"%{width}.3f" % x`: Rust's `{:.3}` rounds the exact binary value to nearest, ties to even,
/// as Python's formatting does; NaN and the infinities are spelled as Python spells them.
pub fn fixed3(out: &mut Vec<u8>, x: f64, width: usize) {
    if x.is_nan() {
        return pad_left(out, b"nan", width);
    }
    if x.is_infinite() {
        return pad_left(out, if x > 0.0 { b"inf" } else { b"-inf" }, width);
    }
    if let Some((negative, thousandths)) = thousandths(x).filter(|t| t.1 <= u64::MAX as u128) {
        // Digits right to left ("-", integer part, ".", three decimals), then the padding.
        let mut buf = [0u8; 32];
        let mut n = thousandths as u64;
        let mut i = buf.len();
        for _ in 0..3 {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        i -= 1;
        buf[i] = b'.';
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        if negative {
            i -= 1;
            buf[i] = b'-';
        }
        let text = &buf[i..];
        out.extend(std::iter::repeat_n(b' ', width.saturating_sub(text.len())));
        out.extend_from_slice(text);
        return;
    }
    // Beyond 2**60: the general formatter.
    let s = format!("{x:.3}");
    pad_left(out, s.as_bytes(), width);
}

/// `x` rounded to thousandths as Python's `%.3f` rounds it (the exact binary value to nearest,
/// ties to even): the sign and the rounded `|x| * 1000`. `None` above 2**60.
fn thousandths(x: f64) -> Option<(bool, u128)> {
    let bits = x.to_bits();
    let negative = bits >> 63 == 1;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1 << 52) - 1);
    // |x| = mant * 2**e exactly.
    let (mant, e) = if exp == 0 {
        (frac, -1074)
    } else {
        (frac | (1 << 52), exp - 1075)
    };
    let scaled = mant as u128 * 1000;
    if e >= 0 {
        if e > 8 {
            return None;
        }
        return Some((negative, scaled << e));
    }
    let shift = (-e) as u32;
    if shift >= 127 {
        // Below 2**-74 the thousandths round to zero.
        return Some((negative, 0));
    }
    let q = scaled >> shift;
    let rem = scaled & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    let up = rem > half || (rem == half && q & 1 == 1);
    Some((negative, q + up as u128))
}

/// Appends the decimal digits of `n`.
pub fn decimal(out: &mut Vec<u8>, n: i64) {
    let mut buf = [0u8; 20];
    out.extend_from_slice(digits(n, &mut buf));
}

/// The decimal digits of `n` (with its sign), written at the end of `buf`.
pub fn digits(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut m = n.unsigned_abs();
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// `"%d/%d" % (a, b)` if they differ, else `"%d" % a`, right-justified to `width`.
fn calls_column(out: &mut Vec<u8>, a: i64, b: i64, width: usize) {
    let (mut x, mut y) = ([0u8; 20], [0u8; 20]);
    let first = digits(a, &mut x);
    if a != b {
        let second = digits(b, &mut y);
        let len = first.len() + 1 + second.len();
        out.extend(std::iter::repeat_n(b' ', width.saturating_sub(len)));
        out.extend_from_slice(first);
        out.push(b'/');
        out.extend_from_slice(second);
    } else {
        out.extend(std::iter::repeat_n(b' ', width.saturating_sub(first.len())));
        out.extend_from_slice(first);
    }
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
        calls_column(out, r.nc, r.cc, 9);
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
    // Sorted by key, (file, line, name). The callers' distinct files (a few hundred for a hub
    // of thousands) are ranked once, so most comparisons are of integers; names are fetched
    // only when file and line tie. Keys are distinct, so an unstable sort gives pstats' order.
    let mut files: rustc_hash::FxHashMap<u32, u32> = Default::default();
    let sorted: Vec<(u32, i64, &Edge)> = calls
        .iter()
        .map(|e| {
            let f = model.func(e.func);
            files.entry(f.file).or_insert(0);
            (f.file, f.line, e)
        })
        .collect();
    let mut distinct: Vec<u32> = files.keys().copied().collect();
    distinct.sort_unstable_by(|&a, &b| model.string(a).cmp(model.string(b)));
    for (rank, f) in distinct.into_iter().enumerate() {
        files.insert(f, rank as u32);
    }
    // (file rank, line) packed into one integer where lines fit 32 bits (they always do in
    // practice): one comparison instead of two, and names only on ties.
    let packed = sorted.iter().all(|e| i32::try_from(e.1).is_ok());
    let mut keyed: Vec<(u64, &Edge)> = sorted
        .iter()
        .map(|&(file, line, e)| {
            let rank = files[&file] as u64;
            let key = if packed {
                (rank << 32) | (line as i32 as u32 ^ 0x8000_0000) as u64
            } else {
                rank
            };
            (key, e)
        })
        .collect();
    let by_name = |a: &Edge, b: &Edge| {
        let (na, nb) = (model.func(a.func).name, model.func(b.func).name);
        if na == nb {
            std::cmp::Ordering::Equal
        } else {
            model.string(na).cmp(model.string(nb))
        }
    };
    keyed.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0).then_with(|| {
            if packed {
                by_name(a.1, b.1)
            } else {
                let (la, lb) = (model.func(a.1.func).line, model.func(b.1.func).line);
                la.cmp(&lb).then_with(|| by_name(a.1, b.1))
            }
        })
    });
    for (i, &(_, e)) in keyed.iter().enumerate() {
        name.clear();
        model.std_name(e.func, &mut name);
        let first = i == 0;
        match e.value {
            CallValue::Tuple { nc, cc, tt, ct, .. } => {
                if !first {
                    out.extend(std::iter::repeat_n(b' ', width + 1));
                }
                calls_column(out, nc, cc, if first { 7 } else { 9 });
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
                decimal(out, n);
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
    fn integers() {
        for n in [0i64, 7, -7, 10, 999, -1000, i64::MAX, i64::MIN] {
            let mut out = Vec::new();
            decimal(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
        let mut out = Vec::new();
        calls_column(&mut out, 12, 3, 9);
        calls_column(&mut out, 5, 5, 7);
        assert_eq!(out, b"     12/3      5");
    }
}
