"""The event timeline of a ``Profile(timeline=True)``: every call and return, in order.

``prof.timeline`` is a :class:`Timeline`. Its events are read from the profiler when asked for
(the buffer keeps filling while the profiler is enabled); exports are written by the native
core without a Python object per event.
"""

import os
import sys

__all__ = ["Timeline", "ThreadIdent", "EVENT_NAMES"]

# The `event` column's codes: sys.setprofile's names for calls and returns, cpyquickhelper's
# EventProfiler's for memory events, "rss" for an RSS sample, and an object of a counted type
# made or freed (types=True).
EVENT_NAMES = ("call", "return", "c_call", "c_return",
               "malloc", "calloc", "realloc", "free", "realloc_free", "rss",
               "object_new", "object_free")
_OBJECT_CODES = (10, 11)
_NO_FUNCTION = 0xFFFFFFFF


class ThreadIdent(int):
    """The thread of a row of :meth:`Timeline.events`: equal to its ``threading`` ident, with
    the thread's name as ``name``. A thread started after another ended may get the same ident;
    the two are still two lanes, and ``name`` tells their events apart."""

    def __new__(cls, ident, name):
        self = super().__new__(cls, ident)
        self.name = name
        return self

    def __reduce__(self):
        return (ThreadIdent, (int(self), self.name))


class Timeline:
    """The recorded events of one profiler.

    ``len(timeline)`` events are kept (at most ``capacity`` calls, returns, memory and object
    events, and with ``rss=True`` at most as many RSS samples besides); ``dropped`` more were
    left out because the buffer was full (``when_full`` says which: ``"keep_newest"``
    overwrote the oldest, ``"keep_oldest"`` ignored the later ones). Memory and object events
    share the buffer with the calls: many of them (``types_builtins=True``) leave room for
    fewer calls.
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
        n, cap, dropped, when = self._info()[:4]
        return "<rprofile Timeline: %d events of %d, %d dropped (%s)>" % (n, cap, dropped, when)

    def _counts(self):
        """``(kept, dropped, rss_kept, rss_dropped)``: calls, returns, memory and object events
        kept and dropped, and RSS samples kept and dropped (``len()`` and ``dropped`` add both)."""
        n, _cap, dropped, _when, rss_kept, rss_dropped = self._info()
        return n - rss_kept, dropped - rss_dropped, rss_kept, rss_dropped

    def _columns(self):
        _threading_names()
        cols = self._profiler._timeline_columns()
        if cols is None:
            raise RuntimeError("the profiler records no timeline (Profile(timeline=True))")
        (time, event, depth, thread, func, caller, value1, value2, functions, threads,
         types) = cols
        return {
            "time": memoryview(time).cast("d"),
            "event": memoryview(event).cast("B"),
            "depth": memoryview(depth).cast("I"),
            "thread": memoryview(thread).cast("H"),
            "func": memoryview(func).cast("I"),
            "caller": memoryview(caller).cast("i"),
            "value1": memoryview(value1).cast("d"),
            "value2": memoryview(value2).cast("d"),
            "functions": functions,
            "threads": threads,
            "types": types,
        }

    def events(self):
        """Yields each kept event, oldest first, as a plain tuple
        ``(time, event, function, thread_ident, depth, value)``: time in seconds of the
        profiler's timer; event one of ``EVENT_NAMES``; thread_ident a :class:`ThreadIdent`
        (the ident, and the thread's ``name``; 0 for an RSS sample); function the pstats key
        ``(file, line, name)`` of the function called, returning, or running when memory was
        allocated or freed (None for an RSS sample, or memory outside every profiled call);
        value None for a call or return, the bytes of a memory event (negative when freed),
        the RSS in bytes of an ``"rss"`` sample, the type's name of an ``"object_new"`` or
        ``"object_free"`` event (``types=True``: an object of a counted type made while
        profiling, or freed)."""
        c = self._columns()
        functions, threads, types = c["functions"], c["threads"], c["types"]
        idents = [ThreadIdent(ident, name) for ident, name in threads]
        time, event, depth, thread, func = c["time"], c["event"], c["depth"], c["thread"], \
            c["func"]
        value1 = c["value1"]
        for i in range(len(time)):
            th = thread[i]
            code = event[i]
            f = func[i]
            if code in _OBJECT_CODES:
                value = types[depth[i]] if depth[i] < len(types) else None
            else:
                value = None if code < 4 else int(value1[i])
            yield (time[i], EVENT_NAMES[code],
                   None if f == _NO_FUNCTION else functions[f],
                   idents[th] if th < len(idents) else 0, depth[i], value)

    def to_dataframe(self):
        """The events as a pandas DataFrame, one row per event, with the columns of
        cpyquickhelper's EventProfiler (``time, event, name, mod, lineno, from_name, from_mod,
        from_line``) and ``thread``, ``thread_name``, ``depth``, ``value1``, ``value2``,
        ``type``. For a memory event ``value1`` is its bytes (negative when freed) and
        ``value2`` the tracked live bytes after it; for an ``"rss"`` sample ``value1`` is the RSS
        in bytes; for an ``"object_new"`` or ``"object_free"`` event (``types=True``) ``type``
        is the type's name, ``value1`` +1 or -1 and ``value2`` the type's objects made minus
        freed since the first kept event (those alive, when none was dropped); NaN (and ``""``
        for ``type``) where they do not apply. Text columns are categoricals. Built from
        arrays, not a Python object per row."""
        try:
            import numpy as np
            import pandas as pd
        except ImportError as exc:
            raise ImportError("Timeline.to_dataframe() needs pandas (%s); install it with "
                              "'pip install pandas' or 'pip install rprofile[pandas]'" % exc,
                              name="pandas") from exc

        c = self._columns()
        functions, threads = c["functions"], c["threads"]
        n = len(c["time"])
        none = len(functions)  # the index standing for "no caller"
        func = np.frombuffer(c["func"], dtype=np.uint32, count=n).astype(np.intp)
        func[func == _NO_FUNCTION] = none
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
        codes = np.frombuffer(c["event"], dtype=np.uint8, count=n)
        depth = np.frombuffer(c["depth"], dtype=np.uint32, count=n)
        types = c["types"]
        # An object event's type (its depth column holds the type's index); "" for the others.
        of_type = np.full(n, len(types), dtype=np.intp)
        objects = np.isin(codes, _OBJECT_CODES)
        of_type[objects] = np.minimum(depth[objects], len(types))
        return pd.DataFrame({
            "time": np.frombuffer(c["time"], dtype=np.float64, count=n),
            "event": pd.Categorical.from_codes(codes.astype(np.int8),
                                               categories=list(EVENT_NAMES)),
            "name": categorical(names, func),
            "mod": categorical(files, func),
            "lineno": lines[func],
            "from_name": categorical(names, caller),
            "from_mod": categorical(files, caller),
            "from_line": lines[caller],
            "thread": idents[thread],
            "thread_name": categorical([t[1] for t in threads] + [""], thread),
            "depth": depth,
            "value1": np.frombuffer(c["value1"], dtype=np.float64, count=n),
            "value2": np.frombuffer(c["value2"], dtype=np.float64, count=n),
            "type": pd.Categorical.from_codes(of_type, categories=list(types) + [""]),
        }, copy=False)

    def to_chrome_trace(self, path):
        """Writes the timeline as Chrome trace-event JSON (one complete event per call, thread
        names as metadata, and with ``memory=True`` / ``rss=True`` / ``types=True`` the counters
        ``memory`` (tracked live bytes), ``rss`` and ``objects: TYPE`` (a counted type's
        objects made minus freed since the first kept event)), for Perfetto (ui.perfetto.dev)
        and chrome://tracing."""
        _threading_names()
        self._profiler._timeline_write("chrome", os.fspath(path), _title())

    def to_speedscope(self, path):
        """Writes the timeline in speedscope's file format (an evented profile per thread),
        for https://www.speedscope.app."""
        _threading_names()
        self._profiler._timeline_write("speedscope", os.fspath(path), _title())


def _threading_names():
    # Threads are named from threading's registry, which exists once threading is imported
    # (the main thread is registered at that import).
    import threading  # noqa: F401


def _title():
    argv = getattr(sys, "argv", None) or ["python"]
    return os.path.basename(argv[0] or "python")
