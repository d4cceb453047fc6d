"""robodata-train's resume on another layout through real LeRobot (0.6.1, Python >= 3.12): a run of
two processes (``torchrun``, docs/training.md's multi-process command) with 2 DataLoader workers
and batch 4 checkpoints after 5 steps; ``--resume=true`` from that checkpoint in one process with
4 workers and batch 6 reads every item of the epoch it resumes exactly once (issue 42.1), and
its own checkpoint records where the order stands in its layout.

What each process's training loop took is recorded by ``scripts/lerobot_compare.py record-train``
(lerobot-train's ``cycle``, noting each pass over the DataLoader); ``lerobot_compare.py resume``
runs both, and this test checks the records themselves. Marked ``lerobot``: run it in the venv
that has LeRobot (``python -m pytest -m lerobot robodata_tests/lerobot``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.lerobot

REPO = Path(__file__).resolve().parents[2]


def taken(records: Path) -> dict[int, list[int]]:
    """The items a run's training loop took, by pass over the DataLoader, every rank's together."""
    passes: dict[int, list[int]] = {}
    for file in sorted(records.glob("rank*.jsonl")):
        for line in file.read_text().splitlines():
            batch = json.loads(line)
            passes.setdefault(batch["pass"], []).extend(batch["index"])
    return passes


def test_a_resume_with_more_workers_one_process_and_another_batch_size_reads_the_epoch_once(short_dataset, tmp_path):
    import robodata

    try:
        import lerobot  # noqa: F401
    except ImportError as exc:  # not a skip: selecting this test without LeRobot is an error
        pytest.fail(f"this test needs real LeRobot (pip install 'lerobot[training]==0.6.1', Python >= 3.12): {exc}")
    items = len(robodata.open(short_dataset))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    records = tmp_path / "records"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "lerobot_compare.py"), "resume", str(tmp_path / "work"),
         f"--dataset={short_dataset}", "--before=4,2,2", "--after=6,4,1", "--save-at=5", f"--records={records}"],
        env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    logs = "".join(p.read_text()[-3000:] for p in sorted((tmp_path / "work").glob("resume-*.log")))
    assert done.returncode == 0, done.stdout + done.stderr[-3000:] + logs

    first, second = taken(records / "first"), taken(records / "second")
    assert len(list((records / "first").glob("rank*.jsonl"))) == 2  # two training processes
    assert list(first) == [0] and len(first[0]) == 5 * 4 * 2  # 5 steps of batch 4 on each rank
    assert len(set(first[0])) == len(first[0])
    epoch = Counter(first[0] + second[0])
    assert sorted(epoch) == list(range(items))  # no item of the resumed epoch left unread...
    assert set(epoch.values()) == {1}  # ... or read twice
    assert len(second[1]) == len(set(second[1]))  # the next epoch, in the new layout

    # the resumed run's own checkpoint (after its last step): where the order stands, in its layout
    checkpoint = tmp_path / "work" / "train-resume" / "checkpoints" / "last"
    state = json.loads((checkpoint / "robodata_order.json").read_text())
    place = {key: state[key] for key in ("epoch", "start_index", "batch_size", "num_workers", "world_size")}
    assert place == {"epoch": 1, "start_index": len(second[1]), "batch_size": 6, "num_workers": 4, "world_size": 1}

    log = (tmp_path / "work" / "resume-second.log").read_text()
    assert "robodata-train: the order resumes at epoch 0, item 40" in log
    assert "in the decode-once block order" in log
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    assert (printed["read_twice"], printed["never_read"], printed["items"]) == (0, 0, items)
