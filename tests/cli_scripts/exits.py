"""Does some work, then calls sys.exit(argv[1]) (as an int when it is digits)."""
import sys

import _workload

_workload.main()
print("before exit")
code = sys.argv[1]
sys.exit(int(code) if code.isdigit() else code)
