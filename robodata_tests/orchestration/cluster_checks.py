"""What the cluster tests (test_cluster.py, test_cluster_run_faults.py) share: the cluster's
instance as the test process sees it, and the rows a sample upload must land as."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow.parquet as pq
import pytest

from benchmarks.orchestration.cluster import Cluster, cluster_instance
from robodata.sample_data import write_sample_episode

# The upload sensor's tick on the tests' clusters (ROBODATA_SENSOR_INTERVAL_S; 30 s by default).
SENSOR_INTERVAL_S = 5
# What the cluster test modules are: slow, started first on their test worker, and allowed the
# walk-through's own 25 minutes on a slow machine (pytest-timeout's 10 minutes in pyproject.toml
# are for everything else).
CLUSTER_TEST_MARKS = [pytest.mark.slow, pytest.mark.scheduled_first, pytest.mark.timeout(3600)]


@contextlib.contextmanager
def checked_instance(cluster: Cluster) -> Iterator[dg.DagsterInstance]:
    """The cluster's PostgreSQL-backed instance, seen from the test process."""
    with cluster_instance(cluster) as inst:
        storage = inst.get_ref().storage_data
        assert (storage.module_name, storage.class_name) == (
            "robodata.orchestration.cluster.postgres_storage",
            "PostgresStorage",
        )
        yield inst


def expected_rows(tmp_path: Path, index: int, seconds: float, seed: int = 0) -> int:
    """Rows of sample episode ``index`` as ``robodata sample-data --seed SEED`` writes it."""
    folder = write_sample_episode(tmp_path / "expected", index, np.random.default_rng([seed, index]), seconds)
    return pq.read_metadata(folder / "states.parquet").num_rows
