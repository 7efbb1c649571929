//! `LocalsReader`: a frame's local variables, read from outside for `rprofile dump --locals`:
//! their names (the code object's) and their values, shown as what they are: ints, floats,
//! bools, None, strings and bytes (cut), the type and length of lists, tuples, dicts and sets,
//! the type and address of anything else.
//!
//! Where each version keeps a frame's locals and their names is `versions::LocalsLayout`
//! (3.13+: the fields `_Py_DebugOffsets` publishes read from the target); objects, types, ints
//! and strings are read as the thread-name reader reads them (`names::layout`). A type is known
//! by its `tp_name` only when it is a static type (a builtin), never a class of the program
//! that took a builtin's name. Every count and length read from the target is capped.

use std::io;

use super::error::Error;
use super::layout::{self, known_version, DebugWords};
use super::names;
use super::remote::{self, at};
use super::runtime::Runtime;
use super::versions::{self, LocalsLayout, LocalsPlace, NamesLayout, StackLayout};

/// Locals of one frame: beyond this the code object is torn or foreign.
pub const MAX_LOCALS: u64 = 1 << 12;
/// Characters of a local's name.
const MAX_NAME: u64 = 256;
/// Bytes of a type's name.
const MAX_TYPE_NAME: u64 = 256;
/// Characters of a string, bytes of a bytes object, shown; the rest is cut.
pub const CUT: u64 = 120;
/// Digits (30 bits each) of an int shown in full: about 3,000 decimal digits.
const MAX_INT_DIGITS: u64 = 330;

/// A local's value as the dump shows it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An `int` of at most 126 bits.
    Int(i128),
    /// A larger `int`, in decimal; `None` when it has more than `MAX_INT_DIGITS` digits.
    BigInt(Option<String>),
    Float(f64),
    Bool(bool),
    None,
    /// The first `CUT` characters, and the whole length.
    Str(String, u64),
    /// The first `CUT` bytes, and the whole length.
    Bytes(Vec<u8>, u64),
    /// A list, tuple, dict, set or frozenset: its type and length.
    Container(String, u64),
    /// Anything else: its type's name and its address.
    Other(String, u64),
    /// It could not be read (it changed or was freed under the read): why.
    Unreadable(String),
}

impl Value {
    /// The value's type, as `type(v).__name__` says (empty when it could not be read).
    pub fn type_name(&self) -> &str {
        match self {
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Bool(_) => "bool",
            Value::None => "NoneType",
            Value::Str(..) => "str",
            Value::Bytes(..) => "bytes",
            Value::Container(ty, _) | Value::Other(ty, _) => ty,
            Value::Unreadable(_) => "",
        }
    }
}

/// One local variable of a frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    pub name: String,
    pub value: Value,
}

/// A reader of one process's frames' locals.
pub struct LocalsReader {
    pid: i32,
    stack: StackLayout,
    objects: NamesLayout,
    o: LocalsLayout,
    /// The low bits of a local's slot that are a tag (3.14+'s `_PyStackRef`), as the frame's
    /// code pointer's.
    tag_bits: u64,
}

impl LocalsReader {
    /// A reader for the process of `rt`; fails when its version or layout cannot be read.
    pub fn new(rt: &Runtime) -> Result<LocalsReader, Error> {
        let (facts, stack) = layout::resolve(rt)?;
        let objects = names::layout(rt)?;
        let (major, minor) = known_version(rt)?;
        let Some((table, words)) = versions::locals_layout(major, minor) else {
            return Err(Error::Unsupported(format!(
                "reading the locals of Python {major}.{minor} is not supported (process {})",
                rt.pid
            )));
        };
        let o = match words {
            Some(w) => published(*table, &layout::published(rt, "locals")?, w)?,
            None => *table,
        };
        Ok(LocalsReader {
            pid: rt.pid,
            stack,
            objects,
            o,
            tag_bits: facts.executable_tag_bits,
        })
    }

    /// The locals of the frame at `frame`, which ran code object `code` (its code pointer as
    /// the stack reader read it) when its stack was read: in the code object's order, unset
    /// ones left out. An error when the frame runs other code now (it returned) or could not
    /// be read; a value that could not be read is `Value::Unreadable` in its place.
    pub fn frame_locals(&self, frame: u64, code: u64) -> Result<Vec<Local>, Error> {
        let now = self.ptr(frame, self.stack.frame_executable)?;
        if now != code {
            return Err(Error::Layout(
                "the frame returned before its locals were read".into(),
            ));
        }
        let code = code & !self.tag_bits;
        let slots = self.slots(frame, code)?;
        let mut locals = Vec::with_capacity(slots.len());
        for (name, object, cell) in slots {
            let object = object & !self.tag_bits;
            let object = if cell && object != 0 {
                self.cell_contents(object)?
            } else {
                object
            };
            if object == 0 {
                continue;
            }
            let name =
                remote::read_str(self.pid, name, &self.objects.unicode, &self.str(), MAX_NAME)?;
            let value = self
                .value(object)
                .unwrap_or_else(|e| Value::Unreadable(e.to_string()));
            locals.push(Local { name, value });
        }
        Ok(locals)
    }

    fn str(&self) -> versions::StrFacts {
        self.objects.str_facts
    }

    fn ptr(&self, addr: u64, offset: u64) -> io::Result<u64> {
        remote::read_u64(self.pid, at(addr, offset)?)
    }

    /// Each slot of the frame: its name's address, its contents, and whether it holds a cell.
    fn slots(&self, frame: u64, code: u64) -> Result<Vec<(u64, u64, bool)>, Error> {
        match self.o.place {
            LocalsPlace::Interpreter311 {
                localsplus,
                co_nlocalsplus,
                co_localsplusnames,
                co_localspluskinds,
            } => {
                let n = self.count(remote::read_i32(self.pid, at(code, co_nlocalsplus)?)?)?;
                let names = self.tuple_items(self.ptr(code, co_localsplusnames)?, n)?;
                let kinds = self.ptr(code, co_localspluskinds)?;
                let kinds_len = self.ptr(kinds, self.stack.bytes_size)?;
                if kinds_len != n {
                    return Err(torn(format!("{kinds_len} kinds of {n} locals")));
                }
                let kinds =
                    remote::read_bytes(self.pid, at(kinds, self.stack.bytes_sval)?, n, MAX_LOCALS)?;
                let values = self.words(at(frame, localsplus)?, n)?;
                let (cell, hidden) = (self.o.kind_cell, self.o.kind_hidden);
                Ok(names
                    .into_iter()
                    .zip(values)
                    .zip(kinds)
                    .filter(|&(_, kind)| kind & hidden == 0)
                    .map(|((name, value), kind)| (name, value, kind & cell != 0))
                    .collect())
            }
            LocalsPlace::FrameObject310 {
                f_localsplus,
                co_nlocals,
                co_varnames,
                co_cellvars,
                co_freevars,
            } => {
                let n = self.count(remote::read_i32(self.pid, at(code, co_nlocals)?)?)?;
                let mut names: Vec<(u64, bool)> = self
                    .tuple_items(self.ptr(code, co_varnames)?, n)?
                    .into_iter()
                    .map(|name| (name, false))
                    .collect();
                for field in [co_cellvars, co_freevars] {
                    let tuple = self.ptr(code, field)?;
                    let len = self.ptr(tuple, self.o.tuple_size)?;
                    let items = self.tuple_items(tuple, len)?;
                    names.extend(items.into_iter().map(|name| (name, true)));
                }
                let values = self.words(at(frame, f_localsplus)?, names.len() as u64)?;
                Ok(names
                    .into_iter()
                    .zip(values)
                    .map(|((name, cell), value)| (name, value, cell))
                    .collect())
            }
        }
    }

    /// A count of locals read from a code object, checked.
    fn count(&self, n: i32) -> Result<u64, Error> {
        match u64::try_from(n) {
            Ok(n) if n <= MAX_LOCALS => Ok(n),
            _ => Err(torn(format!("a code object of {n} locals"))),
        }
    }

    /// `n` words at `addr`.
    fn words(&self, addr: u64, n: u64) -> Result<Vec<u64>, Error> {
        Ok(remote::read_words(self.pid, addr, n, MAX_LOCALS)?)
    }

    /// The items of the tuple at `tuple`, which must have `n` of them.
    fn tuple_items(&self, tuple: u64, n: u64) -> Result<Vec<u64>, Error> {
        let len = self.ptr(tuple, self.o.tuple_size)?;
        if len != n || n > MAX_LOCALS {
            return Err(torn(format!("a tuple of {len} names for {n} locals")));
        }
        self.words(at(tuple, self.o.tuple_items)?, n)
    }

    /// What the cell at `cell` holds (0: nothing), when it is a cell.
    fn cell_contents(&self, cell: u64) -> Result<u64, Error> {
        if self.type_of(cell)? != ("cell".to_string(), true) {
            // An argument not yet moved into its cell (the frame has not started).
            return Ok(cell);
        }
        Ok(self.ptr(cell, self.o.cell_ref)?)
    }

    /// The name of the type of the object at `addr`, and whether the type is static (a
    /// builtin, not a class of the program).
    fn type_of(&self, addr: u64) -> Result<(String, bool), Error> {
        let ty = self.ptr(addr, self.objects.ob_type)?;
        let flags = self.ptr(ty, self.objects.tp_flags)?;
        let name = remote::read_c_string(self.pid, self.ptr(ty, self.o.tp_name)?, MAX_TYPE_NAME)?;
        Ok((name, flags & self.o.heap_type_flag == 0))
    }

    /// The value of the object at `addr`.
    fn value(&self, addr: u64) -> Result<Value, Error> {
        let (name, builtin) = self.type_of(addr)?;
        let size = |offset: u64| self.ptr(addr, offset);
        Ok(match builtin.then_some(name.as_str()) {
            Some("NoneType") => Value::None,
            Some("bool") => Value::Bool(!self.int(addr)?.is_zero()),
            Some("int") => self.int(addr)?,
            Some("float") => {
                let bits = self.ptr(addr, self.o.float_value)?;
                Value::Float(f64::from_bits(bits))
            }
            Some("str") => {
                let u = &self.objects.unicode;
                let (text, len) = remote::read_str_start(self.pid, addr, u, &self.str(), CUT)?;
                Value::Str(text, len)
            }
            Some("bytes") => {
                let len = size(self.stack.bytes_size)?;
                let data = at(addr, self.stack.bytes_sval)?;
                Value::Bytes(remote::read_bytes(self.pid, data, len.min(CUT), CUT)?, len)
            }
            Some(ty @ ("list" | "tuple")) => {
                let len = size(if ty == "list" {
                    self.o.list_size
                } else {
                    self.o.tuple_size
                })?;
                Value::Container(ty.into(), len)
            }
            Some("dict") => Value::Container("dict".into(), size(self.o.dict_used)?),
            Some(ty @ ("set" | "frozenset")) => Value::Container(ty.into(), size(self.o.set_used)?),
            _ => Value::Other(name, addr),
        })
    }

    /// The `int` at `addr`.
    fn int(&self, addr: u64) -> Result<Value, Error> {
        let l = &self.objects.long;
        let Some((negative, digits)) = remote::read_int(self.pid, addr, l, MAX_INT_DIGITS)? else {
            return Ok(Value::BigInt(None));
        };
        Ok(int_value(negative, &digits, l.digit_bits))
    }
}

impl Value {
    fn is_zero(&self) -> bool {
        matches!(self, Value::Int(0))
    }
}

/// An int from its sign and digits (least significant first, `bits` each).
pub fn int_value(negative: bool, digits: &[u32], bits: u32) -> Value {
    if digits.len() as u32 * bits <= 126 {
        let mut v: i128 = 0;
        for &d in digits.iter().rev() {
            v = (v << bits) | i128::from(d);
        }
        return Value::Int(if negative { -v } else { v });
    }
    // Base 10^9 limbs, most significant first, from the base 2^bits digits.
    let mut limbs: Vec<u32> = Vec::new();
    for &d in digits.iter().rev() {
        let mut carry = u64::from(d);
        for limb in limbs.iter_mut().rev() {
            let x = (u64::from(*limb) << bits) | carry;
            *limb = (x % 1_000_000_000) as u32;
            carry = x / 1_000_000_000;
        }
        while carry > 0 {
            limbs.insert(0, (carry % 1_000_000_000) as u32);
            carry /= 1_000_000_000;
        }
    }
    let mut text = String::from(if negative { "-" } else { "" });
    for (i, limb) in limbs.iter().enumerate() {
        if i == 0 {
            text.push_str(&limb.to_string());
        } else {
            text.push_str(&format!("{limb:09}"));
        }
    }
    if limbs.is_empty() {
        text.push('0');
    }
    Value::BigInt(Some(text))
}

fn torn(why: String) -> Error {
    Error::Layout(why)
}

/// The table's layout with the fields 3.13+ publish read from the target's `_Py_DebugOffsets`.
fn published(
    table: LocalsLayout,
    words: &DebugWords,
    w: &versions::LocalsWords,
) -> Result<LocalsLayout, Error> {
    let get = |i: usize| words.get(i);
    let LocalsPlace::Interpreter311 { co_nlocalsplus, .. } = table.place else {
        return Err(Error::Layout(
            "a 3.10 locals layout with debug offsets".into(),
        ));
    };
    Ok(LocalsLayout {
        place: LocalsPlace::Interpreter311 {
            localsplus: get(w.frame_localsplus)?,
            co_nlocalsplus,
            co_localsplusnames: get(w.code_localsplusnames)?,
            co_localspluskinds: get(w.code_localspluskinds)?,
        },
        tp_name: get(w.type_tp_name)?,
        tuple_items: get(w.tuple_ob_item)?,
        tuple_size: get(w.tuple_ob_size)?,
        list_size: get(w.list_ob_size)?,
        float_value: get(w.float_ob_fval)?,
        set_used: w.set_used.map_or(Ok(table.set_used), get)?,
        ..table
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::own_pid;
    use crate::sampler::versions::{LAYOUT_312, LOCALS_312, NAMES_312};

    fn addr(v: &[u8]) -> u64 {
        v.as_ptr() as u64
    }

    /// `size` zero bytes with `words` put at their offsets.
    fn obj(size: usize, words: &[(u64, u64)]) -> Vec<u8> {
        let mut v = vec![0u8; size];
        for &(at, w) in words {
            let at = at as usize;
            v[at..at + 8].copy_from_slice(&w.to_ne_bytes());
        }
        v
    }

    /// A compact ASCII `str` as 3.12 lays it out.
    fn ascii(text: &str) -> Vec<u8> {
        let state = (1u64 << 2) | (1 << 5) | (1 << 6);
        let mut v = obj(40, &[(16, text.len() as u64), (32, state)]);
        v.extend_from_slice(text.as_bytes());
        v.push(0);
        v
    }

    /// A type object named `name` (the C string `cname`, kept alive by the caller).
    fn ty(cname: &[u8], heap: bool) -> Vec<u8> {
        let flags = if heap { LOCALS_312.heap_type_flag } else { 0 };
        obj(256, &[(24, addr(cname)), (NAMES_312.tp_flags, flags)])
    }

    fn reader() -> LocalsReader {
        LocalsReader {
            pid: own_pid(),
            stack: LAYOUT_312,
            objects: NAMES_312,
            o: LOCALS_312,
            tag_bits: 0,
        }
    }

    #[test]
    fn a_3_12_frame_shows_its_locals_by_kind_and_leaves_out_unset_and_hidden_ones() {
        let (int_name, float_name, cell_name, point_name, str_name) =
            (b"int\0", b"float\0", b"cell\0", b"Point\0", b"str\0");
        let int_t = ty(int_name, false);
        let float_t = ty(float_name, false);
        let cell_t = ty(cell_name, false);
        let point_t = ty(point_name, true);
        let str_t = ty(str_name, false);
        // -(5 + 2^30): two digits, negative (lv_tag: 2 << 3 | 2).
        let mut int = obj(24, &[(8, addr(&int_t)), (16, (2 << 3) | 2)]);
        int.extend_from_slice(&[5u8, 0, 0, 0, 1, 0, 0, 0]);
        let float = obj(24, &[(8, addr(&float_t)), (16, 2.5f64.to_bits())]);
        let cell = obj(24, &[(8, addr(&cell_t)), (16, addr(&float))]);
        let point = obj(16, &[(8, addr(&point_t))]);
        let mut text = ascii("hello");
        text[8..16].copy_from_slice(&addr(&str_t).to_ne_bytes());
        let names: Vec<Vec<u8>> = ["i", "hidden", "c", "p", "unset", "s"]
            .iter()
            .map(|n| ascii(n))
            .collect();
        let mut tuple = obj(24, &[(16, names.len() as u64)]);
        for n in &names {
            tuple.extend_from_slice(&addr(n).to_ne_bytes());
        }
        let kinds_list = [0x20u8, 0x30, 0x40, 0x20, 0x20, 0x20];
        let mut kinds = obj(32, &[(16, kinds_list.len() as u64)]);
        kinds.extend_from_slice(&kinds_list);
        let code = {
            let mut c = obj(256, &[(96, addr(&tuple)), (104, addr(&kinds))]);
            c[72..76].copy_from_slice(&6i32.to_ne_bytes());
            c
        };
        let slots = [
            addr(&int),
            addr(&int),
            addr(&cell),
            addr(&point),
            0,
            addr(&text),
        ];
        let frame = obj(
            72 + 48,
            &[(0, addr(&code))]
                .iter()
                .copied()
                .chain(
                    slots
                        .iter()
                        .enumerate()
                        .map(|(i, &s)| (72 + 8 * i as u64, s)),
                )
                .collect::<Vec<_>>(),
        );
        let got = reader().frame_locals(addr(&frame), addr(&code));
        let got: Vec<(String, Value)> = match got {
            Ok(locals) => locals.into_iter().map(|l| (l.name, l.value)).collect(),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(
            got,
            vec![
                ("i".into(), Value::Int(-(5 + (1 << 30)))),
                ("c".into(), Value::Float(2.5)),
                ("p".into(), Value::Other("Point".into(), addr(&point))),
                ("s".into(), Value::Str("hello".into(), 5)),
            ]
        );
        // A frame that runs other code now returned before its locals were read.
        assert!(reader()
            .frame_locals(addr(&frame), addr(&code) + 8)
            .is_err());
        // A program's class named as a builtin is not taken for it.
        let fake_int_t = ty(int_name, true);
        let fake = obj(24, &[(8, addr(&fake_int_t))]);
        assert_eq!(
            reader().value(addr(&fake)).ok(),
            Some(Value::Other("int".into(), addr(&fake)))
        );
    }

    #[test]
    fn a_count_of_locals_beyond_the_cap_is_torn() {
        let tuple = obj(24, &[(16, 1 << 20)]);
        let mut code = obj(256, &[(96, addr(&tuple))]);
        code[72..76].copy_from_slice(&(1i32 << 20).to_ne_bytes());
        let frame = obj(80, &[(0, addr(&code))]);
        assert!(matches!(
            reader().frame_locals(addr(&frame), addr(&code)),
            Err(Error::Layout(_))
        ));
    }

    #[test]
    fn ints_small_negative_and_big() {
        assert_eq!(int_value(false, &[], 30), Value::Int(0));
        assert_eq!(int_value(true, &[7], 30), Value::Int(-7));
        // -(2^100): four digits, the last 2^(100 - 90).
        assert_eq!(
            int_value(true, &[0, 0, 0, 1 << 10], 30),
            Value::Int(-(1 << 100))
        );
        // 2^200: seven digits, the last 2^(200 - 180).
        let digits = [0, 0, 0, 0, 0, 0, 1 << 20];
        assert_eq!(
            int_value(false, &digits, 30),
            Value::BigInt(Some(
                "1606938044258990275541962092341162602522202993782792835301376".into()
            ))
        );
        // A limb that needs its leading zeros: 10^9 = 2^30 * 0 + 10^9, and 10^18 + 5.
        let e18 = 1_000_000_000_000_000_005u64;
        let (lo, hi) = ((e18 & ((1 << 30) - 1)) as u32, (e18 >> 30) as u32);
        let mut big = vec![lo, hi & ((1 << 30) - 1), hi >> 30];
        big.extend([0, 0]); // five digits: past 126 bits, by the long path
        assert_eq!(
            int_value(false, &big, 30),
            Value::BigInt(Some("1000000000000000005".into()))
        );
    }
}
