"""gop_renditions: a training rendition (smaller copies of the camera GOPs) added to each stored
episode, partitioned like the GOP asset. Each partition declares the rendition (once: later
partitions find it declared) and stores its GOPs for that episode as a new gops.lance version;
the full-resolution GOPs and the rows of frames.lance are never rewritten. Backfill every
partition to add it to the whole dataset; episodes ingested later get it at ingest."""

import dagster as dg
from pydantic import Field

from robodata.errors import RoboDataError
from robodata.format._provenance import stored_uploads
from robodata.format._schema import GOPS_TABLE
from robodata.ingest._renditions import add_rendition_to_episode, declare_rendition
from robodata.orchestration.defs.ingest.episodes import aligned_frames, episode_partitions
from robodata.orchestration.defs.lineage import code_version_of, failure, lineage_result
from robodata.orchestration.defs.resources import PER_EPISODE, DatasetStore, with_partitioning


class RenditionConfig(dg.Config):
    size: str = Field(default="224x224", description="WIDTHxHEIGHT of the rendition (even sizes), e.g. 224x224.")
    cameras: list[str] | None = Field(default=None, description="Cameras to add it to (default: every camera).")


@dg.asset(
    partitions_def=episode_partitions,
    deps=[aligned_frames],
    group_name="episodes",
    code_version=code_version_of(__file__, "gop_renditions"),
    kinds={"lance"},
    pool="video_encode",
    description="A training rendition of the episode's cameras (e.g. 224x224) as GOPs of their own in "
    "gops.lance; readers asking for resolution=(H, W) decode it instead of the full frames.",
)
def gop_renditions(
    context: dg.AssetExecutionContext, config: RenditionConfig, store: DatasetStore
) -> dg.MaterializeResult:
    options = store.storage_options()
    try:
        upload = stored_uploads(store.root, storage_options=options).get(context.partition_key)
        if upload is None:
            raise FileNotFoundError(f"{store.safe_uri(store.root)}: episode {context.partition_key} is not stored yet")
        frames_version, cameras = declare_rendition(store.root, config.size, config.cameras, options)
        written, nbytes, gops_version = add_rendition_to_episode(store.root, upload.episode_index, config.size, options)
    except (RoboDataError, FileNotFoundError, ValueError) as exc:
        raise failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=written,
        bytes_written=nbytes,
        frames_version=frames_version,
        gops_version=gops_version,
        table=GOPS_TABLE,
        extra={"episode_index": upload.episode_index, "rendition": config.size, "cameras": ", ".join(cameras)},
    )


defs = with_partitioning(PER_EPISODE, dg.Definitions(assets=[gop_renditions]))
