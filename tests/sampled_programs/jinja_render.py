"""A real program: Jinja2 compiling and rendering templates with inheritance, macros (one of
them recursive), loops, filters and includes, again and again for the seconds given
(default 2; at least one round)."""
import sys
import time

import jinja2

TEMPLATES = {
    "base.html": """<html><head><title>{% block title %}{% endblock %}</title></head>
<body>{% block body %}{% endblock %}</body></html>""",
    "macros.html": """{% macro tree(node) -%}
<li>{{ node.name|title }}{% if node.children %}<ul>{% for c in node.children %}{{ tree(c) }}{% endfor %}</ul>{% endif %}</li>
{%- endmacro %}
{% macro row(item) -%}<tr><td>{{ item.id }}</td><td>{{ item.label|e }}</td><td>{{ "%.2f"|format(item.price) }}</td></tr>{%- endmacro %}""",
    "footer.html": """<footer>{{ items|length }} items, {{ items|sum(attribute='price')|round(2) }} in all</footer>""",
    "page.html": """{% extends "base.html" %}{% import "macros.html" as m %}
{% block title %}{{ title|upper }}{% endblock %}
{% block body %}<ul>{{ m.tree(root) }}</ul>
<table>{% for item in items if item.price > 1 %}{{ m.row(item) }}{% else %}<tr><td>none</td></tr>{% endfor %}</table>
{% include "footer.html" %}{% endblock %}""",
}


def make_tree(depth, width):
    if depth == 0:
        return {"name": "leaf", "children": []}
    return {"name": "node %d" % depth,
            "children": [make_tree(depth - 1, width) for _ in range(width)]}


def render_all(env, rounds):
    items = [{"id": i, "label": "<item %d>" % i, "price": i * 0.75} for i in range(60)]
    root = make_tree(4, 3)
    size = 0
    for _ in range(rounds):
        size += len(env.get_template("page.html").render(title="report", items=items, root=root))
    return size


def main(seconds):
    end = time.perf_counter() + seconds
    size = 0
    while True:
        env = jinja2.Environment(loader=jinja2.DictLoader(TEMPLATES), autoescape=True)
        size += render_all(env, 10)
        if time.perf_counter() >= end:
            return size


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
