"""A DataLoader worker killed with kill -9 mid-epoch (as the out-of-memory killer does): the
training loop gets one robodata error naming the dataset, the worker and how to go on, not a
torch-internal traceback. The scenario runs in a subprocess, as a training script would."""

from __future__ import annotations

import os
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
