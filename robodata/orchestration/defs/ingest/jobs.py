"""The job ingesting one episode (one partition of ``episodes``) end to end, checks included; with
batch partitioning, ``batches/batches.py``'s ``ingest_batch`` runs the same assets per batch."""

import dagster as dg

from robodata.orchestration.defs.ingest.episodes import aligned_frames, gop_blobs, raw_episodes
from robodata.orchestration.defs.resources import PER_EPISODE, with_partitioning

# The asset keys are the same in both partitionings (robodata.orchestration.defs.batches.batches keeps them).
INGEST_SELECTION = dg.AssetSelection.assets(raw_episodes, gop_blobs, aligned_frames)

# It runs on the code location's executor (robodata.orchestration.defs.execution): one process per run.
ingest_episode_job = dg.define_asset_job(
    "ingest_episode",
    selection=INGEST_SELECTION,
    description="Validate one upload, write its GOPs and its aligned rows, run the episode checks (one process).",
)

defs = with_partitioning(PER_EPISODE, dg.Definitions(jobs=[ingest_episode_job]))
