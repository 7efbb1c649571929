"""exec and eval of source strings and of code objects compiled once.

Each fresh compilation gets its own file name: code objects compiled inside main() live at
addresses that vary from run to run, and two of them with one label would leave which of the
two entries pstats keeps up to that address order, in cProfile itself.
"""

COMPILED = compile("helper(1)\nhelper(2)", "<precompiled>", "exec")


def helper(x):
    return x + 1


def main():
    env = {"helper": helper}
    eval("helper(10) + 1", env)
    exec("y = [helper(i) for i in range(3)]", env)
    for i in range(3):
        exec(compile("helper(%d)" % i, "<loop %d>" % i, "exec"), env)
    exec(COMPILED, env)
    exec(COMPILED, env)
    eval(compile("len('abc')", "<builtin in eval>", "eval"))
