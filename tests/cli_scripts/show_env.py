"""Prints what a profiled script sees of how it was started; test_cli compares the lines.

The sibling import works only if sys.path[0] is this script's directory.
"""
import sys

import _workload

spec = globals().get("__spec__")
print("argv:", sys.argv)
print("path0:", sys.path[0])
print("name:", __name__)
print("file:", __file__)
print("package:", __package__)
print("cached:", globals().get("__cached__"))
print("spec:", None if spec is None else (spec.name, spec.origin))
print("sys.modules['__main__'] is this module:", sys.modules["__main__"].__dict__ is globals())
print("workload:", _workload.main())
