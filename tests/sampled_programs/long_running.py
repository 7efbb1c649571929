"""Runs until stdin closes, appending the running total of a fixed computation to a file every
round: the same numbers whether or not a sampler was attached."""
import sys


def step(i):
    return sum(j * j for j in range(i % 500))


with open(sys.argv[1], "w") as out:
    print("ready", flush=True)
    total = 0
    for i in range(int(sys.argv[2])):
        total += step(i)
        if i % 1000 == 0:
            out.write("%d %d\n" % (i, total))
            out.flush()
    print("done", total, flush=True)
    sys.stdin.readline()
