"""What the robustness test modules share: running a scenario of tests/robustness_scenarios/
in a child process, under rprofile and under cProfile, and the version facts their checks
depend on.

Every scenario that could bring the interpreter down runs in a child process
(``sys.executable SCENARIO.py <module> ...``), so a crash shows up as a failing return code
instead of killing the test run. The child prints one JSON result line; the parent checks it.
"""

import json
import os
import subprocess
import sys
import tempfile

PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)
# What enable() says when the profiler tool id is taken: 3.14 lets sys.monitoring's words out.
TOOL_BUSY = ("tool 2 is already in use" if sys.version_info >= (3, 14)
             else "Another profiling tool is already active")
# The mark before the result line; robustness_scenarios/prelude.py's emit() writes it.
RESULT_MARK = "@@RESULT@@"
SCENARIOS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "robustness_scenarios")


def run_child(scenario, module="rprofile", *args, timeout=300):
    """Runs robustness_scenarios/<scenario>.py with argv [module, *args] in a fresh folder;
    returns its emitted result.

    Fails (with the child's output) unless the child exits with status 0."""
    path = os.path.join(SCENARIOS, scenario + ".py")
    assert os.path.isfile(path), path
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory() as d:
        proc = subprocess.run(
            [sys.executable, "-X", "faulthandler", path, module, *map(str, args)],
            cwd=d, capture_output=True, text=True, timeout=timeout, env=env,
        )
    detail = "child %s %s %s exited with %s\n--- stdout\n%s\n--- stderr\n%s" % (
        scenario, module, list(args), proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:])
    assert proc.returncode == 0, detail
    results = [line[len(RESULT_MARK):] for line in proc.stdout.splitlines()
               if line.startswith(RESULT_MARK)]
    assert results, "child printed no result\n" + detail
    return json.loads(results[-1])


def both(scenario, *args, **kw):
    """The result of the scenario under rprofile and under cProfile."""
    return (run_child(scenario, "rprofile", *args, **kw),
            run_child(scenario, "cProfile", *args, **kw))
