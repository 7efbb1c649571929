"""`python -m rprofile --pid PID` without --sample: the exact profiler attached to a running
Python 3.14+ process through ``sys.remote_exec`` (PEP 768).

The attacher makes a private folder (mode 0700) holding a listening Unix socket and a script,
and asks the target to run the script. CPython runs it on the target's main thread the next
time that thread checks its eval breaker (between bytecodes: a function's start, a loop's back
edge, a return from a call), never while the main thread is blocked in a call (sleep, I/O, a
lock wait): so the attacher waits ATTACH_TIMEOUT seconds for it, and on timeout says so and
leaves the script in place; when the main thread does run it later, it finds no one listening
and removes itself. The script (`_SCRIPT`) connects back to the socket, checks that the profiler
slot (``sys.monitoring`` tool 2) is free, imports rprofile (the target's own when it imported
one already; else the attacher's, by its file location, without touching sys.path), starts a
waiter thread and enables ``Profile(threads=True)``, whose ``sys.monitoring`` events reach every
thread. The waiter blocks on the socket: "stop" (the duration ended or Ctrl-C) makes it disable
the profiler and write the stats file into the folder (every thread's stats but its own: it may
have started running after enable()); the socket's end (the attacher died)
makes it disable without writing. An exit of the target meanwhile writes the file from an atexit
hook. Then it unregisters that hook, takes out the rprofile modules and importer-cache entries
it added, and ends. The attacher prints or writes the outputs from that file as a script run's
(`write_outputs`).

Lines the script sends: "profiling" (about to enable), "busy NAME" (tool 2 held), "error TEXT"
(could not import or enable: nothing was changed), "written", "failed TEXT" (stats not written).
"""

import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import time

from rprofile.outputs.run import asked_sort, check_writable, write_outputs

# Seconds the target has to run the script once asked (RPROFILE_ATTACH_TIMEOUT overrides it).
ATTACH_TIMEOUT = 10.0
# Seconds the target has to write its stats file once told to stop (and to start profiling
# once it runs the script).
WRITE_TIMEOUT = 120.0

# Options of the tracer's command line that an attach cannot honour.
_NOT_WITH_ATTACH = ("module", "threads", "async_aware", "clock", "timeline", "speedscope",
                    "memory", "rss", "subprocesses", "rate", "mode", "lines", "collapsed",
                    "flamegraph", "flamegraph_lines", "limit", "buffer_size", "blocking",
                    "types", "types_builtins", "types_only", "types_gc", "types_json", "calls")

# Run by the target (in a fresh namespace, on its main thread). Everything is inside a function
# so that nothing but its own frame is left; an exception escaping it would be printed on the
# target's stderr by CPython, so none does. @ARGS@ becomes the repr of its arguments.
_SCRIPT = r'''
def _rprofile_attach(sock_path, script_path, out_path, lib, version):
    import os, sys
    folder = os.path.dirname(script_path)
    try:
        os.unlink(script_path)  # run once: the file is gone as soon as it runs
    except OSError:
        pass
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
    except OSError:
        # The attacher gave up waiting (or died): leave nothing behind.
        s.close()
        try:
            os.rmdir(folder)
        except OSError:
            pass
        return

    def say(line):
        try:
            s.sendall(line.encode("utf-8", "replace") + b"\n")
        except OSError:
            pass

    if sys.version_info[:2] != version:
        say("error this process runs Python %d.%d, the attaching rprofile %d.%d"
            % (sys.version_info[:2] + version))
        s.close()
        return
    holder = sys.monitoring.get_tool(sys.monitoring.PROFILER_ID)
    if holder is not None:
        say("busy %s" % holder)
        s.close()
        return
    modules = set(sys.modules)
    importers = set(sys.path_importer_cache)

    def forget_imports():
        # What importing rprofile here added (not what the program imported itself).
        if "rprofile" not in modules:
            for name in [n for n in sys.modules if n not in modules]:
                if name == "rprofile" or name.startswith("rprofile."):
                    del sys.modules[name]
        for path in [p for p in sys.path_importer_cache if p not in importers]:
            del sys.path_importer_cache[path]

    try:
        rprofile = sys.modules.get("rprofile")
        if rprofile is None:
            import importlib.util
            init = os.path.join(lib, "rprofile", "__init__.py")
            spec = importlib.util.spec_from_file_location(
                "rprofile", init, submodule_search_locations=[os.path.dirname(init)])
            if spec is None:
                raise ImportError("no rprofile package at %s" % init)
            rprofile = importlib.util.module_from_spec(spec)
            sys.modules["rprofile"] = rprofile
            spec.loader.exec_module(rprofile)
        prof = rprofile.Profile(threads=True)
    except Exception as exc:
        forget_imports()
        say("error cannot import rprofile from %s: %s: %s" % (lib, type(exc).__name__, exc))
        s.close()
        return

    import _thread, atexit
    pid = os.getpid()
    lock = _thread.allocate_lock()
    done = []

    def finish(write, at_exit=False, abandoned=False):
        with lock:
            if done:
                return
            done.append(True)
        result = None
        try:
            prof.disable()
            if write:
                dump()
                result = "written"
        except Exception as exc:
            result = "failed %s: %s" % (type(exc).__name__, exc)
        if not at_exit:
            atexit.unregister(on_exit)
        forget_imports()
        if abandoned:
            for remove in (os.unlink, os.rmdir):  # the attacher died: its socket and folder
                try:
                    remove(sock_path if remove is os.unlink else folder)
                except OSError:
                    pass
        if result is not None:
            say(result)
        try:
            s.shutdown(socket.SHUT_RDWR)  # wakes the waiter when finished at exit
        except OSError:
            pass
        s.close()

    def dump():
        # Every thread's stats but the waiter's (it may have started after enable()).
        if not hasattr(prof, "thread_stats"):
            prof.dump_stats(out_path)
            return
        import marshal
        from pstats import add_func_stats
        stats = {}
        for (_, ident), rows in prof.thread_stats().items():
            if ident in waiter_ident:
                continue
            for func, row in rows.items():
                old = stats.get(func)
                stats[func] = row if old is None else add_func_stats(old, row)
        with open(out_path, "wb") as f:
            marshal.dump(stats, f)

    def waiter():
        try:
            data = s.recv(64)
        except OSError:
            data = b""
        prof.disable()  # first, so that the window ends here
        finish(data.startswith(b"stop"), abandoned=not data)

    def on_exit():
        prof.disable()
        if os.getpid() == pid:  # not in a child forked during the window: it stays quiet
            finish(True, at_exit=True)

    waiter_ident = [_thread.start_new_thread(waiter, ())]
    atexit.register(on_exit)
    say("profiling")
    try:
        prof.enable()  # the window opens: no call follows (it would be profiled)
    except Exception as exc:
        say("error %s" % exc)  # the attacher closes the socket: the waiter cleans up
    if done:
        prof.disable()  # the waiter finished before the window opened (the attacher left)


_rprofile_attach(*@ARGS@)
'''


def main(parser, options, args):
    """Attaches to process `options.pid` and profiles it for `options.duration` or until
    Ctrl-C; prints or writes the outputs asked for. Exits: 0, 1 (an output not written, or the
    target did not run the script or ended first), 2 (refused: bad options, no such process,
    not permitted, another version, remote debugging off, another profiler active)."""
    for name in _NOT_WITH_ATTACH:
        if getattr(options, name) != parser.defaults[name]:
            flag = {"module": "-m", "calls": "--no-calls"}.get(
                name, "--" + name.replace("_aware", ""))
            parser.error("%s does not go with --pid (attach the exact profiler)"
                         % flag.replace("_", "-"))
    if args:
        parser.error("--pid attaches to a running process: no program to start (%s)" % args[0])
    if options.duration is not None and not options.duration > 0:
        parser.error("--duration must be a number of seconds > 0, not %g" % options.duration)
    for name in ("outfile", "html", "pprof"):
        if getattr(options, name) is not None:
            setattr(options, name, os.path.abspath(getattr(options, name)))
            check_writable(parser, getattr(options, name))
    pid = options.pid
    if pid <= 0:
        parser.error("--pid must be a process id > 0, not %d" % pid)
    if pid == os.getpid():
        parser.error("--pid names this process; use rprofile.Profile() in the program instead")
    _check_target(pid)
    try:
        status = Attach(pid, options).run()
    except BrokenPipeError as exc:
        sys.stdout = None  # nothing more can be printed; no "Exception ignored" at exit
        sys.exit(exc.errno)
    sys.exit(status)


def _refuse(message):
    """Cannot attach: one line, exit status 2 (the target left as it was)."""
    print("rprofile: error: %s" % message, file=sys.stderr)
    sys.exit(2)


def _check_target(pid):
    """Refuses a process that this interpreter cannot attach the profiler to."""
    from rprofile.sampling import run as _sampled_run
    from rprofile._rprofile import _find_runtime

    try:
        _, library, version_hex = _find_runtime(pid)
    except (ValueError, OSError) as exc:
        _refuse(_sampled_run.explain(exc, pid))
    version = _version_of(library, version_hex)
    here = sys.version_info[:2]
    if version is None or version < (3, 14):
        which = "Python %d.%d" % version if version else "a Python older than 3.13"
        _refuse("process %d runs %s: attaching the exact profiler needs Python 3.14+ "
                "(sys.remote_exec); use --sample to sample it" % (pid, which))
    if version != here:
        _refuse("process %d runs Python %d.%d and this is Python %d.%d: attach with Python "
                "%d.%d and its rprofile (python%d.%d -m rprofile --pid %d)"
                % ((pid,) + version + here + version + version + (pid,)))
    if not sys.is_remote_debug_enabled():
        _refuse("remote debugging is disabled in this Python (PYTHON_DISABLE_REMOTE_DEBUG or "
                "-X disable-remote-debug): run rprofile without it")


def _version_of(library, version_hex):
    """(major, minor) of a target: from its debug offsets (3.13+), else its file's name."""
    import re

    if version_hex is not None:
        return ((version_hex >> 24) & 0xFF, (version_hex >> 16) & 0xFF)
    found = re.match(r"(?:lib)?python(\d+)\.(\d+)", os.path.basename(str(library)))
    return (int(found.group(1)), int(found.group(2))) if found else None


class Attach:
    """One attach: the folder, the socket, the script, the conversation, the outputs."""

    def __init__(self, pid, options):
        self.pid = pid
        self.options = options
        self.folder = None
        self.listener = None
        self.conn = None
        self.pending = b""
        self.keep_folder = False
        self.given = False  # the folder was given to the target's user

    def run(self):
        try:
            return self._run()
        except KeyboardInterrupt:
            print("rprofile: interrupted; process %d stops profiling, nothing written"
                  % self.pid, file=sys.stderr)
            return 1
        finally:
            self._close()

    def _run(self):
        self._prepare()
        self._send_script()
        if not self._wait_for_target():
            return 1
        # Running the script now: its import of rprofile may be slow on a loaded machine.
        first = self._read_line(WRITE_TIMEOUT)
        if first is None or first == "":
            return self._ended("before it started profiling")
        if first.startswith("busy "):
            _refuse("process %d already has a profiler active (sys.monitoring's profiler slot, "
                    "tool 2, is held by %r): stop it first, or use --sample"
                    % (self.pid, first[5:]))
        if first != "profiling":
            _refuse("cannot attach to process %d: %s" % (self.pid, first.partition(" ")[2]))
        line = self._wait_window(self.options.duration)
        if line is None:
            self._send(b"stop\n")
            try:
                line = self._read_line(WRITE_TIMEOUT)
            except KeyboardInterrupt:
                print("rprofile: interrupted while process %d wrote its profile; it stops "
                      "profiling, nothing written" % self.pid, file=sys.stderr)
                return 1
        if line is None:
            print("rprofile: process %d did not write its profile within %g s"
                  % (self.pid, WRITE_TIMEOUT), file=sys.stderr)
            return 1
        if line == "":
            return self._ended("before its profile was written")
        if line.startswith("error "):
            _refuse("cannot attach to process %d: %s" % (self.pid, line[6:]))
        if line.startswith("failed "):
            print("rprofile: process %d could not write its profile: %s" % (self.pid, line[7:]),
                  file=sys.stderr)
            return 1
        return 0 if self._outputs() else 1

    def _prepare(self):
        self.folder = tempfile.mkdtemp(prefix="rprofile-attach-")
        if len(os.path.join(self.folder, "s").encode()) > 100:
            # AF_UNIX paths are limited to 107 bytes.
            os.rmdir(self.folder)
            self.folder = tempfile.mkdtemp(prefix="rprofile-attach-", dir="/tmp")
        self.sock_path = os.path.join(self.folder, "s")
        self.script_path = os.path.join(self.folder, "attach.py")
        self.out_path = os.path.join(self.folder, "profile.prof")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.sock_path)
        self.listener.listen(1)
        lib = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        with open(self.script_path, "w", encoding="utf-8") as f:
            args = (self.sock_path, self.script_path, self.out_path, lib,
                    tuple(sys.version_info[:2]))
            f.write(_SCRIPT.replace("@ARGS@", repr(args)))
        self._give_to_target()

    def _give_to_target(self):
        """As root attaching to another user's process: the folder and what is in it become
        that user's, so that its script may connect, write the stats and remove itself."""
        if os.geteuid() != 0:
            return
        try:
            st = os.stat("/proc/%d" % self.pid)
        except OSError:
            return
        if st.st_uid == 0:
            return
        for path in (self.folder, self.sock_path, self.script_path):
            os.chown(path, st.st_uid, st.st_gid)
        self.given = True

    def _take_back(self):
        """The folder given to the target's user is root's again before its stats file is
        read, and the file must be a plain file of its own (not a link to one of root's)."""
        import stat

        if not self.given:
            return
        os.chown(self.folder, 0, 0)
        st = os.lstat(self.out_path)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise OSError("%s is not a plain file" % self.out_path)

    def _send_script(self):
        from rprofile.sampling import run as _sampled_run

        try:
            sys.remote_exec(self.pid, self.script_path)
        except RuntimeError as exc:
            if "not enabled in the remote process" in str(exc):
                _refuse("process %d has remote debugging disabled (PYTHON_DISABLE_REMOTE_DEBUG "
                        "in its environment or -X disable-remote-debug): restart it without, "
                        "or use --sample" % self.pid)
            _refuse("cannot attach to process %d: %s" % (self.pid, exc))
        except OSError as exc:
            _refuse(_sampled_run.explain(exc, self.pid))

    def _wait_for_target(self):
        """Waits for the script to connect back. False (said on stderr) when the target did
        not run it in time (left pending: it removes itself when run) or ended."""
        try:
            timeout = float(os.environ.get("RPROFILE_ATTACH_TIMEOUT", ATTACH_TIMEOUT))
        except ValueError:
            timeout = ATTACH_TIMEOUT
        deadline = time.monotonic() + timeout
        self.listener.settimeout(0.05)
        try:
            while True:
                try:
                    self.conn, _ = self.listener.accept()
                    self.conn.settimeout(None)
                    return True
                except TimeoutError:
                    pass
                if not os.path.exists("/proc/%d" % self.pid):
                    self._ended("before it ran the attach script")
                    return False
                if time.monotonic() > deadline:
                    break
        except KeyboardInterrupt:
            why = "interrupted before process %d ran the attach script" % self.pid
        else:
            why = ("process %d did not run the attach script within %g s: its main thread "
                   "runs no Python code (blocked in a call such as sleep, I/O or a lock wait?)"
                   % (self.pid, timeout))
        # The script stays pending: it runs when the main thread next runs Python code, then
        # finds no one listening and removes itself and its folder.
        self.keep_folder = True
        print("rprofile: %s; it will run the script when its main thread next runs Python "
              "code, and the script then removes itself without profiling; --sample samples "
              "it from outside now" % why, file=sys.stderr)
        return False

    def _wait_window(self, duration):
        """Waits for the end of the window: the duration, Ctrl-C, or a line from the target
        (its exit wrote the stats, or enabling failed). None when it is time to say stop.
        The window is announced inside the try, so that a Ctrl-C as soon as it is seen ends it;
        and a Ctrl-C that comes just before select() blocks wakes it through the signal
        module's wakeup fd (otherwise select() would wait on, the interrupt not yet raised)."""
        wake_r, wake_w = socket.socketpair()
        before = None
        try:
            wake_w.setblocking(False)
            wake_r.setblocking(False)
            before = signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
            until = "for %g s" % duration if duration else "until Ctrl-C"
            print("rprofile: profiling process %d (every thread) %s" % (self.pid, until),
                  file=sys.stderr, flush=True)
            deadline = None if duration is None else time.monotonic() + duration
            while True:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                if b"\n" in self.pending:
                    return self._read_line(0)
                ready, _, _ = select.select([self.conn, wake_r], [], [], left)
                if wake_r in ready:
                    try:
                        wake_r.recv(512)  # a signal came: its handler runs at the loop's top
                    except BlockingIOError:
                        pass
                elif ready:
                    return self._read_line(None)
        except KeyboardInterrupt:
            return None
        finally:
            if before is not None:
                signal.set_wakeup_fd(before)
            wake_r.close()
            wake_w.close()

    def _read_line(self, timeout):
        """The next line from the target; "" when it closed the socket, None on timeout."""
        self.conn.settimeout(timeout)
        try:
            while b"\n" not in self.pending:
                try:
                    data = self.conn.recv(4096)
                except TimeoutError:
                    return None
                except OSError:
                    data = b""
                if not data:
                    return ""
                self.pending += data
        finally:
            self.conn.settimeout(None)
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode("utf-8", "replace")

    def _send(self, data):
        try:
            self.conn.sendall(data)
        except OSError:
            pass  # it ended: the next read says so

    def _ended(self, when):
        print("rprofile: process %d ended %s" % (self.pid, when), file=sys.stderr)
        return 1

    def _outputs(self):
        """The table, or -o / --html / --pprof, from the stats file the target wrote."""
        from rprofile.stats import Stats

        options = self.options
        try:
            self._take_back()
            stats = self._load(Stats)
        except (OSError, ValueError, TypeError, EOFError) as exc:
            print("rprofile: cannot read the profile process %d wrote: %s" % (self.pid, exc),
                  file=sys.stderr)
            return False
        stats.files = []  # a temporary file's name: not part of the report
        title = _title(self.pid)
        sort = asked_sort(options)
        if sort is not None:
            stats.sort_stats(sort)
        written = write_outputs([
            ("outfile", options.outfile, lambda path: shutil.copyfile(self.out_path, path)),
            ("html", options.html, lambda path: stats.to_html(path, title=title)),
            ("pprof", options.pprof, stats.dump_pprof)])
        if options.outfile is None and options.html is None and options.pprof is None:
            stats.strip_dirs()
            if sys.version_info >= (3, 13) and isinstance(options.sort, tuple):
                stats.sort_stats(*options.sort)
            else:
                stats.sort_stats(options.sort)
            stats.print_stats()
        return written

    def _load(self, Stats):
        """The stats the target wrote. A window in which no profiled thread ran Python code
        (a Ctrl-C at once) gives no call: pstats refuses to load that; it is an empty report."""
        import marshal

        try:
            return Stats(self.out_path)
        except TypeError:
            with open(self.out_path, "rb") as f:
                if marshal.load(f) != {}:
                    raise
        print("rprofile: process %d ran no Python code on its profiled threads while the "
              "window was open: the profile holds no call" % self.pid, file=sys.stderr)
        return Stats()

    def _close(self):
        for s in (self.conn, self.listener):
            if s is not None:
                s.close()
        if self.folder is None:
            return
        if self.keep_folder:
            try:
                os.unlink(self.sock_path)
            except OSError:
                pass
        else:
            shutil.rmtree(self.folder, ignore_errors=True)


def _title(pid):
    """The report's title: the target's command line."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().rstrip(b"\0").split(b"\0")
    except OSError:
        argv = []
    words = [os.path.basename(os.fsdecode(argv[0]))] + [os.fsdecode(a) for a in argv[1:]] \
        if argv and argv[0] else []
    return "process %d%s" % (pid, ": " + " ".join(words) if words else "")
