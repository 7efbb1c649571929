//! The flame graphs of a report, drawn by inferno as interactive SVGs (zoom, search, hover
//! details come with them) from folded stacks: an icicle (callers above their callees), frames
//! coloured by inferno's Python palette, or, comparing two profiles, by how much each path grew
//! (red) or shrank (blue).

use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self, Direction, Options, TextTruncateDirection};

/// How the counts of folded stacks read.
#[derive(Clone, Debug)]
pub struct Scale {
    /// What a displayed count is: "samples", "µs".
    pub count_name: String,
    /// Displayed count per folded count.
    pub factor: f64,
}

fn options(title: &str, subtitle: Option<String>, scale: &Scale) -> Options<'static> {
    let mut opt = Options::default();
    opt.title = title.to_string();
    opt.subtitle = subtitle;
    opt.count_name = scale.count_name.clone();
    opt.factor = scale.factor;
    opt.direction = Direction::Inverted;
    opt.colors = Palette::Multi(MultiPalette::Python);
    // A function keeps its colour from one graph to the next.
    opt.hash = true;
    // Labels are `name (file:line)`: the name is what must stay readable in a narrow frame.
    opt.text_truncate_direction = TextTruncateDirection::Right;
    opt
}

/// The SVG of folded stacks as text lines, `stack COUNT`, or `stack BEFORE AFTER` for a
/// comparison (frames as wide as after; red where a path grew, blue where it shrank), or `None`
/// when there is nothing to draw.
pub fn svg(
    lines: &[String],
    title: &str,
    subtitle: Option<String>,
    scale: &Scale,
) -> Option<String> {
    if lines.is_empty() {
        return None;
    }
    render(lines, options(title, subtitle, scale))
}

/// Folded stacks as the lines `svg` draws.
pub fn lines(stacks: &[(String, u64)]) -> Vec<String> {
    stacks.iter().map(|(s, n)| format!("{s} {n}")).collect()
}

fn render(lines: &[String], mut opt: Options<'_>) -> Option<String> {
    let mut out = Vec::new();
    flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut out).ok()?;
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scale() -> Scale {
        Scale {
            count_name: "samples".into(),
            factor: 1.0,
        }
    }

    #[test]
    fn an_icicle_with_a_frame_per_path() {
        let stacks = [
            ("main (p.py:1);f (p.py:5)".to_string(), 3),
            ("main (p.py:1);g (p.py:9);f (p.py:5)".to_string(), 1),
        ];
        let s = svg(&lines(&stacks), "t & u", Some("sub".into()), &scale()).unwrap();
        assert!(s.contains("var inverted = true"));
        assert!(s.contains("t &amp; u"));
        // all, main, f, g, f under g.
        assert_eq!(
            s.matches("<g>").count() - s.matches("<g id=").count(),
            5,
            "{s}"
        );
        assert!(s.contains("f (p.py:5) (3 samples, 75.00%)"));
        assert!(svg(&[], "t", None, &scale()).is_none());
    }

    #[test]
    fn a_comparison_colours_by_change() {
        let stacks = ["main;slow 10 40".to_string(), "main;same 10 10".to_string()];
        let s = svg(&stacks, "t", None, &scale()).unwrap();
        assert!(s.contains("slow (40 samples, 80.00%; +60.00%)"), "{s}");
        assert!(s.contains("same (10 samples, 20.00%; 0.00%)"));
    }
}
