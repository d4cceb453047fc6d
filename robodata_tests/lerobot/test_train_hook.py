"""robodata-train's substitution in LeRobot's dataset factory: robodata datasets (a folder with
frames.lance, or s3://) open as LeRobotCompatDataset pinned to --dataset.revision, anything else
goes to LeRobot's own classes. (The real lerobot-train run is in test_lerobot_parity.py.)"""

from __future__ import annotations

import sys
import types

import pytest

torch = pytest.importorskip("torch")

import robodata  # noqa: E402
from robodata.lerobot import LeRobotCompatDataset  # noqa: E402
from robodata.lerobot import train as lerobot_train  # noqa: E402


@pytest.fixture
def factory(monkeypatch):
    """A stand-in for lerobot.datasets.factory holding LeRobot's two classes."""
    calls = []
    module = types.ModuleType("lerobot.datasets.factory")
    module.LeRobotDatasetMetadata = lambda *a, **k: calls.append(("meta", a, k)) or "lerobot meta"
    module.LeRobotDataset = lambda *a, **k: calls.append(("dataset", a, k)) or "lerobot dataset"
    package = types.ModuleType("lerobot.datasets")
    package.factory = module
    monkeypatch.setitem(sys.modules, "lerobot", types.ModuleType("lerobot"))
    monkeypatch.setitem(sys.modules, "lerobot.datasets", package)
    monkeypatch.setitem(sys.modules, "lerobot.datasets.factory", module)
    lerobot_train.install()
    lerobot_train.install()  # idempotent: wrapped once
    return module, calls


def test_robodata_datasets_open_pinned_and_lerobot_ones_pass_through(short_dataset, factory):
    module, calls = factory
    first = robodata.open(short_dataset).version
    robodata.open(short_dataset).tag("hook-run")
    meta = module.LeRobotDatasetMetadata(short_dataset, root=None, revision="hook-run", repo_type="dataset")
    assert meta.revision == str(first) and meta.total_episodes == 3
    dataset = module.LeRobotDataset(
        "ignored/repo",
        root=short_dataset,
        episodes=[0, 2],
        delta_timestamps={"action": [0.0, 0.01]},
        revision=str(first),
        return_uint8=True,
        tolerance_s=1e-4,
        video_backend="pyav",
    )
    assert isinstance(dataset, LeRobotCompatDataset)
    assert (
        dataset.version == first and dataset.episodes == [0, 2] and dataset.delta_timestamps == {"action": [0.0, 0.01]}
    )
    assert dataset[0]["observation.images.top"].dtype == torch.uint8
    filtered = module.LeRobotDataset(short_dataset, episode_filter=lambda row: row["episode_index"] == 1)
    assert filtered.episodes == [1]
    assert calls == []  # LeRobot's classes never saw a robodata dataset
    assert module.LeRobotDataset("lerobot/pusht", root=None, episodes=None) == "lerobot dataset"
    assert module.LeRobotDatasetMetadata("lerobot/pusht", revision="v3.0") == "lerobot meta"
    assert [c[0] for c in calls] == ["dataset", "meta"]


def test_uris():
    assert lerobot_train.robodata_uri("s3://bucket/demo") == "s3://bucket/demo"
    assert lerobot_train.robodata_uri("lerobot/pusht") is None
    assert (lerobot_train.pinned(None), lerobot_train.pinned("7"), lerobot_train.pinned("run-42")) == (
        None,
        7,
        "run-42",
    )
