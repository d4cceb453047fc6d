"""robodata.lerobot.LeRobotCompatDataset against the LeRobot export of the same version, read by a
reference reader written from LeRobot's documented format; camera-rate offsets; stats."""

from __future__ import annotations

import pytest

from robodata.lerobot import export_lerobot

# Without torch the module is skipped, not an error: the imports below need it.
torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

from robodata.lerobot import LeRobotCompatDataset  # noqa: E402
from robodata_tests.lerobot.lerobot_reference import LeRobotReference  # noqa: E402

pytestmark = pytest.mark.scheduled_first  # DataLoader workers started again and again

DELTAS = {
    "observation.images.top": [-0.02, 0.0],
    "observation.state": [-0.01, 0.0],
    "action": [0.0, 0.01, 0.02, 0.03],
}


@pytest.fixture(scope="module")
def lossless_export(short_dataset, tmp_path_factory) -> str:
    """The LeRobot export with lossless RGB video, so pixels compare exactly."""
    root = tmp_path_factory.mktemp("export") / "lerobot"
    export_lerobot(
        short_dataset, root, vcodec="libx264rgb", pix_fmt="rgb24", crf=0, g=2, preset="ultrafast", progress=False
    )
    return str(root)


# Columns the export writes so that import restores robodata's own columns: not LeRobot features.
EXPORT_OWN = {"language_instruction", "source", "is_intervention"}


def assert_items_equal(mine: dict, theirs: dict) -> None:
    theirs = {k: v for k, v in theirs.items() if not k.startswith("robodata.") and k not in EXPORT_OWN}
    assert sorted(mine) == sorted(theirs)
    for key, expected in theirs.items():
        got = mine[key]
        if isinstance(expected, str):
            assert got == expected, key
            continue
        assert isinstance(got, torch.Tensor), key
        assert (got.dtype, got.shape) == (expected.dtype, expected.shape), key
        assert torch.equal(got, expected), key


def test_items_equal_the_lerobot_export_read_by_a_reference_reader(short_dataset, lossless_export):
    ours = LeRobotCompatDataset(short_dataset, delta_timestamps=DELTAS)
    reference = LeRobotReference(lossless_export, delta_timestamps=DELTAS)
    n = len(reference)
    assert len(ours) == n and n > 100
    edges = {
        i
        for e in reference.episodes
        for f in (e["dataset_from_index"], e["dataset_to_index"])
        for i in (f - 2, f - 1, f, f + 1)
    }
    picked = sorted({i for i in edges if 0 <= i < n} | set(range(5, n, 17)) | {0, 1, 2, 3})
    reference.prepare_videos(picked)
    for idx in picked:
        assert_items_equal(ours[idx], reference[idx])
    # Batched reads and PyTorch's default collate give the same values.
    batch = next(iter(DataLoader(ours, batch_size=4)))
    for j in range(4):
        assert_items_equal({k: v[j] for k, v in batch.items()}, reference[j])
    assert ours.meta.fps == reference.fps == 100
    assert ours.meta.camera_keys == reference.video_keys
    assert ours.meta.total_frames == n
    assert list(ours.meta.tasks.index) == [reference.tasks[i] for i in sorted(reference.tasks)]
    assert ours.meta.tasks["task_index"].tolist() == sorted(reference.tasks)
    for column in ("episode_index", "length", "tasks", "dataset_from_index", "dataset_to_index"):
        assert list(ours.meta.episodes[column]) == [e[column] for e in reference.episodes], column
    assert ours.meta.video_keys == ours.meta.camera_keys and ours.meta.image_keys == []
    theirs = {
        k: f for k, f in reference.info["features"].items() if not k.startswith("robodata.") and k not in EXPORT_OWN
    }
    assert list(ours.meta.features) == list(theirs)
    for key, feature in theirs.items():
        assert ours.meta.features[key]["shape"] == tuple(feature["shape"]), key
        assert ours.meta.features[key]["dtype"] == feature["dtype"], key
        assert ("info" in ours.meta.features[key]) == ("info" in feature), key
    assert (ours.num_frames, ours.num_episodes, ours.fps) == (n, len(reference.episodes), 100)
    assert ours.meta.has_language_columns is False and ours.absolute_to_relative_idx is None
    assert ours.meta.get_task_index(reference.tasks[1]) == 1 and ours.meta.get_task_index("nope") is None


def test_stats_are_the_exports_quantiles_included(short_dataset, lossless_export):
    """The export writes LeRobot's stats (robodata.lerobot._stats, LeRobot's compute_stats ported);
    meta.stats computes the same from the dataset, for every feature, index columns included."""
    import json
    from pathlib import Path

    import numpy as np

    exported = json.loads((Path(lossless_export) / "meta" / "stats.json").read_text())
    stats = LeRobotCompatDataset(short_dataset).meta.stats
    assert set(stats) == {k for k in exported if not k.startswith("robodata.") and k not in EXPORT_OWN}
    for key, mine in stats.items():
        assert sorted(mine) == sorted(exported[key]), key
        assert sorted(mine) == sorted(["min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99"])
        for name, value in mine.items():
            np.testing.assert_allclose(
                value, np.asarray(exported[key][name]), rtol=1e-5, atol=1e-6, err_msg=f"{key} {name}"
            )
    # 47-row episodes: every row is sampled for image statistics, as LeRobot samples them.
    assert stats["observation.images.top"]["count"].tolist() == [len(LeRobotCompatDataset(short_dataset))]


def test_uint8_output_and_transforms_on_tensors(short_dataset):
    plain = LeRobotCompatDataset(short_dataset)
    raw = LeRobotCompatDataset(short_dataset, return_uint8=True)
    flipped = LeRobotCompatDataset(short_dataset, image_transforms=lambda frame: frame.flip(-1))
    key = "observation.images.wrist_left"
    assert raw[7][key].dtype == torch.uint8 and raw[7][key].shape == (3, 240, 320)
    assert torch.equal(raw[7][key].float() / 255, plain[7][key])
    assert torch.equal(flipped[7][key], plain[7][key].flip(-1))


def test_camera_rate_offsets_read_the_previous_camera_frame(short_dataset, lossless_export):
    ds = LeRobotCompatDataset(
        short_dataset, delta_timestamps={"observation.images.top": [-1 / 30, 0]}, return_uint8=True
    )
    reference = LeRobotReference(lossless_export)
    times = reference._columns["robodata.frame_timestamp_ns.top"]
    episode = reference.episodes[1]
    first, end = episode["dataset_from_index"], episode["dataset_to_index"]
    for idx in (0, 3, 4, 20, first, first + 1, first + 4, end - 1):
        item = ds[idx]
        episode_start = max(e["dataset_from_index"] for e in reference.episodes if e["dataset_from_index"] <= idx)
        episode_end = next(
            e["dataset_to_index"] for e in reference.episodes if e["dataset_from_index"] == episode_start
        )
        previous = times[idx] - round(1e9 / 30)
        # The first row of the episode showing the previous camera frame (by its timestamp).
        rows = [r for r in range(episode_start, episode_end) if abs(times[r] - previous) < 1e5]
        if not rows:
            assert item["observation.images.top_is_pad"].tolist() == [True, False]
            assert torch.equal(item["observation.images.top"][0], ds[episode_start]["observation.images.top"][1])
            continue
        assert item["observation.images.top_is_pad"].tolist() == [False, False]
        assert torch.equal(item["observation.images.top"][0], ds[rows[0]]["observation.images.top"][1])
        assert not torch.equal(item["observation.images.top"][0], item["observation.images.top"][1])


def test_offsets_off_both_rates_and_unknown_keys_are_refused(short_dataset):
    with pytest.raises(ValueError, match=r"delta_timestamps\['action'\] = 0.015 is not a multiple of 1/100 s"):
        LeRobotCompatDataset(short_dataset, delta_timestamps={"action": [0.015]})
    with pytest.raises(ValueError, match="not a multiple of 1/100 s \\(control\\) or 1/30 s \\(camera\\)"):
        LeRobotCompatDataset(short_dataset, delta_timestamps={"observation.images.top": [-0.015]})
    with pytest.raises(ValueError, match="names 'observation.images.side', which is not a feature"):
        LeRobotCompatDataset(short_dataset, delta_timestamps={"observation.images.side": [0]})
    with pytest.raises(ValueError, match="has no episode \\[9\\]"):
        LeRobotCompatDataset(short_dataset, episodes=[0, 9])


def test_episodes_select_items_and_keep_the_global_index(short_dataset):
    everything = LeRobotCompatDataset(short_dataset)
    ds = LeRobotCompatDataset(short_dataset, episodes=[2])
    lengths = list(everything.meta.episodes["length"])
    assert len(ds) == lengths[2] == ds.num_frames and ds.num_episodes == 1 and ds.episodes == [2]
    # Totals describe the dataset, as LeRobot's meta does; the selection is the dataset object's.
    assert (ds.meta.total_frames, ds.meta.total_episodes) == (sum(lengths), 3)
    assert ds.absolute_to_relative_idx == {lengths[0] + lengths[1] + i: i for i in range(lengths[2])}
    assert int(ds[0]["episode_index"]) == 2 and int(ds[0]["frame_index"]) == 0
    assert int(ds[0]["index"]) == lengths[0] + lengths[1]


def test_forked_workers_after_reading_fail_at_once_saying_what_to_pass(short_dataset):
    import multiprocessing

    from robodata.lerobot._compat_dataset import ForkedWorkerError

    ds = LeRobotCompatDataset(short_dataset)
    ds[0]  # this process has read through Lance: a child forked from it is not safe
    loader = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context=multiprocessing.get_context("fork"))
    with pytest.warns(UserWarning, match="fork"), pytest.raises(ForkedWorkerError) as raised:
        next(iter(loader))
    assert str(raised.value) == ForkedWorkerError.text and "\n" not in str(raised.value)
    assert "multiprocessing_context=robodata.torch.worker_context()" in str(raised.value)
    # The way the message names works: spawned workers open their own Lance handles.
    from robodata.torch import worker_context

    loader = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context=worker_context())
    assert next(iter(loader))["index"].tolist() == [0, 1]


FORKED_LOADER = """
import multiprocessing, sys, warnings
import torch
from torch.utils.data import DataLoader
from robodata.lerobot import LeRobotCompatDataset
from robodata.torch._fork_safety import lance_thread_count

assert multiprocessing.get_start_method() == "fork"
try:  # read in the helper process; its error is raised here
    LeRobotCompatDataset(sys.argv[1], episodes=[99])
    raise AssertionError("episode 99 was accepted")
except ValueError as exc:
    assert "no episode [99]" in str(exc), exc
ds = LeRobotCompatDataset(sys.argv[1], delta_timestamps={"action": [0.0, 0.01]}, return_uint8=True)
stats = ds.meta.stats  # as lerobot-train reads them before its DataLoader
assert lance_thread_count() == 0, "the construction used Lance in this process"
runs = []
for _ in range(3):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Lance's 'not fork-safe' warning would fail here
        runs.append(list(DataLoader(ds, batch_size=5, num_workers=2)))
mine = ds.__getitems__(list(range(len(ds))))  # now this process reads, after the workers
for batches in runs:
    rows = [dict(zip(b, values)) for b in batches for values in zip(*b.values())]
    assert len(rows) == len(ds)
    for got, want in zip(rows, mine):
        for key, value in want.items():
            assert (got[key] == value) if isinstance(value, str) else torch.equal(got[key], value), key
print("ok", len(ds), sorted(stats))
"""


def test_a_plain_forked_dataloader_reads_what_the_dataset_reads(short_dataset):
    """A fresh training script: dataset, its stats, then DataLoader(num_workers=2) with the
    default start method (fork), three times; every item equals the training process's read."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-c", FORKED_LOADER, short_dataset], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"ok {len(LeRobotCompatDataset(short_dataset))} ")
    assert "observation.state" in done.stdout
