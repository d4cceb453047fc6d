"""LeRobot's features of a robodata version and its key map: the one description both the export
(``info.json``) and ``LeRobotCompatDataset`` (``meta.features``, its item keys) give.

Keys: ``observation_state`` -> ``observation.state``, ``action`` -> ``action``, camera ``<cam>``
(robodata's ``observation_images_<cam>``) -> ``observation.images.<cam>``; every other per-row
column keeps its name.

>>> list(features(ds, ds.lance_dataset.schema, []))[:3]
['observation.state', 'action', 'observation.images.top']
>>> lerobot_key("observation_images_top", ds.cameras), lerobot_key("observation_state", ds.cameras)
('observation.images.top', 'observation.state')
>>> robodata_column("observation.state", ds.cameras, ["observation_state", "action"])
'observation_state'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from robodata.format._schema import image_column
from robodata.lerobot._format import (
    ACTION,
    DEFAULT_FEATURES,
    STATE,
    feature_of_arrow,
    joint_names_feature,
    video_key,
)

# robodata column -> LeRobot key, for the per-row columns whose names differ.
RENAMED = {"observation_state": STATE, "action": ACTION}


def lerobot_key(column: str, cameras: Sequence[str]) -> str:
    """The LeRobot key of a robodata column (a camera's image column or a per-row column)."""
    for camera in cameras:
        if column == image_column(camera):
            return video_key(camera)
    return RENAMED.get(column, column)


def robodata_column(key: str, cameras: Sequence[str], columns: Sequence[str]) -> str | None:
    """The robodata column behind LeRobot ``key``: a camera's image column or one of the per-row
    ``columns``; None when ``key`` is neither."""
    for camera in cameras:
        if key == video_key(camera):
            return image_column(camera)
    for column, renamed in RENAMED.items():
        if key == renamed:
            return column if column in columns else None
    return key if key in columns else None


def features(
    ds,
    schema: pa.Schema,
    columns: Sequence[str],
    *,
    frame_size: tuple[int, int] | None = None,
    robodata_columns: Mapping[str, dict] | None = None,
) -> dict[str, dict]:
    """LeRobot's features of ``ds`` (a RoboDataset) in LeRobot's order: state and action, the
    cameras (in recorded order), the per-row ``columns`` (typed from ``schema``), robodata's own
    bookkeeping features (``robodata_columns``, the export's), then LeRobot's index columns.

    Shapes are lists, as ``info.json`` holds them; cameras are ``frame_size`` (H, W) when given
    (a training rendition), else their recorded size, with the ``video.*`` facts known without an
    MP4 (the export replaces them by what it probes from the MP4 it wrote).
    """
    names = joint_names_feature(ds.metadata)
    joints = len(ds.metadata.joint_names)
    out: dict[str, dict] = {
        STATE: {"dtype": "float32", "shape": [joints], "names": names},
        ACTION: {"dtype": "float32", "shape": [joints], "names": names},
    }
    for camera in ds.cameras:  # in the order they were recorded
        info = ds.metadata.cameras[camera]
        height, width = frame_size or (info.height, info.width)
        out[video_key(camera)] = {
            "dtype": "video",
            "shape": [height, width, 3],
            "names": ["height", "width", "channels"],
            "info": {
                "video.height": height,
                "video.width": width,
                "video.channels": 3,
                "video.fps": info.fps,
                "video.is_depth_map": False,
                "has_audio": False,
            },
        }
    for column in columns:
        if column not in RENAMED:
            out[column] = feature_of_arrow(column, schema.field(column).type)
    out.update({k: dict(v) for k, v in (robodata_columns or {}).items()})
    return {**out, **{k: dict(v) for k, v in DEFAULT_FEATURES.items()}}
