"""The interactive statistics browser: ``python -m rprofile.stats [FILE [FILE...]]``.

It behaves as ``python -m pstats [FILE...]`` does (the browser CPython 3.10-3.13 keeps under
``if __name__ == '__main__':`` in Lib/pstats.py): the same commands, help texts, messages,
prompt (``<file>% `` once a file is read, ``% `` before) and argument handling. The first file
named on the command line is read, the others are added to it; then commands are read until
``quit``, ``EOF`` or end of input.

Restriction arguments of ``stats``, ``callers`` and ``callees`` are, term by term: an integer
(the number of entries to print), a decimal fraction in [0, 1] (the share of entries to print;
anything else that parses as a float is refused with "Fraction argument must be in [0, 1]" and
left out), or else a regular expression on the function names.

The statistics class is an argument: ``rprofile.stats`` passes its ``Stats``, and the browser
imports nothing of rprofile (so it also runs over ``pstats.Stats``, as its tests do).
"""

import cmd
import sys

__all__ = ["ProfileBrowser", "main"]

_NO_STATS = "No statistics object is loaded."

_RESTRICTION_HELP = (
    "Arguments may be:",
    "* An integer maximum number of entries to print.",
    "* A decimal fractional number between 0 and 1, controlling",
    "  what fraction of selected entries to print.",
    "* A regular expression; only entries with function names",
    "  that match it are printed.",
)

# Marks a term of a restriction that was refused (a float out of [0, 1]) and is left out.
_REFUSED = object()


class ProfileBrowser(cmd.Cmd):
    """The profile statistics browser of ``python -m pstats``, over ``stats_class`` (a class
    with ``pstats.Stats``' interface). ``profile``, when given, is read first as by the
    ``read`` command."""

    def __init__(self, stats_class, profile=None):
        super().__init__()
        self.stats_class = stats_class
        self.prompt = "% "
        self.stats = None
        self.stream = sys.stdout
        # The file last read successfully: the one a bare `read` reloads, named in the prompt.
        self._current = None
        if profile is not None:
            self.do_read(profile)

    # --- helpers (named so that cmd.Cmd sees neither a command nor a help topic) -----------

    def _say(self, *parts):
        print(*parts, file=self.stream)

    def _restriction_term(self, term):
        try:
            return int(term)
        except ValueError:
            pass
        try:
            share = float(term)
        except ValueError:
            return term  # neither number: a regular expression
        if share < 0 or share > 1:  # (so NaN is let through, as pstats does)
            self._say("Fraction argument must be in [0, 1]")
            return _REFUSED
        return share

    def _print_restricted(self, method, line):
        terms = [self._restriction_term(term) for term in line.split()]
        restrictions = [term for term in terms if term is not _REFUSED]
        if self.stats is None:
            self._say(_NO_STATS)
        else:
            getattr(self.stats, method)(*restrictions)
        return 0

    def _help_restricted(self, what):
        self._say("Print %s from the current stat object." % what)
        for text in _RESTRICTION_HELP:
            self._say(text)

    # --- commands ---------------------------------------------------------------------------

    def do_add(self, line):
        if self.stats is None:
            self._say(_NO_STATS)
            return 0
        try:
            self.stats.add(line)
        except OSError as exc:
            self._say("Failed to load statistics for %s: %s" % (line, exc))
        return 0

    def help_add(self):
        self._say("Add profile info from given file to current statistics object.")

    def do_callees(self, line):
        return self._print_restricted("print_callees", line)

    def help_callees(self):
        self._help_restricted("callees statistics")

    def do_callers(self, line):
        return self._print_restricted("print_callers", line)

    def help_callers(self):
        self._help_restricted("callers statistics")

    def do_EOF(self, line):
        self._say("")
        return 1

    def help_EOF(self):
        self._say("Leave the profile browser.")

    def do_quit(self, line):
        return 1

    def help_quit(self):
        self._say("Leave the profile browser.")

    def do_read(self, line):
        if not line:
            if self._current is None:
                self._say("No statistics object is current -- cannot reload.")
                return 0
            line = self._current
        try:
            stats = self._read(line)
        except OSError as exc:
            # As pstats: the bare strerror (an OSError without one is not caught here either).
            self._say(exc.args[1])
            return None
        except Exception as exc:
            self._say(type(exc).__name__ + ":", exc)
            return None
        self.stats = stats
        self._current = line
        self.prompt = line + "% "
        return 0

    def _read(self, name):
        """The stats of file `name`, read as the running version's browser reads them."""
        if sys.version_info < (3, 15):
            return self.stats_class(name)
        # 3.15 unmarshals the file itself and makes the stats of the dict (a SampledStats for
        # a sampled profile's, its marker dropped): an empty one is taken, and a failure to
        # read the rows names no file.
        import marshal
        import os
        import time

        with open(name, "rb") as f:
            raw = marshal.load(f)
        cls = self.stats_class
        if ("__sampled__",) in raw:
            raw = dict(raw)
            raw.pop(("__sampled__",))
            cls = getattr(sys.modules.get(cls.__module__), "SampledStats", cls)
        stats = cls(_Loaded(raw))
        try:
            stats.files = [time.ctime(os.stat(name).st_mtime) + "    " + name]
        except Exception:
            stats.files = [name]
        return stats

    def help_read(self):
        self._say("Read in profile data from a specified file.")
        self._say("Without argument, reload the current file.")

    def do_reverse(self, line):
        if self.stats is None:
            self._say(_NO_STATS)
        else:
            self.stats.reverse_order()
        return 0

    def help_reverse(self):
        self._say("Reverse the sort order of the profiling report.")

    def do_sort(self, line):
        if self.stats is None:
            self._say(_NO_STATS)
            return None
        keys = line.split()
        accepted = self.stats.get_sort_arg_defs()
        if keys and all(key in accepted for key in keys):
            self.stats.sort_stats(*keys)
            return 0
        self._say("Valid sort keys (unique prefixes are accepted):")
        for key, definition in self.stats_class.sort_arg_dict_default.items():
            self._say("%s -- %s" % (key, definition[1]))
        return 0

    def help_sort(self):
        self._say("Sort profile data according to specified keys.")
        self._say("(Typing `sort' without arguments lists valid keys.)")

    def complete_sort(self, text, *args):
        return [key for key in self.stats_class.sort_arg_dict_default if key.startswith(text)]

    def do_stats(self, line):
        return self._print_restricted("print_stats", line)

    def help_stats(self):
        self._help_restricted("statistics")

    def do_strip(self, line):
        if self.stats is None:
            self._say(_NO_STATS)
        else:
            self.stats.strip_dirs()

    def help_strip(self):
        self._say("Strip leading path information from filenames in the report.")

    def help_help(self):
        self._say("Show help for a given command.")


class _Loaded:
    """Stats already read, in the shape Stats() takes them from a profiler (3.15's browser)."""

    def __init__(self, stats):
        self.stats = stats

    def create_stats(self):
        pass


def main(stats_class, argv=None):
    """Run the browser over ``stats_class`` as ``python -m pstats`` does; argv defaults to
    ``sys.argv[1:]``: the first file is read, the others are added to it."""
    if argv is None:
        argv = sys.argv[1:]
    try:
        import readline  # noqa: F401  (line editing and completion for input())
    except ImportError:
        pass
    try:
        browser = ProfileBrowser(stats_class, argv[0] if argv else None)
        for name in argv[1:]:
            browser.do_add(name)
        print("Welcome to the profile statistics browser.", file=browser.stream)
        browser.cmdloop()
        print("Goodbye.", file=browser.stream)
    except KeyboardInterrupt:
        pass
