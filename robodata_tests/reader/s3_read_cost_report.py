"""Print what reads cost on object storage, counted at a moto S3 server started for the purpose:
``python -m robodata_tests.reader.s3_read_cost_report`` (two 4-second sample episodes, about a minute).
The README's request-count table comes from this; test_s3_read_cost.py asserts the bounds."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

import robodata
from robodata.sample_data import write_sample_uploads
from robodata_tests.fixtures.s3_server import S3Server


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        server = S3Server(Path(tmp) / "s3")
        server.start()
        try:
            _report(server, write_sample_uploads(Path(tmp) / "uploads", episodes=2, seed=5, seconds=4.0))
        finally:
            server.stop()


def _report(server: S3Server, uploads: list[Path]) -> None:
    root, options = server.uri("read-cost"), server.storage_options
    for upload in uploads:
        robodata.ingest_episode(str(upload), root, storage_options=options)

    def cost(label: str, read) -> None:
        mark = server.mark()
        read()
        requests = server.requests(mark)
        gets = sum(r.method == "GET" and not r.is_list for r in requests)
        print(f"| {label} | {gets} | {len(requests) - gets} |")

    top = "top"
    print("| read | GET | other (LIST/HEAD) |\n| --- | --- | --- |")
    cost("`robodata.open`", lambda: robodata.open(root, storage_options=options))
    ds = robodata.open(root, storage_options=options)
    cost("first frame (loads row and GOP indexes, one GOP file footer)", lambda: ds.get_frames([0], cameras=top))
    cost("first frame from the other episode's GOP file", lambda: ds.get_frames([len(ds) - 1], cameras=top))
    cost("one frame, warm", lambda: ds.get_frames([250], cameras=top))
    cost("64 consecutive rows, one camera", lambda: ds.get_frames(np.arange(200, 264), cameras=top))
    rows = np.random.default_rng(0).choice(len(ds), 64, replace=False)
    cost("64 random rows x 3 cameras (192 frames)", lambda: ds.get_frames(rows))
    cost("`ds[i]`: row values and 3 cameras", lambda: ds[321])
    cost("8-row window, one camera", lambda: ds.get_windows([300], range(-7, 1), cameras=top))
    print(f"\n{len(ds)} rows, {len(uploads)} episodes of 4 s, GOP size {ds.metadata.gop_size}")


if __name__ == "__main__":
    main()
