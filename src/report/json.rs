//! The report's JSON, written straight into a byte buffer: columns of numbers a million long
//! are digits and commas, with no value tree between. Strings are quoted by serde_json, and
//! every `<` becomes `\u003c`, so that the blob can sit inside a `<script>` element (no
//! `</script>` or `<!--` can appear in it).

use crate::core::format::decimal;

/// A JSON text being written.
#[derive(Default)]
pub struct Json {
    pub out: Vec<u8>,
    /// Whether the next member or element needs a comma before it.
    comma: bool,
}

impl Json {
    pub fn new() -> Json {
        Json::default()
    }

    fn sep(&mut self) {
        if self.comma {
            self.out.push(b',');
        }
        self.comma = true;
    }

    pub fn open_object(&mut self) {
        self.sep();
        self.out.push(b'{');
        self.comma = false;
    }

    pub fn close_object(&mut self) {
        self.out.push(b'}');
        self.comma = true;
    }

    pub fn open_array(&mut self) {
        self.sep();
        self.out.push(b'[');
        self.comma = false;
    }

    pub fn close_array(&mut self) {
        self.out.push(b']');
        self.comma = true;
    }

    /// A member's name; its value follows.
    pub fn key(&mut self, k: &str) {
        self.sep();
        push_str(&mut self.out, k);
        self.out.push(b':');
        self.comma = false;
    }

    pub fn str(&mut self, s: &str) {
        self.sep();
        push_str(&mut self.out, s);
    }

    /// Bytes that should be UTF-8 (names may hold lone surrogates): invalid parts become U+FFFD.
    pub fn bytes(&mut self, s: &[u8]) {
        self.str(&String::from_utf8_lossy(s));
    }

    pub fn int(&mut self, n: i64) {
        self.sep();
        decimal(&mut self.out, n);
    }

    /// A float in its shortest form that reads back the same; `null` for NaN and infinities.
    pub fn float(&mut self, x: f64) {
        self.sep();
        if x.is_finite() {
            self.out.extend_from_slice(format!("{x:?}").as_bytes());
        } else {
            self.out.extend_from_slice(b"null");
        }
    }

    pub fn bool(&mut self, b: bool) {
        self.sep();
        self.out
            .extend_from_slice(if b { b"true" } else { b"false" });
    }

    pub fn null(&mut self) {
        self.sep();
        self.out.extend_from_slice(b"null");
    }

    /// `"k": [n, ...]`.
    pub fn ints(&mut self, k: &str, values: impl IntoIterator<Item = i64>) {
        self.key(k);
        self.open_array();
        for v in values {
            // One comma per number, pushed inline: this runs millions of times.
            if self.comma {
                self.out.push(b',');
            }
            decimal(&mut self.out, v);
            self.comma = true;
        }
        self.close_array();
    }

    /// `"k": ["s", ...]`.
    pub fn strs<'a>(&mut self, k: &str, values: impl IntoIterator<Item = &'a str>) {
        self.key(k);
        self.open_array();
        for v in values {
            self.str(v);
        }
        self.close_array();
    }
}

/// Appends `s` as a JSON string with `<` escaped.
fn push_str(out: &mut Vec<u8>, s: &str) {
    let start = out.len();
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
    if out[start..].contains(&b'<') {
        let quoted = out.split_off(start);
        for &b in &quoted {
            if b == b'<' {
                out.extend_from_slice(b"\\u003c");
            } else {
                out.push(b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_arrays_and_escapes() {
        let mut j = Json::new();
        j.open_object();
        j.key("a");
        j.str("</script><!-- \"x\"\n");
        j.ints("n", [1, -2, 30]);
        j.key("f");
        j.open_array();
        j.float(0.1);
        j.float(f64::NAN);
        j.float(1e-7);
        j.bool(true);
        j.null();
        j.close_array();
        j.key("s");
        j.bytes(b"a\xffb");
        j.close_object();
        let text = String::from_utf8(j.out).unwrap();
        assert_eq!(
            text,
            "{\"a\":\"\\u003c/script>\\u003c!-- \\\"x\\\"\\n\",\"n\":[1,-2,30],\
             \"f\":[0.1,null,1e-7,true,null],\"s\":\"a\u{fffd}b\"}"
        );
        assert!(!text.contains('<'));
    }
}
