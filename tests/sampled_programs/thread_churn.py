"""Threads started three at a time, each burning 2 ms in `work`, joined, again and again for the
seconds given (default 2): a sampler often reads a thread state its thread has not started."""
import sys
import threading
import time


def work():
    end = time.perf_counter() + 0.002
    while time.perf_counter() < end:
        pass


def main(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
