"""An export of the shared sample dataset, made once: AV1 encoding is the slow part of these tests."""

from __future__ import annotations

import pytest

from robodata.interop import export_lerobot


@pytest.fixture(scope="session")
def exported(ingested, tmp_path_factory) -> str:
    """The sample dataset (3 episodes) as LeRobot v3, 2 episodes per file. Treat as read-only."""
    root = tmp_path_factory.mktemp("lerobot") / "sample_lerobot"
    export_lerobot(ingested, root, episodes_per_file=2, progress=False)
    return str(root)
