"""An exception unwinds several Python frames (and a C call) before main catches it."""


def level3(n):
    raise RuntimeError(n)


def level2(n):
    return level3(n) + 1


def level1(n):
    x = level2(n)
    return x


def bad_key(x):
    if x == 3:
        raise LookupError(x)
    return -x


def failing_generator():
    yield 1
    level1(0)


def main():
    for i in range(3):
        try:
            level1(i)
        except RuntimeError:
            pass
    try:
        sorted([1, 2, 3, 4], key=bad_key)
    except LookupError:
        pass
    try:
        for _ in failing_generator():
            pass
    except RuntimeError:
        pass
