"""Starts a fork Pool(2) and makes sure both workers run, says "ready", waits for a line on
stdin, then maps pool_burn.task over 4 items and prints what the workers measured (as
pool_burn.py does) and exits."""
import json
import multiprocessing
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pool_burn import task  # noqa: E402


def pid(_):
    return os.getpid()


if __name__ == "__main__":
    with multiprocessing.get_context("fork").Pool(2) as pool:
        started = set()
        while len(started) < 2:
            started.update(pool.map(pid, range(8), chunksize=1))
        print("ready", flush=True)
        sys.stdin.readline()
        results = pool.map(task, range(4), chunksize=1)
    print(json.dumps({"heavy": sum(r[1] for r in results), "light": sum(r[2] for r in results),
                      "workers": sorted({r[0] for r in results}), "started": sorted(started)}),
          flush=True)
