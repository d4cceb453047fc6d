"""The LeRobot v3.0 dataset layout, as LeRobot itself writes it.

Every name here was checked against huggingface/lerobot at commit
7427f31801f944f5ec9ce53cda02862ce7d1638b (2026-08-23):
``src/lerobot/datasets/utils.py`` (DEFAULT_*_PATH, CHUNK_FILE_PATTERN, DatasetInfo fields),
``src/lerobot/utils/constants.py`` (DEFAULT_FEATURES), ``src/lerobot/datasets/dataset_writer.py``
and ``dataset_metadata.py`` (episodes table columns), ``src/lerobot/datasets/video_utils.py``
(``video.*`` feature info) and ``src/lerobot/configs/video.py`` (encoder defaults).

```
meta/info.json
meta/stats.json
meta/tasks.parquet                                  task (index) -> task_index
meta/episodes/chunk-000/file-000.parquet            one row per episode
data/chunk-000/file-000.parquet                     one row per frame, several episodes
videos/observation.images.<cam>/chunk-000/file-000.mp4   several episodes back to back
```
"""

from __future__ import annotations

import pyarrow as pa

from robodata.errors import RoboDataError

LEROBOT_COMMIT = "7427f31801f944f5ec9ce53cda02862ce7d1638b"
CODEBASE_VERSION = "v3.0"

DEFAULT_CHUNK_SIZE = 1000
DEFAULT_DATA_FILE_SIZE_IN_MB = 100
DEFAULT_VIDEO_FILE_SIZE_IN_MB = 200

INFO_PATH = "meta/info.json"
STATS_PATH = "meta/stats.json"
TASKS_PATH = "meta/tasks.parquet"
CHUNK_FILE_PATTERN = "chunk-{chunk_index:03d}/file-{file_index:03d}"
EPISODES_PATH = "meta/episodes/" + CHUNK_FILE_PATTERN + ".parquet"
DATA_PATH = "data/" + CHUNK_FILE_PATTERN + ".parquet"
VIDEO_PATH = "videos/{video_key}/" + CHUNK_FILE_PATTERN + ".mp4"

# DatasetInfo's fields in LeRobot's order (``tools`` is dropped when unset, as LeRobot does).
INFO_FIELDS = (
    "codebase_version",
    "fps",
    "features",
    "total_episodes",
    "total_frames",
    "total_tasks",
    "chunks_size",
    "data_files_size_in_mb",
    "video_files_size_in_mb",
    "data_path",
    "video_path",
    "robot_type",
    "splits",
)

# Per-frame columns every LeRobot dataset has, appended after the user's features.
DEFAULT_FEATURES = {
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}

STATE = "observation.state"
ACTION = "action"
IMAGE_PREFIX = "observation.images."
STAT_NAMES = ("min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99")

# robodata's own additions. Per-episode columns of the episodes table (LeRobot keeps unknown
# episode columns) and one per-frame column per camera naming the camera frame a row shows,
# which is what lets import undo the control-rate frame repetition exactly. Names start with
# neither "observation" nor "action", so LeRobot policies do not take them as inputs.
ROBODATA_EPISODE_INDEX = "robodata/episode_index"
ROBODATA_TASK = "robodata/task"
ROBODATA_SPLIT = "robodata/split"
CAMERA_TIME_PREFIX = "robodata.frame_timestamp_ns."
ROW_TIMESTAMP = "robodata.timestamp_ns"  # only exported when row times are off the 1/fps grid


class LeRobotFormatError(RoboDataError, ValueError):
    """A LeRobot dataset robodata cannot read or write; the message names the file or feature."""


def joint_names_feature(metadata) -> list[str] | None:
    """The ``names`` of LeRobot's state and action features: robodata's joint names, or None for
    a LeRobot dataset imported without names (import numbers its joints ``joint_<i>`` then)."""
    joints = list(metadata.joint_names)
    imported = (metadata.extra or {}).get("imported_from") or {}
    if imported.get("format") == "lerobot" and joints == [f"joint_{i}" for i in range(len(joints))]:
        return None
    return joints


def video_key(camera: str) -> str:
    return IMAGE_PREFIX + camera


def camera_time_column(camera: str) -> str:
    """The export's per-frame column naming the time of the ``camera`` frame each LeRobot frame shows.

    >>> camera_time_column("top")
    'robodata.frame_timestamp_ns.top'
    """
    return CAMERA_TIME_PREFIX + camera


def chunk_and_file(file_number: int, chunks_size: int = DEFAULT_CHUNK_SIZE) -> tuple[int, int]:
    """LeRobot's (chunk_index, file_index) of the ``file_number``-th file (as update_chunk_file_indices)."""
    return divmod(file_number, chunks_size)


def video_columns(key: str) -> list[str]:
    """The episodes-table columns locating one episode inside a shared camera MP4."""
    return [f"videos/{key}/{name}" for name in ("chunk_index", "file_index", "from_timestamp", "to_timestamp")]


def feature_of_arrow(name: str, arrow_type: pa.DataType) -> dict:
    """The LeRobot feature (dtype, shape, names) of a per-frame Arrow column, or an error naming it."""
    if pa.types.is_fixed_size_list(arrow_type) and _scalar_dtype(arrow_type.value_type):
        return {"dtype": _scalar_dtype(arrow_type.value_type), "shape": [arrow_type.list_size], "names": None}
    dtype = _scalar_dtype(arrow_type)
    if dtype is None:
        raise LeRobotFormatError(
            f"column {name!r} has type {arrow_type}, which LeRobot v3 cannot hold as a per-frame feature "
            "(supported: bool, integers, floats, strings and fixed-size lists of numbers)"
        )
    return {"dtype": dtype, "shape": [1], "names": None}


def arrow_of_feature(name: str, feature: dict) -> pa.DataType:
    """The Arrow type a LeRobot per-frame feature is read as, or an error naming the feature."""
    dtype, shape = feature.get("dtype"), list(feature.get("shape") or [])
    scalar = _ARROW_OF_DTYPE.get(dtype) if isinstance(dtype, str) else None
    if scalar is None or len(shape) != 1:
        raise LeRobotFormatError(
            f"feature {name!r} (dtype {dtype}, shape {shape}) cannot be carried by robodata yet: "
            "only scalars and 1-D vectors of bool, integer, float or string are supported"
        )
    if shape == [1]:
        return scalar
    if dtype == "string":
        raise LeRobotFormatError(f"feature {name!r} is a vector of strings, which robodata cannot carry yet")
    return pa.list_(scalar, shape[0])


_ARROW_OF_DTYPE = {
    "bool": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float16": pa.float16(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "string": pa.string(),
}


def _scalar_dtype(arrow_type: pa.DataType) -> str | None:
    if pa.types.is_dictionary(arrow_type):  # an episode text, stored once (format.schema.EPISODE_TEXT)
        arrow_type = arrow_type.value_type
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    for dtype, candidate in _ARROW_OF_DTYPE.items():
        if arrow_type == candidate:
            return dtype
    return None
