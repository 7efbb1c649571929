//! The writer: appends marshal records for dicts, tuples, ints, floats and strings, with
//! back-references for repeated strings and tuples so files stay as small as `marshal.dump`'s.
//! The differential tests check that `marshal.load` reads what it writes as the dict
//! `create_stats` builds. Python-free, so `cargo test` covers it.

const TYPE_NULL: u8 = b'0';
const TYPE_TRUE: u8 = b'T';
const TYPE_FALSE: u8 = b'F';
const TYPE_INT: u8 = b'i';
const TYPE_LONG: u8 = b'l';
const TYPE_BINARY_FLOAT: u8 = b'g';
const TYPE_UNICODE: u8 = b'u';
const TYPE_ASCII: u8 = b'a';
const TYPE_SHORT_ASCII: u8 = b'z';
const TYPE_TUPLE: u8 = b'(';
const TYPE_SMALL_TUPLE: u8 = b')';
const TYPE_DICT: u8 = b'{';
const TYPE_REF: u8 = b'r';
/// Marks an object that later `TYPE_REF`s may point back to (by order of marking).
const FLAG_REF: u8 = 0x80;

/// Appends marshal records to a byte buffer.
#[derive(Debug, Default)]
pub struct Writer {
    pub buf: Vec<u8>,
    /// How many objects have been marked for reference so far (the next mark's index).
    refs: u32,
}

impl Writer {
    pub fn new() -> Self {
        Self::default()
    }

    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Writes `TYPE_REF` to an object marked earlier.
    pub fn reference(&mut self, index: u32) {
        self.buf.push(TYPE_REF);
        self.u32(index);
    }

    /// Marks the next object for reference: its type byte gets FLAG_REF. Returns its index.
    fn mark(&mut self, type_byte: u8, flag: bool) -> Option<u32> {
        if flag {
            self.buf.push(type_byte | FLAG_REF);
            self.refs += 1;
            Some(self.refs - 1)
        } else {
            self.buf.push(type_byte);
            None
        }
    }

    pub fn int(&mut self, v: i64) {
        if let Ok(small) = i32::try_from(v) {
            self.buf.push(TYPE_INT);
            self.buf.extend_from_slice(&small.to_le_bytes());
            return;
        }
        // A long: 15-bit digits, least significant first; the sign is the digit count's.
        let mut digits = Vec::new();
        let mut mag = v.unsigned_abs();
        while mag != 0 {
            digits.push((mag & 0x7fff) as u16);
            mag >>= 15;
        }
        self.buf.push(TYPE_LONG);
        let n = digits.len() as i32;
        self.buf
            .extend_from_slice(&(if v < 0 { -n } else { n }).to_le_bytes());
        for d in digits {
            self.buf.extend_from_slice(&d.to_le_bytes());
        }
    }

    pub fn bool(&mut self, v: bool) {
        self.buf.push(if v { TYPE_TRUE } else { TYPE_FALSE });
    }

    pub fn float(&mut self, v: f64) {
        self.buf.push(TYPE_BINARY_FLOAT);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A str given as its UTF-8 bytes (lone surrogates encoded with `surrogatepass`, as marshal
    /// does). `flag` marks it for later references; returns the reference index if marked.
    pub fn str(&mut self, utf8: &[u8], flag: bool) -> Option<u32> {
        if utf8.is_ascii() {
            if utf8.len() < 256 {
                let r = self.mark(TYPE_SHORT_ASCII, flag);
                self.buf.push(utf8.len() as u8);
                self.buf.extend_from_slice(utf8);
                return r;
            }
            let r = self.mark(TYPE_ASCII, flag);
            self.u32(utf8.len() as u32);
            self.buf.extend_from_slice(utf8);
            return r;
        }
        let r = self.mark(TYPE_UNICODE, flag);
        self.u32(utf8.len() as u32);
        self.buf.extend_from_slice(utf8);
        r
    }

    /// Starts a tuple of `len` items (written next by the caller).
    pub fn tuple(&mut self, len: usize, flag: bool) -> Option<u32> {
        if len < 256 {
            let r = self.mark(TYPE_SMALL_TUPLE, flag);
            self.buf.push(len as u8);
            r
        } else {
            let r = self.mark(TYPE_TUPLE, flag);
            self.u32(len as u32);
            r
        }
    }

    /// Starts a dict: key and value records follow, then [`Writer::end_dict`].
    pub fn dict(&mut self) {
        self.buf.push(TYPE_DICT);
    }

    pub fn end_dict(&mut self) {
        self.buf.push(TYPE_NULL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ints_are_four_bytes_little_endian() {
        let mut w = Writer::new();
        w.int(1);
        w.int(-2);
        assert_eq!(w.buf, [b'i', 1, 0, 0, 0, b'i', 0xfe, 0xff, 0xff, 0xff]);
    }

    #[test]
    fn large_ints_are_longs_of_15_bit_digits() {
        let mut w = Writer::new();
        w.int(1 << 31); // 2**31 = 2 * 2**30: digits 0, 0, 2
        assert_eq!(w.buf, [b'l', 3, 0, 0, 0, 0, 0, 0, 0, 2, 0]);
        let mut w = Writer::new();
        w.int(-(1 << 40)); // 2**40 = 1024 * 2**30: digits 0, 0, 1024; negative count
        assert_eq!(w.buf, [b'l', 0xfd, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 4]);
        let mut w = Writer::new();
        w.int(i64::MIN); // magnitude 2**63 = 8 * 2**60: five digits, the last 8
        assert_eq!(&w.buf[..5], &[b'l', 0xfb, 0xff, 0xff, 0xff]);
        assert_eq!(&w.buf[w.buf.len() - 2..], &[8, 0]);
    }

    #[test]
    fn floats_are_binary_doubles() {
        let mut w = Writer::new();
        w.float(1.5);
        let mut expected = vec![b'g'];
        expected.extend_from_slice(&1.5f64.to_le_bytes());
        assert_eq!(w.buf, expected);
    }

    #[test]
    fn strings_pick_the_shortest_form_and_can_be_referenced() {
        let mut w = Writer::new();
        assert_eq!(w.str(b"ab", true), Some(0));
        assert_eq!(w.str("é".as_bytes(), true), Some(1));
        w.reference(0);
        assert_eq!(
            w.buf,
            [
                b'z' | 0x80,
                2,
                b'a',
                b'b',
                b'u' | 0x80,
                2,
                0,
                0,
                0,
                0xc3,
                0xa9,
                b'r',
                0,
                0,
                0,
                0
            ]
        );
        let long = vec![b'x'; 300];
        let mut w = Writer::new();
        w.str(&long, false);
        assert_eq!(&w.buf[..5], &[b'a', 44, 1, 0, 0]);
    }

    #[test]
    fn containers() {
        let mut w = Writer::new();
        w.dict();
        w.tuple(1, false);
        w.int(7);
        w.tuple(0, false);
        w.end_dict();
        assert_eq!(w.buf, [b'{', b')', 1, b'i', 7, 0, 0, 0, b')', 0, b'0']);
        let mut w = Writer::new();
        w.tuple(256, false);
        assert_eq!(w.buf, [b'(', 0, 1, 0, 0]);
    }
}
