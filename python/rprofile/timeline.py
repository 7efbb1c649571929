"""The event timeline of a ``Profile(timeline=True)``: every call and return, in order.

``prof.timeline`` is a :class:`Timeline`. Its events are read from the profiler when asked for
(the buffer keeps filling while the profiler is enabled); exports are written by the native
core without a Python object per event.
"""

import os
import sys

__all__ = ["Timeline", "EVENT_NAMES"]

# The `event` column's codes, in the names of sys.setprofile's events.
EVENT_NAMES = ("call", "return", "c_call", "c_return")


class Timeline:
    """The recorded events of one profiler.

    ``len(timeline)`` events are kept (at most ``capacity``); ``dropped`` more were left out
    because the buffer was full (``when_full`` says which: ``"keep_newest"`` overwrote the
    oldest, ``"keep_oldest"`` ignored the later ones).
    """

    def __init__(self, profiler):
        self._profiler = profiler

    def _info(self):
        info = self._profiler._timeline_info()
        if info is None:
            raise RuntimeError("the profiler records no timeline (Profile(timeline=True))")
        return info

    def __len__(self):
        return self._info()[0]

    @property
    def capacity(self):
        return self._info()[1]

    @property
    def dropped(self):
        """Events not kept because the buffer was full."""
        return self._info()[2]

    @property
    def when_full(self):
        return self._info()[3]

    def __repr__(self):
        n, cap, dropped, when = self._info()
        return "<rprofile Timeline: %d events of %d, %d dropped (%s)>" % (n, cap, dropped, when)

    def _columns(self):
        _threading_names()
        cols = self._profiler._timeline_columns()
        if cols is None:
            raise RuntimeError("the profiler records no timeline (Profile(timeline=True))")
        time, event, depth, thread, func, caller, functions, threads = cols
        return {
            "time": memoryview(time).cast("d"),
            "event": memoryview(event).cast("B"),
            "depth": memoryview(depth).cast("I"),
            "thread": memoryview(thread).cast("H"),
            "func": memoryview(func).cast("I"),
            "caller": memoryview(caller).cast("i"),
            "functions": functions,
            "threads": threads,
        }

    def events(self):
        """Yields each kept event, oldest first, as a plain tuple
        ``(time, event, function, thread_ident, depth)``: time in seconds of the profiler's
        timer, event one of ``"call"``, ``"return"``, ``"c_call"``, ``"c_return"``, function
        the pstats key ``(file, line, name)``."""
        c = self._columns()
        functions, threads = c["functions"], c["threads"]
        idents = [t[0] for t in threads]
        time, event, depth, thread, func = c["time"], c["event"], c["depth"], c["thread"], \
            c["func"]
        for i in range(len(time)):
            th = thread[i]
            yield (time[i], EVENT_NAMES[event[i]], functions[func[i]],
                   idents[th] if th < len(idents) else 0, depth[i])

    def to_dataframe(self):
        """The events as a pandas DataFrame, one row per event, with the columns of
        cpyquickhelper's EventProfiler (``time, event, name, mod, lineno, from_name, from_mod,
        from_line``) and ``thread``, ``thread_name``, ``depth``, ``value1``, ``value2`` (memory
        values; NaN for call events). Text columns are categoricals. Built from arrays, not a
        Python object per row."""
        import numpy as np
        import pandas as pd

        c = self._columns()
        functions, threads = c["functions"], c["threads"]
        n = len(c["time"])
        none = len(functions)  # the index standing for "no caller"
        func = np.frombuffer(c["func"], dtype=np.uint32, count=n).astype(np.intp)
        caller = np.frombuffer(c["caller"], dtype=np.int32, count=n).astype(np.intp)
        caller[caller < 0] = none
        thread = np.frombuffer(c["thread"], dtype=np.uint16, count=n).astype(np.intp)
        thread = np.minimum(thread, len(threads))

        def categorical(per_function, index):
            # Text columns are categoricals (codes into the distinct values): no Python string
            # per row, and equal names compare as equal values.
            distinct = {}
            codes = np.array([distinct.setdefault(v, len(distinct)) for v in per_function],
                             dtype=np.int32)
            return pd.Categorical.from_codes(codes[index], categories=list(distinct))

        files = [f[0] for f in functions] + [""]
        names = [f[2] for f in functions] + [""]
        lines = np.array([f[1] for f in functions] + [0], dtype=np.int64)
        idents = np.array([t[0] for t in threads] + [0], dtype=np.uint64)
        return pd.DataFrame({
            "time": np.frombuffer(c["time"], dtype=np.float64, count=n),
            "event": pd.Categorical.from_codes(
                np.frombuffer(c["event"], dtype=np.uint8, count=n).astype(np.int8),
                categories=list(EVENT_NAMES)),
            "name": categorical(names, func),
            "mod": categorical(files, func),
            "lineno": lines[func],
            "from_name": categorical(names, caller),
            "from_mod": categorical(files, caller),
            "from_line": lines[caller],
            "thread": idents[thread],
            "thread_name": categorical([t[1] for t in threads] + [""], thread),
            "depth": np.frombuffer(c["depth"], dtype=np.uint32, count=n),
            "value1": np.full(n, np.nan),
            "value2": np.full(n, np.nan),
        }, copy=False)

    def to_chrome_trace(self, path):
        """Writes the timeline as Chrome trace-event JSON (one complete event per call, thread
        names as metadata), for Perfetto (ui.perfetto.dev) and chrome://tracing."""
        _threading_names()
        self._profiler._timeline_write("chrome", os.fsdecode(path), _title())

    def to_speedscope(self, path):
        """Writes the timeline in speedscope's file format (an evented profile per thread),
        for https://www.speedscope.app."""
        _threading_names()
        self._profiler._timeline_write("speedscope", os.fsdecode(path), _title())


def _threading_names():
    # Threads are named from threading's registry, which exists once threading is imported
    # (the main thread is registered at that import).
    import threading  # noqa: F401


def _title():
    argv = getattr(sys, "argv", None) or ["python"]
    return os.path.basename(argv[0] or "python")
