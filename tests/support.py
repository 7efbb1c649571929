"""Helpers shared by the test suites (tests/ and compat-tests/ both have this folder on their
path, see pyproject.toml)."""


class Tick:
    """A counting timer: each call returns the next integer (1, 2, 3, ...), which makes
    cProfile deterministic and so lets its statistics be compared with rprofile's exactly."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return self.n
