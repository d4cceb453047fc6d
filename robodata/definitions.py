"""The Dagster entry point (workspace.yaml, ``dagster dev``, ``dagster asset materialize -m``).

Each ``robodata/defs/<domain>.py`` exposes its own ``defs``; add a domain with one import here.
"""

import dagster as dg

from robodata.defs import (
    annotations,
    batches,
    benchmark,
    checks,
    episodes,
    interop,
    jobs,
    maintenance,
    renditions,
    resources,
    sensors,
    snapshots,
)

defs = dg.Definitions.merge(
    resources.defs,
    episodes.defs,
    batches.defs,
    checks.defs,
    jobs.defs,
    sensors.defs,
    annotations.defs,
    snapshots.defs,
    benchmark.defs,
    interop.defs,
    maintenance.defs,
    renditions.defs,
)
