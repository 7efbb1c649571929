"""exec and eval of source strings and of code objects compiled once.

Each fresh compilation gets its own file name (only one source string is compiled as
"<string>"): code objects compiled inside main() live at addresses that vary from run to run,
and of two entries with one label pstats keeps the one _lsprof lists last, by address, so
which one it keeps would vary between runs of cProfile itself.
"""

COMPILES_DURING_RUN = True

COMPILED = compile("helper(1)\nhelper(2)", "<precompiled>", "exec")


def helper(x):
    return x + 1


def main():
    env = {"helper": helper}
    eval(compile("helper(10) + 1", "<eval>", "eval"), env)
    exec("y = [helper(i) for i in range(3)]", env)
    for i in range(3):
        exec(compile("helper(%d)" % i, "<loop %d>" % i, "exec"), env)
    exec(COMPILED, env)
    exec(COMPILED, env)
    eval(compile("len('abc')", "<builtin in eval>", "eval"))
