"""Records under ``<root>/_staging/`` that keep garbage collection away from GOPs an ingest is
about to reference.

Between an ingest's GOP commit and its frames commit, no version of frames.lance points at the
episode's GOPs yet. The ingest writes a lease listing their ref_ids *before* its GOP commit and
removes it after its frames commit (the two-step Dagster path keeps its layout record,
``_staging/episode_<index>.json``, in between instead). ``collect_garbage`` opens gops.lance,
then reads every record here, then the frames versions, so a GOP is either listed in a record,
referenced by a frames version, or touched by a GOP commit later than the one garbage collection
read (which makes its delete conflict): see docs/reliability.md.
"""

from __future__ import annotations

import json
import uuid

from robodata.storage import fsspec_filesystem, is_remote, join_uri

STAGING_DIR = "_staging"


def hold_gops(
    dataset_uri: str, episode_index: int, ref_ids: list[int], storage_options: dict | None = None
) -> str:
    """Write a lease on ``ref_ids`` (one PUT, so it is whole or absent); returns its URI.

    >>> lease = hold_gops("data/demo", 0, [123, 456])
    """
    uri = join_uri(dataset_uri, STAGING_DIR, f"lease-{int(episode_index)}-{uuid.uuid4().hex}.json")
    write_record(uri, json.dumps({"episode_index": int(episode_index), "ref_ids": sorted(ref_ids)}), storage_options)
    return uri


def release(lease_uri: str, storage_options: dict | None = None) -> None:
    """Remove a lease (the GOPs are referenced by frames.lance now, or no longer needed)."""
    if not lease_uri:
        return
    try:
        fsspec_filesystem(lease_uri, storage_options).rm_file(lease_uri)
    except FileNotFoundError:
        pass


def write_record(uri: str, text: str, storage_options: dict | None = None) -> None:
    fs = fsspec_filesystem(uri, storage_options)
    if not is_remote(uri):
        fs.makedirs(uri.rsplit("/", 1)[0], exist_ok=True)
    fs.pipe_file(uri, text.encode())  # one put: a reader never sees half a record


def staged_ref_ids(dataset_uri: str, storage_options: dict | None = None) -> set[int]:
    """The ref_ids of every GOP listed in a lease or a staged layout (garbage collection keeps them).

    >>> staged_ref_ids("data/demo")
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
        try:
            body = json.loads(fs.cat_file(path))
        except FileNotFoundError:
            continue  # released while we listed: its GOPs are referenced by frames.lance now
        if "ref_ids" in body:
            refs.update(body["ref_ids"])
        for camera in body.get("cameras", {}).values():
            refs.update(camera["ref_ids"])
    return refs
