"""Jobs: ingesting one episode (one partition of ``episodes``) end to end, checks included."""

import dagster as dg

from robodata.defs.episodes import aligned_frames, gop_blobs, raw_episodes

ingest_episode_job = dg.define_asset_job(
    "ingest_episode",
    selection=dg.AssetSelection.assets(raw_episodes, gop_blobs, aligned_frames),
    description="Validate one upload, write its GOPs and its aligned rows, run the episode checks.",
)

defs = dg.Definitions(jobs=[ingest_episode_job])
