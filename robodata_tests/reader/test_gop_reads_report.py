"""The GOP-reads report (``python -m robodata_tests.reader.gop_reads_report``) prints both read paths for every read it times, and says when a
dataset's GOPs are not read in place."""

from __future__ import annotations

import re

from robodata.integrity._local_gop_files import LocalGopFiles
from robodata_tests.reader.gop_reads_report import main as report


def test_prints_both_paths_and_their_ratio_for_each_read(ingested, capsys):
    assert report([ingested, "--rounds", "1", "--calls", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    figures = {line[:34].strip(): line[34:] for line in lines[2:]}
    assert list(figures) == ["GOP bytes of a window", "ds[i]", "8-frame window x 3 cameras", "batch of 32 rows"]
    for row in figures.values():
        lance_ms, direct_ms, ratio = map(float, re.fullmatch(r"\s*([\d.]+) ms\s+([\d.]+) ms\s+([\d.]+)x", row).groups())
        assert lance_ms > 0 and direct_ms > 0
        # the ratio of the unrounded medians: within what rounding each to 0.01 ms allows
        assert (
            (lance_ms - 0.005) / (direct_ms + 0.005) - 0.005
            <= ratio
            <= (lance_ms + 0.005) / (direct_ms - 0.005) + 0.005
        )


def test_a_dataset_not_read_in_place_is_named(ingested, capsys, monkeypatch):
    monkeypatch.setattr(LocalGopFiles, "of", classmethod(lambda cls, gops, row_ids: None))
    assert report([ingested, "--rounds", "1", "--calls", "3"]) == 1
    assert (
        capsys.readouterr().out
        == f"{ingested}: its GOPs are not read in place (remote, or not inline): nothing to compare\n"
    )
