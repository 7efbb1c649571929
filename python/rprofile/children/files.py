"""One folder of per-process profiles: how a run that follows child processes names each
process's files, marks a process as started, saves its stats atomically, and afterwards lists,
merges and summarizes what the folder holds. Shared by every profiler that follows children
(the tracer's ``--subprocesses``, the sampler's); nothing here knows how the stats were made.

In the folder, per process (``KEY`` is the pid, or ``PID_N`` when a pid comes back in one run):

- ``KEY.json``: written when the process starts (pid, parent pid, argv, command, start time),
  rewritten when its stats are saved (status ``saved``, the stats file's name, how it ended).
- ``KEY-LABEL.prof``: its stats (a pstats marshal file); LABEL names the program
  (``child.py``, ``mypackage.cli``, ``ForkPoolWorker-2``).

A process whose ``.json`` says ``started`` never saved: it is still running, or it ended
without saving (SIGKILL, ``os.abort()``, a crash).
"""

import json
import os
import re
import sys
import time

__all__ = ["FOLDER_SUFFIX", "folder_for", "prepare_folder", "temporary_folder", "describe",
           "Process", "register", "collect", "merge", "print_summary", "print_table",
           "ProcessInfo"]

FOLDER_SUFFIX = ".processes"
STATS_SUFFIX = ".prof"
MARKER_SUFFIX = ".json"
# What a marker's name looks like: a key, and nothing a user's own files would be named.
_MARKER = re.compile(r"^(\d+(?:_\d+)?)\.json$")
_STATS = re.compile(r"^(\d+(?:_\d+)?)-.*\.prof$")
_TEMP = re.compile(r"^\.(\d+(?:_\d+)?).*\.tmp$")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=@-]+")
LABEL_MAX = 40
COMMAND_MAX = 60


def folder_for(outfile):
    """The folder of per-process files that goes with the merged stats file `outfile`."""
    return os.fspath(outfile) + FOLDER_SUFFIX


def prepare_folder(path):
    """Makes `path` a folder ready for a run: created if missing, and emptied of the files an
    earlier run left there (only files named as this module names them). Raises OSError
    (NotADirectoryError when something else is in its place)."""
    path = os.fspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise NotADirectoryError(20, "not a directory", path)
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        if _MARKER.match(name) or _STATS.match(name) or _TEMP.match(name):
            try:
                os.unlink(os.path.join(path, name))
            except FileNotFoundError:
                pass


def temporary_folder():
    """A new empty folder for a run that keeps no per-process files (the caller removes it)."""
    import tempfile

    return tempfile.mkdtemp(prefix="rprofile-processes-")


def describe(argv):
    """(command, label) of a Python process started with `argv` (``sys.orig_argv``: the
    interpreter first): the command as the summary shows it, the label as files are named.
    ``python -X dev dir/child.py a`` -> ("child.py a", "child.py"); ``python -m pkg.cli`` ->
    ("-m pkg.cli", "pkg.cli"); ``python -c CODE`` -> ("-c CODE", "python-c")."""
    args = list(argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-c", "-m") or (arg[:2] in ("-c", "-m") and not arg.startswith("--")):
            flag, value = arg[:2], arg[2:]
            rest = args[i + 1:]
            if not value and rest:
                value, rest = rest[0], rest[1:]
            if flag == "-m":
                return _command(["-m", value] + rest), value
            if value.startswith("from multiprocessing."):
                return ("multiprocessing child (%s)" % value.split()[1].rpartition(".")[2],
                        "python-c")
            return _command(["-c", value] + rest), "python-c"
        if arg in ("-X", "-W", "--check-hash-based-pycs"):
            i += 2
            continue
        if arg == "-":
            return _command(args[i:]), "python-stdin"
        if not arg.startswith("-"):
            name = os.path.basename(arg)
            return _command([name] + args[i + 1:]), name
        i += 1
    return "(interactive)", "python"


def _command(parts):
    text = " ".join(parts)
    text = " ".join(text.split())  # one line, whatever -c's code holds
    return text if len(text) <= COMMAND_MAX else text[:COMMAND_MAX - 3] + "..."


def safe_label(label):
    """`label` as it can be part of a file name."""
    label = _UNSAFE.sub("_", label).strip("._") or "python"
    return label[:LABEL_MAX]


def _start_ticks(pid):
    """The process's start time (clock ticks since boot, /proc's field 22), which tells a
    process from a later one given the same pid; None if there is no such process."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces and parentheses.
    fields = stat[stat.rfind(b")") + 2:].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _state(pid):
    """The state letter of /proc/PID/stat (R, S, Z, ...), or None if there is no such pid."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2:][:1].decode("ascii", "replace")


def _write_atomically(path, write):
    """Calls write(temporary path) and renames the result to `path`, so a reader sees the
    whole file or none (a process killed while writing leaves a hidden .tmp file)."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, ".%s.%d.tmp" % (name, os.getpid()))
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _write_json(path, data):
    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(data, f)

    _write_atomically(path, write)


class Process:
    """One process's place in a folder: made by `register`, then `save` once its stats are
    ready (again later to replace them)."""

    def __init__(self, folder, key, info):
        self.folder = folder
        self.key = key
        self.info = info

    @property
    def pid(self):
        return self.info["pid"]

    def rename(self, command=None, label=None):
        """Changes what the process is called (a multiprocessing worker is known by its name
        only once it runs); takes effect at the next `save` (or now, when it was saved)."""
        if command is not None:
            self.info["command"] = command
        if label is not None:
            self.info["label"] = safe_label(label)

    def stats_path(self):
        return os.path.join(self.folder, "%s-%s%s" % (self.key, self.info["label"], STATS_SUFFIX))

    def save(self, write, ended=None, extra=None):
        """Writes the stats through write(path) (which writes a pstats marshal file at path),
        atomically, then marks the process saved; `ended` says how it ended ("exit",
        "os._exit", "SIGTERM", ...), `extra` adds JSON-able fields to its record. Returns the
        stats file's path. Raises OSError (the folder gone, the disk full)."""
        path = self.stats_path()
        old = self.info.get("stats")
        _write_atomically(path, write)
        if old and old != os.path.basename(path):
            try:
                os.unlink(os.path.join(self.folder, old))
            except OSError:
                pass
        self.info.update(status="saved", stats=os.path.basename(path), saved=time.time())
        if ended is not None:
            self.info["ended"] = ended
        if extra:
            self.info.update(extra)
        _write_json(os.path.join(self.folder, self.key + MARKER_SUFFIX), self.info)
        return path


def register(folder, pid=None, ppid=None, argv=None, command=None, label=None, **extra):
    """Marks a process as started in `folder` and returns its `Process`. By default the
    calling process (pid, parent, ``sys.orig_argv``); another process (a sampled child) by
    its pid and argv. `command`/`label` override what `describe(argv)` gives; `extra` are
    JSON-able fields kept in its record. Raises OSError."""
    folder = os.fspath(folder)
    if pid is None:
        pid, ppid = os.getpid(), os.getppid()
    if argv is None:
        argv = list(getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv)
    shown, named = describe(argv)
    info = dict(extra, pid=pid, ppid=ppid, argv=list(argv), command=command or shown,
                label=safe_label(label or named), started=time.time(),
                start_ticks=_start_ticks(pid), status="started")
    # The first free key: a pid the system gave again in one run gets a key of its own.
    n = 1
    while True:
        key = str(pid) if n == 1 else "%d_%d" % (pid, n)
        path = os.path.join(folder, key + MARKER_SUFFIX)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            n += 1
            continue
        with os.fdopen(fd, "w") as f:
            json.dump(info, f)
        return Process(folder, key, info)


class ProcessInfo:
    """What `collect` knows of one process: ``pid``, ``ppid``, ``command``, ``status``
    (``"saved"``, ``"running"``: still running, not waited for, or ``"lost"``: ended without
    saving its stats), ``path`` (its stats file, or None), ``ended`` (how it ended, when it
    saved), ``started`` (time.time() at its start) and, once loaded, ``stats`` (an
    rprofile.Stats), ``calls``, ``primitive_calls`` and ``seconds`` (its functions' tottime
    summed)."""

    __slots__ = ("pid", "ppid", "key", "command", "label", "status", "path", "ended",
                 "started", "record", "stats", "calls", "primitive_calls", "seconds")

    def __init__(self, folder, key, record):
        self.key = key
        self.record = record
        self.pid = record.get("pid")
        self.ppid = record.get("ppid")
        self.command = record.get("command", "?")
        self.label = record.get("label", "python")
        self.started = record.get("started", 0.0)
        self.ended = record.get("ended")
        self.stats = self.calls = self.primitive_calls = self.seconds = None
        stats = record.get("stats")
        self.path = os.path.join(folder, stats) if stats else None
        if record.get("status") == "saved" and self.path and os.path.exists(self.path):
            self.status = "saved"
        else:
            self.path = None
            self.status = "running" if _still_running(record) else "lost"

    @classmethod
    def in_memory(cls, stats, pid, ppid, command, label):
        """A process whose stats are at hand (the profiling process itself), not in a file."""
        p = cls("", "", {"pid": pid, "ppid": ppid, "command": command, "label": label,
                         "started": 0.0})
        p.status, p.stats = "saved", stats
        p.calls, p.primitive_calls, p.seconds = stats.total_calls, stats.prim_calls, stats.total_tt
        return p

    def __repr__(self):
        return "<ProcessInfo pid=%r %r %s>" % (self.pid, self.command, self.status)

    def load(self):
        """Loads the stats file (once) and its totals; False if it cannot be read."""
        if self.stats is not None:
            return True
        if self.path is None:
            return False
        from rprofile.stats import Stats

        try:
            self.stats = Stats(self.path)
        except Exception:  # a damaged file is one process's loss, not the run's
            self.status, self.path = "unreadable", None
            return False
        self.calls = self.stats.total_calls
        self.primitive_calls = self.stats.prim_calls
        self.seconds = self.stats.total_tt
        return True


def _still_running(record):
    pid = record.get("pid")
    if not isinstance(pid, int):
        return False
    ticks = record.get("start_ticks")
    if ticks is not None and _start_ticks(pid) != ticks:
        return False  # gone (or its pid given to another process)
    return _state(pid) not in (None, "Z", "X")


def collect(folder, load=True):
    """Every process of the folder, in the order they started, as `ProcessInfo`s (their stats
    loaded unless load=False). Never waits for a process."""
    folder = os.fspath(folder)
    out = []
    try:
        names = os.listdir(folder)
    except OSError:
        return out
    for name in names:
        m = _MARKER.match(name)
        if not m:
            continue
        try:
            with open(os.path.join(folder, name)) as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue  # being rewritten right now, or damaged: skip it
        if not isinstance(record, dict):
            continue
        out.append(ProcessInfo(folder, m.group(1), record))
    out.sort(key=lambda p: (p.started, p.pid if isinstance(p.pid, int) else 0))
    if load:
        for p in out:
            p.load()
    return out


def merge(processes, first=None):
    """One rprofile.Stats adding up `first` (a profile, a snapshot or stats, if
    given) and every saved
    process's stats; None when there is nothing."""
    from rprofile.stats import Stats

    parts = ([first] if first is not None else []) + [p.stats for p in processes
                                                      if p.load() and p.stats is not None]
    if not parts:
        return None
    merged = Stats(parts[0])
    if len(parts) > 1:
        merged.add(*parts[1:])
    return merged


_STATUS_TEXT = {
    "running": "still running (not waited for)",
    "lost": "ended without saving its profile (killed, os.abort() or a crash)",
    "unreadable": "its stats file could not be read",
}


def print_summary(processes, folder=None, this_pid=None, file=None):
    """The per-process lines under the table: pid, parent, command, calls, seconds (tottime
    summed over its functions), and a note for a process that did not save. `folder` is named
    in the heading when its files are kept; `this_pid`'s line is marked as this process."""
    rows = []
    for p in processes:
        if p.status == "saved" and p.calls is not None:
            calls, seconds = "%d" % p.calls, "%.3f" % p.seconds
            note = "this process" if p.pid == this_pid else _ended_text(p.ended)
        else:
            calls = seconds = "-"
            note = _STATUS_TEXT.get(p.status, p.status)
        rows.append((p.pid, p.ppid, p.command, calls, seconds, note))
    print_table(rows, "calls", folder, file)


def print_table(rows, counted, folder=None, file=None):
    """Prints the lines per process that every run over several processes prints (traced or
    sampled): `rows` of (pid, parent pid or None, command, count, seconds, note), under a
    heading naming `folder` when its files are kept and the count column called `counted`."""
    file = sys.stdout if file is None else file
    if not rows:
        return
    where = "; each one's stats in %s" % folder if folder is not None else ""
    print("   Processes (%d%s):" % (len(rows), where), file=file)
    width = min(COMMAND_MAX, max(len("command"), *(len(r[2]) for r in rows)))
    print("   %8s %8s  %-*s %12s %10s" % ("pid", "parent", width, "command", counted,
                                          "seconds"), file=file)
    for pid, ppid, command, count, seconds, note in rows:
        line = "   %8s %8s  %-*s %12s %10s" % (pid, "-" if ppid is None else ppid, width, command,
                                               count, seconds)
        print((line + "  " + note).rstrip() if note else line, file=file)
    print(file=file)


def _ended_text(ended):
    if ended in (None, "exit"):
        return ""
    if ended.startswith("signal "):
        return "saved on %s, then ended by it" % ended[len("signal "):]
    return "saved at %s" % ended
