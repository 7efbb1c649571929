"""A Jinja2 render loop: a page template (templates/) that extends a layout, imports macros
(one of them recursive, for a tree of sections), loops over rows and includes a footer, rendered
many times. Run as a program (`python jinja_loop.py`); the entry function is `main`, which
imports the package too, so that it holds the whole run (the tests check its share).
`--strings`: the same templates loaded from strings (a DictLoader): every template's file is
then `<template>`, and pstats keeps one row of two functions of one file, line and name, so a
caller's edge is lost with the other row."""

import os
import sys

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


def tree(depth):
    """Sections nested `depth` deep, two children each."""
    children = [tree(depth - 1) for _ in range(2)] if depth else []
    return {"title": "section %d" % depth, "children": children}


def main():
    import jinja2

    loader = jinja2.FileSystemLoader(TEMPLATES)
    if "--strings" in sys.argv:
        loader = jinja2.DictLoader({name: loader.get_source(None, name)[0]
                                    for name in loader.list_templates()})
    env = jinja2.Environment(loader=loader, autoescape=True)
    page = env.get_template("page.html")
    rows = [[i * 10 + j for j in range(8)] for i in range(30)]
    sections = tree(4)
    size = 0
    for i in range(150):
        size += len(page.render(title="report %d" % i, rows=rows, tree=sections, now=i))
    return size


if __name__ == "__main__":
    main()
