"""Shared fixtures: sample uploads made once per session, fresh dataset roots per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from robodata.sample_data import write_sample_uploads

# Real footage ships inside the repository: no test reads outside it.
TESTDATA = Path(__file__).resolve().parent / "data"
REAL_VIDEO = TESTDATA / "carphone_pristine.mp4"


@pytest.fixture(scope="session")
def sample_uploads(tmp_path_factory) -> list[Path]:
    """Three short sample episodes (2 s each) in the upload format. Treat as read-only."""
    return write_sample_uploads(tmp_path_factory.mktemp("uploads"), episodes=3, seed=7, seconds=2.0)


@pytest.fixture
def uploads(sample_uploads, tmp_path) -> list[Path]:
    """A private, writable copy of the sample uploads."""
    copies = []
    for upload in sample_uploads:
        target = tmp_path / "uploads" / upload.name
        shutil.copytree(upload, target)
        copies.append(target)
    return copies


@pytest.fixture(scope="session")
def ingested(sample_uploads, tmp_path_factory) -> str:
    """A dataset holding the three sample episodes. Treat as read-only."""
    import robodata

    root = str(tmp_path_factory.mktemp("dataset") / "ds")
    for upload in sample_uploads:
        robodata.ingest_episode(str(upload), root)
    return root


@pytest.fixture
def dataset_copy(ingested, tmp_path) -> str:
    """A private, writable copy of the ingested dataset."""
    target = tmp_path / "ds"
    shutil.copytree(ingested, target)
    return str(target)


pytest_plugins = ["robodata_tests.fixtures.s3_server"]


@pytest.fixture(scope="session")
def eight_short_uploads(tmp_path_factory) -> list[Path]:
    """Eight half-second sample episodes (indices 0-7): cheap enough for many ingests. Read-only."""
    return write_sample_uploads(tmp_path_factory.mktemp("short-uploads"), episodes=8, seed=11, seconds=0.5)
