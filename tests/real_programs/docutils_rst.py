"""A docutils conversion of a generated reStructuredText document to HTML: nested sections,
nested lists and tables, so the parser's and the writer's visitors recurse. Run as a program
(`python docutils_rst.py`); the entry function is `main`, which imports the package too, so
that it holds the whole run (the tests check its share)."""


def nested_list(depth, indent=""):
    """A bullet list nested `depth` deep, with inline markup in each item."""
    lines = []
    for i in range(3):
        lines.append("%s* item *%d* at depth **%d** with ``code``" % (indent, i, depth))
        if depth:
            lines.append("")
            lines.extend(nested_list(depth - 1, indent + "  "))
            lines.append("")
    return lines


def document(sections):
    out = ["=========", "Generated", "=========", ""]
    for s in range(sections):
        title = "Section %d" % s
        out += [title, "=" * len(title), "", "Some text with a `link <https://example.org>`_.",
                ""]
        for t in range(3):
            sub = "Part %d.%d" % (s, t)
            out += [sub, "-" * len(sub), ""]
            out += nested_list(2)
            out += ["", "+-----+-----+", "| a   | b   |", "+=====+=====+",
                    "| %d   | %d   |" % (s, t), "+-----+-----+", ""]
    return "\n".join(out)


def main():
    import docutils.core

    source = document(4)
    html = docutils.core.publish_string(source, writer_name="html",
                                        settings_overrides={"report_level": 5})
    return len(html)


if __name__ == "__main__":
    main()
