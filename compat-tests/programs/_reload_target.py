"""Reloaded by programs.imports: its module code and functions run again on each reload."""

VALUE = 1


def work(n):
    return [VALUE + i for i in range(n)]
