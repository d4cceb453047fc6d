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

from typing import Literal

import dagster as dg
from pydantic import Field

from robodata.defs.lineage import failure, lineage_result
from robodata.defs.resources import DatasetStore
from robodata.errors import RoboDataError
from robodata.interop.hdf5_import import hdf5_episodes, import_hdf5
from robodata.interop.lerobot_import import import_lerobot
from robodata.interop.lerobot_source import LeRobotSource

import_partitions = dg.DynamicPartitionsDefinition(name="imported_episodes")
PARTITION_PREFIX = "source_episode_"


class ImportConfig(dg.Config):
    """Where an import reads from and how its video is re-encoded."""

    source: str = Field(description="A LeRobot v3 dataset root, or an HDF5 file glob (local or s3://).")
    format: Literal["lerobot", "aloha_hdf5"] = Field(default="lerobot", description="lerobot or aloha_hdf5.")
    control_hz: float = Field(default=50.0, description="aloha_hdf5: the recording's control rate.")
    joint_names: list[str] | None = Field(default=None, description="aloha_hdf5: default ALOHA's 14.")
    task: str = Field(default="", description="aloha_hdf5: the episodes' task.")
    jpeg_channel_order: Literal["bgr", "rgb"] = Field(default="bgr", description="aloha_hdf5 JPEG images.")
    start_index: int = Field(default=0, description="aloha_hdf5: added to each source episode number.")
    gop_size: int = Field(default=8, description="Frames per closed GOP.")
    crf: int = Field(default=23, description="x264 constant rate factor.")
    preset: str = Field(default="veryfast", description="x264 speed preset.")


def partition_key(source_episode: int) -> str:
    return f"{PARTITION_PREFIX}{source_episode:06d}"


def source_episode_of(key: str) -> int:
    digits = key.removeprefix(PARTITION_PREFIX)
    if not key.startswith(PARTITION_PREFIX) or not digits.isdigit():
        raise ValueError(f"partition {key!r} is not {PARTITION_PREFIX}<number>")
    return int(digits)


def source_episodes(source: str, format: str, storage_options: dict | None = None) -> list[int]:
    """The source's episode numbers: LeRobot episode indices, or HDF5 episode numbers."""
    if format == "lerobot":
        return [e.index for e in LeRobotSource(source, storage_options).episodes]
    return sorted(hdf5_episodes(source, storage_options))


def register_import_partitions(
    instance: dg.DagsterInstance, source: str, format: str = "lerobot", storage_options: dict | None = None
) -> list[str]:
    """Add one ``imported_episodes`` partition per source episode; returns the keys.

    >>> register_import_partitions(dg.DagsterInstance.get(), "s3://lab/lerobot/aloha_sim")
    ['source_episode_000000', 'source_episode_000001']
    """
    keys = [partition_key(n) for n in source_episodes(source, format, storage_options)]
    existing = set(instance.get_dynamic_partitions(import_partitions.name))
    new = [k for k in keys if k not in existing]
    if new:
        instance.add_dynamic_partitions(import_partitions.name, new)
    return keys


def register_import_partitions_from_cli(source: str, format: str = "lerobot") -> list[str]:
    """``register_import_partitions`` against the instance in $DAGSTER_HOME (``robodata register-imports``)."""
    import os

    from robodata.storage import storage_options_from_env

    if not os.environ.get("DAGSTER_HOME"):
        raise ValueError("DAGSTER_HOME is not set: point it at the Dagster instance folder (holding dagster.yaml)")
    with dg.DagsterInstance.get() as instance:
        return register_import_partitions(instance, source, format, storage_options_from_env() or None)


@dg.asset(
    partitions_def=import_partitions,
    group_name="interop",
    kinds={"lance"},
    pool="video_encode",
    description="One source episode (LeRobot v3 or ALOHA HDF5, from run config) imported into the dataset; "
    "an episode already in the dataset is left as it is.",
)
def imported_episodes(
    context: dg.AssetExecutionContext, config: ImportConfig, store: DatasetStore
) -> dg.MaterializeResult:
    options = store.storage_options()
    common = {"gop_size": config.gop_size, "crf": config.crf, "preset": config.preset, "progress": False}
    try:
        episode = source_episode_of(context.partition_key)
        if config.format == "lerobot":
            result = import_lerobot(config.source, store.root, episodes=[episode], storage_options=options, **common)
        else:
            result = import_hdf5(
                config.source,
                store.root,
                episodes=[episode],
                control_hz=config.control_hz,
                joint_names=config.joint_names,
                task=config.task,
                jpeg_channel_order=config.jpeg_channel_order,
                start_index=config.start_index,
                storage_options=options,
                **common,
            )
    except (RoboDataError, FileNotFoundError, ValueError) as exc:
        raise failure(store, exc) from None
    return lineage_result(
        store,
        rows_written=result.rows,
        bytes_written=result.video_bytes,
        frames_version=result.frames_version,
        gops_version=result.gops_version,
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
