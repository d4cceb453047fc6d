"""TrainingLoader / BatchReader (numpy only): exact batches, windows, budget, resume, pinning."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.reader._dataset import gop_store
from robodata.torch._batch_reader import BatchReader
from robodata.torch._delta_timestamps import resolve_delta_timestamps
from robodata.torch._loader import TrainingLoader
from robodata.torch._sampler import RowSampler

WRIST = "observation_images_wrist_left"


def test_batches_equal_get_frames_within_a_byte_budget(ingested):
    ds = robodata.open(ingested)
    sampler = RowSampler.for_dataset(ds, batch_size=8, seed=4)
    batches = sampler.batches()[:6]
    largest = max(int(gop_store(ds).byte_sizes(gop_store(ds).refs(b, WRIST)).sum()) for b in batches)
    # Room for two batches' GOPs: the prefetcher must wait for releases and evict.
    reader = BatchReader(ingested, cameras=["wrist_left"], budget_bytes=2 * largest, prefetch_batches=4)
    reader.schedule(batches)
    for indices in batches:
        batch = reader.read(indices)
        expected = ds.get_frames(indices, cameras=WRIST)[WRIST]
        assert np.array_equal(batch["index"], indices)
        assert np.array_equal(batch[WRIST], expected)
        rows = ds.lance_dataset.take(indices.tolist(), columns=["episode_index", "frame_index"]).to_pydict()
        assert batch["episode_index"].tolist() == rows["episode_index"]
        assert batch["frame_index"].tolist() == rows["frame_index"]
        assert batch["action"].shape == (8, 14) and batch["action"].dtype == np.float32
    assert 0 < reader.cache.peak_held <= 2 * largest
    # Scheduled batches are read by the prefetch thread, never on demand.
    assert reader.cache.prefetched_gops > 0 and reader.cache.on_demand_gops == 0
    reader.close()


def test_windows_float_and_channel_first_match_get_windows(ingested):
    ds = robodata.open(ingested)
    reader = BatchReader(
        ingested,
        cameras=["wrist_left"],
        columns=["action"],
        offsets={"wrist_left": [-3, 0]},
        delta_timestamps={"action": [0.0, 0.01, 0.02]},
        image_dtype="float32",
        pixel_format="rgbp",
        transform=lambda batch: {**batch, "transformed": np.array(True)},
    )
    first_rows = ds.lance_dataset.take([0], columns=["episode_index"]).to_pydict()
    episode_start = int(
        np.flatnonzero(ds.to_table(["episode_index"])["episode_index"].to_numpy() == first_rows["episode_index"][0])[0]
    )
    indices = np.array([episode_start, 100, 7])
    batch = reader.read(indices)
    frames = ds.get_windows(indices, [-3, 0], cameras=WRIST)
    actions = ds.get_windows(indices, [0, 1, 2], cameras=[], columns="action")
    assert batch[WRIST].shape == (3, 2, 3, 240, 320) and batch[WRIST].dtype == np.float32
    assert np.array_equal(batch[WRIST], np.moveaxis(frames.data["wrist_left"], -1, -3).astype(np.float32) / 255)
    assert np.array_equal(batch[f"{WRIST}_is_pad"], frames.is_pad)
    assert batch[f"{WRIST}_is_pad"][0].tolist() == [True, False]  # the episode's first row has no past
    assert np.array_equal(batch["action"], actions.columns["action"])
    assert np.array_equal(batch["action_is_pad"], actions.is_pad)
    assert batch["transformed"]


def test_delta_timestamps_must_be_whole_control_steps(ingested):
    reader = BatchReader(ingested, cameras=["top"], delta_timestamps={"action": [-0.02, 0.0, 0.01]})
    assert reader.offsets == {"action": [-2, 0, 1]}
    with pytest.raises(ValueError, match=r"delta_timestamps\['action'\] = 0.005 is not a multiple of 1/100 s"):
        BatchReader(ingested, cameras=[], delta_timestamps={"action": [0.0, 0.005]})
    # Whole rows only: a camera frame (1/30 s) between two rows is refused, not rounded.
    with pytest.raises(ValueError, match=r"delta_timestamps\['top'\] = -0.0333.* multiple of 1/100 s \(control\)"):
        BatchReader(ingested, cameras=["top"], delta_timestamps={"top": [-1 / 30]})


def test_one_resolver_for_both_datasets():
    """LeRobotCompatDataset and BatchReader share resolve_delta_timestamps: rows within
    tolerance_s, camera frames for a camera key, else an error naming both rates."""
    resolve = resolve_delta_timestamps
    assert resolve({"a": [0.01004, -0.02]}, control_hz=100.0) == {"a": [("row", 1), ("row", -2)]}
    fps = {"cam": 30.0, "a": None}.get
    assert resolve({"cam": [-1 / 30, 0.05]}, control_hz=100.0, camera_fps=fps) == {"cam": [("camera", -1), ("row", 5)]}
    with pytest.raises(ValueError, match=r"not a multiple of 1/100 s \(control\) or 1/30 s \(camera\) within"):
        resolve({"cam": [0.015]}, control_hz=100.0, camera_fps=fps)
    with pytest.raises(ValueError, match="within tolerance_s=1e-06"):
        resolve({"a": [0.01004]}, control_hz=100.0, tolerance_s=1e-6)


def test_unknown_window_column_is_named(ingested):
    with pytest.raises(ValueError, match="offsets name 'gripper', which is not among the columns read"):
        BatchReader(ingested, cameras=[], offsets={"gripper": [0, 1]})


def test_resume_mid_epoch_with_another_world_size_and_exact_next_sample(ingested):
    options = dict(cameras=[], columns=["frame_index"])
    first = TrainingLoader.create(
        ingested, batch_size=8, sampler_options={"seed": 3, "epoch": 2, "shuffle": "global"}, **options
    )
    seen, iterator = [], iter(first)
    for _ in range(5):
        seen.append(next(iterator)["index"])
    state = first.state_dict()
    assert state["consumed"] == 40 and state["epoch"] == 2 and state["dataset_version"] == first.dataset_version
    uninterrupted_next = next(iterator)["index"]

    same = TrainingLoader.create(ingested, batch_size=8, sampler_options={"seed": 3, "shuffle": "global"}, **options)
    same.load_state_dict(state)
    same.set_epoch(2)  # the usual epoch loop keeps the restored position
    assert np.array_equal(next(iter(same))["index"], uninterrupted_next)

    rest, steps = [], []
    for rank in range(2):
        loader = TrainingLoader.create(
            ingested,
            batch_size=5,
            sampler_options={"seed": 3, "rank": rank, "world_size": 2, "shuffle": "global"},
            **options,
        )
        loader.load_state_dict(state)
        batches = list(loader)
        steps.append(len(batches))
        rest += [batch["index"][~batch["padding"]] for batch in batches]
    assert steps[0] == steps[1] == 56  # (591 - 40) rows in steps of 2 x 5, the last one padded
    everything = np.concatenate(seen + rest)
    assert np.array_equal(np.sort(everything), np.arange(len(robodata.open(ingested))))


def test_a_finished_epoch_moves_on_to_a_new_order(ingested):
    loader = TrainingLoader.create(ingested, batch_size=200, cameras=[], columns=["frame_index"])
    epoch0 = np.concatenate([b["index"] for b in loader])
    assert loader.state_dict()["epoch"] == 1 and loader.state_dict()["consumed_batches"] == 0
    epoch1 = np.concatenate([b["index"] for b in loader])
    assert np.array_equal(np.sort(epoch0), np.sort(epoch1)) and not np.array_equal(epoch0, epoch1)


def test_pinned_version_ignores_rows_appended_after_it(dataset_copy, extra_upload):
    before = robodata.open(dataset_copy)
    before.tag("run-1")
    loader = TrainingLoader.create(dataset_copy, batch_size=64, cameras=["wrist_left"], columns=["episode_index"])
    robodata.ingest_episode(str(extra_upload), dataset_copy)
    assert len(robodata.open(dataset_copy)) > len(before)

    assert loader.dataset_version == before.version
    indices = np.concatenate([b["index"] for b in loader])
    assert np.array_equal(np.sort(indices), np.arange(len(before)))
    batch = next(iter(loader))
    assert set(batch["episode_index"].tolist()) <= {0, 1, 2}
    assert np.array_equal(batch[WRIST], before.get_frames(batch["index"], cameras=WRIST)[WRIST])

    by_tag = BatchReader(dataset_copy, version="run-1", cameras=[])
    assert (by_tag.dataset_version, by_tag.num_rows) == (before.version, len(before))
    latest = BatchReader(dataset_copy, cameras=[])
    assert latest.dataset_version > before.version


def test_episode_pools_cover_every_row_and_stay_inside_few_episodes(ingested):
    loader = TrainingLoader.create(
        ingested,
        batch_size=32,
        cameras=[],
        columns=["episode_index"],
        sampler_options={"shuffle": "episode", "pool_episodes": 1, "seed": 6},
    )
    batches = list(loader)
    visited = np.concatenate([b["index"] for b in batches])
    assert np.array_equal(np.sort(visited), np.arange(len(robodata.open(ingested))))
    # One episode per pool: a batch spans at most two episodes (at a pool boundary).
    assert max(len(set(b["episode_index"].tolist())) for b in batches) <= 2
