"""Reading frames at a requested size: which GOPs to decode (a stored training rendition when
one fits, see ``robodata.format._renditions``) and what to scale them to afterwards.

``RoboDataset.get_frames(..., resolution=(h, w))`` and everything built on it (windows,
the torch datasets) go through ``decode_requests``: a row whose GOP has a fitting rendition
decodes that rendition's GOP and never the full frame; a GOP without one yet (an episode the
rendition has not been added to) decodes at full resolution and is scaled with the same resize
the rendition was written with.
"""

from __future__ import annotations

import numpy as np

from robodata.codec._resize import PIXEL_FORMATS, PLANAR_RGB, frame_shape
from robodata.format._renditions import Rendition, source_for
from robodata.format._schema import DatasetMetadata
from robodata.reader._gop_index import GopIndex

__all__ = ["PIXEL_FORMATS", "PLANAR_RGB", "Request", "decode_requests", "output_shape"]

# One request: (GOP ref_ids, frame in GOP, output slots, scale-to size or None), one entry per row.
Request = tuple[np.ndarray, np.ndarray, np.ndarray | list[np.ndarray], tuple[int, int] | None]


def output_shape(metadata: DatasetMetadata, camera: str, resolution, pixel_format: str = "rgb24") -> tuple[int, ...]:
    """Array shape of one of ``camera``'s frames read at ``resolution`` (None: its own size) in
    ``pixel_format``."""
    if resolution is not None:
        return frame_shape(*Rendition.parse(resolution).size, pixel_format)
    info = metadata.cameras[camera]
    return frame_shape(info.height, info.width, pixel_format)


def decode_requests(
    metadata: DatasetMetadata,
    index: GopIndex,
    camera: str,
    refs: np.ndarray,
    frames: np.ndarray,
    out: np.ndarray,
    resolution,
) -> list[Request]:
    """The decode requests that fill ``out`` (one slot per row) with ``camera``'s frames of the
    rows whose full-resolution GOPs are ``refs`` at ``resolution``."""
    info = metadata.cameras[camera]
    source, scale = source_for((info.height, info.width), metadata.renditions.get(camera, []), resolution)
    if source is None:
        return [(refs, frames, out, scale)]
    positions = index.rendition_positions(refs, source.name)
    have = positions >= 0
    if have.all():
        return [(index.ref_ids(positions), frames, out, scale)]
    slots = [out[i] for i in range(len(refs))]
    requests: list[Request] = []
    if have.any():
        rows = np.flatnonzero(have)
        requests.append((index.ref_ids(positions[rows]), frames[rows], [slots[i] for i in rows], scale))
    rows = np.flatnonzero(~have)
    requests.append((refs[rows], frames[rows], [slots[i] for i in rows], Rendition.parse(resolution).size))
    return requests
