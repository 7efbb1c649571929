"""multiprocessing.Pool(4) mapping `square` over 1,000 items under the start method argv[1];
writes the pids that ran it to argv[2]. Each worker's first call waits for the other three
workers' first calls (a barrier), so that all four do some of the work."""
import multiprocessing
import os
import sys

barrier = None


def keep(shared):
    global barrier
    barrier = shared


def square(x):
    global barrier
    if barrier is not None:
        barrier.wait(120)
        barrier = None
    return os.getpid(), x * x


if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    with ctx.Pool(4, initializer=keep, initargs=(ctx.Barrier(4),)) as pool:
        results = pool.map(square, range(1000), chunksize=10)
    print("sum", sum(r for _, r in results))
    with open(sys.argv[2], "w") as f:
        f.write(" ".join(str(pid) for pid in sorted({pid for pid, _ in results})))
