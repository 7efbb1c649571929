"""An event loop that idles, freezes for 1.5 s in one function, and idles again: a CPU-bound
freeze (`cpu`) or a blocking call (`sleep`). A stall of about 1.5 s in that function must be
found, and none in the idle parts. A second argument: the seconds it idles after the freeze
(default 1)."""

import sys
import time


def wait_for_events(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.02)


def freeze(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def blocked(seconds):
    time.sleep(seconds)


if __name__ == "__main__":
    wait_for_events(1.0)
    (freeze if sys.argv[1] == "cpu" else blocked)(1.5)
    wait_for_events(float(sys.argv[2]) if len(sys.argv) > 2 else 1.0)
