//! Decimal text of integers, as Python's `%d` writes it, without formatting machinery: the
//! reports print millions of numbers and the timeline's exports two per event. Python-free.
//! Also JSON strings, quoted as the speedscope and Chrome trace writers quote them.

use std::io::{self, Write};

/// "00" to "99": digits are made two at a time, one division per pair.
pub const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Writes the decimal digits of `m` into `buf` to end just before `end`; returns where they
/// start.
pub fn put_digits(buf: &mut [u8], mut end: usize, mut m: u64) -> usize {
    while m >= 100 {
        let r = 2 * (m % 100) as usize;
        m /= 100;
        end -= 2;
        buf[end..end + 2].copy_from_slice(&PAIRS[r..r + 2]);
    }
    if m >= 10 {
        let r = 2 * m as usize;
        end -= 2;
        buf[end..end + 2].copy_from_slice(&PAIRS[r..r + 2]);
    } else {
        end -= 1;
        buf[end] = b'0' + m as u8;
    }
    end
}

/// The decimal digits of `n` (with its sign), written at the end of `buf`.
pub fn digits(n: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = put_digits(buf, 20, n.unsigned_abs());
    if n < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    &buf[i..]
}

/// Appends the decimal digits of `n`.
pub fn decimal(out: &mut Vec<u8>, n: i64) {
    let mut buf = [0u8; 20];
    out.extend_from_slice(digits(n, &mut buf));
}

/// How many bytes [`decimal`] appends for `n`.
pub fn decimal_len(n: i64) -> usize {
    let mut len = if n < 0 { 2 } else { 1 };
    let mut m = n.unsigned_abs();
    while m >= 10 {
        m /= 10;
        len += 1;
    }
    len
}

/// `s` as XML or HTML text (also inside a double-quoted attribute).
pub fn xml_escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Writes `s` as a JSON string (the JSON exports' quoting).
pub(crate) fn json_str<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    // serde_json hands back the writer's own error (with its OS error code) unwrapped.
    serde_json::to_writer(&mut *w, s).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_as_python_writes_them() {
        for n in [
            0i64,
            7,
            -7,
            10,
            99,
            100,
            -101,
            999,
            -1000,
            i64::MAX,
            i64::MIN,
        ] {
            let mut out = Vec::new();
            decimal(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
            assert_eq!(decimal_len(n), out.len());
        }
    }
}
