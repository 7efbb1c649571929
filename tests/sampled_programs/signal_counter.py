"""A target for blocking sampling that checks it is not harmed: call-heavy work on the main
thread until a line on stdin asks it to end (read by a second thread), and SIGUSR1 counted by a
handler that answers each signal with a byte "u" on stdout. Writes "ready" first, and at the end
the signals counted and the work done: "count=N work=M"."""
import os
import signal
import sys
import threading

count = 0


def on_usr1(signum, frame):
    global count
    count += 1
    os.write(1, b"u")


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    signal.signal(signal.SIGUSR1, on_usr1)
    done = threading.Event()

    def wait_for_quit():
        sys.stdin.readline()
        done.set()

    threading.Thread(target=wait_for_quit, daemon=True).start()
    os.write(1, b"ready\n")
    work = 0
    while not done.is_set():
        work += fib(12) == 144
    os.write(1, b"\ncount=%d work=%d\n" % (count, work))


main()
