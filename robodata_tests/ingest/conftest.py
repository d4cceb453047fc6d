"""The ingest tests' shared fixture: what the stored episodes decode to before any bad input."""

from __future__ import annotations

import numpy as np
import pytest

import robodata


@pytest.fixture(scope="module")
def stored_frames(ingested) -> tuple[list[int], dict[str, np.ndarray]]:
    """Rows from each stored episode, and their decoded frames before any bad input arrived."""
    ds = robodata.open(ingested)
    rows = sorted({0, len(ds) // 2, len(ds) - 1})
    return rows, ds.get_frames(rows).data
