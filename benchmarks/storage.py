"""Video bytes and picture quality: robodata's GOPs, the LeRobot-layout MP4s and one JPEG per
frame at a quality whose PSNR matches robodata's."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow.compute as pc

from benchmarks.lerobot_baseline import LeRobotLayoutReader
from robodata.codec import jpeg_roundtrip, psnr
from robodata.format import episode_filter, full_resolution_only, gops_uri, open_table, ref_columns
from robodata.ingest import read_upload
from robodata.reader import RoboDataset


def camera_frame_counts(ds: RoboDataset) -> dict[str, int]:
    """Encoded camera frames per camera in ``ds``'s episodes."""
    table = _gops_of(ds, ["camera", "n_frames"])
    return {c: int(pc.sum(table.filter(pc.equal(table["camera"], c))["n_frames"]).as_py()) for c in ds.cameras}


def video_bytes(ds: RoboDataset) -> int:
    """Bytes of every GOP ``ds``'s episodes reference (exact: the sum of their packets)."""
    table = _gops_of(ds, ["packet_sizes"])
    return int(pc.sum(pc.list_flatten(table["packet_sizes"])).as_py())


def _gops_of(ds: RoboDataset, columns: list[str]):
    episodes = ds.episodes()["episode_index"].to_pylist()
    gops = open_table(gops_uri(ds.uri), ds.storage_options)  # same dataset, same options
    # Full-resolution GOPs only: training renditions beside them are not the dataset's video.
    return gops.to_table(columns=columns, filter=full_resolution_only(gops, episode_filter(episodes)))


def quality_sample(
    ds: RoboDataset,
    uploads: Mapping[int, str | Path] | None,
    rows: np.ndarray,
    reader: LeRobotLayoutReader | None = None,
    paired: np.ndarray | None = None,
) -> dict[str, dict[str, list[np.ndarray]]]:
    """For each camera, the source frames of ``rows`` (decoded from the episode's upload, when
    ``uploads`` are known), the same frames read back from robodata and, with ``reader``, from the
    baseline sample ``paired[row]``: ``{camera: {"source": [...], "robodata": [...], "baseline": [...]}}``."""
    columns = [c for cam in ds.cameras for c in ref_columns(cam)[1:]] + ["episode_index"]
    refs = ds.to_table(columns=columns).take(rows.tolist()).to_pydict()
    gop_size = ds.metadata.gop_size
    decoded = ds.get_frames(rows)
    sample: dict[str, dict[str, list[np.ndarray]]] = {}
    for camera in ds.cameras:
        _, gop_column, in_gop_column = ref_columns(camera)
        # GOPs are G frames long except an episode's last, so this is the camera frame number.
        numbers = [g * gop_size + k for g, k in zip(refs[gop_column], refs[in_gop_column], strict=True)]
        sample[camera] = {"robodata": list(decoded.data[camera])}
        if uploads is not None:
            sample[camera]["source"] = _source_frames(uploads, camera, refs["episode_index"], numbers)
        if reader is not None and paired is not None:
            key = reader.video_key(camera)
            sample[camera]["baseline"] = [reader.get_item(int(paired[r]), [key])[key] for r in rows]
    return sample


def _source_frames(uploads: Mapping[int, str | Path], camera: str, episodes: list[int], numbers: list[int]):
    wanted: dict[int, dict[int, list[int]]] = {}
    for slot, (episode, number) in enumerate(zip(episodes, numbers, strict=True)):
        wanted.setdefault(episode, {}).setdefault(number, []).append(slot)
    frames: list[np.ndarray | None] = [None] * len(numbers)
    for episode, slots in wanted.items():
        stream = next(c for c in read_upload(str(uploads[episode])).cameras if c.name == camera)
        for number, (_, rgb) in enumerate(stream.frames()):
            for slot in slots.get(number, ()):
                frames[slot] = rgb
            if number >= max(slots):
                break
    return frames


def mean_psnr(references: list[np.ndarray], tests: list[np.ndarray]) -> float:
    """Mean per-frame PSNR (dB) of ``tests`` against ``references``."""
    return float(np.mean([psnr(r, t) for r, t in zip(references, tests, strict=True)]))


# Pillow's chroma subsampling choices: 4:2:0 saturates near 36 dB on camera video, so the
# search also tries 4:4:4 and keeps whichever reaches the target PSNR in fewer bytes.
JPEG_SUBSAMPLING = {"4:2:0": 2, "4:4:4": 0}


def matched_jpeg(frames: Mapping[str, list[np.ndarray]], target_psnr: float) -> dict:
    """The smallest JPEG setting (chroma subsampling, lowest quality) whose mean PSNR over
    ``frames`` (source frames per camera) reaches ``target_psnr``, with its PSNR and mean bytes
    per frame per camera. If none reaches it, the highest-PSNR setting tried.

    >>> matched_jpeg({"top": sources}, 38.5)["quality"]  # doctest: +SKIP
    87
    """
    candidates = [_lowest_quality(frames, target_psnr, name) for name in JPEG_SUBSAMPLING]
    reaching = [c for c in candidates if c["psnr"] >= target_psnr]
    if not reaching:
        return max(candidates, key=lambda c: c["psnr"])
    return min(reaching, key=lambda c: sum(c["bytes_per_frame"].values()))


def _lowest_quality(frames: Mapping[str, list[np.ndarray]], target_psnr: float, subsampling: str) -> dict:
    low, high = 1, 100
    best = _jpeg_at(frames, high, subsampling)
    while low < high:  # mean PSNR rises with quality, so bisect for the first quality reaching it
        middle = (low + high) // 2
        trial = _jpeg_at(frames, middle, subsampling)
        if trial["psnr"] >= target_psnr:
            best, high = trial, middle
        else:
            low = middle + 1
    return best


def _jpeg_at(frames: Mapping[str, list[np.ndarray]], quality: int, subsampling: str) -> dict:
    sizes: dict[str, float] = {}
    scores = []
    for camera, sources in frames.items():
        results = [jpeg_roundtrip(rgb, quality, JPEG_SUBSAMPLING[subsampling]) for rgb in sources]
        sizes[camera] = float(np.mean([size for size, _ in results]))
        scores += [psnr(rgb, decoded) for rgb, (_, decoded) in zip(sources, results, strict=True)]
    return {"quality": quality, "subsampling": subsampling, "psnr": float(np.mean(scores)), "bytes_per_frame": sizes}


def storage_figures(ds: RoboDataset, sample: dict[str, dict[str, list[np.ndarray]]]) -> dict:
    """Bytes and PSNR of robodata and of JPEG at matched PSNR over the whole of ``ds``."""
    sources = {camera: s["source"] for camera, s in sample.items()}
    robodata_psnr = mean_psnr(
        [f for s in sample.values() for f in s["source"]], [f for s in sample.values() for f in s["robodata"]]
    )
    jpeg = matched_jpeg(sources, robodata_psnr)
    counts = camera_frame_counts(ds)
    jpeg_bytes = sum(jpeg["bytes_per_frame"][c] * n for c, n in counts.items())
    own = video_bytes(ds)
    return {
        "camera_frames": sum(counts.values()),
        "robodata_video_bytes": own,
        "robodata_psnr_db": robodata_psnr,
        "jpeg_quality": jpeg["quality"],
        "jpeg_subsampling": jpeg["subsampling"],
        "jpeg_psnr_db": jpeg["psnr"],
        "jpeg_bytes": jpeg_bytes,
        "robodata_vs_jpeg_bytes": own / jpeg_bytes,
    }


def layout_storage(ds: RoboDataset, reader: LeRobotLayoutReader, sample: dict[str, dict]) -> dict:
    """robodata against the LeRobot-layout export of the same episodes: bytes and PSNR; against
    the source frames and JPEG too when the sample has them."""
    frames = {side: [f for s in sample.values() for f in s[side]] for side in next(iter(sample.values()))}
    own, theirs = video_bytes(ds), reader.video_bytes()
    figures = {
        "camera_frames": sum(camera_frame_counts(ds).values()),
        "robodata_video_bytes": own,
        "baseline_video_bytes": theirs,
        "robodata_vs_baseline_bytes": own / theirs,
        # The exporter encodes robodata's decoded frames, so this is the baseline's own loss.
        "baseline_psnr_vs_robodata_db": mean_psnr(frames["robodata"], frames["baseline"]),
    }
    if "source" in frames:
        figures.update(storage_figures(ds, sample))
        figures["baseline_psnr_db"] = mean_psnr(frames["source"], frames["baseline"])
        figures["baseline_vs_jpeg_bytes"] = theirs / figures["jpeg_bytes"]
    return figures
