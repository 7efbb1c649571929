"""``rprofile dump``: what every thread of a running (or hung) Python process is doing this
instant, read from outside as the sampler reads it: each thread's name, OS id and state, and
its stack as a traceback reads (most recent call last, with the source line when the file can
be read). The target is not stopped unless ``blocking`` is asked (then for the read only)."""

import argparse
import json
import linecache
import os
import sys
from typing import List, NamedTuple, Optional

from rprofile._rprofile import _descendants, _dump_threads

__all__ = ["Frame", "Local", "ThreadDump", "dump", "format_dump", "as_json", "main"]


class Local(NamedTuple):
    """One local variable of a frame, as read from the target. ``kind`` says what ``value``
    is: ``int``, ``float``, ``bool``, ``none`` (the value), ``bigint`` (its decimal text, None
    when too long to show), ``str``, ``bytes`` (its first characters or bytes: ``length`` is
    the whole), ``container`` (a list, tuple, dict or set: ``length`` is its length),
    ``other`` (its address), ``unreadable`` (why)."""
    name: str
    type: str
    kind: str
    value: object
    length: Optional[int]

    def text(self):
        """The value as the dump shows it."""
        kind, value, length = self.kind, self.value, self.length
        if kind in ("int", "float", "bool", "none"):
            return repr(value)
        if kind == "bigint":
            return value if value is not None else "<int too large to show>"
        if kind in ("str", "bytes"):
            whole = len(value) == length
            return repr(value) + ("" if whole else "... (%d %s)" % (
                length, "characters" if kind == "str" else "bytes"))
        if kind == "container":
            return "<%s of %d item%s>" % (self.type, length, "" if length == 1 else "s")
        if kind == "other":
            return "<%s at 0x%x>" % (self.type, value)
        return "<not read: %s>" % value


class Frame(NamedTuple):
    """One frame: its code's file and function, and the line it is at (None: not known);
    with ``locals`` asked, its local variables, or ``locals_error`` why they were not read."""
    filename: str
    line: Optional[int]
    name: str
    locals: Optional[List[Local]] = None
    locals_error: Optional[str] = None


class ThreadDump(NamedTuple):
    """One thread at the instant of the dump. ``state``: its ``/proc`` state letter (``R``
    running or runnable, ``S`` sleeping, ``D`` in an uninterruptible wait, ...; None when
    unknown); ``frames`` outermost first; ``truncated``: only the innermost frames of a deeper
    stack are there; ``torn``: its stack changed under every read, so none is given;
    ``waiting_gil``: it waits for the GIL (read on 3.15, which publishes it; None before)."""
    native_id: int
    ident: int
    name: Optional[str]
    main: bool
    state: Optional[str]
    has_gil: bool
    frames: List[Frame]
    truncated: bool
    torn: bool
    waiting_gil: Optional[bool] = None

    @property
    def on_cpu(self):
        return self.state == "R"

    def status(self):
        """Its state in words, as Python 3.15's ``profiling.sampling dump`` words it."""
        words = ["main thread"] if self.main else []
        if self.has_gil:
            words.append("has GIL")
        if self.on_cpu:
            words.append("on CPU")
        if self.waiting_gil:
            words.append("waiting for GIL")
        elif not self.on_cpu and self.state is not None and not self.has_gil:
            words.append("idle")
        return ", ".join(words)


def dump(pid, blocking=False, locals=False):
    """Every thread of process `pid` (newest first, as the interpreter lists them), with
    `locals` each frame's local variables. Raises ProcessLookupError, PermissionError (not
    permitted to read it, or with `blocking` to stop it) or ValueError (not a Python this
    reader knows)."""
    threads = []
    for native, ident, main_, name, state, gil, waiting, frames, truncated, torn, \
            frame_locals in _dump_threads(pid, blocking, locals):
        if len(frame_locals) != len(frames):
            why = "not read" if locals else None
            frame_locals = [(None, why)] * len(frames)
        frames = [Frame(f, line, n, None if ls is None else [Local(*v) for v in ls], why)
                  for (f, line, n), (ls, why) in zip(reversed(frames), reversed(frame_locals))]
        threads.append(ThreadDump(native, ident, name, main_, state, gil, frames, truncated,
                                  torn, waiting))
    return threads


def command_line(pid):
    """Process `pid`'s command line, or "" once it is gone."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            args = f.read().rstrip(b"\0").split(b"\0")
    except OSError:
        return ""
    return " ".join(os.fsdecode(a) for a in args)


def _source(pid, filename, line):
    """The stripped source line, read from the file as the target names it (a relative name
    is the target's: from its working directory), or None."""
    if not line or not filename or filename.startswith("<"):
        return None
    path = filename
    if not os.path.isabs(path):
        path = os.path.join("/proc/%d/cwd" % pid, path)
    text = linecache.getline(path, line).strip()
    return text or None


def format_dump(pid, threads, blocking=False):
    """The dump as text: a line for the process, then each thread as a traceback."""
    out = ["Stack dump for PID %d (%s): %d thread%s%s" % (
        pid, command_line(pid) or "exited", len(threads), "" if len(threads) == 1 else "s",
        ", read while stopped (--blocking)" if blocking else "")]
    for t in threads:
        out.append("")
        who = "Thread %s" % (t.native_id or "(OS id unknown) ident %d" % t.ident)
        if t.name is not None:
            who += " %s" % json.dumps(t.name, ensure_ascii=False)
        status = t.status()
        out.append("%s (%smost recent call last):" % (who, status + "; " if status else ""))
        if t.torn:
            out.append("  Its stack changed under every read: not shown.")
            continue
        if not t.frames:
            out.append("  No Python frames.")
            continue
        if t.truncated:
            out.append("  ... (deeper frames not read)")
        for f in t.frames:
            where = "line %d, " % f.line if f.line else ""
            out.append('  File "%s", %sin %s' % (f.filename, where, f.name))
            source = _source(pid, f.filename, f.line)
            if source:
                out.append("    " + source)
            if f.locals_error is not None:
                out.append("    Locals not read: %s" % f.locals_error)
            elif f.locals is not None:
                out.append("    Locals:" if f.locals else "    Locals: none")
                out.extend("      %s = %s" % (v.name, v.text()) for v in f.locals)
    return "\n".join(out) + "\n"


def _frame_json(pid, f):
    doc = {"filename": f.filename, "line": f.line, "name": f.name,
           "source": _source(pid, f.filename, f.line)}
    if f.locals_error is not None:
        doc["locals"], doc["locals_error"] = None, f.locals_error
    elif f.locals is not None:
        doc["locals"] = [{"name": v.name, "value": v.text(), "type": v.type}
                         for v in f.locals]
    return doc


def as_json(pid, threads):
    """The dump as a JSON-ready dict: the process, then its threads with their frames
    (outermost first)."""
    return {
        "pid": pid,
        "command_line": command_line(pid),
        "threads": [{
            "native_id": t.native_id, "ident": t.ident, "name": t.name, "main": t.main,
            "state": t.state, "on_cpu": t.on_cpu, "has_gil": t.has_gil,
            "waiting_gil": t.waiting_gil,
            "truncated": t.truncated, "torn": t.torn,
            "frames": [_frame_json(pid, f) for f in t.frames],
        } for t in threads],
    }


def _parser():
    parser = argparse.ArgumentParser(
        prog="rprofile dump",
        description="Print every thread's stack of a running Python process, read from outside "
                    "(the process runs on untouched unless --blocking).")
    parser.add_argument("--pid", type=int, required=True, help="the process to dump")
    parser.add_argument("--json", action="store_true",
                        help="write one JSON document (threads, frames) instead of text")
    parser.add_argument("--locals", action="store_true",
                        help="show each frame's local variables")
    parser.add_argument("--blocking", action="store_true",
                        help="stop every thread of the process for the read (ptrace), then "
                             "let it go")
    parser.add_argument("--subprocesses", action="store_true",
                        help="also dump every Python process it started, and theirs")
    return parser


def main(argv=None):
    """The command line; returns the exit status (2 for a process that cannot be dumped)."""
    from rprofile.sampling.run import explain

    parser = _parser()
    options = parser.parse_args(argv)
    if options.pid <= 0:
        parser.error("--pid must be a process id > 0, not %d" % options.pid)
    if options.pid == os.getpid():
        parser.error("--pid names this process; use faulthandler.dump_traceback() in it")
    try:
        first = dump(options.pid, options.blocking, options.locals)
    except (ValueError, OSError) as exc:
        print("rprofile dump: error: %s" % explain(exc, options.pid), file=sys.stderr)
        return 2
    dumps = [(options.pid, first)]
    if options.subprocesses:
        for kid in _descendants(options.pid):
            try:
                dumps.append((kid, dump(kid, options.blocking, options.locals)))
            except (ValueError, OSError):
                continue  # not Python, or gone: only Python processes are dumped
    if options.json:
        docs = [as_json(pid, threads) for pid, threads in dumps]
        text = json.dumps(docs[0] if not options.subprocesses else {"processes": docs},
                          indent=1) + "\n"
    else:
        text = "\n".join(format_dump(pid, threads, options.blocking) for pid, threads in dumps)
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError as exc:
        sys.stdout = None  # (`| head`: the reader left; nothing more to say, nor at exit)
        return exc.errno
    return 0
