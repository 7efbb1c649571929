"""os.fork(): the child calls forked_work 11 times and leaves by os._exit(4); a second child
returns from the fork's caller and ends by sys.exit(6) (atexit); the parent calls
parent_work 5 times and prints the children's exit statuses."""
import os
import sys


def forked_work(i):
    return i + 1


def parent_work(i):
    return i - 1


def first_child():
    for i in range(11):
        forked_work(i)
    os._exit(4)


def second_child():
    forked_work(0)
    sys.exit(6)


for i in range(5):
    parent_work(i)
statuses = []
for start in (first_child, second_child):
    pid = os.fork()
    if pid == 0:
        start()
    statuses.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print("fork exit statuses", statuses)
