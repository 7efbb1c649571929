"""Phase A, then phase B, each burning a CPU for the seconds given, then idling: a flight
recorder's window must hold the phases it covers and no other. Says each phase's start on
stdout, so that a test can signal the sampler during one."""

import sys
import time


def burn(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def phase_a(seconds):
    burn(seconds)


def phase_b(seconds):
    burn(seconds)


def idle(seconds):
    time.sleep(seconds)


if __name__ == "__main__":
    a, b, rest = (float(x) for x in sys.argv[1:4])
    print("a started", flush=True)
    phase_a(a)
    print("b started", flush=True)
    phase_b(b)
    idle(rest)
