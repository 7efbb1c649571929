//! Equality of read values as the fuzz checks need it: floats by their bits (NaN payloads,
//! -0.0), so that a value read twice compares equal to itself. Used by `cargo test`'s fuzz
//! checks and by the libFuzzer target (fuzz/), which compiles this folder.

use std::rc::Rc;

use super::read::{Error, Value};

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
