//! An interactive flame graph (SVG, with inferno's zoom, search and hover details) of the folded
//! stacks, drawn by the `inferno` crate: one tower per thread, a frame per function (as the HTML
//! report's graph) or, when asked, per function and line, colored by inferno's Python palette
//! (standard library, site-packages, the program). It is an icicle, callers above callees, so
//! the SVG opens on the frames: drawn bottom-up, a deep stack (an import's) would leave the top
//! of a tall picture empty, and that top is where a browser opens it.

use std::io::{self, Write};

use inferno::flamegraph::color::{MultiPalette, Palette};
use inferno::flamegraph::{self, Direction, Options};

use super::collapsed::{folded, Frames};
use super::profile::{Mode, Profile};
use crate::core::format::xml_escaped;

fn mode_words(mode: Mode) -> &'static str {
    match mode {
        Mode::Wall => "wall-clock",
        Mode::Cpu => "CPU",
        Mode::Gil => "GIL",
    }
}

/// The graph's title: what was sampled, how, and how many samples it shows.
pub fn title(p: &Profile, program: &str) -> String {
    let n = p.samples();
    let s = if n == 1 { "" } else { "s" };
    format!(
        "{program}: {n} {} sample{s} ({} mode)",
        mode_words(p.mode),
        p.mode.name()
    )
}

fn subtitle(p: &Profile, by: Frames) -> String {
    let threads = p.threads.iter().filter(|t| t.samples > 0).count();
    let s = if threads == 1 { "" } else { "s" };
    let rate = if p.interval > 0.0 {
        format!(" at {:.0} Hz", 1.0 / p.interval)
    } else {
        String::new()
    };
    let frames = match by {
        Frames::Lines => "a frame per line",
        Frames::Functions => "a frame per function",
    };
    format!("{threads} thread{s}, {:.3} s{rate}, {frames}", p.duration)
}

/// Writes the flame graph of the run of `program` (a script name, or `pid N`), frames `by`
/// function or line. A run with no sample gets a small SVG saying so, where inferno would
/// refuse.
pub fn write_flamegraph(
    w: &mut impl Write,
    p: &Profile,
    program: &str,
    by: Frames,
) -> io::Result<()> {
    let stacks = folded(p, by);
    if stacks.is_empty() {
        return write_empty(w, &title(p, program));
    }
    let lines: Vec<String> = stacks.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let mut opt = Options::default();
    opt.title = title(p, program);
    opt.subtitle = Some(subtitle(p, by));
    opt.direction = Direction::Inverted;
    opt.count_name = "samples".into();
    opt.colors = Palette::Multi(MultiPalette::Python);
    // A function keeps its color from one run's graph to the next.
    opt.hash = true;
    flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), w)
}

fn write_empty(w: &mut impl Write, title: &str) -> io::Result<()> {
    write!(
        w,
        "<?xml version=\"1.0\" standalone=\"no\"?>\n\
         <svg version=\"1.1\" width=\"1200\" height=\"90\" viewBox=\"0 0 1200 90\" \
         xmlns=\"http://www.w3.org/2000/svg\">\n\
         <text x=\"600\" y=\"30\" text-anchor=\"middle\" font-size=\"17\" \
         font-family=\"Verdana\">{}</text>\n\
         <text x=\"600\" y=\"60\" text-anchor=\"middle\" font-size=\"12\" \
         font-family=\"Verdana\">No samples were collected.</text>\n</svg>\n",
        xml_escaped(title)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::profile::tests::{function, sample, small, Refusing};

    fn svg(p: &Profile, program: &str) -> String {
        let mut out = Vec::new();
        write_flamegraph(&mut out, p, program, Frames::Lines).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn an_svg_naming_the_mode_the_samples_and_every_frame() {
        let out = svg(&small(), "prog.py");
        assert!(out.starts_with("<?xml"), "{}", &out[..100]);
        assert!(out.trim_end().ends_with("</svg>"));
        assert!(out.contains("prog.py: 6 wall-clock samples (wall mode)"));
        assert!(out.contains("2 threads"));
        for frame in [
            "MainThread (tid 100)",
            "Thread (tid 101)",
            "main (prog.py:2)",
            "f (prog.py:11)",
            "f (prog.py:12)",
            "g (prog.py:21)",
            "run (prog.py:31)",
        ] {
            assert!(out.contains(frame), "{frame}");
        }
        // inferno's script: search and zoom.
        assert!(out.contains("function search("));
        assert!(out.contains("function zoom("));
    }

    #[test]
    fn by_default_a_frame_per_function_in_an_icicle() {
        let mut out = Vec::new();
        write_flamegraph(&mut out, &small(), "prog.py", Frames::Functions).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("var inverted = true"));
        assert!(out.contains("a frame per function"));
        assert!(out.contains("f (prog.py:10) (4 samples"), "{out}");
        assert!(!out.contains("prog.py:11"));
        let lines = svg(&small(), "prog.py");
        assert!(lines.contains("a frame per line") && lines.contains("var inverted = true"));
    }

    #[test]
    fn names_are_escaped_and_recursion_is_drawn() {
        let mut p = Profile::new(0.01, Mode::Gil);
        let f = function(&mut p, "<string>", 1, "a&b;<\u{3bb}> \"q\"");
        let t = p.thread(3, 3);
        sample(&mut p, t, &[(f, 1); 4], true);
        let out = svg(&p, "pid <9>");
        assert!(out.contains("pid &lt;9&gt;: 1 GIL sample (gil mode)"));
        assert!(out.contains("a&amp;b:&lt;\u{3bb}&gt;"));
        assert!(!out.contains("a&b"));
    }

    #[test]
    fn an_empty_run_is_a_valid_svg_saying_so() {
        let out = svg(&Profile::new(0.001, Mode::Cpu), "x & y");
        assert!(out.contains("x &amp; y: 0 CPU samples (cpu mode)"));
        assert!(out.contains("No samples were collected."));
        assert!(out.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn a_writers_error_comes_back_with_its_os_code() {
        let e = write_flamegraph(&mut Refusing(28), &small(), "t", Frames::Functions).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28));
        let e = write_flamegraph(
            &mut Refusing(28),
            &Profile::new(1.0, Mode::Wall),
            "t",
            Frames::Functions,
        );
        assert_eq!(e.unwrap_err().raw_os_error(), Some(28));
    }
}
