"""What bad input gets: one row per case. Each bad upload (or bad argument) raises an error that
names the file and the problem; the dataset's version, row count and GOPs stay as they were; the
episodes already stored still decode to the same frames.

Every case runs twice: through the Python API (the error class and message) and through the
``robodata`` command line (exit code 2 and the same message as one line on stderr, no
traceback). Every upload case starts from a copy of sample episode 1, which the dataset already
holds, so a failed re-ingest that damaged the stored copy would show."""

from __future__ import annotations

import http.server
import json
import math
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import robodata
from robodata.cli import main
from robodata.errors import BadUploadError, DatasetLocationError, EpisodeNotFoundError, IncompatibleEpisodeError
from robodata.format._tables import gops_uri, open_table


class CliFailed(Exception):
    """What the command line did with a case: its exit code and what it printed on stderr."""

    def __init__(self, code: int, stderr: str) -> None:
        self.code, self.stderr = code, stderr
        super().__init__(stderr)


@dataclass
class Context:
    dataset: str
    uploads_root: Path  # the uploads folder the ingest is told about
    upload: Path  # a fresh copy of sample episode 1 inside it, ready to be damaged
    cli: Callable[[list[str]], object] | None = None  # set: run the case through ``robodata ...``


@dataclass
class Case:
    id: str
    run: Callable[[Context], object]  # must raise
    error: type[Exception]
    message: tuple[str, ...]  # all must appear in the error message
    via_cli: bool = True  # False: the case needs an API argument the CLI does not have


# --- running a case --------------------------------------------------------------------------
def ingest(ctx: Context, upload: Path | str, uploads_root: bool = True):
    """Ingest ``upload`` as the Dagster asset would (told the uploads root), or as
    ``robodata ingest UPLOAD DATASET`` when the case runs through the command line."""
    if ctx.cli is not None:
        return ctx.cli(["ingest", str(upload), ctx.dataset])
    root = str(ctx.uploads_root) if uploads_root else None
    return robodata.ingest_episode(str(upload), ctx.dataset, uploads_root=root)


# --- damaging an upload ----------------------------------------------------------------------
def ingest_after(damage: Callable[[Path], object], folder: str | None = None):
    """A case body: damage the upload copy, then ingest it."""

    def run(ctx: Context):
        upload = ctx.upload
        if folder is not None:
            upload = upload.rename(ctx.uploads_root / folder)
        damage(upload)
        return ingest(ctx, upload)

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


def scalar_state(columns: dict) -> None:
    columns["observation_state"] = [row[0] for row in columns["observation_state"]]


def null_action_row(columns: dict) -> None:
    columns["action"][3] = None


def short_action_row(columns: dict) -> None:
    columns["action"][4] = columns["action"][4][:-1]


def crowded_timestamps(columns: dict) -> None:
    """100,000 rows 1 us apart (100 ms of samples at 1 MHz): far more rows than control_hz allows."""
    n = 100_000
    first = columns["observation_state"][0]
    columns["timestamp_ns"] = [i * 1000 for i in range(n)]
    columns["observation_state"] = columns["action"] = [first] * n
    for name in list(columns):
        if name not in ("timestamp_ns", "observation_state", "action"):
            del columns[name]


def deep_json(depth: int):
    return write_text("episode.json", "[" * depth + "]" * depth)


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


def ingest_path(make_path: Callable[[Context], Path | str], uploads_root: bool = True):
    """A case body that ingests an untouched upload from a path the uploads root does not own."""

    def run(ctx: Context):
        return ingest(ctx, make_path(ctx), uploads_root)

    return run


def outside_root(ctx: Context) -> Path:
    elsewhere = ctx.uploads_root.parent / "elsewhere" / ctx.upload.name
    elsewhere.parent.mkdir()
    return ctx.upload.rename(elsewhere)


def dot_dot_path(ctx: Context) -> str:
    outside_root(ctx)
    return f"{ctx.uploads_root}/../elsewhere/{ctx.upload.name}"


def delete_with(value):
    def run(ctx: Context):
        if ctx.cli is not None:
            return ctx.cli(["delete", ctx.dataset, str(value)])
        return robodata.delete_episodes(ctx.dataset, [value])

    return run


# --- hostile uploads -------------------------------------------------------------------------
def moved_outside(upload: Path, name: str) -> Path:
    """``name`` moved out of the upload (beside the uploads root), its place taken by a link."""
    outside = upload.parent.parent / "elsewhere" / name
    outside.parent.mkdir(exist_ok=True)
    (upload / name).rename(outside)
    (upload / name).symlink_to(outside)
    return outside


def link_outside(name: str):
    return lambda upload: moved_outside(upload, name)


def upload_folder_links_outside(ctx: Context) -> Path:
    """The upload folder itself is a link to a folder elsewhere."""
    outside = ctx.uploads_root.parent / "elsewhere" / ctx.upload.name
    outside.parent.mkdir()
    ctx.upload.rename(outside)
    ctx.upload.symlink_to(outside, target_is_directory=True)
    return ctx.upload


def upload_is_a_file(ctx: Context) -> Path:
    path = ctx.uploads_root / "episode_000009"
    path.write_text("not a folder")
    return path


def set_meta(key: str, value):
    return edit_json(lambda m: m.__setitem__(key, value))


def set_camera(key: str, value, camera: str = "top"):
    return edit_json(lambda m: m["cameras"][camera].__setitem__(key, value))


def camera_file_is_a_directory(upload: Path) -> None:
    (upload / "top.mp4").unlink()
    (upload / "top_frames").mkdir()
    set_camera("file", "top_frames")(upload)


def twice_the_rate(upload: Path) -> None:
    """A consistent upload at 200 Hz (timestamps at half the spacing, control_hz 200): fine on
    its own, but the dataset is recorded at 100 Hz."""
    edit_states(lambda c: c.__setitem__("timestamp_ns", [t // 2 for t in c["timestamp_ns"]]))(upload)
    set_meta("control_hz", 200)(upload)


def replace_column(name: str, make: Callable[[dict], object]):
    return edit_states(lambda c: c.__setitem__(name, make(c)))


def no_rows(columns: dict) -> None:
    for name in columns:
        columns[name] = columns[name][:0]


def write_states_table(change: Callable[[pa.Table], pa.Table]):
    """Rewrite states.parquet with a column of a type ``edit_states`` cannot express."""

    def damage(upload: Path) -> None:
        path = upload / "states.parquet"
        pq.write_table(change(pq.read_table(path)), path)

    return damage


def uint64_timestamps(table: pa.Table) -> pa.Table:
    """Timestamps as uint64 counting from 2^63: valid uint64, beyond int64."""
    values = pa.array([2**63 + t for t in table["timestamp_ns"].to_pylist()], pa.uint64())
    return table.set_column(table.schema.get_field_index("timestamp_ns"), "timestamp_ns", values)


def float_timestamps(table: pa.Table) -> pa.Table:
    values = table["timestamp_ns"].cast(pa.float64())
    return table.set_column(table.schema.get_field_index("timestamp_ns"), "timestamp_ns", values)


def into_dataset_that_is_a_file(ctx: Context):
    target = ctx.uploads_root.parent / "dataset-file"
    target.write_text("not a dataset")
    if ctx.cli is not None:
        return ctx.cli(["ingest", str(ctx.upload), str(target / "ds")])
    return robodata.ingest_episode(str(ctx.upload), str(target / "ds"))


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
    # states.parquet
    Case(
        "nan-state",
        ingest_after(set_value("observation_state", 5, 3, float("nan"))),
        BadUploadError,
        ("states.parquet", "observation_state has NaN or infinite values", "sample 5"),
    ),
    Case(
        "infinite-action",
        ingest_after(set_value("action", 7, 0, float("inf"))),
        BadUploadError,
        ("states.parquet", "action has NaN or infinite values", "sample 7"),
    ),
    Case(
        "wrong-state-length",
        ingest_after(edit_states(drop_last_joint)),
        BadUploadError,
        ("states.parquet", "observation_state has shape", "13)", "14 joint names"),
    ),
    Case(
        "repeated-timestamp",
        ingest_after(edit_states(repeat_timestamp)),
        BadUploadError,
        ("states.parquet", "timestamps must strictly increase", "sample 10"),
    ),
    Case(
        "decreasing-timestamp",
        ingest_after(edit_states(swap_timestamps)),
        BadUploadError,
        ("states.parquet", "timestamps must strictly increase", "sample 11"),
    ),
    Case(
        "states-not-parquet",
        ingest_after(write_text("states.parquet", "t,x\n0,1\n")),
        BadUploadError,
        ("states.parquet", "not a readable Parquet file"),
    ),
    # episode.json
    Case(
        "missing-episode-json",
        ingest_after(remove("episode.json")),
        BadUploadError,
        ("episode.json", "missing", "incomplete"),
    ),
    Case(
        "invalid-episode-json",
        ingest_after(write_text("episode.json", '{"episode_index": 1,')),
        BadUploadError,
        ("episode.json", "not valid JSON"),
    ),
    Case(
        "incomplete-episode-json",
        ingest_after(edit_json(lambda m: m.pop("cameras"))),
        BadUploadError,
        ("episode.json", "missing required keys", "cameras"),
    ),
    Case(
        "episode-index-not-a-number",
        ingest_after(edit_json(lambda m: m.update(episode_index="one"))),
        BadUploadError,
        ("episode.json", "'episode_index' has the wrong type"),
    ),
    Case(
        "negative-episode-index",
        ingest_after(edit_json(lambda m: m.update(episode_index=-1))),
        BadUploadError,
        ("episode.json", "non-negative integer"),
    ),
    Case(
        "camera-file-outside-upload",
        ingest_after(edit_json(lambda m: m["cameras"]["top"].update(file="../episode_000000/top.mp4"))),
        BadUploadError,
        ("episode.json", "must be inside the upload folder"),
    ),
    # episode ids and paths
    Case(
        "id-with-dot-dot",
        ingest_path(dot_dot_path),
        BadUploadError,
        ("../elsewhere/episode_000001", "not a folder directly inside"),
    ),
    Case(
        "id-is-dot-dot",
        ingest_path(lambda ctx: f"{ctx.upload}/..", uploads_root=False),
        BadUploadError,
        ("invalid episode id '..'",),
    ),
    Case("id-with-quote", ingest_after(lambda u: None, folder="ep'1"), BadUploadError, ("ep'1", "invalid episode id")),
    Case(
        "id-with-double-quote",
        ingest_after(lambda u: None, folder='ep"1'),
        BadUploadError,
        ('ep"1', "invalid episode id"),
    ),
    Case(
        "id-with-spaces",
        ingest_after(lambda u: None, folder="episode 1"),
        BadUploadError,
        ("episode 1", "invalid episode id"),
    ),
    Case(
        "id-with-sql",
        ingest_after(lambda u: None, folder="1) OR (1=1; DROP TABLE frames --"),
        BadUploadError,
        ("1) OR (1=1; DROP TABLE frames --", "invalid episode id"),
    ),
    Case(
        "upload-outside-uploads-root",
        ingest_path(outside_root),
        BadUploadError,
        ("elsewhere/episode_000001", "not a folder directly inside"),
    ),
    # values that would reach a Lance filter string
    Case(
        "filter-injection-in-delete",
        delete_with("1) OR (1=1"),
        ValueError,
        ("episode_index must be a non-negative integer", "'1) OR (1=1'"),
    ),
    Case(
        "negative-episode-in-delete",
        delete_with(-3),
        ValueError,
        ("episode_index must be a non-negative integer", "-3"),
    ),
    Case(
        "delete-episode-not-held",
        delete_with(42),
        EpisodeNotFoundError,
        ("no episode 42 in the dataset", "nothing deleted"),
    ),
    # hostile uploads: links out of the upload folder
    Case(
        "camera-file-links-outside",
        ingest_after(link_outside("top.mp4")),
        BadUploadError,
        ("top.mp4", "symbolic link", "outside the upload folder"),
    ),
    Case(
        "states-links-outside",
        ingest_after(link_outside("states.parquet")),
        BadUploadError,
        ("states.parquet", "symbolic link", "outside the upload folder"),
    ),
    Case(
        "episode-json-links-outside",
        ingest_after(link_outside("episode.json")),
        BadUploadError,
        ("episode.json", "symbolic link", "outside the upload folder"),
    ),
    Case(
        "upload-folder-links-outside",
        ingest_path(upload_folder_links_outside),
        BadUploadError,
        ("episode_000001", "upload folder is a symbolic link", "elsewhere"),
    ),
    # control_hz
    Case(
        "control-hz-nan",
        ingest_after(set_meta("control_hz", math.nan)),
        BadUploadError,
        ("episode.json", "'control_hz' must be a finite number", "nan"),
    ),
    Case(
        "control-hz-infinity",
        ingest_after(set_meta("control_hz", math.inf)),
        BadUploadError,
        ("episode.json", "'control_hz' must be a finite number", "inf"),
    ),
    Case(
        "control-hz-1e300",
        ingest_after(set_meta("control_hz", 1e300)),
        BadUploadError,
        ("episode.json", "'control_hz' must be a finite number", "1e+300"),
    ),
    Case(
        "control-hz-disagrees-with-states",
        ingest_after(set_meta("control_hz", 10)),
        BadUploadError,
        ("episode.json", "'control_hz' is 10 Hz", "states.parquet's timestamps are 100 Hz"),
    ),
    Case(
        "control-hz-disagrees-with-dataset",
        ingest_after(twice_the_rate),
        IncompatibleEpisodeError,
        ("episode_000001", "control_hz 200 != dataset's 100"),
    ),
    # states.parquet values of the wrong kind
    Case(
        "is-intervention-strings",
        ingest_after(replace_column("is_intervention", lambda c: ["false"] * len(c["timestamp_ns"]))),
        BadUploadError,
        ("states.parquet", "is_intervention must be boolean, got string"),
    ),
    Case(
        "source-none",
        ingest_after(edit_states(lambda c: c["source"].__setitem__(3, None))),
        BadUploadError,
        ("states.parquet", "source has a null value at sample 3"),
    ),
    Case(
        "zero-row-states",
        ingest_after(edit_states(no_rows)),
        BadUploadError,
        ("states.parquet", "no state samples (0 rows)"),
    ),
    Case(
        "uint64-timestamps",
        ingest_after(write_states_table(uint64_timestamps)),
        BadUploadError,
        ("states.parquet", "timestamp_ns (uint64) has values beyond the int64 range"),
    ),
    Case(
        "float-timestamps",
        ingest_after(write_states_table(float_timestamps)),
        BadUploadError,
        ("states.parquet", "timestamp_ns must be integer nanoseconds, got double"),
    ),
    # episode.json values of the wrong kind
    Case(
        "start-offset-text",
        ingest_after(set_camera("start_offset_ns", "abc")),
        BadUploadError,
        ("episode.json", "camera 'top' 'start_offset_ns' must be an integer", "'abc'"),
    ),
    Case(
        "start-offset-1e30",
        ingest_after(set_camera("start_offset_ns", 1e30)),
        BadUploadError,
        ("episode.json", "camera 'top' 'start_offset_ns' must be an integer", "1e+30"),
    ),
    Case(
        "start-offset-null",
        ingest_after(set_camera("start_offset_ns", None)),
        BadUploadError,
        ("episode.json", "camera 'top' 'start_offset_ns' must be an integer", "None"),
    ),
    Case(
        "camera-file-dot",
        ingest_after(set_camera("file", ".")),
        BadUploadError,
        ("episode.json", "camera 'top' file must be inside the upload folder", "'.'"),
    ),
    Case(
        "camera-file-dot-dot",
        ingest_after(set_camera("file", "..")),
        BadUploadError,
        ("episode.json", "camera 'top' file must be inside the upload folder", "'..'"),
    ),
    Case(
        "camera-file-empty",
        ingest_after(set_camera("file", "")),
        BadUploadError,
        ("episode.json", "camera 'top' file must be inside the upload folder", "''"),
    ),
    Case(
        "camera-file-is-a-directory",
        ingest_after(camera_file_is_a_directory),
        BadUploadError,
        ("top_frames", "camera 'top' file is a directory"),
    ),
    Case(
        "task-is-an-object",
        ingest_after(set_meta("task", {"name": "pick"})),
        BadUploadError,
        ("episode.json", "'task' must be a string, got dict"),
    ),
    Case(
        "joint-names-not-strings",
        ingest_after(set_meta("joint_names", [1, 2])),
        BadUploadError,
        ("episode.json", "'joint_names' must be a non-empty list of distinct, non-empty strings"),
    ),
    # paths
    Case(
        "upload-path-is-a-file",
        ingest_path(upload_is_a_file),
        BadUploadError,
        ("episode_000009", "is a file, not an upload folder"),
    ),
    Case(
        "dataset-path-is-a-file",
        into_dataset_that_is_a_file,
        DatasetLocationError,
        ("dataset-file", "is a file; a dataset root must be a folder"),
    ),
    Case(
        "episode-json-over-1-mib",
        ingest_after(edit_json(lambda m: m.__setitem__("task", "x" * (2 << 20)))),
        BadUploadError,
        ("episode.json", "bytes", "at most 1,048,576"),
    ),
    Case(
        "task-too-long",
        ingest_after(edit_json(lambda m: m.__setitem__("task", "pick " * 1000))),
        BadUploadError,
        ("episode.json", "'task' is 5,000 characters; at most 4,096"),
    ),
    Case(
        "unknown-key",
        ingest_after(edit_json(lambda m: m.__setitem__("tsak", "pick up the cube"))),
        BadUploadError,
        ("episode.json", "unknown keys ['tsak']"),
    ),
    Case(
        "unknown-camera-key",
        ingest_after(edit_json(lambda m: m["cameras"]["top"].__setitem__("fps", 30))),
        BadUploadError,
        ("episode.json", "camera 'top' has unknown keys ['fps']"),
    ),
    Case(
        "json-nested-100k-deep",
        ingest_after(deep_json(100_000)),
        BadUploadError,
        ("episode.json", "nests 100000 levels deep; episode.json may nest at most 8"),
    ),
    Case(
        "scalar-state-column",
        ingest_after(edit_states(scalar_state)),
        BadUploadError,
        ("states.parquet", "observation_state must hold a list of numbers per sample", "got double"),
    ),
    Case(
        "null-action-row",
        ingest_after(edit_states(null_action_row)),
        BadUploadError,
        ("states.parquet", "action has a null row at sample 3"),
    ),
    Case(
        "action-rows-differ-in-length",
        ingest_after(edit_states(short_action_row)),
        BadUploadError,
        ("states.parquet", "action rows differ in length: 14 values at sample 0, 13 at sample 4"),
    ),
    Case(
        "100k-rows-in-100-ms",
        ingest_after(edit_states(crowded_timestamps)),
        BadUploadError,
        ("states.parquet", "has 100,000 rows over 0.1 s of timestamps", "control_hz 100"),
    ),
]  # Cases the command line cannot express: it has no --uploads-root, and argparse itself refuses
# a non-integer episode ("argument episodes: invalid int value") before robodata runs.
for _case in CASES:
    _case.via_cli = _case.id not in ("id-with-dot-dot", "upload-outside-uploads-root", "filter-injection-in-delete")


@pytest.fixture(scope="module")
def stored_frames(ingested) -> tuple[list[int], dict[str, np.ndarray]]:
    """Rows from each stored episode, and their decoded frames before any bad input arrived."""
    ds = robodata.open(ingested)
    rows = sorted({0, len(ds) // 2, len(ds) - 1})
    return rows, ds.get_frames(rows).data


def run_cli(capsys) -> Callable[[list[str]], object]:
    """``robodata ARGS...`` in this process; raises CliFailed with the exit code and stderr."""

    def run(argv: list[str]):
        capsys.readouterr()
        code = main(argv)
        raise CliFailed(code, capsys.readouterr().err)

    return run


@pytest.mark.parametrize("via", ["api", "cli"])
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, via: str, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys):
    if via == "cli" and not case.via_cli:
        return  # the command line has no --uploads-root; the API row covers the case
    uploads_root = tmp_path / "uploads"
    upload = uploads_root / sample_uploads[1].name
    shutil.copytree(sample_uploads[1], upload)
    before = robodata.open(dataset_copy)
    gops_before = open_table(gops_uri(dataset_copy)).version
    cli = run_cli(capsys) if via == "cli" else None

    with pytest.raises(CliFailed if cli else case.error) as raised:
        case.run(Context(dataset_copy, uploads_root, upload, cli))

    message = str(raised.value)
    if cli:
        assert raised.value.code == 2 and "Traceback" not in message
        lines = [line for line in message.splitlines() if line.startswith("robodata ")]
        assert len(lines) == 1, message  # one line, whatever progress bars printed
        message = lines[0]
    for part in case.message:
        assert part in message, f"{part!r} not in {message!r}"
    after = robodata.open(dataset_copy)
    assert (after.version, len(after)) == (before.version, len(before))
    assert after.episodes().equals(before.episodes())
    assert open_table(gops_uri(dataset_copy)).version == gops_before
    rows, frames = stored_frames
    for camera, expected in after.get_frames(rows).data.items():
        np.testing.assert_array_equal(expected, frames[camera])


# --- unusual but legitimate uploads: accepted ------------------------------------------------
def write_camera_upload(
    folder: Path, frames: list[np.ndarray], times_ms: list[int], rotation: int = 0, control_hz: int = 100
) -> Path:
    """An upload with one camera ``cam`` (frames at ``times_ms``, display rotation ``rotation``
    degrees counter-clockwise) and two joints sampled at ``control_hz`` over the camera's span."""
    folder.mkdir(parents=True)
    height, width = frames[0].shape[:2]
    with av.open(str(folder / "cam.mp4"), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(30))
        # 4:4:4 takes odd sizes, as a phone or a webcam's MJPEG can deliver them.
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv444p" if width % 2 or height % 2 else "yuv420p"
        stream.codec_context.time_base = Fraction(1, 1000)
        stream.options = {"crf": "12", "preset": "ultrafast"}
        if rotation:
            stream.set_display_rotation(rotation)
        for rgb, t in zip(frames, times_ms, strict=True):
            frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
            frame.pts, frame.time_base = t, Fraction(1, 1000)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    step_ns = 1_000_000_000 // control_hz
    n = times_ms[-1] * 1_000_000 // step_ns + 1
    state = pa.FixedSizeListArray.from_arrays(pa.array(np.zeros(2 * n, np.float32)), 2)
    pq.write_table(
        pa.table({"timestamp_ns": np.arange(n, dtype=np.int64) * step_ns, "observation_state": state, "action": state}),
        folder / "states.parquet",
    )
    meta = {
        "episode_index": 0,
        "joint_names": ["a", "b"],
        "control_hz": control_hz,
        "cameras": {"cam": {"file": "cam.mp4"}},
    }
    (folder / "episode.json").write_text(json.dumps(meta))
    return folder


def marked_frame(width: int, height: int, value: int = 60) -> np.ndarray:
    """A flat frame with a white 8x8 mark in its top-left corner."""
    rgb = np.full((height, width, 3), value, np.uint8)
    rgb[:8, :8] = 255
    return rgb


def stored_frames_of(dataset: str, rows: list[int]) -> np.ndarray:
    return robodata.open(dataset).get_frames(rows, cameras="cam")["cam"]


def test_odd_frame_size_is_cropped_to_even_and_said(tmp_path, caplog):
    upload = write_camera_upload(tmp_path / "up" / "ep0", [marked_frame(641, 481)] * 6, [0, 33, 67, 100, 133, 167])
    dataset = str(tmp_path / "ds")
    with caplog.at_level("WARNING", logger="robodata.ingest"):
        robodata.ingest_episode(str(upload), dataset)
    note = "cam.mp4: cropped 641x481 to 640x480"
    assert note in caplog.text
    assert robodata.ingest.read_upload(str(upload)).notes[0].startswith(note)
    from robodata.ingest._upload_summary import describe_upload

    assert describe_upload(str(upload)).notes[0].startswith(note)
    ds = robodata.open(dataset)
    assert ds.metadata.cameras["cam"].width == 640 and ds.metadata.cameras["cam"].height == 480
    frame = stored_frames_of(dataset, [0])[0]
    assert frame.shape == (480, 640, 3)
    assert frame[:6, :6].min() > 230 and abs(int(frame[200:280, 200:280].mean()) - 60) < 4


def test_variable_frame_rate_with_half_period_jitter_is_accepted(tmp_path):
    period_ms, n = 33.333, 30
    jitter = np.random.default_rng(3).uniform(-0.49, 0.49, n) * period_ms
    jitter[[5, 6, 7]] = [-0.49 * period_ms, 0.49 * period_ms, -0.49 * period_ms]  # gaps of ~2 and ~0 periods
    times_ms = np.round(np.arange(n) * period_ms + jitter).astype(int)
    times_ms -= times_ms[0]
    assert (np.diff(times_ms) > 0).all()
    frames = [np.full((48, 64, 3), 8 * i, np.uint8) for i in range(n)]
    upload = write_camera_upload(tmp_path / "up" / "ep0", frames, times_ms.tolist())
    dataset = str(tmp_path / "ds")
    result = robodata.ingest_episode(str(upload), dataset)
    assert result.camera_adjustments == []  # frames kept as they are: nothing to record
    rows = list(range(result.rows))
    row_times_ms = np.arange(result.rows) * 10.0
    expected = np.abs(row_times_ms[:, None] - times_ms[None, :]).argmin(axis=1)  # nearest frame
    shown = stored_frames_of(dataset, rows).reshape(len(rows), -1).mean(axis=1)
    np.testing.assert_allclose(shown, 8 * expected, atol=3)


def test_gap_of_missing_frames_is_still_refused(tmp_path):
    times_ms = [0, 33, 67, 100, 233, 267]  # 133 ms without a frame: four periods
    upload = write_camera_upload(tmp_path / "up" / "ep0", [marked_frame(64, 48)] * 6, times_ms)
    with pytest.raises(BadUploadError, match=r"cam.mp4: camera has no frame for 133.0 ms around"):
        robodata.ingest_episode(str(upload), str(tmp_path / "ds"))


@pytest.mark.parametrize("rotation", [90, -90, 180])
def test_rotated_phone_video_is_stored_upright(tmp_path, rotation):
    upright = marked_frame(64, 48)
    # What the phone's sensor recorded: the upright picture turned the other way.
    coded = np.ascontiguousarray(np.rot90(upright, k=-rotation // 90))
    upload = write_camera_upload(tmp_path / "up" / "ep0", [coded] * 6, [0, 33, 67, 100, 133, 167], rotation)
    dataset = str(tmp_path / "ds")
    result = robodata.ingest_episode(str(upload), dataset)
    note = f"cam.mp4: rotated {rotation % 360} degrees counter-clockwise, as its display matrix asks"
    assert robodata.ingest.read_upload(str(upload)).notes == [note]
    [recorded] = result.camera_adjustments  # and stored with the episode: test_camera_adjustments.py
    assert recorded == {
        "camera": "cam",
        "file": "cam.mp4",
        "original_size": list(coded.shape[1::-1]),
        "stored_size": [64, 48],
        "rotation_degrees": rotation % 360,
        "done": [note],
    }
    frame = stored_frames_of(dataset, [0])[0]
    assert frame.shape == (48, 64, 3)
    assert frame[:6, :6].min() > 230  # the mark is top-left again
    assert frame[-6:, -6:].max() < 100 and frame[:6, -6:].max() < 100 and frame[-6:, :6].max() < 100


# --- a store that is not there ---------------------------------------------------------------
@contextmanager
def endpoint_answering_404():
    """A loopback HTTP server that answers every request 404: a wrong AWS_ENDPOINT_URL."""

    class NotFound(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            self.send_response(404)
            self.send_header("Content-Length", "9")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(b"not found")

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_missing_bucket_is_not_an_empty_dataset(s3, sample_uploads, tmp_path):
    root = "s3://no-such-bucket-here/ds"
    with pytest.raises(DatasetLocationError) as raised:
        robodata.ingest_episode(str(sample_uploads[0]), root, storage_options=s3.storage_options)
    message = str(raised.value)
    assert f"{root}: bucket 'no-such-bucket-here' does not exist at {s3.endpoint}" in message
    assert "\n" not in message and s3.secret_key not in message and s3.access_key not in message
    assert "no-such-bucket-here" not in _buckets(s3)  # nothing created

    env = {**os.environ, **s3.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "robodata.cli", "ingest", str(sample_uploads[0]), root],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and s3.secret_key not in done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("robodata ingest: ")]
    assert "bucket 'no-such-bucket-here' does not exist" in line


def test_an_endpoint_answering_404_is_not_an_empty_dataset(sample_uploads):
    with endpoint_answering_404() as endpoint:
        options = {
            "aws_endpoint": endpoint,
            "allow_http": "true",
            "aws_region": "us-east-1",
            "aws_access_key_id": "AKIAEXAMPLE",
            "aws_secret_access_key": "EXAMPLESECRET",
        }
        with pytest.raises(DatasetLocationError, match=f"bucket 'lab' does not exist at {endpoint}"):
            robodata.ingest_episode(str(sample_uploads[0]), "s3://lab/ds", storage_options=options)


def _buckets(s3) -> set[str]:
    from robodata.storage import fsspec_filesystem

    return {p.rstrip("/") for p in fsspec_filesystem(s3.uri(), s3.storage_options).ls("")}
