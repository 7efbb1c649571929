"""Three functions burn CPU for 1.2 s, 0.6 s and 0.2 s (measured inside them with
perf_counter); the measured seconds are printed as JSON at the end."""
import json
import sys
import time

spent = {}


def burn(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def big():
    t = time.perf_counter()
    burn(1.2 * SCALE)
    spent["big"] = time.perf_counter() - t


def medium():
    t = time.perf_counter()
    burn(0.6 * SCALE)
    spent["medium"] = time.perf_counter() - t


def small():
    t = time.perf_counter()
    burn(0.2 * SCALE)
    spent["small"] = time.perf_counter() - t


SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
if len(sys.argv) > 2:
    # Attach mode: say we are ready, wait for the sampler to be attached.
    print("ready", flush=True)
    sys.stdin.readline()
big()
medium()
small()
print(json.dumps(spent), flush=True)
