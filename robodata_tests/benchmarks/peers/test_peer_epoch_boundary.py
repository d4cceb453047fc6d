"""The runner's part of ``robodata bench s3-epoch --peers``: a loader measurement with warm epochs
calls the harness's epoch boundary once, between the warm epoch and the timed one, and the
result says how long opening the system took."""

from __future__ import annotations

import sys

from benchmarks.peers.peer_protocol import run_job
from benchmarks.s3_peers import EpochBoundary
from benchmarks.s3_store import LatencyProxy, request_kind


def test_a_runner_calls_the_epoch_boundary_once_between_its_epochs(ingested):
    with LatencyProxy(("127.0.0.1", 9), latency_s=0.0) as proxy:
        boundary = EpochBoundary(proxy, None)
        try:
            measurement = {
                "name": "D",
                "kind": "loader",
                "batches": [[0], [1]],  # how many batches the timed epoch reads
                "batch_size": 16,
                "workers": 0,
                "seed": 0,
                "warm_epochs": 1,
                "epoch_boundary": list(boundary.address),
            }
            result = run_job(sys.executable, {"system": "robodata", "root": ingested, "measurements": [measurement]})
        finally:
            boundary.close()
    assert boundary.marks == [(0, 0.0)]  # called once; nothing went through the proxy
    assert isinstance(result["open_s"], float)
    assert result["measurements"][0]["samples"] == [16, 16]


def test_lancedbs_video_table_is_named_in_the_store_record():
    assert request_kind("GET", "/b/run/lance/videos.lance/data/0.lance") == "videos.lance data"
    assert request_kind("GET", "/b/run/lance/videos.lance/_versions/1.manifest") == "videos.lance manifests"
