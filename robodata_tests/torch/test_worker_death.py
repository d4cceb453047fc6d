"""A DataLoader worker killed with kill -9 mid-epoch (as the out-of-memory killer does): the
training loop gets one robodata error naming the dataset, the worker and how to go on, not a
torch-internal traceback. The scenario runs in a subprocess, as a training script would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")  # the scenario imports it; the module gets the torch marker

REPO = Path(__file__).resolve().parents[2]

SCENARIO = """
import os, signal, sys
from robodata.torch._torch_dataset import make_dataloader

def main(uri):
    loader = make_dataloader(uri, batch_size=4, num_workers=2, cameras=["top"], shuffle="none")
    batches = iter(loader)
    next(batches)
    os.kill(loader._iterator._workers[0].pid, signal.SIGKILL)
    try:
        for _ in batches:
            pass
    except Exception as exc:
        print(type(exc).__module__ + "." + type(exc).__name__ + ": " + str(exc), flush=True)
        print("context", exc.__suppress_context__, flush=True)
        return
    print("finished", flush=True)

if __name__ == "__main__":  # spawned workers import this script again
    main(sys.argv[1])
"""


@pytest.mark.slow  # spawns two DataLoader workers
def test_a_killed_worker_surfaces_as_one_robodata_error(short_dataset, tmp_path):
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    run = subprocess.run(
        [sys.executable, str(script), short_dataset],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    error, context = run.stdout.splitlines()
    assert error.startswith(f"robodata.errors.LoaderWorkerError: {short_dataset} version "), error
    assert "DataLoader worker (pid " in error and "resume from the last state_dict()" in error, error
    assert context == "context True"  # raised from None: torch's traceback is not chained on


DEAD_CHILD = """
import os, signal, subprocess, sys
from robodata.torch._loader import worker_death

print(worker_death(EOFError(), 2), flush=True)  # no child has ended
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
os.kill(child.pid, signal.SIGKILL)
print(child.pid, flush=True)
print(worker_death(EOFError(), 2), flush=True)  # the worker's end seen as a closed connection
print(child.wait(), flush=True)  # still there to be reaped: only looked at
"""


def test_a_closed_connection_names_the_worker_that_died():
    """The other way PyTorch reports a killed worker (its connection closed under a batch, before
    its own check of the workers ran): the dead child is named all the same."""
    out = subprocess.run(
        [sys.executable, "-c", DEAD_CHILD], env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.splitlines()  # fmt: skip
    none_yet, pid, named, status = out
    assert none_yet == "a DataLoader worker died: its connection closed while it sent a batch (EOFError)"
    assert named == (
        f"DataLoader worker (pid {pid}) was killed by signal: SIGKILL: "
        "its connection closed while it sent a batch (EOFError)"
    )
    assert status == str(-signal.SIGKILL)
