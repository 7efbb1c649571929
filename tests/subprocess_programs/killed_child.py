"""Starts two sleepers: kills one with SIGKILL once it runs, lets the other finish; of two
multiprocessing children (fork), kills one with SIGKILL and stops the other with SIGTERM
(Process.terminate). Prints their exit statuses; writes the killed ones' pids to
argv[1]/killed (argv[1] is a scratch folder)."""
import multiprocessing
import os
import signal
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
scratch = sys.argv[1]


def start(name, seconds):
    ready = os.path.join(scratch, name)
    proc = subprocess.Popen([sys.executable, os.path.join(here, "sleeper.py"), ready,
                             str(seconds)])
    while not os.path.exists(ready):
        time.sleep(0.01)
    return proc


def spin(ready):
    with open(ready, "w"):
        pass
    while True:
        time.sleep(0.01)


def start_spinning(ctx, name):
    ready = os.path.join(scratch, name)
    proc = ctx.Process(target=spin, args=(ready,))
    proc.start()
    while not os.path.exists(ready):
        time.sleep(0.01)
    return proc


if __name__ == "__main__":
    doomed = start("doomed", 60)
    doomed.send_signal(signal.SIGKILL)
    print("killed child status", doomed.wait())
    fine = start("fine", 0)
    print("finished child status", fine.wait())
    ctx = multiprocessing.get_context("fork")
    proc = start_spinning(ctx, "spinning")
    proc.kill()
    proc.join()
    print("multiprocessing child exit code", proc.exitcode)
    stopped = start_spinning(ctx, "stopping")
    stopped.terminate()
    stopped.join()
    print("terminated child exit code", stopped.exitcode)
    with open(os.path.join(scratch, "killed"), "w") as f:
        f.write("%d %d" % (doomed.pid, proc.pid))
