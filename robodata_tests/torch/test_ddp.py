"""Real torch.distributed (gloo, 3 processes): every rank takes the same steps and the same state."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the ranks run torch.distributed

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_three_gloo_ranks_never_wait_on_each_other(ingested):
    port, world = free_port(), 3
    procs = []
    for rank in range(world):
        env = dict(
            os.environ,
            RANK=str(rank),
            WORLD_SIZE=str(world),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            PYTHONPATH=str(REPO),
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "robodata_tests.torch.ddp_steps", ingested],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outputs = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=180)
            outputs.append(out)
    finally:
        hung = [p for p in procs if p.poll() is None]
        for proc in hung:
            proc.kill()
            proc.wait()
    assert not hung, "a rank was still waiting in a collective after 180 s"
    for rank, (proc, out) in enumerate(zip(procs, outputs, strict=True)):
        assert proc.returncode == 0, out[-3000:]
        assert f"rank {rank}: ok 591 rows" in out
