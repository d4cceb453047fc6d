"""Bad camera videos are refused, naming the file and the problem, and nothing stored changes:
empty, truncated or unreadable videos, a resolution change mid-stream, a camera file missing,
unlisted or unknown to the dataset, and a camera shorter than the states (the check each case
gets: bad_input.py)."""

from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest

from robodata.errors import BadUploadError, IncompatibleEpisodeError
from robodata_tests.ingest.bad_input import (
    Case,
    check_refused,
    edit_json,
    edit_states,
    ingest_after,
    remove,
    write_text,
)


def states_outlast_cameras(columns: dict) -> None:
    """One more second of states than any camera recorded."""
    n, step = len(columns["timestamp_ns"]), 10_000_000
    for name in columns:
        columns[name] = columns[name] + columns[name][-1:] * 100
    columns["timestamp_ns"] = [i * step for i in range(n + 100)]


def truncate(name: str, keep: float):
    def damage(upload: Path) -> None:
        data = (upload / name).read_bytes()
        (upload / name).write_bytes(data[: int(len(data) * keep)])

    return damage


def faststart_then_truncate(name: str):
    """Move the MP4 index to the front (as streaming uploads do), then cut off the second half:
    the container still opens and promises every frame, but half of them are gone."""

    def damage(upload: Path) -> None:
        source, target = upload / name, upload / f"faststart-{name}"
        with av.open(str(source)) as src, av.open(str(target), "w", options={"movflags": "faststart"}) as dst:
            stream = dst.add_stream_from_template(src.streams.video[0])
            for packet in src.demux(src.streams.video[0]):
                if packet.dts is not None:
                    packet.stream = stream
                    dst.mux(packet)
        target.replace(source)
        truncate(name, 0.5)(upload)

    return damage


def replace_with_resolution_change(camera: str):
    """An MPEG-TS stream whose first half is the camera's size and whose second half is half
    that size (a camera reconfigured mid-recording)."""

    def damage(upload: Path) -> None:
        with av.open(str(upload / f"{camera}.mp4")) as src:
            width, height = src.streams.video[0].width, src.streams.video[0].height
        path = upload / f"{camera}.ts"
        with av.open(str(path), "w", format="mpegts") as out:
            stream = out.add_stream("libx264", rate=Fraction(30))
            stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
            for segment, (w, h) in enumerate([(width, height), (width // 2, height // 2)]):
                encoder = av.CodecContext.create("libx264", "w")
                encoder.width, encoder.height, encoder.pix_fmt = w, h, "yuv420p"
                encoder.time_base, encoder.options = Fraction(1, 30), {"preset": "ultrafast"}
                frames = [av.VideoFrame.from_ndarray(np.full((h, w, 3), 90 + i, np.uint8)) for i in range(8)]
                for i, frame in enumerate(frames):
                    frame.pts = i
                for frame in [*frames, None]:
                    for packet in encoder.encode(frame):
                        packet.stream, packet.time_base = stream, Fraction(1, 30)
                        packet.pts, packet.dts = packet.pts + 8 * segment, packet.dts + 8 * segment
                        out.mux(packet)
        (upload / f"{camera}.mp4").unlink()
        edit_json(lambda m: m["cameras"][camera].__setitem__("file", f"{camera}.ts"))(upload)

    return damage


def add_camera_file(name: str, listed: bool):
    def damage(upload: Path) -> None:
        shutil.copy(upload / "wrist_left.mp4", upload / f"{name}.mp4")
        if listed:
            edit_json(lambda m: m["cameras"].__setitem__(name, {"file": f"{name}.mp4"}))(upload)

    return damage


CASES = [
    # video files
    Case("zero-byte-video", ingest_after(write_text("top.mp4", "")), BadUploadError, ("top.mp4", "empty (0 bytes)")),
    Case(
        "truncated-video",
        ingest_after(truncate("top.mp4", 0.6)),
        BadUploadError,
        ("top.mp4", "not a readable video", "truncated"),
    ),
    Case(
        "truncated-video-index-intact",
        ingest_after(faststart_then_truncate("wrist_right.mp4")),
        BadUploadError,
        ("wrist_right.mp4", "truncated"),
    ),
    Case(
        "not-a-video",
        ingest_after(write_text("wrist_left.mp4", "a shopping list, not a video\n")),
        BadUploadError,
        ("wrist_left.mp4", "not a readable video"),
    ),
    Case(
        "resolution-changes-mid-stream",
        ingest_after(replace_with_resolution_change("wrist_left")),
        BadUploadError,
        ("wrist_left.ts", "resolution changes mid-stream", "160x120"),
    ),
    Case(
        "missing-camera-file",
        ingest_after(remove("wrist_right.mp4")),
        BadUploadError,
        ("wrist_right.mp4", "video file is missing"),
    ),
    Case(
        "extra-unknown-camera-file",
        ingest_after(add_camera_file("side", listed=False)),
        BadUploadError,
        ("side.mp4", "not listed in episode.json"),
    ),
    Case(
        "camera-the-dataset-lacks",
        ingest_after(add_camera_file("side", listed=True)),
        IncompatibleEpisodeError,
        ("episode_000001", "cameras", "'side'"),
    ),
    Case(
        "camera-shorter-than-states",
        ingest_after(edit_states(states_outlast_cameras)),
        BadUploadError,
        ("top.mp4", "camera covers", "but the states run"),
    ),
]


@pytest.mark.parametrize("via", ["api", "cli"])
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, via: str, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys):
    check_refused(case, via, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys)
