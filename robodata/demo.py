"""The README's demo: sample uploads -> dataset -> summary, one decoded frame as PNG."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm import tqdm

from robodata.bench.quality import jpeg_roundtrip, psnr
from robodata.ingest import ingest_episode
from robodata.reader import open_dataset
from robodata.sample_data import write_sample_uploads
from robodata.summary import dataset_summary


def run_demo(workdir: str, episodes: int = 4, seconds: float = 4.0) -> dict:
    root = Path(workdir).resolve()
    uploads = write_sample_uploads(root / "uploads", episodes=episodes, seconds=seconds)
    dataset = str(root / "dataset")
    for upload in tqdm(uploads, desc="ingest", unit="episode"):
        ingest_episode(str(upload), dataset)
    return report(dataset, root)


def report(dataset: str, out: Path) -> dict:
    summary = dataset_summary(dataset)
    ds = open_dataset(dataset)
    column = ds.image_columns[0]
    rows = np.linspace(0, len(ds) - 1, 24).astype(int)
    frames = ds.take_blobs_decoded(column, rows)[column]
    jpeg = [jpeg_roundtrip(f, 90) for f in frames]
    video_per_frame = _video_bytes_per_frame(ds, column)
    summary["video_vs_jpeg"] = {
        "camera": column,
        "h264_bytes_per_frame": round(video_per_frame),
        "jpeg_q90_bytes_per_frame": round(float(np.mean([size for size, _ in jpeg]))),
        "jpeg_q90_psnr_db": round(float(np.mean([psnr(f, j) for f, (_, j) in zip(frames, jpeg, strict=True)])), 2),
    }
    png = out / "frame.png"
    Image.fromarray(ds[len(ds) // 2][column]).save(png)
    summary["frame_png"] = str(png)
    print(json.dumps(summary, indent=2))
    return summary


def _video_bytes_per_frame(ds, column: str) -> float:
    from robodata.format.ids import camera_filter
    from robodata.format.schema import camera_of
    from robodata.format.tables import gops_uri, open_table

    camera = camera_of(column, ds.cameras)
    gops = open_table(gops_uri(ds.uri))
    table = gops.to_table(columns=["n_frames", "packet_sizes"], filter=camera_filter(camera))
    frames = sum(table["n_frames"].to_pylist())
    total = sum(sum(p) for p in table["packet_sizes"].to_pylist())
    return total / max(frames, 1)
