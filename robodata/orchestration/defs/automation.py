"""Declarative automation, where an asset needs neither run config nor an outside event: the
benchmark report is measured again once a night after new episodes landed. Everything else is
started by a sensor, a schedule or a person (docs/dagster.md says why), so one automation sensor,
running from the start, evaluates the conditions (Dagster's own default sensor starts stopped)."""

import dagster as dg

# 04:00, after the nightly upkeep (03:00): the report measures the compacted dataset.
REPORT_CRON = "0 4 * * *"


def report_automation() -> dg.AutomationCondition:
    """``benchmark_report``'s condition: at the nightly tick, when ``aligned_frames`` (any episode)
    was materialized since the report was last requested or materialized, and no report is
    running. (Dagster's ``on_cron`` waits after the tick for new upstream data, which would
    measure the day's first episode.) Its default run measures through ``robodata.measure``, which
    ships in the wheel, so the condition holds on an installed robodata too.

    >>> report_automation().get_label()
    'nightly after new episodes'
    """
    new_episodes = dg.AutomationCondition.any_deps_updated().since(
        dg.AutomationCondition.newly_requested() | dg.AutomationCondition.newly_updated()
    )
    nightly = dg.AutomationCondition.cron_tick_passed(REPORT_CRON)
    return (nightly & new_episodes & ~dg.AutomationCondition.in_progress()).with_label("nightly after new episodes")


automation_sensor = dg.AutomationConditionSensorDefinition(
    "robodata_automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Evaluates the assets' automation conditions (the nightly benchmark report after new episodes).",
)

defs = dg.Definitions(sensors=[automation_sensor])
