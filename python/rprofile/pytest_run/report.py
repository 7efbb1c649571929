"""What ``pytest --rprofile`` gives at the end of a run: the merge of the tests' stats files
(``combined.prof``, as pytest-profiling names it), its HTML report (``--rprofile-html``), and
the terminal summary: where the files are, then the hottest functions (by own time) of the
slowest tests, as pstats prints them (sampled: worded as samples)."""

import io
import os

from rprofile.outputs.run import print_samples

COMBINED = "combined.prof"
HTML = "combined.html"


def _stats_class(session):
    from rprofile.stats import SampledStats, Stats

    # The sampler's files are written without Python 3.15's sampled marker (older pstats fails
    # on it), so that they are read as samples is said here.
    return SampledStats if session.sampled else Stats


def merge(session):
    """Writes the merge of the session's files, and its report if asked:
    (combined path or None, report path or None, [(node id, problem), ...])."""
    from rprofile.stats import Stats

    paths = [p for files in session.files.values() for p in files]
    if not paths:
        return None, None, []
    combined = os.path.join(session.directory, COMBINED)
    try:
        Stats(*paths).dump_stats(combined)
    except (OSError, TypeError, ValueError, EOFError) as e:
        return None, None, [("the merge", "not written: %s" % e)]
    if not session.config.option.rprofile_html:
        return combined, None, []
    html = os.path.join(session.directory, HTML)
    args = " ".join(str(a) for a in session.config.invocation_params.args)
    try:
        _stats_class(session)(combined).to_html(html, title=("pytest " + args).strip())
    except (OSError, TypeError, ValueError) as e:
        return combined, None, [("the HTML report", "not written: %s" % e)]
    return combined, html, []


def summary(session, tr):
    """The terminal summary of a run with ``--rprofile``."""
    opt = session.config.option
    here = str(session.config.invocation_params.dir)
    tr.write_sep("=", "rprofile")
    count = sum(len(files) for files in session.files.values())
    line = "%d stats file%s in %s" % (count, "" if count == 1 else "s",
                                      _shown(session.directory, here))
    if session.combined:
        line += ", merged in %s" % _shown(session.combined, here)
    if session.html:
        line += ", HTML report %s" % _shown(session.html, here)
    tr.write_line(line)
    if session.unsampled:
        unit = "phase" if session.phases == "each" else "test"
        tr.write_line("%d %s%s ended before the sampler's first read: no file"
                      % (session.unsampled, unit, "" if session.unsampled == 1 else "s"))
    by_problem = {}
    for nodeid, problem in session.problems:
        by_problem.setdefault(problem, {})[nodeid] = None  # each test once, in order
    for problem, nodeids in by_problem.items():
        nodeids = list(nodeids)
        more = " and %d more" % (len(nodeids) - 1) if len(nodeids) > 1 else ""
        tr.write_line("%s%s: %s" % (nodeids[0], more, problem))

    timed = sorted(((session.durations.get(n, 0.0), n) for n in session.files),
                   key=lambda dn: -dn[0])
    slowest = timed[:opt.rprofile_slowest]
    if not slowest:
        return
    stats_class = _stats_class(session)
    tr.write_sep("=", "rprofile: hottest functions of the %d slowest test%s"
                 % (len(slowest), "" if len(slowest) == 1 else "s"))
    for duration, nodeid in slowest:
        tr.write_sep("-", "%s (%.3f s)" % (nodeid, duration))
        out = io.StringIO()
        try:
            stats = stats_class(*session.files[nodeid], stream=out)
        except (OSError, TypeError, ValueError, EOFError) as e:
            tr.write_line("cannot read its profile: %s" % e)
            continue
        if opt.rprofile_strip_dirs:
            stats.strip_dirs()
        stats.sort_stats("tottime")
        if session.sampled:
            print_samples(stats, opt.rprofile_element_number)
        else:
            stats.print_stats(opt.rprofile_element_number)
        tr.write(out.getvalue())


def _shown(path, here):
    """A path as the user would type it: relative to where pytest was started, when inside."""
    rel = os.path.relpath(path, here)
    return path if rel.startswith("..") else rel
