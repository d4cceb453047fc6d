"""The two shipped Dagster instance configs (the embedded default and the cluster's) bound runs
the same way, and the docs state the bounds they set."""

from pathlib import Path

import pytest
import yaml

from robodata.orchestration import INSTANCE_CONFIG

REPO = Path(__file__).resolve().parents[2]
CLUSTER_CONFIG = REPO / "deploy" / "dagster.yaml"
TIMES = {1: "once", 2: "twice"}


def _config(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _page(name: str) -> str:
    """A docs page with its line breaks and table padding folded into single spaces."""
    return " ".join((REPO / "docs" / name).read_text().split())


def test_the_embedded_and_the_cluster_config_retry_and_time_out_alike():
    local, cluster = _config(INSTANCE_CONFIG), _config(CLUSTER_CONFIG)
    assert (
        local["run_retries"]
        == cluster["run_retries"]
        == {
            "enabled": True,
            "max_retries": 2,
            "retry_on_asset_or_op_failure": False,  # a bad upload fails once
        }
    )
    # Only the poll interval differs: the cluster's bounds a lost worker's run (docs/cluster.md).
    same = {k: v for k, v in local["run_monitoring"].items() if k != "poll_interval_seconds"}
    assert same == {k: v for k, v in cluster["run_monitoring"].items() if k != "poll_interval_seconds"}
    assert same["enabled"] and same["max_resume_run_attempts"] == 0  # failed, then retried


def test_the_docs_state_the_bounds_the_configs_set():
    local = _config(INSTANCE_CONFIG)
    monitoring, retries = local["run_monitoring"], local["run_retries"]
    dagster_md = _page("dagster.md")
    for said in (
        f"fails after {monitoring['start_timeout_seconds']} s",
        f"marked canceled after {monitoring['cancel_timeout_seconds']} s",
        f"checked every {monitoring['poll_interval_seconds']} s",
        f"freed after {monitoring['free_slots_after_run_end_seconds']} s",
        f"up to {TIMES[retries['max_retries']]}",
        "`retry_on_asset_or_op_failure: false`",
    ):
        assert said in dagster_md, said

    cluster = _config(CLUSTER_CONFIG)
    monitoring, retries = cluster["run_monitoring"], cluster["run_retries"]
    lost_after = cluster["run_launcher"]["config"]["lost_after_seconds"]
    lost_bound = 2 * monitoring["poll_interval_seconds"] + lost_after  # a poll, unseen that long, a poll
    cluster_md = _page("cluster.md")
    for said in (
        f"`start_timeout_seconds`; retried | {monitoring['start_timeout_seconds']} s |",
        f"`cancel_timeout_seconds` | {monitoring['cancel_timeout_seconds']} s |",
        f"`free_slots_after_run_end_seconds` | {monitoring['free_slots_after_run_end_seconds']} s |",
        f"`lost_after_seconds` ({lost_after})",
        f"**{lost_bound} s**",
        f"retried at most {TIMES[retries['max_retries']]}",
        "(`retry_on_asset_or_op_failure: false`)",
    ):
        assert said in cluster_md, said


def test_the_cluster_config_opens_without_postgres_and_code_servers_wait_for_it(monkeypatch, tmp_path):
    """What lets the daemon's code servers load during a PostgreSQL outage (docs/cluster.md):
    opening the storage does not connect, the definitions' state is read by the storage that
    waits, a code server may take that wait plus a load to start, and the docs give the figures."""
    import dagster as dg
    from dagster_postgres.utils import DagsterPostgresException

    from robodata.orchestration.cluster.defs_state import PatientDefsStateStorage

    cluster = _config(CLUSTER_CONFIG)
    assert cluster["storage"]["custom"]["config"]["should_autocreate_tables"] is False
    state = cluster["defs_state_storage"]
    assert (state["module"], state["class"]) == (PatientDefsStateStorage.__module__, PatientDefsStateStorage.__name__)
    wait, startup = state["config"]["wait_seconds"], cluster["code_servers"]["local_startup_timeout"]
    assert wait + 60 <= startup
    cluster_md = _page("cluster.md")
    assert (
        f"`wait_seconds`, {wait})" in cluster_md and f"`code_servers.local_startup_timeout` ({startup} s)" in cluster_md
    )

    # The instance opens with PostgreSQL unreachable (nothing listens on the port), with the
    # storage and the defs-state storage deploy/dagster.yaml names; reading the state then fails
    # with dagster-postgres's error once the (here 1 s) wait is spent.
    home = tmp_path / "home"
    home.mkdir()
    config = CLUSTER_CONFIG.read_text().replace("wait_seconds: 120", "wait_seconds: 1")
    (home / "dagster.yaml").write_text(config)
    for name, value in {
        "DAGSTER_HOME": str(home), "DAGSTER_PG_HOST": "127.0.0.1", "DAGSTER_PG_PORT": "9",
        "DAGSTER_PG_USER": "u", "DAGSTER_PG_PASSWORD": "p", "DAGSTER_PG_DB": "d",
        "DAGSTER_CELERY_BROKER_URL": "redis://127.0.0.1:9/0", "DAGSTER_CELERY_BACKEND_URL": "redis://127.0.0.1:9/1",
        "ROBODATA_PG_CONNECT_WAIT_S": "1",  # each connect's own wait for PostgreSQL (postgres_storage)
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    with dg.DagsterInstance.get() as instance:
        storage = instance.defs_state_storage
        assert isinstance(storage, PatientDefsStateStorage) and storage.wait_seconds == 1
        assert str(storage.base_path) == str(home / "storage" / "defs_state")
        with pytest.raises(DagsterPostgresException, match="too many retries for DB connection"):
            storage.get_latest_defs_state_info()
