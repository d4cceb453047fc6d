"""robodata-train records the version a run reads and a resume reads it again (issue 42.2): an
unpinned run is tagged ``robodata-train-v<N>``, that tag is the ``dataset.revision`` LeRobot's
checkpoint config saves, and a resume after an append reads version N or refuses naming both
versions. LeRobot's training script is a stand-in here (its two names robodata-train replaces,
calling the dataset class as LeRobot's factory does); the real one is in test_parity.py."""

from __future__ import annotations

import json
import logging
import os
import types
from datetime import timedelta
from pathlib import Path

import lance
import pytest

import robodata

pytest.importorskip("torch")

from robodata.lerobot import LeRobotCompatDataset
from robodata.lerobot import train as robodata_train


class FakeEpisodeAwareSampler:
    def __init__(self, *args, **kwargs) -> None:
        self.kwargs = kwargs


def lerobot_script() -> types.ModuleType:
    """lerobot.scripts.lerobot_train as robodata-train sees it: make_train_eval_datasets builds the
    dataset from ``cfg.dataset`` through LeRobot's factory class (robodata's, installed)."""
    make = robodata_train.dataset_factory(lambda *args, **kwargs: pytest.fail("LeRobot's class was called"))
    script = types.ModuleType("lerobot.scripts.lerobot_train")
    script.make_train_eval_datasets = lambda cfg: (
        make(cfg.dataset.repo_id, root=cfg.dataset.root, episodes=None, revision=cfg.dataset.revision),
        None,
    )
    script.EpisodeAwareSampler = FakeEpisodeAwareSampler
    robodata_train.install_training_order(script)
    return script


def train_config(root: str, revision: str | None = None, resume: bool = False, checkpoint=None):
    dataset = types.SimpleNamespace(repo_id=root, root=None, revision=revision)
    return types.SimpleNamespace(dataset=dataset, resume=resume, checkpoint_path=checkpoint)


def save_checkpoint(folder: Path, cfg) -> Path:
    """What LeRobot's save_checkpoint writes of the config: pretrained_model/train_config.json."""
    (folder / "pretrained_model").mkdir(parents=True)
    config = {"dataset": {"repo_id": cfg.dataset.repo_id, "root": None, "revision": cfg.dataset.revision}}
    (folder / "pretrained_model" / "train_config.json").write_text(json.dumps(config))
    return folder


def resumed_config(checkpoint: Path, revision: str | None = "from the checkpoint"):
    """The config LeRobot resumes with: the checkpoint's, ``--dataset.revision`` overriding it when given."""
    saved = json.loads((checkpoint / "pretrained_model" / "train_config.json").read_text())["dataset"]
    chosen = saved["revision"] if revision == "from the checkpoint" else revision
    return train_config(saved["repo_id"], chosen, resume=True, checkpoint=checkpoint)


@pytest.fixture
def growing_dataset(eight_short_uploads, tmp_path) -> str:
    root = str(tmp_path / "ds")
    for upload in eight_short_uploads[:2]:
        robodata.ingest_episode(str(upload), root)
    return root


def test_an_unpinned_run_is_pinned_on_resume(growing_dataset, eight_short_uploads, tmp_path, caplog):
    root = growing_dataset
    first = robodata.open(root)
    caplog.set_level(logging.INFO)
    cfg = train_config(root)  # no --dataset.revision
    dataset, _ = lerobot_script().make_train_eval_datasets(cfg)
    tag = f"robodata-train-v{first.version}"
    assert (cfg.dataset.revision, dataset.version, len(dataset)) == (tag, first.version, len(first))
    assert robodata.open(root).tags == {tag: first.version}
    assert f"robodata-train: training on {root} version {first.version} (tag {tag})" in caplog.text
    checkpoint = save_checkpoint(tmp_path / "checkpoints" / "000002", cfg)
    assert json.loads((checkpoint / "pretrained_model" / "train_config.json").read_text())["dataset"]["revision"] == tag

    robodata.ingest_episode(str(eight_short_uploads[2]), root)  # one more episode
    latest = robodata.open(root)
    assert latest.version > first.version and len(latest) > len(first)

    caplog.clear()
    resumed = resumed_config(checkpoint)
    dataset, _ = lerobot_script().make_train_eval_datasets(resumed)
    assert isinstance(dataset, LeRobotCompatDataset)
    assert (dataset.version, len(dataset), resumed.dataset.revision) == (first.version, len(first), tag)
    assert f"robodata-train: resuming on {root} version {first.version} (tag {tag})" in caplog.text

    # Asked for another version on resume: refused, naming both.
    with pytest.raises(SystemExit) as refused:
        lerobot_script().make_train_eval_datasets(resumed_config(checkpoint, revision=str(latest.version)))
    assert str(refused.value) == (
        f"robodata-train: the checkpoint trained on {root} version {first.version} ({tag}), but "
        f"--dataset.revision={latest.version} is version {latest.version}; resume without --dataset.revision "
        f"to read version {first.version}, or start a new run on version {latest.version}"
    )
    # The same version asked for by its number is no conflict.
    dataset, _ = lerobot_script().make_train_eval_datasets(resumed_config(checkpoint, revision=str(first.version)))
    assert dataset.version == first.version


def test_a_resume_refuses_what_it_cannot_read(growing_dataset, eight_short_uploads, tmp_path):
    root = growing_dataset
    first = robodata.open(root).version
    cfg = train_config(root)
    lerobot_script().make_train_eval_datasets(cfg)
    checkpoint = save_checkpoint(tmp_path / "ckpt", cfg)
    robodata.ingest_episode(str(eight_short_uploads[2]), root)
    latest = robodata.open(root).version
    frames = lance.dataset(f"{root}/frames.lance")
    tag = f"robodata-train-v{first}"

    # A checkpoint from before robodata-train recorded versions (revision null).
    old = save_checkpoint(tmp_path / "old", train_config(root))
    with pytest.raises(SystemExit, match=rf"records no version of {root} .* the latest is version {latest}:"):
        lerobot_script().make_train_eval_datasets(resumed_config(old))

    # The tag moved to another version: refused, naming both.
    frames.tags.update(tag, latest)
    with pytest.raises(SystemExit) as moved:
        lerobot_script().make_train_eval_datasets(resumed_config(checkpoint))
    assert str(moved.value) == (
        f"robodata-train: the checkpoint trained on {root} version {first}, but its tag {tag} now names version "
        f"{latest}; resume with --dataset.revision={first} if version {first} is kept"
    )

    # The tag deleted, its version kept: the version is read by its number.
    frames.tags.delete(tag)
    resumed = resumed_config(checkpoint)
    dataset, _ = lerobot_script().make_train_eval_datasets(resumed)
    assert (dataset.version, resumed.dataset.revision) == (first, str(first))

    # The version itself cleaned up: refused, naming both.
    lance.dataset(f"{root}/frames.lance").cleanup_old_versions(older_than=timedelta(0))
    with pytest.raises(SystemExit) as gone:
        lerobot_script().make_train_eval_datasets(resumed_config(checkpoint))
    assert str(gone.value) == (
        f"robodata-train: the checkpoint trained on {root} version {first}, which is no longer stored "
        f"(the latest is version {latest}); start a new run on version {latest}"
    )


def test_a_pinned_run_records_its_tag_too(growing_dataset):
    version = robodata.open(growing_dataset).tag("run-7")
    cfg = train_config(growing_dataset, revision="run-7")
    dataset, _ = lerobot_script().make_train_eval_datasets(cfg)
    assert (dataset.version, cfg.dataset.revision) == (version, f"robodata-train-v{version}")
    assert robodata.open(growing_dataset).tags == {"run-7": version, f"robodata-train-v{version}": version}


def test_lerobot_datasets_are_not_pinned():
    cfg = train_config("lerobot/pusht")
    assert robodata_train.pin_run(cfg) is None and cfg.dataset.revision is None


def test_pinning_leaves_the_training_process_safe_to_fork(growing_dataset):
    """The pin reads Lance in a helper process, as LeRobotCompatDataset does, so DataLoader workers
    may still be forked from the training process (a fresh one here: it has not used Lance)."""
    import subprocess
    import sys

    code = (
        "import types\n"
        "from robodata.lerobot import train\n"
        "from robodata.torch._fork_safety import lance_used\n"
        f"cfg = types.SimpleNamespace(dataset=types.SimpleNamespace(repo_id={growing_dataset!r}, root=None, "
        "revision=None), resume=False, checkpoint_path=None)\n"
        "pin = train.pin_run(cfg)\n"
        "print(pin.version, cfg.dataset.revision, lance_used())\n"
    )
    repo = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    version = robodata.open(growing_dataset).version
    assert done.stdout.split() == [str(version), f"robodata-train-v{version}", "False"], done.stderr


RANK_CODE = """
import os, sys, types
import torch.distributed as dist
from robodata.lerobot import train
dist.init_process_group("gloo")
version = int(sys.argv[1])
try:
    train.same_version_on_every_rank(types.SimpleNamespace(uri="s3://bucket/ds", version=version))
    print("same")
except SystemExit as stop:
    print(stop)
dist.destroy_process_group()
"""


@pytest.mark.slow  # two torch.distributed processes
def test_ranks_that_opened_different_versions_stop():
    """Two ranks of an unpinned run opened the dataset on either side of an append: both stop,
    naming the versions by rank; the same version goes on."""
    import socket
    import subprocess
    import sys

    repo = str(Path(__file__).resolve().parents[2])

    def run(versions: list[int]) -> list[str]:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        ranks = []
        for rank, version in enumerate(versions):
            env = dict(
                os.environ,
                PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]),
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port),
                RANK=str(rank),
                WORLD_SIZE=str(len(versions)),
            )
            ranks.append(
                subprocess.Popen(
                    [sys.executable, "-c", RANK_CODE, str(version)], env=env, stdout=subprocess.PIPE, text=True
                )
            )
        return [rank.communicate(timeout=300)[0].strip() for rank in ranks]

    stop = (
        "robodata-train: the training processes opened different versions of s3://bucket/ds ([4, 5], by rank): "
        "pass --dataset.revision=<one of them>"
    )
    assert run([4, 5]) == [stop, stop]
    assert run([4, 4]) == ["same", "same"]
