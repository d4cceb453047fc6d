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


class FakeEpisodeAwareSampler:
    """LeRobot's sampler as its training script calls it (records the call)."""

    def __init__(self, dataset_from_indices, dataset_to_indices, **kwargs) -> None:
        self.args = (list(dataset_from_indices), list(dataset_to_indices))
        self.kwargs = kwargs


def train_config(repo_id: str, revision: str | None = None, **values) -> types.SimpleNamespace:
    """The parts of LeRobot's TrainPipelineConfig robodata-train reads."""
    dataset = types.SimpleNamespace(repo_id=repo_id, root=None, revision=revision)
    return types.SimpleNamespace(dataset=dataset, resume=False, checkpoint_path=None, **values)


def training_script(dataset, cfg) -> types.ModuleType:
    """A stand-in for lerobot.scripts.lerobot_train: the two names robodata-train replaces."""
    script = types.ModuleType("lerobot.scripts.lerobot_train")
    script.make_train_eval_datasets = lambda config: (dataset, None)
    script.EpisodeAwareSampler = FakeEpisodeAwareSampler
    lerobot_train.install_training_order(script)
    lerobot_train.install_training_order(script)  # idempotent: wrapped once
    return script


def build_sampler(script, cfg):
    """What LeRobot 0.6.1's train() does: make the datasets, then the sampler over the episodes."""
    dataset, _ = script.make_train_eval_datasets(cfg)
    return script.EpisodeAwareSampler(
        dataset.meta.episodes["dataset_from_index"],
        dataset.meta.episodes["dataset_to_index"],
        episode_indices_to_use=dataset.episodes,
        drop_n_last_frames=0,
        shuffle=True,
        seed=cfg.seed,
        absolute_to_relative_idx=dataset.absolute_to_relative_idx,
    )


def test_robodata_train_reads_robodata_datasets_in_the_block_order(short_dataset, monkeypatch):
    from robodata.lerobot._block_order import BlockOrderSampler

    monkeypatch.delenv("ROBODATA_TRAIN_ORDER", raising=False)
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    cfg = train_config(short_dataset, batch_size=4, num_workers=2, seed=9)
    dataset = LeRobotCompatDataset(short_dataset)
    script = training_script(dataset, cfg)
    sampler = build_sampler(script, cfg)
    assert isinstance(sampler, BlockOrderSampler)
    assert (sampler.batch_size, sampler.num_workers, sampler.rank, sampler.world_size, sampler.seed) == (4, 2, 1, 2, 9)
    assert len(sampler) == len(dataset) and dataset._order is sampler  # its workers plan with it
    # LeRobot's resume: compute_sampler_state(step=3, len, batch_size=4, num_processes=2)
    sampler.load_state_dict({"epoch": 0, "start_index": 3 * 4 * 2})
    assert list(iter(sampler)) == sampler.order(0)[24:].tolist()
    # the uniform order one option away: LeRobot's own sampler
    monkeypatch.setenv("ROBODATA_TRAIN_ORDER", "uniform")
    uniform = build_sampler(script, cfg)
    assert isinstance(uniform, FakeEpisodeAwareSampler) and uniform.kwargs["seed"] == 9
    monkeypatch.setenv("ROBODATA_TRAIN_ORDER", "random")
    with pytest.raises(SystemExit, match="ROBODATA_TRAIN_ORDER must be one of"):
        build_sampler(script, cfg)


def test_lerobot_datasets_keep_lerobots_sampler(monkeypatch):
    monkeypatch.delenv("ROBODATA_TRAIN_ORDER", raising=False)
    meta = types.SimpleNamespace(episodes={"dataset_from_index": [0, 5], "dataset_to_index": [5, 9]})
    lerobot_dataset = types.SimpleNamespace(meta=meta, episodes=None, absolute_to_relative_idx=None)
    cfg = train_config("lerobot/pusht", batch_size=4, num_workers=2, seed=3)
    sampler = build_sampler(training_script(lerobot_dataset, cfg), cfg)
    assert isinstance(sampler, FakeEpisodeAwareSampler)
    assert sampler.args == ([0, 5], [5, 9]) and sampler.kwargs["shuffle"] is True
