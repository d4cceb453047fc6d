"""examples/train_policy.py: trains from a pinned tag with 2 workers (spawned, then from the fork
server), resumes mid-epoch, runs under torchrun with 2 gloo processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import robodata

# Without torch the module is skipped, not an error: the imports below need it.
torch = pytest.importorskip("torch")

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "train_policy.py"


def run(command: list[str], timeout: float = 240) -> list[dict]:
    """The command's JSON events. Past ``timeout`` its whole process group is killed, not only
    the command: torchrun's ranks and every DataLoader worker would outlive it, still running."""
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            pytest.fail(f"not done after {timeout} s: {command}\n{stdout[-2000:]}{stderr[-4000:]}")
    assert process.returncode == 0, stdout[-2000:] + stderr[-4000:]
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_trains_from_a_tag_and_resumes_mid_epoch(short_dataset, tmp_path):
    checkpoint = str(tmp_path / "ckpt.pt")
    base = [
        sys.executable,
        str(EXAMPLE),
        short_dataset,
        "--tag",
        "policy-run",
        "--steps",
        "6",
        "--batch-size",
        "8",
        "--workers",
        "2",
        "--checkpoint",
        checkpoint,
        "--save-every",
        "2",
    ]
    # Stopped by spawned workers, resumed by workers forked from the fork server (the example's
    # default): never a fork of the training process, which has used Lance.
    first = run(base + ["--start-method", "spawn", "--stop-after", "3"])
    version = robodata.open(short_dataset).tags["policy-run"]
    start = next(e for e in first if e["event"] == "start")
    assert (start["tag"], start["version"], start["workers"]) == ("policy-run", version, 2)
    assert start["start_method"] == "spawn"
    assert first[-1]["event"] == "done" and first[-1]["step"] == 3
    saved = torch.load(checkpoint, weights_only=False)
    assert saved["sampler"]["shuffle"] == "block" and saved["sampler"]["num_workers"] == 2
    assert saved["sampler"]["consumed_batches"] == 3 and saved["dataset_version"] == version

    second = run(base)
    resumed = next(e for e in second if e["event"] == "resumed")
    assert (resumed["step"], resumed["consumed_batches"]) == (3, 3)
    assert next(e for e in second if e["event"] == "start")["start_method"] == "forkserver"
    assert second[-1]["event"] == "done" and second[-1]["step"] == 6
    assert torch.load(checkpoint, weights_only=False)["sampler"]["consumed_batches"] == 6
    assert all(e["loss"] == e["loss"] for e in second if e["event"] == "step")  # no NaN


def test_runs_under_torchrun_with_two_gloo_processes(short_dataset, tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    events = run(
        [
            str(torchrun),
            "--standalone",
            "--nproc_per_node",
            "2",
            str(EXAMPLE),
            short_dataset,
            "--tag",
            "ddp-run",
            "--steps",
            "3",
            "--batch-size",
            "4",
            "--workers",
            "0",
            "--checkpoint",
            str(tmp_path / "ddp.pt"),
        ],
    )
    start = next(e for e in events if e["event"] == "start")
    assert start["world_size"] == 2 and start["version"] == robodata.open(short_dataset).tags["ddp-run"]
    assert events[-1]["event"] == "done" and events[-1]["step"] == 3
    # Two ranks of batch 4 took 3 batches each of the epoch's order.
    saved = torch.load(tmp_path / "ddp.pt", weights_only=False)
    assert (saved["sampler"]["consumed_batches"], saved["sampler"]["world_size"]) == (3, 2)
    assert not any(key.startswith("module.") for key in saved["model"])
    # Resume the 2-rank checkpoint in one process, model included; and a checkpoint whose model
    # keys carry DDP's "module." prefixes (as earlier versions of the example saved) loads too.
    saved["model"] = {f"module.{k}": v for k, v in saved["model"].items()}
    torch.save(saved, tmp_path / "ddp.pt")
    single = [sys.executable, str(EXAMPLE), short_dataset, "--tag", "ddp-run", "--steps", "5", "--batch-size", "4"]
    resumed = run(single + ["--workers", "0", "--checkpoint", str(tmp_path / "ddp.pt")])
    assert next(e for e in resumed if e["event"] == "resumed")["consumed_batches"] == 3
    assert resumed[-1]["event"] == "done" and resumed[-1]["step"] == 5
    assert next(e for e in resumed if e["event"] == "start")["camera"] == "observation.images.top"
