"""Which uploads a dataset holds: each episode's upload fingerprint and source folder.

Placeholder for the sensor in this branch: helper ``safety`` stores the fingerprint with each
episode and implements ``stored_uploads`` for real; take that version at merge.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoredUpload:
    episode_id: str
    episode_index: int
    fingerprint: str
    source_uri: str


def stored_uploads(
    root: str, *, storage_options: dict | None = None, version: int | None = None
) -> dict[str, StoredUpload]:
    """Episode id -> the upload stored in the dataset at ``root`` (none stored in this branch).

    >>> stored_uploads("demo/dataset")["episode_000000"].fingerprint
    '3f2a9c0d1e4b5a67'
    """
    return {}
