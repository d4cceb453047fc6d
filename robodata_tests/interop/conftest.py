"""An export of the shared sample dataset, made once: AV1 encoding is the slow part of these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from robodata.lerobot import export_lerobot
from robodata_tests.fixtures.built_once import built_once


@pytest.fixture(scope="session")
def exported(ingested, request, tmp_path_factory) -> str:
    """The sample dataset (3 episodes) as LeRobot v3, 2 episodes per file. Treat as read-only."""

    def export(folder: Path) -> None:
        export_lerobot(ingested, folder / "sample_lerobot", episodes_per_file=2, progress=False)

    return str(built_once(request.config, tmp_path_factory, "sample-lerobot", export) / "sample_lerobot")
