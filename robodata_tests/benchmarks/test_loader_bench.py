"""The loader benchmark's parts: process-tree memory, a timed DataLoader run, the table."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks.loader import _rss, format_throughput, robodata_throughput, tree_rss


def test_tree_rss_counts_child_processes():
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        own, child_rss = _rss(os.getpid()), 0
        while child_rss == 0:
            child_rss = _rss(child.pid)
        assert tree_rss() >= own + child_rss // 2
    finally:
        child.communicate(b"")


@pytest.mark.torch
@pytest.mark.slow
def test_throughput_row_reads_the_asked_samples(ingested):
    pytest.importorskip("torch")
    row = robodata_throughput(ingested, num_workers=0, batch_size=8, samples=20, cameras=["wrist_left"])
    assert (row["loader"], row["workers"], row["batch_size"], row["samples"]) == ("robodata", 0, 8, 24)
    table = format_throughput([row, {**row, "loader": "lerobot-layout", "samples_per_s": 1.0}])
    assert table.splitlines()[0].startswith("| workers | batch | robodata samples/s")
    assert table.splitlines()[2].startswith("| 0 | 8 | ")
