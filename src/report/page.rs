//! The report's HTML: one file, everything inline (style, data, script), opening from disk
//! with no server and no network. The page (`page.html`, `page.css`, `page.js`, written by
//! hand for this report) is filled in with the title and the JSON data.

use std::io::{self, Write};

use crate::core::format::xml_escaped;

const TEMPLATE: &str = include_str!("page.html");
const CSS: &str = include_str!("page.css");
const JS: &str = include_str!("page.js");
/// The time view, a function `page.js` calls.
const TIME_JS: &str = include_str!("time.js");

/// Writes the page with `title` and `data` (a JSON text in which `<` is escaped).
pub fn write_page(w: &mut impl Write, title: &str, data: &[u8]) -> io::Result<()> {
    let generator = concat!("rprofile ", env!("CARGO_PKG_VERSION"));
    let mut rest = TEMPLATE;
    while let Some(at) = rest.find("{{") {
        w.write_all(&rest.as_bytes()[..at])?;
        let after = &rest[at + 2..];
        let end = after.find("}}").unwrap_or(after.len());
        match &after[..end] {
            "TITLE" => w.write_all(xml_escaped(title).as_bytes())?,
            "GENERATOR" => w.write_all(generator.as_bytes())?,
            "CSS" => w.write_all(CSS.as_bytes())?,
            "JS" => {
                w.write_all(TIME_JS.as_bytes())?;
                w.write_all(JS.as_bytes())?
            }
            "DATA" => w.write_all(data)?,
            other => w.write_all(other.as_bytes())?,
        }
        rest = after.get(end + 2..).unwrap_or("");
    }
    w.write_all(rest.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_is_filled_and_nothing_comes_from_elsewhere() {
        let mut out = Vec::new();
        write_page(&mut out, "a <b> & c", b"{\"x\":1}").unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(page.contains("<title>a &lt;b&gt; &amp; c</title>"));
        assert!(page
            .contains("<script type=\"application/json\" id=\"rprofile-data\">{\"x\":1}</script>"));
        assert!(!page.contains("{{"));
        // No script, style or font is fetched: nothing names another place.
        for word in ["src=\"http", "href=\"http", "@import", "url("] {
            assert!(!page.contains(word), "{word}");
        }
        for js in [JS, TIME_JS] {
            assert!(!js.contains("</script") && !js.contains("<script") && !js.contains("<!--"));
        }
    }
}
