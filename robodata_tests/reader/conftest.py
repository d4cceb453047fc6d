"""Fixtures for the training-loader tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from robodata.sample_data import write_sample_uploads


@pytest.fixture(scope="session")
def extra_upload(tmp_path_factory) -> Path:
    """One more short episode (index 3) to append to a copy of ``ingested``. Read-only."""
    return write_sample_uploads(tmp_path_factory.mktemp("extra"), episodes=1, seed=11, seconds=1.0, start_index=3)[0]
