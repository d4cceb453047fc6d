"""Spawned DataLoader workers exit cleanly (exit code 0), also when the training loop stops early.

A worker whose loop is told to stop while its data queue still holds batches used to abort,
"terminate called without an active exception" (SIGABRT; 13 of 16 worker exits in this
scenario): torch's queue feeder thread was still moving a batch to shared memory in C++ when
the worker's interpreter finalized (docs/reliability.md, "A process that exits after an error"). The scenario runs in a
subprocess, as a training script would, with a timeout so that a hang fails the test.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")  # the scenario imports it; the module gets the torch marker

REPO = Path(__file__).resolve().parents[2]
# Loaders whose iterator is abandoned mid-epoch, two fresh workers each. Without the wait, 13 of 16
# exits aborted, and 5 of 8 abandoned exits in a later check: at that rate, 4 abandoned exits all
# pass with p = 0.02 (6, as in 3 rounds, 0.003).
ROUNDS = 2

SCENARIO = """
import gc, multiprocessing, sys
import numpy as np
import robodata
from robodata.torch._torch_dataset import make_dataloader

WRIST = "observation_images_wrist_left"
# Big float32 batches: moving one to shared memory takes the feeder thread long enough to
# still be at it when a worker that was told to stop finalizes (without the fix, most rounds).
options = dict(
    batch_size=8, num_workers=2, cameras=["top", "wrist_left"], columns=["episode_index"], image_dtype="float32"
)

def check(pinned, batch, expected):
    indices = batch["index"].numpy()
    assert np.array_equal(indices, expected), (indices, expected)
    frames = pinned.get_frames(indices, cameras=WRIST)[WRIST]
    assert np.array_equal(batch[WRIST].numpy(), np.divide(frames, np.float32(255), dtype=np.float32))

def exit_codes(workers):
    for worker in workers:
        worker.join(30)  # DataLoader joined them already; a hung worker shows as None
    return [worker.exitcode for worker in workers]

def main(uri, rounds):
    pinned = robodata.open(uri)
    for seed in range(rounds):
        # Abandoned mid-epoch: the workers still hold prefetched batches when told to stop.
        loader = make_dataloader(uri, seed=seed, persistent_workers=False, prefetch_factor=4, **options)
        expected = loader.batch_sampler.batches()
        iterator = iter(loader)
        for position in range(3):
            check(pinned, next(iterator), expected[position])
        workers = multiprocessing.active_children()
        del iterator
        gc.collect()
        print("abandoned", len(workers), exit_codes(workers), flush=True)

    # Persistent workers: a whole epoch, then close().
    loader = make_dataloader(uri, seed=9, persistent_workers=True, **options)
    expected = loader.batch_sampler.batches()
    for position, batch in enumerate(loader):
        check(pinned, batch, expected[position])
    assert position + 1 == len(expected)
    workers = multiprocessing.active_children()
    loader.close()
    print("persistent", len(workers), exit_codes(workers), flush=True)


if __name__ == "__main__":  # spawned workers import this script again
    main(sys.argv[1], int(sys.argv[2]))
"""


@pytest.mark.slow  # spawns six DataLoader workers
def test_spawned_workers_exit_cleanly_when_the_loop_stops_early(short_dataset, tmp_path):
    script = tmp_path / "scenario.py"
    script.write_text(SCENARIO)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    try:
        run = subprocess.run(
            [sys.executable, str(script), short_dataset, str(ROUNDS)],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    except subprocess.TimeoutExpired as exc:  # a hang at exit fails rather than blocks
        pytest.fail(f"the scenario hung: {exc.stdout!s:.2000}{exc.stderr!s:.2000}")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "terminate called" not in run.stderr, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines == ["abandoned 2 [0, 0]"] * ROUNDS + ["persistent 2 [0, 0]"], run.stderr[-3000:]
