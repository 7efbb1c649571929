"""Starts a Python child that waits in `child_waits` for its stdin to close, says "ready" once
the child did, and waits for a line on stdin itself (then closes the child's and exits 0)."""
import subprocess
import sys

CHILD = ("import sys\n"
         "def child_waits():\n"
         "    print('ready', flush=True)\n"
         "    sys.stdin.read()\n"
         "child_waits()\n")

child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
assert child.stdout.readline().strip() == "ready"
print("ready", flush=True)
sys.stdin.readline()
child.stdin.close()
sys.exit(child.wait())
