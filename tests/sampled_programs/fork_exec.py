"""Burns in before_exec(), forks a child that burns and exits, then execs another Python that
burns in after_exec() (the sampled process becomes another program mid-run)."""
import os
import sys
import time


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def before_exec():
    burn(0.4)


if len(sys.argv) > 1:
    def after_exec():
        burn(0.4)
    after_exec()
    sys.exit(0)
before_exec()
child = os.fork()
if child == 0:
    burn(0.2)
    os._exit(0)
os.waitpid(child, 0)
os.execv(sys.executable, [sys.executable, __file__, "again"])
