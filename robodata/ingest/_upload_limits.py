"""Limits on what an upload may hold, checked before anything big is read into memory: an
upload is data from a robot, and a 200 MB task text, a 100,000-deep JSON or five million state
rows over one second are mistakes (or attacks) that would otherwise cost gigabytes of memory
before any error.

Each check raises BadUploadError naming the file, the limit and what the upload has.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from robodata.errors import BadUploadError
from robodata.storage._deadlines import positive_seconds

MAX_EPISODE_JSON_BYTES = 1 << 20  # a real episode.json is a few hundred bytes
MAX_JSON_DEPTH = 8  # episode.json is 3 deep: {"cameras": {"top": {"file": ...}}}
# Characters per text field: a task or instruction is a sentence or a paragraph, not a document.
MAX_TEXT_CHARS = {"task": 4096, "language_instruction": 4096, "split": 64, "robot_type": 256}
MAX_JOINTS = 1024
MAX_NAME_CHARS = 256  # a joint name
MAX_CAMERAS = 64
# States rows per second of their own timestamps, relative to control_hz: a memory guard, far
# above any jitter; a rate merely off (a wrong unit) gets the control-rate check's own message.
MAX_ROWS_PER_CONTROL_STEP = 20.0

# Bytes per upload file, checked before it is read (and a video is read no further than the size
# it had then): an hour of 1080p from a phone is some 20 GB; an hour of 1 kHz states for 50 joints
# about 1.5 GB.
MAX_VIDEO_BYTES = 64 << 30
MAX_STATES_BYTES = 4 << 30
# Seconds one upload file may spend being read and decoded (not counting what the ingest does with
# its frames meanwhile): far more than any real file needs, so only a file that never ends or a
# decoder that never finishes meets it.
FILE_TIMEOUT_ENV = "ROBODATA_UPLOAD_FILE_TIMEOUT_S"
DEFAULT_FILE_TIMEOUT_S = 1800.0
# A camera's frames: H.264 levels stop at 8192 pixels a side, and 4:2:0 needs at least 2x2.
MIN_FRAME_SIDE, MAX_FRAME_SIDE = 2, 8192
# A camera's frame rate: below 1 fps it is a slide show, above 1000 fps a broken time base.
MIN_CAMERA_FPS, MAX_CAMERA_FPS = 1.0, 1000.0

KNOWN_KEYS = frozenset(
    {"episode_index", "joint_names", "control_hz", "cameras", "task", "language_instruction", "split", "robot_type"}
)
KNOWN_CAMERA_KEYS = frozenset({"file", "start_offset_ns"})


def read_episode_json_text(path: str, handle, size: int | None) -> str:
    """The text of episode.json, refused before it is read when larger than the limit (the size
    the store reports, else at most one byte past the limit is read)."""
    if size is not None and size > MAX_EPISODE_JSON_BYTES:
        raise BadUploadError(path, f"is {size:,} bytes; episode.json may be at most {MAX_EPISODE_JSON_BYTES:,}")
    data = handle.read(MAX_EPISODE_JSON_BYTES + 1)
    if len(data) > MAX_EPISODE_JSON_BYTES:
        raise BadUploadError(path, f"is over {MAX_EPISODE_JSON_BYTES:,} bytes, the most episode.json may be")
    return data.decode("utf-8")


def parse_episode_json(path: str, text: str) -> object:
    """``json.loads`` with the nesting refused past MAX_JSON_DEPTH, before the parser recurses."""
    depth = _nesting_depth(text)
    if depth > MAX_JSON_DEPTH:
        raise BadUploadError(path, f"nests {depth} levels deep; episode.json may nest at most {MAX_JSON_DEPTH}")
    return json.loads(text)


def _nesting_depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings (a scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def check_episode_json_limits(path: str, meta: dict) -> None:
    """Unknown keys, text lengths and list sizes of a parsed episode.json (types are checked by
    the caller)."""
    unknown = sorted(set(meta) - KNOWN_KEYS)
    if unknown:
        raise BadUploadError(path, f"has unknown keys {shown_keys(unknown)}; known: {sorted(KNOWN_KEYS)}")
    for key, limit in MAX_TEXT_CHARS.items():
        value = meta.get(key)
        if isinstance(value, str) and len(value) > limit:
            raise BadUploadError(path, f"{key!r} is {len(value):,} characters; at most {limit:,} are allowed")
    joints = meta.get("joint_names")
    if isinstance(joints, list):
        if len(joints) > MAX_JOINTS:
            raise BadUploadError(path, f"lists {len(joints):,} joint names; at most {MAX_JOINTS:,} are allowed")
        long = [j for j in joints if isinstance(j, str) and len(j) > MAX_NAME_CHARS]
        if long:
            raise BadUploadError(path, f"a joint name is {len(long[0]):,} characters; at most {MAX_NAME_CHARS}")
    cameras = meta.get("cameras")
    if isinstance(cameras, dict):
        if len(cameras) > MAX_CAMERAS:
            raise BadUploadError(path, f"lists {len(cameras):,} cameras; at most {MAX_CAMERAS} are allowed")
        for name, spec in cameras.items():
            extra = sorted(set(spec) - KNOWN_CAMERA_KEYS) if isinstance(spec, dict) else []
            if extra:
                raise BadUploadError(
                    path, f"camera {name!r} has unknown keys {shown_keys(extra)}; known: {sorted(KNOWN_CAMERA_KEYS)}"
                )


def shown_keys(keys: list[str]) -> str:
    """Keys (or column names) as shown in an error: at most 5, each cut to 40 characters."""
    cut = [k if len(k) <= 40 else k[:40] + "..." for k in keys[:5]]
    return str(cut) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")


def check_rows_per_second(path: str, timestamps_ns: np.ndarray, control_hz: float) -> None:
    """Refuse states with far more rows per second than ``control_hz`` before their values are
    read (the timestamps alone are 8 bytes a row)."""
    n = len(timestamps_ns)
    if n < 3:
        return
    span_s = max(float(timestamps_ns.max()) - float(timestamps_ns.min()), 0.0) / 1e9
    allowed = MAX_ROWS_PER_CONTROL_STEP * control_hz * span_s + 2
    if n > allowed:
        raise BadUploadError(
            path,
            f"has {n:,} rows over {span_s:.3g} s of timestamps ({n / max(span_s, 1e-9):.3g} per second); "
            f"with control_hz {control_hz:g} at most {int(allowed):,} are allowed",
        )


def float_matrix(path: str, name: str, column: pa.ChunkedArray) -> np.ndarray:
    """A list-per-sample column (``observation_state``, ``action``) as an (n, values) float32
    array, converted by Arrow (no Python object per value); every malformed shape named (the
    number of values against the joint names is the caller's check)."""
    kind = column.type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)):
        raise BadUploadError(path, f"{name} must hold a list of numbers per sample (one per joint), got {kind}")
    value_type = kind.value_type
    if not (pa.types.is_floating(value_type) or pa.types.is_integer(value_type)):
        raise BadUploadError(path, f"{name} values must be numbers, got {value_type}")
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if column.null_count:
        first = int(pc.index(column.is_null(), True).as_py())
        raise BadUploadError(path, f"{name} has a null row at sample {first}")
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
    width = int(lengths[0]) if len(lengths) else 0
    differ = np.flatnonzero(lengths != width)
    if differ.size:
        at = int(differ[0])
        raise BadUploadError(
            path, f"{name} rows differ in length: {width} values at sample 0, {int(lengths[at])} at sample {at}"
        )
    values = column.flatten()
    if values.null_count:
        first = int(pc.index(values.is_null(), True).as_py()) // max(width, 1)
        raise BadUploadError(path, f"{name} has a null value in sample {first}")
    return values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(column), width)


def check_file_size(path: str, size: int | None, limit: int) -> None:
    """Refuse an upload file larger than ``limit`` bytes before it is read."""
    if size is not None and size > limit:
        raise BadUploadError(path, f"is {size:,} bytes; an upload's {_kind_of(path)} may be at most {limit:,}")


def _kind_of(path: str) -> str:
    return "states file" if path.endswith(".parquet") else "camera file"


def file_timeout_s() -> float:
    """Seconds one upload file may spend being read and decoded: ``$ROBODATA_UPLOAD_FILE_TIMEOUT_S``,
    else 1800."""
    return positive_seconds(os.environ.get(FILE_TIMEOUT_ENV) or DEFAULT_FILE_TIMEOUT_S, FILE_TIMEOUT_ENV)


class FileClock:
    """The time one upload file spends being read and decoded, against ``file_timeout_s``. The
    clock stops while the caller works on what the file gave (``paused``), so a slow encoder
    downstream does not count against the file.

    >>> clock = FileClock("ep/top.mp4", limit_s=3600)
    >>> clock.check()  # within the limit: nothing happens
    """

    def __init__(self, path: str, limit_s: float | None = None) -> None:
        self.path = path
        self.limit_s = file_timeout_s() if limit_s is None else limit_s
        self._spent = 0.0
        self._since: float | None = time.monotonic()

    def spent_s(self) -> float:
        running = 0.0 if self._since is None else time.monotonic() - self._since
        return self._spent + running

    def over(self) -> bool:
        return self.spent_s() > self.limit_s

    def check(self) -> None:
        if self.over():
            raise BadUploadError(self.path, self.problem())

    def problem(self) -> str:
        return f"reading and decoding took over {self.limit_s:g} s, the limit for one upload file (${FILE_TIMEOUT_ENV})"

    def pause(self) -> None:
        if self._since is not None:
            self._spent += time.monotonic() - self._since
            self._since = None

    def resume(self) -> None:
        if self._since is None:
            self._since = time.monotonic()


class BoundedFile:
    """A file object for FFmpeg that ends at ``max_bytes`` (the size the file had when it was
    checked: a file that grows meanwhile, or never ends, is not read on) and once ``clock`` is
    over its limit. FFmpeg sees the end of the file; ``stopped`` says why, for the error."""

    def __init__(self, handle, max_bytes: int, clock: FileClock) -> None:
        self._handle, self._max_bytes, self._clock = handle, max_bytes, clock
        self.stopped: str | None = None

    def read(self, n: int = -1) -> bytes:
        if self._clock.over():
            self.stopped = self._clock.problem()
            return b""
        left = self._max_bytes - self._handle.tell()
        if left <= 0:
            return b""
        return self._handle.read(left if n is None or n < 0 else min(n, left))

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._handle.seek(offset, whence)

    def tell(self) -> int:
        return self._handle.tell()

    def close(self) -> None:
        self._handle.close()
