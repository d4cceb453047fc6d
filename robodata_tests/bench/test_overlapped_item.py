"""read_item: ds[i] with the GOP fetch overlapping the row read returns exactly ds[i]."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.reader.overlapped_item import read_item


def test_read_item_is_exactly_ds_getitem(ingested):
    ds = robodata.open(ingested)
    for index in (0, 1, len(ds) // 2, len(ds) - 1):
        ours, expected = read_item(ds, index), ds[index]
        assert list(ours) == list(expected)
        for name, value in expected.items():
            if isinstance(value, np.ndarray):
                assert ours[name].dtype == value.dtype
                np.testing.assert_array_equal(ours[name], value)
            else:
                assert ours[name] == value
    assert ours["observation_images_top"].shape == (480, 640, 3)


def test_read_item_rejects_a_row_out_of_range(ingested):
    ds = robodata.open(ingested)
    with pytest.raises(IndexError, match=f"row {len(ds)} is out of range"):
        read_item(ds, len(ds))
