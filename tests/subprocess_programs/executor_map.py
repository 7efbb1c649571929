"""concurrent.futures.ProcessPoolExecutor(4) mapping `cube` over 1,000 items under the start
method argv[1]; writes the pids that ran it to argv[2]."""
import concurrent.futures
import multiprocessing
import os
import sys


def cube(x):
    return os.getpid(), x ** 3


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    with concurrent.futures.ProcessPoolExecutor(4, mp_context=ctx) as pool:
        results = list(pool.map(cube, range(1000), chunksize=10))
    print("sum", sum(r for _, r in results))
    with open(sys.argv[2], "w") as f:
        f.write(" ".join(str(pid) for pid in sorted({pid for pid, _ in results})))
