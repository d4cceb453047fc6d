"""Write one episode: its cameras as GOP rows in gops.lance, then its control-rate rows in
frames.lance, replacing any earlier copy of the episode in a single commit.

The two steps are separate functions (``write_gops`` then ``write_frames``) so an orchestrator
can run them as separate assets; ``write_episode`` runs both."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from dataclasses import field as dataclass_field

import lance
import numpy as np
import pyarrow as pa

from robodata.codec import EncoderSettings, GopEncoder
from robodata.errors import BadUploadError, EpisodeIndexTakenError, IncompatibleEpisodeError
from robodata.format.checksum import gop_checksum
from robodata.format.episodes import UPLOAD_COLUMNS, stored_upload_of, upload_columns, with_upload_fields
from robodata.format.ids import episode_filter, gop_ref_id
from robodata.format.keys import FRAMES_KEY, GOPS_KEY, declare_primary_key, with_primary_key
from robodata.format.schema import (
    GOPS_SCHEMA,
    CameraInfo,
    DatasetMetadata,
    frames_schema,
    read_metadata,
    ref_columns,
)
from robodata.format.staging import hold_gops, release
from robodata.format.tables import create_once, frames_uri, gops_uri, open_table
from robodata.ingest.alignment import nearest_frames
from robodata.ingest.audit import audit_staged_episode
from robodata.ingest.episode import CameraStream, EpisodeData
from robodata.ingest.stats import record_episode_stats
from robodata.storage.deadlines import DeadlineExceeded, call_with_deadline
from robodata.storage.failures import storage_step


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
class CameraGops:
    """Where one camera's frames landed in gops.lance, in GOP order: all ``write_frames`` needs
    to point rows at them, without the video bytes."""

    ref_ids: list[int]
    n_frames: list[int]
    frame_times_ns: list[int]
    fps: float
    video_bytes: int


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


@dataclass
class EncodedCamera:
    gops: pa.Table  # rows for gops.lance
    frame_times_ns: np.ndarray
    fps: float
    video_bytes: int


def dataset_metadata(episode: EpisodeData, settings: EncoderSettings) -> DatasetMetadata:
    return DatasetMetadata(
        control_hz=episode.control_hz,
        joint_names=list(episode.joint_names),
        cameras={c.name: CameraInfo(c.width, c.height, c.fps) for c in episode.cameras},
        gop_size=settings.gop_size,
        codec=settings.describe(),
        robot_type=episode.robot_type,
        # The order the cameras were recorded in (the JSON sorts the cameras dict's keys).
        extra={**episode.extra_metadata, "camera_order": [c.name for c in episode.cameras]},
    )


def encode_camera(episode_index: int, camera: CameraStream, settings: EncoderSettings) -> EncodedCamera:
    """Decode one camera's source and re-encode it into closed GOPs (rows for gops.lance)."""
    encoder = GopEncoder(camera.width, camera.height, camera.fps, settings)
    times: list[int] = []
    gops = []
    try:
        for t_ns, rgb in camera.frames():
            if times and t_ns <= times[-1]:
                raise BadUploadError(camera.source, f"frame timestamps do not increase at frame {len(times)}")
            times.append(t_ns)
            gops += encoder.add(rgb)
        gops += encoder.finish()
    except ValueError as exc:
        if isinstance(exc, BadUploadError):
            raise
        raise BadUploadError(camera.source, str(exc)) from None
    frame_times = np.asarray(times, dtype=np.int64)
    starts = np.cumsum([0] + [g.n_frames for g in gops])
    table = pa.table(
        {
            "ref_id": [gop_ref_id(episode_index, camera.name, j, g.data) for j, g in enumerate(gops)],
            "episode_index": [episode_index] * len(gops),
            "camera": [camera.name] * len(gops),
            "gop_index": list(range(len(gops))),
            "n_frames": [g.n_frames for g in gops],
            "timestamps_ns": [frame_times[starts[j] : starts[j + 1]].tolist() for j, g in enumerate(gops)],
            "packet_sizes": [g.packet_sizes for g in gops],
            "width": [camera.width] * len(gops),
            "height": [camera.height] * len(gops),
            "codec": [settings.codec] * len(gops),
            "crf": [settings.crf] * len(gops),
            "preset": [settings.preset] * len(gops),
            "gop_xxh3": pa.array([gop_checksum(g.data) for g in gops], pa.uint64()),
            "gop": lance.blob_array([g.data for g in gops]),
        },
        schema=GOPS_SCHEMA,
    )
    return EncodedCamera(table, frame_times, camera.fps, sum(len(g.data) for g in gops))


def _layout(encoded: EncodedCamera) -> CameraGops:
    return CameraGops(
        ref_ids=encoded.gops["ref_id"].to_pylist(),
        n_frames=encoded.gops["n_frames"].to_pylist(),
        frame_times_ns=encoded.frame_times_ns.tolist(),
        fps=encoded.fps,
        video_bytes=encoded.video_bytes,
    )


def build_rows(episode: EpisodeData, cameras: dict[str, CameraGops], schema: pa.Schema) -> pa.Table:
    """One frames.lance row per control step, each pointing at its nearest frame per camera."""
    n, joints = len(episode), len(episode.joint_names)
    columns: dict[str, object] = {
        "episode_index": np.full(n, episode.episode_index, dtype=np.int64),
        "frame_index": np.arange(n, dtype=np.int64),
        "timestamp_ns": episode.timestamps_ns.astype(np.int64),
        "task": [episode.task] * n,
        "split": [episode.split] * n,
        "observation_state": pa.FixedSizeListArray.from_arrays(
            pa.array(episode.observation_state.reshape(-1), pa.float32()), joints
        ),
        "action": pa.FixedSizeListArray.from_arrays(pa.array(episode.action.reshape(-1), pa.float32()), joints),
        "language_instruction": [episode.language_instruction] * n,
        "source": episode.source if episode.source is not None else ["human"] * n,
        "is_intervention": (
            episode.is_intervention
            if episode.is_intervention is not None
            else np.asarray([s == "intervention" for s in (episode.source or ["human"] * n)])
        ),
    }
    for camera, layout in sorted(cameras.items()):
        frame_times = np.asarray(layout.frame_times_ns, dtype=np.int64)
        frame = nearest_frames(episode.timestamps_ns, frame_times, layout.fps, _source_of(episode, camera))
        n_frames = np.asarray(layout.n_frames, dtype=np.int64)
        gop_start = np.concatenate([[0], np.cumsum(n_frames)[:-1]])
        gop = np.searchsorted(gop_start, frame, side="right") - 1
        ref_id, gop_index, in_gop = ref_columns(camera)
        columns[ref_id] = np.asarray(layout.ref_ids, dtype=np.int64)[gop]
        columns[gop_index] = gop.astype(np.int32)
        columns[in_gop] = (frame - gop_start[gop]).astype(np.int32)
    columns.update(episode.extra_columns)
    return pa.table(columns, schema=schema)


def _source_of(episode: EpisodeData, camera: str) -> str:
    return next(c.source for c in episode.cameras if c.name == camera)


def write_episode(
    episode: EpisodeData,
    dataset_uri: str,
    settings: EncoderSettings | None = None,
    *,
    storage_options: dict | None = None,
    replace: bool = False,
) -> IngestResult:
    """Encode and write ``episode``; nothing becomes visible unless every part succeeded.

    GOP rows are appended first (unreferenced until the frames commit, so a failure leaves
    nothing a reader sees); the frames commit then swaps the episode's rows in one version.

    ``replace=True`` lets the episode replace a different episode (another upload) that holds
    its ``episode_index``; without it that is an EpisodeIndexTakenError and nothing is written.

    >>> write_episode(episode, "data/demo").frames_version  # doctest: +SKIP
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

    >>> staged = write_gops(episode, "data/demo", EncoderSettings(gop_size=8))  # doctest: +SKIP
    """
    settings = settings or stored_settings(dataset_uri, storage_options)
    meta = dataset_metadata(episode, settings)
    schema = _frames_schema(episode, meta, dataset_uri, storage_options)
    if not replace:
        _check_episode_index_free(episode, dataset_uri, storage_options)  # before anything is written
    with ThreadPoolExecutor(max_workers=max(1, len(episode.cameras))) as pool:
        futures = {c.name: pool.submit(encode_camera, episode.episode_index, c, settings) for c in episode.cameras}
        encoded = {name: f.result() for name, f in futures.items()}
    # Build the rows once before writing anything, so an upload whose cameras do not cover its
    # states (or whose columns do not fit) fails with nothing written, not with orphan GOPs.
    layouts = {name: _layout(enc) for name, enc in encoded.items()}
    _conform(build_rows(episode, layouts, _with_extra_fields(frames_schema(meta), episode)), schema)
    index = episode.episode_index
    ref_ids = [r for layout in layouts.values() for r in layout.ref_ids]
    with storage_step(f"writing episode {index}'s GOPs", gops_uri(dataset_uri), storage_options):
        # The lease comes first: garbage collection must see it, or see the GOP commit (below).
        lease = hold_gops(dataset_uri, index, ref_ids, storage_options, f"writing episode {index}'s GOPs")
        try:
            written, written_bytes, gops_version = _append_new_gops(dataset_uri, encoded, index, storage_options)
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


def stored_settings(dataset_uri: str, storage_options: dict | None = None) -> EncoderSettings:
    """The encoder settings the dataset was written with (defaults for a new dataset): an episode
    appended without settings of its own is encoded as the dataset's GOPs are, whatever the
    current defaults.

    >>> stored_settings("data/demo").gop_size  # doctest: +SKIP
    8
    """
    with storage_step("reading the dataset's schema", frames_uri(dataset_uri), storage_options):
        frames = open_table(frames_uri(dataset_uri), storage_options)
    if frames is None:
        return EncoderSettings()
    meta = read_metadata(frames.schema)
    return EncoderSettings.described(meta.gop_size, meta.codec)


def requested_settings(
    dataset_uri: str,
    storage_options: dict | None = None,
    *,
    gop_size: int | None = None,
    crf: int | None = None,
    preset: str | None = None,
    codec: str | None = None,
) -> EncoderSettings:
    """The dataset's own encoder settings (``stored_settings``) with the fields a user asked for
    replaced; a field left None keeps the dataset's value. This is what ``--crf 28`` or a Dagster
    ``crf`` means for a dataset written before the defaults changed.

    >>> requested_settings("data/demo", crf=28).gop_size  # doctest: +SKIP
    8
    """
    asked = {"gop_size": gop_size, "crf": crf, "preset": preset, "codec": codec}
    return replace(stored_settings(dataset_uri, storage_options), **{k: v for k, v in asked.items() if v is not None})


def write_frames(
    episode: EpisodeData,
    dataset_uri: str,
    staged: StagedGops,
    storage_options: dict | None = None,
) -> IngestResult:
    """Write ``episode``'s control-rate rows, pointing at the GOPs ``staged`` describes, and
    replace any earlier copy of the episode in frames.lance in one commit.

    >>> write_frames(episode, "data/demo", staged).frames_version  # doctest: +SKIP
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
    schema = _frames_schema(episode, meta, dataset_uri, storage_options)
    built = build_rows(episode, staged.cameras, _with_extra_fields(frames_schema(meta), episode))
    reserved = sorted(set(UPLOAD_COLUMNS) & set(built.column_names))
    if reserved:
        raise IncompatibleEpisodeError(
            f"{episode.origin or episode.episode_id}: columns {reserved} are reserved "
            "for the episode's upload (robodata.format.episodes)"
        )
    recorded = [*built.column_names, *UPLOAD_COLUMNS]  # every other column is an annotation
    adjustments = episode.camera_adjustments()
    provenance = upload_columns(built.num_rows, episode.episode_id, episode.fingerprint, episode.origin, adjustments)
    for name, values in provenance.items():
        built = built.append_column(name, values)
    rows = _conform(built, schema)
    audit_staged_episode(dataset_uri, rows, meta, staged, expected_rows=len(episode), storage_options=storage_options)
    index = episode.episode_index
    with storage_step(f"committing episode {index}'s rows", frames_uri(dataset_uri), storage_options):
        frames_version, labels = _replace_episode_rows(
            dataset_uri, rows, schema, recorded, episode.episode_id, staged.replace, storage_options
        )
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


def _frames_schema(episode: EpisodeData, meta: DatasetMetadata, dataset_uri: str, storage_options) -> pa.Schema:
    """The frames.lance schema ``episode`` will be written with; IncompatibleEpisodeError if the
    dataset's cameras, joints or GOP size differ from the episode's."""
    with storage_step("reading the dataset's schema", frames_uri(dataset_uri), storage_options):
        frames = open_table(frames_uri(dataset_uri), storage_options)
    if frames is None:
        return with_upload_fields(_with_extra_fields(frames_schema(meta), episode))
    problems = read_metadata(frames.schema).compatible_with(meta)
    if problems:
        raise IncompatibleEpisodeError(f"{episode.origin or episode.episode_id}: " + "; ".join(problems))
    return with_upload_fields(frames.schema)  # a dataset from before upload columns gets them on commit


def _with_extra_fields(schema: pa.Schema, episode: EpisodeData) -> pa.Schema:
    for name, values in episode.extra_columns.items():
        schema = schema.append(pa.field(name, values.type))
    return schema


def _conform(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """``rows`` in the dataset's column order, with nulls for annotation columns added later."""
    columns = []
    for field in schema:
        if field.name in rows.column_names:
            columns.append(rows[field.name].cast(field.type))
        else:
            columns.append(pa.nulls(rows.num_rows, field.type))
    extra = set(rows.column_names) - set(schema.names)
    if extra:
        raise IncompatibleEpisodeError(f"episode has columns the dataset lacks: {sorted(extra)}")
    return pa.table(columns, schema=schema)


def _append_new_gops(
    root: str, encoded: dict[str, EncodedCamera], episode_index: int, storage_options
) -> tuple[int, int, int]:
    """Store the episode's GOPs; returns (rows appended, video bytes appended, version).

    One ``merge_insert`` on ``ref_id`` (the declared key): a GOP not stored yet is inserted,
    one already stored is rewritten in place with its identical bytes. The insert half is what
    makes two writers of the same new episode leave one copy (Lance re-plans the later commit
    as an update). The rewrite half is what makes reuse safe from garbage collection: a delete
    planned on an older gops.lance version conflicts with it and starts over (see robodata.format.staging).
    """
    table = pa.concat_tables([e.gops for e in encoded.values()])
    created = create_once(gops_uri(root), table, with_primary_key(table.schema, GOPS_KEY), storage_options)
    if created is not None:
        return table.num_rows, _video_bytes(table), created.version
    gops = declare_primary_key(open_table(gops_uri(root), storage_options), GOPS_KEY, storage_options)
    stored = gops.to_table(columns=["ref_id"], filter=episode_filter(episode_index))["ref_id"]
    new = pa.compute.invert(pa.compute.is_in(table["ref_id"], stored))
    stats = gops.merge_insert(list(GOPS_KEY)).when_matched_update_all().when_not_matched_insert_all().execute(table)
    return int(stats["num_inserted_rows"]), _video_bytes(table.filter(new)), gops.version


def _video_bytes(gops: pa.Table) -> int:
    return int(pa.compute.sum(pa.compute.list_flatten(gops["packet_sizes"])).as_py() or 0)


@dataclass(frozen=True)
class _Labels:
    kept: int
    dropped: int


def _check_episode_index_free(episode: EpisodeData, root: str, storage_options) -> None:
    """EpisodeIndexTakenError if ``episode.episode_index`` holds a different episode (upload)."""
    frames = open_table(frames_uri(root), storage_options)
    stored = stored_upload_of(frames, episode.episode_index) if frames is not None else None
    _refuse_if_taken(stored, episode.episode_id, episode.episode_index, root)


def _refuse_if_taken(stored, episode_id: str, episode_index: int, root: str) -> None:
    # An episode stored before upload ids were kept has an empty id: a re-ingest adopts it.
    if stored is not None and stored.episode_id and stored.episode_id != episode_id:
        raise EpisodeIndexTakenError(episode_index, episode_id, stored.episode_id, root)


def _replace_episode_rows(
    root: str,
    rows: pa.Table,
    schema: pa.Schema,
    recorded: list[str],
    episode_id: str,
    replace: bool,
    storage_options,
) -> tuple[int, _Labels]:
    """Make ``rows`` the episode's only rows in frames.lance, in one commit; returns the version
    and how many labelled rows of the earlier copy were kept and dropped.

    A ``merge_insert`` on (episode_index, frame_index), the declared key, with only the recorded
    columns as its source: rows that still exist keep their annotation columns (a partial-schema
    update leaves the columns it is not given untouched), new rows get nulls, and rows past the
    new end are deleted. A new episode is committed with ``when_matched_fail``: if another
    writer's copy lands first, Lance re-plans this commit, finds that copy and fails instead of
    adding a second one; the episode is then re-committed as a re-ingest (same upload) or refused
    (a different upload claiming the same episode_index). The first writer of a new dataset
    creates frames.lance holding its rows (``create_once``); racing creators merge into it.
    """
    uri = frames_uri(root)
    index = int(rows["episode_index"][0].as_py())
    created = create_once(uri, rows, with_primary_key(schema, FRAMES_KEY), storage_options)
    if created is not None:
        return created.version, _Labels(0, 0)
    frames = declare_primary_key(open_table(uri, storage_options), FRAMES_KEY, storage_options)
    frames = _with_upload_columns(frames, storage_options)
    for _ in range(3):
        stored = stored_upload_of(frames, index)
        if not replace:
            _refuse_if_taken(stored, episode_id, index, root)
        source = _conform(rows, frames.schema).select([c for c in frames.schema.names if c in recorded])
        labels = _count_labels(frames, index, [c for c in frames.schema.names if c not in recorded], source.num_rows)
        builder = frames.merge_insert(list(FRAMES_KEY))
        builder = builder.when_matched_fail() if stored is None else builder.when_matched_update_all()
        commit = builder.when_not_matched_insert_all().when_not_matched_by_source_delete(episode_filter(index))
        try:
            call_with_deadline(uri, storage_options, commit.execute, source)
            return frames.version, labels
        except DeadlineExceeded:
            raise
        except (OSError, ValueError):
            latest = open_table(uri, storage_options)
            if stored is not None or stored_upload_of(latest, index) is None:
                raise  # not the race this handles
            frames = latest  # a racing writer stored the episode first: go again as a re-ingest
    raise RuntimeError(f"{uri}: episode {index} kept changing under this commit; try again")


def _with_upload_columns(frames: lance.LanceDataset, storage_options) -> lance.LanceDataset:
    """``frames`` with the upload columns (added, all null, to a dataset written before them)."""
    missing = [f for f in with_upload_fields(frames.schema) if f.name not in frames.schema.names]
    if not missing:
        return frames
    try:
        frames.add_columns(missing)
    except (OSError, ValueError):
        pass  # another writer added them first
    frames = open_table(frames.uri, storage_options)
    if any(f.name not in frames.schema.names for f in missing):
        raise IncompatibleEpisodeError(f"{frames.uri}: could not add the upload columns {[f.name for f in missing]}")
    return frames


def _count_labels(frames: lance.LanceDataset, episode_index: int, annotations: list[str], n_rows: int) -> _Labels:
    """Rows of the stored copy with at least one label value: kept (frame_index < n_rows) or dropped."""
    if not annotations:
        return _Labels(0, 0)
    stored = frames.to_table(columns=["frame_index", *annotations], filter=episode_filter(episode_index))
    if stored.num_rows == 0:
        return _Labels(0, 0)
    labelled = np.zeros(stored.num_rows, dtype=bool)
    for name in annotations:
        labelled |= stored[name].is_valid().to_numpy(zero_copy_only=False)
    kept = labelled & (stored["frame_index"].to_numpy() < n_rows)
    return _Labels(int(kept.sum()), int(labelled.sum() - kept.sum()))
