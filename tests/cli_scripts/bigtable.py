"""Prints nothing itself; calls 400 distinct functions so the profile table (~40 KB) is larger
than a pipe's buffer and stdout's buffer."""
for i in range(400):
    exec(f"def func_{i}():\n    pass\nfunc_{i}()")
