"""One small deterministic program per profiled feature, each with a ``main()``.

Modules whose name starts with ``_`` are helpers, not programs.
"""
