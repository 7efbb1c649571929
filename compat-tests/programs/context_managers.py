"""Context managers: class-based, contextlib.contextmanager, suppress and ExitStack."""

import contextlib


class Managed:
    def __init__(self, log, swallow=False):
        self.log = log
        self.swallow = swallow

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, exc_type, exc, tb):
        self.log.append("exit")
        return self.swallow


@contextlib.contextmanager
def generated(log):
    log.append("setup")
    try:
        yield log
    finally:
        log.append("teardown")


def main():
    log = []
    with Managed(log):
        pass
    with Managed(log, swallow=True):
        raise ValueError("swallowed")
    with generated(log), Managed(log):
        log.append("body")
    try:
        with generated(log):
            raise KeyError("through the generator")
    except KeyError:
        pass
    with contextlib.suppress(ZeroDivisionError):
        1 / 0
    with contextlib.ExitStack() as stack:
        for _ in range(3):
            stack.enter_context(Managed(log))
        stack.callback(log.clear)
