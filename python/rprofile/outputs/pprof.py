"""pprof exports of a profiler (the writing is native: ``src/pprof/``).

``write_profile(prof, path)`` is ``Profile.dump_pprof`` and ``python -m rprofile --pprof``:
a timeline that kept every event gives the real call paths; otherwise the stats' caller
edges are written, whose totals are complete, per thread (labelled) with ``threads=True``.
``Stats.dump_pprof`` and ``Sampler.dump_pprof`` call the native writer themselves.
"""

from rprofile._rprofile import _write_pprof
from rprofile.outputs.report import thread_cores


def write_profile(prof, path, title=None):
    """Writes `prof` (an ``rprofile.Profile``, disabled first as ``create_stats`` does) as a
    gzipped pprof profile at `path`."""
    prof.create_stats()
    comments = [title] if title else []
    # With subprocesses, this process and its children added up (the timeline is this one's).
    merged = prof._merged()
    info = None if merged else prof._timeline_info()
    # info: (kept, capacity, dropped, when_full, rss kept, rss dropped); RSS samples are not
    # calls, so only dropped events make the paths incomplete.
    if info is not None and info[2] - info[5] == 0:
        paths = prof._timeline_paths()
        if paths is not None and len(paths):
            _write_pprof(path, paths=paths, comments=comments)
            return
    stats, merged = prof._result()  # the model is built only when the stats are written
    if stats is None:
        raise TypeError("this profile holds data of a shape pprof cannot show")
    # threads=True: each thread's edges under its name (the label `thread`).
    threads = {} if merged else thread_cores(prof)
    if len(threads) > 1:
        _write_pprof(path, stats, threads=list(threads.items()), comments=comments)
        return
    _write_pprof(path, stats, comments=comments)
