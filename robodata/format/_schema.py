"""Schemas of gops.lance and frames.lance and the metadata that makes frames.lance self-describing."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

import lance
import numpy as np
import pyarrow as pa

from robodata.errors import UnsupportedFormatError

# The one format this release reads and writes (read_metadata refuses any other).
FORMAT_VERSION = "2"
GOPS_TABLE = "gops.lance"
FRAMES_TABLE = "frames.lance"
METADATA_KEY = b"robodata"
INLINE_GOP_BYTES = 16 << 20
# How far an episode's camera rate may be from the dataset's for that camera: a variable frame
# rate or 29.97 against 30 moves it a few percent; a camera set to another mode moves it 20% or more.
CAMERA_FPS_TOLERANCE = 0.1

GOPS_SCHEMA = pa.schema(
    [
        pa.field("ref_id", pa.int64(), nullable=False),
        pa.field("episode_index", pa.int64(), nullable=False),
        pa.field("camera", pa.string(), nullable=False),
        pa.field("gop_index", pa.int32(), nullable=False),
        pa.field("n_frames", pa.int32(), nullable=False),
        pa.field("timestamps_ns", pa.list_(pa.int64()), nullable=False),
        pa.field("packet_sizes", pa.list_(pa.int32()), nullable=False),
        pa.field("width", pa.int32(), nullable=False),
        pa.field("height", pa.int32(), nullable=False),
        pa.field("codec", pa.string(), nullable=False),
        pa.field("crf", pa.int32(), nullable=False),
        pa.field("preset", pa.string(), nullable=False),
        # Checksum of the GOP bytes (robodata.integrity._gop_checksums), verified on every read.
        pa.field("gop_xxh3", pa.uint64(), nullable=False),
        # Checksum of every other column (timestamps, packet sizes, ...; gop_xxh3 with them), verified
        # on every read of the GOP. Tables written before it existed lack it (robodata.integrity._gop_checksums).
        pa.field("row_xxh3", pa.uint64(), nullable=False),
        # Keep GOPs inline in the data file: one ranged read each, no sidecar file to open.
        lance.blob_field("gop", inline_size_threshold=INLINE_GOP_BYTES, dedicated_size_threshold=4 * INLINE_GOP_BYTES),
    ]
)

REF_SUFFIXES = ("ref_id", "gop_index", "frame_index_in_gop")
IMAGE_COLUMN_PREFIX = "observation_images_"
# DatasetMetadata.extra key: the camera names in the order the dataset lists them, the order the
# first episode ingested recorded them in (episode.json's, a LeRobot dataset's features').
# ``DatasetMetadata.to_json`` sorts the ``cameras`` mapping's keys, so the order needs its own list.
CAMERA_ORDER = "camera_order"
# Columns every episode has, written from EpisodeData's own fields; an imported or exported
# extra column may not take one of these names.
CORE_COLUMNS = frozenset(
    {"episode_index", "frame_index", "timestamp_ns", "task", "split", "observation_state", "action"}
)


def image_column(camera: str) -> str:
    """The user-facing name of a camera's decoded frames.

    >>> image_column("wrist")
    'observation_images_wrist'
    """
    return f"{IMAGE_COLUMN_PREFIX}{camera}"


def ref_columns(camera: str) -> tuple[str, str, str]:
    """The three frames.lance columns that point one row at one camera frame."""
    base = image_column(camera)
    return tuple(f"{base}_{suffix}" for suffix in REF_SUFFIXES)  # type: ignore[return-value]


def camera_of(column: str, cameras: list[str]) -> str:
    """The camera behind an ``observation_images_<cam>`` column, or a KeyError naming the choices."""
    for camera in cameras:
        if column == image_column(camera):
            return camera
    choices = ", ".join(image_column(c) for c in cameras)
    raise KeyError(f"no image column {column!r}; this dataset has {choices}")


@dataclass
class CameraInfo:
    width: int
    height: int
    fps: float


@dataclass
class DatasetMetadata:
    """What frames.lance says about itself, stored as JSON in its Arrow schema metadata."""

    control_hz: float
    joint_names: list[str]
    cameras: dict[str, CameraInfo]
    gop_size: int
    codec: dict[str, object]
    robot_type: str = ""
    format_version: str = FORMAT_VERSION
    extra: dict[str, object] = field(default_factory=dict)
    # camera -> names (WIDTHxHEIGHT) of the training renditions stored for it (format/_renditions.py)
    renditions: dict[str, list[str]] = field(default_factory=dict)

    @property
    def camera_names(self) -> list[str]:
        """The cameras in the order the dataset lists them: the order recorded in ``extra``'s
        ``camera_order``, else ``cameras``' own order (alphabetical once read back from JSON).

        The order is the recording's where the ingest knew it: an upload's episode.json, a LeRobot
        dataset's features. Datasets that early development versions ingested from uploads
        recorded a sorted order; metadata with no recorded order lists ``cameras`` as stored.

        >>> cameras = {"angle": CameraInfo(64, 48, 30.0), "top": CameraInfo(64, 48, 30.0)}
        >>> meta = DatasetMetadata(50.0, ["j"], cameras, 8, {}, extra={"camera_order": ["top", "angle"]})
        >>> meta.camera_names, list(DatasetMetadata.from_json(meta.to_json()).cameras)
        (['top', 'angle'], ['top', 'angle'])
        """
        order = (self.extra or {}).get(CAMERA_ORDER)
        recorded = [name for name in order if name in self.cameras] if isinstance(order, list) else []
        return list(dict.fromkeys([*recorded, *self.cameras]))

    @property
    def camera_fps(self) -> dict[str, float]:
        return {name: cam.fps for name, cam in self.cameras.items()}

    def to_json(self) -> str:
        body = asdict(self)
        body["camera_fps"] = self.camera_fps
        return json.dumps(body, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> DatasetMetadata:
        body = json.loads(text)
        body.pop("camera_fps", None)
        body["cameras"] = {k: CameraInfo(**v) for k, v in body["cameras"].items()}
        meta = cls(**body)
        # Iterating ``cameras`` gives the dataset's order, not the JSON's sorted one.
        meta.cameras = {name: meta.cameras[name] for name in meta.camera_names}
        return meta

    def compatible_with(self, other: DatasetMetadata) -> list[str]:
        """Differences that stop an episode described by ``other`` joining this dataset."""
        problems = []
        if self.joint_names != other.joint_names:
            problems.append(f"joint_names {other.joint_names} != dataset's {self.joint_names}")
        if sorted(self.cameras) != sorted(other.cameras):
            problems.append(f"cameras {sorted(other.cameras)} != dataset's {sorted(self.cameras)}")
        for name, cam in other.cameras.items():
            mine = self.cameras.get(name)
            if mine and (mine.width, mine.height) != (cam.width, cam.height):
                problems.append(f"camera {name!r} is {cam.width}x{cam.height}, dataset's is {mine.width}x{mine.height}")
            if mine and not math.isclose(mine.fps, cam.fps, rel_tol=CAMERA_FPS_TOLERANCE):
                problems.append(f"camera {name!r} is {cam.fps:.4g} fps, dataset's is {mine.fps:.4g} fps")
        if self.gop_size != other.gop_size:
            problems.append(f"gop_size {other.gop_size} != dataset's {self.gop_size}")
        if not math.isclose(self.control_hz, other.control_hz, rel_tol=1e-9):
            problems.append(f"control_hz {other.control_hz:g} != dataset's {self.control_hz:g}")
        return problems


# An episode's texts (``task``, ``language_instruction``) are the same on every row: stored as a
# dictionary (the text once, a 4-byte index per row), so an ingest's memory does not grow with
# text length x rows (a 4,000-character task over 200,000 rows was 1.6 GB of copies per text).
# Lance keeps the dictionary type on disk and in filters; readers hand users plain strings
# (``plain_strings``).
EPISODE_TEXT = pa.dictionary(pa.int32(), pa.string())


def episode_text(text: str, n_rows: int) -> pa.DictionaryArray:
    """``text`` on each of ``n_rows`` rows, held once.

    >>> episode_text("pick", 3).to_pylist()
    ['pick', 'pick', 'pick']
    """
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n_rows, np.int32)), pa.array([text], pa.string()))


def plain_strings(table: pa.Table) -> pa.Table:
    """``table`` with dictionary-encoded text columns (``EPISODE_TEXT``) as plain strings.

    >>> plain_strings(pa.table({"task": episode_text("pick", 2)})).schema.field("task").type
    DataType(string)
    """
    for i, column in enumerate(table.schema):
        if pa.types.is_dictionary(column.type) and pa.types.is_string(column.type.value_type):
            table = table.set_column(i, column.with_type(pa.string()), table.column(i).cast(pa.string()))
    return table


def frames_schema(meta: DatasetMetadata) -> pa.Schema:
    """The frames.lance schema for a dataset with ``meta``'s cameras and joints."""
    n_joints = len(meta.joint_names)
    fields = [
        pa.field("episode_index", pa.int64(), nullable=False),
        pa.field("frame_index", pa.int64(), nullable=False),
        pa.field("timestamp_ns", pa.int64(), nullable=False),
        pa.field("task", EPISODE_TEXT),
        pa.field("split", pa.string()),
        pa.field("observation_state", pa.list_(pa.float32(), n_joints)),
        pa.field("action", pa.list_(pa.float32(), n_joints)),
        pa.field("language_instruction", EPISODE_TEXT),
        pa.field("source", pa.string()),
        pa.field("is_intervention", pa.bool_()),
    ]
    for camera in meta.camera_names:
        ref_id, gop_index, in_gop = ref_columns(camera)
        fields += [
            pa.field(ref_id, pa.int64(), nullable=False),
            pa.field(gop_index, pa.int32(), nullable=False),
            pa.field(in_gop, pa.int32(), nullable=False),
        ]
    return pa.schema(fields, metadata={METADATA_KEY: meta.to_json().encode()})


def read_metadata(schema: pa.Schema, dataset: str = "frames.lance") -> DatasetMetadata:
    """frames.lance's self-description; UnsupportedFormatError, naming ``dataset`` and its format
    version, when it was written in another format than ``FORMAT_VERSION`` (so neither a read nor
    an ingest goes further).

    >>> import lance
    >>> read_metadata(lance.dataset("data/demo/frames.lance").schema).format_version == FORMAT_VERSION
    True
    """
    raw = (schema.metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise ValueError("frames.lance has no robodata schema metadata; is this a robodata dataset?")
    # Checked before the metadata is parsed: another format may not describe itself the same way.
    found = json.loads(raw).get("format_version")
    if found != FORMAT_VERSION:
        written = f"robodata format {found}" if found is not None else "a robodata format without a version"
        raise UnsupportedFormatError(
            f"{dataset}: written in {written}; this robodata reads format {FORMAT_VERSION} only: "
            "open it with the robodata that wrote it, or ingest its uploads into a new dataset"
        )
    return DatasetMetadata.from_json(raw)
