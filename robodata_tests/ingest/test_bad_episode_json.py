"""A bad episode.json is refused, naming the file and the problem, and nothing stored changes:
missing, invalid, incomplete, too big or too deep, keys unknown or of the wrong type, a camera
file outside the upload, and a control_hz that is not finite or disagrees with the states or
the dataset (the check each case gets: bad_input.py)."""

from __future__ import annotations

import math
from pathlib import Path

from robodata.errors import IncompatibleEpisodeError
from robodata_tests.ingest.bad_input import edit_json, edit_states, refusal_test, refused, remove, write_text


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


# fmt: off
CASES = [
    # the file itself
    refused("missing-episode-json", remove("episode.json"), "episode.json", "missing", "incomplete"),
    refused("invalid-episode-json", write_text("episode.json", '{"episode_index": 1,'), "episode.json", "not valid JSON"),
    refused("incomplete-episode-json", edit_json(lambda m: m.pop("cameras")), "episode.json", "missing required keys", "cameras"),
    refused("episode-index-not-a-number", edit_json(lambda m: m.update(episode_index="one")), "episode.json", "'episode_index' has the wrong type"),
    refused("negative-episode-index", edit_json(lambda m: m.update(episode_index=-1)), "episode.json", "non-negative integer"),
    refused("camera-file-outside-upload", edit_json(lambda m: m["cameras"]["top"].update(file="../episode_000000/top.mp4")), "episode.json", "must be inside the upload folder"),
    # control_hz
    refused("control-hz-nan", set_meta("control_hz", math.nan), "episode.json", "'control_hz' must be a finite number", "nan"),
    refused("control-hz-infinity", set_meta("control_hz", math.inf), "episode.json", "'control_hz' must be a finite number", "inf"),
    refused("control-hz-1e300", set_meta("control_hz", 1e300), "episode.json", "'control_hz' must be a finite number", "1e+300"),
    refused("control-hz-disagrees-with-states", set_meta("control_hz", 10), "episode.json", "'control_hz' is 10 Hz", "states.parquet's timestamps are 100 Hz"),
    refused("control-hz-disagrees-with-dataset", twice_the_rate, "episode_000001", "control_hz 200 != dataset's 100", error=IncompatibleEpisodeError),
    # values of the wrong kind
    refused("start-offset-text", set_camera("start_offset_ns", "abc"), "episode.json", "camera 'top' 'start_offset_ns' must be an integer", "'abc'"),
    refused("start-offset-1e30", set_camera("start_offset_ns", 1e30), "episode.json", "camera 'top' 'start_offset_ns' must be an integer", "1e+30"),
    refused("start-offset-null", set_camera("start_offset_ns", None), "episode.json", "camera 'top' 'start_offset_ns' must be an integer", "None"),
    refused("camera-file-dot", set_camera("file", "."), "episode.json", "camera 'top' file must be inside the upload folder", "'.'"),
    refused("camera-file-dot-dot", set_camera("file", ".."), "episode.json", "camera 'top' file must be inside the upload folder", "'..'"),
    refused("camera-file-empty", set_camera("file", ""), "episode.json", "camera 'top' file must be inside the upload folder", "''"),
    refused("camera-file-is-a-directory", camera_file_is_a_directory, "top_frames", "camera 'top' file is a directory"),
    refused("task-is-an-object", set_meta("task", {"name": "pick"}), "episode.json", "'task' must be a string, got dict"),
    refused("joint-names-not-strings", set_meta("joint_names", [1, 2]), "episode.json", "'joint_names' must be a non-empty list of distinct, non-empty strings"),
    # size, unknown keys, depth
    refused("episode-json-over-1-mib", edit_json(lambda m: m.__setitem__("task", "x" * (2 << 20))), "episode.json", "bytes", "at most 1,048,576"),
    refused("task-too-long", edit_json(lambda m: m.__setitem__("task", "pick " * 1000)), "episode.json", "'task' is 5,000 characters; at most 4,096"),
    refused("unknown-key", edit_json(lambda m: m.__setitem__("tsak", "pick up the cube")), "episode.json", "unknown keys ['tsak']"),
    refused("unknown-camera-key", edit_json(lambda m: m["cameras"]["top"].__setitem__("fps", 30)), "episode.json", "camera 'top' has unknown keys ['fps']"),
    refused("json-nested-100k-deep", deep_json(100_000), "episode.json", "nests 100000 levels deep; episode.json may nest at most 8"),
]
# fmt: on


test_bad_input = refusal_test(CASES)
