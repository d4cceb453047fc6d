"""Ingest an upload batch: a folder of upload folders, ``<uploads>/<batch>/<episode_id>/``.

The batch is ingested in three phases, each over every episode of the batch that the dataset
does not hold at its current upload fingerprint (episodes already stored, by this batch or by
per-episode ingests, are skipped):

1. ``validate_batch``: every upload is read and validated; nothing is written.
2. ``stage_batch``: every episode's GOPs are encoded and staged in gops.lance (unreferenced:
   readers see nothing; ``robodata gc`` keeps them while they are staged).
3. ``commit_batch``: each episode's rows are audited and committed to frames.lance, one
   commit per episode, each whole.

A bad upload (unreadable, inconsistent, undecodable video, an episode index held by another
upload) fails phase 1 or 2, so no row of the batch is committed and frames.lance's version does
not move. Phase 3 fails only on an audit failure or a storage error; the error then names the
episodes committed before it (each complete) and those not committed. Running the batch again
ingests exactly the episodes still missing.

>>> from robodata.sample_data import write_sample_uploads
>>> _ = write_sample_uploads("uploads/2026-12-02", episodes=1, seconds=0.5, start_index=3)
>>> robodata.ingest._batch.ingest_batch("uploads/2026-12-02", "data/demo").episodes
['episode_000003']
>>> robodata.ingest._batch.ingest_batch("uploads/2026-12-02", "data/demo").episodes  # again: nothing missing
[]
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from robodata.codec import EncoderSettings
from robodata.errors import BadUploadError, RoboDataError
from robodata.format._provenance import stored_uploads
from robodata.ingest._two_step import commit_episode_frames, stage_gops
from robodata.ingest._upload import EPISODE_JSON, read_upload
from robodata.ingest._upload_summary import UploadSummary, describe_upload
from robodata.ingest._writer import IngestResult, StagedGops
from robodata.storage._dataset_root import check_dataset_location
from robodata.storage._uploads import IncompleteUpload, UploadInfo, scan_uploads


class BatchEpisodeError(RoboDataError):
    """An episode of a batch failed; names the batch, the episode, the cause (which names the
    file) and which episodes of the batch were committed before it."""

    def __init__(self, batch_uri: str, episode_id: str, cause: Exception, committed: list[str], rest: list[str]):
        self.batch_uri, self.episode_id, self.cause = batch_uri, episode_id, cause
        self.committed, self.not_committed = list(committed), list(rest)
        batch = posixpath.basename(str(batch_uri).rstrip("/"))
        if committed:
            outcome = f"committed before it, each whole: {', '.join(committed)}; not committed: {', '.join(rest)}"
        else:
            outcome = "no episode of the batch was committed (frames.lance unchanged)"
        super().__init__(f"batch {batch}: episode {episode_id} failed: {cause} [{outcome}]")


@dataclass(frozen=True)
class BatchPlan:
    """What ingesting a batch means now: its complete uploads the dataset lacks (at their current
    fingerprint), those it holds already, and folders still without ``episode.json``."""

    batch_uri: str
    to_ingest: list[UploadInfo]
    stored: list[UploadInfo]
    incomplete: list[IncompleteUpload]

    @property
    def episodes(self) -> list[str]:
        """Every complete upload of the batch, sorted."""
        return sorted(u.episode_id for u in [*self.to_ingest, *self.stored])


@dataclass
class BatchResult:
    """What ``ingest_batch`` wrote: one result per episode ingested, and the episodes skipped."""

    plan: BatchPlan
    results: list[IngestResult]

    @property
    def episodes(self) -> list[str]:
        return [r.episode_id for r in self.results]


def plan_batch(batch_uri: str, dataset_uri: str, storage_options: dict | None = None) -> BatchPlan:
    """List the batch folder once and compare its uploads with the fingerprints stored in the
    dataset.

    >>> plan_batch("uploads", "data/demo").to_ingest  # the dataset holds all three already
    []
    """
    listing = scan_uploads(batch_uri, storage_options)
    stored = {k: u.fingerprint for k, u in stored_uploads(dataset_uri, storage_options=storage_options).items()}
    to_ingest = [u for u in listing.complete if stored.get(u.episode_id) != u.fingerprint]
    held = [u for u in listing.complete if stored.get(u.episode_id) == u.fingerprint]
    return BatchPlan(str(batch_uri).rstrip("/"), to_ingest, held, listing.incomplete)


def validate_batch(plan: BatchPlan, storage_options: dict | None = None) -> list[UploadSummary]:
    """Validate every upload to ingest (nothing is written); BatchEpisodeError at the first bad one,
    two uploads of the batch claiming one ``episode_index`` included. A batch folder without any
    complete upload is a BadUploadError: there is nothing to ingest, likely a wrong name."""
    if not plan.episodes:
        raise BadUploadError(
            plan.batch_uri, "no complete upload folder in this batch (<batch>/<episode_id>/episode.json)"
        )
    summaries = []
    claimed: dict[int, str] = {}
    for upload in plan.to_ingest:
        try:
            summary = describe_upload(upload.uri, storage_options, plan.batch_uri)
            _claim(claimed, summary.episode_index, upload)
        except (RoboDataError, FileNotFoundError) as exc:
            raise BatchEpisodeError(plan.batch_uri, upload.episode_id, exc, [], []) from exc
        summaries.append(summary)
    return summaries


def _claim(claimed: dict[int, str], episode_index: int, upload: UploadInfo) -> None:
    """Two uploads of one batch with one ``episode_index`` would be found only when the second
    commits (one episode half of the batch in): refuse before anything is written."""
    if episode_index in claimed:
        raise BadUploadError(
            posixpath.join(upload.uri, EPISODE_JSON),
            f"episode_index {episode_index} is also claimed by {claimed[episode_index]} in this batch",
        )
    claimed[episode_index] = upload.episode_id


def stage_batch(
    plan: BatchPlan,
    dataset_uri: str,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
    *,
    replace: bool = False,
) -> list[StagedGops]:
    """Encode and stage every episode to ingest; BatchEpisodeError at the first that fails (no
    row is committed; GOPs staged before it stay staged and are reused by the next attempt)."""
    check_dataset_location(dataset_uri, storage_options)  # before minutes of encoding
    staged = []
    claimed: dict[int, str] = {}
    for upload in plan.to_ingest:
        try:
            episode = read_upload(upload.uri, storage_options, plan.batch_uri)
            _claim(claimed, episode.episode_index, upload)
            staged.append(stage_gops(episode, dataset_uri, settings, storage_options, replace=replace))
        except (RoboDataError, FileNotFoundError) as exc:
            raise BatchEpisodeError(plan.batch_uri, upload.episode_id, exc, [], []) from exc
    return staged


def commit_batch(
    plan: BatchPlan, dataset_uri: str, storage_options: dict | None = None
) -> list[tuple[IngestResult, StagedGops | None]]:
    """Commit each episode to ingest (audited first; one frames.lance commit per episode), in
    order. An episode with nothing staged is staged again first (``commit_episode_frames``).
    BatchEpisodeError at the first that fails, naming the episodes committed before it."""
    done: list[tuple[IngestResult, StagedGops | None]] = []
    ids = [u.episode_id for u in plan.to_ingest]
    for i, upload in enumerate(plan.to_ingest):
        try:
            episode = read_upload(upload.uri, storage_options, plan.batch_uri)
            done.append(commit_episode_frames(episode, dataset_uri, storage_options))
        except (RoboDataError, FileNotFoundError) as exc:
            raise BatchEpisodeError(plan.batch_uri, upload.episode_id, exc, ids[:i], ids[i:]) from exc
    return done


def ingest_batch(
    batch_uri: str,
    dataset_uri: str,
    *,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
    replace: bool = False,
) -> BatchResult:
    """Ingest every episode of the batch folder ``batch_uri`` that the dataset lacks: validate
    all, stage all, then commit each (see the module docstring for what a failure leaves).

    >>> ingest_batch("uploads", "data/demo").episodes  # stored already: nothing to ingest
    []
    """
    plan = plan_batch(batch_uri, dataset_uri, storage_options)
    validate_batch(plan, storage_options)
    stage_batch(plan, dataset_uri, settings, storage_options, replace=replace)
    return BatchResult(plan, [result for result, _ in commit_batch(plan, dataset_uri, storage_options)])


__all__ = [
    "BatchEpisodeError",
    "BatchPlan",
    "BatchResult",
    "commit_batch",
    "ingest_batch",
    "plan_batch",
    "stage_batch",
    "validate_batch",
]
