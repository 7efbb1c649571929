//! The frame of every pickle payload rprofile writes (a Stats model, a sampling run): the tuple
//! `(kind, format, body)` written by serde-pickle, where `body` is a serde-derived struct of
//! columns, and the column types that keep it compact: `Int` (an integer in the fewest pickle
//! bytes) and `Blob` (bytes). Reading checks the opcodes first (only those serde-pickle writes,
//! nesting at most `MAX_DEPTH` deep, every length inside the data), so that bad or truncated
//! bytes are an `Error`, never a panic or a deep recursion. Python-free.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeOwned, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a payload could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub fn error<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

/// Checks that the columns of one table (their lengths in `lens`) all have `n` entries.
pub fn same_lengths(table: &str, n: usize, lens: &[usize]) -> Result<(), Error> {
    match lens.iter().all(|&l| l == n) {
        true => Ok(()),
        false => error(format!("{table} columns of different lengths")),
    }
}

/// An integer written in the fewest bytes pickle has for it (1, 2, 4 or 8 after the opcode).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Int(pub i64);

impl Serialize for Int {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            v @ 0..=0xFF => s.serialize_u8(v as u8),
            v @ 0..=0xFFFF => s.serialize_u16(v as u16),
            v => s.serialize_i64(v),
        }
    }
}

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Int, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                Ok(Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                i64::try_from(v)
                    .map(Int)
                    .map_err(|_| E::custom("an integer beyond 64 bits"))
            }
        }
        d.deserialize_i64(V)
    }
}

impl Int {
    /// As an index below `limit`.
    pub fn index(self, limit: usize, what: &str) -> Result<u32, Error> {
        match usize::try_from(self.0) {
            Ok(i) if i < limit && i <= u32::MAX as usize => Ok(i as u32),
            _ => error(format!("{what} {} out of range (0..{limit})", self.0)),
        }
    }

    /// As a count or length.
    pub fn len(self, what: &str) -> Result<usize, Error> {
        usize::try_from(self.0).or_else(|_| error(format!("negative {what} {}", self.0)))
    }
}

/// A column of integers.
pub fn ints(values: impl IntoIterator<Item = i64>) -> Vec<Int> {
    values.into_iter().map(Int).collect()
}

/// Bytes, written as one pickle `bytes` object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Blob(pub Vec<u8>);

impl Serialize for Blob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Blob, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Blob;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Blob, E> {
                Ok(Blob(v.to_vec()))
            }
            fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Blob, E> {
                Ok(Blob(v))
            }
        }
        d.deserialize_byte_buf(V)
    }
}

/// A column of floats, written as one `bytes` object of their little-endian IEEE bits: pickle
/// has no shorter form for a float than its 8 bytes, and a reader of one object per column
/// makes no intermediate value per float. Exact, NaNs and signed zeros included.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Floats(pub Vec<f64>);

impl Serialize for Floats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::with_capacity(8 * self.0.len());
        for x in &self.0 {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        s.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for Floats {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Floats, D::Error> {
        let Blob(bytes) = Blob::deserialize(d)?;
        if bytes.len() % 8 != 0 {
            return Err(de::Error::custom("a float column of a partial float"));
        }
        Ok(Floats(
            bytes
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ))
    }
}

/// The payload of `body`: `(kind, format, body)` pickled by serde-pickle.
pub fn write<T: Serialize>(kind: &str, format: u32, body: &T) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing into a Vec fails only if the body's Serialize does, and ours never do.
    if let Err(e) = serde_pickle::to_writer(&mut out, &(kind, format, body), Default::default()) {
        debug_assert!(false, "a payload could not be written: {e}");
    }
    out
}

/// The body of a payload of `kind` in `format`, with a clear error for anything else: bad or
/// truncated data, another kind of payload, another format (written by another version).
pub fn read<T: DeserializeOwned>(data: &[u8], kind: &str, format: u32) -> Result<T, Error> {
    check_opcodes(data).map_err(|e| Error(format!("bad {kind} payload {e}")))?;
    let seen = Cell::new(None);
    let expect = Expect {
        kind,
        format,
        seen: &seen,
        body: std::marker::PhantomData,
    };
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut de = serde_pickle::Deserializer::new(data, serde_pickle::DeOptions::new());
        let body = de.deserialize_tuple(3, expect)?;
        de.end()?;
        Ok::<T, serde_pickle::Error>(body)
    }));
    match (parsed, seen.get()) {
        (Ok(Ok(body)), _) => Ok(body),
        (_, Some(Seen::OtherKind)) => error(format!("not an {kind} payload")),
        (_, Some(Seen::OtherFormat(f))) => error(format!(
            "{kind} payload of format {f}: this rprofile reads format {format} (written by \
             another version of rprofile?)"
        )),
        (Ok(Err(e)), _) => error(format!("bad {kind} payload: {e}")),
        (Err(_), _) => error(format!("bad {kind} payload")),
    }
}

#[derive(Clone, Copy)]
enum Seen {
    OtherKind,
    OtherFormat(u32),
}

struct Expect<'a, T> {
    kind: &'a str,
    format: u32,
    seen: &'a Cell<Option<Seen>>,
    body: std::marker::PhantomData<T>,
}

impl<'de, T: DeserializeOwned> Visitor<'de> for Expect<'_, T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a ({:?}, format, body) tuple", self.kind)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        let kind: String = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(0, &self))?;
        if kind != self.kind {
            self.seen.set(Some(Seen::OtherKind));
            return Err(de::Error::custom("another kind of payload"));
        }
        let format: u32 = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(1, &self))?;
        if format != self.format {
            self.seen.set(Some(Seen::OtherFormat(format)));
            return Err(de::Error::custom("another format"));
        }
        let body = seq
            .next_element()?
            .ok_or_else(|| de::Error::invalid_length(2, &self))?;
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(4, &self));
        }
        Ok(body)
    }
}

/// Containers inside containers, at most: ours nest four deep.
const MAX_DEPTH: u8 = 8;

/// Walks the pickle opcodes of `data` as an unpickler's stack would, accepting only those that
/// serde-pickle writes for our types, and refusing nesting beyond `MAX_DEPTH` (serde-pickle's
/// values are dropped recursively), lengths past the end and anything after STOP.
fn check_opcodes(data: &[u8]) -> Result<(), Error> {
    // The nesting depth of each value on the stack, and where each MARK was.
    let mut stack: Vec<u8> = Vec::new();
    let mut marks: Vec<usize> = Vec::new();
    let mut at = 0usize;
    let bad = |at: usize, why: &str| error(format!("at byte {at}: {why}"));
    let take = |at: &mut usize, n: usize| -> Option<&[u8]> {
        let s = data.get(*at..at.checked_add(n)?)?;
        *at += n;
        Some(s)
    };
    loop {
        let start = at;
        let Some(&op) = data.get(at) else {
            return bad(at, "truncated (no STOP)");
        };
        at += 1;
        let arg = match op {
            0x80 | b'K' | b'C' | 0x8a | 0x8c => 1, // PROTO, BININT1; 1-byte lengths
            b'M' => 2,                             // BININT2
            b'J' | b'X' | b'B' => 4,               // BININT; 4-byte lengths
            b'G' => 8,                             // BINFLOAT
            _ => 0,
        };
        let Some(arg) = take(&mut at, arg) else {
            return bad(start, "truncated");
        };
        let length = match op {
            b'C' | 0x8a | 0x8c => Some(arg[0] as usize),
            b'X' | b'B' => Some(u32::from_le_bytes([arg[0], arg[1], arg[2], arg[3]]) as usize),
            _ => None,
        };
        if let Some(n) = length {
            if take(&mut at, n).is_none() {
                return bad(start, "truncated");
            }
        }
        // Pops `n` values (all down to the last MARK for None) and gives their deepest depth.
        let mut pop = |n: Option<usize>| -> Option<u8> {
            let from = match n {
                Some(n) => stack.len().checked_sub(n)?,
                None => {
                    let m = marks.pop()?;
                    (m <= stack.len()).then_some(m)?
                }
            };
            let deepest = stack[from..].iter().copied().max().unwrap_or(0);
            stack.truncate(from);
            Some(deepest)
        };
        let made = match op {
            0x80 => None,
            b'.' => {
                if at != data.len() {
                    return bad(at, "data after STOP");
                }
                if stack.len() != 1 || !marks.is_empty() {
                    return bad(start, "STOP with an unfinished stack");
                }
                return Ok(());
            }
            b'(' => {
                marks.push(stack.len());
                None
            }
            b'K' | b'M' | b'J' | b'G' | b'X' | b'B' | b'C' | 0x8a | 0x8c | b'N' | 0x88 | 0x89 => {
                Some(0)
            }
            b')' | b']' | b'}' => Some(1),
            b't' | 0x85 | 0x86 | 0x87 => {
                let n = match op {
                    b't' => None,
                    _ => Some((op - 0x84) as usize),
                };
                match pop(n) {
                    Some(d) => Some(d + 1),
                    None => return bad(start, "stack underflow"),
                }
            }
            b'e' | b'u' | b'a' | b's' => {
                let n = match op {
                    b'a' => Some(1),
                    b's' => Some(2),
                    _ => None,
                };
                let Some(d) = pop(n) else {
                    return bad(start, "stack underflow");
                };
                let floor = marks.last().copied().unwrap_or(0);
                if stack.len() <= floor {
                    return bad(start, "no container to add to");
                }
                let top = stack.len() - 1;
                stack[top] = stack[top].max(d + 1);
                if stack[top] > MAX_DEPTH {
                    return bad(start, "nested too deeply");
                }
                None
            }
            _ => return bad(start, &format!("unexpected opcode {op:#04x}")),
        };
        if let Some(d) = made {
            if d > MAX_DEPTH {
                return bad(start, "nested too deeply");
            }
            stack.push(d);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every cut of `data` is an error, and no flipped bit panics `read`.
    pub fn cuts_fail_and_flips_do_not_panic<T>(
        data: &[u8],
        read: impl Fn(&[u8]) -> Result<T, Error>,
    ) {
        for n in 0..data.len() {
            assert!(read(&data[..n]).is_err(), "cut at {n}");
        }
        for i in 0..data.len() {
            for bit in 0..8 {
                let mut d = data.to_vec();
                d[i] ^= 1 << bit;
                let _ = read(&d);
            }
        }
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Body {
        n: Vec<Int>,
        x: Floats,
        b: Blob,
        o: Option<Vec<Int>>,
    }

    fn body() -> Body {
        Body {
            n: ints([0, 255, 256, 65535, 65536, -1, i64::MIN, i64::MAX]),
            x: Floats(vec![0.5, -0.0, f64::INFINITY, 1e-300]),
            b: Blob(vec![0, 1, 0xff]),
            o: Some(ints([3])),
        }
    }

    #[test]
    fn a_body_reads_back_equal_and_ints_take_the_fewest_bytes() {
        let data = write("k", 1, &body());
        assert_eq!(read::<Body>(&data, "k", 1).unwrap(), body());
        let one = |v: i64| write("k", 1, &Int(v)).len();
        assert_eq!(one(255) + 1, one(256));
        assert_eq!(one(65535) + 2, one(65536));
    }

    #[test]
    fn another_kind_or_format_is_named() {
        let data = write("k", 2, &body());
        let e = read::<Body>(&data, "k", 1).unwrap_err();
        assert!(
            e.0.contains("format 2") && e.0.contains("reads format 1"),
            "{e}"
        );
        let e = read::<Body>(&data, "other", 2).unwrap_err();
        assert_eq!(e.0, "not an other payload");
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_an_error_or_a_value() {
        let data = write("k", 1, &body());
        cuts_fail_and_flips_do_not_panic(&data, |d| read::<Body>(d, "k", 1));
    }

    #[test]
    fn deep_nesting_and_foreign_opcodes_are_refused() {
        // A million nested lists: serde-pickle would drop them recursively.
        let mut deep = vec![0x80, 3];
        deep.extend(std::iter::repeat_n(b']', 1_000_000));
        deep.extend(std::iter::repeat_n(b'a', 999_999));
        deep.push(b'.');
        let e = read::<Body>(&deep, "k", 1).unwrap_err();
        assert!(e.0.contains("nested too deeply"), "{e}");
        // A global (what an unpickler would import): not ours.
        let e = read::<Body>(b"\x80\x03cos\nsystem\n.", "k", 1).unwrap_err();
        assert!(e.0.contains("unexpected opcode 0x63"), "{e}");
        let e = read::<Body>(b"", "k", 1).unwrap_err();
        assert!(e.0.contains("truncated"), "{e}");
    }
}
