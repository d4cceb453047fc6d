"""Ingest in two steps that may run in different processes or on different machines: stage an
episode's GOPs (encode + append to gops.lance), later commit its rows to frames.lance.

Between the steps the GOP layout waits in ``<root>/_staging/episode_<index>.json`` next to the
two tables, so the second step needs only the dataset root, local or s3://. The file goes away
once the rows commit; until then garbage collection treats its GOPs as referenced (the paths
and that reading live in ``robodata.integrity._gop_leases``, so edits need not import ingest).
"""

from __future__ import annotations

from robodata.codec import EncoderSettings
from robodata.ingest._encoding_settings import stored_settings
from robodata.ingest._episode import EpisodeData
from robodata.ingest._writer import IngestResult, StagedGops, write_frames, write_gops
from robodata.integrity._gop_leases import (
    STAGING_DIR,
    holding_writes,
    release,
    staged_gops_uri,
    staged_ref_ids,
    write_record,
)
from robodata.storage import fsspec_filesystem
from robodata.storage._failures import storage_call

__all__ = ["STAGING_DIR", "commit_staged_frames", "load_staged_gops", "stage_gops", "staged_gops_uri", "staged_ref_ids"]


def stage_gops(
    episode: EpisodeData,
    dataset_uri: str,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
    *,
    replace: bool = False,
) -> StagedGops:
    """Write ``episode``'s GOP rows and record their layout for ``commit_staged_frames``.
    ``replace`` (recorded with the layout) lets the episode replace a different episode that
    holds its ``episode_index``.

    >>> from robodata.ingest._upload import read_upload
    >>> stage_gops(read_upload("uploads/episode_000000"), "data/demo").gops_written  # stored already
    0
    """
    staged = write_gops(episode, dataset_uri, settings, storage_options, replace=replace)
    # The layout record protects the GOPs from here on; the lease write_gops took can go.
    write_record(staged_gops_uri(dataset_uri, episode.episode_index), staged.to_json(), storage_options)
    release(staged.lease, storage_options)
    return staged


def load_staged_gops(dataset_uri: str, episode_index: int, storage_options: dict | None = None) -> StagedGops:
    """The layout ``stage_gops`` recorded for ``episode_index``.

    >>> from robodata.ingest._upload import read_upload
    >>> staged = stage_gops(read_upload("uploads/episode_000000"), "data/demo")
    >>> load_staged_gops("data/demo", 0).gops == staged.gops
    True
    """
    uri = staged_gops_uri(dataset_uri, episode_index)
    try:
        fs = fsspec_filesystem(uri, storage_options)
        text = storage_call(f"reading episode {episode_index}'s staged GOPs", uri, storage_options, fs.cat_file, uri)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{uri}: no staged GOPs for episode {episode_index}; write its GOPs (gop_blobs) first"
        ) from None
    return StagedGops.from_json(text)


def commit_staged_frames(episode: EpisodeData, dataset_uri: str, storage_options: dict | None = None) -> IngestResult:
    """Write ``episode``'s rows to frames.lance against the GOPs staged for it, replacing any
    earlier copy of the episode in one commit.

    >>> from robodata.ingest._upload import read_upload
    >>> episode = read_upload("uploads/episode_000000")
    >>> _ = stage_gops(episode, "data/demo")
    >>> commit_staged_frames(episode, "data/demo").frames_version
    4
    """
    staged = load_staged_gops(dataset_uri, episode.episode_index, storage_options)
    with holding_writes(dataset_uri, f"committing episode {episode.episode_index}'s rows", storage_options):
        result = write_frames(episode, dataset_uri, staged, storage_options)
    # Committed: frames.lance references the GOPs now.
    release(staged_gops_uri(dataset_uri, episode.episode_index), storage_options)
    return result


def commit_episode_frames(
    episode: EpisodeData, dataset_uri: str, storage_options: dict | None = None
) -> tuple[IngestResult, StagedGops | None]:
    """``commit_staged_frames``, or, when nothing is staged for the episode (the rows step run
    alone: a backfill of aligned_frames only, or a re-run after the commit removed the layout),
    stage the episode again first with the dataset's encoder settings. Encoding is
    deterministic, so GOPs already stored are found by their ref_id and no GOP rows are
    added. Returns the result and the new staging (None when the staged layout was used).

    >>> from robodata.ingest._upload import read_upload
    >>> result, restaged = commit_episode_frames(read_upload("uploads/episode_000000"), "data/demo")
    >>> result.frames_version, restaged.gops_written  # nothing staged: staged again, GOPs reused
    (4, 0)
    """
    uri = staged_gops_uri(dataset_uri, episode.episode_index)
    restaged = None
    looking = f"looking for episode {episode.episode_index}'s staged GOPs"
    if not storage_call(looking, uri, storage_options, fsspec_filesystem(uri, storage_options).exists, uri):
        restaged = stage_gops(episode, dataset_uri, stored_settings(dataset_uri, storage_options), storage_options)
    return commit_staged_frames(episode, dataset_uri, storage_options), restaged
