"""An episode's cameras encoded into closed GOPs: the rows for gops.lance, and each camera's
layout (which GOP holds which frame) that the rows of frames.lance point into.

>>> from robodata.ingest._upload import read_upload
>>> episode = read_upload("uploads/episode_000000")
>>> encoded = encode_camera(0, episode.cameras[0], EncoderSettings(gop_size=8))
>>> camera_layout(encoded).n_frames[:2]
[8, 8]
"""

from __future__ import annotations

from dataclasses import dataclass

import lance
import numpy as np
import pyarrow as pa

from robodata.codec import EncoderSettings, GopEncoder
from robodata.errors import BadUploadError
from robodata.format._ids import gop_ref_id
from robodata.format._schema import GOPS_SCHEMA
from robodata.ingest._episode import CameraStream
from robodata.integrity._gop_checksums import ROW_CHECKSUM_COLUMN, gop_checksum, row_checksums


@dataclass
class CameraGops:
    """Where one camera's frames landed in gops.lance, in GOP order: all ``write_frames`` needs
    to point rows at them, without the video bytes."""

    ref_ids: list[int]
    n_frames: list[int]
    frame_times_ns: list[int]
    fps: float
    video_bytes: int


@dataclass
class EncodedCamera:
    gops: pa.Table  # rows for gops.lance
    frame_times_ns: np.ndarray
    fps: float
    video_bytes: int


def encode_camera(episode_index: int, camera: CameraStream, settings: EncoderSettings) -> EncodedCamera:
    """Decode one camera's source and re-encode it into closed GOPs (rows for gops.lance)."""
    encoder = GopEncoder(camera.width, camera.height, camera.fps, settings)
    times: list[int] = []
    gops = []
    try:
        for t_ns, rgb in camera.frames():
            if times and t_ns <= times[-1]:
                raise BadUploadError(camera.source, f"frame timestamps do not increase at frame {len(times)}")
            times.append(t_ns)
            gops += encoder.add(rgb)
        gops += encoder.finish()
    except ValueError as exc:
        if isinstance(exc, BadUploadError):
            raise
        raise BadUploadError(camera.source, str(exc)) from None
    frame_times = np.asarray(times, dtype=np.int64)
    starts = np.cumsum([0] + [g.n_frames for g in gops])
    columns = {
        "ref_id": [gop_ref_id(episode_index, camera.name, j, g.data) for j, g in enumerate(gops)],
        "episode_index": [episode_index] * len(gops),
        "camera": [camera.name] * len(gops),
        "gop_index": list(range(len(gops))),
        "n_frames": [g.n_frames for g in gops],
        "timestamps_ns": [frame_times[starts[j] : starts[j + 1]].tolist() for j, g in enumerate(gops)],
        "packet_sizes": [g.packet_sizes for g in gops],
        "width": [camera.width] * len(gops),
        "height": [camera.height] * len(gops),
        "codec": [settings.codec] * len(gops),
        "crf": [settings.crf] * len(gops),
        "preset": [settings.preset] * len(gops),
        "gop_xxh3": pa.array([gop_checksum(g.data) for g in gops], pa.uint64()),
        "gop": lance.blob_array([g.data for g in gops]),
    }
    columns[ROW_CHECKSUM_COLUMN] = row_checksums(columns)
    table = pa.table(columns, schema=GOPS_SCHEMA)
    return EncodedCamera(table, frame_times, camera.fps, sum(len(g.data) for g in gops))


def camera_layout(encoded: EncodedCamera) -> CameraGops:
    return CameraGops(
        ref_ids=encoded.gops["ref_id"].to_pylist(),
        n_frames=encoded.gops["n_frames"].to_pylist(),
        frame_times_ns=encoded.frame_times_ns.tolist(),
        fps=encoded.fps,
        video_bytes=encoded.video_bytes,
    )
