"""Fixtures for the training-loader tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from robodata_tests.fixtures.built_once import sample_uploads_once


@pytest.fixture(scope="session")
def extra_upload(request, tmp_path_factory) -> Path:
    """One more short episode (index 3) to append to a copy of ``ingested``. Read-only."""
    [upload] = sample_uploads_once(
        request.config, tmp_path_factory, "extra-upload", episodes=1, seed=11, seconds=1.0, start_index=3
    )
    return upload
