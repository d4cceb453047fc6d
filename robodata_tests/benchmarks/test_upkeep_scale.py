"""``robodata bench upkeep``: episodes ingested one by one through the public API, read costs
before and after upkeep."""

from __future__ import annotations

import argparse
import re

from benchmarks.upkeep_scale import main


def test_upkeep_folds_one_fragment_and_version_per_ingest(capsys):
    assert main(argparse.Namespace(episodes=4, where=["local"])) == 0
    out = capsys.readouterr().out
    assert [int(n) for n in re.findall(r"ingest at +(\d+) fragments", out)] == [1, 2, 3, 4]
    rows = {line.split()[1]: line.split() for line in out.splitlines() if line.split()[:1] == ["local"]}
    # before: one fragment and one version per ingest (the first creates the table); after: one of each
    assert (rows["before"][2], rows["before"][3]) == ("4", "4")
    assert (rows["after"][2], rows["after"][3]) == ("1", "1")
