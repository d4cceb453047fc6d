"""robodata's side of the peers benchmark's dataset: the footage ingested at the run's GOP size and
CRF, the training rendition at the policy's size, and which way robodata reads at that size in
this run (``resolution=`` or decoded frames resized like the peers').
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from benchmarks.ingest_speed import summarize as summarize_ingest
from benchmarks.ingest_speed import timed_ingest
from benchmarks.peers.peer_protocol import runner_env
from robodata.codec import EncoderSettings


def ingest_footage(uploads: dict[int, Path], uri: str, gop_size: int | None, crf: int | None) -> dict:
    """Ingest the footage into ``uri`` at ``gop_size``/``crf`` (robodata's defaults unless given), timed."""
    defaults = EncoderSettings()
    gop, quality = gop_size or defaults.gop_size, crf or defaults.crf
    if quality == defaults.crf:
        timings = timed_ingest(list(uploads.values()), uri, gop)
    else:  # timed_ingest encodes at the default CRF
        from robodata.ingest import ingest_episode

        timings = []
        for upload in uploads.values():
            start = time.perf_counter()
            ingest_episode(str(upload), uri, settings=EncoderSettings(gop_size=gop, crf=quality))
            timings.append({"seconds": time.perf_counter() - start})
        return {"gop_size": gop, "crf": quality, "seconds": sum(t["seconds"] for t in timings)}
    return {**summarize_ingest(timings), "gop_size": gop, "crf": quality}


def add_training_rendition(uri: str, sizes, storage_options: dict | None = None) -> dict | None:
    """Add a training rendition at the policy's size to the freshly ingested benchmark dataset,
    where this robodata can (``robodata.ingest._renditions.add_rendition``, from the renditions
    work); None otherwise, and robodata reads at that size by resizing decoded frames like the
    peers. The runner picks ``resolution=`` on its own where the readers take it."""
    size = next((s for s in sizes if s is not None), None)
    if size is None:
        return None
    try:
        from robodata.ingest import add_rendition
    except ImportError:
        return None
    start = time.perf_counter()
    done = add_rendition(uri, tuple(size), storage_options=storage_options)
    return {
        "size": list(size),
        "seconds": time.perf_counter() - start,
        "bytes": getattr(done, "bytes_written", None),
        "result": repr(done),
    }


def robodata_size_path() -> str:
    """How robodata reads at the policy's size in this run (asked of the runner's own code)."""
    code = "from benchmarks.peers.runner_robodata import robodata_takes_resolution; print(robodata_takes_resolution())"
    done = subprocess.run(
        [sys.executable, "-c", code],  # runner_env puts this checkout on the path, as for a runner
        capture_output=True,
        text=True,
        env=runner_env(sys.executable),
        check=False,
    )
    takes = done.stdout.strip().endswith("True")
    return "resolution= (training renditions)" if takes else "decoded frames resized like the peers'"
