"""The export's files, info.json and episodes table match LeRobot v3.0 field for field (checked
against huggingface/lerobot 7427f31), and every frame is where LeRobot's loader looks for it."""

from __future__ import annotations

import json
from pathlib import Path

import av
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import robodata
from robodata.codec._quality import psnr
from robodata.lerobot import LeRobotFormatError, export_lerobot

CAMERAS = ["top", "wrist_left", "wrist_right"]
KEYS = [f"observation.images.{c}" for c in CAMERAS]
EXPORT_PSNR_DB = 30.0  # AV1 crf 30, g 2 against robodata's own decoded frame; measured minimum 32.8 dB


def test_file_layout_is_lerobot_v3(exported):
    files = sorted(str(p.relative_to(exported)) for p in Path(exported).rglob("*") if p.is_file())
    assert files == sorted(
        [
            "meta/info.json",
            "meta/stats.json",
            "meta/tasks.parquet",
            "meta/episodes/chunk-000/file-000.parquet",
            "data/chunk-000/file-000.parquet",
            "data/chunk-000/file-001.parquet",
        ]
        + [f"videos/{key}/chunk-000/file-{f:03d}.mp4" for key in KEYS for f in (0, 1)]
    )


def test_info_json_fields(exported, ingested):
    info = json.loads((Path(exported) / "meta/info.json").read_text())
    assert list(info) == [
        "codebase_version", "fps", "features", "total_episodes", "total_frames", "total_tasks",
        "chunks_size", "data_files_size_in_mb", "video_files_size_in_mb", "data_path", "video_path",
        "robot_type", "splits",
    ]  # fmt: skip
    ds = robodata.open(ingested)
    assert info["codebase_version"] == "v3.0"
    assert info["fps"] == 100
    assert info["total_episodes"] == 3 and info["total_frames"] == len(ds) and info["total_tasks"] == 3
    assert (info["chunks_size"], info["data_files_size_in_mb"], info["video_files_size_in_mb"]) == (
        1000,
        100,
        200,
    )
    assert info["data_path"] == "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
    assert info["video_path"] == "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
    assert info["robot_type"] == "aloha" and info["splits"] == {"train": "0:3"}
    features = info["features"]
    assert list(features) == [
        "observation.state", "action", *KEYS, "language_instruction", "source", "is_intervention",
        *[f"robodata.frame_timestamp_ns.{c}" for c in CAMERAS],
        "timestamp", "frame_index", "episode_index", "index", "task_index",
    ]  # fmt: skip
    assert features["observation.state"] == {
        "dtype": "float32", "shape": [14], "names": ds.metadata.joint_names
    }  # fmt: skip
    assert features["timestamp"] == {"dtype": "float32", "shape": [1], "names": None}
    top = features["observation.images.top"]
    assert (top["dtype"], top["shape"], top["names"]) == (
        "video",
        [480, 640, 3],
        ["height", "width", "channels"],
    )
    assert top["info"] == {
        "video.height": 480, "video.width": 640, "video.codec": "av1", "video.pix_fmt": "yuv420p",
        "video.fps": 100, "video.channels": 3, "has_audio": False, "video.g": 2, "video.crf": 30,
        "video.preset": 12, "video.fast_decode": 0, "video.video_backend": "pyav",
        "video.extra_options": {}, "is_depth_map": False,
    }  # fmt: skip


def test_episodes_tasks_and_data_tables(exported, ingested):
    episodes = pq.read_table(Path(exported) / "meta/episodes/chunk-000/file-000.parquet")
    plain = [c for c in episodes.column_names if not c.startswith("stats/")]
    video_cols = [
        f"videos/{k}/{f}" for k in KEYS for f in ("chunk_index", "file_index", "from_timestamp", "to_timestamp")
    ]
    assert plain == [
        "episode_index", "tasks", "length", "data/chunk_index", "data/file_index",
        "dataset_from_index", "dataset_to_index", *video_cols,
        "meta/episodes/chunk_index", "meta/episodes/file_index",
        "robodata/episode_index", "robodata/task", "robodata/split",
    ]  # fmt: skip
    stats_keys = {c.split("/")[1] for c in episodes.column_names if c.startswith("stats/")}
    assert "observation.state" in stats_keys and set(KEYS) <= stats_keys
    rows = episodes.to_pylist()
    lengths = [r["length"] for r in rows]
    assert [r["episode_index"] for r in rows] == [0, 1, 2]
    assert [r["data/file_index"] for r in rows] == [0, 0, 1]
    assert [r["dataset_from_index"] for r in rows] == [0, lengths[0], lengths[0] + lengths[1]]
    assert [r["dataset_to_index"] for r in rows] == list(np.cumsum(lengths))
    top = "videos/observation.images.top"
    assert [r[f"{top}/from_timestamp"] for r in rows] == [0.0, lengths[0] / 100, 0.0]
    assert [r[f"{top}/to_timestamp"] for r in rows] == [
        lengths[0] / 100,
        (lengths[0] + lengths[1]) / 100,
        lengths[2] / 100,
    ]
    ds = robodata.open(ingested)
    assert lengths == ds.episodes()["rows"].to_pylist()

    tasks = pd.read_parquet(Path(exported) / "meta/tasks.parquet")  # as LeRobot's load_tasks reads it
    assert tasks.index.name == "task" and list(tasks.columns) == ["task_index"]
    assert [r["tasks"] for r in rows] == [[t] for t in tasks.index]

    data = pq.ParquetFile(Path(exported) / "data/chunk-000/file-000.parquet")
    assert data.num_row_groups == 2  # one per episode
    table = data.read()
    assert table["index"].to_pylist() == list(range(lengths[0] + lengths[1]))
    assert table.schema.field("observation.state").type.list_size == 14
    stats = json.loads((Path(exported) / "meta/stats.json").read_text())
    assert np.asarray(stats["observation.images.top"]["mean"]).shape == (3, 1, 1)
    assert stats["observation.state"]["count"] == [len(ds)]


def _lerobot_lookup(path: Path, query_s: float, tolerance_s: float = 1e-4) -> np.ndarray:
    """LeRobot's decode_video_frames_pyav for one timestamp: seek to the keyframe before, decode
    forward, take the nearest frame within tolerance."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        container.seek(round(query_s / stream.time_base) - 1, backward=True, any_frame=False, stream=stream)
        best = None
        for frame in container.decode(stream):
            t = float(frame.pts * stream.time_base)
            if best is None or abs(t - query_s) < best[0]:
                best = (abs(t - query_s), frame.to_ndarray(format="rgb24"))
            if t >= query_s:
                break
    assert best is not None and best[0] <= tolerance_s, f"no frame within {tolerance_s} s of {query_s}"
    return best[1]


def test_every_row_shows_its_robodata_frame_where_lerobot_looks(exported, ingested):
    ds = robodata.open(ingested)
    rows = ds.to_table(columns=["episode_index", "frame_index", "timestamp_ns", "observation_state", "action"])
    episodes = pq.read_table(Path(exported) / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    for episode in episodes:
        file = episode["data/file_index"]
        data = pq.read_table(Path(exported) / f"data/chunk-000/file-{file:03d}.parquet")
        data = data.filter(pa.array(data["episode_index"].to_numpy() == episode["episode_index"]))
        source = np.flatnonzero(rows["episode_index"].to_numpy() == episode["robodata/episode_index"])
        source = source[np.argsort(rows["frame_index"].to_numpy()[source])]
        np.testing.assert_array_equal(
            np.stack(data["observation.state"].to_numpy(zero_copy_only=False)),
            np.stack(rows["observation_state"].to_numpy(zero_copy_only=False)[source]),
        )
        np.testing.assert_array_equal(
            np.stack(data["action"].to_numpy(zero_copy_only=False)),
            np.stack(rows["action"].to_numpy(zero_copy_only=False)[source]),
        )
        for frame in (0, 1, 2, 3, 50, episode["length"] - 1):  # 1..3 repeat camera frame 0 at 100 Hz
            timestamp = data["timestamp"][frame].as_py()
            assert timestamp == pytest.approx(frame / 100)
            for camera, key in zip(CAMERAS, KEYS, strict=True):
                video = Path(exported) / f"videos/{key}/chunk-000/file-{episode[f'videos/{key}/file_index']:03d}.mp4"
                got = _lerobot_lookup(video, episode[f"videos/{key}/from_timestamp"] + timestamp)
                want = ds[int(source[frame])][f"observation_images_{camera}"]
                assert psnr(want, got) > EXPORT_PSNR_DB, (episode["episode_index"], frame, camera)


def test_export_refuses_an_existing_folder_and_leaves_nothing_on_failure(ingested, tmp_path):
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    with pytest.raises(LeRobotFormatError, match="already exists"):
        export_lerobot(ingested, existing, progress=False)
    assert [p.name for p in existing.iterdir()] == ["keep.txt"]
    with pytest.raises(ValueError):
        export_lerobot(ingested, tmp_path / "out", vcodec="no_such_codec", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]


def test_another_encoder_keeps_its_own_preset(ingested, tmp_path):
    """Preset 12 is libsvtav1's default in LeRobot's VideoEncoderConfig, not every encoder's: an
    H.264 export (x264 has no preset 12) uses x264's own and records none, as LeRobot does."""
    root = tmp_path / "h264"
    result = export_lerobot(ingested, root, vcodec="libx264", rate="camera", progress=False)
    features = json.loads((root / "meta/info.json").read_text())["features"]
    videos = {key: feature["info"] for key, feature in features.items() if feature["dtype"] == "video"}
    assert sorted(videos) == sorted(KEYS)
    assert {(info["video.codec"], info["video.preset"]) for info in videos.values()} == {("h264", None)}
    for key in KEYS:
        [mp4] = (root / "videos" / key).rglob("*.mp4")
        with av.open(str(mp4)) as container:
            assert sum(1 for _ in container.decode(video=0)) == result.frames
