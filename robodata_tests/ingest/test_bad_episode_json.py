"""A bad episode.json is refused, naming the file and the problem, and nothing stored changes:
missing, invalid, incomplete, too big or too deep, keys unknown or of the wrong type, a camera
file outside the upload, and a control_hz that is not finite or disagrees with the states or
the dataset (the check each case gets: bad_input.py)."""

from __future__ import annotations

import math
from pathlib import Path

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


def deep_json(depth: int):
    return write_text("episode.json", "[" * depth + "]" * depth)


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


CASES = [
    # the file itself
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
    # values of the wrong kind
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
    # size, unknown keys, depth
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
]


@pytest.mark.parametrize("via", ["api", "cli"])
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, via: str, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys):
    check_refused(case, via, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys)
