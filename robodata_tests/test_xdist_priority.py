"""The cluster module's worker lowers its sibling test workers' CPU priority, not its own."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

# A stand-in for xdist's controller (a real process tree): three sleeping "workers", then the
# middle one calls other_test_workers_yield_cpu as a pytest-xdist worker would.
CONTROLLER = textwrap.dedent(
    """
    import os, subprocess, sys
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    workers = [subprocess.Popen(sleeper) for _ in range(2)]
    caller = subprocess.run(
        [sys.executable, "-c", "from robodata_tests.xdist_priority import other_test_workers_yield_cpu as f; "
         "import os, sys; print(*sorted(f(int(sys.argv[1]))), flush=True); print(os.getpriority(os.PRIO_PROCESS, 0))",
         sys.argv[1]],
        env={**os.environ, "PYTEST_XDIST_WORKER": "gw1"}, capture_output=True, text=True, check=True,
    )
    siblings, own = caller.stdout.splitlines()
    print(siblings, "|", *sorted(w.pid for w in workers), "|",
          *[os.getpriority(os.PRIO_PROCESS, w.pid) for w in workers], "|", own)
    for w in workers:
        w.kill()
    """
)


def test_siblings_get_the_lower_priority_and_the_caller_keeps_its_own():
    inherited = os.getpriority(os.PRIO_PROCESS, 0)  # 10 where the cluster module's worker set it
    assert inherited < 19
    lower = min(19, inherited + 5)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("PYTEST_XDIST_WORKER", None)
    out = subprocess.run(
        [sys.executable, "-c", CONTROLLER, str(lower)], env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    siblings, workers, priorities, own = (part.split() for part in out.split("|"))
    assert siblings == workers  # exactly the controller's other children
    assert priorities == [str(lower)] * 2
    assert own == [str(inherited)]  # the caller's unchanged


def test_outside_xdist_nothing_changes(monkeypatch):
    from robodata_tests.xdist_priority import other_test_workers_yield_cpu

    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert other_test_workers_yield_cpu() == []
