"""The benchmark report's automation condition: requested once after each nightly tick in which
new episodes landed, never without them; the automation sensor evaluating it runs from the start."""

from datetime import UTC, datetime, timedelta

import dagster as dg

from robodata.orchestration.defs import automation
from robodata.orchestration.defs.ingest.episodes import EPISODE_ASSETS
from robodata.orchestration.defs.reports.benchmark import benchmark_report
from robodata_tests.orchestration.conftest import EPISODE_KEYS


def test_the_report_is_requested_once_a_night_after_new_episodes_only():
    defs = dg.Definitions(
        assets=[*EPISODE_ASSETS, benchmark_report], resources={"store": dg.ResourceDefinition.none_resource()}
    )
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("episodes", EPISODE_KEYS)
    cursor = None

    def requested_at(when: datetime) -> int:
        """Runs of benchmark_report requested by an evaluation at ``when``; every other asset: none."""
        nonlocal cursor
        result = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor, evaluation_time=when)
        cursor = result.cursor
        report = result.get_num_requested(benchmark_report.key)
        assert result.total_requested == report
        return report

    night = datetime(2026, 12, 2, 4, 0, tzinfo=UTC)
    assert requested_at(night - timedelta(hours=12)) == 0
    instance.report_runless_asset_event(dg.AssetMaterialization("aligned_frames", partition=EPISODE_KEYS[0]))
    assert requested_at(night - timedelta(hours=6)) == 0  # new episodes, but the night has not come
    assert requested_at(night + timedelta(minutes=1)) == 1
    assert requested_at(night + timedelta(minutes=30)) == 0  # once
    assert requested_at(night + timedelta(days=1, minutes=1)) == 0  # a night without new episodes
    instance.report_runless_asset_event(dg.AssetMaterialization("aligned_frames", partition=EPISODE_KEYS[1]))
    assert requested_at(night + timedelta(days=1, hours=9)) == 0
    assert requested_at(night + timedelta(days=2, minutes=1)) == 1


def test_the_automation_sensor_runs_from_the_start():
    assert automation.automation_sensor.default_status == dg.DefaultSensorStatus.RUNNING
