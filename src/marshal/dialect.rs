//! What each Python version's `marshal.loads` reads and says, where versions differ: the objects
//! added after marshal version 4 and the wording of one error. The reader follows the dialect of
//! the interpreter it runs in, so its results are that interpreter's.

/// The marshal of one Python version, as the reader needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// `:`, a slice (marshal version 5, Python 3.14); before, an unknown type code.
    pub slice: bool,
    /// `}`, a frozendict (marshal version 6, Python 3.15); before, an unknown type code.
    pub frozendict: bool,
    /// The EOFError for a missing one-byte length (of a short tuple, short string or text float).
    pub missing_length_byte: &'static str,
}

impl Dialect {
    /// The dialect of Python 3.`minor` (3.10 and later).
    pub fn python(minor: u8) -> Dialect {
        Dialect {
            slice: minor >= 14,
            frozendict: minor >= 15,
            missing_length_byte: if minor >= 11 {
                "EOF read where not expected"
            } else {
                "EOF read where object expected"
            },
        }
    }
}

/// Marshal version 4 (what a stats file holds), with 3.11-3.13's wording.
impl Default for Dialect {
    fn default() -> Dialect {
        Dialect::python(13)
    }
}
