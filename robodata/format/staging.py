"""Staged GOPs: an episode whose GOPs are in gops.lance but whose rows are not yet in
frames.lance has a layout file ``<root>/_staging/episode_<index>.json`` (written by ingest's
first step, removed by its second). Garbage collection reads the files to keep those GOPs.
"""

from __future__ import annotations

import json

from robodata.format.ids import validate_episode_index
from robodata.storage import fsspec_filesystem, join_uri

STAGING_DIR = "_staging"


def staged_gops_uri(dataset_uri: str, episode_index: int) -> str:
    """Where the staged layout of ``episode_index`` is kept.

    >>> staged_gops_uri("s3://lab/ds", 3)
    's3://lab/ds/_staging/episode_3.json'
    """
    return join_uri(dataset_uri, STAGING_DIR, f"episode_{validate_episode_index(episode_index)}.json")


def staged_ref_ids(dataset_uri: str, *, storage_options: dict | None = None) -> set[int]:
    """The ref_ids of every GOP staged but not yet committed (garbage collection keeps them).

    >>> staged_ref_ids("data/nowhere")
    set()
    """
    folder = join_uri(dataset_uri, STAGING_DIR)
    fs = fsspec_filesystem(folder, storage_options)
    try:
        paths = [p for p in fs.ls(folder, detail=False) if p.endswith(".json")]
    except FileNotFoundError:
        return set()
    refs: set[int] = set()
    for path in paths:
        layout = json.loads(fs.cat_file(path))  # a StagedGops (robodata.ingest.writer) as JSON
        refs.update(r for camera in layout["cameras"].values() for r in camera["ref_ids"])
    return refs
