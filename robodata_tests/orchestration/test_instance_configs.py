"""The two shipped Dagster instance configs (the embedded default and the cluster's) bound runs
the same way, and the docs state the bounds they set."""

from pathlib import Path

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
