"""LeRobotCompatDataset against real LeRobot (0.6.1, Python >= 3.12) reading the LeRobot export of
the same version: items, camera order, stats (recomputed with LeRobot's own compute_stats too) and
the meta attributes lerobot-train, make_policy and EpisodeAwareSampler read.

Marked ``lerobot``: the default run deselects it (robodata_tests/conftest.py), and run with
``-m lerobot`` where LeRobot is not installed it fails rather than skips. Run it in the venv that
has LeRobot:

    python -m pytest -m lerobot robodata_tests/lerobot/test_parity.py
"""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.lerobot
torch = pytest.importorskip("torch")

from robodata.lerobot import LeRobotCompatDataset, export_lerobot  # noqa: E402

try:
    from lerobot.datasets import compute_stats
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.datasets.sampler import EpisodeAwareSampler
except ImportError as exc:  # not a skip: selecting these tests without LeRobot is an error
    LeRobotDataset = None
    MISSING = f"these tests need real LeRobot (pip install 'lerobot[dataset]==0.6.1', Python >= 3.12): {exc}"

# Columns the export writes so that import restores robodata's own columns: not LeRobot features.
EXPORT_OWN = {"language_instruction", "source", "is_intervention"}
DELTAS = {
    "observation.images.top": [-0.02, 0.0],
    "observation.state": [-0.01, 0.0],
    "action": [i / 100 for i in range(10)],
}


def lerobot_keys(keys) -> list[str]:
    return [k for k in keys if not k.startswith("robodata.") and k not in EXPORT_OWN]


@pytest.fixture(scope="module")
def export(short_dataset, tmp_path_factory) -> str:
    if LeRobotDataset is None:
        pytest.fail(MISSING)
    root = tmp_path_factory.mktemp("parity") / "lerobot"
    export_lerobot(
        short_dataset, root, vcodec="libx264rgb", pix_fmt="rgb24", crf=0, g=2, preset="ultrafast", progress=False
    )
    return str(root)


def theirs_of(export: str, **kwargs):
    return LeRobotDataset("local/parity", root=export, video_backend="pyav", **kwargs)


def test_items_are_lerobots_key_for_key(short_dataset, export):
    for options in ({"delta_timestamps": DELTAS}, {"return_uint8": True}):
        ours, theirs = LeRobotCompatDataset(short_dataset, **options), theirs_of(export, **options)
        n = len(theirs)
        assert len(ours) == n
        edges = {
            i
            for f, t in zip(
                theirs.meta.episodes["dataset_from_index"], theirs.meta.episodes["dataset_to_index"], strict=True
            )
            for i in (f - 1, f, f + 1, t - 2, t - 1)
        }
        for idx in sorted({i for i in edges if 0 <= i < n} | set(range(0, n, 23))):
            mine, expected = ours[idx], theirs[idx]
            assert list(mine) == lerobot_keys(expected), idx  # same keys, in LeRobot's order
            for key in mine:
                got, want = mine[key], expected[key]
                if isinstance(want, str):
                    assert got == want, (idx, key)
                    continue
                assert (got.dtype, got.shape) == (want.dtype, want.shape), (idx, key)
                assert torch.equal(got, want), (idx, key)


def test_meta_is_what_lerobots_code_reads(short_dataset, export):
    ours, theirs = LeRobotCompatDataset(short_dataset), theirs_of(export)
    mine, lerobot = ours.meta, theirs.meta
    assert mine.camera_keys == lerobot.camera_keys and mine.video_keys == lerobot.video_keys
    assert mine.image_keys == lerobot.image_keys == [] and mine.depth_keys == lerobot.depth_keys
    assert mine.has_language_columns is lerobot.has_language_columns is False
    for name in ("fps", "total_frames", "total_episodes", "total_tasks", "robot_type", "chunks_size"):
        assert getattr(mine, name) == getattr(lerobot, name), name
    assert list(mine.features) == lerobot_keys(lerobot.features)
    for key in mine.features:
        a, b = mine.features[key], lerobot.features[key]
        assert (a["dtype"], a["shape"], a["names"]) == (b["dtype"], tuple(b["shape"]), b["names"]), key
        assert ("info" in a, "fps" in a) == ("info" in b, "fps" in b), key
    assert mine.shapes == {k: v for k, v in lerobot.shapes.items() if k in mine.features}
    assert mine.names == {k: v for k, v in lerobot.names.items() if k in mine.features}
    assert mine.tasks.equals(lerobot.tasks)
    for task in lerobot.tasks.index:
        assert mine.get_task_index(task) == lerobot.get_task_index(task)
    for column in ("episode_index", "tasks", "length", "dataset_from_index", "dataset_to_index"):
        assert list(mine.episodes[column]) == list(lerobot.episodes[column]), column
    assert mine.info.fps == lerobot.info.fps and mine.info.total_frames == lerobot.info.total_frames
    for name in ("num_frames", "num_episodes", "fps", "episodes", "absolute_to_relative_idx"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.features == mine.features

    # A selection: totals still describe the dataset, the selection is the dataset object's.
    ours, theirs = LeRobotCompatDataset(short_dataset, episodes=[1]), theirs_of(export, episodes=[1])
    for name in ("num_frames", "num_episodes", "episodes", "absolute_to_relative_idx"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert (ours.meta.total_frames, ours.meta.total_episodes) == (theirs.meta.total_frames, theirs.meta.total_episodes)

    # lerobot-train's sampler, built from each dataset as lerobot-train builds it: the same frames.
    def order(ds) -> list[int]:
        sampler = EpisodeAwareSampler(
            ds.meta.episodes["dataset_from_index"],
            ds.meta.episodes["dataset_to_index"],
            episode_indices_to_use=ds.episodes,
            shuffle=True,
            seed=3,
            absolute_to_relative_idx=ds.absolute_to_relative_idx,
        )
        return list(sampler)

    assert order(ours) == order(theirs)


def assert_stats_close(mine: dict, expected: dict) -> None:
    assert sorted(mine) == sorted(expected)
    for key, stats in expected.items():
        assert sorted(mine[key]) == sorted(stats), key
        for name, value in stats.items():
            got = np.asarray(mine[key][name])
            assert got.shape == np.asarray(value).shape, (key, name)
            np.testing.assert_allclose(got, np.asarray(value), rtol=1e-5, atol=1e-6, err_msg=f"{key} {name}")


def test_stats_are_lerobots_quantiles_included(short_dataset, export):
    ours, theirs = LeRobotCompatDataset(short_dataset), theirs_of(export, return_uint8=True)
    written = {k: v for k, v in theirs.meta.stats.items() if k in lerobot_keys(theirs.meta.stats)}
    assert_stats_close(ours.meta.stats, written)
    # The same numbers from LeRobot's own compute_stats over the LeRobot copy's frames.
    per_episode = []
    features = theirs.meta.features
    for start, end in zip(
        theirs.meta.episodes["dataset_from_index"], theirs.meta.episodes["dataset_to_index"], strict=True
    ):
        rows = theirs.hf_dataset.select(range(start, end))
        data = {k: np.stack([np.asarray(v) for v in rows[k]]) for k in lerobot_keys(rows.column_names)}
        data = {k: v for k, v in data.items() if features[k]["dtype"] not in ("string", "language")}
        stats = compute_stats.compute_episode_stats(data, {k: features[k] for k in data})
        for key in theirs.meta.video_keys:
            picked = compute_stats.sample_indices(end - start)
            frames = np.stack(
                [compute_stats.auto_downsample_height_width(theirs[start + i][key].numpy()) for i in picked]
            )
            image = compute_stats.get_feature_stats(frames, axis=(0, 2, 3), keepdims=True)
            stats[key] = {k: v if k == "count" else np.squeeze(v / 255.0, axis=0) for k, v in image.items()}
        per_episode.append(stats)
    assert_stats_close(ours.meta.stats, compute_stats.aggregate_stats(per_episode))
    assert ours.meta.stats["observation.images.top"]["count"].tolist() == [
        sum(len(compute_stats.sample_indices(n)) for n in theirs.meta.episodes["length"])
    ]


# lerobot-train's ACT policy at its smallest, on CPU, with nothing to download or push
TINY_ACT = [
    "--policy.type=act",
    "--policy.device=cpu",
    "--policy.push_to_hub=false",
    "--policy.pretrained_backbone_weights=null",
    "--policy.chunk_size=5",
    "--policy.n_action_steps=5",
    "--policy.dim_model=32",
    "--policy.dim_feedforward=64",
]


def robodata_train(*args: str) -> str:
    """``python -m robodata.lerobot.train ARGS`` with this checkout first on the path: its log,
    once it has exited 0."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-m", "robodata.lerobot.train", *args], env=env, capture_output=True, text=True, timeout=900
    )
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    return log


def test_lerobot_train_runs_unchanged_through_robodata_train(short_dataset, export, tmp_path):
    """LeRobot's own training script, through robodata-train, on the dataset pinned to a tag."""
    import robodata

    version = robodata.open(short_dataset).tag("parity-train")
    log = robodata_train(
        f"--dataset.repo_id={short_dataset}",
        "--dataset.revision=parity-train",
        *TINY_ACT,
        "--steps=2",
        "--batch_size=2",
        "--num_workers=1",  # lerobot-train's default start method (spawn)
        "--log_freq=1",
        "--save_checkpoint=false",
        "--wandb.enable=false",
        f"--output_dir={tmp_path / 'out'}",
    )
    assert f"dataset.num_frames={len(LeRobotCompatDataset(short_dataset, version=version))}" in log
    assert "step:2 " in log and "End of training" in log
    assert f"robodata-train: {short_dataset} in the decode-once block order" in log  # its sampler


def test_an_unpinned_robodata_train_run_resumes_on_its_version(eight_short_uploads, tmp_path):
    """lerobot-train's own checkpoint and resume, through robodata-train, on a dataset that grows
    between them: the run records its version (the checkpoint's dataset.revision), the resume
    reads it again (issue 42.2)."""
    import json

    import robodata

    root = str(tmp_path / "ds")
    for upload in eight_short_uploads[:2]:
        robodata.ingest_episode(str(upload), root)
    first = robodata.open(root)
    out = tmp_path / "out"
    log = robodata_train(
        f"--dataset.repo_id={root}",  # no --dataset.revision
        *TINY_ACT,
        "--steps=2",
        "--save_freq=2",
        "--batch_size=2",
        "--num_workers=1",
        "--log_freq=1",
        "--wandb.enable=false",
        "--robodata.window=32",
        f"--output_dir={out}",
    )
    tag = f"robodata-train-v{first.version}"
    assert f"robodata-train: training on {root} version {first.version} (tag {tag})" in log
    assert f"dataset.num_frames={len(first)}" in log and "a window of 32 rows" in log
    config = out / "checkpoints" / "last" / "pretrained_model" / "train_config.json"
    assert json.loads(config.read_text())["dataset"]["revision"] == tag

    robodata.ingest_episode(str(eight_short_uploads[2]), root)
    assert len(robodata.open(root)) > len(first)
    log = robodata_train(f"--config_path={config}", "--resume=true", "--steps=4", "--robodata.window=32")
    assert f"robodata-train: resuming on {root} version {first.version} (tag {tag})" in log
    assert f"dataset.num_frames={len(first)}" in log and "step:4 " in log and "End of training" in log
