"""Runs child.py with subprocess.run (7 calls of child_function, a grandchild making 2, exit
status 5), then one child with -S (no site: not profiled), and exits with status 3."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))


def parent_function():
    return subprocess.run([sys.executable, os.path.join(here, "child.py"), "7", "grandchild",
                           "5"])


done = parent_function()
print("child exit status", done.returncode)
plain = subprocess.run([sys.executable, "-S", "-c", "print('no site here')"])
print("-S exit status", plain.returncode)
sys.exit(3)
