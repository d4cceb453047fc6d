"""A test module whose time is spent waiting on its own servers (the cluster's Dagster runs, its
daemon and sensor ticks) asks the suite's other pytest-xdist workers to yield the CPU to it.

On CI's two cores the rest stage runs four workers. The cluster test waits on runs that the three
other workers' CPU-bound tests starve: its walk-through took 105 s alone and 524-650 s in the
suite, and the stage lasted as long as that one module. The other workers get a lower priority
(``nice``), so they still use every core the cluster leaves idle, and the cluster's processes
(children of this worker, started after the call) keep the normal priority."""

from __future__ import annotations

import os

YIELDING_NICENESS = 10  # CFS weight 110 against 1024 at 0: about a tenth of a core's share


def other_test_workers_yield_cpu(niceness: int = YIELDING_NICENESS) -> list[int]:
    """In a pytest-xdist worker, give its sibling workers (and the processes they start from now
    on) ``niceness``; return their pids. Outside xdist, nothing: there are no siblings."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return []
    me, controller = os.getpid(), os.getppid()
    siblings = [pid for pid in _children_of(controller) if pid != me]
    for pid in siblings:
        try:
            os.setpriority(os.PRIO_PROCESS, pid, niceness)
        except (ProcessLookupError, PermissionError):
            pass  # a worker that just exited, or one that is not ours
    return siblings


def _children_of(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # "pid (comm) state ppid ...": comm may hold spaces and parentheses
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            children.append(int(entry))
    return children
