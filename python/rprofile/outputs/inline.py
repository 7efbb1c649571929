"""The HTML report inside a notebook: ``Stats._repr_html_`` and the text/html of ``%rprofile``
and ``%rsample``.

The report's page (``src/report/``, the file ``to_html`` writes) goes into an
``<iframe srcdoc=...>``: its script, its styles and its URL fragment (the view it shows) stay
its own, and the notebook's page is left as it was. A profile of more than ``FUNCTIONS``
functions, or whose page would be over ``PAGE_BYTES``, is shown by its heaviest functions
(by tottime and by cumtime) and one row for the rest, so that the totals stay and the notebook
stays small; ``to_html`` writes the whole report.
"""

import os
import tempfile

from rprofile._rprofile import _write_report

# Functions shown inline, at most (about 65 bytes each, with the page's 60 KB).
FUNCTIONS = 2000
# A bigger page (a sampled run's sources, many threads' flame graphs) is narrowed as above.
PAGE_BYTES = 1_500_000
# The frame's height, pixels: the page's header and the table's heading, then rows of 20.
_CHROME, _ROW, _LOWEST, _HIGHEST = 150, 20, 360, 600


def _page(stats, title, files=(), **extras):
    """The report page's text, written by the native writer through a scratch file."""
    with tempfile.TemporaryDirectory(prefix="rprofile-") as scratch:
        path = os.path.join(scratch, "report.html")
        _write_report(path, stats, title, list(files), **extras)
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def _frame(page, title, rows, note=""):
    """The page in an iframe of a height that fits `rows` table rows (within bounds)."""
    height = max(_LOWEST, min(_HIGHEST, _CHROME + _ROW * rows))
    # In a double-quoted attribute only & and " need escaping.
    srcdoc = page.replace("&", "&amp;").replace('"', "&quot;")
    label = _escape("rprofile report: " + title)
    html = ('<iframe class="rprofile-report" title="%s" srcdoc="%s" style="width: 100%%; '
            'height: %dpx; border: 1px solid #d9d9de; border-radius: 4px;"></iframe>'
            % (label, srcdoc, height))
    if note:
        html += '<div style="font-size: 12px; color: #6b6b73;">%s</div>' % _escape(note)
    return html


def _escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _narrowed(stats, whole, why=""):
    """`stats` cut to the heaviest functions, and the note that says what was left out."""
    n = len(stats)
    notes = [why] if why else []
    if n > FUNCTIONS:
        notes.append("The %d functions with the most time of %d (the rest are one row)."
                     % (FUNCTIONS, n))
    notes.append("%s writes the whole report." % whole)
    return stats.top(FUNCTIONS), " ".join(notes)


def stats_html(stats):
    """The inline report of an ``rprofile.Stats`` (a ``SampledStats`` too), or None for data
    the report cannot show."""
    try:
        core = stats._html_core()
    except TypeError:
        return None
    title = stats._html_title()
    files = [str(f) for f in stats.files]
    note = ""
    if len(core) > FUNCTIONS:
        core, note = _narrowed(core, "to_html(path)")
    page = _page(core, title, files, sort=stats._report_sort())
    return _frame(page, title, len(core), note)


def profile_html(prof, title, thread=None, sort="tottime"):
    """The inline report of an ``rprofile.Profile`` (disabled first), with its threads, its
    memory and its timeline's call paths when it recorded them; `thread`: only that thread's
    snapshot (``outputs.report.profile_parts``); `sort`: the column its table opens sorted by."""
    from rprofile.outputs.report import profile_parts

    stats, extras = profile_parts(prof, thread)
    extras["sort"] = sort
    why = ""
    if len(stats) <= FUNCTIONS:
        page = _page(stats, title, **extras)
        if len(page) <= PAGE_BYTES:
            return _frame(page, title, len(stats))
        why = "Too big to show inline whole: the flame graphs are estimated."
    stats, note = _narrowed(stats, "The Profile's to_html(path)", why)
    # Each thread's table and the memory rows are cut alike; the timeline's call paths (one
    # flame graph per thread) are left to the estimate.
    share = max(100, FUNCTIONS // max(1, len(extras["threads"])))
    threads = [(name, core.top(share)) for name, core in extras["threads"]]
    page = _page(stats, title, threads=threads, memory=extras["memory"][:FUNCTIONS], sort=sort)
    return _frame(page, title, len(stats), note)


def sampler_html(sampler, title, sort="tottime"):
    """The inline report of a stopped ``rprofile.Sampler``: its sampled call paths, threads and
    lines; a big one as its stats' heaviest functions. `sort`: as ``profile_html``'s."""
    page = _page(None, title, sampled=sampler._samples(), sort=sort)
    core = sampler.stats()._html_core()
    if len(page) <= PAGE_BYTES:
        return _frame(page, title, len(core))
    why = "Too big to show inline whole: the flame graph is estimated, the lines left out."
    core, note = _narrowed(core, "The Sampler's to_html(path)", why)
    return _frame(_page(core, title, sort=sort), title, len(core), note)
