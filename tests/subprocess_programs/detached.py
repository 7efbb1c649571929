"""Starts a sleeper of argv[2] seconds in a session of its own, with no pipe to us, and ends
without waiting for it; argv[1] is where the sleeper writes its pid."""
import os
import subprocess
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
subprocess.Popen([sys.executable, os.path.join(here, "sleeper.py"), sys.argv[1], sys.argv[2]],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
print("started the sleeper")
