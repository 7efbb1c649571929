"""Maps task() over 8 items in a pool of 4 worker processes: multiprocessing's Pool or
concurrent.futures' ProcessPoolExecutor (argv[2]: pool, executor) under the start method argv[1]
(fork, spawn, forkserver). Each task burns CPU in heavy() for 0.15 s and in light() for 0.05 s
(every other task light() first, so that the workers are not all in one at once), measured
inside them with perf_counter; the parent burns in parent_work() for 0.2 s. Prints, as JSON,
the seconds measured per function (summed over the workers) and the workers' pids."""
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def heavy():
    t = time.perf_counter()
    burn(0.15)
    return time.perf_counter() - t


def light():
    t = time.perf_counter()
    burn(0.05)
    return time.perf_counter() - t


def task(i):
    if i % 2:
        spent_light = light()
        return os.getpid(), heavy(), spent_light
    return os.getpid(), heavy(), light()


def parent_work():
    t = time.perf_counter()
    burn(0.2)
    return time.perf_counter() - t


if __name__ == "__main__":
    method, kind = sys.argv[1], sys.argv[2]
    context = multiprocessing.get_context(method)
    if kind == "pool":
        with context.Pool(4) as pool:
            results = pool.map(task, range(8), chunksize=1)
    else:
        with ProcessPoolExecutor(4, mp_context=context) as executor:
            results = list(executor.map(task, range(8)))
    spent = {"parent_work": parent_work(),
             "heavy": sum(r[1] for r in results), "light": sum(r[2] for r in results),
             "workers": sorted({r[0] for r in results})}
    print(json.dumps(spent), flush=True)
