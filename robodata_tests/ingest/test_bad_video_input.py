"""Bad camera videos are refused, naming the file and the problem, and nothing stored changes:
empty, truncated, damaged or unreadable videos, a resolution change mid-stream, a frame size or
rate no camera has, a camera file missing, unlisted or unknown to the dataset, a camera rate
other than the dataset's, and a camera shorter than the states (the check each case gets:
bad_input.py)."""

from __future__ import annotations

import functools
import shutil
import struct
import tempfile
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from robodata.errors import IncompatibleEpisodeError
from robodata_tests.ingest.bad_input import edit_json, edit_states, refusal_test, refused, remove, write_text


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


def mdat_range(data: bytes) -> tuple[int, int]:
    """Where an MP4's media data (the coded frames) lies: the payload of its top-level mdat box."""
    at = 0
    while at < len(data):
        size, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"mdat":
            return at + 8, at + size
        at += size
    raise AssertionError("no mdat box")


def flip_video_bytes(name: str, count: int = 5):
    """``count`` bytes of the coded frames inverted, spread evenly over them: the container and
    every header stay intact, and FFmpeg, left to itself, conceals the damage and returns frames."""

    def damage(upload: Path) -> None:
        data = bytearray((upload / name).read_bytes())
        start, end = mdat_range(bytes(data))
        for k in range(1, count + 1):
            data[start + k * (end - start) // (count + 1)] ^= 0xFF
        (upload / name).write_bytes(bytes(data))

    return damage


def garble_codec_tag(name: str):
    """The sample entry's codec tag ('avc1') garbled: the container opens, no decoder fits."""

    def damage(upload: Path) -> None:
        data = (upload / name).read_bytes()
        assert b"avc1" in data
        (upload / name).write_bytes(data.replace(b"avc1", b"zzzz"))

    return damage


def replace_with_1x1_video(camera: str):
    """The camera's file replaced by a 1x1 video (FFV1: H.264 cannot even code that size)."""

    def damage(upload: Path) -> None:
        with av.open(str(upload / f"{camera}.mkv"), "w") as out:
            stream = out.add_stream("ffv1", rate=Fraction(30))
            stream.width, stream.height, stream.pix_fmt = 1, 1, "yuv444p"
            for i in range(60):
                frame = av.VideoFrame.from_ndarray(np.full((1, 1, 3), i, np.uint8), format="rgb24")
                for packet in stream.encode(frame):
                    out.mux(packet)
            for packet in stream.encode(None):
                out.mux(packet)
        (upload / f"{camera}.mp4").unlink()
        edit_json(lambda m: m["cameras"][camera].__setitem__("file", f"{camera}.mkv"))(upload)

    return damage


@functools.cache
def _camera_video_at(width: int, height: int, fps: int, seconds: float) -> bytes:
    """An MP4 of flat grey frames, ``fps`` a second for ``seconds`` (made once per session)."""
    with tempfile.TemporaryDirectory(prefix="robodata-rate-") as scratch:
        path = Path(scratch) / "camera.mp4"
        with av.open(str(path), "w") as out:
            stream = out.add_stream("libx264", rate=Fraction(fps))
            stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
            stream.options = {"preset": "ultrafast"}
            grey = av.VideoFrame.from_ndarray(np.full((height, width, 3), 128, np.uint8), format="rgb24")
            for i in range(int(fps * seconds) + 1):
                grey.pts = i
                for packet in stream.encode(grey):
                    out.mux(packet)
            for packet in stream.encode(None):
                out.mux(packet)
        return path.read_bytes()


def camera_at_rate(name: str, fps: int, seconds: float = 2.0):
    """The camera recorded at ``fps`` frames a second, at the dataset's size for it, by default
    over the states' whole span (2 s): only its rate differs from the dataset's 30 fps."""

    def damage(upload: Path) -> None:
        with av.open(str(upload / name)) as src:
            width, height = src.streams.video[0].width, src.streams.video[0].height
        (upload / name).write_bytes(_camera_video_at(width, height, fps, seconds))

    return damage


def add_camera_file(name: str, listed: bool):
    def damage(upload: Path) -> None:
        shutil.copy(upload / "wrist_left.mp4", upload / f"{name}.mp4")
        if listed:
            edit_json(lambda m: m["cameras"].__setitem__(name, {"file": f"{name}.mp4"}))(upload)

    return damage


# fmt: off
CASES = [
    # video files
    refused("zero-byte-video", write_text("top.mp4", ""), "top.mp4", "empty (0 bytes)"),
    refused("truncated-video", truncate("top.mp4", 0.6), "top.mp4", "not a readable video", "truncated"),
    refused("truncated-video-index-intact", faststart_then_truncate("wrist_right.mp4"), "wrist_right.mp4", "truncated"),
    refused("not-a-video", write_text("wrist_left.mp4", "a shopping list, not a video\n"), "wrist_left.mp4", "not a readable video"),
    refused("flipped-bytes-in-video-data", flip_video_bytes("wrist_left.mp4"), "episode_000001/wrist_left.mp4: video data is damaged"),
    refused("garbled-codec-tag", garble_codec_tag("top.mp4"), "episode_000001/top.mp4: video stream's codec is unknown or its header is damaged"),
    refused("video-1x1", replace_with_1x1_video("wrist_right"), "episode_000001/wrist_right.mkv: frame size 1x1 is outside 2x2 to 8192x8192 pixels"),
    refused("camera-at-5000-fps", camera_at_rate("wrist_left.mp4", 5000, seconds=0.1), "episode_000001/wrist_left.mp4: frame rate 5000 fps is outside 1 to 1000 fps"),
    refused("camera-at-1000-fps-in-30-fps-dataset", camera_at_rate("wrist_left.mp4", 1000), "episode_000001: camera 'wrist_left' is 1000 fps, dataset's is 30 fps", error=IncompatibleEpisodeError),
    refused("camera-at-1-fps-in-30-fps-dataset", camera_at_rate("top.mp4", 1), "episode_000001: camera 'top' is 1 fps, dataset's is 30 fps", error=IncompatibleEpisodeError),
    refused("resolution-changes-mid-stream", replace_with_resolution_change("wrist_left"), "wrist_left.ts", "resolution changes mid-stream", "160x120"),
    refused("missing-camera-file", remove("wrist_right.mp4"), "wrist_right.mp4", "video file is missing"),
    refused("extra-unknown-camera-file", add_camera_file("side", listed=False), "side.mp4", "not listed in episode.json"),
    refused("camera-the-dataset-lacks", add_camera_file("side", listed=True), "episode_000001", "cameras", "'side'", error=IncompatibleEpisodeError),
    refused("camera-shorter-than-states", edit_states(states_outlast_cameras), "top.mp4", "camera covers", "but the states run"),
]
# fmt: on


test_bad_input = refusal_test(CASES)
