//! `thread_names(rt)`: each thread's name as `threading` gives it (`MainThread`, `worker`,
//! `Thread-3 (f)`), read from outside, keyed by the thread's ident (`threading.get_ident()`,
//! `stacks::ThreadStack::thread_id`).
//!
//! The walk: the main interpreter (the last in the runtime's list: each new one goes first) ->
//! its `sys.modules` -> the `threading` module's dict -> `_active` (ident -> Thread) -> each
//! Thread's `_name` attribute. Dicts, ints and instance attributes are laid out differently in
//! each version; every offset is in `versions::NamesLayout` (on 3.13 those `_Py_DebugOffsets`
//! publishes come from the target). Every dict the walk passes through must have the type of
//! `sys.modules` (a dict), which checks the layout. Every count read from the target is
//! capped. A target that has not imported `threading` has no names: an empty map.
//!
//! The target runs on while it is read: a dict that changes under a read (a thread starts or
//! ends) may have had its table freed and reused, which reads as too few entries or none. Its
//! version tag, which every change moves (3.14+: its keys pointer, which a resize moves), is
//! read before and after, and the dict read again until the two agree.

use std::collections::HashMap;
use std::io;

use super::layout::{self, known_version};
use super::remote::{self, at};
use super::runtime::Runtime;
use super::stacks::{Error, MAX_INTERPRETERS};
use super::versions::{self, InstanceAttrs, KeysSize};
use super::versions::{NamesLayout, UnicodeLayout};

/// Entries of one dict (used or deleted): beyond this it is taken as torn. 1.5 MiB of entries.
pub const MAX_ENTRIES: u64 = 1 << 16;
/// `log2` of a dict's table size: beyond it the keys object is torn or foreign.
const MAX_LOG2_SIZE: u8 = 32;
/// Bytes of a dict keys object's header (before its indices): beyond it, a foreign layout.
const MAX_KEYS_HEAD: u64 = 256;
/// Characters of a thread name: a longer name is left out.
pub const MAX_NAME: u64 = 1024;
/// Digits of an ident: a `pthread_t` has 64 bits, three 30-bit digits.
const MAX_IDENT_DIGITS: u64 = 3;
/// Reads of one dict that saw it change, after which the names are not read this time.
const TRIES: u32 = 8;

/// The thread names of the process of `rt`: ident -> name, for every thread in the main
/// interpreter's `threading._active`. Threads whose name is not a plain `str`, or that ended
/// (and were freed) while they were read, are left out.
pub fn thread_names(rt: &Runtime) -> Result<HashMap<u64, String>, Error> {
    let reader = Reader {
        pid: rt.pid,
        o: layout(rt)?,
    };
    let mut names = HashMap::new();
    let interp = reader.main_interpreter(rt.address)?;
    let modules = reader.ptr(interp, reader.o.interp_modules)?;
    if modules == 0 {
        // Before the interpreter is set up or after it is torn down.
        return Ok(names);
    }
    let dict_type = reader.ptr(modules, reader.o.ob_type)?;
    let Some(threading) =
        reader.lookup(&reader.steady_items(modules, "sys.modules")?, "threading")?
    else {
        return Ok(names);
    };
    let module_dict = reader.module_dict(threading)?;
    reader.check_dict(module_dict, dict_type, "threading.__dict__")?;
    let items = reader.steady_items(module_dict, "threading.__dict__")?;
    let Some(active) = reader.lookup(&items, "_active")? else {
        return Ok(names);
    };
    reader.check_dict(active, dict_type, "threading._active")?;
    for (key, thread) in reader.steady_items(active, "threading._active")? {
        match reader.ident_and_name(key, thread) {
            Ok(Some((ident, name))) => {
                names.insert(ident, name);
            }
            Ok(None) => {}
            Err(e) if freed_or_odd(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(names)
}

/// An error that concerns one thread only: it ended and its objects were freed under us (a bad
/// address, or garbage that does not hang together), or its name is not a compact `str`.
fn freed_or_odd(e: &Error) -> bool {
    match e {
        Error::Io(e) => matches!(e.raw_os_error(), Some(libc::EFAULT | libc::EINVAL)),
        Error::Layout(_) => true,
        Error::Unsupported(_) | Error::NotReady(_) => false,
    }
}

/// The layout of `rt`'s version: its table row, with what 3.13+ publishes read from the target.
pub fn layout(rt: &Runtime) -> Result<NamesLayout, Error> {
    let (major, minor) = known_version(rt)?;
    let table = versions::names_layout(major, minor).ok_or_else(|| {
        Error::Unsupported(format!(
            "reading the thread names of Python {major}.{minor} is not supported \
             (process {}; supported: {})",
            rt.pid,
            versions::supported_range()
        ))
    })?;
    if !versions::has_debug_offsets(major, minor) {
        return Ok(*table);
    }
    if rt.version_hex.is_none() {
        return Err(Error::Layout(format!(
            "process {}: Python {major}.{minor} without _Py_DebugOffsets",
            rt.pid
        )));
    }
    // A free-threaded build's objects carry more header and its dicts a lock: refused there.
    let w = layout::words_of(rt)?;
    let words = layout::published(rt, "thread names")?;
    let get = |i: usize| words.get(i);
    let or_table = |i: Option<usize>, table: u64| i.map_or(Ok(table), get);
    Ok(NamesLayout {
        interpreters_head: get(w.runtime_interpreters_head)?,
        interp_next: get(w.interp_next)?,
        interp_modules: get(w.interp_imports_modules)?,
        ob_type: get(w.pyobject_ob_type)?,
        tp_flags: get(w.type_tp_flags)?,
        tp_dictoffset: or_table(w.type_tp_dictoffset, table.tp_dictoffset)?,
        ht_cached_keys: or_table(w.heap_type_ht_cached_keys, table.ht_cached_keys)?,
        dict: versions::DictLayout {
            ma_keys: get(w.dict_ma_keys)?,
            ma_values: get(w.dict_ma_values)?,
            ..table.dict
        },
        long: versions::LongLayout {
            size: get(w.long_lv_tag)?,
            digits: get(w.long_ob_digit)?,
            ..table.long
        },
        unicode: UnicodeLayout {
            state: get(w.unicode_state)?,
            length: get(w.unicode_length)?,
            ascii_size: get(w.unicode_asciiobject_size)?,
        },
        ..*table
    })
}

/// `base + offset` for an offset that may be negative (the words before an object).
fn offset(base: u64, offset: i64) -> io::Result<u64> {
    base.checked_add_signed(offset)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::EFAULT))
}

/// The `u64` at `bytes[at..at + 8]`, if it is there.
fn word(bytes: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    let b = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_ne_bytes(b.try_into().ok()?))
}

/// The reader of one process, for one call.
struct Reader {
    pid: i32,
    o: NamesLayout,
}

impl Reader {
    fn ptr(&self, addr: u64, offset: u64) -> io::Result<u64> {
        remote::read_u64(self.pid, at(addr, offset)?)
    }

    /// The main interpreter: the last one in the list, the first made.
    fn main_interpreter(&self, runtime: u64) -> Result<u64, Error> {
        let mut interp = self.ptr(runtime, self.o.interpreters_head)?;
        for _ in 0..MAX_INTERPRETERS {
            let next = self.ptr(interp, self.o.interp_next)?;
            if next == 0 {
                return Ok(interp);
            }
            interp = next;
        }
        Err(Error::Layout(format!(
            "more than {MAX_INTERPRETERS} interpreters: a torn or cyclic list"
        )))
    }

    /// An error unless the object at `addr` has the type `dict_type` (that of `sys.modules`).
    fn check_dict(&self, addr: u64, dict_type: u64, what: &str) -> Result<(), Error> {
        let ty = self.ptr(addr, self.o.ob_type)?;
        if ty != dict_type {
            return Err(Error::Layout(format!(
                "{what} at {addr:#x} has type {ty:#x}, not dict ({dict_type:#x})"
            )));
        }
        Ok(())
    }

    /// A module's `md_dict`. Its type's `tp_dictoffset` must say where it is, as the table does.
    fn module_dict(&self, module: u64) -> Result<u64, Error> {
        let ty = self.ptr(module, self.o.ob_type)?;
        let dictoffset = self.ptr(ty, self.o.tp_dictoffset)?;
        if dictoffset != self.o.md_dict {
            return Err(Error::Layout(format!(
                "sys.modules['threading'] at {module:#x}: its type's tp_dictoffset is \
                 {dictoffset}, not a module's {}",
                self.o.md_dict
            )));
        }
        Ok(self.ptr(module, self.o.md_dict)?)
    }

    /// `dict_items` of a dict that did not change while it was read (its version tag the same
    /// before and after), read again while it did; an error when it changed every time.
    /// 3.14+ have no version tag: there the keys pointer stands in, which the change that frees
    /// the table read (a resize) moves.
    fn steady_items(&self, dict: u64, what: &str) -> Result<Vec<(u64, u64)>, Error> {
        let d = &self.o.dict;
        let tag = d.ma_version_tag.unwrap_or(d.ma_keys);
        steady(what, || self.ptr(dict, tag), || self.dict_items(dict))
    }

    /// The `(key, value)` pointers of the dict at `dict`, in insertion order.
    fn dict_items(&self, dict: u64) -> Result<Vec<(u64, u64)>, Error> {
        let keys = self.ptr(dict, self.o.dict.ma_keys)?;
        let values = self.ptr(dict, self.o.dict.ma_values)?;
        self.entries(keys, (values != 0).then_some(values))
    }

    /// The `(key, value)` pointers of the keys object at `keys`, the values from its entries or,
    /// for a split table, from the array at `values` (a `PyDictValues`), in the entries' order.
    /// Deleted entries and unset values are left out.
    fn entries(&self, keys: u64, values: Option<u64>) -> Result<Vec<(u64, u64)>, Error> {
        let d = &self.o.dict;
        let torn = |what: String| Error::Layout(format!("dict keys at {keys:#x}: {what}"));
        // The header, up to the indices, in one read.
        let head = remote::read_bytes(self.pid, keys, d.dk_indices, MAX_KEYS_HEAD)?;
        let byte = |at: u64| {
            let at = usize::try_from(at).ok()?;
            head.get(at).copied()
        };
        let short = || torn(format!("a header shorter than {} bytes", d.dk_indices));
        let (size, index_bytes) = match d.size {
            KeysSize::Count(offset) => {
                let size = word(&head, offset).ok_or_else(short)?;
                if !size.is_power_of_two() || size > 1 << MAX_LOG2_SIZE {
                    return Err(torn(format!("a table of {size} slots")));
                }
                let width = match size {
                    0..=0xff => 1,
                    0x100..=0xffff => 2,
                    0x1_0000..=0xffff_ffff => 4,
                    _ => 8,
                };
                (size, size * width)
            }
            KeysSize::Log2 { size, index_bytes } => {
                let log2 = byte(size).ok_or_else(short)?;
                let log2_bytes = byte(index_bytes).ok_or_else(short)?;
                // An index is 1 to 8 bytes.
                if log2 > MAX_LOG2_SIZE || log2_bytes < log2 || log2_bytes > log2 + 3 {
                    return Err(torn(format!(
                        "log2 size {log2}, log2 index bytes {log2_bytes}"
                    )));
                }
                (1u64 << log2, 1u64 << log2_bytes)
            }
        };
        let nentries = word(&head, d.dk_nentries).ok_or_else(short)?;
        if nentries > size || nentries > MAX_ENTRIES {
            return Err(torn(format!("{nentries} entries in {size} slots")));
        }
        let kind = match d.dk_kind {
            Some(offset) => byte(offset).ok_or_else(short)?,
            None => d.kind_general,
        };
        let entry = if kind == d.kind_general {
            d.general
        } else {
            d.unicode
        };
        let start = at(at(keys, d.dk_indices)?, index_bytes)?;
        let raw = remote::read_bytes(
            self.pid,
            start,
            nentries * entry.size,
            MAX_ENTRIES * d.general.size,
        )?;
        let split = match values {
            Some(values) => Some(self.values(values, nentries)?),
            None => None,
        };
        let mut items = Vec::new();
        for i in 0..nentries {
            let base = i * entry.size;
            let key = word(&raw, base + entry.key).unwrap_or(0);
            let value = match &split {
                Some(values) => word(values, i * 8).unwrap_or(0),
                None => word(&raw, base + entry.value).unwrap_or(0),
            };
            if key != 0 && value != 0 {
                items.push((key, value));
            }
        }
        Ok(items)
    }

    /// The bytes of the first `n` value pointers of the `PyDictValues` at `values` (fewer when
    /// it has room for fewer: the rest are unset).
    fn values(&self, values: u64, n: u64) -> Result<Vec<u8>, Error> {
        let d = &self.o.dict;
        let n = match d.values_capacity {
            Some(capacity) => n.min(u64::from(remote::read_u8(self.pid, at(values, capacity)?)?)),
            None => n,
        };
        let array = at(values, d.values_array)?;
        Ok(remote::read_bytes(self.pid, array, n * 8, MAX_ENTRIES * 8)?)
    }

    /// The value whose key is the `str` `name`, among `items`.
    fn lookup(&self, items: &[(u64, u64)], name: &str) -> io::Result<Option<u64>> {
        for &(key, value) in items {
            if remote::str_is(self.pid, key, &self.o.unicode, &self.o.str_facts, name)? {
                return Ok(Some(value));
            }
        }
        Ok(None)
    }

    /// The value of the `int` at `addr`, if it is one of 0..2^64 (a thread ident).
    fn ident(&self, addr: u64) -> io::Result<Option<u64>> {
        let l = &self.o.long;
        let Some((false, digits)) = remote::read_int(self.pid, addr, l, MAX_IDENT_DIGITS)? else {
            return Ok(None);
        };
        // Least significant digit first; three 30-bit digits fit in a u128.
        let mut value: u128 = 0;
        for &digit in digits.iter().rev() {
            value = (value << l.digit_bits) | u128::from(digit);
        }
        Ok(u64::try_from(value).ok())
    }

    /// The `(key, value)` pointers of the instance attributes of the object at `obj`, wherever
    /// its version and its type keep them; `None` when it has none.
    fn attributes(&self, obj: u64) -> Result<Option<Vec<(u64, u64)>>, Error> {
        let ty = self.ptr(obj, self.o.ob_type)?;
        let flags = self.ptr(ty, self.o.tp_flags)?;
        let dict = match self.o.attrs {
            InstanceAttrs::ValuesOrDict {
                managed_flag,
                values,
                dict,
            } if flags & managed_flag != 0 => {
                let values = remote::read_u64(self.pid, offset(obj, values)?)?;
                if values != 0 {
                    return self.shared(ty, values);
                }
                remote::read_u64(self.pid, offset(obj, dict)?)?
            }
            InstanceAttrs::TaggedValues { managed_flag, slot } if flags & managed_flag != 0 => {
                let word = remote::read_u64(self.pid, offset(obj, slot)?)?;
                if word & 1 == 1 {
                    return self.shared(ty, word.wrapping_add(1));
                }
                word
            }
            InstanceAttrs::InlineValues {
                managed_flag,
                inline_flag,
                values,
                valid,
                dict,
            } if flags & managed_flag != 0 => {
                let values = at(obj, values)?;
                if flags & inline_flag != 0 && remote::read_u8(self.pid, at(values, valid)?)? != 0 {
                    return self.shared(ty, values);
                }
                remote::read_u64(self.pid, offset(obj, dict)?)?
            }
            // 3.10, or a type whose instances keep their dict at `tp_dictoffset`.
            _ => match self.ptr(ty, self.o.tp_dictoffset)? as i64 {
                dictoffset if dictoffset > 0 => self.ptr(obj, dictoffset as u64)?,
                // No dict, or one at the end of a variable-size object: not a Thread's.
                _ => 0,
            },
        };
        if dict == 0 {
            return Ok(None);
        }
        self.dict_items(dict).map(Some)
    }

    /// The attributes held as values beside the shared keys of the type at `ty`.
    fn shared(&self, ty: u64, values: u64) -> Result<Option<Vec<(u64, u64)>>, Error> {
        let keys = self.ptr(ty, self.o.ht_cached_keys)?;
        if keys == 0 {
            return Ok(None);
        }
        self.entries(keys, Some(values)).map(Some)
    }

    /// `(ident, name)` of the `_active` entry `key` (an `int`) -> `thread` (a Thread).
    fn ident_and_name(&self, key: u64, thread: u64) -> Result<Option<(u64, String)>, Error> {
        let Some(ident) = self.ident(key)? else {
            return Ok(None);
        };
        let Some(attributes) = self.attributes(thread)? else {
            return Ok(None);
        };
        let Some(name) = self.lookup(&attributes, "_name")? else {
            return Ok(None);
        };
        let name = remote::read_str(self.pid, name, &self.o.unicode, &self.o.str_facts, MAX_NAME)?;
        Ok(Some((ident, name)))
    }
}

/// `read()` taken between two equal `tag()`s, tried `TRIES` times; an error when the tag moved
/// every time (`what` names the thing read).
fn steady<T>(
    what: &str,
    mut tag: impl FnMut() -> io::Result<u64>,
    mut read: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    for _ in 0..TRIES {
        let before = tag()?;
        let items = read();
        if tag()? == before {
            return items;
        }
    }
    Err(Error::Layout(format!(
        "{what} changed while it was read, {TRIES} times in a row"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sampler::versions::{NAMES_310, NAMES_312, NAMES_313};
    use std::path::PathBuf;

    fn reader(o: NamesLayout) -> Reader {
        let pid = crate::sampler::own_pid();
        Reader { pid, o }
    }

    fn addr(v: &[u8]) -> u64 {
        v.as_ptr() as u64
    }

    fn words(ws: &[u64]) -> Vec<u8> {
        ws.iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    /// A 3.11+ keys object of 8 slots (1-byte indices) of `kind` holding `entries`.
    fn keys_312(kind: u8, nentries: u64, entries: &[(u64, u64)]) -> Vec<u8> {
        let mut k = words(&[1, 0, 0, nentries]);
        k[8] = 3; // dk_log2_size
        k[9] = 3; // dk_log2_index_bytes
        k[10] = kind;
        k.extend_from_slice(&[0xff; 8]); // the indices, which the reader skips
        for &(key, value) in entries {
            if kind == 0 {
                k.extend_from_slice(&7u64.to_ne_bytes()); // me_hash
            }
            k.extend_from_slice(&words(&[key, value]));
        }
        k
    }

    #[test]
    fn entries_of_both_kinds_without_the_deleted_ones() {
        let r = reader(NAMES_312);
        let entries = [(10, 11), (0, 0), (12, 13)];
        for kind in [0, 1] {
            let k = keys_312(kind, 3, &entries);
            let items = r.entries(addr(&k), None).ok();
            assert_eq!(items, Some(vec![(10, 11), (12, 13)]), "kind {kind}");
        }
    }

    #[test]
    fn a_split_table_takes_its_values_apart_and_313_keeps_to_their_capacity() {
        let k = keys_312(2, 3, &[(10, 0), (12, 0), (14, 0)]);
        let values = words(&[21, 0, 23]);
        let items = reader(NAMES_312)
            .entries(addr(&k), Some(addr(&values)))
            .ok();
        assert_eq!(items, Some(vec![(10, 21), (14, 23)]));
        // 3.13: a header (capacity 2) before the values: the third entry has no room there.
        let values = words(&[2, 21, 22, 23]);
        let items = reader(NAMES_313)
            .entries(addr(&k), Some(addr(&values)))
            .ok();
        assert_eq!(items, Some(vec![(10, 21), (12, 22)]));
    }

    #[test]
    fn a_dict_that_changes_under_every_read_is_given_up_and_a_steady_one_is_read() {
        let k = keys_312(0, 1, &[(10, 11)]);
        // ob_refcnt, ob_type, ma_used, ma_version_tag, ma_keys, ma_values.
        let dict = words(&[1, 0, 1, 5, addr(&k), 0]);
        let at = dict.as_ptr() as u64;
        let r = reader(NAMES_312);
        assert_eq!(r.steady_items(at, "d").ok(), Some(vec![(10, 11)]));
        // A tag that moves between every two reads (a target whose threads come and go).
        let moving = std::cell::Cell::new(0u64);
        let reads = std::cell::Cell::new(0u32);
        let tag = || {
            moving.set(moving.get() + 1);
            Ok(moving.get())
        };
        let result = steady("threading._active", tag, || {
            reads.set(reads.get() + 1);
            Ok(())
        });
        match result {
            Err(Error::Layout(why)) => assert_eq!(
                why,
                format!("threading._active changed while it was read, {TRIES} times in a row")
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(reads.get(), TRIES);
        // One that stands still on the third try is read then.
        moving.set(0);
        reads.set(0);
        let tag = || {
            moving.set(moving.get() + 1);
            Ok(moving.get().min(5))
        };
        assert_eq!(
            steady("d", tag, || {
                reads.set(reads.get() + 1);
                Ok(reads.get())
            })
            .ok(),
            Some(3)
        );
        // Without a tag (a version that has none) the dict is read once, as it is.
        let mut untagged = NAMES_312;
        untagged.dict.ma_version_tag = None;
        assert_eq!(
            reader(untagged).steady_items(at, "d").ok(),
            Some(vec![(10, 11)])
        );
    }

    #[test]
    fn entries_of_3_10_follow_indices_sized_by_the_table() {
        // dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries, 8 one-byte indices, entries.
        let mut k = words(&[1, 8, 0, 3, 2, u64::MAX]);
        k.extend_from_slice(&words(&[1, 10, 11, 2, 12, 13]));
        let items = reader(NAMES_310).entries(addr(&k), None).ok();
        assert_eq!(items, Some(vec![(10, 11), (12, 13)]));
        k[8..16].copy_from_slice(&6u64.to_ne_bytes());
        assert!(matches!(
            reader(NAMES_310).entries(addr(&k), None),
            Err(Error::Layout(_))
        ));
    }

    #[test]
    fn torn_keys_are_a_layout_error_before_anything_is_read_for_them() {
        let r = reader(NAMES_312);
        // More entries than slots.
        let k = keys_312(1, 9, &[]);
        assert!(matches!(r.entries(addr(&k), None), Err(Error::Layout(_))));
        let k = keys_312(1, u64::MAX, &[]);
        assert!(matches!(r.entries(addr(&k), None), Err(Error::Layout(_))));
        // Indices narrower than a byte, or a table beyond the cap.
        let mut k = keys_312(1, 0, &[]);
        k[9] = 2;
        assert!(matches!(r.entries(addr(&k), None), Err(Error::Layout(_))));
        k[8] = 60;
        k[9] = 61;
        assert!(matches!(r.entries(addr(&k), None), Err(Error::Layout(_))));
    }

    #[test]
    fn idents_of_each_int_layout() {
        let max = u64::MAX;
        let mask = (1u64 << 30) - 1;
        let digits = [max & mask, (max >> 30) & mask, max >> 60];
        let digit_bytes =
            |ds: &[u64]| -> Vec<u8> { ds.iter().flat_map(|&d| (d as u32).to_ne_bytes()).collect() };
        let int = |size: u64, ds: &[u64]| {
            let mut v = words(&[1, 0, size]);
            v.extend_from_slice(&digit_bytes(ds));
            v
        };
        let r310 = reader(NAMES_310);
        let r312 = reader(NAMES_312);
        let ident = |r: &Reader, v: &Vec<u8>| r.ident(addr(v)).ok().flatten();
        assert_eq!(ident(&r310, &int(3, &digits)), Some(max));
        assert_eq!(ident(&r312, &int(3 << 3, &digits)), Some(max));
        assert_eq!(ident(&r310, &int(1, &[5])), Some(5));
        assert_eq!(ident(&r312, &int(1 << 3, &[5])), Some(5));
        // Zero: no digits (3.12: the sign bits say zero).
        assert_eq!(ident(&r310, &int(0, &[])), Some(0));
        assert_eq!(ident(&r312, &int(1, &[])), Some(0));
        // Negative, or more digits than a 64-bit ident has: not an ident.
        assert_eq!(ident(&r310, &int(-1i64 as u64, &[5])), None);
        assert_eq!(ident(&r312, &int((1 << 3) | 2, &[5])), None);
        assert_eq!(ident(&r310, &int(4, &[1, 1, 1, 1])), None);
        // Three digits that overflow 64 bits.
        assert_eq!(ident(&r310, &int(3, &[0, 0, 16])), None);
    }

    #[test]
    fn the_main_interpreter_is_the_last_and_a_cycle_is_an_error() {
        let r = reader(NAMES_312);
        let main = words(&[0]);
        let sub = words(&[addr(&main)]);
        let mut runtime = vec![0u8; 48];
        let head = NAMES_312.interpreters_head as usize;
        runtime[head..head + 8].copy_from_slice(&addr(&sub).to_ne_bytes());
        assert_eq!(r.main_interpreter(addr(&runtime)).ok(), Some(addr(&main)));
        let mut cycle = words(&[0]);
        let own = addr(&cycle);
        cycle.copy_from_slice(&own.to_ne_bytes());
        runtime[head..head + 8].copy_from_slice(&own.to_ne_bytes());
        assert!(matches!(
            r.main_interpreter(addr(&runtime)),
            Err(Error::Layout(_))
        ));
    }

    fn runtime(version: Option<(u8, u8)>, version_hex: Option<u64>) -> Runtime {
        Runtime {
            pid: 1,
            address: 0,
            library: PathBuf::from("libpython3.13.so"),
            version,
            version_hex,
        }
    }

    #[test]
    fn unknown_versions_are_unsupported_and_3_13_needs_its_debug_offsets() {
        for version in [None, Some((3, 9)), Some((3, 16))] {
            assert!(matches!(
                thread_names(&runtime(version, None)),
                Err(Error::Unsupported(_))
            ));
        }
        match thread_names(&runtime(Some((3, 13)), None)) {
            Err(Error::Layout(why)) => assert!(why.contains("_Py_DebugOffsets"), "{why}"),
            other => panic!("{other:?}"),
        }
    }
}
