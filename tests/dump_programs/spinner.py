"""One thread spinning in `spin` (on a CPU, holding the GIL) while the main thread waits for a
line on stdin; then it stops the spinner and exits 0."""
import sys
import threading

stop = False


def spin():
    x = 0
    while not stop:
        x += 1  # spinning


t = threading.Thread(target=spin, name="spinner")
t.start()
print("ready", flush=True)
sys.stdin.readline()
stop = True
t.join()
