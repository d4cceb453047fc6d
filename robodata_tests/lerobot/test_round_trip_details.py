"""Round trips of the less common cases on a tiny synthetic dataset: row times off the 1/fps grid,
annotation columns (with gaps) and an older version exported by number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import robodata
from robodata.ingest import CameraStream, EpisodeData, write_episode
from robodata.lerobot import export_lerobot, import_lerobot

SIZE = 64  # SVT-AV1's smallest frame; the exports here are H.264: these details do not depend on the codec


def _episode(index: int, jitter_ns: int) -> EpisodeData:
    rng = np.random.default_rng(index)
    n = 11  # 20 Hz rows over 0.5 s, 10 fps camera
    times = np.arange(n, dtype=np.int64) * 50_000_000 + jitter_ns * (np.arange(n) % 2)
    frames = [np.full((SIZE, SIZE, 3), 20 * k, dtype=np.uint8) for k in range(n // 2 + 1)]
    camera = CameraStream(
        "front", SIZE, SIZE, 10.0, lambda: ((k * 100_000_000, f) for k, f in enumerate(frames)), "synthetic"
    )
    state = rng.standard_normal((n, 2)).astype(np.float32)
    return EpisodeData(
        episode_id=f"ep{index}",
        episode_index=index,
        control_hz=20.0,
        joint_names=["a", "b"],
        timestamps_ns=times,
        observation_state=state,
        action=state + 1,
        cameras=[camera],
        task="poke",
        split="val" if index == 7 else "train",
    )


def test_irregular_times_annotations_and_old_versions_survive(tmp_path):
    source = str(tmp_path / "ds")
    write_episode(_episode(3, jitter_ns=1_234_567), source)
    write_episode(_episode(7, jitter_ns=0), source)
    labels = pa.table({"episode_index": [3, 7], "frame_index": [4, 0], "reward": pa.array([0.5, 1.0], pa.float32())})
    latest = robodata.add_annotations(source, labels)

    exported = tmp_path / "lerobot"
    export_lerobot(source, exported, vcodec="libx264", progress=False)
    info = json.loads((exported / "meta/info.json").read_text())
    assert info["fps"] == 20 and info["splits"] == {"train": "0:1", "val": "1:2"}
    assert info["features"]["reward"] == {"dtype": "float32", "shape": [1], "names": None}
    assert info["features"]["robodata.timestamp_ns"] == {"dtype": "int64", "shape": [1], "names": None}
    data = pq.read_table(exported / "data/chunk-000/file-000.parquet")
    assert data["timestamp"].to_pylist()[:3] == [np.float32(0.0), np.float32(0.05), np.float32(0.1)]

    back = str(tmp_path / "back")
    import_lerobot(str(exported), back, progress=False)
    key = [("episode_index", "ascending"), ("frame_index", "ascending")]
    a = robodata.open(source).to_table().sort_by(key)
    b = robodata.open(back).to_table().sort_by(key)
    for column in (
        "episode_index",
        "frame_index",
        "timestamp_ns",
        "observation_state",
        "action",
        "split",
        "reward",
    ):
        assert b[column].equals(a[column]), column
    assert b["observation_images_front_frame_index_in_gop"].equals(a["observation_images_front_frame_index_in_gop"])

    older = tmp_path / "older"
    result = export_lerobot(source, older, version=latest - 1, vcodec="libx264", progress=False)
    assert result.dataset_version == latest - 1 and result.episodes == 2
    assert "reward" not in json.loads((older / "meta/info.json").read_text())["features"]
    assert Path(older / "meta/episodes/chunk-000/file-000.parquet").exists()
