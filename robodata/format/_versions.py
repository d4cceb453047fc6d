"""The current Lance versions of a dataset's two tables: what lineage records after a write."""

from __future__ import annotations

from dataclasses import dataclass

from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.storage._failures import storage_step


@dataclass(frozen=True)
class TableVersions:
    frames: int | None  # None: the table does not exist yet
    gops: int | None


def current_versions(dataset_uri: str, *, storage_options: dict | None = None) -> TableVersions:
    """The latest versions of frames.lance (the dataset's version) and gops.lance.

    >>> current_versions("data/demo")
    TableVersions(frames=3, gops=3)
    """
    with storage_step("reading the dataset's versions", frames_uri(dataset_uri), storage_options):
        frames = open_table(frames_uri(dataset_uri), storage_options)
        gops = open_table(gops_uri(dataset_uri), storage_options)
    return TableVersions(
        frames=frames.version if frames is not None else None,
        gops=gops.version if gops is not None else None,
    )
