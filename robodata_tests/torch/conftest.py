"""Fixtures for the training-loader tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from robodata.sample_data import write_sample_uploads


@pytest.fixture(scope="session")
def extra_upload(tmp_path_factory) -> Path:
    """One more short episode (index 3) to append to a copy of ``ingested``. Read-only."""
    return write_sample_uploads(tmp_path_factory.mktemp("extra"), episodes=1, seed=11, seconds=1.0, start_index=3)[0]


@pytest.fixture(scope="session")
def short_dataset(eight_short_uploads, tmp_path_factory) -> str:
    """Three half-second episodes (0-2) ingested: for tests that run training or export. Read-only."""
    import robodata

    root = str(tmp_path_factory.mktemp("short") / "ds")
    for upload in eight_short_uploads[:3]:
        robodata.ingest_episode(str(upload), root)
    return root
