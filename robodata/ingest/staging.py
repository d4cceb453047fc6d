"""Ingest in two steps that may run in different processes or on different machines: stage an
episode's GOPs (encode + append to gops.lance), later commit its rows to frames.lance.

Between the steps the GOP layout waits in ``<root>/_staging/episode_<index>.json`` next to the
two tables, so the second step needs only the dataset root, local or s3://. The file goes away
once the rows commit; until then garbage collection treats its GOPs as referenced.
"""

from __future__ import annotations

from robodata.codec import EncoderSettings
from robodata.format.ids import validate_episode_index
from robodata.format.schema import read_metadata
from robodata.format.tables import frames_uri, open_table
from robodata.ingest.episode import EpisodeData
from robodata.ingest.writer import IngestResult, StagedGops, write_frames, write_gops
from robodata.storage import fsspec_filesystem, is_remote, join_uri

STAGING_DIR = "_staging"


def staged_gops_uri(dataset_uri: str, episode_index: int) -> str:
    return join_uri(dataset_uri, STAGING_DIR, f"episode_{validate_episode_index(episode_index)}.json")


def stage_gops(
    episode: EpisodeData,
    dataset_uri: str,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
) -> StagedGops:
    """Write ``episode``'s GOP rows and record their layout for ``commit_staged_frames``.

    >>> stage_gops(read_upload("uploads/episode_000000"), "data/demo").gops_written
    36
    """
    staged = write_gops(episode, dataset_uri, settings, storage_options)
    uri = staged_gops_uri(dataset_uri, episode.episode_index)
    fs = fsspec_filesystem(uri, storage_options)
    if not is_remote(uri):
        fs.makedirs(uri.rsplit("/", 1)[0], exist_ok=True)
    # Written whole by one put, so a reader never sees half a layout.
    fs.pipe_file(uri, staged.to_json().encode())
    return staged


def load_staged_gops(dataset_uri: str, episode_index: int, storage_options: dict | None = None) -> StagedGops:
    """The layout ``stage_gops`` recorded for ``episode_index``.

    >>> load_staged_gops("data/demo", 0).gops
    36
    """
    uri = staged_gops_uri(dataset_uri, episode_index)
    try:
        text = fsspec_filesystem(uri, storage_options).cat_file(uri)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{uri}: no staged GOPs for episode {episode_index}; write its GOPs (gop_blobs) first"
        ) from None
    return StagedGops.from_json(text)


def commit_staged_frames(episode: EpisodeData, dataset_uri: str, storage_options: dict | None = None) -> IngestResult:
    """Write ``episode``'s rows to frames.lance against the GOPs staged for it, replacing any
    earlier copy of the episode in one commit.

    >>> commit_staged_frames(read_upload("uploads/episode_000000"), "data/demo").frames_version
    """
    staged = load_staged_gops(dataset_uri, episode.episode_index, storage_options)
    result = write_frames(episode, dataset_uri, staged, storage_options)
    uri = staged_gops_uri(dataset_uri, episode.episode_index)
    fsspec_filesystem(uri, storage_options).rm_file(uri)  # committed: frames.lance references them now
    return result


def staged_ref_ids(dataset_uri: str, storage_options: dict | None = None) -> set[int]:
    """The ref_ids of every GOP staged but not yet committed (garbage collection keeps them).

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
        staged = StagedGops.from_json(fs.cat_file(path))
        refs.update(r for camera in staged.cameras.values() for r in camera.ref_ids)
    return refs


def commit_episode_frames(
    episode: EpisodeData, dataset_uri: str, storage_options: dict | None = None
) -> tuple[IngestResult, StagedGops | None]:
    """``commit_staged_frames``, or, when nothing is staged for the episode (the rows step run
    alone: a backfill of aligned_frames only, or a re-run after the commit removed the layout),
    stage the episode again first with the dataset's encoder settings. Encoding is
    deterministic, so GOPs already stored are found by their ref_id and no video is written
    twice. Returns the result and the new staging (None when the staged layout was used).

    >>> result, restaged = commit_episode_frames(read_upload("uploads/episode_000000"), "data/demo")
    """
    uri = staged_gops_uri(dataset_uri, episode.episode_index)
    restaged = None
    if not fsspec_filesystem(uri, storage_options).exists(uri):
        restaged = stage_gops(episode, dataset_uri, _dataset_settings(dataset_uri, storage_options), storage_options)
    return commit_staged_frames(episode, dataset_uri, storage_options), restaged


def _dataset_settings(dataset_uri: str, storage_options: dict | None) -> EncoderSettings:
    """The encoder settings the dataset was written with (defaults for a new dataset)."""
    frames = open_table(frames_uri(dataset_uri), storage_options)
    if frames is None:
        return EncoderSettings()
    meta = read_metadata(frames.schema)
    codec = meta.codec
    return EncoderSettings(
        gop_size=meta.gop_size,
        crf=int(codec.get("crf", EncoderSettings.crf)),
        preset=str(codec.get("preset", EncoderSettings.preset)),
        fast_decode=bool(codec.get("fast_decode", EncoderSettings.fast_decode)),
    )
