"""robodata-train's own flags (issue 42.3): ``--robodata.order``, ``--robodata.window`` and
``--robodata.frame_size`` in lerobot-train's dotted style, taken out of the command line LeRobot
parses, shown by ``--help``; ``$ROBODATA_TRAIN_ORDER`` still chooses the order without the flag.
LeRobot is a stand-in here (the modules robodata-train touches); the real run is in test_parity.py."""

from __future__ import annotations

import logging
import sys
import types

import numpy as np
import pytest

import robodata

torch = pytest.importorskip("torch")

from robodata.lerobot import LeRobotCompatDataset  # noqa: E402
from robodata.lerobot import train as robodata_train  # noqa: E402
from robodata.lerobot._block_order import BlockOrderSampler  # noqa: E402
from robodata.lerobot._train_options import RobodataOptions, split_arguments  # noqa: E402


def test_flags_are_taken_out_of_lerobots_command_line():
    options, rest = split_arguments(
        ["--dataset.repo_id=data/x", "--robodata.order=uniform", "--robodata.window", "64", "--steps=5"]
    )
    assert options == RobodataOptions(order="uniform", window=64) and rest == ["--dataset.repo_id=data/x", "--steps=5"]
    options, _ = split_arguments(["--robodata.frame_size=320x240", "--robodata.order=block"])
    assert (options.frame_size, options.order) == ((240, 320), "decode_once")  # WIDTHxHEIGHT, as renditions
    assert options.flags() == ["--robodata.order=decode_once", "--robodata.frame_size=320x240"]
    options, _ = split_arguments(["--robodata.pool_mb=64", "--robodata.run_mb", "2"])
    assert options.order_bytes() == {"run_bytes": 2 << 20, "pool_bytes": 64 << 20}
    assert options.flags() == ["--robodata.pool_mb=64", "--robodata.run_mb=2"]
    refusals = {
        "--robodata.orde=uniform": "robodata-train: unknown flag --robodata.orde; robodata's flags are "
        "--robodata.order, --robodata.window, --robodata.pool_mb, --robodata.run_mb, --robodata.frame_size",
        "--robodata.order=random": "robodata-train: --robodata.order must be decode_once or uniform, got 'random'",
        "--robodata.window=-3": "robodata-train: --robodata.window must be a number of rows (0 or more), got '-3'",
        "--robodata.frame_size=224": "robodata-train: --robodata.frame_size: rendition '224' is not "
        "WIDTHxHEIGHT (e.g. 224x224)",
        "--robodata.window": "robodata-train: --robodata.window needs a value (N)",
        "--robodata.pool_mb=0.5": "robodata-train: --robodata.pool_mb must be a whole number of MiB (0 or more), "
        "got '0.5'",
    }
    for argument, message in refusals.items():
        with pytest.raises(SystemExit) as refused:
            split_arguments([argument])
        assert str(refused.value) == message


def test_the_order_variable_is_the_flags_fallback(monkeypatch):
    monkeypatch.setenv("ROBODATA_TRAIN_ORDER", "uniform")
    assert robodata_train.training_order() == "uniform"
    assert robodata_train.training_order(RobodataOptions(order="decode_once")) == "decode_once"
    monkeypatch.setenv("ROBODATA_TRAIN_ORDER", "block")
    assert robodata_train.training_order() == "decode_once"
    monkeypatch.delenv("ROBODATA_TRAIN_ORDER")
    assert robodata_train.training_order() == "decode_once"


class FakeEpisodeAwareSampler:
    def __init__(self, *args, **kwargs) -> None:
        self.kwargs = kwargs


@pytest.fixture
def lerobot(monkeypatch):
    """Stand-ins for the LeRobot modules robodata-train uses: the factory's two classes, and a
    training script whose main() parses --dataset.repo_id and --batch_size and builds the dataset
    and sampler as lerobot-train does (what it built is kept in ``ran``)."""
    ran: dict = {}
    factory = types.ModuleType("lerobot.datasets.factory")
    factory.LeRobotDatasetMetadata = lambda *a, **k: pytest.fail("LeRobot's metadata class was called")
    factory.LeRobotDataset = lambda *a, **k: pytest.fail("LeRobot's dataset class was called")
    script = types.ModuleType("lerobot.scripts.lerobot_train")

    def make_train_eval_datasets(cfg):
        dataset = factory.LeRobotDataset(cfg.dataset.repo_id, root=None, revision=cfg.dataset.revision)
        return dataset, None

    def main():
        ran["argv"] = list(sys.argv[1:])
        values = dict(argument[2:].split("=", 1) for argument in sys.argv[1:])
        dataset_cfg = types.SimpleNamespace(repo_id=values["dataset.repo_id"], root=None, revision=None)
        cfg = types.SimpleNamespace(
            dataset=dataset_cfg, resume=False, checkpoint_path=None, batch_size=int(values["batch_size"]), num_workers=0
        )
        dataset, _ = script.make_train_eval_datasets(cfg)
        ran["dataset"], ran["revision"] = dataset, cfg.dataset.revision
        ran["sampler"] = script.EpisodeAwareSampler(
            dataset.meta.episodes["dataset_from_index"],
            dataset.meta.episodes["dataset_to_index"],
            episode_indices_to_use=dataset.episodes,
            shuffle=True,
            seed=1,
        )

    script.make_train_eval_datasets = make_train_eval_datasets
    script.EpisodeAwareSampler = FakeEpisodeAwareSampler
    script.main = main
    modules = {
        "lerobot": types.ModuleType("lerobot"),
        "lerobot.datasets": types.ModuleType("lerobot.datasets"),
        "lerobot.datasets.factory": factory,
        "lerobot.scripts": types.ModuleType("lerobot.scripts"),
        "lerobot.scripts.lerobot_train": script,
    }
    modules["lerobot.datasets"].factory = factory
    modules["lerobot.scripts"].lerobot_train = script
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(sys, "argv", ["robodata-train"])
    monkeypatch.delenv("ROBODATA_TRAIN_ORDER", raising=False)
    return ran


def test_frame_size_and_window_reach_the_dataset_and_the_order(lerobot, dataset_copy, caplog):
    from robodata.ingest._renditions import add_rendition

    add_rendition(dataset_copy, "224x224", cameras=["top"])  # the other cameras are scaled
    caplog.set_level(logging.INFO)
    robodata_train.main(
        [
            f"--dataset.repo_id={dataset_copy}",
            "--robodata.frame_size=224x224",
            "--batch_size=4",
            "--robodata.window=64",
            "--robodata.pool_mb=3",
            "--robodata.run_mb=1",  # runs are off by default on a local disk (run_bytes_for)
        ]
    )
    assert lerobot["argv"] == [f"--dataset.repo_id={dataset_copy}", "--batch_size=4"]  # LeRobot never sees ours
    dataset, sampler = lerobot["dataset"], lerobot["sampler"]
    assert isinstance(dataset, LeRobotCompatDataset) and isinstance(sampler, BlockOrderSampler)
    assert sampler.window_rows == 64 and lerobot["revision"] == f"robodata-train-v{dataset.version}"
    assert (sampler.pool_bytes, sampler.run_bytes) == (3 << 20, 1 << 20)
    assert (
        "robodata-train: --robodata.window=64 --robodata.pool_mb=3 --robodata.run_mb=1 --robodata.frame_size=224x224"
        in caplog.text
    )
    assert (
        "robodata-train: frames at 224x224: top from the stored 224x224 rendition; wrist_left, wrist_right decoded "
        "at full size and scaled (robodata add-rendition DATASET 224x224)"
    ) in caplog.text
    stored = robodata.open(dataset_copy)
    for camera in ("top", "wrist_left"):
        key = f"observation.images.{camera}"
        assert dataset.meta.features[key]["shape"] == (224, 224, 3)
        item = dataset[5][key]  # float32 in [0, 1], as lerobot-train's items
        expected = stored.get_frames([5], cameras=camera, resolution=(224, 224))[f"observation_images_{camera}"][0]
        assert item.shape == (3, 224, 224)
        assert np.array_equal((item.permute(1, 2, 0).numpy() * 255).round().astype(np.uint8), expected)


def test_the_uniform_order_by_flag(lerobot, short_dataset, monkeypatch):
    monkeypatch.setenv("ROBODATA_TRAIN_ORDER", "decode_once")  # the flag wins
    robodata_train.main([f"--dataset.repo_id={short_dataset}", "--robodata.order=uniform", "--batch_size=4"])
    assert isinstance(lerobot["sampler"], FakeEpisodeAwareSampler)
    assert lerobot["dataset"].reader.resolution is None  # no --robodata.frame_size: the recorded size


def test_help_lists_robodatas_flags(capsys):
    options, rest = robodata_train.parse_arguments(["--help"])  # then LeRobot prints its own help
    out = capsys.readouterr().out
    assert rest == ["--help"] and out.startswith("robodata-train: lerobot-train on robodata datasets")
    flags = (
        "--robodata.order=decode_once|uniform",
        "--robodata.window=N",
        "--robodata.pool_mb=N",
        "--robodata.run_mb=N",
    )
    for flag in (*flags, "--robodata.frame_size=WIDTHxHEIGHT"):
        assert flag in out


def test_robodata_train_stops_when_dev_shm_cannot_hold_two_batches(short_dataset, monkeypatch, caplog):
    import logging
    import os

    real = os.statvfs
    free = {"bytes": 0}

    def statvfs(path):  # /dev/shm as a tmpfs with free["bytes"] left
        if path != "/dev/shm":
            return real(path)
        return os.statvfs_result((4096, 4096, 1 << 20, free["bytes"] // 4096, free["bytes"] // 4096, 0, 0, 0, 0, 255))

    monkeypatch.setattr(os, "statvfs", statvfs)
    dataset = LeRobotCompatDataset(short_dataset, return_uint8=True)
    cfg = types.SimpleNamespace(batch_size=8, num_workers=2, prefetch_factor=4)
    cameras = robodata.open(short_dataset).metadata.cameras.values()
    batch = 8 * sum(camera.height * camera.width * 3 for camera in cameras)  # uint8 frames, as lerobot-train's
    free["bytes"] = (2 * 2 * batch - 1) & ~4095  # less than two batches per worker
    with pytest.raises(SystemExit) as refused:
        robodata_train.check_shared_memory(dataset, cfg)
    assert str(refused.value) == (
        f"robodata-train: /dev/shm has {free['bytes'] / 2**20:.0f} MB free, less than the {4 * batch / 2**20:.0f} MB "
        f"2 DataLoader workers need for two batches of {batch / 2**20:.0f} MB of frames each: give it more "
        f"(docker run --shm-size={max(1, (2 * 6 * batch) >> 30) + 1}g), or lower --num_workers, --batch_size or the "
        "frame size (--robodata.frame_size=224x224)"
    )
    free["bytes"] = 2 * 6 * batch + (1 << 20)  # room for every batch in flight: no word
    caplog.set_level(logging.INFO)
    robodata_train.check_shared_memory(dataset, cfg)
    assert f"/dev/shm: up to {2 * 6 * batch / 2**20:.0f} MB for 2 workers' batches in flight" in caplog.text
    assert "WARNING" not in caplog.text
