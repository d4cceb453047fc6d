"""Fixtures for the Dagster layer: short sample uploads, a temporary dataset store, and helpers
that materialize through Dagster exactly as the UI or the demo would."""

import shutil
from pathlib import Path

import dagster as dg
import pytest

from robodata.orchestration.defs.ingest import checks, episodes
from robodata.orchestration.defs.resources import DatasetStore
from robodata_tests.fixtures.built_once import sample_uploads_once

EPISODE_ASSETS = [episodes.raw_episodes, episodes.gop_blobs, episodes.aligned_frames]
EPISODE_KEYS = ["episode_000000", "episode_000001", "episode_000002"]


@pytest.fixture(scope="session")
def short_uploads(request, tmp_path_factory) -> list[Path]:
    """Three 1-second sample episodes in the upload format. Treat as read-only."""
    return sample_uploads_once(request.config, tmp_path_factory, "defs-uploads", episodes=3, seed=11, seconds=1.0)


def make_store(base: Path, uploads: list[Path]) -> DatasetStore:
    """A store at ``base/dataset`` fed from a private copy of ``uploads`` in ``base/uploads``."""
    for upload in uploads:
        shutil.copytree(upload, base / "uploads" / upload.name)
    return DatasetStore(root=str(base / "dataset"), uploads_root=str(base / "uploads"))


def batch_store(base: Path, layout: dict[str, list[Path]]) -> DatasetStore:
    """A store whose uploads root holds ``layout``: batch id -> upload folders (copied)."""
    for batch, uploads in layout.items():
        for upload in uploads:
            shutil.copytree(upload, base / "uploads" / batch / upload.name)
    return DatasetStore(root=str(base / "dataset"), uploads_root=str(base / "uploads"))


@pytest.fixture
def store(tmp_path, short_uploads) -> DatasetStore:
    return make_store(tmp_path, short_uploads)


def new_instance(store: DatasetStore) -> dg.DagsterInstance:
    """An ephemeral instance with one partition per upload in ``store``."""
    instance = dg.DagsterInstance.ephemeral()
    episodes.register_uploads(instance, store)
    return instance


def materialize_episode(instance, store, key: str, assets=None, **kwargs) -> dg.ExecuteInProcessResult:
    """Materialize one episode partition in-process (checks included unless ``assets`` is given)."""
    return dg.materialize(
        assets if assets is not None else [*EPISODE_ASSETS, *checks.episode_checks],
        partition_key=key,
        instance=instance,
        resources={"store": store},
        **kwargs,
    )


def metadata_of(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    [materialization] = result.asset_materializations_for_node(asset)
    return {key: value.value for key, value in materialization.metadata.items()}


def data_version_of(result: dg.ExecuteInProcessResult, asset: str) -> str:
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key.to_user_string() == asset]
    return event.materialization.tags["dagster/data_version"]
