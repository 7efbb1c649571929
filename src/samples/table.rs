//! How the sampling reports draw their tables (issue 27: the tables that are not pstats' own
//! are comfy-table's, fitted to the width the caller gives, the terminal's): columns as pstats
//! lays them out, a rule under the header and no borders; the figures right-aligned at their
//! full width, the text column (last or first) wrapped to what remains.

use comfy_table::{
    CellAlignment, ColumnConstraint, ContentArrangement, LineStyle, Table, TableStyle, Width,
};

const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('-').junction('-'));

/// The narrowest the text column is cut to: narrower, a label falls to pieces, so the table
/// rather goes past the width.
const MIN_TEXT: usize = 20;

/// The text of a table of `header` and `rows`, whose columns other than `text` are figures.
pub fn figures_table<R, C>(header: &[&str], rows: R, text: usize, width: u16) -> String
where
    R: IntoIterator<Item = C>,
    C: IntoIterator<Item = String>,
{
    let mut table = Table::new();
    table
        .load_style(STYLE)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(width)
        .set_header(header.iter().copied());
    let mut longest = header.get(text).map_or(0, |h| h.chars().count());
    for row in rows {
        let row: Vec<String> = row.into_iter().collect();
        longest = longest.max(row.get(text).map_or(0, |s| s.chars().count()));
        table.add_row(row);
    }
    for i in 0..header.len() {
        if let Some(c) = table.column_mut(i) {
            // Two blanks between columns (the padding and the junction's place).
            c.set_padding((0, 1));
            if i == text {
                // The boundary counts the padding.
                let least = longest.min(MIN_TEXT) as u16 + 1;
                c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(least)));
            } else {
                c.set_cell_alignment(CellAlignment::Right);
                c.set_constraint(ColumnConstraint::ContentWidth);
            }
        }
    }
    // No trailing blanks on short lines.
    table.trim_fmt()
}
