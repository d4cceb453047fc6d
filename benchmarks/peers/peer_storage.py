"""Bytes per camera frame and PSNR against the source frames, for robodata and the peers.

>>> peer_storage(ds, uploads, rows, {"lancedb": {"top": frames}}, roots)["lancedb"]["bytes_per_frame"]  # doctest: +SKIP
6210.4
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lerobot_baseline import LeRobotLayoutReader
from benchmarks.storage import camera_frame_counts, mean_psnr, quality_sample, video_bytes
from robodata.reader import RoboDataset


def folder_bytes(folder: str | Path) -> int:
    """Bytes of every file under ``folder``."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def quality_camera(cameras: list[str]) -> str:
    """The camera PSNR is quoted for: ``top`` where there is one (the issue's figure), else the first."""
    return "top" if "top" in cameras else cameras[0]


def psnr_figures(reference: Mapping[str, list[np.ndarray]], test: Mapping[str, np.ndarray], camera: str) -> dict:
    """Mean PSNR of ``test`` frames against ``reference`` frames: of ``camera`` and over every camera."""
    every = [c for c in reference if c in test]
    return {
        "psnr_top_db": mean_psnr(list(reference[camera]), list(test[camera])),
        "psnr_db": mean_psnr([f for c in every for f in reference[c]], [f for c in every for f in test[c]]),
    }


def peer_storage(
    ds: RoboDataset,
    uploads: Mapping[int, str | Path] | None,
    rows: np.ndarray,
    frames: Mapping[str, Mapping[str, np.ndarray]],
    roots: Mapping[str, str],
) -> dict[str, dict]:
    """``{system: {video_bytes, camera_frames, bytes_per_frame, psnr_top_db, psnr_db}}``.

    ``frames`` are each peer's decoded frames of ``rows`` (paired), per camera. PSNR is against
    the source frames of the uploads; for a given dataset without them, against robodata's frames
    (``psnr_vs_robodata_*``)."""
    reader = LeRobotLayoutReader(roots["lerobot"])
    peer_frames = len(reader) * len(reader.video_keys)
    own_frames = sum(camera_frame_counts(ds).values())
    sizes = {
        "robodata": (video_bytes(ds), own_frames, "H.264 GOPs in gops.lance"),
        "lerobot-torchcodec": (reader.video_bytes(), peer_frames, "MP4 files of the LeRobot v3.0 export"),
        "lancedb": (
            folder_bytes(Path(roots["lance"]) / "videos.lance"),
            peer_frames,
            "videos.lance (the MP4s as blobs, with their byte index)",
        ),
    }
    figures: dict[str, Any] = {
        key: {"video_bytes": size, "camera_frames": count, "bytes_per_frame": size / count, "what": what}
        for key, (size, count, what) in sizes.items()
    }
    sample = quality_sample(ds, uploads, rows)
    camera = quality_camera(ds.cameras)
    ours = {c: s["robodata"] for c, s in sample.items()}
    if uploads is not None:
        source = {c: s["source"] for c, s in sample.items()}
        figures["robodata"].update(psnr_figures(source, {c: np.stack(v) for c, v in ours.items()}, camera))
        for key, decoded in frames.items():
            figures[key].update(psnr_figures(source, decoded, camera))
    else:
        for key, decoded in frames.items():
            figures[key].update(
                {f"{k.replace('psnr', 'psnr_vs_robodata')}": v for k, v in psnr_figures(ours, decoded, camera).items()}
            )
    figures["quality_camera"] = camera
    figures["quality_rows"] = len(rows)
    return figures
