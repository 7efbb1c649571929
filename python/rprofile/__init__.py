"""rprofile: a deterministic profiler with a Rust core, a drop-in for ``cProfile``.

``rprofile.Profile`` is used exactly as ``cProfile.Profile``; its stats files are the
marshal dumps that ``pstats`` and the tools built on it read.
"""

import sys
import time

from rprofile._rprofile import Profiler as _Profiler
from rprofile._rprofile import profiler_entry, profiler_subentry

__all__ = ["run", "runctx", "Profile", "Stats", "SortKey", "label", "profiler_entry",
           "profiler_subentry", "MemoryStat", "TypeStat", "Sampler"]

__version__ = "0.1.0"


def __getattr__(name):
    # Stats and SortKey come from rprofile.stats, imported on first use so that importing
    # rprofile to profile stays light (pstats, re and dataclasses are not needed for that).
    if name in ("Stats", "SortKey"):
        from rprofile import stats

        return getattr(stats, name)
    if name == "Sampler":
        from rprofile.sampling import Sampler

        return Sampler
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def load_ipython_extension(ip):
    """``%load_ext rprofile`` in IPython or Jupyter: the magics ``%rprofile``/``%%rprofile``
    (``%prun`` with this profiler) and ``%rsample``/``%%rsample`` (the sampler)."""
    from rprofile._magics import load

    load(ip, Profile)


def run(statement, filename=None, sort=-1):
    """Run statement under the profiler, then print the stats (or save them to filename)."""
    _run_and_show(lambda prof: prof.run(statement), filename, sort)


def runctx(statement, globals, locals, filename=None, sort=-1):
    """Run statement under the profiler with the given globals and locals, then print the
    stats (or save them to filename)."""
    _run_and_show(lambda prof: prof.runctx(statement, globals, locals), filename, sort)


def _run_and_show(how, filename, sort):
    # What cProfile's run()/runctx() do, through `profile` (not imported: deprecated in 3.15):
    # SystemExit ends the statement quietly; the stats are shown whatever happened.
    prof = Profile()
    try:
        how(prof)
    except SystemExit:
        pass
    finally:
        if filename is not None:
            prof.dump_stats(filename)
        else:
            prof.print_stats(sort)


class MemoryStat(tuple):
    """One function's allocations: (allocations, allocated, freed, net, peak), bytes."""

    __slots__ = ()
    _fields = ("allocations", "allocated", "freed", "net", "peak")

    def __new__(cls, allocations, allocated, freed, net, peak):
        return tuple.__new__(cls, (allocations, allocated, freed, net, peak))

    allocations = property(lambda self: self[0])
    allocated = property(lambda self: self[1])
    freed = property(lambda self: self[2])
    net = property(lambda self: self[3])
    peak = property(lambda self: self[4])

    def __repr__(self):
        return "MemoryStat(%s)" % ", ".join("%s=%r" % kv for kv in zip(self._fields, self))


class TypeStat(tuple):
    """One type's objects while profiling: (created, destroyed, alive, peak, peak_time,
    older_destroyed, functions, stacks). ``alive`` = created - destroyed, of the objects
    created while tracking; ``peak`` is the most alive at once, first reached ``peak_time``
    seconds after tracking started; ``older_destroyed`` counts objects made before tracking and
    destroyed during it; ``functions`` is ``{(file, line, name): (created, alive)}``, the
    function on top of the profiled stack when each object was made; ``stacks`` is ``{(func,
    ...): alive}``, the whole profiled call stacks (outermost first, as a traceback reads) that
    made the objects still alive, the 20 that made most (taken for classes made on the heap and
    for the types named in ``types_only``; empty for the built-ins ``types_builtins`` adds)."""

    __slots__ = ()
    _fields = ("created", "destroyed", "alive", "peak", "peak_time", "older_destroyed",
               "functions", "stacks")

    def __new__(cls, created, destroyed, alive, peak, peak_time, older_destroyed, functions,
                stacks):
        return tuple.__new__(cls, (created, destroyed, alive, peak, peak_time, older_destroyed,
                                   functions, stacks))

    created = property(lambda self: self[0])
    destroyed = property(lambda self: self[1])
    alive = property(lambda self: self[2])
    peak = property(lambda self: self[3])
    peak_time = property(lambda self: self[4])
    older_destroyed = property(lambda self: self[5])
    functions = property(lambda self: self[6])
    stacks = property(lambda self: self[7])

    def __repr__(self):
        return "TypeStat(%s)" % ", ".join("%s=%r" % kv for kv in zip(self._fields, self))


class Profile(_Profiler):
    """Profile(timer=None, timeunit=0.0, subcalls=True, builtins=True, *, bias=0.0)

    Builds a profiler object using the specified timer function.
    The default timer is a fast built-in one based on real time.
    For custom timer functions returning integers, timeunit can
    be a float specifying a scale (i.e. how long each integer unit
    is, in seconds). A timer may also return a tuple or list of numbers,
    whose sum is the time (as the ``profile`` module accepts).

    ``bias`` is the calibration bias of the ``profile`` module: seconds
    subtracted for each profile event (see ``calibrate()``).

    ``timer`` may also name a native clock: ``"wall"`` (the default),
    ``"cpu"`` (process CPU time) or ``"thread_cpu"`` (the running thread's
    CPU time), read without a Python call per event.

    With ``threads=True`` every thread is profiled on its own call stack
    (threads running at ``enable()`` and threads started later), all added
    together into one profile; ``thread_stats()`` gives them apart.

    With ``async_aware=True`` a coroutine's run from its first
    start to its final return is one call: its cumtime is that whole span,
    awaits included, its tottime leaves out the time it was suspended, and the
    coroutines it awaits are its callees. Generators are counted as cProfile
    counts them.

    With ``timeline=True`` every call and return (Python and built-in
    functions) is also recorded with its time, thread and depth, in a buffer
    of ``buffer_size`` events allocated up front; ``when_full`` is
    ``"keep_newest"`` (a ring, the default) or ``"keep_oldest"``. Read it
    through ``timeline`` (events, DataFrame, Chrome trace, speedscope).

    With ``memory=True`` every allocation and free of the three allocator
    domains is charged to a function while the profiler is enabled; see
    ``memory_stats()``. With ``timeline=True`` too, each allocation and free
    of a tracked block is also an event on the timeline.

    With ``rss=True`` (and ``timeline=True``, default timer) a background
    thread reads the process's resident set size every ``rss_interval``
    seconds (default 0.01) while the profiler is enabled and puts it on the
    timeline when it moved by at least ``rss_trigger`` bytes (default: a
    page) since the last sample kept.

    With ``types=True`` (Python 3.13+) every object created and destroyed while
    the profiler is enabled is counted by type and by the function that made it
    (through the interpreter's reference tracer); see ``types_stats()`` and
    ``print_types()``. Built-in types (int, str, tuple, dict, ...) are left out
    unless ``types_builtins=True``; ``types_only`` (a list of names, qualified
    ``pkg.mod.Class`` or plain ``Class``) counts those types alone;
    ``types_gc=True`` runs a full collection at ``disable()`` so that garbage in
    reference cycles counts as destroyed, not alive. With ``calls=False`` no call
    is profiled (no profile hook runs): each object is charged to the frames the
    interpreter runs when it is made, at the least cost, and there are no stats
    of calls.

    With ``subprocesses=True`` (or a folder's path) every Python process started
    while the profiler is enabled (``subprocess``, ``multiprocessing``,
    ``ProcessPoolExecutor``, ``os.fork()``) is profiled with the same clock and
    flags and saves its stats in a file of its own in ``processes_dir``;
    ``create_stats()`` (so ``stats``, ``dump_stats()``, ``print_stats()``) adds
    up this process and the children that saved so far, and ``processes()``
    lists them.
    """

    # The per-event work is in the native base class; what follows is the same thin layer that
    # cProfile.Profile puts over _lsprof.Profiler, so the calls it makes (and so the rows they
    # add to a profile) are the same.

    def print_stats(self, sort=-1):
        # rprofile.Stats prints what pstats.Stats prints (cProfile's choice), faster.
        from rprofile.stats import Stats

        if self._options().get("calls") is False:
            raise ValueError("this profiler counts objects alone (calls=False): it has no "
                             "stats of calls; print_types() prints what it counted")

        if sys.version_info >= (3, 13) and isinstance(sort, tuple):
            Stats(self).strip_dirs().sort_stats(*sort).print_stats()
        else:
            Stats(self).strip_dirs().sort_stats(sort).print_stats()
        if self.subprocesses:
            self.print_processes()

    def dump_stats(self, file):
        import marshal

        with open(file, "wb") as f:
            self.create_stats()
            snapshot = self.__dict__.get("_snapshot")
            if snapshot is not None:
                # Written from the native totals, without building the dict first.
                f.write(snapshot.marshal())
            else:
                marshal.dump(self.stats, f)

    def create_stats(self):
        self.disable()
        self.snapshot_stats()

    def snapshot_stats(self):
        # The dict is built when `stats` is first read (pstats reads it; dump_stats need not).
        self.__dict__.pop("stats", None)
        self.__dict__["_snapshot"] = self._take_snapshot()
        if self.subprocesses:
            from rprofile.children import traced as _traced_children

            merged = _traced_children.merged_stats(self, self.__dict__["_snapshot"])
            if merged is not None:
                self.stats = merged

    def _result(self):
        """What the outputs read after create_stats(): (the stats model, merged), merged when
        children's stats were added in (or a dict was set), so only this process's snapshot
        has its timeline and threads. The model is None for a dict of a shape it cannot hold."""
        if not self._merged():
            return self.__dict__["_snapshot"].stats_core(), False
        from rprofile._rprofile import StatsCore

        return StatsCore.from_dict(self.stats), True

    def _merged(self):
        """Whether the stats of the last create_stats() are not this process's snapshot
        (children's added in, or a dict set): then the timeline and threads are not theirs."""
        return self.__dict__.get("_snapshot") is None

    def _stats_source(self):
        """What rprofile.Stats loads after create_stats(): the native snapshot while no dict
        was built or set (children's stats added in set one)."""
        snapshot = self.__dict__.get("_snapshot")
        return self.stats if snapshot is None else snapshot

    @property
    def stats(self):
        """The stats dict of the last create_stats()/snapshot_stats(), as cProfile's."""
        d = self.__dict__
        if "stats" not in d:
            snapshot = d.pop("_snapshot", None)
            if snapshot is None:
                raise AttributeError("%r object has no attribute 'stats'" % type(self).__name__)
            d["stats"] = snapshot.to_dict()
        return d["stats"]

    @stats.setter
    def stats(self, value):
        self.__dict__.pop("_snapshot", None)
        self.__dict__["stats"] = value

    @stats.deleter
    def stats(self):
        if self.__dict__.pop("stats", None) is None and \
                self.__dict__.pop("_snapshot", None) is None:
            raise AttributeError("stats")

    def memory_stats(self):
        """Bytes allocated per function by a ``memory=True`` profiler: ``{(file, line, name):
        MemoryStat(allocations, allocated, freed, net, peak)}``, each allocation (of any of the
        three allocator domains) charged to the function on top of the profiled thread's stack,
        each free to the function that allocated the block; ``peak`` is the highest its net
        reached. None without memory tracking.

        With ``subprocesses``, the children that saved are added in (their peaks are not
        simultaneous: a function's is the highest of one process's)."""
        rows = self._memory_stats()
        if rows is None:
            return None
        if self.subprocesses:
            from rprofile.children import traced as _traced_children

            rows = list(rows) + list(_traced_children.children_memory(self))
        out = {}
        for func, *values in rows:
            prev = out.get(func)
            if prev is not None:
                # Distinct functions with one label (two lambdas on a line) share a row, as
                # in the stats; their peaks are not simultaneous, so the larger is kept.
                values = [a + b for a, b in zip(prev[:4], values[:4])] + [max(prev[4], values[4])]
            out[func] = MemoryStat(*values)
        return out

    def types_stats(self):
        """Objects by type of a ``types=True`` profiler: ``{type name: TypeStat(created,
        destroyed, alive, peak, peak_time, older_destroyed, functions, stacks)}`` (see
        ``TypeStat``),
        the name qualified (``module.qualname``; a builtin's alone), as first seen. None
        without type tracking. Types of one name (a class defined twice) share a row. With
        ``subprocesses``, the children that saved are added in (a peak is the highest of one
        process's)."""
        rows = self._types_stats()
        if rows is None:
            return None
        if self.subprocesses:
            from rprofile.children import traced as _traced_children

            rows = list(rows) + list(_traced_children.children_types(self))
        out = {}
        for name, created, destroyed, peak, peak_time, older, funcs, by_stack in rows:
            functions = {}
            for func, made, gone in funcs:
                was = functions.get(func, (0, 0))
                functions[func] = (was[0] + made, was[1] + made - gone)
            stacks = {}
            for alive, stack in by_stack:
                stacks[stack] = stacks.get(stack, 0) + alive  # two keys of one label
            prev = out.get(name)
            if prev is not None:
                for func, (made, alive) in prev.functions.items():
                    was = functions.get(func, (0, 0))
                    functions[func] = (was[0] + made, was[1] + alive)
                for stack, alive in prev.stacks.items():
                    stacks[stack] = stacks.get(stack, 0) + alive
                created, destroyed = created + prev.created, destroyed + prev.destroyed
                older += prev.older_destroyed
                if prev.peak >= peak:
                    peak, peak_time = prev.peak, prev.peak_time
            stacks = dict(sorted(stacks.items(), key=lambda kv: -kv[1])[:20])
            out[name] = TypeStat(created, destroyed, created - destroyed, peak, peak_time,
                                 older, functions, stacks)
        return out

    def print_types(self, sort="alive", limit=20, file=None):
        """Prints the counted types (``types=True``), by `sort` (``alive``, ``created``,
        ``destroyed``, ``peak`` or ``name``) and at most `limit` of them, each with the
        functions that made most of its objects still alive."""
        from rprofile.outputs.types import print_types

        print_types(self.types_stats() or {}, sort=sort, limit=limit, file=file)

    def dump_types(self, path):
        """Writes the counted types (``types=True``) at `path` as JSON: ``{"types": [{"name",
        "created", "destroyed", "alive", "peak", "peak_time", "older_destroyed", "functions":
        [{"file", "line", "function", "created", "alive"}], "stacks": [{"alive", "stack":
        [{"file", "line", "function"}]}]}]}``, most objects alive first. ValueError without type
        tracking."""
        from rprofile.outputs.types import dump_types

        types = self.types_stats()
        if types is None:
            raise ValueError("dump_types() needs a profiler made with types=True")
        dump_types(types, path)

    def to_html(self, path, title=None, *, sort=None):
        """Writes one self-contained HTML report of this profile at `path` (disabling it, as
        ``create_stats`` does): the table, callers and callees, a flame graph (the timeline's
        real call paths with ``timeline=True``, else estimated from the caller graph), the
        threads with ``threads=True`` and memory with ``memory=True``. `sort`: a pstats sort
        key (as ``print_stats`` takes) whose column the table opens sorted by; tottime by
        default."""
        from rprofile.outputs.report import write_profile
        from rprofile.stats import report_sort

        write_profile(self, path, title, report_sort(sort))

    def dump_pprof(self, path, title=None):
        """Writes this profile (disabling it, as ``create_stats`` does) as a gzipped pprof
        profile at `path`, for ``go tool pprof``, Pyroscope or Parca: values ``calls/count`` and
        ``cpu/nanoseconds`` (the profiler's time, wall by default). With ``timeline=True`` and
        no event dropped, one sample per real call path; otherwise one per caller edge
        (``Stats.dump_pprof``)."""
        from rprofile.outputs.pprof import write_profile

        write_profile(self, path, title)

    @property
    def timeline(self):
        """The recorded events (``rprofile.timeline.Timeline``) of a ``timeline=True``
        profiler; None otherwise."""
        if self._timeline_info() is None:
            return None
        from rprofile.timeline import Timeline

        return Timeline(self)

    def thread_stats(self):
        """Per-thread stats dicts of a ``threads=True`` profile, keyed by ``(thread name,
        thread ident)``: each in the format of ``stats``, for ``pstats``/``rprofile.Stats``
        after assignment to a profile's ``stats`` or by dumping with ``marshal``."""
        from pstats import add_func_stats

        out = {}
        for ident, name, snapshot in self._thread_snapshots():
            key = (name if name is not None else _unnamed_thread(ident), ident)
            stats = snapshot.to_dict()
            if key in out:
                # The system reuses a finished thread's ident: same name and ident, added up.
                merged = out[key]
                for func, row in stats.items():
                    merged[func] = add_func_stats(merged.get(func, (0, 0, 0, 0, {})), row)
            else:
                out[key] = stats
        return out

    @property
    def processes_dir(self):
        """With ``subprocesses``: the folder holding each child process's stats file
        (``PID-NAME.prof``) and record (``PID.json``), once the profiler has been enabled; a
        temporary folder, removed when this process exits, unless ``subprocesses`` named one.
        None otherwise."""
        from rprofile.children import traced as _traced_children

        return _traced_children.folder_of(self)

    def processes(self):
        """With ``subprocesses``: this process and every child process seen so far, as
        ``ProcessInfo`` objects (``pid``, ``ppid``, ``command``, ``status``: ``"saved"``,
        ``"running"`` or ``"lost"`` (ended without saving), ``path``, ``calls``, ``seconds``,
        ``stats``), this process first; children still running are listed, not waited for.
        None otherwise."""
        from rprofile.children import traced as _traced_children

        return _traced_children.processes(self)

    def print_processes(self):
        """Prints one line per process of ``processes()``: pid, parent, command, calls and
        seconds (its functions' tottime summed), and why a child has no stats."""
        from rprofile.children import files as _processes

        listed = self.processes()
        if listed:
            _processes.print_summary(listed, this_pid=listed[0].pid)

    def _enable_subprocesses(self):
        # Called by enable() with subprocesses set, before profiling starts.
        from rprofile.children import traced as _traced_children

        _traced_children.start(self)

    def _disable_subprocesses(self):
        # Called by disable() with subprocesses set, after profiling stopped.
        from rprofile.children import traced as _traced_children

        _traced_children.stop(self)

    def run(self, cmd):
        import __main__

        dict = __main__.__dict__
        return self.runctx(cmd, dict, dict)

    def runctx(self, cmd, globals, locals):
        self.enable()
        try:
            exec(cmd, globals, locals)
        finally:
            self.disable()
        return self

    def runcall(self, func, /, *args, **kw):
        self.enable()
        try:
            return func(*args, **kw)
        finally:
            self.disable()

    def __enter__(self):
        self.enable()
        self._frame_base_up(1)  # calls=False: the with statement's frame, not this one's
        return self

    def __exit__(self, *exc_info):
        self.disable()

    def calibrate(self, m, verbose=0):
        """Measure this profiler's hidden cost per profile event, in seconds.

        Runs a loop of ``m`` Python calls with and without profiling (with this profiler's
        timer), and returns the time the profiler charged to the profiled functions beyond
        their unprofiled run time, per event. Assign the result to ``bias`` to have it
        subtracted, as with ``profile.Profile.calibrate``.
        """
        m = int(m)
        if m < 1:
            raise ValueError("calibrate() needs a positive number of calls")
        clock = _clock_of(self)

        def leaf(n):
            for _ in range(n):
                pass

        def driver(count, leaf=leaf):
            for _ in range(count):
                leaf(100)

        driver(m)  # warm up
        start = clock()
        driver(m)
        plain = clock() - start
        if verbose:
            print("elapsed time without profiling =", plain)

        probe = type(self)(*_timer_args(self))
        start = clock()
        probe.runcall(driver, m)
        if verbose:
            print("elapsed time with profiling =", clock() - start)

        calls = 0
        charged = 0.0
        for (_, _, name), (cc, _, tt, _, _) in probe._take_snapshot().to_dict().items():
            if name in ("leaf", "driver"):
                calls += cc
                charged += tt
        if verbose:
            print("'CPU seconds' profiler reported =", charged)
            print("total # calls =", calls)
        if calls != m + 1:
            raise ValueError("internal error: total calls = %d" % calls)
        # Two events (call and return) per Python-level call.
        mean = (charged - plain) / 2.0 / calls
        if verbose:
            print("mean stopwatch overhead per profile event =", mean)
        return mean


def _boot_subprocess():
    """What rprofile_subprocesses.pth calls at the start of an interpreter whose environment
    asks for it: this process is a child of a ``subprocesses`` run, and profiles itself."""
    from rprofile.children import traced as _traced_children

    _traced_children.boot(Profile)


def _unnamed_thread(ident):
    """A name for a thread that had none while profiled: the main thread of a program that
    never imported threading is still the main thread."""
    import threading

    return "MainThread" if ident == threading.main_thread().ident else "Thread-%d" % ident


def _timer_args(prof):
    """The arguments that make a profiler read the same timer as `prof`."""
    if prof.clock is not None:
        return (prof.clock,)
    return (prof._timer, prof._timeunit)


def _clock_of(prof):
    """A seconds clock reading the profiler's own timer."""
    native = {"wall": time.perf_counter, "cpu": time.process_time,
              "thread_cpu": time.thread_time}.get(prof.clock)
    if native is not None:
        return native
    timer = prof._timer
    unit = prof._timeunit or 1.0

    def clock():
        t = timer()
        if isinstance(t, (tuple, list)):
            t = sum(t)
        return t * unit

    return clock


def label(code):
    """The stats key of a code object, or of a built-in function's label string."""
    if isinstance(code, str):
        return ("~", 0, code)  # '~' sorts after every file name
    return (code.co_filename, code.co_firstlineno, code.co_name)
