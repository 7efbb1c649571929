"""Changes directory to argv[1] before doing its work (a relative -o path must not follow)."""
import os
import sys

import _workload

os.chdir(sys.argv[1])
_workload.main()
