//! Equality of read values as the fuzz checks need it: floats by their bits (NaN payloads,
//! -0.0), so that a value read twice compares equal to itself; and what any read must satisfy
//! (`check_consistent`). Used by `cargo test`'s fuzz checks and by the libFuzzer target
//! (fuzz/), which compiles this folder.

use std::rc::Rc;

use super::read::{read, Error, Value};

/// Structural equality with floats compared by bits.
pub fn same(a: &Value, b: &Value) -> bool {
    fn all(a: &[Rc<Value>], b: &[Rc<Value>]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
    }
    match (a, b) {
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Complex(x, i), Value::Complex(y, j)) => {
            x.to_bits() == y.to_bits() && i.to_bits() == j.to_bits()
        }
        (Value::Tuple(x), Value::Tuple(y))
        | (Value::List(x), Value::List(y))
        | (Value::Set(x), Value::Set(y))
        | (Value::FrozenSet(x), Value::FrozenSet(y)) => all(x, y),
        (Value::Dict(x), Value::Dict(y)) | (Value::FrozenDict(x), Value::FrozenDict(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, v), (l, w))| same(k, l) && same(v, w))
        }
        (Value::Slice(a, b, c), Value::Slice(x, y, z)) => same(a, x) && same(b, y) && same(c, z),
        _ => a == b,
    }
}

/// Two reads' results equal: the same value and length, or the same error.
pub fn same_result(
    a: &Result<(Rc<Value>, usize), Error>,
    b: &Result<(Rc<Value>, usize), Error>,
) -> bool {
    match (a, b) {
        (Ok((x, n)), Ok((y, m))) => n == m && same(x, y),
        (Err(e), Err(f)) => e == f,
        _ => false,
    }
}

pub fn is_eof(r: &Result<(Rc<Value>, usize), Error>) -> bool {
    matches!(r, Err(Error::Eof(_)))
}

/// Reads `data` and checks what must hold for any input:
/// - `Ok` uses between 1 and `data.len()` bytes; reading just those bytes, or them followed by
///   junk, gives the same value; a strict prefix of them is an `EOFError`;
/// - an error other than `EOFError` happened within the data, so junk appended changes nothing;
/// - a `UnicodeDecodeError` carries bytes of the input.
pub fn check_consistent(data: &[u8]) -> Result<(), String> {
    let r = read(data);
    let mut extended = data.to_vec();
    extended.extend_from_slice(b"N0\x00\xff)\x01{");
    match &r {
        Ok((_, used)) => {
            let used = *used;
            if used == 0 || used > data.len() {
                return Err(format!("Ok used {used} of {} bytes", data.len()));
            }
            if !same_result(&r, &read(&data[..used])) {
                return Err("reading only the used bytes gives another result".into());
            }
            for cut in [used - 1, used / 2] {
                if cut < used && !is_eof(&read(&data[..cut])) {
                    return Err(format!(
                        "a prefix of {cut} of the {used} bytes is not an EOFError: {:?}",
                        read(&data[..cut]).map(|(_, n)| n)
                    ));
                }
            }
            if !same_result(&r, &read(&extended)) {
                return Err("bytes after the object changed the result".into());
            }
        }
        Err(Error::Eof(_)) => {}
        Err(e) => {
            if let Error::Unicode(b) = e {
                if b.len() > data.len() {
                    return Err("UnicodeDecodeError bytes longer than the input".into());
                }
            }
            if !same_result(&r, &read(&extended)) {
                return Err(format!(
                    "bytes after an error changed it: {e:?} then {:?}",
                    read(&extended).map(|(_, n)| n)
                ));
            }
        }
    }
    Ok(())
}
