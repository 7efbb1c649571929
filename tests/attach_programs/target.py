"""A program to attach the exact profiler to (tests/test_remote_attach.py). It says "ready",
then obeys one command a line on stdin, answering each with one line of JSON:
  go N     the main thread and two worker threads each call `counted` N times and `recurse`
           once (depth 5), counting their own calls; the answer gives the sum and whether
           the profiler slot (sys.monitoring tool 2) was held before and after the burst
  check    what an attach could have left: the tool's holder, threads, sys.path, modules, atexit
  fork     a child is forked and exits normally (its atexit hooks run)
  block    the main thread blocks reading the next line (no Python runs on it meanwhile)
  quit     the workers end; the answer is the results of every burst
Its main thread polls stdin with a timeout, so it runs Python code every 10 ms. With
--cprofile a cProfile profiler is enabled from the start."""

import _thread
import atexit
import json
import os
import select
import sys
import threading
import time
import warnings

DEPTH = 5


def tool():
    """Who holds the profiler slot (sys.monitoring tool 2; None before 3.12)."""
    monitoring = getattr(sys, "monitoring", None)
    return monitoring.get_tool(2) if monitoring else None


def counted(i):
    return i * 2 + 1


def recurse(n):
    return 0 if n == 0 else 1 + recurse(n - 1)


def in_worker():
    """Called by the worker threads alone, once a burst."""
    return threading.current_thread().name


def burst(n, counts, name):
    total = 0
    for i in range(n):
        total += counted(i)
        counts[name] += 1
    return total + recurse(DEPTH)


def worker_loop(name, go, done, counts, results, stop):
    while not stop.is_set():
        if go.wait(0.01):
            go.clear()
            results[name] = burst(counts["n"], counts, name)
            in_worker()
            done.set()


def main():
    if "--cprofile" in sys.argv:
        import cProfile

        cProfile.Profile().enable()
    path = list(sys.path)
    stop = threading.Event()
    counts = {"n": 0, "MainThread": 0}
    results = {}
    workers = []
    for k in (1, 2):
        name = "worker-%d" % k
        counts[name] = 0
        go, done = threading.Event(), threading.Event()
        t = threading.Thread(target=worker_loop, name=name,
                             args=(name, go, done, counts, results, stop))
        t.start()
        workers.append((t, go, done))
    own_threads = _thread._count()
    everything = []

    def say(obj):
        print(json.dumps(obj), flush=True)

    print("ready", flush=True)
    while True:
        if not select.select([sys.stdin], [], [], 0.01)[0]:
            continue
        command = sys.stdin.readline().split()
        if not command:
            break
        if command[0] == "go":
            n = int(command[1])
            before = tool()
            start = sum(counts[name] for name in counts if name != "n")
            counts["n"] = n
            for _, go, done in workers:
                done.clear()
                go.set()
            results["MainThread"] = burst(n, counts, "MainThread")
            for _, _, done in workers:
                while not done.wait(0.01):
                    pass
            after = tool()
            calls = sum(counts[name] for name in counts if name != "n") - start
            everything.append(sorted(results.items()))
            say({"calls": calls, "recursions": 3, "tool_before": before,
                 "tool_after": after})
        elif command[0] == "check":
            # The attach's thread has said its last word when the attacher exits; it may
            # still be returning.
            deadline = time.monotonic() + 30
            while _thread._count() > own_threads and time.monotonic() < deadline:
                time.sleep(0.01)
            say({"tool": tool(), "threads": _thread._count() - own_threads,
                 "names": sorted(t.name for t in threading.enumerate()),
                 "path": sys.path == path, "atexit": atexit._ncallbacks(),
                 "rprofile": sorted(n for n in sys.modules if n.split(".")[0] == "rprofile")})
        elif command[0] == "fork":
            # A child that ends as a program does (its atexit hooks run), printing nothing.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
                child = os.fork()
            if child == 0:
                sys.exit(0)
            _, status = os.waitpid(child, 0)
            say({"child_status": os.waitstatus_to_exitcode(status)})
        elif command[0] == "block":
            say({"blocking": True})
            sys.stdin.readline()
            say({"blocked": False})
        elif command[0] == "quit":
            break
    stop.set()
    for t, _, _ in workers:
        t.join()
    say({"results": everything})


if __name__ == "__main__":
    main()
