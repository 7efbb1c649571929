"""A real program: docutils turning a generated reStructuredText document (nested sections,
nested lists, tables, inline markup) into HTML, again and again for the seconds given
(default 2; at least one round)."""
import sys
import time

from docutils.core import publish_string


def document(sections, depth):
    marks = "=-~^"
    out = []
    for s in range(sections):
        for d in range(depth):
            title = "Section %d.%d" % (s, d)
            out += [title, marks[d] * len(title), ""]
            out += ["Some *emphasis*, **strong** text and ``code`` with a link_.", ""]
            for i in range(4):
                out.append("  " * (i % 3) + "- item %d with *markup* number %d" % (i, d))
                out.append("")
            out += ["+-----+-----+", "| a   | b   |", "+=====+=====+", "| 1   | 2   |",
                    "+-----+-----+", ""]
    out += [".. _link: https://example.org", ""]
    return "\n".join(out)


def main(seconds):
    text = document(3, 3)
    end = time.perf_counter() + seconds
    size = 0
    while True:
        size += len(publish_string(text, writer_name="html",
                                   settings_overrides={"report_level": 5}))
        if time.perf_counter() >= end:
            return size


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
