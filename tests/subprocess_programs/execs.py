"""Run as a child: calls before_exec, tries to exec a program that does not exist (OSError),
calls before_exec again, then replaces itself by `python -c` calling after_exec."""
import os
import sys


def before_exec():
    return 1


before_exec()
try:
    os.execv("/nonexistent/python", ["python"])
except OSError:
    print("exec failed", flush=True)
before_exec()
os.execv(sys.executable, [sys.executable, "-c",
                          "def after_exec():\n    print('after exec')\nafter_exec()"])
