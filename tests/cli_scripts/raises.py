"""Does some work, then fails with an uncaught exception."""
import _workload


def fail():
    raise RuntimeError("fixture failure")


_workload.main()
fail()
