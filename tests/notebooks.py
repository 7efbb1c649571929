"""Notebooks executed as Jupyter executes them: `nbclient` runs each cell in an `ipykernel`
kernel of this interpreter (a kernel spec of its own, so that no kernel installed elsewhere is
picked), and the executed notebook's outputs are what a notebook would show and save.
"""

import json
import os
import sys

import nbformat
from nbclient import NotebookClient

KERNEL = "rprofile-tests"


def execute(cells, cwd, timeout=180):
    """The notebook of `cells` (code), executed in `cwd` (which also gets the kernel spec)."""
    spec = os.path.join(cwd, "jupyter", "kernels", KERNEL)
    os.makedirs(spec, exist_ok=True)
    with open(os.path.join(spec, "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f",
                            "{connection_file}"],
                   "display_name": "rprofile tests", "language": "python"}, f)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.path.join(cwd, "jupyter")
    try:
        NotebookClient(nb, timeout=timeout, kernel_name=KERNEL,
                       resources={"metadata": {"path": str(cwd)}}).execute()
    finally:
        if old is None:
            del os.environ["JUPYTER_PATH"]
        else:
            os.environ["JUPYTER_PATH"] = old
    return nb


def outputs(nb, cell):
    """The outputs of cell number `cell`."""
    return nb.cells[cell].outputs


def html_page(nb, title="notebook"):
    """A page holding every text/html output of `nb` in order, as a notebook shows them (each
    in a div of its own), under a style and a heading of the page's own."""
    parts = []
    for i, c in enumerate(nb.cells):
        for o in c.outputs:
            html = o.get("data", {}).get("text/html")
            if html is not None:
                parts.append('<div class="output" data-cell="%d">%s</div>' % (i, html))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>%s</title>"
            "<style>body { font-family: serif; color: rgb(1, 2, 3); }</style></head>"
            "<body><h1 id='notebook'>%s</h1>%s</body></html>" % (title, title, "".join(parts)))
