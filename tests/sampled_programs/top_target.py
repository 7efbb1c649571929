"""What `rprofile top` is shown: the main thread burning in `hot_function`, and a thread named
`worker` that mostly sleeps, for the seconds given."""

import sys
import threading
import time


def hot_function():
    x = 0
    for i in range(20000):
        x += i
    return x


def worker_loop():
    while True:
        time.sleep(0.01)


def main(seconds):
    threading.Thread(target=worker_loop, name="worker", daemon=True).start()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        hot_function()


if __name__ == "__main__":
    main(float(sys.argv[1]))
