"""Two threads spinning in pure Python, `spinner-a` and `spinner-b`: at any instant one holds
the GIL and the other waits for it, while the main thread waits for a line on stdin; then it
stops them and exits 0."""
import sys
import threading

stop = False


def spin():
    x = 0
    while not stop:
        x += 1  # spinning


threads = [threading.Thread(target=spin, name=name) for name in ("spinner-a", "spinner-b")]
for t in threads:
    t.start()
print("ready", flush=True)
sys.stdin.readline()
stop = True
for t in threads:
    t.join()
