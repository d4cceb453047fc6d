"""A process that exits after a failed read exits with its own exit code, every time.

pyarrow handed a Python file object reads it from its I/O threads, calling back into Python;
when one read fails, the error reaches the caller while the other reads are still running, and
if the process then exits, those threads meet an interpreter that is shutting down: about one
run in three aborted ("terminate called without an active exception", exit code 134) or hung.
robodata hands pyarrow in-memory buffers instead (``robodata.storage._arrow_input``).

The same abort followed a correct rejection (a null action row), about 1 run in 30: pyarrow's
Parquet workers dropped their last reference to a buffer holding Python ``bytes`` just after the
read returned, and that buffer's destructor takes the GIL. The buffers are Arrow's own now.

Each run is a child process forked from one that imported robodata once (``FORKED_RUNS``): it
does its read and exits through the interpreter's shutdown, where the aborts happen, without
paying the imports again (a quarter of a fresh process's CPU). With the old code put back, forked
runs failed as often as fresh processes, or more (on a loaded machine): after the rejection with
pyarrow holding Python ``bytes``, 24 of 200 (fresh: 9 of 60); after the failed read through a
Python file object, 10 of 10 (fresh: 7 of 10, 2 of them hung)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]
RUNS = 10
REJECTION_RUNS = 50

# Appended to a scenario that defines run(): runs it argv[2] times, two at a time (the machine has
# two cores), each in a child forked from this process after its imports; the child's stderr goes
# to <argv[3]>/<i>.err, and it exits as the command does, through the interpreter's shutdown.
# Prints each child's exit code ("hung" when it has not exited 90 s after it started), one a line.
FORKED_RUNS = """
import os, time, warnings

warnings.filterwarnings("ignore", message="lance is not fork-safe")  # no Lance use before a fork


def exit_code(pid, started):
    while time.monotonic() - started < 90:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return "hung"


runs, errors = int(sys.argv[2]), sys.argv[3]
for first in range(0, runs, 2):
    children = []
    for i in range(first, min(first + 2, runs)):
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the run: a Python process that does its work, then exits
            err = os.open(os.path.join(errors, f"{i}.err"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(err, 2)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
            sys.exit(run())
        children.append((pid, time.monotonic()))
    for pid, started in children:
        print(exit_code(pid, started), flush=True)
"""

# Reads an upload whose storage drops the connection after 1 MB (each read a little slow, as
# over a network), then exits with the code a failed ingest gets.
SCENARIO = """
import sys, time
import fsspec.implementations.local as local
import robodata.ingest._upload as upload_module
from robodata.errors import RoboDataError
from robodata.ingest._upload import read_upload

original, done = local.LocalFileOpener.read, [0]

def dropping_read(self, n=-1):
    time.sleep(0.001)
    data = original(self, n)
    done[0] += len(data)
    if done[0] > 1_000_000:
        raise ConnectionResetError("connection reset by the store")
    return data

local.LocalFileOpener.read = dropping_read
# The fingerprint reads each file whole first: leave the failing reads to pyarrow's threads.
upload_module.upload_fingerprint = lambda upload, storage_options=None: "fixed"


def run():
    try:
        read_upload(sys.argv[1])
    except RoboDataError as exc:  # the store's failure, said in one line
        print(exc, file=sys.stderr)
        return 2
    return 0
"""


def big_states(upload: Path) -> None:
    """states.parquet with 40 extra columns in 20 row groups: hundreds of column chunks, so a
    reader that reads them in parallel has many reads in flight when one fails."""
    table = pq.read_table(upload / "states.parquet")
    rows = 100_000
    columns = {
        name: pa.concat_arrays([table[name].combine_chunks()] * (rows // table.num_rows + 1))[:rows]
        for name in ("observation_state", "action")
    }
    columns["timestamp_ns"] = pa.array(np.arange(rows, dtype=np.int64) * 10_000_000)
    rng = np.random.default_rng(0)
    columns.update({f"extra_{i}": rng.random(rows) for i in range(40)})
    pq.write_table(pa.table(columns), upload / "states.parquet", row_group_size=5_000)


# The command line on an upload whose states.parquet has a null action row: a correct
# rejection, then the exit (where the abort was seen).
REJECTION = """
import sys
from robodata.cli import main


def run():
    return main(["ingest", sys.argv[1], sys.argv[1] + "-dataset"])
"""


def _run_pairs(script: Path, upload: Path, runs: int) -> tuple[list, list[str]]:
    """Exit codes ("hung": at exit, the other face of the same race) and stderr of each run."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    errors = script.parent / f"{script.stem}-errors"
    errors.mkdir()
    done = subprocess.run(
        [sys.executable, str(script), str(upload), str(runs), str(errors)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    codes = [line if line == "hung" else int(line) for line in done.stdout.split()]
    assert len(codes) == runs, done.stdout
    return codes, [(errors / f"{i}.err").read_text() for i in range(runs)]


@pytest.mark.slow
def test_a_rejected_null_action_row_then_exit_never_aborts(sample_uploads, tmp_path):
    upload = tmp_path / "uploads" / sample_uploads[0].name
    shutil.copytree(sample_uploads[0], upload)
    columns = pq.read_table(upload / "states.parquet").to_pydict()
    columns["action"][3] = None
    pq.write_table(pa.table(columns), upload / "states.parquet")
    script = tmp_path / "rejection.py"
    script.write_text(REJECTION + FORKED_RUNS)
    codes, errors = _run_pairs(script, upload, REJECTION_RUNS)
    assert codes == [2] * REJECTION_RUNS, [e[-300:] for e in errors if "null row" not in e or "terminate" in e]
    assert all("states.parquet: action has a null row at sample 3" in e for e in errors)
    assert not any("terminate called" in e for e in errors)


def test_a_failed_read_then_exit_never_aborts(sample_uploads, tmp_path):
    upload = tmp_path / "uploads" / sample_uploads[0].name
    shutil.copytree(sample_uploads[0], upload)
    big_states(upload)
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO + FORKED_RUNS)
    codes, errors = _run_pairs(script, upload, RUNS)
    assert codes == [2] * RUNS, [e[-300:] for e in errors]
    assert all("states.parquet: is not a readable Parquet file" in e and "connection reset" in e for e in errors)
    assert not any("terminate called" in e for e in errors)
