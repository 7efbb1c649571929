"""One function's source compiled twice: two code objects with the same label.

The two compilations are made once, at import, so that both profilers (and both runs of
cProfile) see the same two code objects: _lsprof lists entries by code object address and, for
two entries with one label, pstats keeps the later one and sums their caller rows.
"""

SOURCE = """
def f(n):
    return n + 1 if n <= 0 else f(n - 1) + 1
"""
FIRST = compile(SOURCE, "<redefined>", "exec")
SECOND = compile(SOURCE, "<redefined>", "exec")


def main():
    first, second = {}, {}
    exec(FIRST, first)
    exec(SECOND, second)
    for _ in range(2):
        first["f"](2)
    second["f"](4)
