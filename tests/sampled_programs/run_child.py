"""Burns in parent_work() for 0.2 s, then runs child_burn.py in another interpreter and waits
for it: argv[1] says how, "direct" (subprocess.run([sys.executable, child])) or "shell" (through
/bin/sh, a process that is not Python, whose child is). Prints a line, then exits with status 3."""
import os
import subprocess
import sys
import time


def parent_work():
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:
        pass


parent_work()
child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child_burn.py")
if sys.argv[1] == "direct":
    subprocess.run([sys.executable, child], check=True)
else:
    # `; true` keeps the shell from exec'ing Python in its own place.
    subprocess.run("'%s' '%s'; true" % (sys.executable, child), shell=True, check=True)
print("parent done", flush=True)
sys.exit(3)
