"""Fifty named threads waiting on one event, and a main thread waiting for a line on stdin
(then it lets them go and exits 0)."""
import sys
import threading

go = threading.Event()


def worker():
    go.wait()


threads = [threading.Thread(target=worker, name="worker-%d" % i) for i in range(50)]
for t in threads:
    t.start()
print("ready", flush=True)
sys.stdin.readline()
go.set()
for t in threads:
    t.join()
