//! The reader: parses marshal data into [`Value`]s, accepting every form `marshal.dump` writes
//! for the objects a stats file can hold (references, interned and short strings, small and large
//! tuples, ints of any size, binary and text floats) and rejecting the rest with the error
//! `marshal.load` gives. Repeated objects are shared (`Rc`), so back-references cannot multiply
//! memory, and no size read from the data is trusted before the bytes behind it exist. A
//! reference to a container still being read (a list holding itself, as `marshal.dump` writes
//! one) is a [`Value::Cycle`] naming that container's reference slot: the values stay a DAG.

use std::collections::HashMap;
use std::rc::Rc;

pub use super::dialect::Dialect;

/// A dict's key/value pairs.
pub type Pairs = Vec<(Rc<Value>, Rc<Value>)>;

/// A value read from marshal data.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Ellipsis,
    StopIteration,
    Int(i64),
    /// An int beyond 64 bits: sign and 15-bit digits, least significant first.
    BigInt {
        negative: bool,
        digits: Vec<u16>,
    },
    Float(f64),
    Complex(f64, f64),
    Bytes(Vec<u8>),
    /// A str, as UTF-8 (lone surrogates encoded as with `surrogatepass`).
    Str(Vec<u8>),
    Tuple(Vec<Rc<Value>>),
    List(Vec<Rc<Value>>),
    /// Key/value pairs in the order read (duplicates kept; a dict built from them keeps the first
    /// position and the last value).
    Dict(Pairs),
    Set(Vec<Rc<Value>>),
    FrozenSet(Vec<Rc<Value>>),
    /// Key/value pairs as [`Value::Dict`]'s, of a frozendict (read only in the 3.15 dialect).
    FrozenDict(Pairs),
    /// start, stop and step of a slice (read only in the 3.14 dialect and later).
    Slice(Rc<Value>, Rc<Value>, Rc<Value>),
    /// A reference to the container (list, dict, set or tuple) that took reference slot `.0`,
    /// met while that container was still being read: marshal.load gives the container itself
    /// there, so the object holds itself. [`read_with_cycles`] tells which value took the slot.
    Cycle(usize),
}

/// What went wrong, with the exception `marshal.load` raises for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// EOFError
    Eof(&'static str),
    /// ValueError
    Value(&'static str),
    /// TypeError
    Type(&'static str),
    /// ValueError "could not convert string to float: '<text>'", with the text's first 200 bytes.
    Float(Vec<u8>),
    /// UnicodeDecodeError, for these bytes (decoding them again gives the exact error).
    Unicode(Vec<u8>),
    /// TypeError for a dict key or set element Python cannot hash: the key's own type, the type
    /// its hash failed on (a list inside a tuple key: "tuple" and "list"), and where it was.
    Unhashable {
        key: &'static str,
        found: &'static str,
        place: Place,
    },
    /// A code object (`CODE_OBJECT`): a ValueError of its own type, on which a reader of stats
    /// files turns to marshal.loads (`python -m profile` files hold one).
    CodeObject,
}

/// Where an unhashable object was met (3.14's marshal names it in the error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    DictKey,
    SetElement,
}

impl Place {
    pub fn words(self) -> &'static str {
        match self {
            Place::DictKey => "dict key",
            Place::SetElement => "set element",
        }
    }
}

/// Tuples checked for hashability, by address, with the tuple kept alive and the answer.
type Hashability = HashMap<*const Value, (Rc<Value>, Option<&'static str>)>;

/// The error for a dict key or set item whose hash reaches a tuple still being read, or a tuple
/// that holds itself, before any unhashable item: marshal.load then hashes an item slot not yet
/// filled, or recurses without end, and crashes the interpreter. This reader refuses the data.
pub const SELF_CONTAINING_KEY: &str =
    "bad marshal data (a key holds itself or a tuple still being read)";

/// The error for a reference to a slot whose object is not there: beyond the slots taken, or
/// a frozenset still being read (marshal only registers one once it is complete).
const INVALID_REFERENCE: &str = "bad marshal data (invalid reference)";

/// A reference slot: the object that took it, or the type code of a container still being read
/// with the [`Value::Cycle`] that references to it read as (made at the first).
enum Slot {
    Done(Rc<Value>),
    Open(u8, Option<Rc<Value>>),
}

/// The error for a code object, which no stats file holds (marshal.load would build one).
pub const CODE_OBJECT: &str = "bad marshal data (a code object is not stats data)";

/// Nesting limit. CPython's is 2000 (`MAX_MARSHAL_STACK_DEPTH`); a stats file nests 4 deep, and
/// a lower limit keeps this recursive reader safe on threads with small stacks.
const MAX_DEPTH: usize = 200;

const FLAG_REF: u8 = 0x80;

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    refs: Vec<Slot>,
    depth: usize,
    /// Tuples already checked for hashability (see [`Reader::unhashable`]).
    hashable: Hashability,
    /// The flagged tuples being read, innermost last: their slots and the items read so far
    /// (what hashing a [`Value::Cycle`] to one of them meets before the slot being filled).
    open_tuples: Vec<(usize, Vec<Rc<Value>>)>,
    /// The slots whose containers are being hashed through a [`Value::Cycle`] (reached again:
    /// a tuple that holds itself), and how deep the hashing is.
    hashing: Vec<usize>,
    hash_depth: usize,
    /// The slots referenced while their containers were being read, in the order met.
    cyclic: Vec<usize>,
    dialect: Dialect,
}

/// What [`read_with_cycles`] reads.
pub struct Read {
    pub value: Rc<Value>,
    /// The bytes it took.
    pub used: usize,
    /// For each slot a [`Value::Cycle`] names, the container that took it.
    pub cycles: Vec<(usize, Rc<Value>)>,
}

/// Reads one object from the start of `data` as a stats reader needs it (no 3.15 frozendict);
/// returns it and the number of bytes it took.
pub fn read(data: &[u8]) -> Result<(Rc<Value>, usize), Error> {
    read_with_cycles(data, Dialect::default()).map(|r| (r.value, r.used))
}

/// [`read`] in `dialect`, with what the [`Value::Cycle`]s in the value refer to.
pub fn read_with_cycles(data: &[u8], dialect: Dialect) -> Result<Read, Error> {
    let mut r = Reader {
        data,
        pos: 0,
        refs: Vec::new(),
        depth: 0,
        hashable: HashMap::new(),
        open_tuples: Vec::new(),
        hashing: Vec::new(),
        hash_depth: 0,
        cyclic: Vec::new(),
        dialect,
    };
    let Some(value) = r.object()? else {
        return Err(Error::Type("NULL object in marshal data for object"));
    };
    let mut cycles = Vec::with_capacity(r.cyclic.len());
    for &i in &r.cyclic {
        // Every container is complete once the object is.
        if let Some(Slot::Done(v)) = r.refs.get(i) {
            cycles.push((i, v.clone()));
        }
    }
    Ok(Read {
        value,
        used: r.pos,
        cycles,
    })
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let Some(end) = end else {
            return Err(Error::Eof("marshal data too short"));
        };
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn byte(&mut self) -> Result<u8, Error> {
        Ok(self.bytes(1)?[0])
    }

    /// A one-byte length, whose absence the dialect words.
    fn length_byte(&mut self) -> Result<usize, Error> {
        match self.byte() {
            Ok(n) => Ok(n as usize),
            Err(_) => Err(Error::Eof(self.dialect.missing_length_byte)),
        }
    }

    fn i32(&mut self) -> Result<i32, Error> {
        let b = self.bytes(4)?;
        Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn f64(&mut self) -> Result<f64, Error> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }

    /// A length prefix: non-negative and, since each element takes at least one byte, no
    /// larger than what is left (so no allocation is sized by a lie).
    fn size(&mut self, what: &'static str) -> Result<usize, Error> {
        let n = self.i32()?;
        if n < 0 {
            return Err(Error::Value(what));
        }
        Ok(n as usize)
    }

    /// Room to reserve for `n` items: never more than the bytes left could hold, nor more than
    /// a small bound (nested containers each declaring a huge size would otherwise reserve
    /// the rest of the input once per level); vectors grow past it as items arrive.
    fn capacity(&self, n: usize) -> usize {
        n.min(self.data.len() - self.pos).min(1024)
    }

    /// A text float (`TYPE_FLOAT`, older marshal versions): a length byte and its repr, read as
    /// marshal reads it: up to the first NUL, with no whitespace around it.
    fn text_float(&mut self) -> Result<f64, Error> {
        let n = self.length_byte()?;
        let s = self.bytes(n)?;
        let s = s.split(|&b| b == 0).next().unwrap_or_default();
        std::str::from_utf8(s)
            .ok()
            .and_then(parse_python_float)
            .ok_or_else(|| Error::Float(s[..s.len().min(200)].to_vec()))
    }

    fn long(&mut self) -> Result<Value, Error> {
        let n = self.i32()?;
        // Any other size is taken at its word, as marshal does: the digits run out first.
        if n == i32::MIN {
            return Err(Error::Value("bad marshal data (long size out of range)"));
        }
        let count = n.unsigned_abs() as usize;
        let mut digits = Vec::with_capacity(self.capacity(count));
        for _ in 0..count {
            let b = self.bytes(2)?;
            let d = u16::from_le_bytes([b[0], b[1]]);
            if d > 0x7fff {
                return Err(Error::Value(
                    "bad marshal data (digit out of range in long)",
                ));
            }
            digits.push(d);
        }
        if digits.last() == Some(&0) {
            return Err(Error::Value("bad marshal data (unnormalized long data)"));
        }
        let negative = n < 0;
        // Fits in i64? (At most 5 digits: 75 bits; check the magnitude.)
        if digits.len() <= 5 {
            let mut mag: u128 = 0;
            for &d in digits.iter().rev() {
                mag = (mag << 15) | d as u128;
            }
            if negative && mag <= i64::MAX as u128 + 1 {
                return Ok(Value::Int((mag as i128).wrapping_neg() as i64));
            }
            if !negative && mag <= i64::MAX as u128 {
                return Ok(Value::Int(mag as i64));
            }
        }
        Ok(Value::BigInt { negative, digits })
    }

    fn items(&mut self, n: usize, what: &'static str) -> Result<Vec<Rc<Value>>, Error> {
        let mut v = Vec::with_capacity(self.capacity(n));
        for _ in 0..n {
            match self.object()? {
                Some(x) => v.push(x),
                None => return Err(Error::Type(what)),
            }
        }
        Ok(v)
    }

    /// The items of a tuple; one that took reference slot `slot` keeps them in `open_tuples`
    /// while they are read, where hashing a reference to it finds them.
    fn tuple_items(&mut self, n: usize, slot: Option<usize>) -> Result<Vec<Rc<Value>>, Error> {
        const NULL_ITEM: &str = "NULL object in marshal data for tuple";
        let Some(slot) = slot else {
            return self.items(n, NULL_ITEM);
        };
        self.open_tuples
            .push((slot, Vec::with_capacity(self.capacity(n))));
        for _ in 0..n {
            let x = self.object()?.ok_or(Error::Type(NULL_ITEM))?;
            // Inner tuples have taken theirs off again: the last entry is this tuple's.
            if let Some((_, items)) = self.open_tuples.last_mut() {
                items.push(x);
            }
        }
        Ok(self
            .open_tuples
            .pop()
            .map(|(_, items)| items)
            .unwrap_or_default())
    }

    /// `Err` with the error marshal.load gives when it hashes `v` (a dict key, a set item):
    /// "unhashable type" for the first list, dict or set met in the order Python hashes; for a
    /// tuple that holds itself or is still being read, marshal.load would crash, and the data
    /// is refused ([`SELF_CONTAINING_KEY`]).
    fn check_hashable(&mut self, v: &Rc<Value>, place: Place) -> Result<(), Error> {
        match self.unhashable(v)? {
            Some(found) => Err(Error::Unhashable {
                key: self.type_name(v),
                found,
                place,
            }),
            None => Ok(()),
        }
    }

    /// The Python type name of a container (of what a [`Value::Cycle`] names, for one).
    fn type_name(&self, v: &Value) -> &'static str {
        match v {
            Value::Cycle(slot) => match self.refs.get(*slot) {
                Some(Slot::Open(ty, _)) => container_name(*ty),
                Some(Slot::Done(v)) => self.type_name(v),
                None => "object",
            },
            Value::Tuple(_) => "tuple",
            Value::List(_) => "list",
            Value::Dict(_) => "dict",
            Value::Set(_) => "set",
            Value::FrozenSet(_) => "frozenset",
            Value::FrozenDict(_) => "frozendict",
            Value::Slice(..) => "slice",
            _ => "object",
        }
    }

    /// The type name Python gives when `v` cannot be hashed (a list, dict or set, or a tuple
    /// holding one). `hashable` remembers the tuples already checked: shared tuples nest into
    /// a DAG whose unfolding is exponential, so each is visited once. It holds each tuple (not
    /// only its address), so an address in it is never reused by another tuple while the
    /// reader runs.
    fn unhashable(&mut self, v: &Rc<Value>) -> Result<Option<&'static str>, Error> {
        // Tuples, frozendicts and slices are remembered; a cycle is answered through its slot.
        let tuple = match &**v {
            Value::List(_) => return Ok(Some("list")),
            Value::Dict(_) => return Ok(Some("dict")),
            Value::Set(_) => return Ok(Some("set")),
            Value::Tuple(_) | Value::FrozenDict(_) | Value::Slice(..) => true,
            Value::Cycle(_) => false,
            _ => return Ok(None),
        };
        if tuple {
            if let Some((_, known)) = self.hashable.get(&Rc::as_ptr(v)) {
                return Ok(*known);
            }
        }
        // Without cycles this nests no deeper than the value (< MAX_DEPTH); only a chain of
        // references to containers being read goes on (marshal.load: deep C recursion).
        if self.hash_depth >= MAX_DEPTH {
            return Err(Error::Value(SELF_CONTAINING_KEY));
        }
        self.hash_depth += 1;
        let r = match &**v {
            Value::Tuple(items) => self.first_unhashable(items),
            // A frozendict's keys are hashable (checked as read); its hash takes the values.
            Value::FrozenDict(pairs) => self.first_unhashable(&distinct_values(pairs)),
            Value::Slice(start, stop, step) => {
                self.first_unhashable(&[start.clone(), stop.clone(), step.clone()])
            }
            Value::Cycle(slot) => self.unhashable_slot(*slot),
            _ => Ok(None),
        };
        self.hash_depth -= 1;
        let r = r?;
        if tuple {
            self.hashable.insert(Rc::as_ptr(v), (v.clone(), r));
        }
        Ok(r)
    }

    /// [`Reader::unhashable`] of the first of `items` that has an answer, in Python's order.
    fn first_unhashable(&mut self, items: &[Rc<Value>]) -> Result<Option<&'static str>, Error> {
        for i in items {
            if let Some(name) = self.unhashable(i)? {
                return Ok(Some(name));
            }
        }
        Ok(None)
    }

    /// [`Reader::unhashable`] of the container that took reference slot `slot`, reached by a
    /// [`Value::Cycle`]. A tuple still being read is hashed up to the item being read, whose
    /// slot marshal.load has not filled (it would hash NULL); a tuple reached again holds
    /// itself (marshal.load would recurse without end).
    fn unhashable_slot(&mut self, slot: usize) -> Result<Option<&'static str>, Error> {
        /// The tuple: its place in `open_tuples` while it is read, else itself.
        enum Tuple {
            Open(Option<usize>),
            Done(Rc<Value>),
        }
        let tuple = match self.refs.get(slot) {
            Some(Slot::Open(b'[', _)) => return Ok(Some("list")),
            Some(Slot::Open(b'{', _)) => return Ok(Some("dict")),
            Some(Slot::Open(b'<', _)) => return Ok(Some("set")),
            Some(Slot::Open(_, _)) => {
                Tuple::Open(self.open_tuples.iter().rposition(|(s, _)| *s == slot))
            }
            Some(Slot::Done(v)) => match &**v {
                Value::List(_) => return Ok(Some("list")),
                Value::Dict(_) => return Ok(Some("dict")),
                Value::Set(_) => return Ok(Some("set")),
                _ => Tuple::Done(v.clone()),
            },
            None => return Err(Error::Value(INVALID_REFERENCE)),
        };
        if self.hashing.contains(&slot) {
            return Err(Error::Value(SELF_CONTAINING_KEY));
        }
        self.hashing.push(slot);
        let mut r = Ok(None);
        // By index: hashing reads nothing, so the items stay where they are meanwhile.
        for i in 0.. {
            let item = match &tuple {
                Tuple::Open(place) => place
                    .and_then(|p| self.open_tuples.get(p))
                    .and_then(|(_, items)| items.get(i).cloned()),
                Tuple::Done(v) => match &**v {
                    Value::Tuple(items) => items.get(i).cloned(),
                    _ => None,
                },
            };
            let Some(item) = item else { break };
            r = self.unhashable(&item);
            if !matches!(r, Ok(None)) {
                break;
            }
        }
        self.hashing.pop();
        match (r?, tuple) {
            (None, Tuple::Open(_)) => Err(Error::Value(SELF_CONTAINING_KEY)),
            (found, _) => Ok(found),
        }
    }

    /// A dict's (or frozendict's) pairs. A NULL in key or value position ends them, as in
    /// marshal; an unhashable key fails where marshal's dict insertion fails, after its value.
    fn pairs(&mut self) -> Result<Pairs, Error> {
        let mut pairs = Vec::new();
        while let Some(k) = self.object()? {
            let Some(v) = self.object()? else { break };
            self.check_hashable(&k, Place::DictKey)?;
            pairs.push((k, v));
        }
        Ok(pairs)
    }

    /// One object; `None` for `TYPE_NULL` (which ends a dict).
    fn object(&mut self) -> Result<Option<Rc<Value>>, Error> {
        if self.pos >= self.data.len() {
            return Err(Error::Eof("EOF read where object expected"));
        }
        if self.depth >= MAX_DEPTH {
            return Err(Error::Value("recursion limit exceeded"));
        }
        self.depth += 1;
        let r = self.object_inner();
        self.depth -= 1;
        r
    }

    fn object_inner(&mut self) -> Result<Option<Rc<Value>>, Error> {
        let code = self.byte()?;
        let flag = code & FLAG_REF != 0;
        let ty = code & !FLAG_REF;
        if ty == b'r' {
            let i = self.i32()?;
            let Some(index) = usize::try_from(i).ok().filter(|&i| i < self.refs.len()) else {
                return Err(Error::Value(INVALID_REFERENCE));
            };
            return match &mut self.refs[index] {
                Slot::Done(v) => Ok(Some(v.clone())),
                // A container still being read: marshal.load gives the container itself.
                Slot::Open(b'[' | b'{' | b'<' | b'(' | b')', cycle) => {
                    if cycle.is_none() {
                        *cycle = Some(Rc::new(Value::Cycle(index)));
                        self.cyclic.push(index);
                    }
                    Ok(cycle.clone())
                }
                Slot::Open(_, _) => Err(Error::Value(INVALID_REFERENCE)),
            };
        }
        // A container takes its reference index before its items are read, as marshal does, so
        // the indices match. Singletons and NULL never take a slot in marshal, flagged or not.
        let slot = if flag && !matches!(ty, b'0' | b'N' | b'F' | b'T' | b'S' | b'.') {
            self.refs.push(Slot::Open(ty, None));
            Some(self.refs.len() - 1)
        } else {
            None
        };
        let value = match ty {
            b'0' => return Ok(None),
            b'N' => Value::None,
            b'F' => Value::Bool(false),
            b'T' => Value::Bool(true),
            b'S' => Value::StopIteration,
            b'.' => Value::Ellipsis,
            b'i' => Value::Int(self.i32()? as i64),
            b'I' => {
                let b = self.bytes(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Value::Int(i64::from_le_bytes(a))
            }
            b'l' => self.long()?,
            b'g' => Value::Float(self.f64()?),
            b'f' => Value::Float(self.text_float()?),
            b'y' => Value::Complex(self.f64()?, self.f64()?),
            b'x' => Value::Complex(self.text_float()?, self.text_float()?),
            b's' => {
                let n = self.size("bad marshal data (bytes object size out of range)")?;
                Value::Bytes(self.bytes(n)?.to_vec())
            }
            b'u' | b't' => {
                let n = self.size("bad marshal data (string size out of range)")?;
                let s = self.bytes(n)?;
                if !valid_utf8_surrogatepass(s) {
                    return Err(Error::Unicode(s.to_vec()));
                }
                Value::Str(s.to_vec())
            }
            b'a' | b'A' => {
                let n = self.size("bad marshal data (string size out of range)")?;
                latin1_to_utf8(self.bytes(n)?)
            }
            b'z' | b'Z' => {
                let n = self.length_byte()?;
                latin1_to_utf8(self.bytes(n)?)
            }
            b')' => {
                let n = self.length_byte()?;
                Value::Tuple(self.tuple_items(n, slot)?)
            }
            b'(' => {
                let n = self.size("bad marshal data (tuple size out of range)")?;
                Value::Tuple(self.tuple_items(n, slot)?)
            }
            b'[' => {
                let n = self.size("bad marshal data (list size out of range)")?;
                Value::List(self.items(n, "NULL object in marshal data for list")?)
            }
            b'<' | b'>' => {
                let n = self.size("bad marshal data (set size out of range)")?;
                let mut items = Vec::with_capacity(self.capacity(n));
                for _ in 0..n {
                    let Some(x) = self.object()? else {
                        return Err(Error::Type("NULL object in marshal data for set"));
                    };
                    self.check_hashable(&x, Place::SetElement)?;
                    items.push(x);
                }
                if ty == b'<' {
                    Value::Set(items)
                } else {
                    Value::FrozenSet(items)
                }
            }
            b'{' => Value::Dict(self.pairs()?),
            b'}' if self.dialect.frozendict => Value::FrozenDict(self.pairs()?),
            // A NULL part makes the slice a NULL (no error of its own, nothing more read).
            b':' if self.dialect.slice => {
                let Some(start) = self.object()? else {
                    return Ok(None);
                };
                let Some(stop) = self.object()? else {
                    return Ok(None);
                };
                let Some(step) = self.object()? else {
                    return Ok(None);
                };
                Value::Slice(start, stop, step)
            }
            b'c' => return Err(Error::CodeObject),
            _ => return Err(Error::Value("bad marshal data (unknown type code)")),
        };
        let value = Rc::new(value);
        if let Some(i) = slot {
            self.refs[i] = Slot::Done(value.clone());
        }
        Ok(Some(value))
    }
}

/// The type name of the container a type code reads.
fn container_name(ty: u8) -> &'static str {
    match ty {
        b'[' => "list",
        b'{' => "dict",
        b'<' => "set",
        b'>' => "frozenset",
        b'}' => "frozendict",
        b':' => "slice",
        _ => "tuple",
    }
}

/// A dict key as far as equality goes, for the keys stats data and its damage hold: numbers equal
/// across int, bool and float as in Python; strings, bytes and tuples by content; anything else
/// (a NaN, a frozenset, a big int) only to the same object. Slices compare as tuples do.
#[derive(PartialEq, Eq, Hash)]
enum KeyId<'a> {
    None,
    Ellipsis,
    StopIteration,
    Int(i64),
    Float(u64),
    Str(&'a [u8]),
    Bytes(&'a [u8]),
    Tuple(Vec<KeyId<'a>>),
    Slice(Vec<KeyId<'a>>),
    Object(*const Value),
}

/// [`KeyId`] of `v`; `None` past `budget` nodes (a tuple of shared tuples unfolds exponentially).
fn key_id<'a>(v: &'a Rc<Value>, budget: &mut usize) -> Option<KeyId<'a>> {
    *budget = budget.checked_sub(1)?;
    let float = |f: f64| {
        if f.fract() == 0.0 && f.abs() < 9.2e18 {
            KeyId::Int(f as i64)
        } else if f.is_nan() {
            KeyId::Object(Rc::as_ptr(v))
        } else {
            KeyId::Float(f.to_bits())
        }
    };
    Some(match &**v {
        Value::None => KeyId::None,
        Value::Ellipsis => KeyId::Ellipsis,
        Value::StopIteration => KeyId::StopIteration,
        Value::Bool(b) => KeyId::Int(*b as i64),
        Value::Int(i) => KeyId::Int(*i),
        Value::Float(f) => float(*f),
        Value::Complex(re, im) if *im == 0.0 => float(*re),
        Value::Str(s) => KeyId::Str(s),
        Value::Bytes(b) => KeyId::Bytes(b),
        Value::Tuple(items) => KeyId::Tuple(
            items
                .iter()
                .map(|i| key_id(i, budget))
                .collect::<Option<_>>()?,
        ),
        Value::Slice(start, stop, step) => KeyId::Slice(
            [start, stop, step]
                .into_iter()
                .map(|i| key_id(i, budget))
                .collect::<Option<_>>()?,
        ),
        _ => KeyId::Object(Rc::as_ptr(v)),
    })
}

/// The values of a dict built from `pairs`: one per distinct key, at its first position, with its
/// last value (the order a frozendict's hash meets them).
fn distinct_values(pairs: &[(Rc<Value>, Rc<Value>)]) -> Vec<Rc<Value>> {
    let mut at: HashMap<KeyId, usize> = HashMap::new();
    let mut values: Vec<Rc<Value>> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let id = key_id(k, &mut 10_000).unwrap_or(KeyId::Object(Rc::as_ptr(k)));
        match at.entry(id) {
            std::collections::hash_map::Entry::Occupied(e) => values[*e.get()] = v.clone(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(values.len());
                values.push(v.clone());
            }
        }
    }
    values
}

/// `a`/`z` strings are Latin-1 (ASCII in practice); stored as UTF-8 like every other str.
fn latin1_to_utf8(b: &[u8]) -> Value {
    if b.is_ascii() {
        return Value::Str(b.to_vec());
    }
    Value::Str(
        b.iter()
            .map(|&c| c as char)
            .collect::<String>()
            .into_bytes(),
    )
}

/// UTF-8 where the encodings of lone surrogates (U+D800..U+DFFF, which marshal writes with
/// `surrogatepass`) are allowed.
pub fn valid_utf8_surrogatepass(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        let (len, min) = match b {
            0x00..=0x7f => (1, 0),
            0xc2..=0xdf => (2, 0x80),
            0xe0..=0xef => (3, 0x800),
            0xf0..=0xf4 => (4, 0x10000),
            _ => return false,
        };
        if i + len > s.len() {
            return false;
        }
        let mut cp = if len == 1 {
            b as u32
        } else {
            (b as u32) & (0x7f >> len)
        };
        for &c in &s[i + 1..i + len] {
            if c & 0xc0 != 0x80 {
                return false;
            }
            cp = (cp << 6) | (c as u32 & 0x3f);
        }
        if cp < min || cp > 0x10ffff {
            return false;
        }
        i += len;
    }
    true
}

/// `float()` of the reprs old marshal versions wrote: decimal floats, `inf`, `nan`.
fn parse_python_float(t: &str) -> Option<f64> {
    match t.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" => Some(f64::INFINITY),
        "-inf" | "-infinity" => Some(f64::NEG_INFINITY),
        "nan" | "+nan" | "-nan" => Some(f64::NAN),
        _ => t.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marshal::Writer;

    fn one(data: &[u8]) -> Result<Value, Error> {
        read(data).map(|(v, _)| (*v).clone())
    }

    /// [`one`] in 3.15's dialect.
    fn one_315(data: &[u8]) -> Result<Value, Error> {
        read_with_cycles(data, Dialect::python(15)).map(|r| (*r.value).clone())
    }

    fn key(key: &'static str, found: &'static str) -> Error {
        Error::Unhashable {
            key,
            found,
            place: Place::DictKey,
        }
    }

    fn element(key: &'static str, found: &'static str) -> Error {
        Error::Unhashable {
            key,
            found,
            place: Place::SetElement,
        }
    }

    fn int(i: i64) -> Rc<Value> {
        Rc::new(Value::Int(i))
    }

    // Each outcome below is what 3.15.2's marshal.loads gives for the same bytes.
    #[test]
    fn a_text_float_is_read_to_its_first_nul_with_no_spaces() {
        assert_eq!(one(b"f\x041e5\x00"), Ok(Value::Float(1e5)));
        assert_eq!(one(b"f\x03a\x00b"), Err(Error::Float(b"a".to_vec())));
        assert_eq!(one(b"f\x04 1.0"), Err(Error::Float(b" 1.0".to_vec())));
        let long = [&b"f\xff"[..], &[b'x'; 255]].concat();
        assert_eq!(one(&long), Err(Error::Float(vec![b'x'; 200])));
        assert_eq!(one(b"f\x09-Infinity"), Ok(Value::Float(f64::NEG_INFINITY)));
    }

    #[test]
    fn a_slice_reads_in_the_314_dialect_and_later() {
        let data = b"\xa8\x02\x00\x00\x00\xbaNi\x01\x00\x00\x00Nr\x01\x00\x00\x00";
        let unknown = Err(Error::Value("bad marshal data (unknown type code)"));
        assert_eq!(
            read_with_cycles(data, Dialect::python(13)).map(|_| ()),
            unknown
        );
        let Ok(r) = read_with_cycles(data, Dialect::python(14)) else {
            panic!("not read")
        };
        let Value::Tuple(items) = &*r.value else {
            panic!("{:?}", r.value)
        };
        let none = Rc::new(Value::None);
        assert_eq!(*items[0], Value::Slice(none.clone(), int(1), none));
        assert!(Rc::ptr_eq(&items[0], &items[1]));
        // As 3.14.0 and 3.15.2 read them: a NULL part; a key whose stop is a list.
        assert_eq!(
            one_315(b":N0N"),
            Err(Error::Type("NULL object in marshal data for object"))
        );
        assert_eq!(
            one_315(b":N0"),
            Err(Error::Type("NULL object in marshal data for object"))
        );
        assert_eq!(
            one_315(b"(\x02\x00\x00\x00\xbaNN0N"),
            Err(Error::Type("NULL object in marshal data for tuple"))
        );
        assert_eq!(
            one_315(b"{i\x01\x00\x00\x00i\x02\x00\x00\x00:N0N"),
            Ok(Value::Dict(vec![(int(1), int(2))]))
        );
        assert_eq!(
            one_315(b"{:N[\x00\x00\x00\x00NN0"),
            Err(key("slice", "list"))
        );
        assert_eq!(
            one_315(b"\xbaNr\x00\x00\x00\x00N"),
            Err(Error::Value(INVALID_REFERENCE))
        );
    }

    #[test]
    fn a_missing_length_byte_is_worded_as_the_version_words_it() {
        for (minor, words) in [
            (10, "EOF read where object expected"),
            (11, "EOF read where not expected"),
        ] {
            for data in [b")", b"z", b"f"] {
                let r = read_with_cycles(data, Dialect::python(minor)).map(|_| ());
                assert_eq!(r, Err(Error::Eof(words)), "{data:?} on 3.{minor}");
            }
        }
    }

    #[test]
    fn a_frozendict_reads_in_the_315_dialect_only() {
        let empty = b"}0";
        assert_eq!(
            one(empty),
            Err(Error::Value("bad marshal data (unknown type code)"))
        );
        assert_eq!(one_315(empty), Ok(Value::FrozenDict(vec![])));
        // {1: 2}, flagged, and referenced once complete.
        let data = b"\xa8\x02\x00\x00\x00\xfdi\x01\x00\x00\x00i\x02\x00\x00\x000r\x01\x00\x00\x00";
        let Ok(Value::Tuple(items)) = one_315(data) else {
            panic!("{:?}", one_315(data))
        };
        assert_eq!(*items[0], Value::FrozenDict(vec![(int(1), int(2))]));
        assert!(Rc::ptr_eq(&items[0], &items[1]));
        // Referenced while being read (key or value): marshal registers it only when complete.
        for data in [
            &b"\xfdi\x01\x00\x00\x00r\x00\x00\x00\x000"[..],
            b"\xfdr\x00\x00\x00\x00i\x01\x00\x00\x000",
        ] {
            assert_eq!(one_315(data), Err(Error::Value(INVALID_REFERENCE)));
        }
        // Unhashable keys fail as a dict's do.
        assert_eq!(
            one_315(b"}[\x00\x00\x00\x00i\x01\x00\x00\x000"),
            Err(key("list", "list"))
        );
    }

    #[test]
    fn a_frozendict_hashes_by_its_last_values_in_first_key_order() {
        // As a key, {1: []} fails on the list; {1: 2} is a key like any other.
        assert_eq!(
            one_315(b"{}i\x01\x00\x00\x00[\x00\x00\x00\x000i\x05\x00\x00\x000"),
            Err(key("frozendict", "list"))
        );
        assert_eq!(
            one_315(b"<\x01\x00\x00\x00(\x01\x00\x00\x00}i\x01\x00\x00\x00<\x00\x00\x00\x000"),
            Err(element("tuple", "set"))
        );
        assert!(one_315(b"{}i\x01\x00\x00\x00i\x02\x00\x00\x000i\x05\x00\x00\x000").is_ok());
        // {1: [], 2: {}} fails on the list, {2: {}, 1: []} on the dict.
        assert_eq!(
            one_315(b"{}i\x01\x00\x00\x00[\x00\x00\x00\x00i\x02\x00\x00\x00{00N0"),
            Err(key("frozendict", "list"))
        );
        assert_eq!(
            one_315(b"{}i\x02\x00\x00\x00{0i\x01\x00\x00\x00[\x00\x00\x00\x000N0"),
            Err(key("frozendict", "dict"))
        );
        // A key given twice keeps its first place and its last value: {1: [], True: 3} is
        // {1: 3}, hashable; {1.0: 3, 2: {}, 1: []} is {1.0: [], 2: {}}, failing on the list.
        assert!(one_315(b"{}i\x01\x00\x00\x00[\x00\x00\x00\x00Ti\x03\x00\x00\x000N0").is_ok());
        assert_eq!(
            one_315(
                b"{}g\x00\x00\x00\x00\x00\x00\xf0?i\x03\x00\x00\x00i\x02\x00\x00\x00{0i\x01\x00\x00\x00[\x00\x00\x00\x000N0"
            ),
            Err(key("frozendict", "list"))
        );
    }

    #[test]
    fn reads_what_the_writer_writes() {
        let mut w = Writer::new();
        w.dict();
        w.tuple(3, true);
        w.str(b"file.py", true);
        w.int(12);
        w.str("n\u{e9}".as_bytes(), true);
        w.tuple(2, false);
        w.int(1 << 40);
        w.float(0.25);
        w.reference(0); // the key tuple again, as a value
        w.reference(1); // the file name
        w.end_dict();
        let (v, used) = read(&w.buf).unwrap();
        assert_eq!(used, w.buf.len());
        let key = Rc::new(Value::Tuple(vec![
            Rc::new(Value::Str(b"file.py".to_vec())),
            Rc::new(Value::Int(12)),
            Rc::new(Value::Str("n\u{e9}".as_bytes().to_vec())),
        ]));
        let expected = Value::Dict(vec![
            (
                key.clone(),
                Rc::new(Value::Tuple(vec![
                    Rc::new(Value::Int(1 << 40)),
                    Rc::new(Value::Float(0.25)),
                ])),
            ),
            (key, Rc::new(Value::Str(b"file.py".to_vec()))),
        ]);
        assert_eq!(*v, expected);
    }

    #[test]
    fn big_and_negative_longs() {
        let mut w = Writer::new();
        w.int(i64::MIN);
        assert_eq!(one(&w.buf), Ok(Value::Int(i64::MIN)));
        // 2**75: six digits, beyond i64.
        let data = [b'l', 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0];
        assert_eq!(
            one(&data),
            Ok(Value::BigInt {
                negative: false,
                digits: vec![0, 0, 0, 0, 0, 1]
            })
        );
        assert_eq!(
            one(&[b'l', 1, 0, 0, 0, 0, 0]),
            Err(Error::Value("bad marshal data (unnormalized long data)"))
        );
        assert_eq!(
            one(&[b'l', 1, 0, 0, 0, 0, 0x80]),
            Err(Error::Value(
                "bad marshal data (digit out of range in long)"
            ))
        );
    }

    #[test]
    fn every_string_form() {
        let ab = Ok(Value::Str(b"ab".to_vec()));
        assert_eq!(one(b"z\x02ab"), ab);
        assert_eq!(one(b"Z\x02ab"), ab);
        assert_eq!(one(b"\xda\x02ab"), ab, "interned, marked for reference");
        assert_eq!(one(b"a\x02\x00\x00\x00ab"), ab);
        assert_eq!(one(b"A\x02\x00\x00\x00ab"), ab);
        assert_eq!(one(b"t\x02\x00\x00\x00ab"), ab);
        let e_acute = Ok(Value::Str("\u{e9}".as_bytes().to_vec()));
        assert_eq!(one(b"u\x02\x00\x00\x00\xc3\xa9"), e_acute);
        assert_eq!(one(b"z\x01\xe9"), e_acute, "Latin-1 in the one-byte forms");
        // A lone surrogate, as marshal writes it with surrogatepass.
        assert_eq!(
            one(b"u\x03\x00\x00\x00\xed\xb3\xbf"),
            Ok(Value::Str(vec![0xed, 0xb3, 0xbf]))
        );
        assert_eq!(one(b"s\x01\x00\x00\x00\xff"), Ok(Value::Bytes(vec![0xff])));
    }

    #[test]
    fn bad_data_gets_marshals_errors() {
        assert_eq!(one(b""), Err(Error::Eof("EOF read where object expected")));
        assert_eq!(one(b"i\x01"), Err(Error::Eof("marshal data too short")));
        assert_eq!(
            one(b"\x01"),
            Err(Error::Value("bad marshal data (unknown type code)"))
        );
        assert_eq!(
            one(b"r\x00\x00\x00\x00"),
            Err(Error::Value("bad marshal data (invalid reference)"))
        );
        assert_eq!(
            one(b")\x010"),
            Err(Error::Type("NULL object in marshal data for tuple"))
        );
        assert_eq!(
            one(b"(\xff\xff\xff\xff"),
            Err(Error::Value("bad marshal data (tuple size out of range)"))
        );
        // A huge declared size with no data behind it: an error, not a huge allocation.
        assert_eq!(
            one(b"(\xff\xff\xff\x7f"),
            Err(Error::Eof("EOF read where object expected"))
        );
        assert_eq!(
            one(b"u\x01\x00\x00\x00\xff"),
            Err(Error::Unicode(vec![0xff]))
        );
        // A frozenset takes its slot only once complete, in marshal as here.
        assert_eq!(
            one(b"\xbe\x01\x00\x00\x00r\x00\x00\x00\x00"),
            Err(Error::Value(INVALID_REFERENCE))
        );
        let mut deep: Vec<u8> = (0..3000).flat_map(|_| [b'[', 1, 0, 0, 0]).collect();
        deep.push(b'N');
        assert_eq!(one(&deep), Err(Error::Value("recursion limit exceeded")));
    }

    #[test]
    fn unhashable_keys_fail_after_their_value_is_read() {
        assert_eq!(one(b"{[\x00\x00\x00\x00N0"), Err(key("list", "list")));
        assert_eq!(one(b"{)\x01{0N0"), Err(key("tuple", "dict")));
        // The value is read first: a truncated value is EOF, not TypeError.
        assert_eq!(
            one(b"{[\x00\x00\x00\x00"),
            Err(Error::Eof("EOF read where object expected"))
        );
        assert_eq!(
            one(b"<\x01\x00\x00\x00<\x00\x00\x00\x00"),
            Err(element("set", "set"))
        );
    }

    #[test]
    fn references_to_containers_being_read_are_cycles() {
        // l = []; l.append(l): marshal.dumps(l).
        let r =
            read_with_cycles(b"\xdb\x01\x00\x00\x00r\x00\x00\x00\x00", Dialect::default()).unwrap();
        assert_eq!(*r.value, Value::List(vec![Rc::new(Value::Cycle(0))]));
        assert_eq!(r.cycles.len(), 1);
        assert_eq!(r.cycles[0].0, 0);
        assert!(Rc::ptr_eq(&r.cycles[0].1, &r.value));
        // d = {}; d["a"] = d: the value is the dict.
        let r = read_with_cycles(b"\xfb\xda\x01ar\x00\x00\x00\x000", Dialect::default()).unwrap();
        assert_eq!(
            *r.value,
            Value::Dict(vec![(
                Rc::new(Value::Str(b"a".to_vec())),
                Rc::new(Value::Cycle(0))
            )])
        );
        // A tuple holding itself (hand-made: marshal.load builds it).
        assert_eq!(
            one(b"\xa9\x01r\x00\x00\x00\x00"),
            Ok(Value::Tuple(vec![Rc::new(Value::Cycle(0))]))
        );
        // The slot numbers are the containers', whatever comes between: [1, [ref 1]], the
        // outer list unflagged.
        let r = read_with_cycles(
            b"[\x02\x00\x00\x00\xe9\x01\x00\x00\x00\xdb\x01\x00\x00\x00r\x01\x00\x00\x00",
            Dialect::default(),
        )
        .unwrap();
        assert_eq!(r.cycles.iter().map(|c| c.0).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn hashing_a_container_being_read_fails_as_in_marshal() {
        // A dict keyed by itself, a set holding itself: "unhashable type".
        assert_eq!(one(b"\xfbr\x00\x00\x00\x00N0"), Err(key("dict", "dict")));
        assert_eq!(
            one(b"\xbc\x01\x00\x00\x00r\x00\x00\x00\x00"),
            Err(element("set", "set"))
        );
        // A set item holding a list still being read.
        assert_eq!(
            one(b"\xdb\x01\x00\x00\x00<\x01\x00\x00\x00)\x01r\x00\x00\x00\x00"),
            Err(element("tuple", "list"))
        );
        // A key holding a tuple still being read: its items so far are hashed first (a list
        // among them: unhashable), then the one being read, which marshal.load would hash as
        // NULL (a crash): refused.
        assert_eq!(
            one(b"\xa9\x02[\x00\x00\x00\x00{r\x00\x00\x00\x00N0"),
            Err(key("tuple", "list"))
        );
        assert_eq!(
            one(b"\xa9\x02N{r\x00\x00\x00\x00N0"),
            Err(Error::Value(SELF_CONTAINING_KEY))
        );
        // A finished tuple holding itself through a list is unhashable by that list...
        assert_eq!(
            one(b"[\x02\x00\x00\x00\xa9\x01[\x01\x00\x00\x00r\x00\x00\x00\x00{r\x00\x00\x00\x00N0"),
            Err(key("tuple", "list"))
        );
        // ...and one holding itself through tuples only recurses without end in marshal.load.
        assert_eq!(
            one(b"[\x02\x00\x00\x00\xa9\x01)\x01r\x00\x00\x00\x00{r\x00\x00\x00\x00N0"),
            Err(Error::Value(SELF_CONTAINING_KEY))
        );
    }

    #[test]
    fn flagged_singletons_take_no_reference_slot() {
        // 'N'|FLAG, then a flagged int: the int is reference 0, as in marshal.
        let data = b")\x03\xce\xe9\x07\x00\x00\x00r\x00\x00\x00\x00";
        assert_eq!(
            one(data),
            Ok(Value::Tuple(vec![
                Rc::new(Value::None),
                Rc::new(Value::Int(7)),
                Rc::new(Value::Int(7)),
            ]))
        );
    }

    #[test]
    fn a_dict_ends_at_null_and_keeps_duplicates_for_the_caller() {
        let data = b"{i\x01\x00\x00\x00Ni\x01\x00\x00\x00T0";
        assert_eq!(
            one(data),
            Ok(Value::Dict(vec![
                (Rc::new(Value::Int(1)), Rc::new(Value::None)),
                (Rc::new(Value::Int(1)), Rc::new(Value::Bool(true))),
            ]))
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A small deterministic generator; every prefix and mutation must end in Ok or Err.
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = b"0NFTS.iIlgfyxsutaAzZ)([<>{r\x80\xa9\xe9\xfb\xff\x00\x01\x02\x05";
        for _ in 0..20_000 {
            let len = (next() % 40) as usize;
            let data: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let _ = read(&data);
        }
    }
}
