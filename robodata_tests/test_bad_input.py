"""What bad input gets: one row per case. Each bad upload (or bad argument) raises an error that
names the file and the problem; the dataset's version, row count and GOPs stay as they were; the
episodes already stored still decode to the same frames.

Every upload case starts from a copy of sample episode 1, which the dataset already holds, so a
failed re-ingest that damaged the stored copy would show."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import robodata
from robodata.errors import BadUploadError, IncompatibleEpisodeError
from robodata.format.tables import gops_uri, open_table


@dataclass
class Context:
    dataset: str
    uploads_root: Path  # the uploads folder the ingest is told about
    upload: Path  # a fresh copy of sample episode 1 inside it, ready to be damaged


@dataclass
class Case:
    id: str
    run: Callable[[Context], object]  # must raise
    error: type[Exception]
    message: tuple[str, ...]  # all must appear in the error message


# --- damaging an upload ----------------------------------------------------------------------
def ingest_after(damage: Callable[[Path], object], folder: str | None = None):
    """A case body: damage the upload copy, then ingest it as the Dagster asset would."""

    def run(ctx: Context):
        upload = ctx.upload
        if folder is not None:
            upload = upload.rename(ctx.uploads_root / folder)
        damage(upload)
        return robodata.ingest_episode(str(upload), ctx.dataset, uploads_root=str(ctx.uploads_root))

    return run


def edit_json(change: Callable[[dict], object]):
    def damage(upload: Path) -> None:
        meta = json.loads((upload / "episode.json").read_text())
        change(meta)
        (upload / "episode.json").write_text(json.dumps(meta))

    return damage


def edit_states(change: Callable[[dict], object]):
    def damage(upload: Path) -> None:
        columns = pq.read_table(upload / "states.parquet").to_pydict()
        change(columns)
        pq.write_table(pa.table(columns), upload / "states.parquet")

    return damage


def set_value(column: str, row: int, joint: int, value: float):
    return edit_states(lambda c: c[column][row].__setitem__(joint, value))


def drop_last_joint(columns: dict) -> None:
    columns["observation_state"] = [row[:-1] for row in columns["observation_state"]]


def repeat_timestamp(columns: dict) -> None:
    columns["timestamp_ns"][10] = columns["timestamp_ns"][9]


def swap_timestamps(columns: dict) -> None:
    ts = columns["timestamp_ns"]
    ts[10], ts[11] = ts[11], ts[10]


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


def write_text(name: str, text: str):
    return lambda upload: (upload / name).write_text(text)


def remove(name: str):
    return lambda upload: (upload / name).unlink()


def ingest_path(make_path: Callable[[Context], Path]):
    """A case body that ingests an untouched upload from a path the uploads root does not own."""

    def run(ctx: Context):
        return robodata.ingest_episode(str(make_path(ctx)), ctx.dataset, uploads_root=str(ctx.uploads_root))

    return run


def outside_root(ctx: Context) -> Path:
    elsewhere = ctx.uploads_root.parent / "elsewhere" / ctx.upload.name
    elsewhere.parent.mkdir()
    return ctx.upload.rename(elsewhere)


def dot_dot_path(ctx: Context) -> str:
    outside_root(ctx)
    return f"{ctx.uploads_root}/../elsewhere/{ctx.upload.name}"


def delete_with(value):
    return lambda ctx: robodata.delete_episodes(ctx.dataset, [value])


CASES = [
    # video files
    Case("zero-byte-video", ingest_after(write_text("top.mp4", "")), BadUploadError,
         ("top.mp4", "empty (0 bytes)")),
    Case("truncated-video", ingest_after(truncate("top.mp4", 0.6)), BadUploadError,
         ("top.mp4", "not a readable video", "truncated")),
    Case("truncated-video-index-intact", ingest_after(faststart_then_truncate("wrist_right.mp4")),
         BadUploadError, ("wrist_right.mp4", "truncated")),
    Case("not-a-video", ingest_after(write_text("wrist_left.mp4", "a shopping list, not a video\n")),
         BadUploadError, ("wrist_left.mp4", "not a readable video")),
    Case("resolution-changes-mid-stream", ingest_after(replace_with_resolution_change("wrist_left")),
         BadUploadError, ("wrist_left.ts", "resolution changes mid-stream", "160x120")),
    Case("missing-camera-file", ingest_after(remove("wrist_right.mp4")), BadUploadError,
         ("wrist_right.mp4", "video file is missing")),
    Case("extra-unknown-camera-file", ingest_after(add_camera_file("side", listed=False)), BadUploadError,
         ("side.mp4", "not listed in episode.json")),
    Case("camera-the-dataset-lacks", ingest_after(add_camera_file("side", listed=True)),
         IncompatibleEpisodeError, ("episode_000001", "cameras", "'side'")),
    Case("camera-shorter-than-states", ingest_after(edit_states(states_outlast_cameras)), BadUploadError,
         ("top.mp4", "camera covers", "but the states run")),
    # states.parquet
    Case("nan-state", ingest_after(set_value("observation_state", 5, 3, float("nan"))), BadUploadError,
         ("states.parquet", "observation_state has NaN or infinite values", "sample 5")),
    Case("infinite-action", ingest_after(set_value("action", 7, 0, float("inf"))), BadUploadError,
         ("states.parquet", "action has NaN or infinite values", "sample 7")),
    Case("wrong-state-length", ingest_after(edit_states(drop_last_joint)), BadUploadError,
         ("states.parquet", "observation_state has shape", "13)", "14 joint names")),
    Case("repeated-timestamp", ingest_after(edit_states(repeat_timestamp)), BadUploadError,
         ("states.parquet", "timestamps must strictly increase", "sample 10")),
    Case("decreasing-timestamp", ingest_after(edit_states(swap_timestamps)), BadUploadError,
         ("states.parquet", "timestamps must strictly increase", "sample 11")),
    Case("states-not-parquet", ingest_after(write_text("states.parquet", "t,x\n0,1\n")), BadUploadError,
         ("states.parquet", "not a readable Parquet file")),
    # episode.json
    Case("missing-episode-json", ingest_after(remove("episode.json")), BadUploadError,
         ("episode.json", "missing", "incomplete")),
    Case("invalid-episode-json", ingest_after(write_text("episode.json", '{"episode_index": 1,')),
         BadUploadError, ("episode.json", "not valid JSON")),
    Case("incomplete-episode-json", ingest_after(edit_json(lambda m: m.pop("cameras"))), BadUploadError,
         ("episode.json", "missing required keys", "cameras")),
    Case("episode-index-not-a-number", ingest_after(edit_json(lambda m: m.update(episode_index="one"))),
         BadUploadError, ("episode.json", "'episode_index' has the wrong type")),
    Case("negative-episode-index", ingest_after(edit_json(lambda m: m.update(episode_index=-1))),
         BadUploadError, ("episode.json", "non-negative integer")),
    Case("camera-file-outside-upload", ingest_after(edit_json(
        lambda m: m["cameras"]["top"].update(file="../episode_000000/top.mp4"))), BadUploadError,
         ("episode.json", "must be inside the upload folder")),
    # episode ids and paths
    Case("id-with-dot-dot", ingest_path(dot_dot_path), BadUploadError,
         ("../elsewhere/episode_000001", "not a folder directly inside")),
    Case("id-is-dot-dot", lambda ctx: robodata.ingest_episode(f"{ctx.upload}/..", ctx.dataset), BadUploadError,
         ("invalid episode id '..'",)),
    Case("id-with-quote", ingest_after(lambda u: None, folder="ep'1"), BadUploadError,
         ("ep'1", "invalid episode id")),
    Case("id-with-double-quote", ingest_after(lambda u: None, folder='ep"1'), BadUploadError,
         ('ep"1', "invalid episode id")),
    Case("id-with-spaces", ingest_after(lambda u: None, folder="episode 1"), BadUploadError,
         ("episode 1", "invalid episode id")),
    Case("id-with-sql", ingest_after(lambda u: None, folder="1) OR (1=1; DROP TABLE frames --"),
         BadUploadError, ("1) OR (1=1; DROP TABLE frames --", "invalid episode id")),
    Case("upload-outside-uploads-root", ingest_path(outside_root), BadUploadError,
         ("elsewhere/episode_000001", "not a folder directly inside")),
    # values that would reach a Lance filter string
    Case("filter-injection-in-delete", delete_with("1) OR (1=1"), ValueError,
         ("episode_index must be a non-negative integer", "'1) OR (1=1'")),
    Case("negative-episode-in-delete", delete_with(-3), ValueError,
         ("episode_index must be a non-negative integer", "-3")),
]


@pytest.fixture(scope="module")
def stored_frames(ingested) -> tuple[list[int], dict[str, np.ndarray]]:
    """Rows from each stored episode, and their decoded frames before any bad input arrived."""
    ds = robodata.open(ingested)
    rows = sorted({0, len(ds) // 2, len(ds) - 1})
    return rows, ds.take_blobs_decoded(rows, ds.image_columns)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, sample_uploads, dataset_copy, stored_frames, tmp_path):
    uploads_root = tmp_path / "uploads"
    upload = uploads_root / sample_uploads[1].name
    shutil.copytree(sample_uploads[1], upload)
    before = robodata.open(dataset_copy)
    gops_before = open_table(gops_uri(dataset_copy)).version

    with pytest.raises(case.error) as raised:
        case.run(Context(dataset_copy, uploads_root, upload))

    message = str(raised.value)
    for part in case.message:
        assert part in message, f"{part!r} not in {message!r}"
    after = robodata.open(dataset_copy)
    assert (after.version, len(after)) == (before.version, len(before))
    assert after.episodes().equals(before.episodes())
    assert open_table(gops_uri(dataset_copy)).version == gops_before
    rows, frames = stored_frames
    for column, expected in after.take_blobs_decoded(rows, after.image_columns).items():
        np.testing.assert_array_equal(expected, frames[column])
