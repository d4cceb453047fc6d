"""The project's definitions plus the ingest job on Dagster's multiprocess executor (a process per
step), for ``robodata bench landing`` to compare against the in-process job."""

import dagster as dg

import robodata.orchestration.definitions
from robodata.orchestration.defs.ingest.jobs import INGEST_SELECTION

ingest_episode_multiprocess = dg.define_asset_job(
    "ingest_episode_multiprocess", selection=INGEST_SELECTION, executor_def=dg.multiprocess_executor
)

defs = dg.Definitions.merge(
    robodata.orchestration.definitions.defs(), dg.Definitions(jobs=[ingest_episode_multiprocess])
)
