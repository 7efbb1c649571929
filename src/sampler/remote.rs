//! Typed reads of the target's memory for the stack reader: integers, bounded byte ranges, and
//! `str` objects' characters. Every read is checked by the kernel; every length read from the
//! target is capped before anything is allocated for it.

use std::io;

use super::memory;
use super::versions::{LongLayout, LongSize, StrFacts, UnicodeLayout};

/// Reads `N` bytes at `addr`.
pub fn read_array<const N: usize>(pid: i32, addr: u64) -> io::Result<[u8; N]> {
    let mut b = [0u8; N];
    memory::read(pid, addr, &mut b)?;
    Ok(b)
}

pub fn read_u64(pid: i32, addr: u64) -> io::Result<u64> {
    memory::read_u64(pid, addr)
}

pub fn read_i32(pid: i32, addr: u64) -> io::Result<i32> {
    read_array::<4>(pid, addr).map(i32::from_ne_bytes)
}

pub fn read_u32(pid: i32, addr: u64) -> io::Result<u32> {
    read_array::<4>(pid, addr).map(u32::from_ne_bytes)
}

pub fn read_u8(pid: i32, addr: u64) -> io::Result<u8> {
    read_array::<1>(pid, addr).map(|b| b[0])
}

/// `addr + offset` that fails as a bad address instead of wrapping.
pub fn at(addr: u64, offset: u64) -> io::Result<u64> {
    addr.checked_add(offset)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EFAULT))
}

/// `len` bytes at `addr`, when `len <= cap`; else an `EINVAL` error (a torn or foreign length).
pub fn read_bytes(pid: i32, addr: u64, len: u64, cap: u64) -> io::Result<Vec<u8>> {
    if len > cap {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let n = usize::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let mut buf = vec![0u8; n];
    memory::read(pid, addr, &mut buf)?;
    Ok(buf)
}

/// The text of the compact `str` object at `addr` (all that code objects hold), at most
/// `max_chars` characters: ASCII, latin-1, UCS-2 or UCS-4 by its `kind`. A non-compact or
/// over-long string, or a character that is not a scalar value, is an `EINVAL` error.
pub fn read_str(
    pid: i32,
    addr: u64,
    layout: &UnicodeLayout,
    facts: &StrFacts,
    max_chars: u64,
) -> io::Result<String> {
    let (text, length) = read_str_start(pid, addr, layout, facts, max_chars)?;
    if length > max_chars {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(text)
}

/// The first `take` characters of the compact `str` object at `addr`, and its whole length in
/// characters (a value shown cut). A non-compact string, or a character that is not a scalar
/// value, is an `EINVAL` error.
pub fn read_str_start(
    pid: i32,
    addr: u64,
    layout: &UnicodeLayout,
    facts: &StrFacts,
    take: u64,
) -> io::Result<(String, u64)> {
    let invalid = || io::Error::from_raw_os_error(libc::EINVAL);
    let StrHead {
        length,
        kind,
        compact,
        ascii,
    } = read_head(pid, addr, layout, facts)?;
    if !compact || !matches!(kind, 1 | 2 | 4) {
        return Err(invalid());
    }
    let data = if ascii {
        at(addr, layout.ascii_size)?
    } else {
        at(addr, layout.ascii_size + facts.compact_extra)?
    };
    let width = u64::from(kind);
    let raw = read_bytes(pid, data, length.min(take) * width, take * 4)?;
    let text = match kind {
        1 => Ok(raw.iter().map(|&b| char::from(b)).collect()),
        2 => raw
            .chunks_exact(2)
            .map(|c| char::from_u32(u32::from(u16::from_ne_bytes([c[0], c[1]]))))
            .collect::<Option<String>>()
            .ok_or_else(invalid),
        _ => raw
            .chunks_exact(4)
            .map(|c| char::from_u32(u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
            .collect::<Option<String>>()
            .ok_or_else(invalid),
    }?;
    Ok((text, length))
}

/// `n` native words at `addr` (pointers, offsets), at most `cap` of them.
pub fn read_words(pid: i32, addr: u64, n: u64, cap: u64) -> io::Result<Vec<u64>> {
    let raw = read_bytes(pid, addr, n.saturating_mul(8), cap.saturating_mul(8))?;
    Ok(raw
        .chunks_exact(8)
        .map(|w| u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]))
        .collect())
}

/// The NUL-terminated C string at `addr` (a type's `tp_name`), at most `max` bytes, read a
/// chunk at a time so that a short string at the end of a mapping is read; lossy UTF-8.
pub fn read_c_string(pid: i32, addr: u64, max: u64) -> io::Result<String> {
    const CHUNK: u64 = 64;
    let mut text = Vec::new();
    while (text.len() as u64) < max {
        let here = at(addr, text.len() as u64)?;
        // Up to the chunk's end, so that a read never crosses into the next page needlessly.
        let n = CHUNK - here % CHUNK;
        let chunk = read_bytes(pid, here, n, CHUNK)?;
        match chunk.iter().position(|&b| b == 0) {
            Some(end) => {
                text.extend_from_slice(&chunk[..end]);
                return Ok(String::from_utf8_lossy(&text).into_owned());
            }
            None => text.extend_from_slice(&chunk),
        }
    }
    Err(io::Error::from_raw_os_error(libc::EINVAL))
}

/// The `int` object at `addr` as its sign and digits (least significant first), when it has at
/// most `max_digits` of them; `None` when it has more.
pub fn read_int(
    pid: i32,
    addr: u64,
    l: &LongLayout,
    max_digits: u64,
) -> io::Result<Option<(bool, Vec<u32>)>> {
    let size = read_u64(pid, at(addr, l.size)?)?;
    let (ndigits, negative) = match l.size_kind {
        LongSize::ObSize => {
            let signed = size as i64;
            (signed.unsigned_abs(), signed < 0)
        }
        LongSize::LvTag {
            shift,
            sign_mask,
            negative,
        } => (size >> shift, size & sign_mask == negative),
    };
    if ndigits > max_digits {
        return Ok(None);
    }
    let raw = read_bytes(pid, at(addr, l.digits)?, ndigits * 4, max_digits * 4)?;
    let digits = raw
        .chunks_exact(4)
        .map(|d| u32::from_ne_bytes([d[0], d[1], d[2], d[3]]))
        .collect();
    Ok(Some((negative, digits)))
}

/// What a `str` object's head says: its length in characters, and its `state` word's `kind`,
/// `compact` and `ascii` fields.
struct StrHead {
    length: u64,
    kind: u32,
    compact: bool,
    ascii: bool,
}

/// The head of the `str` object at `addr`, in one read (`length` and `state` sit in its first
/// few words; an offset beyond is a foreign layout, `EINVAL`).
fn read_head(pid: i32, addr: u64, layout: &UnicodeLayout, facts: &StrFacts) -> io::Result<StrHead> {
    const MAX_HEAD: u64 = 256;
    let head_len = (layout.length + 8).max(layout.state + 4);
    let head = read_bytes(pid, addr, head_len, MAX_HEAD)?;
    let field = |offset: u64, n: usize| {
        let start = usize::try_from(offset).ok()?;
        head.get(start..start.checked_add(n)?)
    };
    let length = field(layout.length, 8)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_ne_bytes);
    let state = field(layout.state, 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_ne_bytes);
    let (Some(length), Some(state)) = (length, state) else {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    Ok(StrHead {
        length,
        kind: (state >> facts.kind_shift) & 0x7,
        compact: (state >> facts.compact_bit) & 1 == 1,
        ascii: (state >> facts.ascii_bit) & 1 == 1,
    })
}

/// Whether the object at `addr` is a compact `str` holding the ASCII `text` (a dictionary key
/// looked up by name): one read of its head, and one of its characters only when its length is
/// that of `text`. Any other object is not it.
pub fn str_is(
    pid: i32,
    addr: u64,
    layout: &UnicodeLayout,
    facts: &StrFacts,
    text: &str,
) -> io::Result<bool> {
    let head = read_head(pid, addr, layout, facts)?;
    if !head.compact || !head.ascii || head.length != text.len() as u64 {
        return Ok(false);
    }
    let chars = read_bytes(pid, at(addr, layout.ascii_size)?, head.length, head.length)?;
    Ok(chars == text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::own_pid;

    #[test]
    fn integers_and_capped_bytes() {
        let v: [u8; 8] = [1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        let a = v.as_ptr() as u64;
        assert_eq!(read_u32(own_pid(), a).ok(), Some(1));
        assert_eq!(read_i32(own_pid(), a + 4).ok(), Some(-1));
        assert_eq!(read_u8(own_pid(), a).ok(), Some(1));
        assert_eq!(read_bytes(own_pid(), a, 3, 8).ok(), Some(vec![1, 0, 0]));
        let err = read_bytes(own_pid(), a, 9, 8).map_err(|e| e.raw_os_error());
        assert_eq!(err, Err(Some(libc::EINVAL)));
        assert!(at(u64::MAX, 1).is_err());
    }

    /// A fake compact string laid out as the layout says: state word at 0, length at 8,
    /// characters at 16 (ASCII) or 32 (compact, with `compact_extra` 16).
    fn fake(kind: u32, ascii: bool, chars: &[u8], len: u64) -> Vec<u8> {
        let f = super::super::versions::STR_FACTS_312;
        let state =
            (kind << f.kind_shift) | (1 << f.compact_bit) | (u32::from(ascii) << f.ascii_bit);
        let mut obj = vec![0u8; 32];
        obj[..4].copy_from_slice(&state.to_ne_bytes());
        obj[8..16].copy_from_slice(&len.to_ne_bytes());
        if !ascii {
            obj.resize(32, 0);
        } else {
            obj.truncate(16);
        }
        obj.extend_from_slice(chars);
        obj
    }

    #[test]
    fn strings_of_each_kind() {
        let layout = UnicodeLayout {
            state: 0,
            length: 8,
            ascii_size: 16,
        };
        let f = super::super::versions::STR_FACTS_312;
        let read = |obj: &Vec<u8>| read_str(own_pid(), obj.as_ptr() as u64, &layout, &f, 64);
        assert_eq!(
            read(&fake(1, true, b"spam", 4)).ok().as_deref(),
            Some("spam")
        );
        assert_eq!(
            read(&fake(1, false, &[0x63, 0xe9], 2)).ok().as_deref(),
            Some("cé")
        );
        let ucs2: Vec<u8> = [0x3b1u16, 0x3b2]
            .iter()
            .flat_map(|c| c.to_ne_bytes())
            .collect();
        assert_eq!(read(&fake(2, false, &ucs2, 2)).ok().as_deref(), Some("αβ"));
        let ucs4: Vec<u8> = 0x1f600u32.to_ne_bytes().to_vec();
        assert_eq!(read(&fake(4, false, &ucs4, 1)).ok().as_deref(), Some("😀"));
        // A length beyond the cap is refused before anything is allocated for it.
        assert!(read(&fake(1, true, b"spam", 1 << 40)).is_err());
        // An unknown kind is refused.
        assert!(read(&fake(3, false, b"spam", 4)).is_err());
    }

    #[test]
    fn a_key_is_its_ascii_text_and_nothing_else() {
        let layout = UnicodeLayout {
            state: 0,
            length: 8,
            ascii_size: 16,
        };
        let f = super::super::versions::STR_FACTS_312;
        let is = |obj: &Vec<u8>, text| str_is(own_pid(), obj.as_ptr() as u64, &layout, &f, text);
        assert_eq!(is(&fake(1, true, b"_name", 5), "_name").ok(), Some(true));
        assert_eq!(is(&fake(1, true, b"_nams", 5), "_name").ok(), Some(false));
        assert_eq!(is(&fake(1, true, b"_name", 5), "_nam").ok(), Some(false));
        // The same bytes in a non-ASCII (latin-1) string are another kind of string: not it.
        assert_eq!(is(&fake(1, false, b"_name", 5), "_name").ok(), Some(false));
        // A foreign length is no match, and nothing is read for it.
        assert_eq!(
            is(&fake(1, true, b"_name", 1 << 40), "_name").ok(),
            Some(false)
        );
    }
}
