"""Uploads from an ALOHA-like rig whose episode.json lists its cameras out of alphabetical order
(the order a dataset must keep: LeRobot policies stack ``camera_keys`` in it)."""

from __future__ import annotations

import json
from pathlib import Path

from robodata.lerobot import export_lerobot
from robodata.sample_data import write_sample_uploads

RECORDED = ["top", "angle", "front_close"]
VIDEO_KEYS = [f"observation.images.{camera}" for camera in RECORDED]
# The sample episodes' videos, renamed to those cameras (top is 640x480, the others 320x240).
SAMPLE_VIDEOS = {"top": "top.mp4", "angle": "wrist_left.mp4", "front_close": "wrist_right.mp4"}


def aloha_uploads(folder: Path, listed: list[list[str]]) -> list[Path]:
    """One half-second upload per entry of ``listed``, its episode.json naming the cameras in
    that order."""
    uploads = write_sample_uploads(folder, episodes=len(listed), seconds=0.5)
    for upload, order in zip(uploads, listed, strict=True):
        for camera, video in SAMPLE_VIDEOS.items():
            (upload / video).rename(upload / f"{camera}.mp4")
        meta = json.loads((upload / "episode.json").read_text())
        meta["cameras"] = {camera: {"file": f"{camera}.mp4"} for camera in order}
        (upload / "episode.json").write_text(json.dumps(meta))
    return uploads


def export_video_keys(dataset: str, target: Path) -> list[str]:
    """The video features of the dataset's LeRobot export, in info.json's order."""
    export_lerobot(dataset, target, vcodec="libx264", preset="ultrafast", crf=18, progress=False)
    features = json.loads((target / "meta" / "info.json").read_text())["features"]
    return [key for key, feature in features.items() if feature["dtype"] == "video"]
