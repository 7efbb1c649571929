//! The fast path from stats-file bytes to the model: one pass over the marshal data with no
//! intermediate values, so loading costs little more memory than the model itself. It reads the
//! forms profilers and `marshal.dump` write for a stats dict; on anything else (another shape,
//! bad data, rarer encodings) it gives up with `None`, and the general reader
//! (`marshal::read` + `load::from_value`) takes over, with its exact errors. Both must agree
//! wherever this one succeeds (a property test holds them to it).

use super::model::{dedupe_callers, ints, CallValue, Edge, Model, Record, SAMPLED_KEY};

const FLAG_REF: u8 = 0x80;
const EXACT_FLOAT_INT: u64 = 1 << 53;

/// What a back-reference may point to, kept compactly; anything else is `Other` (a reference
/// to it makes the fast path give up).
#[derive(Clone, Copy)]
enum Ref {
    Pending,
    Str(u32),
    Int(i64),
    Float(f64),
    Func(u32),
    Call(CallValue),
    Other,
}

struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    refs: Vec<Ref>,
    model: Model,
}

type R<T> = Option<T>;

impl<'a> Decoder<'a> {
    fn bytes(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len())?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Some(s)
    }

    fn byte(&mut self) -> R<u8> {
        let b = *self.data.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn u32(&mut self) -> R<u32> {
        let b = self.bytes(4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The type byte: its type and, if flagged, the reference slot it takes.
    fn head(&mut self) -> R<(u8, Option<usize>)> {
        let code = self.byte()?;
        if code & FLAG_REF != 0 && code != (b'r' | FLAG_REF) {
            self.refs.push(Ref::Pending);
            Some((code & !FLAG_REF, Some(self.refs.len() - 1)))
        } else {
            Some((code & !FLAG_REF, None))
        }
    }

    fn fill(&mut self, slot: Option<usize>, r: Ref) {
        if let Some(i) = slot {
            self.refs[i] = r;
        }
    }

    fn reference(&mut self) -> R<Ref> {
        let i = self.u32()? as usize;
        match self.refs.get(i)? {
            Ref::Pending | Ref::Other => None,
            r => Some(*r),
        }
    }

    /// The bytes of a str record of type `ty` (not a reference), after its type byte.
    fn str_body(&mut self, ty: u8) -> R<&'a [u8]> {
        let n = match ty {
            b'z' | b'Z' => self.byte()? as usize,
            b'a' | b'A' | b'u' | b't' => self.u32()? as usize,
            _ => return None,
        };
        self.bytes(n)
    }

    /// A str, as an interned string id.
    fn string(&mut self) -> R<u32> {
        let (ty, slot) = self.head()?;
        if ty == b'r' {
            return match self.reference()? {
                Ref::Str(id) => Some(id),
                _ => None,
            };
        }
        let bytes = self.str_body(ty)?;
        // Latin-1 beyond ASCII and surrogatepass bytes are left to the general reader.
        let ok = if matches!(ty, b'u' | b't') {
            std::str::from_utf8(bytes).is_ok()
        } else {
            bytes.is_ascii()
        };
        if !ok {
            return None;
        }
        let id = self.model.intern(bytes);
        self.fill(slot, Ref::Str(id));
        Some(id)
    }

    /// An int that fits i64 (not a bool).
    fn int(&mut self) -> R<i64> {
        let (ty, slot) = self.head()?;
        let v = match ty {
            b'r' => {
                return match self.reference()? {
                    Ref::Int(i) => Some(i),
                    _ => None,
                }
            }
            b'i' => self.u32()? as i32 as i64,
            b'l' => {
                let n = self.u32()? as i32;
                let count = n.unsigned_abs() as usize;
                if count == 0 || count > 4 {
                    return None; // zero digits is unnormalized; >60 bits left to the reader
                }
                let mut mag: u64 = 0;
                let digits = self.bytes(2 * count)?;
                for d in digits.chunks_exact(2).rev() {
                    let d = u16::from_le_bytes([d[0], d[1]]);
                    if d > 0x7fff {
                        return None;
                    }
                    mag = (mag << 15) | d as u64;
                }
                if digits[2 * count - 2..] == [0, 0] {
                    return None;
                }
                let v = mag as i64;
                if n < 0 {
                    -v
                } else {
                    v
                }
            }
            _ => return None,
        };
        self.fill(slot, Ref::Int(v));
        Some(v)
    }

    /// A time: a binary float, or an int exact as a float (and whether it was an int).
    fn time(&mut self) -> R<(f64, bool)> {
        let at = self.pos;
        match self.data.get(at)? & !FLAG_REF {
            b'g' => {
                let (_, slot) = self.head()?;
                let b = self.bytes(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                let f = f64::from_le_bytes(a);
                self.fill(slot, Ref::Float(f));
                Some((f, false))
            }
            b'r' => {
                let save = self.pos;
                let (_, _) = self.head()?;
                match self.reference()? {
                    Ref::Float(f) => Some((f, false)),
                    Ref::Int(i) if i.unsigned_abs() <= EXACT_FLOAT_INT => Some((i as f64, true)),
                    _ => {
                        self.pos = save;
                        None
                    }
                }
            }
            _ => {
                let i = self.int()?;
                (i.unsigned_abs() <= EXACT_FLOAT_INT).then_some((i as f64, true))
            }
        }
    }

    /// The start of a tuple of exactly `n` items; its reference slot, if flagged.
    fn tuple(&mut self, n: usize) -> R<Option<usize>> {
        let (ty, slot) = self.head()?;
        let len = match ty {
            b')' => self.byte()? as usize,
            b'(' => self.u32()? as usize,
            _ => return None,
        };
        (len == n).then_some(slot)
    }

    /// A function key `(file, line, name)`.
    fn key(&mut self) -> R<u32> {
        if self.data.get(self.pos)? & !FLAG_REF == b'r' {
            self.pos += 1;
            return match self.reference()? {
                Ref::Func(f) => Some(f),
                _ => None,
            };
        }
        let slot = self.tuple(3)?;
        let file = self.string()?;
        let line = self.int()?;
        let name = self.string()?;
        let id = self.model.func_of(super::model::Func { file, line, name });
        self.fill(slot, Ref::Func(id));
        Some(id)
    }

    fn call_value(&mut self) -> R<CallValue> {
        match self.data.get(self.pos)? & !FLAG_REF {
            b'r' => {
                self.pos += 1;
                match self.reference()? {
                    Ref::Call(c) => Some(c),
                    Ref::Int(n) => Some(CallValue::Count(n)),
                    _ => None,
                }
            }
            b')' | b'(' => {
                let slot = self.tuple(4)?;
                let nc = self.int()?;
                let cc = self.int()?;
                let ((tt, tt_int), (ct, ct_int)) = (self.time()?, self.time()?);
                let c = CallValue::Tuple {
                    nc,
                    cc,
                    tt,
                    ct,
                    ints: ints(tt_int, ct_int),
                };
                self.fill(slot, Ref::Call(c));
                Some(c)
            }
            _ => Some(CallValue::Count(self.int()?)),
        }
    }

    /// Whether the next byte ends a dict (`TYPE_NULL`).
    fn end_of_dict(&mut self) -> R<bool> {
        if *self.data.get(self.pos)? == b'0' {
            self.pos += 1;
            return Some(true);
        }
        Some(false)
    }

    fn dict_start(&mut self) -> R<()> {
        let (ty, slot) = self.head()?;
        if ty != b'{' {
            return None;
        }
        self.fill(slot, Ref::Other);
        Some(())
    }

    /// Reads the sampling profiler's `("__sampled__",)` key and its value if they come next:
    /// `Some(true)` then, `Some(false)` (nothing read) when the next key is no 1-tuple, `None`
    /// for another 1-tuple or a value other than a bool, None or int (the general reader takes
    /// any value).
    fn sampled_marker(&mut self) -> R<bool> {
        let at = self.pos;
        if self.data.get(at)? & !FLAG_REF != b')' || *self.data.get(at + 1)? != 1 {
            return Some(false);
        }
        let slot = self.tuple(1)?;
        self.fill(slot, Ref::Other);
        let (ty, slot) = self.head()?;
        if self.str_body(ty)? != SAMPLED_KEY {
            return None;
        }
        // Not interned: the marker names no function.
        self.fill(slot, Ref::Other);
        match *self.data.get(self.pos)? {
            b'T' | b'F' | b'N' => self.pos += 1,
            _ => {
                self.int()?;
            }
        }
        Some(true)
    }

    fn stats(&mut self) -> R<()> {
        self.dict_start()?;
        while !self.end_of_dict()? {
            if self.sampled_marker()? {
                self.model.sampled = true;
                continue;
            }
            let func = self.key()?;
            let slot = self.tuple(5)?;
            self.fill(slot, Ref::Other);
            let cc = self.int()?;
            let nc = self.int()?;
            let (tt, tt_int) = self.time()?;
            let (ct, ct_int) = self.time()?;
            self.dict_start()?;
            let mut callers = Vec::new();
            while !self.end_of_dict()? {
                let f = self.key()?;
                let value = self.call_value()?;
                callers.push(Edge { func: f, value });
            }
            callers.shrink_to_fit();
            dedupe_callers(&mut callers);
            let rec = Record {
                cc,
                nc,
                tt,
                ct,
                ints: ints(tt_int, ct_int),
                callers,
            };
            self.model.stats.insert(func, rec);
        }
        Some(())
    }
}

/// The model of a stats file's bytes, or `None` to leave them to the general reader.
pub fn decode(data: &[u8]) -> Option<Model> {
    let mut d = Decoder {
        data,
        pos: 0,
        refs: Vec::new(),
        model: Model::default(),
    };
    d.stats()?;
    Some(d.model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marshal::{read, Writer};
    use crate::stats::{dump::dump, load::from_value};

    fn corpus() -> Vec<(String, Vec<u8>)> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/corpus/marshal_reader");
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .expect("the fuzz corpus is in the repository")
            .filter_map(|e| e.ok())
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).expect("corpus file"))
            })
            .collect();
        files.sort();
        files
    }

    fn general(data: &[u8]) -> Option<Model> {
        let (v, _) = read::read(data).ok()?;
        from_value(&v)
    }

    /// Where the fast path accepts data, the general reader must read the same model.
    pub(super) fn check(data: &[u8]) -> bool {
        match decode(data) {
            Some(fast) => {
                let slow =
                    general(data).expect("the general reader refused what the fast path read");
                assert_eq!(dump(&fast), dump(&slow));
                true
            }
            None => false,
        }
    }

    #[test]
    fn real_profiles_take_the_fast_path_and_agree_with_the_general_reader() {
        let files = corpus();
        let profiles: Vec<_> = files
            .iter()
            .filter(|(n, _)| {
                ["cprofile", "profile", "sampled"]
                    .iter()
                    .any(|p| n.starts_with(p))
            })
            .collect();
        assert!(!profiles.is_empty());
        for (name, data) in profiles {
            assert!(check(data), "{name} did not take the fast path");
            // And what dump writes reads back the same way.
            let again = dump(&decode(data).unwrap_or_default());
            assert!(
                check(&again),
                "{name}: dump output did not take the fast path"
            );
        }
    }

    #[test]
    fn the_sampled_marker_is_a_flag_not_a_row_and_is_written_back() {
        let (_, data) = corpus()
            .into_iter()
            .find(|(n, _)| n == "sampled.marshal")
            .expect("the sampled corpus file");
        let m = decode(&data).expect("a sampled file takes the fast path");
        assert!(m.sampled);
        assert_eq!(m.stats.len(), 2);
        assert!(
            m.strings.get_index_of(SAMPLED_KEY).is_none(),
            "the marker names no function"
        );
        let again = decode(&dump(&m)).expect("dump output reads back");
        assert!(again.sampled);
        let mut plain = m;
        plain.sampled = false;
        assert!(!decode(&dump(&plain)).expect("reads back").sampled);
    }

    /// The marshal bytes of `{(name,): value}`, the value written by `value`.
    fn one_tuple_key(name: &[u8], value: impl Fn(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::new();
        w.dict();
        w.tuple(1, true);
        w.str(name, true);
        value(&mut w);
        w.end_dict();
        w.buf
    }

    #[test]
    fn any_marker_value_counts_and_other_one_tuples_are_refused() {
        let bool_value = one_tuple_key(SAMPLED_KEY, |w| w.bool(false));
        let int_value = one_tuple_key(SAMPLED_KEY, |w| w.int(7));
        let float_value = one_tuple_key(SAMPLED_KEY, |w| w.float(1.5));
        assert!(check(&bool_value) && check(&int_value));
        assert!(!check(&float_value), "left to the general reader");
        for data in [bool_value, int_value, float_value] {
            let m = general(&data).expect("the general reader takes any marker value");
            assert!(m.sampled && m.stats.is_empty());
        }
        let other = one_tuple_key(b"__other__", |w| w.bool(true));
        assert!(decode(&other).is_none() && general(&other).is_none());
    }

    #[test]
    fn damaged_inputs_agree_or_fall_back() {
        for (_, data) in corpus() {
            for cut in (0..data.len()).step_by(7) {
                check(&data[..cut]);
            }
            let step = (data.len() / 400).max(1);
            for i in (0..data.len()).step_by(step) {
                for flip in [0x01u8, 0x80, 0xff] {
                    let mut d = data.clone();
                    d[i] ^= flip;
                    check(&d);
                }
            }
        }
    }
}

#[cfg(test)]
mod proptests {
    use proptest::prelude::*;

    use crate::stats::load::from_bytes;

    fn profile() -> Vec<u8> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fuzz/corpus/marshal_reader/cprofile-py3.12.marshal"
        );
        std::fs::read(path).expect("corpus file")
    }

    proptest! {
        #![proptest_config(crate::marshal::fuzz_tests::config(256))]

        /// The stats loader (fast path, then the general reader) never panics on bytes.
        #[test]
        fn loader_survives_random_bytes(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = from_bytes(&data);
        }

        /// Nor on a real profile with bytes changed, inserted or cut; where the fast path reads
        /// it, the general reader reads the same (checked in `tests::check`).
        #[test]
        fn loader_survives_damaged_profiles(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..8),
            cut in any::<usize>(),
        ) {
            let mut data = profile();
            for (at, byte, kind) in edits {
                let at = at % (data.len() + 1);
                match kind {
                    0 if at < data.len() => data[at] = byte,
                    1 => data.insert(at, byte),
                    _ if at < data.len() => { data.remove(at); }
                    _ => {}
                }
            }
            data.truncate(cut % (data.len() + 1).max(1) + data.len() / 2);
            super::tests::check(&data);
        }
    }
}
