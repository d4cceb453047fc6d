"""Jobs: ingesting one episode (one partition of ``episodes``) or, with batch partitioning, one
upload batch (one partition of ``upload_batches``) end to end, checks included."""

import dagster as dg

from robodata.defs.ingest.episodes import aligned_frames, gop_blobs, raw_episodes
from robodata.defs.resources import PER_EPISODE, partitioning

# The asset keys are the same in both partitionings (robodata.defs.batches.batches keeps them).
INGEST_SELECTION = dg.AssetSelection.assets(raw_episodes, gop_blobs, aligned_frames)

# Both run on the code location's executor (robodata.defs.execution): one process per run.
ingest_episode_job = dg.define_asset_job(
    "ingest_episode",
    selection=INGEST_SELECTION,
    description="Validate one upload, write its GOPs and its aligned rows, run the episode checks (one process).",
)

ingest_batch_job = dg.define_asset_job(
    "ingest_batch",
    selection=INGEST_SELECTION,
    description="Validate every new upload of one batch, stage their GOPs, commit their rows, run the "
    "checks on the batch's episodes (one process).",
)

defs = dg.Definitions(jobs=[ingest_episode_job if partitioning() == PER_EPISODE else ingest_batch_job])
