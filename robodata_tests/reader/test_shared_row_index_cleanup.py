"""Shared row indexes (/dev/shm/robodata-*) of a killed training process are removed by the next
process that shares one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np

from robodata.reader._row_index import SharedArrays, remove_orphans

REPO = Path(__file__).resolve().parents[2]

KILLED_RANK = """
import os, signal, sys
import numpy as np
from robodata.reader._row_index import SharedArrays
shared = SharedArrays("rows")
shared.put("order", np.arange(1000))
print(shared.directory, flush=True)
os.kill(os.getpid(), signal.SIGKILL)  # as a rank the OOM killer or a scheduler ends: no finalizers
"""


def test_a_killed_ranks_row_index_is_removed_at_the_next_start():
    done = subprocess.run(
        [sys.executable, "-c", KILLED_RANK],
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    left = done.stdout.strip()
    assert os.path.isfile(os.path.join(left, "order.npy"))  # the leak: nobody removed it
    assert f"-{os.getpid()}-" not in left
    shared = SharedArrays("rows")  # the next start
    try:
        assert not os.path.exists(left)
        assert os.path.isdir(shared.directory) and f"-{os.getpid()}-" in os.path.basename(shared.directory)
    finally:
        del shared


def test_live_owners_keep_their_files(tmp_path):
    mine = SharedArrays("order")
    mine.put("epoch-0", np.arange(5))
    assert os.path.basename(mine.directory) not in remove_orphans()
    assert np.array_equal(mine.get("epoch-0"), np.arange(5))
    other = tmp_path / "robodata-rows-1-abc"  # pid 1 (init) is alive: never removed
    other.mkdir()
    gone = tmp_path / "robodata-rows-999999999-abc"  # no such process
    gone.mkdir()
    assert remove_orphans(str(tmp_path)) == ["robodata-rows-999999999-abc"]
    assert other.exists() and not gone.exists()
