//! How the sampling reports draw their tables (issue 27: the tables that are not pstats' own
//! are comfy-table's, fitted to the width the caller gives, the terminal's): columns as pstats
//! lays them out, a rule under the header and no borders; the figures right-aligned at their
//! full width. The text column (last or first) is whole, as pstats prints its labels, when the
//! table fits; when it does not (issue 34: in an 80-column terminal every row wrapped), its
//! labels lose their directories, as pstats' `strip_dirs` has them, and a label still too long
//! wraps within its column rather than the terminal wrapping the whole row.

use comfy_table::{
    CellAlignment, ColumnConstraint, ContentArrangement, LineStyle, Table, TableStyle,
};

const STYLE: TableStyle =
    TableStyle::new().header_separator(LineStyle::none().fill('-').junction('-'));

/// The text of a table of `header` and `rows`, whose columns other than `text` are figures,
/// fitted to `width` columns.
pub fn figures_table<R, C>(header: &[&str], rows: R, text: usize, width: u16) -> String
where
    R: IntoIterator<Item = C>,
    C: IntoIterator<Item = String>,
{
    let mut rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.into_iter().collect()).collect();
    let whole = draw(header, &rows, text, None);
    if widest(&whole) <= usize::from(width) {
        return whole.trim_fmt();
    }
    for row in &mut rows {
        if let Some(label) = row.get_mut(text) {
            *label = strip_dirs(label);
        }
    }
    // The figures' titles on two lines ("self wall" over its figures as "self" and "wall").
    let split: Vec<String> = (0..header.len())
        .map(|i| match header[i].rfind(' ') {
            Some(at) if i != text => format!("{}\n{}", &header[i][..at], &header[i][at + 1..]),
            _ => header[i].to_string(),
        })
        .collect();
    let header: Vec<&str> = split.iter().map(String::as_str).collect();
    let header = header.as_slice();
    let whole = widest(&draw(header, &rows, text, None));
    let figures = whole.saturating_sub(text_width(header, &rows, text));
    if usize::from(width) < figures + 2 + MIN_TEXT {
        return labels_above(header, rows, text);
    }
    draw(header, &rows, text, Some(width)).trim_fmt()
}

/// The fewest columns the text column is narrowed to; with less room, each label goes on a
/// line of its own above its figures.
const MIN_TEXT: usize = 24;

/// The columns of the text column and the two blanks beside it.
fn text_width(header: &[&str], rows: &[Vec<String>], text: usize) -> usize {
    let mut t = Table::new();
    t.set_header([header.get(text).copied().unwrap_or("")]);
    for row in rows {
        t.add_row([row.get(text).cloned().unwrap_or_default()]);
    }
    t.column_max_content_widths()
        .first()
        .map_or(0, |&w| usize::from(w) + 2)
}

/// The narrow form: the figures' table, each row under a line holding its label whole, the
/// text column's title above the figures' titles.
fn labels_above(header: &[&str], rows: Vec<Vec<String>>, text: usize) -> String {
    let title = header.get(text).copied().unwrap_or("");
    let figures_header: Vec<&str> = (0..header.len())
        .filter(|&i| i != text)
        .map(|i| header[i])
        .collect();
    let mut labels = Vec::with_capacity(rows.len());
    let figures: Vec<Vec<String>> = rows
        .into_iter()
        .map(|mut row| {
            labels.push(if text < row.len() {
                row.remove(text)
            } else {
                String::new()
            });
            row
        })
        .collect();
    // No text column is left: every column is a figure.
    let drawn = draw(&figures_header, &figures, usize::MAX, None).trim_fmt();
    let mut lines = drawn.lines();
    let mut out = String::new();
    out.push_str(title);
    // The titles' lines and the rule under them.
    let heading = figures_header
        .iter()
        .map(|h| h.lines().count())
        .max()
        .unwrap_or(1)
        + 1;
    for line in lines.by_ref().take(heading) {
        out.push('\n');
        out.push_str(line);
    }
    for (label, line) in labels.iter().zip(lines) {
        out.push('\n');
        out.push_str(label);
        out.push('\n');
        out.push_str(line);
    }
    out
}

/// The table (drawn with `trim_fmt`: no trailing blanks on short lines): every column at its
/// content's width, or with `fit`, the text column narrowed (its cells wrapped) so that the
/// table takes at most `fit` columns.
fn draw(header: &[&str], rows: &[Vec<String>], text: usize, fit: Option<u16>) -> Table {
    let mut table = Table::new();
    table.load_style(STYLE).set_header(header.iter().copied());
    match fit {
        Some(width) => table
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(width),
        None => table.set_content_arrangement(ContentArrangement::Disabled),
    };
    for row in rows {
        table.add_row(row.clone());
    }
    for i in 0..header.len() {
        if let Some(c) = table.column_mut(i) {
            // Two blanks between columns (the padding and the junction's place).
            c.set_padding((0, 1));
            if i != text {
                c.set_cell_alignment(CellAlignment::Right);
                c.set_constraint(ColumnConstraint::ContentWidth);
            } else if fit.is_none() {
                c.set_constraint(ColumnConstraint::ContentWidth);
            }
        }
    }
    table
}

/// Terminal columns the widest line of `table` takes: each column's content, and two blanks
/// between columns.
fn widest(table: &Table) -> usize {
    let widths = table.column_max_content_widths();
    widths
        .iter()
        .map(|&w| usize::from(w) + 2)
        .sum::<usize>()
        .saturating_sub(2)
}

/// pstats' `func_strip_path` on a `filename:lineno(function)` label: the file's directories
/// dropped (`os.path.basename`); a label of another shape (a built-in's) is kept.
pub fn strip_dirs(label: &str) -> String {
    let mut from = 0;
    while let Some(at) = label[from..].find(':').map(|p| from + p) {
        let rest = &label[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with('(') {
            let file = &label[..at];
            let base = file.rsplit('/').next().unwrap_or(file);
            return format!("{base}{}", &label[at..]);
        }
        from = at + 1;
    }
    label.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_dirs_drops_the_directories_of_the_file_alone() {
        assert_eq!(strip_dirs("/a/b/c.py:12(f)"), "c.py:12(f)");
        assert_eq!(strip_dirs("c.py:12(f)"), "c.py:12(f)");
        assert_eq!(strip_dirs("/a/b:c/d.py:3(<lambda>)"), "d.py:3(<lambda>)");
        assert_eq!(strip_dirs("/x/y.py:1(a/b)"), "y.py:1(a/b)");
        assert_eq!(strip_dirs("<frozen os>:7(g)"), "<frozen os>:7(g)");
        assert_eq!(
            strip_dirs("{built-in method time.sleep}"),
            "{built-in method time.sleep}"
        );
    }

    fn table(label: &str, width: u16) -> String {
        let rows = [vec!["12345".to_string(), label.to_string()]];
        figures_table(&["samples", "filename:lineno(function)"], rows, 1, width)
    }

    #[test]
    fn a_table_that_fits_keeps_whole_paths_and_one_that_does_not_strips_them() {
        let label = "/a/long/directory/of/many/parts/module.py:10(work)";
        let wide = table(label, 200);
        assert!(wide.contains(label), "{wide}");
        let narrow = table(label, 40);
        assert!(narrow.contains("module.py:10(work)"), "{narrow}");
        assert!(!narrow.contains("/a/long"), "{narrow}");
        assert!(narrow.lines().all(|l| l.chars().count() <= 40), "{narrow}");
    }

    #[test]
    fn a_label_too_long_even_stripped_wraps_within_the_width() {
        let label = format!("/d/{}.py:1(f)", "m".repeat(60));
        let out = table(&label, 50);
        assert!(out.lines().all(|l| l.chars().count() <= 50), "{out}");
        assert!(out.lines().count() > 3, "{out}");
    }

    #[test]
    fn with_too_little_room_beside_the_figures_each_label_goes_above_its_row() {
        let out = table("/a/b/module.py:10(work)", 20);
        assert_eq!(
            out,
            "filename:lineno(function)\nsamples\n--------\nmodule.py:10(work)\n  12345"
        );
    }
}
