"""Run as a child: calls `child_function` argv[1] times, starts a grandchild if argv[2] says
so, and exits with status argv[3] (default 0)."""
import subprocess
import sys


def child_function(i):
    return i * 2


def main():
    n = int(sys.argv[1])
    total = sum(child_function(i) for i in range(n))
    print("child total", total, flush=True)
    if len(sys.argv) > 2 and sys.argv[2] == "grandchild":
        subprocess.run([sys.executable, __file__, "2"], check=True)
    return int(sys.argv[3]) if len(sys.argv) > 3 else 0


sys.exit(main())
