"""A process that exits after a failed read exits with its own exit code, every time.

pyarrow handed a Python file object reads it from its I/O threads, calling back into Python;
when one read fails, the error reaches the caller while the other reads are still running, and
if the process then exits, those threads meet an interpreter that is shutting down: about one
run in three aborted ("terminate called without an active exception", exit code 134) or hung.
robodata hands pyarrow in-memory buffers instead (``robodata.storage.arrow_input``).

The same abort followed a correct rejection (a null action row), about 1 run in 30: pyarrow's
Parquet workers dropped their last reference to a buffer holding Python ``bytes`` just after the
read returned, and that buffer's destructor takes the GIL. The buffers are Arrow's own now."""

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

# Reads an upload whose storage drops the connection after 1 MB (each read a little slow, as
# over a network), then exits with the code a failed ingest gets.
SCENARIO = """
import sys, time
import fsspec.implementations.local as local
import robodata.ingest.upload as upload_module
from robodata.errors import RoboDataError
from robodata.ingest.upload import read_upload

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
try:
    read_upload(sys.argv[1])
except RoboDataError as exc:  # the store's failure, said in one line
    print(exc, file=sys.stderr)
    sys.exit(2)
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
sys.exit(main(["ingest", sys.argv[1], sys.argv[1] + "-dataset"]))
"""


def _run_pairs(script: Path, upload: Path, runs: int) -> tuple[list, list[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    codes, errors = [], []
    for _ in range(runs // 2):  # two at a time: the machine has two cores
        pair = [
            subprocess.Popen([sys.executable, str(script), str(upload)], env=env, stderr=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        for run in pair:
            try:
                _, err = run.communicate(timeout=90)
                codes.append(run.returncode)
            except subprocess.TimeoutExpired:  # hung at exit, the other face of the same race
                run.kill()
                err = run.communicate()[1]
                codes.append("hung")
            errors.append(err)
    return codes, errors


@pytest.mark.slow
def test_a_rejected_null_action_row_then_exit_never_aborts(sample_uploads, tmp_path):
    upload = tmp_path / "uploads" / sample_uploads[0].name
    shutil.copytree(sample_uploads[0], upload)
    columns = pq.read_table(upload / "states.parquet").to_pydict()
    columns["action"][3] = None
    pq.write_table(pa.table(columns), upload / "states.parquet")
    script = tmp_path / "rejection.py"
    script.write_text(REJECTION)
    codes, errors = _run_pairs(script, upload, REJECTION_RUNS)
    assert codes == [2] * REJECTION_RUNS, [e[-300:] for e in errors if "null row" not in e or "terminate" in e]
    assert all("states.parquet: action has a null row at sample 3" in e for e in errors)
    assert not any("terminate called" in e for e in errors)


def test_a_failed_read_then_exit_never_aborts(sample_uploads, tmp_path):
    upload = tmp_path / "uploads" / sample_uploads[0].name
    shutil.copytree(sample_uploads[0], upload)
    big_states(upload)
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    codes, errors = _run_pairs(script, upload, RUNS)
    assert codes == [2] * RUNS, [e[-300:] for e in errors]
    assert all("states.parquet: is not a readable Parquet file" in e and "connection reset" in e for e in errors)
    assert not any("terminate called" in e for e in errors)
