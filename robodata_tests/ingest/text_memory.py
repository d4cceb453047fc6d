"""Peak memory of ``robodata ingest`` for an episode with many rows and long episode texts
(``task``, ``language_instruction``), measured in a subprocess (its own peak RSS).

    python -m robodata_tests.ingest.text_memory --rows 200000 --chars 4000

prints the peak RSS with the texts at ``--chars`` characters and at a few characters: the
difference is what the texts cost. Stored once per row as plain strings it is rows x chars x 2
texts (200,000 x 4,000 x 2 = 1.6 GB) and more for the copies the write makes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from robodata_tests.peak_memory import robodata_peak_rss_mb

REPO = Path(__file__).resolve().parents[2]
JOINTS = 2
VIDEO_S = 4.0
CAMERA_FPS = 30


def write_upload(folder: Path, rows: int, chars: int) -> Path:
    """An upload of ``rows`` state rows over a 4 s, 64x48 video (states must lie within the video,
    so control_hz is what the rows make it: 50 kHz for 200,000), with ``task`` and
    ``language_instruction`` of ``chars`` characters each."""
    folder.mkdir(parents=True, exist_ok=True)
    n_frames = int(VIDEO_S * CAMERA_FPS)
    with av.open(str(folder / "top.mp4"), "w") as container:
        stream = container.add_stream("libx264", rate=Fraction(CAMERA_FPS))
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.options = {"preset": "ultrafast"}
        for t in range(n_frames):
            rgb = np.full((48, 64, 3), (t * 4) % 256, np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    span_ns = int((n_frames - 1) / CAMERA_FPS * 1e9)
    timestamps = np.linspace(0, span_ns, rows).astype(np.int64)
    state = np.zeros((rows, JOINTS), np.float32)
    pq.write_table(
        pa.table(
            {
                "timestamp_ns": timestamps,
                "observation_state": pa.FixedSizeListArray.from_arrays(pa.array(state.reshape(-1)), JOINTS),
                "action": pa.FixedSizeListArray.from_arrays(pa.array(state.reshape(-1)), JOINTS),
            }
        ),
        folder / "states.parquet",
    )
    text = ("pick up the red cube and put it in the bin; " * (chars // 44 + 1))[:chars]
    meta = {
        "episode_index": 0,
        "task": text,
        "language_instruction": text[::-1],
        "joint_names": [f"j{i}" for i in range(JOINTS)],
        "control_hz": round((rows - 1) / (span_ns / 1e9)),
        "cameras": {"top": {"file": "top.mp4"}},
    }
    (folder / "episode.json").write_text(json.dumps(meta))
    return folder


def peak_ingest_rss_mb(upload: Path, dataset: Path) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MB) of ``robodata ingest upload dataset`` in a subprocess."""
    return robodata_peak_rss_mb("ingest", str(upload), str(dataset))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--chars", type=int, default=4_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="robodata-text-memory-") as scratch:
        for chars in (8, args.chars):
            upload = write_upload(Path(scratch) / f"uploads-{chars}" / "episode_000000", args.rows, chars)
            code, err, peak = peak_ingest_rss_mb(upload, Path(scratch) / f"ds-{chars}")
            data = sum(
                f.stat().st_size for f in (Path(scratch) / f"ds-{chars}" / "frames.lance").rglob("*") if f.is_file()
            )
            print(
                f"rows {args.rows:,}, texts of {chars:,} characters: exit {code}, peak RSS {peak:,.0f} MB, "
                f"frames.lance {data / 1e6:,.1f} MB {err.strip()[-300:] if code else ''}"
            )


if __name__ == "__main__":
    main()
