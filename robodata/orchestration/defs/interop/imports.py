"""Imports as a Dagster asset: one partition per source episode, the source in run config, so a
large LeRobot or ALOHA import backfills, retries and resumes like any ingest.

Register the partitions once (``register_import_partitions``, or ``robodata register-imports``),
then materialize or backfill ``imported_episodes`` with the same config, e.g.

```yaml
ops:
  imported_episodes:
    config: {source: "s3://lab/lerobot/aloha_sim", format: lerobot}
```
"""

from typing import TYPE_CHECKING, Literal

import dagster as dg
from pydantic import Field

from robodata.errors import RoboDataError
from robodata.interop import import_episodes
from robodata.interop._sources import IMPORT_FORMATS, open_episode_source
from robodata.orchestration.defs.encoding import EncodingConfig
from robodata.orchestration.defs.lineage import code_version_of, failure, lineage_result
from robodata.orchestration.defs.resources import DatasetStore

IMPORT_PARTITIONS = "imported_episodes"
import_partitions = dg.DynamicPartitionsDefinition(name=IMPORT_PARTITIONS)

# A choice of IMPORT_FORMATS' names in the launchpad; a type checker, which cannot build a
# Literal from a value, sees a str.
if TYPE_CHECKING:
    ImportFormatName = str
else:
    ImportFormatName = Literal[tuple(IMPORT_FORMATS)]
PARTITION_PREFIX = "source_episode_"


class ImportConfig(EncodingConfig):
    """Where an import reads from, the source format's options, and how its video is re-encoded."""

    source: str = Field(description="A LeRobot v3 dataset root, or an HDF5 file glob (local or s3://).")
    format: ImportFormatName = Field(default="lerobot", description=" or ".join(IMPORT_FORMATS))
    repo_id: str | None = Field(default=None, description="lerobot: recorded in the metadata (default: root's name).")
    control_hz: float = Field(default=50.0, description="aloha_hdf5: the recording's control rate.")
    joint_names: list[str] | None = Field(default=None, description="aloha_hdf5: default ALOHA's 14.")
    task: str = Field(default="", description="aloha_hdf5: the episodes' task.")
    jpeg_channel_order: Literal["bgr", "rgb"] = Field(default="bgr", description="aloha_hdf5 JPEG images.")
    start_index: int = Field(default=0, description="aloha_hdf5: added to each source episode number.")

    def source_options(self) -> dict:
        """Every format's options; the chosen format takes its own."""
        return self.model_dump(exclude={"source", "format", *EncodingConfig.model_fields})


def partition_key(source_episode: int) -> str:
    return f"{PARTITION_PREFIX}{source_episode:06d}"


def source_episode_of(key: str) -> int:
    digits = key.removeprefix(PARTITION_PREFIX)
    if not key.startswith(PARTITION_PREFIX) or not digits.isdigit():
        raise ValueError(f"partition {key!r} is not {PARTITION_PREFIX}<number>")
    return int(digits)


def register_import_partitions(
    instance: dg.DagsterInstance, source: str, format: str = "lerobot", storage_options: dict | None = None
) -> list[str]:
    """Add one ``imported_episodes`` partition per source episode; returns the keys.

    >>> register_import_partitions(dg.DagsterInstance.ephemeral(), "exports/demo_lerobot")  # or s3://
    ['source_episode_000000', 'source_episode_000001', 'source_episode_000002']
    """
    numbers = open_episode_source(format, source, storage_options=storage_options).episode_numbers()
    keys = [partition_key(n) for n in numbers]
    existing = set(instance.get_dynamic_partitions(IMPORT_PARTITIONS))
    new = [k for k in keys if k not in existing]
    if new:
        instance.add_dynamic_partitions(IMPORT_PARTITIONS, new)
    return keys


@dg.asset(
    partitions_def=import_partitions,
    group_name="interop",
    code_version=code_version_of(__file__, "imported_episodes"),
    kinds={"lance"},
    pool="video_encode",
    description="One source episode (LeRobot v3 or ALOHA HDF5, from run config) imported into the dataset; "
    "an episode already in the dataset with the same source content is left as it is.",
)
def imported_episodes(
    context: dg.AssetExecutionContext, config: ImportConfig, store: DatasetStore
) -> dg.MaterializeResult:
    options = store.storage_options()
    try:
        episode = source_episode_of(context.partition_key)
        source = open_episode_source(
            config.format, config.source, storage_options=options, options=config.source_options()
        )
        result = import_episodes(
            source,
            store.root,
            episodes=[episode],
            settings=config.encoder_settings(store.root, options),
            storage_options=options,
            progress=False,
        )
    except (RoboDataError, FileNotFoundError, ValueError) as exc:
        raise failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=result.rows,
        bytes_written=result.video_bytes,
        frames_version=result.frames_version,
        gops_version=result.gops_version,
        row_count=result.rows,  # this source episode's rows, not the table's
        extra={
            "source": store.safe_uri(config.source),
            "format": config.format,
            "source_episode": episode,
            "episode_index": (result.imported or result.skipped)[0],
            "already_present": bool(result.skipped),
        },
    )


import_job = dg.define_asset_job("import_job", selection=[imported_episodes])

defs = dg.Definitions(assets=[imported_episodes], jobs=[import_job])
