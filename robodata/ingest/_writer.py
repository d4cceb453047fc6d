"""Write one episode: its cameras as GOP rows in gops.lance, then its control-rate rows in
frames.lance, replacing any earlier copy of the episode in a single commit.

The two steps are separate functions (``write_gops`` then ``write_frames``) so an orchestrator
can run them as separate assets; ``write_episode`` runs both."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from dataclasses import field as dataclass_field

from robodata.codec import EncoderSettings
from robodata.errors import IncompatibleEpisodeError
from robodata.format._provenance import UPLOAD_COLUMNS, upload_columns
from robodata.format._schema import frames_schema
from robodata.format._tables import frames_uri, gops_uri
from robodata.ingest._camera_encoding import CameraGops, camera_layout, encode_camera
from robodata.ingest._encoding_settings import stored_settings
from robodata.ingest._episode import EpisodeData
from robodata.ingest._episode_stats import record_episode_stats
from robodata.ingest._frame_rows import build_rows, conform, dataset_metadata, episode_frames_schema, with_extra_fields
from robodata.ingest._one_copy import append_new_gops, check_episode_index_free, replace_episode_rows
from robodata.ingest._renditions import write_declared_renditions
from robodata.integrity._audit import audit_staged_episode
from robodata.integrity._frames_checksums import record_frames_checksums
from robodata.integrity._gop_leases import hold_gops, release
from robodata.storage._failures import storage_step


@dataclass
class IngestResult:
    """What one ingest wrote."""

    episode_id: str
    episode_index: int
    frames_version: int
    gops_version: int
    rows: int
    gops: int
    gops_written: int
    video_bytes: int
    rows_bytes: int = 0  # in-memory Arrow size of the rows written to frames.lance
    # Re-ingest keeps label (annotation) values of rows that still exist: rows of the earlier copy
    # that carried a label, kept and dropped (their frame_index is past the new copy's end).
    labels_kept_rows: int = 0
    labels_dropped_rows: int = 0
    # How ingest changed camera frames (turned upright, cropped to even sizes), one record per
    # camera, as stored with the episode: see EpisodeData.camera_adjustments.
    camera_adjustments: list[dict] = dataclass_field(default_factory=list)


@dataclass
class StagedGops:
    """An episode's GOP rows, written to gops.lance but not yet referenced by frames.lance."""

    episode_id: str
    episode_index: int
    settings: EncoderSettings
    cameras: dict[str, CameraGops]
    gops_version: int
    gops_written: int  # GOP rows appended now (identical GOPs already stored are reused)
    bytes_written: int  # video bytes appended now
    replace: bool = False  # may replace a different episode holding episode_index
    lease: str = ""  # the record keeping garbage collection off these GOPs until the frames commit

    @property
    def gops(self) -> int:
        return sum(len(c.ref_ids) for c in self.cameras.values())

    @property
    def video_bytes(self) -> int:
        return sum(c.video_bytes for c in self.cameras.values())

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> StagedGops:
        body = json.loads(text)
        body["settings"] = EncoderSettings(**body["settings"])
        body["cameras"] = {name: CameraGops(**camera) for name, camera in body["cameras"].items()}
        return cls(**body)


def write_episode(
    episode: EpisodeData,
    dataset_uri: str,
    settings: EncoderSettings | None = None,
    *,
    storage_options: dict | None = None,
    replace: bool = False,
) -> IngestResult:
    """Encode and write an episode already in memory; nothing becomes visible unless every part
    succeeded (``ingest_episode`` is this after reading an upload folder; importers call it).

    GOP rows are appended first (unreferenced until the frames commit, so a failure leaves
    nothing a reader sees); the frames commit then swaps the episode's rows in one version.

    Parameters
    ----------
    episode : EpisodeData
        The episode: signals, camera streams, task, ``episode_index``.
    dataset_uri : str
        The dataset root (local or s3://).
    settings : EncoderSettings, optional
        How to encode; by default the dataset's own (``EncoderSettings()`` for a new one).
    storage_options : dict, optional
        Object-store options; by default from the environment.
    replace : bool, default False
        Let the episode replace a different episode (another upload) that holds its
        ``episode_index``.

    Returns
    -------
    IngestResult

    Raises
    ------
    robodata.errors.EpisodeIndexTakenError
        Another episode holds its ``episode_index`` and ``replace`` is False; nothing written.
    robodata.IncompatibleEpisodeError
        Its cameras, joints or GOP size differ from the dataset's.
    robodata.errors.EpisodeAuditError
        The staged GOPs or rows failed the checks that run before the commit.

    Examples
    --------
    >>> from robodata.ingest import read_upload
    >>> episode = read_upload("uploads/episode_000001")
    >>> robodata.write_episode(episode, "data/new").frames_version
    1
    """
    staged = write_gops(episode, dataset_uri, settings, storage_options, replace=replace)
    try:
        return write_frames(episode, dataset_uri, staged, storage_options)
    finally:
        release(staged.lease, storage_options)  # committed (now referenced) or failed (orphans)


def write_gops(
    episode: EpisodeData,
    dataset_uri: str,
    settings: EncoderSettings | None = None,
    storage_options: dict | None = None,
    *,
    replace: bool = False,
) -> StagedGops:
    """Encode ``episode``'s cameras and append its new GOP rows to gops.lance. Readers see
    nothing yet: no row of frames.lance points at them until ``write_frames``.

    >>> from robodata.ingest._upload import read_upload
    >>> episode = read_upload("uploads/episode_000000")
    >>> staged = write_gops(episode, "data/demo")
    >>> staged.gops_written, sorted(staged.cameras)  # identical GOPs are stored already: reused
    (0, ['top', 'wrist_left', 'wrist_right'])
    """
    settings = settings or stored_settings(dataset_uri, storage_options)
    meta = dataset_metadata(episode, settings)
    schema = episode_frames_schema(episode, meta, dataset_uri, storage_options)
    if not replace:
        check_episode_index_free(episode, dataset_uri, storage_options)  # before anything is written
    with ThreadPoolExecutor(max_workers=max(1, len(episode.cameras))) as pool:
        futures = {c.name: pool.submit(encode_camera, episode.episode_index, c, settings) for c in episode.cameras}
        encoded = {name: f.result() for name, f in futures.items()}
    # Build the rows once before writing anything, so an upload whose cameras do not cover its
    # states (or whose columns do not fit) fails with nothing written, not with orphan GOPs.
    layouts = {name: camera_layout(enc) for name, enc in encoded.items()}
    conform(build_rows(episode, layouts, with_extra_fields(frames_schema(meta), episode)), schema)
    index = episode.episode_index
    ref_ids = [r for layout in layouts.values() for r in layout.ref_ids]
    with storage_step(f"writing episode {index}'s GOPs", gops_uri(dataset_uri), storage_options):
        # The lease comes first: garbage collection must see it, or see the GOP commit (below).
        lease = hold_gops(dataset_uri, index, ref_ids, storage_options, f"writing episode {index}'s GOPs")
        try:
            written, written_bytes, gops_version = append_new_gops(dataset_uri, encoded, index, storage_options)
            # The training renditions the dataset declares (kept from GC by their source GOPs' lease).
            write_declared_renditions(dataset_uri, {n: e.gops for n, e in encoded.items()}, storage_options)
        except BaseException:
            release(lease, storage_options)
            raise
    return StagedGops(
        episode_id=episode.episode_id,
        episode_index=episode.episode_index,
        settings=settings,
        cameras=layouts,
        gops_version=gops_version,
        gops_written=written,
        bytes_written=written_bytes,
        replace=replace,
        lease=lease,
    )


def write_frames(
    episode: EpisodeData,
    dataset_uri: str,
    staged: StagedGops,
    storage_options: dict | None = None,
) -> IngestResult:
    """Write ``episode``'s control-rate rows, pointing at the GOPs ``staged`` describes, and
    replace any earlier copy of the episode in frames.lance in one commit.

    >>> from robodata.ingest._upload import read_upload
    >>> episode = read_upload("uploads/episode_000000")
    >>> write_frames(episode, "data/demo", write_gops(episode, "data/demo")).frames_version
    4
    """
    if staged.episode_index != episode.episode_index or sorted(staged.cameras) != sorted(
        c.name for c in episode.cameras
    ):
        raise ValueError(
            f"{episode.origin or episode.episode_id}: staged GOPs are for episode {staged.episode_index} "
            f"with cameras {sorted(staged.cameras)}, not episode {episode.episode_index} with cameras "
            f"{sorted(c.name for c in episode.cameras)}; write its GOPs again"
        )
    meta = dataset_metadata(episode, staged.settings)
    schema = episode_frames_schema(episode, meta, dataset_uri, storage_options)
    built = build_rows(episode, staged.cameras, with_extra_fields(frames_schema(meta), episode))
    reserved = sorted(set(UPLOAD_COLUMNS) & set(built.column_names))
    if reserved:
        raise IncompatibleEpisodeError(
            f"{episode.origin or episode.episode_id}: columns {reserved} are reserved "
            "for the episode's upload (robodata.format._provenance)"
        )
    recorded = [*built.column_names, *UPLOAD_COLUMNS]  # every other column is an annotation
    adjustments = episode.camera_adjustments()
    provenance = upload_columns(built.num_rows, episode.episode_id, episode.fingerprint, episode.origin, adjustments)
    for name, values in provenance.items():
        built = built.append_column(name, values)
    rows = conform(built, schema)
    audit_staged_episode(dataset_uri, rows, meta, staged, expected_rows=len(episode), storage_options=storage_options)
    index = episode.episode_index
    with storage_step(f"committing episode {index}'s rows", frames_uri(dataset_uri), storage_options):
        frames_version, labels = replace_episode_rows(
            dataset_uri, rows, schema, recorded, episode.episode_id, staged.replace, storage_options
        )
        record_frames_checksums(dataset_uri, storage_options)  # the data files this commit added
    record_episode_stats(dataset_uri, episode, staged, frames_version, storage_options)
    return IngestResult(
        episode_id=episode.episode_id,
        episode_index=episode.episode_index,
        frames_version=frames_version,
        gops_version=staged.gops_version,
        rows=rows.num_rows,
        gops=staged.gops,
        gops_written=staged.gops_written,
        video_bytes=staged.video_bytes,
        rows_bytes=rows.nbytes,
        labels_kept_rows=labels.kept,
        labels_dropped_rows=labels.dropped,
        camera_adjustments=adjustments,
    )
