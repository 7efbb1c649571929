"""Four threads, each burning in its own function, under its own name."""
import threading
import time


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def alpha():
    burn(0.5)


def beta():
    burn(0.5)


def gamma():
    burn(0.5)


def delta():
    burn(0.5)


threads = [threading.Thread(target=f, name="worker-" + f.__name__)
           for f in (alpha, beta, gamma, delta)]
for t in threads:
    t.start()
for t in threads:
    t.join()
