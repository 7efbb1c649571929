//! The line tables of code objects (`co_linetable`): the line of an instruction, read without
//! Python, in each version's format (`versions::LineTable`).
//!
//! 3.11+ (CPython's `Objects/locations.md`): each entry starts with a byte `1cccclll`: code
//! `cccc`, and `lll + 1` code units covered. Code 15: no location; 14: long form (signed varint
//! line delta, then varint end-line delta, column + 1, end column + 1); 13: no column (signed
//! varint line delta); 10-12: one-line form (line delta `code - 10`, then two bytes of columns);
//! 0-9: short form (line delta 0, one byte of columns). Varints are 6-bit chunks, low first,
//! bit 6 set on all but the last.
//!
//! 3.10 (its `Objects/lnotab_notes.txt`): pairs of an unsigned byte (bytes of code covered,
//! two per code unit) and a signed byte (line delta; -128: these bytes have no line). A pair
//! that covers no bytes only moves the line.

use super::versions::LineTable;

/// The line of the instruction at code unit `unit`, from a table in format `format` and
/// `co_firstlineno`; `None` when the instruction has no line or the table ends (or is torn)
/// before it.
pub fn line_of(format: LineTable, table: &[u8], first_line: i64, unit: u64) -> Option<i64> {
    match format {
        LineTable::Lnotab310 => line_of_310(table, first_line, unit.checked_mul(2)?),
        LineTable::Locations311 => line_of_311(table, first_line, unit),
    }
}

/// 3.10: the line of the instruction at byte offset `offset`.
fn line_of_310(table: &[u8], first_line: i64, offset: u64) -> Option<i64> {
    let mut line = first_line;
    let mut end: u64 = 0;
    for pair in table.chunks_exact(2) {
        end += u64::from(pair[0]);
        let delta = pair[1] as i8;
        let here = (delta != -128).then(|| {
            line += i64::from(delta);
            line
        });
        // Ranges start where the last ended, so the first to end past `offset` holds it.
        if offset < end {
            return here;
        }
    }
    None
}

/// A varint from `table` at `*at`, advancing `*at`; `None` past the end or beyond 32 bits.
fn varint(table: &[u8], at: &mut usize) -> Option<u32> {
    let mut value: u32 = 0;
    let mut shift = 0;
    loop {
        let b = *table.get(*at)?;
        *at += 1;
        value |= u32::from(b & 0x3f).checked_shl(shift)?;
        if b & 0x40 == 0 {
            return Some(value);
        }
        shift += 6;
        if shift >= 32 {
            return None;
        }
    }
}

fn signed_varint(table: &[u8], at: &mut usize) -> Option<i64> {
    let v = varint(table, at)?;
    let magnitude = i64::from(v >> 1);
    Some(if v & 1 != 0 { -magnitude } else { magnitude })
}

/// 3.11+: the line of the instruction at code unit `index`.
fn line_of_311(table: &[u8], first_line: i64, index: u64) -> Option<i64> {
    let mut line = first_line;
    let mut at = 0usize;
    let mut start: u64 = 0;
    while at < table.len() {
        let head = table[at];
        at += 1;
        if head & 0x80 == 0 {
            return None; // not an entry's first byte: a torn or foreign table
        }
        let code = (head >> 3) & 0x0f;
        let units = u64::from(head & 0x07) + 1;
        let here = match code {
            15 => None,
            14 => {
                line += signed_varint(table, &mut at)?;
                for _ in 0..3 {
                    varint(table, &mut at)?;
                }
                Some(line)
            }
            13 => {
                line += signed_varint(table, &mut at)?;
                Some(line)
            }
            10..=12 => {
                line += i64::from(code - 10);
                at += 2;
                Some(line)
            }
            _ => {
                at += 1;
                Some(line)
            }
        };
        let end = start + units;
        if index < end {
            return here;
        }
        start = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_signed_varints() {
        let mut at = 0;
        assert_eq!(varint(&[0x05], &mut at), Some(5));
        let mut at = 0;
        // 0x41 0x01: 1 + (1 << 6) = 65
        assert_eq!(varint(&[0x41, 0x01], &mut at), Some(65));
        assert_eq!(at, 2);
        let mut at = 0;
        assert_eq!(signed_varint(&[0x03], &mut at), Some(-1));
        let mut at = 0;
        assert_eq!(signed_varint(&[0x04], &mut at), Some(2));
        let mut at = 0;
        assert_eq!(varint(&[0x41], &mut at), None);
    }

    #[test]
    fn lines_of_each_form() {
        // first_line 10; entry 1: no-column form (13), +1 line, 2 units -> 11 for units 0-1;
        // entry 2: one-line form (12) +2 lines, 1 unit -> 13 for unit 2;
        // entry 3: short form (0), 3 units -> still 13 for units 3-5;
        // entry 4: no location (15), 1 unit -> None for unit 6;
        // entry 5: long form (14), -3 lines, 1 unit -> 10 for unit 7.
        #[rustfmt::skip]
        let table = [
            0x80 | (13 << 3) | 1, 0x02,
            0x80 | (12 << 3), 0x00, 0x05,
            0x80 | 2, 0x00,
            0x80 | (15 << 3),
            0x80 | (14 << 3), 0x07, 0x00, 0x01, 0x02,
        ];
        let lines: Vec<_> = (0..9).map(|i| line_of_311(&table, 10, i)).collect();
        assert_eq!(
            lines,
            [
                Some(11),
                Some(11),
                Some(13),
                Some(13),
                Some(13),
                Some(13),
                None,
                Some(10),
                None
            ]
        );
    }

    #[test]
    fn a_torn_table_is_none_not_a_panic() {
        assert_eq!(line_of_311(&[0x01, 0x02], 1, 0), None);
        assert_eq!(line_of_311(&[0x80 | (13 << 3)], 1, 0), None);
        assert_eq!(
            line_of_311(
                &[0x80 | (14 << 3), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                1,
                0
            ),
            None
        );
        assert_eq!(line_of_311(&[], 1, 0), None);
        // 3.10: an odd byte at the end is no pair; a table that ends early has no line.
        assert_eq!(line_of_310(&[0x04, 0x01, 0x02], 1, 4), None);
        assert_eq!(line_of_310(&[], 1, 0), None);
        assert_eq!(
            line_of(LineTable::Lnotab310, &[0x04, 0x01], 1, u64::MAX),
            None
        );
    }

    /// 3.10 code objects' `(co_firstlineno, co_linetable, co_lines())`, made by compiling
    /// functions with Python 3.10.13 and printing those attributes: `loop` (a line-less jump,
    /// 0x80), `far` (a line jump of 201, over two pairs), `long_line` (640 bytes on one line),
    /// `back` (lines going back and forth).
    type Vector = (i64, &'static [u8], &'static [(u64, u64, Option<i64>)]);
    #[rustfmt::skip]
    const VECTORS_310: &[Vector] = &[
        // loop
        (1, &[0x04, 0x01, 0x0c, 0x01, 0x08, 0x01, 0x08, 0x01, 0x02, 0x80, 0x04, 0x01], &[(0, 4, Some(2)), (4, 16, Some(3)), (16, 24, Some(4)), (24, 32, Some(5)), (32, 34, None), (34, 38, Some(6))]),
        // far
        (9, &[0x04, 0x01, 0x00, 0x7f, 0x04, 0x4a], &[(0, 4, Some(10)), (4, 8, Some(211))]),
        // long_line
        (214, &[0xfe, 0x01, 0xfe, 0x00, 0x84, 0x00], &[(0, 254, Some(215)), (254, 508, Some(215)), (508, 640, Some(215))]),
        // back
        (226, &[0x08, 0x01, 0x08, 0x01, 0x08, 0xff, 0x02, 0x03, 0x02, 0x01, 0x02, 0xfe, 0x02, 0x03, 0x06, 0x01, 0x02, 0xff, 0x04, 0xfd], &[(0, 8, Some(227)), (8, 16, Some(228)), (16, 24, Some(227)), (24, 26, Some(230)), (26, 28, Some(231)), (28, 30, Some(229)), (30, 32, Some(232)), (32, 38, Some(233)), (38, 40, Some(232)), (40, 44, Some(229))]),
    ];

    #[test]
    fn lines_of_3_10_tables_are_those_python_3_10_gives() {
        for &(first_line, table, ranges) in VECTORS_310 {
            for &(start, end, line) in ranges {
                for unit in start / 2..end / 2 {
                    let got = line_of(LineTable::Lnotab310, table, first_line, unit);
                    assert_eq!(got, line, "unit {unit} of {table:02x?}");
                }
            }
            let past = ranges.last().map_or(0, |r| r.1 / 2);
            assert_eq!(line_of(LineTable::Lnotab310, table, first_line, past), None);
        }
    }
}
