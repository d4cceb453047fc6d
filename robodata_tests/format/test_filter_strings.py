"""Values reach a Lance filter string only validated (integers) or escaped (strings)."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

from robodata.format._ids import camera_filter, episode_filter

HOSTILE_NAMES = ["top", "o'brien", "x' OR '1'='1", "a''b", "cam; DROP TABLE gops --", 'say "hi"']


def test_camera_filter_selects_exactly_that_camera(tmp_path):
    table = lance.write_dataset(pa.table({"camera": HOSTILE_NAMES, "row": range(len(HOSTILE_NAMES))}), tmp_path / "t")
    for row, name in enumerate(HOSTILE_NAMES):
        assert table.to_table(filter=camera_filter(name))["row"].to_pylist() == [row]


@pytest.mark.parametrize("value", ["1) OR (1=1", "0", 1.5, True, -1, 2**63, None], ids=repr)
def test_episode_filter_takes_only_non_negative_integers(value):
    with pytest.raises(ValueError, match="episode_index must be a non-negative integer"):
        episode_filter([value])


def test_episode_filter_of_integers():
    assert episode_filter([3, 1]) == "episode_index IN (3, 1)"
