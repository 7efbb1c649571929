//! The location table of 3.11+ code objects (`co_linetable`, format in CPython's
//! `Objects/locations.md`): the line of an instruction, read without Python.
//!
//! Each entry starts with a byte `1cccclll`: code `cccc`, and `lll + 1` code units covered.
//! Code 15: no location; 14: long form (signed varint line delta, then varint end-line delta,
//! column + 1, end column + 1); 13: no column (signed varint line delta); 10-12: one-line form
//! (line delta `code - 10`, then two bytes of columns); 0-9: short form (line delta 0, one byte
//! of columns). Varints are 6-bit chunks, low first, bit 6 set on all but the last.

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

/// The line of the instruction at code unit `index`, from the table and `co_firstlineno`;
/// `None` when the instruction has no location or the table ends (or is torn) before it.
pub fn line_of(table: &[u8], first_line: i64, index: u64) -> Option<i64> {
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
        let lines: Vec<_> = (0..9).map(|i| line_of(&table, 10, i)).collect();
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
        assert_eq!(line_of(&[0x01, 0x02], 1, 0), None);
        assert_eq!(line_of(&[0x80 | (13 << 3)], 1, 0), None);
        assert_eq!(
            line_of(
                &[0x80 | (14 << 3), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
                1,
                0
            ),
            None
        );
        assert_eq!(line_of(&[], 1, 0), None);
    }
}
