"""Run as a child: writes its pid to argv[1] once it runs, then sleeps argv[2] seconds."""
import os
import sys
import time


def sleeping(seconds):
    time.sleep(seconds)


with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
sleeping(float(sys.argv[2]))
