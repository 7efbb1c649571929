"""The IPython magics of ``%load_ext rprofile``: ``%rprofile``/``%%rprofile`` (the tracer) and
``%rsample``/``%%rsample`` (the in-process ``Sampler``).

Both run a statement as IPython's ``%prun`` does (``IPython/core/magics/execution.py``): the
line, and in cell mode the cell after it, transformed by the shell and executed in the user's
namespace, a ``SystemExit`` caught and said; the table is pstats' text of the stats with
directories stripped, sorted by the ``-s`` keys (default ``time``) and restricted by the ``-l``
terms in their order; ``-D`` dumps the stats file, ``-T`` saves the text, ``-q`` shows
nothing, ``-r`` returns the stats. Where the front end shows HTML (a notebook) the result is
one display, the text as text/plain and the HTML report as text/html; elsewhere (a terminal)
the text goes to IPython's pager, as ``%prun``'s. Bad options are a ``UsageError``, raised
before the statement runs.
"""

import contextlib
import io
import sys
import threading
import types
from pathlib import Path

from IPython.core import page
from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.display import display

from rprofile.outputs.inline import profile_html, sampler_html
from rprofile.outputs.run import (check_writable, print_memory, print_samples, print_thread_summary,
                               write_timeline)
from rprofile.outputs.types import print_types, profile_keywords
from rprofile.sampling import MODES, Sampler
from rprofile.stats import Stats, report_sort

# %prun's short options: -D file, -l limit (repeated), -r, -s key (repeated), -T file, -q.
_SHORT = "D:l:rs:T:q"
_SYSTEM_EXIT = "*** SystemExit exception caught in code being profiled."


class _Refusal:
    """What ``check_writable`` reports a bad output path to: a UsageError."""

    @staticmethod
    def error(message):
        raise UsageError(message)


def _limit(term):
    """A ``-l`` term as ``%prun`` reads it: an int, else a float, else a pattern."""
    for kind in (int, float):
        try:
            return kind(term)
        except ValueError:
            pass
    return term


def _title(statement):
    """What the report is titled: the statement's first line (and that more follow)."""
    lines = [line for line in statement.strip().splitlines() if line.strip()]
    if not lines:
        return "profile"
    first = lines[0].strip()
    if len(first) > 80:
        first = first[:77] + "..."
    return first + (" ..." if len(lines) > 1 else "")


def _run_statement(code, globals, locals):
    """Executes the statement; ``%rsample`` keeps the samples taken inside this frame."""
    exec(code, globals, locals)


class _Request:
    """A magic's parsed line: the options, the statement, and what to write where."""

    def __init__(self, magics, parameter_s, cell, long_options):
        opts, statement = magics.parse_options(parameter_s, _SHORT, *long_options,
                                               list_all=True, posix=False)
        if cell is not None:
            statement += "\n" + cell
        self.opts = opts
        self.title = _title(statement)
        self.code = magics.shell.transform_cell(statement)
        self.sort = opts.get("s", ["time"])
        accepted = Stats().get_sort_arg_defs()
        for key in self.sort:
            if key not in accepted:
                raise UsageError("-s %s: not a sort key (the keys: %s)"
                                 % (key, ", ".join(Stats.sort_arg_dict_default)))
        self.limits = [_limit(term) for term in opts.get("l", [])]
        # %prun takes the first of repeated -D and -T.
        self.dump_file = opts.get("D", [""])[0]
        self.text_file = opts.get("T", [""])[0]
        for path in (self.dump_file, self.text_file):
            if path:
                check_writable(_Refusal, path)

    def option(self, name):
        """A long option's last value, or None."""
        values = self.opts.get(name)
        return values[-1] if values else None

    def column(self):
        """The column the inline report's table opens sorted by: the first -s key's."""
        return report_sort(self.sort[0])

    def table(self, stats, print_table=None):
        """`stats` stripped, sorted and printed with the limits, as %prun prints them (by
        ``print_table(stats, *limits)``, their ``print_stats`` by default)."""
        stats = stats.strip_dirs().sort_stats(*self.sort)
        out = io.StringIO()
        stream, stats.stream = stats.stream, out
        try:
            (print_table or type(stats).print_stats)(stats, *self.limits)
        finally:
            stats.stream = stream
        return stats, out.getvalue()

    def line_limit(self):
        """The lines --lines shows per thread: the first -l that is a number of lines, else
        20 (a fraction or a pattern restricts the table alone)."""
        return next((n for n in self.limits if isinstance(n, int)), 20)


# %rprofile's options for objects by type beside --types, as the command line's.
_TYPES_OPTIONS = ("types-builtins", "types-only=", "types-gc", "types-json=", "no-calls")


def _types_options(request):
    """The profiler's keywords for --types and its options (a UsageError for one of them
    without --types)."""
    given = [name for name in ("types-builtins", "types-only", "types-gc", "types-json",
                               "no-calls") if name in request.opts]
    if "types" not in request.opts:
        if given:
            raise UsageError("--%s needs --types" % given[0])
        return {}
    path = request.option("types-json")
    if path:
        check_writable(_Refusal, path)
    return profile_keywords(request.opts.get("types-only", []),
                            "types-builtins" in request.opts, "types-gc" in request.opts,
                            "no-calls" not in request.opts)


def _save_types(prof, path):
    """--types-json: the types written as JSON at `path` (nothing without it)."""
    if path:
        prof.dump_types(path)
        print("\n*** Types saved as JSON to file %r." % path)


def _own_stack(prof):
    """The snapshot of the calling thread's calls in a ``threads=True`` profile (None if it
    made none)."""
    ident = threading.get_ident()
    for thread, _, snapshot in prof._thread_snapshots():
        if thread == ident:
            return snapshot
    return None


def _run(runner, code, namespace):
    """Runs the statement (``runner(code, globals, locals)``); %prun's message when it raised
    SystemExit, else ''."""
    try:
        runner(code, namespace, namespace)
    except SystemExit:
        return _SYSTEM_EXIT
    return ""


def _finish(shell, request, text, html, dump, sys_exit):
    """Shows the result and writes the files, as %prun does; `html` makes the text/html (None:
    the text alone) and `dump` writes the stats file."""
    text = text.rstrip()
    if "q" not in request.opts:
        if "text/html" in shell.display_formatter.active_types:
            shown = {"text/plain": text}
            if html is not None:
                shown["text/html"] = html()
            display(shown, raw=True)
        else:
            page.page(text)
    if sys_exit:
        print(sys_exit, end=" ")
    if request.dump_file:
        dump(request.dump_file)
        print("\n*** Profile stats marshalled to file %r.%s" % (request.dump_file, sys_exit))
    if request.text_file:
        Path(request.text_file).write_text(text, encoding="utf-8")
        print("\n*** Profile printout saved to text file %r.%s" % (request.text_file, sys_exit))


@magics_class
class RprofileMagics(Magics):
    """``%rprofile`` and ``%rsample``. `profile` is the profiler class (``rprofile.Profile``,
    handed over by ``rprofile.load_ipython_extension``)."""

    def __init__(self, shell=None, profile=None, **kwargs):
        super().__init__(shell, **kwargs)
        self.profile_class = profile

    @no_var_expand
    @line_cell_magic
    def rprofile(self, parameter_s="", cell=None):
        """Run a statement under rprofile's tracer: ``%prun`` with rprofile.

        Usage, in line mode::

          %rprofile [options] statement

        in cell mode (the cell is appended to the statement of the first line)::

          %%rprofile [options] [statement]
          code...

        Options, as ``%prun``'s:

        -s <key>: sort by this pstats key (repeat for secondary keys; default: time).
        -l <limit>: restrict the table: an int (that many lines), a float in [0, 1] (that
          share of them) or a pattern on function names; repeated, applied in order.
        -r: return the stats (an ``rprofile.Stats``).
        -q: show nothing (with -D or -T).
        -D <file>: dump the stats file (for pstats, snakeviz, ``rprofile.Stats``).
        -T <file>: save the printed table as text.

        Only the thread running the statement is shown: on Python 3.12+, where every thread's
        events come to a profiler, each thread gets a call stack of its own and this one's is
        kept (``%prun`` pours them into one stack, so a kernel's output thread can show up in
        its table).

        rprofile's own (``python -m rprofile``'s options):

        --threads: show every thread's calls, and a per-thread summary under the table.
        --memory: charge every allocation to the function that made it; the functions by net
          bytes follow the table.
        --timeline <file>: record every call and return (every thread's) and write them as a
          Chrome trace (Perfetto); the report's flame graph then shows the recorded call paths.
        --types: (Python 3.13.3+) count the objects made while the statement ran by type and by
          the function that made them; the types, by objects still alive, follow the table.
        --types-builtins, --types-only <names>, --types-gc, --types-json <file>, --no-calls: as
          ``python -m rprofile``'s (with --types): count built-in types too; only these types
          (comma-separated); collect garbage before the final counts; also write the types as
          JSON; profile no call, the types alone (no table, no -D, -r, --threads, --memory or
          --timeline).

        In a notebook the result is the HTML report (the table, callers and callees, a flame
        graph) inline; in a terminal, the table.
        """
        request = _Request(self, parameter_s, cell, ("threads", "memory", "timeline=", "types")
                           + _TYPES_OPTIONS)
        timeline = request.option("timeline")
        if timeline:
            check_writable(_Refusal, timeline)
        types_options = _types_options(request)
        types_json = request.option("types-json")
        every = "threads" in request.opts
        if not types_options.get("calls", True):
            return self._types_alone(request, types_options, types_json)
        # From 3.12 every thread's events come to the profiler: with a stack per thread the
        # statement's are kept apart. Before 3.12 the profile hook is the enabling thread's.
        apart = every or sys.version_info >= (3, 12)
        try:
            prof = self.profile_class(threads=apart, memory="memory" in request.opts,
                                      timeline=timeline is not None, **types_options)
        except ValueError as exc:  # types before 3.13.3
            raise UsageError(str(exc)) from None
        sys_exit = _run(prof.runctx, request.code, self.shell.user_ns)
        prof.create_stats()
        own = _own_stack(prof) if apart and not every else None
        stats, text = request.table(Stats(prof if own is None else own))
        extra = io.StringIO()
        with contextlib.redirect_stdout(extra):
            if every:
                print_thread_summary(prof)
            if "memory" in request.opts:
                memory = prof.memory_stats()
                if own is not None:
                    called = own.to_dict()
                    memory = {func: m for func, m in memory.items() if func in called}
                print_memory(memory)
            if "types" in request.opts:
                print_types(prof.types_stats() or {})
        if extra.getvalue():
            text = text.rstrip("\n") + "\n\n" + extra.getvalue()

        def dump(path):
            if own is None:
                prof.dump_stats(path)
            else:
                with open(path, "wb") as f:
                    f.write(own.marshal())

        _finish(self.shell, request, text,
                lambda: profile_html(prof, request.title, own, request.column()),
                dump, sys_exit)
        if timeline:
            write_timeline(prof, types.SimpleNamespace(timeline=timeline, speedscope=None))
            print("\n*** Timeline saved as a Chrome trace to file %r." % timeline)
        _save_types(prof, types_json)
        if "r" in request.opts:
            return stats
        return None

    def _types_alone(self, request, types_options, types_json):
        """%rprofile --types --no-calls: the statement run with objects counted by type and no
        call profiled; the types table is what is shown."""
        for name, given in (("-D", request.dump_file), ("-r", "r" in request.opts),
                            ("--threads", "threads" in request.opts),
                            ("--memory", "memory" in request.opts),
                            ("--timeline", request.option("timeline"))):
            if given:
                raise UsageError("--no-calls profiles no call: it does not go with %s" % name)
        try:
            prof = self.profile_class(**types_options)
        except ValueError as exc:  # types before 3.13.3
            raise UsageError(str(exc)) from None
        sys_exit = _run(prof.runctx, request.code, self.shell.user_ns)
        out = io.StringIO()
        print_types(prof.types_stats() or {}, file=out)
        _finish(self.shell, request, out.getvalue(), None, None, sys_exit)
        _save_types(prof, types_json)

    @no_var_expand
    @line_cell_magic
    def rsample(self, parameter_s="", cell=None):
        """Run a statement under rprofile's sampler (``rprofile.Sampler``, in this process).

        Usage, in line mode::

          %rsample [options] statement

        in cell mode (the cell is appended to the statement of the first line)::

          %%rsample [options] [statement]
          code...

        The table counts samples, as Python 3.15's sampling profiler prints its own: a
        function's nsamples are the samples with it on the stack / running, sample% and cumul%
        their shares of all samples; times are samples x interval.
        Only the statement's own frames are kept (not IPython's above it).

        Options, as ``%prun``'s: -s <key>, -l <limit>, -r (return the ``SampledStats``), -q,
        -D <file>, -T <file>.

        As ``python -m rprofile --sample``'s:

        --rate <hz>: samples a second (default 1000).
        --mode <wall|cpu|gil>: wall counts every sampled thread at every sample (default), cpu
          only threads on a CPU, gil only the thread holding the GIL.
        --lines: the lines that took most samples follow the table (per thread, as many as
          the first -l that is a number of lines, else 20).
        --all-threads: sample every thread of the process, not only the one running the
          statement (in a notebook the kernel's own threads are among them).

        In a notebook the result is the HTML report (the table, the sampled flame graph, the
        hottest lines) inline; in a terminal, the table.
        """
        request = _Request(self, parameter_s, cell, ("rate=", "mode=", "lines", "all-threads"))
        rate = request.option("rate") or "1000"
        try:
            rate = float(rate)
        except ValueError:
            rate = float("nan")
        if not rate > 0:
            raise UsageError("--rate must be a number of samples a second > 0, not %s"
                             % request.option("rate"))
        mode = request.option("mode") or "wall"
        if mode not in MODES:
            raise UsageError("--mode must be one of %s, not %s" % (", ".join(MODES), mode))
        # The main thread is the one Sampler(all_threads=False) reads.
        in_main = threading.current_thread() is threading.main_thread()
        sampler = Sampler(rate, mode, all_threads="all-threads" in request.opts or not in_main)
        sampler.start()
        try:
            sys_exit = _run(_run_statement, request.code, self.shell.user_ns)
        finally:
            sampler.stop()
        sampler._keep_within(threading.get_ident(), _run_statement.__code__)
        stats, table = request.table(sampler.stats(), print_samples)
        text = sampler.summary() + "\n" + table
        if "lines" in request.opts:
            lines = io.StringIO()
            with contextlib.redirect_stdout(lines):
                sampler.print_lines(request.line_limit())
            text = text.rstrip("\n") + "\n\n" + lines.getvalue()
        _finish(self.shell, request, text,
                lambda: sampler_html(sampler, request.title, request.column()),
                sampler.dump_stats, sys_exit)
        if "r" in request.opts:
            return stats
        return None


def load(ip, profile):
    """Registers the magics with the shell `ip`, profiling with the class `profile`."""
    ip.register_magics(RprofileMagics(ip, profile=profile))

