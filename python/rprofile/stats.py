"""rprofile.Stats: ``pstats.Stats`` with its engine in Rust.

Same constructor, methods, attributes, exceptions and printed reports as the running
interpreter's ``pstats.Stats``; the rows live in a native ``StatsCore`` (loading, ``add``,
``strip_dirs``, sorting, restrictions and the report lines are done there), and the pstats
attributes that are Python objects (``stats``, ``fcn_list``, ``all_callees``) are built when
first read. Once ``stats`` has been handed out, it is the source of truth: every later
operation reads it back, so changes made to it are honoured as pstats honours them.

Beyond pstats (asked for by users): file names may be path-like objects, and ``Stats(...)``
also accepts other ``Stats`` objects (pstats' or rprofile's) where pstats accepts only files
and profilers.

Beyond the running pstats, on every version: the files of Python 3.15's sampling profiler
(``profiling.sampling``), marked by the key ``("__sampled__",)``, read as 3.15's pstats reads
them: the marker is dropped and the object becomes a ``SampledStats``, whose reports print as
3.15's do.

``python -m rprofile.stats [FILE ...]`` is the statistics browser of ``python -m pstats``.
"""

import marshal
import os
import re
import sys
import time

import pstats as _pstats

# The public names of pstats that are data, not the engine: shared, so that values compare
# equal and isinstance checks hold across the two modules.
from pstats import FunctionProfile, SortKey, StatsProfile  # noqa: F401
from pstats import add_callers, add_func_stats, count_calls  # noqa: F401
from pstats import func_get_function_name, func_std_string, func_strip_path, f8  # noqa: F401

from rprofile._rprofile import FuncList as _FuncList
from rprofile._rprofile import Profiler as _Profiler
from rprofile._rprofile import SampledProfile as _SampledProfile
from rprofile._rprofile import Snapshot as _Snapshot
from rprofile._rprofile import StatsCore as _StatsCore
from rprofile._rprofile import _CodeObjectData, _marshal_loads, _write_pprof, _write_report

__all__ = ["Stats", "SortKey", "FunctionProfile", "StatsProfile"]

_UNSET = object()

# sort_stats' integer arguments, kept from the old profile module.
_LEGACY_SORT_KEYS = {-1: "stdname", 0: "calls", 1: "time", 2: "cumulative"}

# The HTML report's table column (src/report) that a sort key, by its description, opens it
# sorted by; keys of names, files and lines sort the name column.
_REPORT_COLUMNS = {"call count": "ncalls", "sample count": "ncalls",
                   "primitive call count": "ncalls", "internal time": "tottime",
                   "cumulative time": "cumtime"}

# Exception types whose constructor takes one message: re-raised with the file named.
_RENAMEABLE = (EOFError, ValueError, TypeError, AttributeError, KeyError, IndexError,
               OverflowError)


# The key Python 3.15's profiling.sampling adds to its stats files: its pstats pops it and makes
# the Stats a SampledStats (any value counts).
_SAMPLED_KEY = ("__sampled__",)

# 3.15's pstats.SampledStats, on an interpreter that has it.
_PSTATS_SAMPLED = getattr(_pstats, "SampledStats", ())

# 3.15's pstats: the call reports' sub-header is a method of its own (print_call_subheading),
# a profiler with no stats makes an empty Stats, and a file's marker test runs on any data.
_PSTATS_315 = hasattr(_pstats.Stats, "print_call_subheading")

# The sub-header of the call reports over callers in cProfile's tuple form.
_CALL_COLUMNS = "    ncalls  tottime  cumtime"

# Files above this size are probed before being read whole.
_PROBE_SIZE = 1 << 20


def _read_stats_bytes(f):
    """The bytes of a stats file. A big file is read whole only if its first megabyte is the
    start of valid marshal data: a few gigabytes of something else fail as fast, and in as
    little memory, as marshal.load's reading of it."""
    try:
        size = os.fstat(f.fileno()).st_size
    except (OSError, AttributeError, ValueError):
        size = -1
    if size <= _PROBE_SIZE:
        return f.read()
    head = f.read(_PROBE_SIZE)
    try:
        _marshal_loads(head)
    except (EOFError, _CodeObjectData):
        pass  # valid so far (a code object: marshal.loads reads the whole file, load_stats)
    except Exception:
        return head  # bad data already: the whole file fails the same way
    else:
        return head  # the whole object is in the first megabyte
    del head
    f.seek(0)
    return f.read()


def _naming_file(exc, name):
    """The same exception, with the stats file it came from named in its message."""
    if type(exc) not in _RENAMEABLE:
        return exc
    new = type(exc)("%s (stats file %r)" % (exc, name))
    new.__cause__ = exc.__cause__
    return new


def report_sort(key=None, sort_type=None):
    """The column the HTML report's table opens sorted by: that of the pstats sort `key` (a
    name, an abbreviation, a ``SortKey``, or -1, 0, 1, 2), or of the first key of `sort_type`
    (a Stats' descriptions of its sort, joined by ", "); tottime when neither is given."""
    if key is not None:
        if isinstance(key, int) and not isinstance(key, str):
            key = _LEGACY_SORT_KEYS.get(key, key)
        if isinstance(key, SortKey):
            key = key.value
        sort_type = Stats().get_sort_arg_defs()[key][1]
    if not sort_type:
        return "tottime"
    return _REPORT_COLUMNS.get(sort_type.split(", ")[0], "name")


class Stats:
    """Reports on profile data, exactly as ``pstats.Stats`` prints them.

    ``Stats(*args, stream=sys.stdout)`` reads stats files (names or path-like objects),
    ``cProfile.Profile``/``rprofile.Profile`` objects and other ``Stats`` objects, and adds them
    together. Every method that pstats chains returns ``self``::

        Stats('a.prof', 'b.prof').strip_dirs().sort_stats('cumulative').print_stats(10)
    """

    sort_arg_dict_default = {
        key: (tuple(fields), description)
        for key, (fields, description) in _pstats.Stats.sort_arg_dict_default.items()
    }

    def __init__(self, *args, stream=None):
        self.stream = stream or sys.stdout
        if not len(args):
            arg = None
        else:
            arg = args[0]
            args = args[1:]
        self.init(arg)
        self.add(*args)

    def init(self, arg):
        self._core = _StatsCore()
        self._stats = None          # the dict handed out as `stats`, once it has been
        self._fcn_list = None       # fcn_list as a Python value, or _UNSET: the core's order
        self._all_callees = None    # all_callees handed out, or None
        self._totals_known = False  # set by load_stats when it took another Stats' totals
        self.files = []
        self.total_tt = 0
        self.total_calls = 0
        self.prim_calls = 0
        self.max_name_len = 0
        self.top_level = set()
        self.sort_arg_dict = {}
        self.load_stats(arg)
        try:
            if not self.__dict__.pop("_totals_known", False):
                self.get_top_level_stats()
        except Exception:
            print("Invalid timing data %s"
                  % (self.files[-1] if self.files else ''), file=self.stream)
            raise

    # -- the Python views of the engine's data ---------------------------------------------

    def _engine(self):
        """The core, brought up to date with the handed-out stats dict, if any; None if that
        dict now holds data of a shape the engine does not read (self is then general)."""
        core = self._core
        if self._stats is not None and not core.reload(self._stats):
            self._become_general(self._stats)
            return None
        return core

    def _set_core(self, core):
        """A new dict; the order and callee lists (which pstats keeps) go over to it."""
        core.adopt_views(self._core)
        self._core = core
        self._stats = None

    def _become_general(self, stats):
        """From now on pstats' own code runs on this object's plain attributes: for data the
        engine does not hold (odd shapes pstats accepts or fails on in its own way)."""
        fcn_list, all_callees = self.fcn_list, self.all_callees
        self.__class__ = _general_class(type(self))
        self.stats, self.fcn_list, self.all_callees = stats, fcn_list, all_callees

    def _become_engine(self):
        """Back from `_become_general` (load_stats brings new data): the engine again, with
        the kept `fcn_list` (pstats keeps it across loads)."""
        d = self.__dict__
        fcn_list = d.pop("fcn_list", None)
        d.pop("stats", None)
        d.pop("all_callees", None)
        self.__class__ = self._engine_class
        self._core = _StatsCore()
        self._stats = None
        self._all_callees = None
        self.fcn_list = fcn_list

    @property
    def stats(self):
        if self._stats is None:
            self._stats = self._core.to_dict()
        return self._stats

    @stats.setter
    def stats(self, value):
        self._stats = value

    @property
    def fcn_list(self):
        if self._fcn_list is _UNSET:
            # Handed out once: from then on the list (which callers may change) is the order.
            self._fcn_list = self._core.order_keys()
            self._core.clear_order()
        return self._fcn_list

    @fcn_list.setter
    def fcn_list(self, value):
        self._fcn_list = value
        self._core.clear_order()

    @property
    def all_callees(self):
        if self._all_callees is None:
            self._all_callees = self._core.callees_dict()
        return self._all_callees

    @all_callees.setter
    def all_callees(self, value):
        self._all_callees = value
        if not value:
            self._core.clear_callees()

    def _ordered(self):
        """Whether `fcn_list` is a non-empty order (pstats' `if self.fcn_list:`)."""
        if self._fcn_list is _UNSET:
            return self._core.has_order()
        return bool(self._fcn_list)

    def _listing(self, core, ordered):
        if not ordered:
            return core.listing(None, False)
        if self._fcn_list is _UNSET:
            return core.listing()
        return core.listing(self._fcn_list)

    # -- loading -------------------------------------------------------------------------

    def load_stats(self, arg):
        if isinstance(self, _GeneralStats):
            self._become_engine()
        if arg is None:
            self._set_core(_StatsCore())
            return
        core = None
        sampled = False
        if isinstance(arg, (str, os.PathLike)):
            path = os.fspath(arg)
            name = os.fsdecode(path)
            with open(path, 'rb') as f:
                data = _read_stats_bytes(f)
            core = _StatsCore.from_bytes(data)
            loaded = core
            if core is not None:
                sampled = core.sampled
            else:
                try:
                    loaded = _marshal_loads(data)
                except _CodeObjectData:
                    # `python -m profile` (3.12) keys its top level by a code object; pstats
                    # reads such a file with marshal.load, and so does this.
                    try:
                        loaded = marshal.loads(data)
                    except Exception as e:
                        raise _naming_file(e, name) from None
                except Exception as e:
                    raise _naming_file(e, name) from None
                # (3.15's pstats asks any data, and fails as `in` fails on what cannot hold it.)
                if (isinstance(loaded, dict) or _PSTATS_315) and _SAMPLED_KEY in loaded:
                    loaded.pop(_SAMPLED_KEY)
                    sampled = True
            try:
                file_stats = os.stat(path)
                name = time.ctime(file_stats.st_mtime) + "    " + name
            except Exception:
                pass
            self.files = [name]
            arg = name  # what the error below shows, as pstats shows it
        elif isinstance(arg, (Stats, _pstats.Stats)):
            # What Stats().add(arg) gives: its rows and its totals as they are.
            sampled = isinstance(arg, (SampledStats, _PSTATS_SAMPLED))
            engine = arg._engine() if isinstance(arg, Stats) else None
            if engine is not None:
                loaded = core = engine.copy()
                core.clear_order()
                core.clear_callees()
            else:
                loaded = arg.stats
            self.files = list(arg.files)
            self.total_calls, self.prim_calls = arg.total_calls, arg.prim_calls
            self.total_tt = arg.total_tt
            self.top_level = set(arg.top_level)
            self.max_name_len = arg.max_name_len
            self._totals_known = True
        elif isinstance(arg, (_Snapshot, _SampledProfile)):
            # A profiler's snapshot or a sampler's profile: the native model itself, no dict
            # or file bytes between (a sampler's marked sampled).
            loaded = core = arg.stats_core()
            sampled = core.sampled
            if not loaded and _PSTATS_315:
                # 3.15: an empty Stats rather than the TypeError below (as for a profiler's).
                self._set_core(_StatsCore())
                return
        elif hasattr(arg, 'create_stats'):
            arg.create_stats()
            # An rprofile.Profile hands over its snapshot; any other profiler, its dict.
            loaded = arg._stats_source() if isinstance(arg, _Profiler) else arg.stats
            if isinstance(loaded, _Snapshot):
                loaded = core = loaded.stats_core()
            arg.stats = {}
            if not loaded and _PSTATS_315:
                # 3.15: an empty Stats rather than the TypeError below.
                self._set_core(_StatsCore())
                return
        else:
            loaded = None
        if sampled and not isinstance(self, SampledStats):
            # As 3.15's load_stats does on a sampled file (before its error for an empty one).
            self.__class__ = SampledStats
        if core is None and loaded:
            core = _StatsCore.from_dict(loaded)
            if core is None:
                self._become_general(loaded)
        if core is not None or not loaded:
            self._set_core(core if core is not None else _StatsCore())
        if not loaded:
            raise TypeError("Cannot create or construct a %r object from %r"
                            % (self.__class__, arg))

    def get_top_level_stats(self):
        core = self._engine()
        if core is None:
            return self.get_top_level_stats()
        calls, prim, total_tt, top, width = core.top_level_stats(self.total_tt)
        self.total_calls += calls
        self.prim_calls += prim
        self.total_tt = total_tt
        self.top_level.update(top)
        if width > self.max_name_len:
            self.max_name_len = width

    def add(self, *arg_list):
        if not arg_list:
            return self
        for item in reversed(arg_list):
            if type(self) != type(item):
                item = Stats(item)
            self.files += item.files
            self.total_calls += item.total_calls
            self.prim_calls += item.prim_calls
            self.total_tt += item.total_tt
            for func in item.top_level:
                self.top_level.add(func)
            if self.max_name_len < item.max_name_len:
                self.max_name_len = item.max_name_len
            self.fcn_list = None
            core = self._engine()
            other = item._engine() if isinstance(item, Stats) else None
            if core is None or other is None:
                # One side holds data the engine does not: pstats' merge, on dicts.
                if core is not None:
                    self._become_general(self.stats)
                target = self.stats
                for func, stat in item.stats.items():
                    old = target[func] if func in target else (0, 0, 0, 0, {})
                    target[func] = add_func_stats(old, stat)
                continue
            if other is core:
                other = core.copy()
            try:
                core.add(other)
            finally:
                if self._stats is not None:
                    # pstats adds into the same dict object: keep the handed-out one current.
                    fresh = core.to_dict()
                    self._stats.clear()
                    self._stats.update(fresh)
        return self

    def dump_stats(self, filename):
        """Write the profile data to a file that pstats and rprofile.Stats load back."""
        core = self._engine()
        if core is None:
            return self.dump_stats(filename)
        # The marker goes back with samples, so that 3.15's pstats reads them as samples too.
        core.sampled = isinstance(self, SampledStats)
        data = core.dump()
        with open(filename, 'wb') as f:
            f.write(data)

    # -- sorting -------------------------------------------------------------------------

    def get_sort_arg_defs(self):
        """Expand all abbreviations that are unique."""
        if not self.sort_arg_dict:
            self.sort_arg_dict = table = {}
            ambiguous = set()
            for word, definition in self.sort_arg_dict_default.items():
                # Every prefix of every key, until one that an earlier key already has.
                for end in range(len(word), 0, -1):
                    prefix = word[:end]
                    if prefix in table:
                        ambiguous.add(prefix)
                        break
                    table[prefix] = definition
            for prefix in ambiguous:
                del table[prefix]
        return self.sort_arg_dict

    def sort_stats(self, *field):
        if not field:
            self.fcn_list = 0
            return self
        if len(field) == 1 and isinstance(field[0], int):
            field = [_LEGACY_SORT_KEYS[field[0]]]
        elif len(field) >= 2:
            first = type(field[0])
            if any(type(arg) != first for arg in field[1:]):
                raise TypeError("Can't have mixed argument type")

        sort_arg_defs = self.get_sort_arg_defs()
        spec = []
        self.sort_type = ""
        connector = ""
        for word in field:
            if isinstance(word, SortKey):
                word = word.value
            fields, description = sort_arg_defs[word]
            spec.extend(fields)
            self.sort_type += connector + description
            connector = ", "
        core = self._engine()
        if core is None or not core.sort([tuple(f) for f in spec]):
            if core is not None:
                self._become_general(self.stats)  # NaN times: pstats' own sort
            return self.sort_stats(*field)
        self._fcn_list = _UNSET
        return self

    def reverse_order(self):
        if self._fcn_list is _UNSET:
            self._core.reverse_order()
        elif self._fcn_list:
            self._fcn_list.reverse()
        return self

    def strip_dirs(self):
        core = self._engine()
        if core is None:
            return self.strip_dirs()
        self.max_name_len = core.strip_dirs()
        self._stats = None
        self.top_level = {func_strip_path(func) for func in self.top_level}
        self.fcn_list = None
        self.all_callees = None
        return self

    def calc_callees(self):
        if self._all_callees:
            return
        core = self._engine()
        if core is None:
            return self.calc_callees()
        core.calc_callees()
        self._all_callees = None

    # -- reports -------------------------------------------------------------------------

    def eval_print_amount(self, sel, list, msg):
        if not isinstance(list, _FuncList):
            # A list of keys, as pstats' own callers pass: pstats' code.
            return _pstats.Stats.eval_print_amount(self, sel, list, msg)
        new_list = list
        if isinstance(sel, str):
            try:
                rex = re.compile(sel)
            except re.error:
                msg += "   <Invalid regular expression %r>\n" % sel
                return new_list, msg
            new_list = self._core.search(list, sel, rex)
        else:
            count = len(list)
            if isinstance(sel, float) and 0.0 <= sel < 1.0:
                count = int(count * sel + .5)
                new_list = list.head(count)
            elif isinstance(sel, int) and 0 <= sel < count:
                count = sel
                new_list = list.head(count)
        if len(list) != len(new_list):
            msg += "   List reduced from %r to %r due to restriction <%r>\n" % (
                len(list), len(new_list), sel)
        return new_list, msg

    def get_stats_profile(self):
        """The listed functions' figures as a ``StatsProfile`` (pstats' dataclasses)."""
        core = self._engine()
        if core is None:
            return self.get_stats_profile()
        listing = self._listing(core, self._ordered())
        if not len(listing):
            return StatsProfile(0, {})
        profiles = {}
        for file_name, line, name, cc, nc, tt, ct in core.profile_rows(listing):
            profiles[name] = FunctionProfile(
                str(nc) if nc == cc else "%d/%d" % (nc, cc),
                float(f8(tt)),
                -1 if nc == 0 else float(f8(tt / nc)),
                float(f8(ct)),
                -1 if cc == 0 else float(f8(ct / cc)),
                file_name,
                line,
            )
        return StatsProfile(float(f8(self.total_tt)), profiles)

    def get_print_list(self, sel_list):
        core = self._engine()
        if core is None:
            return self.get_print_list(sel_list)
        width = self.max_name_len
        ordered = self._ordered()
        listing = self._listing(core, ordered)
        if ordered:
            msg = "   Ordered by: " + self.sort_type + '\n'
        else:
            msg = "   Random listing order was used\n"
        for selection in sel_list:
            listing, msg = self.eval_print_amount(selection, listing, msg)
        count = len(listing)
        if not listing:
            return 0, listing
        self._out().write(msg + "\n")
        if count < len(core):
            width = core.width(listing)
        return width + 2, listing

    @staticmethod
    def _check(missing):
        if missing is not None:
            raise KeyError(missing)

    # pstats' own: it prints one call line from a dict it is given.
    print_call_line = _pstats.Stats.print_call_line

    def _out(self):
        """Where the reports go, by print's rules: `stream`, or sys.stdout when that is None,
        or nowhere when both are. Each report gathers its text into few writes (a first report
        after a big load runs cold, and every Python step then costs microseconds)."""
        stream = self.stream
        if stream is None:
            stream = sys.stdout
        return _DISCARD if stream is None else stream

    def print_stats(self, *amount):
        if self._engine() is None:
            return self.print_stats(*amount)
        out = self._out()
        head = []
        try:
            head.extend(str(filename) + "\n" for filename in self.files)
            if self.files:
                head.append("\n")
            indent = ' ' * 8
            for func in self.top_level:
                head.append("%s %s\n" % (indent, func_get_function_name(func)))
            head.append("%s %s function calls " % (indent, self.total_calls))
            if self.total_calls != self.prim_calls:
                head.append("(%d primitive calls) " % self.prim_calls)
            head.append("in %.3f seconds\n\n" % self.total_tt)
        finally:
            # What pstats would have printed before an exception, printed before it too.
            out.write("".join(head))
        width, listing = self.get_print_list(amount)
        if listing:
            self.print_title()
            self._check(self._core.write_lines(out, listing))
            out.write("\n\n")
        return self

    def print_callees(self, *amount):
        if self._engine() is None:
            return self.print_callees(*amount)
        width, listing = self.get_print_list(amount)
        if listing:
            self.calc_callees()
            self.print_call_heading(width, "called...")
            out = self._out()
            self._check(self._core.write_callees(out, width, listing))
            out.write("\n\n")
        return self

    def print_callers(self, *amount):
        if self._engine() is None:
            return self.print_callers(*amount)
        width, listing = self.get_print_list(amount)
        if listing:
            self.print_call_heading(width, "was called by...")
            out = self._out()
            self._check(self._core.write_callers(out, width, listing))
            out.write("\n\n")
        return self

    def print_call_heading(self, name_size, column_title):
        text = self._core.format_call_heading(name_size, column_title)
        if not _PSTATS_315:
            self._out().write(text)
            return
        # 3.15: the sub-header comes from print_call_subheading, which subclasses override.
        heading, _, sub = text.partition("\n")
        self._out().write(heading + "\n")
        if sub:
            self.print_call_subheading(name_size)

    if _PSTATS_315:
        def print_call_subheading(self, name_size):
            self._out().write(" " * name_size + _CALL_COLUMNS + "\n")

    # -- the HTML report (beyond pstats) ---------------------------------------------------

    def to_html(self, path, *, compare=None, title=None):
        """Writes one self-contained HTML report of these stats at `path`: the table (sortable
        by every column, filter, strip-dirs), each function's callers and callees, a flame
        graph (estimated from the caller graph: stats files keep no call paths), threads and
        memory when the stats have them. `compare`: stats (or a file, or a profiler) that
        these are compared with, function by function. Opens from disk with no network."""
        before = before_title = None
        if compare is not None:
            if not isinstance(compare, Stats):
                compare = Stats(compare)
            before, before_title = compare._html_core(), compare._html_title()
        _write_report(path, self._html_core(), title or self._html_title(),
                      [str(f) for f in self.files], before=before,
                      before_title=before_title or "", sort=self._report_sort())
        return self

    def _report_sort(self):
        """The report's table column of these stats' own sort (``sort_stats``' first key)."""
        return report_sort(sort_type=self.__dict__.get("sort_type"))

    def _repr_html_(self):
        """The HTML report inline in a notebook (IPython's rich display): in a frame of its
        own, a big profile by its heaviest functions."""
        from rprofile.outputs.inline import stats_html

        return stats_html(self)

    def dump_pprof(self, path):
        """Writes these stats as a gzipped pprof profile (``profile.proto``, for ``go tool
        pprof``, Pyroscope, Parca) at `path`. Stats keep who called whom, not whole call paths:
        each caller edge is a sample ``[callee, caller]`` with the edge's calls (samples, for
        sampled stats) and time, and calls with no caller a one-frame sample; so pprof's flat
        is tottime, the totals are the stats' and cum is one call level deep. The time is
        typed ``cpu/nanoseconds`` whatever clock took it (wall by default)."""
        _write_pprof(path, self._html_core("pprof"), comments=[self._html_title()])

    def _html_core(self, output="the report"):
        """The engine's core for a report or an export (data of other shapes read into one);
        TypeError naming `output` when the data cannot be."""
        core = self._engine()
        if core is None:
            core = _StatsCore.from_dict(self.stats)
            if core is None:
                raise TypeError("these stats hold data of a shape %s cannot show" % output)
        core.sampled = isinstance(self, SampledStats)
        return core

    def _html_title(self):
        # The files' names, without the modification times that load_stats puts before them.
        names = [os.path.basename(str(f).split("    ", 1)[-1]) for f in self.files]
        return " + ".join(names) or "profile"

    def print_title(self):
        self._out().write("   ncalls  tottime  percall  cumtime  percall "
                          "filename:lineno(function)\n")

    def print_line(self, func):
        core = self._engine()
        if core is None:
            return self.print_line(func)
        self._check(core.write_lines(self._out(), core.listing([func])))

    # -- pickling (beyond pstats) -----------------------------------------------------------

    def __reduce__(self):
        """Pickles as the engine's payload (the rows, the sort order, the callee lists, written
        by the engine as one bytes object) and the small attributes (files, totals, top level,
        sort settings). A stream that is the sender's sys.stdout or sys.stderr unpickles as the
        receiver's; another stream is pickled as pickle pickles it (an open file cannot be)."""
        state = {k: v for k, v in self.__dict__.items() if k not in _ENGINE_STATE}
        stream = state.pop("stream", None)
        std = _std_stream_name(stream)
        if std is None:
            state["stream"] = stream
        core = self._engine()
        if core is None:
            # Data the engine does not hold: pstats' attributes, as pickle pickles them.
            return (_restore_general, (self._engine_class, std, state))
        order = self._fcn_list
        payload = None
        if order is _UNSET:
            payload = core._to_pickle()
        elif isinstance(order, list):
            try:
                payload = core._to_pickle(order)
            except KeyError:
                pass  # items that are not function keys: the list goes as it is
        if payload is None:
            state["_fcn_list"] = order
            payload = core._to_pickle()
        return (_restore_stats, (type(self), payload, std, state))


# What a Stats keeps in its engine and pickles as the engine's payload.
_ENGINE_STATE = ("_core", "_stats", "_fcn_list", "_all_callees")


def _std_stream_name(stream):
    """"stdout" or "stderr" for the process's standard streams (those of sys or the original
    ones), which a pickled Stats takes over from the receiving process; None otherwise."""
    for name in ("stdout", "stderr"):
        if stream is not None and (stream is getattr(sys, name, None)
                                   or stream is getattr(sys, "__%s__" % name, None)):
            return name
    return None


def _restore_stats(cls, payload, std, state):
    """Unpickles a Stats (`Stats.__reduce__`): the engine from its payload (a bad one raises
    pickle.UnpicklingError), then the attributes."""
    self = cls.__new__(cls)
    core = _StatsCore._from_pickle(payload)
    d = self.__dict__
    d.update(_core=core, _stats=None, _all_callees=None,
             _fcn_list=_UNSET if core.ordered else None)
    d.update(state)
    if std is not None:
        self.stream = getattr(sys, std)
    return self


def _restore_general(cls, std, state):
    """Unpickles a Stats holding data of shapes the engine does not (pstats' own attributes)."""
    self = cls.__new__(cls)
    self.__dict__.update(_core=_StatsCore(), _stats=None, _all_callees=None, _fcn_list=None)
    self.__class__ = _general_class(cls)
    self.__dict__.update(state)
    if std is not None:
        self.stream = getattr(sys, std)
    return self


def _sampled_sort_arg_dict():
    """The sort keys ``SampledStats(...)`` sets, as 3.15's does: pstats' own unabbreviated, with
    calls counted in samples ('samples', 'nsamples', 'psamples' for 'calls', 'ncalls',
    'pcalls'; the first two described as "sample count")."""
    renamed = {"calls": "samples", "ncalls": "nsamples", "pcalls": "psamples"}
    table = {}
    for word, (fields, description) in Stats.sort_arg_dict_default.items():
        if word in ("calls", "ncalls"):
            description = "sample count"
        table[renamed.get(word, word)] = (fields, description)
    return table


# The sub-header of SampledStats' call reports (over callers in cProfile's tuple form).
_SAMPLED_CALL_COLUMNS = "    nsamples  tottime  cumtime"


class SampledStats(Stats):
    """Python 3.15's ``pstats.SampledStats``: the Stats of a ``profiling.sampling`` profile, whose
    rows count samples (cc: samples with the function running, nc: samples with it on the
    stack) and whose times are samples times the interval.

    ``Stats(file)`` becomes one when the file carries the sampling profiler's marker, which is
    not in ``stats`` and which ``dump_stats`` writes back. Reports are pstats' with 3.15's
    column titles for samples; built directly, as in 3.15, it takes only its own sort keys."""

    def __init__(self, *args, stream=None):
        super().__init__(*args, stream=stream)
        self.sort_arg_dict = _sampled_sort_arg_dict()

    def print_title(self):
        self._out().write(" nsamples  tottime persample cumtime persample "
                          "filename:lineno(function)\n")

    def print_call_subheading(self, name_size):
        self._out().write(" " * name_size + _SAMPLED_CALL_COLUMNS + "\n")

    if not _PSTATS_315:  # (3.15's Stats.print_call_heading calls print_call_subheading)
        def print_call_heading(self, name_size, column_title):
            self._out().write(
                self._core.format_call_heading(name_size, column_title, _SAMPLED_CALL_COLUMNS))


class _Discard:
    """The stream of a report with nowhere to go (print's behaviour when sys.stdout is None)."""

    @staticmethod
    def write(text):
        return len(text)


_DISCARD = _Discard()


class _GeneralStats:
    """Mixed in front of a Stats class for data the engine does not hold (keys or values of
    shapes that only pstats' dict-based code handles, e.g. float line numbers or caller lists):
    pstats' own methods run on the object's plain attributes, so it behaves exactly as pstats
    does with such data."""

    stats = fcn_list = all_callees = None

    def _engine(self):
        return None


for _name in ("get_top_level_stats", "dump_stats", "sort_stats", "reverse_order", "strip_dirs",
              "calc_callees", "eval_print_amount", "get_stats_profile", "get_print_list",
              "print_stats", "print_callees", "print_callers", "print_call_heading",
              "print_call_subheading", "print_call_line", "print_title", "print_line"):
    if hasattr(_pstats.Stats, _name):  # (print_call_subheading: 3.15+)
        setattr(_GeneralStats, _name, getattr(_pstats.Stats, _name))


class _SampledGeneral:
    """In front of `_GeneralStats` for a SampledStats: 3.15's sampled title and sub-header, and
    the marker written back, over pstats' dict-based code."""

    print_title = SampledStats.print_title
    print_call_subheading = SampledStats.print_call_subheading

    def print_call_heading(self, name_size, column_title):
        print("Function ".ljust(name_size) + column_title, file=self.stream)
        # The sub-header when the first row with callers has them as tuples (pstats' test).
        for cc, nc, tt, ct, callers in self.stats.values():
            if callers:
                if isinstance(next(iter(callers.values())), tuple):
                    self.print_call_subheading(name_size)
                break

    def dump_stats(self, filename):
        stats = dict(self.stats)
        stats[_SAMPLED_KEY] = True
        with open(filename, 'wb') as f:
            marshal.dump(stats, f)


_general_classes = {}


def _general_class(cls):
    """`cls` (Stats or a subclass of it) with pstats' methods in front."""
    if issubclass(cls, _GeneralStats):
        return cls
    general = _general_classes.get(cls)
    if general is None:
        bases = (_GeneralStats, cls)
        if issubclass(cls, SampledStats):
            bases = (_SampledGeneral,) + bases
        general = type(cls.__name__, bases, {"_engine_class": cls,
                                             "__module__": cls.__module__,
                                             "__qualname__": cls.__qualname__})
        _general_classes[cls] = general
    return general


if __name__ == "__main__":
    # Run by `python -m`, this file is __main__: the browser gets the importable module's class.
    from rprofile._browser import main
    from rprofile.outputs.report import stats_main
    from rprofile.stats import Stats as _Stats

    if not stats_main(sys.argv[1:], _Stats):
        main(_Stats)
