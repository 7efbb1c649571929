//! How the sampling reports draw their tables (issue 27: the tables that are not pstats' own
//! are comfy-table's, fitted to the width the caller gives, the terminal's): columns as pstats
//! lays them out, a rule under the header and no borders; the figures right-aligned at their
//! full width, the text column (last or first) whole, as pstats prints its labels, so that a
//! line of the report is one row that grep finds.

use comfy_table::{
    CellAlignment, ColumnConstraint, ContentArrangement, LineStyle, Table, TableStyle,
};

const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('-').junction('-'));

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
    for row in rows {
        table.add_row(row.into_iter().collect::<Vec<String>>());
    }
    for i in 0..header.len() {
        if let Some(c) = table.column_mut(i) {
            // Two blanks between columns (the padding and the junction's place).
            c.set_padding((0, 1));
            if i != text {
                c.set_cell_alignment(CellAlignment::Right);
            }
            c.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    // No trailing blanks on short lines.
    table.trim_fmt()
}
