"""The per-process outputs of a sampling run over several processes (``--sample
--subprocesses``): each read process's stats saved in the run's folder next to ``-o`` through
``rprofile.children.files``, which the tracer's ``--subprocesses`` writes too (``OUT.processes``:
``KEY.json`` and ``KEY-LABEL.prof`` per process), and the lines per process under the printed
table, in that module's columns with samples where the tracer counts calls.
"""

import os
import signal

from rprofile.children import files as _processes

folder_for = _processes.folder_for


def save(processes, folder):
    """Saves each read process's stats (a ``SampledProcess``'s sampler) in `folder`, emptied
    of an earlier run's files first; returns the paths written. A process read without samples
    gets no file (pstats cannot load one without functions): the summary lists it. Raises
    OSError (the folder cannot be made, or a file cannot be written)."""
    _processes.prepare_folder(folder)
    written = []
    for p in processes:
        if p.sampler is None or not p.samples:
            continue
        record = _processes.register(folder, pid=p.pid, ppid=p.ppid, argv=p.argv,
                                     sampled=True, samples=p.samples, end=p.end,
                                     exit_status=p.exit_status)
        written.append(record.save(p.sampler.dump_stats))
    return written


def print_summary(processes, folder=None, file=None):
    """The lines under the table: per process its pid, parent, command, samples and the
    seconds they stand for, and how it ended when that is worth saying (killed, an exit
    status, reads that failed), or why it was never read."""
    rows = []
    for p in processes:
        if p.sampler is not None:
            samples, seconds = "%d" % p.samples, "%.3f" % p.seconds
            note = _ended(p)
        else:
            samples = seconds = "-"
            note = "not read: %s" % p.end
        rows.append((p.pid, p.ppid or None, _command(p), samples, seconds, note))
    _processes.print_table(rows, "samples", folder, file)


def _command(p):
    """The command a process is listed under; one never read may not be Python, so its
    program is named too."""
    if not p.argv:
        return "?"
    if p.sampler is not None:
        return _processes.describe(p.argv)[0]
    return _processes.describe(["", os.path.basename(p.argv[0])] + p.argv[1:])[0]


def _ended(p):
    """What to say of how a read process ended: nothing for a plain exit or the run's end."""
    if p.end.startswith("failed: "):
        return "reads failed: " + p.end[len("failed: "):]
    status = p.exit_status
    if not status:
        return ""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return "killed by %s" % signal.Signals(number).name
        except ValueError:
            return "killed by signal %d" % number
    return "exit status %d" % os.WEXITSTATUS(status)
