"""The tracer in child processes (``python -m rprofile --subprocesses``,
``Profile(subprocesses=...)``): every Python process the profiled program starts is profiled
with the same options and saves its stats in the run's folder (``rprofile.children.files``).

How a process comes to be profiled:

- A new interpreter (``subprocess`` running Python, multiprocessing's spawn and forkserver):
  the profiling process puts ``RPROFILE_SUBPROCESSES`` (the folder and the options, JSON) in
  its environment; rprofile's wheel installs ``rprofile_subprocesses.pth`` in site-packages,
  whose one line calls `boot()` at interpreter start when that variable is set. The variable
  stays in the child's environment, so grandchildren are profiled alike. An interpreter without
  rprofile installed (another virtualenv, another version) runs unprofiled; so does one started
  with ``-S`` (no site).
- ``os.fork()`` (multiprocessing's fork, its forkserver's children, ``ProcessPoolExecutor``): an
  ``os.register_at_fork`` hook clears the profile the child inherited (its file holds only its
  own work; the calls open in the parent are left unmatched, as calls open at ``clear()`` are)
  and gives it a file of its own.

How a child saves (once; atomically; a write that fails loses that child's file only):

- at interpreter exit (``atexit``, registered before the program's own handlers so it runs after
  them);
- in ``os._exit``, which is wrapped: multiprocessing's fork and forkserver children end there,
  after their finalizers, without running ``atexit`` (wrapping it covers every fork child; a
  multiprocessing finalizer would not do: each child's ``_bootstrap`` clears the registry);
- on SIGTERM, where the child has no handler of its own: ``Pool.terminate()`` (what ``with
  Pool()`` ends with) stops idle workers so. The handler saves, then the child dies by SIGTERM as
  it would have;
- before ``os.execv``/``os.execve`` (every ``os.exec*`` calls one), which are wrapped too: the
  new program, if Python, is profiled as a process of its own.

A child killed by SIGKILL, ``os.abort()`` or a crash saves nothing; its start marker lets the
summary say so. multiprocessing's helpers (the resource tracker, the forkserver itself) are not
profiled: they are not the program's work and they outlive it. The forkserver's children are.
"""

import atexit
import json
import os
import signal
import sys

from rprofile.children import files as _processes
from rprofile._rprofile import _watch_sigterm

ENV = "RPROFILE_SUBPROCESSES"
# The variable's format; a child whose rprofile reads another runs unprofiled.
FORMAT = 1

# multiprocessing's helper processes, by the code their `-c` runs.
_HELPERS = {
    "from multiprocessing.resource_tracker import main": "resource tracker",
    "from multiprocessing.semaphore_tracker import main": "resource tracker",
    "from multiprocessing.forkserver import main": "forkserver",
}


class _Session:
    """This process's part in a run: the folder, the options children are profiled with, the
    profiler here (None in the forkserver, which only forks) and the class a child's is made
    of (rprofile.Profile)."""

    def __init__(self, folder, options, profile, root, make=None):
        self.folder = folder
        self.options = options
        self.profile = profile
        self.make = make if make is not None else type(profile)
        self.root = root
        self.pid = os.getpid()
        self.process = None      # this process's _processes.Process (children only)
        self.saved = False
        self.saving = False      # a save is being written
        self.pending = None      # a signal that came while it was
        self.active = True       # a root session stops following children at disable()
        self.environ = None      # the variable as it was before (root sessions)
        self.temporary = False   # a folder made for a Profile(subprocesses=True), removed at exit
        self.given = None        # the root profiler's `subprocesses` when the session began
        self.loaded = {}         # (path, mtime) of a child's stats file: its loaded Stats, totals


_session = None
_hooks_installed = False
_root_name = None
_booted = False
_real_exit = os._exit


# -- the root: a Profile(subprocesses=...) -------------------------------------------------------

def start(prof):
    """At `prof.enable()`: children started from now on are profiled (`Profile._enable_
    subprocesses`)."""
    global _session
    s = _session
    where = prof.subprocesses
    if s is not None and s.profile is prof and s.pid == os.getpid():
        if not s.root:
            return  # a fork child's inherited profiler, enabled again: still this child's
        if s.given == where:
            s.options = prof._options()  # enable() may have changed subcalls or builtins
            _set_environ(s)
            return
    if s is not None and s.pid == os.getpid() and (s.active or not s.root):
        raise RuntimeError("another profiler already follows this process's subprocesses")
    options = prof._options()
    if where is True:
        folder = _processes.temporary_folder()
    else:
        folder = os.path.abspath(os.fspath(where))
        _processes.prepare_folder(folder)
    s = _Session(folder, options, prof, root=True)
    s.given = where
    s.temporary = where is True
    _install_hooks()
    _session = s
    _set_environ(s)


def stop(prof):
    """At `prof.disable()`: children started from now on are not profiled."""
    s = _session
    if s is not None and s.root and s.profile is prof and s.pid == os.getpid():
        s.active = False
        if s.environ is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = s.environ
        s.environ = None


def _set_environ(s):
    if s.environ is None:
        s.environ = os.environ.get(ENV)
    s.active = True
    os.environ[ENV] = json.dumps({"format": FORMAT, "folder": s.folder, "options": s.options})


def folder_of(prof):
    """The folder of `prof`'s run, if it follows subprocesses here; else None."""
    s = _session
    if s is not None and s.profile is prof and s.root and s.pid == os.getpid():
        return s.folder
    return None


def children(prof, load=True):
    """The other processes of `prof`'s run (`_processes.ProcessInfo`, their stats loaded
    unless load=False), or None when `prof` does not follow subprocesses in this process. A
    file already loaded and unchanged since is not read again."""
    folder = folder_of(prof)
    if folder is None:
        return None
    me = os.getpid()
    kids = [p for p in _processes.collect(folder, load=False) if p.pid != me]
    if load:
        loaded = _session.loaded
        for p in kids:
            if p.path is None:
                continue
            try:
                stamp = (p.path, os.stat(p.path).st_mtime_ns)
            except OSError:
                continue
            if stamp in loaded:
                p.stats, p.calls, p.primitive_calls, p.seconds = loaded[stamp]
            elif p.load():
                loaded[stamp] = (p.stats, p.calls, p.primitive_calls, p.seconds)
    return kids


def name_this_process(command, label):
    """What this (root) process is called in the summary and its file's name, where
    ``sys.orig_argv`` is not the program's (the command line's run)."""
    global _root_name
    _root_name = (command, label)


def _this_name():
    if _root_name is not None:
        return _root_name
    return _processes.describe(getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv)


def save_own(prof):
    """Writes this (root) process's own stats as its file in the folder, as a child's is (the
    command line keeps every process's file)."""
    folder = folder_of(prof)
    if folder is not None:
        command, label = _this_name()
        me = _processes.register(folder, command=command, label=label)
        me.save(lambda path: _write_stats(prof, path), ended="exit")


def merged_stats(prof, snapshot):
    """The stats dict of `snapshot` (prof's own) and the saved children's; None when `prof`
    has no children's stats to add here."""
    kids = children(prof)
    if not kids or not any(p.status == "saved" for p in kids):
        return None
    return _processes.merge(kids, first=snapshot).stats


def processes(prof):
    """This process (from its profile) and the others of the run, or None when `prof` does
    not follow subprocesses here."""
    kids = children(prof)
    if kids is None:
        return None
    from rprofile.stats import Stats

    command, label = _this_name()
    me = _processes.ProcessInfo.in_memory(Stats(prof._take_snapshot()), os.getpid(),
                                          os.getppid(), command, label)
    return [me] + kids


# -- a child ----------------------------------------------------------------------------------

def boot(make):
    """Called (through ``rprofile._boot_subprocess``) by rprofile_subprocesses.pth at
    interpreter start when `ENV` is set: profiles this process as the run's other processes
    are, with a profiler made by make(**options) (rprofile.Profile). Never raises: a child that
    cannot be profiled runs as it would have."""
    try:
        _boot(make)
    except Exception as exc:
        try:
            sys.stderr.write("rprofile: not profiling process %d: %s\n" % (os.getpid(), exc))
        except Exception:
            pass


def _boot(make):
    global _session, _booted
    if _booted:
        return  # site-packages reached twice (a venv's lib64 link to lib): one profile
    _booted = True
    try:
        config = json.loads(os.environ[ENV])
    except (KeyError, ValueError):
        return
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        return
    argv = list(getattr(sys, "orig_argv", None) or [])
    helper = _helper(argv)
    if helper == "resource tracker" or _runs_rprofile(argv):
        return  # not the program's work (a nested rprofile decides for itself)
    folder, options = config["folder"], _usable(config["options"])
    if helper == "forkserver":
        # It only forks: its children are profiled, it is not.
        _install_hooks()
        _session = _Session(folder, options, None, root=False, make=make)
        return
    _start_child(folder, options, make(**options), fresh=True)


def _usable(options):
    """The parent's profiler options as this interpreter can take them: objects by type need
    3.13.3+ (a child on an older Python is profiled without them, not left out: its calls are,
    even under calls=False)."""
    if isinstance(options, dict) and options.get("types") and sys.version_info < (3, 13, 3):
        options = {k: v for k, v in options.items() if not k.startswith("types") and k != "calls"}
    return options


def _start_child(folder, options, profile, command=None, label=None, fresh=False):
    """Profiles this new process from here on with `profile` (a fork's inherited one, or a
    `fresh` one). In this order: the SIGTERM handler (which saves whatever session there is),
    the session, the start marker, then the profiler enabled or cleared (the setup is not the
    program's work). A process killed before its marker is written has done none of the
    program's work."""
    global _session
    _install_sigterm()
    s = _Session(folder, options, profile, root=False)
    _session = s
    _install_hooks()
    s.process = _processes.register(folder, command=command, label=label)
    if fresh:
        profile.enable()
    else:
        # A fork's inherited profile: the parent's data is not this process's work.
        profile.clear()


def _after_fork_in_child():
    """os.register_at_fork's after_in_child: the new process gets a profile of its own."""
    global _session
    s = _session
    if s is None or s.pid == os.getpid():
        return
    if not s.active:
        _session = None  # a root profiler disabled: this child is not followed
        return
    try:
        if s.process is not None:
            parent_command, label = s.process.info["command"], s.process.info["label"]
        else:
            parent_command, label = _this_name()
        command = "fork of %d (%s)" % (s.pid, parent_command)
        if s.profile is None:  # a forkserver's child: a profiler of its own
            _start_child(s.folder, s.options, s.make(**s.options), command, label, fresh=True)
        else:
            _start_child(s.folder, s.options, s.profile, command, label)
    except Exception as exc:
        _session = None
        try:
            sys.stderr.write("rprofile: not profiling process %d: %s\n" % (os.getpid(), exc))
        except Exception:
            pass


def _helper(argv):
    for i, arg in enumerate(argv[:-1]):
        if arg == "-c":
            code = argv[i + 1]
            for start, name in _HELPERS.items():
                if code.startswith(start):
                    return name
            return None
    return None


def _runs_rprofile(argv):
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m":
            return argv[i + 1].partition(".")[0] == "rprofile"
    return False


# -- saving -----------------------------------------------------------------------------------

def _write_stats(prof, path):
    """This process's own stats (never a merge) as a marshal file at path."""
    snapshot = prof._take_snapshot()
    with open(path, "wb") as f:
        f.write(snapshot.marshal())


def _save(ended):
    """Saves this child's stats once: disables its profiler (closing the calls still open, as
    disable() does) and writes its file. SIGTERM is held back meanwhile (`Pool.terminate()`
    often stops a worker that is already ending: the file is written whole, then the signal
    acts). Errors are swallowed: the process is ending. Returns the signal mask to restore,
    or None when nothing was saved."""
    s = _session
    if (s is None or s.root or s.profile is None or s.process is None or s.saved
            or s.pid != os.getpid()):
        return None
    s.saved = True
    s.saving = True
    mask = _hold_sigterm()
    try:
        try:
            s.profile.disable()
        except RuntimeError:
            pass  # in the middle of an event (a signal arrived there): saved as it is
        name = _multiprocessing_name()
        if name is not None:
            s.process.rename(command=name, label=name)
        s.process.save(lambda path: _write_stats(s.profile, path), ended=ended,
                       extra=_record(s.profile))
    except Exception:
        pass
    finally:
        s.saving = False
    return mask


def _record(prof):
    """A memory=True child's bytes per function and a types=True child's objects by type, for
    its record (the parent adds them up)."""
    record = {}
    rows = prof._memory_stats()
    if rows is not None:
        record["memory"] = [[file, line, name, *values] for (file, line, name), *values in rows]
    types = prof._types_stats()
    if types is not None:
        record["types"] = [[name, created, destroyed, peak, peak_time, older,
                            [[*func, made, gone] for func, made, gone in funcs],
                            [[alive, [list(func) for func in stack]] for alive, stack in stacks]]
                           for name, created, destroyed, peak, peak_time, older, funcs, stacks
                           in types]
    return record or None


def children_memory(prof):
    """The memory rows ``(file, line, name), allocations, allocated, freed, net, peak`` the
    saved children of `prof`'s run recorded (none when it does not follow subprocesses)."""
    for p in children(prof, load=False) or ():
        if p.status == "saved":
            for file, line, name, *values in p.record.get("memory") or ():
                yield (file, line, name), *values


def children_types(prof):
    """The rows of ``Profile._types_stats()`` the saved children of `prof`'s run recorded
    (none when it does not follow subprocesses)."""
    for p in children(prof, load=False) or ():
        if p.status == "saved":
            for name, created, destroyed, peak, peak_time, older, funcs, stacks in (
                    p.record.get("types") or ()):
                yield (name, created, destroyed, peak, peak_time, older,
                       [(tuple(func), made, gone) for *func, made, gone in funcs],
                       [(alive, tuple(tuple(func) for func in stack))
                        for alive, stack in stacks])


def _hold_sigterm():
    """Blocks SIGTERM in this thread; returns the mask to restore (None where it cannot)."""
    try:
        return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    except (AttributeError, OSError, ValueError):
        return None


def _release(mask):
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _multiprocessing_name():
    """The multiprocessing name of this process ("ForkPoolWorker-2"), if it is one of its
    children."""
    mp = sys.modules.get("multiprocessing.process")
    if mp is None:
        return None
    try:
        proc = mp.current_process()
        if mp.parent_process() is None:
            return None
        return proc.name
    except Exception:
        return None


def _at_exit():
    mask = _save("exit")
    s = _session
    if s is not None and s.root and s.temporary and s.pid == os.getpid():
        import shutil

        shutil.rmtree(s.folder, ignore_errors=True)
    _release(mask)  # a SIGTERM that came meanwhile acts now
    if s is not None and s.pending is not None and s.pid == os.getpid():
        _die_by(s.pending)


def _exit(status):
    """os._exit, saving this child's stats first (the process then ends with `status`, as
    asked, whatever signal came meanwhile)."""
    _save("os._exit")
    _real_exit(status)


def _on_sigterm(signum, frame):
    s = _session
    if s is not None and s.saving and s.pid == os.getpid():
        s.pending = signum  # (delivered to another thread) acted on once the file is whole
        return
    _release(_save("signal SIGTERM"))
    _die_by(signum)


def _die_by(signum):
    """Ends the process by `signum` as it would have ended without this handler."""
    signal.signal(signum, signal.SIG_DFL)
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
    except (AttributeError, OSError, ValueError):
        pass
    os.kill(os.getpid(), signum)


def _install_hooks():
    """Once per interpreter (forked children inherit them): the exit hook first of any the
    program registers, the wrappers of os._exit, os.execv and os.execve, the fork hook."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_at_exit)
    os._exit = _exit
    # os.execl*, execle, execlp* and execvp* call these two.
    os.execv = _saving_before_exec(os.execv)
    os.execve = _saving_before_exec(os.execve)
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _saving_before_exec(real):
    """`real` (os.execv or os.execve), saving this child's stats first: the program it is
    replaced by, if Python, is profiled as a process of its own (same pid, another file). If
    the exec fails, profiling goes on and the file is written again at the end."""

    def exec_(*args, **kwargs):
        s = _session
        _release(_save("exec"))  # the new program must not start with SIGTERM blocked
        try:
            return real(*args, **kwargs)
        except BaseException:
            if s is not None and s is _session and s.saved and s.pid == os.getpid():
                s.saved = False
                s.profile.enable()
            raise

    exec_.__name__ = exec_.__qualname__ = real.__name__
    exec_.__doc__ = real.__doc__
    return exec_


def _install_sigterm():
    """Saves on SIGTERM, unless the process handles (or ignores) SIGTERM itself. The native
    part (`_watch_sigterm`) resends a SIGTERM that Python has not acted on, so that one that
    came just before the main thread blocked is not lost (a fork's child makes its own)."""
    try:
        current = signal.getsignal(signal.SIGTERM)
        if current is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
        elif current is not _on_sigterm:
            return
        _watch_sigterm()
    except (ValueError, OSError):
        pass  # not the main thread
