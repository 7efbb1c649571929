"""A thread started and joined inside main().

On 3.10/3.11 only the enabling thread is profiled; from 3.12 on every thread's events go to the
one profiler stack, so the child's frames land wherever the main thread is at that moment. A
long switch interval makes that moment fixed: the main thread blocks in start() (waiting for
the child to start), and the child then keeps the GIL until it ends, so the two threads' events
never interleave. (Interleaved, the counts would vary from run to run, and cProfile 3.12.1 and
3.13.0 with a Python timer, as in these tests, can segfault or hang.)
"""

import sys
import threading


def work(out, n):
    out.append(sum(i * i for i in range(n)))


def main():
    old = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        out = []
        t = threading.Thread(target=work, args=(out, 20))
        t.start()
        t.join()
    finally:
        sys.setswitchinterval(old)
