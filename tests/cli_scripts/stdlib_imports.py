"""Imports modules that ``python -m cProfile`` itself has loaded before the program starts
(through ``pstats``: ``dataclasses``, ``inspect``, ``ast``, ``dis``, ``typing``, ...) and uses
some of them: under either profiler, an import of a module already loaded calls no function."""
import ast
import collections.abc
import copy
import dataclasses
import dis
import inspect
import linecache
import pstats
import tokenize
import weakref


@dataclasses.dataclass
class Point:
    x: int
    y: int


print(copy.deepcopy(Point(1, 2)), len(ast.dump(ast.parse("a + 1"))) > 0)
