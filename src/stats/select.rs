//! Restriction patterns. pstats keeps the functions whose `func_std_string` `re.search` finds
//! the pattern in. The `regex` crate does that search far faster, but its syntax means other
//! things in places (`\<`, nested classes, `{` taken literally, inline flags, Unicode classes),
//! so a pattern is only handed to it when every construct in it means the same in both engines;
//! anything else is left to Python's `re`.

/// What a translated pattern needs of a text for the two engines to agree on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// `\d`, `\w`, `\s`, `\b` and their negations: Python's and Rust's Unicode tables differ
    /// (e.g. `\s` and U+001C), so only texts of printable ASCII are matched by `regex`.
    pub printable_ascii: bool,
    /// `$`: Python's also matches before a final newline.
    pub no_newline: bool,
}

impl Needs {
    pub fn allows(&self, text: &[u8]) -> bool {
        if self.printable_ascii && !text.iter().all(|&b| (0x20..0x7f).contains(&b)) {
            return false;
        }
        if self.no_newline && text.contains(&b'\n') {
            return false;
        }
        true
    }
}

/// The `regex`-crate spelling of a Python pattern that already compiled with Python's `re`, or
/// `None` when some construct is not known to mean the same in both.
pub fn translate(pattern: &str) -> Option<(String, Needs)> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut needs = Needs::default();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let e = *chars.get(i + 1)?;
                escape(e, &mut out, &mut needs)?;
                i += 2;
            }
            '[' => i = class(&chars, i, &mut out, &mut needs)?,
            '(' => {
                // Plain groups and `(?:...)`; every other extension is left to Python.
                if chars.get(i + 1) == Some(&'?') {
                    if chars.get(i + 2) != Some(&':') {
                        return None;
                    }
                    out.push_str("(?:");
                    i += 3;
                } else {
                    out.push('(');
                    i += 1;
                }
            }
            '{' => match repetition(&chars, i) {
                Some(end) => {
                    out.extend(&chars[i..end]);
                    i = end;
                    // A lazy `{m,n}?` means the same in both; a possessive `+` does not exist
                    // in Rust.
                    if chars.get(i) == Some(&'+') {
                        return None;
                    }
                }
                // `{,n}` and `{,}` are repetitions from zero in Python: left to it.
                None if chars.get(i + 1) == Some(&',') => return None,
                None => {
                    // Python reads a brace that does not start a repetition as itself.
                    out.push_str("\\{");
                    i += 1;
                }
            },
            '}' => {
                out.push_str("\\}");
                i += 1;
            }
            '*' | '+' | '?' => {
                // Possessive quantifiers (3.11+) have no Rust spelling.
                if chars.get(i + 1) == Some(&'+') {
                    return None;
                }
                out.push(c);
                i += 1;
            }
            '$' => {
                needs.no_newline = true;
                out.push('$');
                i += 1;
            }
            '.' | '^' | '|' | ')' => {
                out.push(c);
                i += 1;
            }
            c if c.is_control() => return None,
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some((out, needs))
}

/// `{m}`, `{m,}` or `{m,n}` starting at `chars[i]`: the index after its `}`.
fn repetition(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let digits = |j: &mut usize| {
        let start = *j;
        while chars.get(*j).is_some_and(|c| c.is_ascii_digit()) {
            *j += 1;
        }
        *j - start
    };
    if digits(&mut j) == 0 {
        return None;
    }
    if chars.get(j) == Some(&',') {
        j += 1;
        digits(&mut j);
    }
    (chars.get(j) == Some(&'}')).then_some(j + 1)
}

/// An escape outside a class.
fn escape(e: char, out: &mut String, needs: &mut Needs) -> Option<()> {
    match e {
        'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'b' | 'B' => {
            needs.printable_ascii = true;
            out.push('\\');
            out.push(e);
        }
        'A' | 'n' | 't' | 'r' | 'f' | 'v' => {
            out.push('\\');
            out.push(e);
        }
        // Escaped punctuation is the character itself in Python; Rust gives some of it (`\<`,
        // `\>`) other meanings, so only the metacharacters are passed on escaped.
        '.' | '^' | '$' | '*' | '+' | '?' | '{' | '}' | '[' | ']' | '(' | ')' | '|' | '\\' => {
            out.push('\\');
            out.push(e);
        }
        '/' | ':' | ',' | '\'' | '"' | '=' | '!' | '@' | '%' | ';' | '_' | '<' | '>' | '`'
        | '-' | '&' | '~' | '#' | ' ' => {
            out.push(e);
        }
        _ => return None,
    }
    Some(())
}

/// A character class from `chars[i] == '['`; returns the index after its `]`.
fn class(chars: &[char], i: usize, out: &mut String, needs: &mut Needs) -> Option<usize> {
    let mut j = i + 1;
    out.push('[');
    if chars.get(j) == Some(&'^') {
        out.push('^');
        j += 1;
    }
    let class_start = j;
    // A `]` first is a literal in Python and in Rust; left to Python to stay simple.
    if chars.get(j) == Some(&']') {
        return None;
    }
    loop {
        let c = *chars.get(j)?;
        match c {
            ']' => {
                out.push(']');
                return Some(j + 1);
            }
            '\\' => {
                let e = *chars.get(j + 1)?;
                match e {
                    'd' | 'D' | 'w' | 'W' | 's' | 'S' => {
                        needs.printable_ascii = true;
                        out.push('\\');
                        out.push(e);
                    }
                    'n' | 't' | 'r' | 'f' | 'v' => {
                        out.push('\\');
                        out.push(e);
                    }
                    '\\' | ']' | '[' | '-' | '^' | '&' | '~' | '.' | '*' | '+' | '?' | '('
                    | ')' | '{' | '}' | '|' | '$' => {
                        out.push('\\');
                        out.push(e);
                    }
                    '/' | ':' | ',' | '\'' | '"' | '=' | '!' | '@' | '%' | ';' | '_' | '<'
                    | '>' | '#' | ' ' => out.push(e),
                    _ => return None,
                }
                j += 2;
            }
            // Nested classes and set operations are Rust-only syntax.
            '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
                j += 1;
            }
            '-' => {
                // A range between two characters means the same; `--` is Rust's set
                // difference, and a dash at either end is a literal in both. Only a dash right
                // after the opening `[` (or `[^`) has nothing before it: a `[` or `^` met later
                // (or escaped) is an ordinary range start in both engines.
                let prev_plain = j > class_start;
                let next = chars.get(j + 1).copied();
                if chars.get(j + 1) == Some(&'-') {
                    return None;
                }
                match next {
                    Some(']') => out.push_str("\\-"),
                    Some(n) if prev_plain && !matches!(n, '\\' | '[') => out.push('-'),
                    _ if !prev_plain => out.push_str("\\-"),
                    _ => return None,
                }
                j += 1;
            }
            c if c.is_control() => return None,
            c => {
                out.push(c);
                j += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_braces_and_rust_only_syntax_are_escaped() {
        assert_eq!(translate("{built-in").unwrap().0, "\\{built-in");
        assert_eq!(translate("a{2,3}").unwrap().0, "a{2,3}");
        assert_eq!(translate("[a&&b]").unwrap().0, "[a\\&\\&b]");
        assert_eq!(translate("[a-z]").unwrap().0, "[a-z]");
        // Python reads `\<` as `<`; Rust would read it as a word boundary.
        assert_eq!(translate(r"\<lambda>").unwrap().0, "<lambda>");
    }

    #[test]
    fn constructs_with_other_meanings_are_refused() {
        for p in [
            r"(\w+)\1", r"(?<=a)b", r"(?i)x", r"a*+", r"[]a]", r"[a--b]", r"\Z", r"\x41",
        ] {
            assert!(translate(p).is_none(), "{p}");
        }
    }

    #[test]
    fn class_escapes_restrict_the_texts() {
        let (_, needs) = translate(r"\w+\.py").unwrap();
        assert!(needs.allows(b"mod.py:1(f)"));
        assert!(!needs.allows("m\u{f6}d.py".as_bytes()));
        let (_, needs) = translate("f$").unwrap();
        assert!(!needs.allows(b"f\n"));
    }
}
