//! Stats-file data into the model. A stats file is the marshal of `{(file, line, name): (cc, nc,
//! tt, ct, {caller: (nc, cc, tt, ct) or count})}`, plus, from Python 3.15's sampling profiler, the
//! key `("__sampled__",)` (any value) that marks it as sampled; anything of another shape gives
//! `None`, and the Python layer then reproduces the error pstats would raise for it.

use std::rc::Rc;

use super::model::{dedupe_callers, ints, CallValue, Edge, Model, Record, SAMPLED_KEY};
use crate::marshal::read::{self, Value};

/// Integers above this are not exact as floats; times beyond it are refused rather than rounded.
const EXACT_FLOAT_INT: i64 = 1 << 53;

/// Parses stats-file bytes. `None` for bad marshal data and for data of another shape.
pub fn from_bytes(data: &[u8]) -> Option<Model> {
    if let Some(m) = super::decode::decode(data) {
        return Some(m);
    }
    let (v, _) = read::read(data).ok()?;
    from_value(&v)
}

/// The model of a stats dict read by the marshal reader.
pub fn from_value(v: &Value) -> Option<Model> {
    let Value::Dict(pairs) = v else {
        return None;
    };
    let mut m = Model::default();
    m.stats.reserve(pairs.len());
    for (k, row) in pairs {
        if is_sampled_marker(k) {
            // 3.15's pstats pops it whatever its value: a flag, not a row.
            m.sampled = true;
            continue;
        }
        let func = key(&mut m, k)?;
        let items = sequence(row)?;
        let [cc, nc, tt, ct, callers] = items else {
            return None;
        };
        let Value::Dict(callers) = &**callers else {
            return None;
        };
        let ((tt, tt_int), (ct, ct_int)) = (time(tt)?, time(ct)?);
        let mut rec = Record {
            cc: count(cc)?,
            nc: count(nc)?,
            tt,
            ct,
            ints: ints(tt_int, ct_int),
            callers: Vec::with_capacity(callers.len()),
        };
        for (ck, cv) in callers {
            rec.callers.push(Edge {
                func: key(&mut m, ck)?,
                value: call_value(cv)?,
            });
        }
        dedupe_callers(&mut rec.callers);
        // A repeated key keeps its first place and takes the last value, as in a dict.
        m.stats.insert(func, rec);
    }
    Some(m)
}

fn sequence(v: &Value) -> Option<&[Rc<Value>]> {
    match v {
        Value::Tuple(items) | Value::List(items) => Some(items),
        _ => None,
    }
}

/// Whether `v` is the key `("__sampled__",)`.
fn is_sampled_marker(v: &Value) -> bool {
    let Value::Tuple(items) = v else {
        return false;
    };
    matches!(&items[..], [s] if matches!(&**s, Value::Str(b) if b == SAMPLED_KEY))
}

fn key(m: &mut Model, v: &Value) -> Option<u32> {
    let Value::Tuple(items) = v else {
        return None;
    };
    let [file, line, name] = &items[..] else {
        return None;
    };
    match (&**file, &**line, &**name) {
        (Value::Str(file), Value::Int(line), Value::Str(name)) => {
            Some(m.func_id(file, *line, name))
        }
        _ => None,
    }
}

fn count(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

/// A time and whether it is an int.
fn time(v: &Value) -> Option<(f64, bool)> {
    match v {
        Value::Float(f) => Some((*f, false)),
        Value::Int(i) if i.unsigned_abs() <= EXACT_FLOAT_INT as u64 => Some((*i as f64, true)),
        _ => None,
    }
}

fn call_value(v: &Value) -> Option<CallValue> {
    match v {
        Value::Int(n) => Some(CallValue::Count(*n)),
        Value::Tuple(items) => {
            let [nc, cc, tt, ct] = &items[..] else {
                return None;
            };
            let ((tt, tt_int), (ct, ct_int)) = (time(tt)?, time(ct)?);
            Some(CallValue::Tuple {
                nc: count(nc)?,
                cc: count(cc)?,
                tt,
                ct,
                ints: ints(tt_int, ct_int),
            })
        }
        _ => None,
    }
}
