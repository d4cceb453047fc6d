"""The footage the peers benchmark reads and its storage figures: synthetic uploads without the
peers' venv, rendered ALOHA episodes reused across footage sizes, the peers' dataset written
through LeRobot's own writer calls from the same source frames, and PSNR against the source."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.peers import lerobot_writer
from benchmarks.peers.footage import benchmark_uploads, gym_aloha_available
from benchmarks.peers.peer_storage import psnr_figures, quality_camera
from robodata.codec._quality import psnr


def test_psnr_figures_of_one_camera_and_of_all():
    rng = np.random.default_rng(0)
    top = [rng.integers(0, 256, (8, 8, 3), dtype=np.uint8) for _ in range(2)]
    side = [rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)]
    noisy_top = np.stack([np.clip(f.astype(int) + 3, 0, 255).astype(np.uint8) for f in top])
    noisy_side = np.stack([np.clip(f.astype(int) - 9, 0, 255).astype(np.uint8) for f in side])
    figures = psnr_figures({"top": top, "side": side}, {"top": noisy_top, "side": noisy_side}, "top")
    each = [psnr(r, t) for r, t in zip(top + side, [*noisy_top, *noisy_side], strict=True)]
    assert figures["psnr_top_db"] == pytest.approx(np.mean(each[:2]))
    assert figures["psnr_db"] == pytest.approx(np.mean(each))
    assert figures["psnr_db"] < figures["psnr_top_db"]  # the side camera is noisier
    assert quality_camera(["angle", "top"]) == "top" and quality_camera(["left", "right"]) == "left"


def test_synthetic_footage_without_the_peers_venv(tmp_path):
    assert not gym_aloha_available(None) and not gym_aloha_available(tmp_path / "python")
    uploads, source = benchmark_uploads(tmp_path, None, source="auto", episodes=1, seconds=0.2)
    assert source == "synthetic" and (uploads[0] / "episode.json").exists()
    with pytest.raises(ValueError, match="needs the peers' venv"):
        benchmark_uploads(tmp_path, None, source="aloha")


class _RecordingLeRobotDataset:
    """Stands in for LeRobot's LeRobotDataset (not installed here): records what the writer calls."""

    last = None

    def __init__(self, args: dict) -> None:
        self.args, self.frames, self.saved, self.finalized = args, [], [], 0

    @classmethod
    def create(cls, repo_id, fps, features, root=None, robot_type=None, use_videos=True):
        cls.last = cls(
            {
                "repo_id": repo_id,
                "fps": fps,
                "features": features,
                "root": root,
                "robot_type": robot_type,
                "use_videos": use_videos,
            }
        )
        return cls.last

    def add_frame(self, frame: dict) -> None:
        self.frames.append(frame)

    def save_episode(self) -> None:
        self.saved.append(len(self.frames))

    def finalize(self) -> None:
        self.finalized += 1


def test_lerobot_writer_records_every_source_frame_through_lerobots_calls(sample_uploads, tmp_path):
    import av
    import pyarrow.parquet as pq

    uploads = list(reversed(sample_uploads))  # written in episode order whatever order they come in
    result = lerobot_writer.write_lerobot(tmp_path / "lr", uploads, dataset_cls=_RecordingLeRobotDataset)
    ds = _RecordingLeRobotDataset.last
    assert ds.args["fps"] == 30 and ds.args["use_videos"] and ds.args["robot_type"] == "aloha"
    features = ds.args["features"]
    assert features["observation.images.top"] == {
        "dtype": "video",
        "shape": (480, 640, 3),
        "names": ["height", "width", "channels"],
    }
    assert features["observation.images.wrist_left"]["shape"] == (240, 320, 3)
    assert features["observation.state"]["shape"] == (14,) and features["action"]["names"][0] == "left_waist"
    # One LeRobot frame per camera frame: 2 s at 30 fps per episode, saved episode by episode, finalized once.
    assert ds.saved == [60, 120, 180] and ds.finalized == 1 and result["frames"] == 180
    with av.open(str(sample_uploads[1] / "top.mp4")) as container:
        source = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    second = ds.frames[60:120]
    assert len(source) == 60
    for i in (0, 17, 59):
        np.testing.assert_array_equal(second[i]["observation.images.top"], source[i])  # the source pixels
    states = pq.read_table(sample_uploads[1] / "states.parquet")
    # The state of the control step (100 Hz) nearest the camera frame (30 fps): frame 17 at 0.5667 s -> step 57.
    np.testing.assert_array_equal(second[17]["observation.state"], states["observation_state"][57].as_py())
    instruction = json.loads((sample_uploads[1] / "episode.json").read_text())["language_instruction"]
    assert instruction and {f["task"] for f in second} == {instruction}


def test_nearest_steps_picks_the_closest_control_step():
    steps = np.arange(10) / 100.0
    assert lerobot_writer.nearest_steps(steps, [0.0, 0.014, 0.016, 0.5]).tolist() == [0, 1, 2, 9]


def test_rendered_episodes_are_reused_across_footage_sizes(tmp_path):
    from benchmarks.peers.footage import reuse_rendered

    six = tmp_path / "aloha-6x300-seed0"
    for index in range(2):
        (six / f"episode_{index:06d}").mkdir(parents=True)
        (six / f"episode_{index:06d}" / "top.mp4").write_bytes(bytes([index]) * 10)
        (six / f"episode_{index:06d}" / "episode.json").write_text("{}")
    (six / "episode_000002").mkdir()  # still rendering: no episode.json yet
    (tmp_path / "aloha-6x150-seed0" / "episode_000002").mkdir(parents=True)  # other steps: never reused
    (tmp_path / "aloha-6x150-seed0" / "episode_000002" / "episode.json").write_text("{}")
    three = tmp_path / "aloha-3x300-seed0"
    three.mkdir()
    assert reuse_rendered(three, 3, 300, 0) == [0, 1]
    assert (three / "episode_000001" / "top.mp4").read_bytes() == bytes([1]) * 10
    assert not (three / "episode_000002").exists()
    assert reuse_rendered(three, 3, 300, 0) == []  # already there
