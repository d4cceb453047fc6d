"""The keyed commits that leave one copy of an episode: its GOPs merged into gops.lance on
``ref_id``, its rows merged into frames.lance on (episode_index, frame_index) in one commit that
replaces any earlier copy, whatever other writers do at the same time; and the refusal of an
upload that claims an episode_index holding a different episode.

>>> robodata.ingest_episode("uploads/episode_000000", "data/demo").rows  # again: it replaces itself
197
>>> robodata.open("data/demo").episodes()["rows"].to_pylist()  # one copy
[197, 197, 197]
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from robodata.errors import EpisodeIndexTakenError
from robodata.format._commits import retry_commit
from robodata.format._ids import episode_filter
from robodata.format._keys import FRAMES_KEY, GOPS_KEY, keyed_merge, with_primary_key
from robodata.format._provenance import stored_upload_of
from robodata.format._tables import create_once, frames_uri, gops_uri, open_table
from robodata.ingest._camera_encoding import EncodedCamera
from robodata.ingest._episode import EpisodeData
from robodata.ingest._frame_rows import conform
from robodata.ingest._label_counts import LabelCounts, count_labels
from robodata.storage._deadlines import DeadlineExceeded, call_with_deadline
from robodata.storage._failures import storage_call


def append_new_gops(
    root: str, encoded: dict[str, EncodedCamera], episode_index: int, storage_options: dict | None
) -> tuple[int, int, int]:
    """Store the episode's GOPs; returns (rows appended, video bytes appended, version).

    One ``merge_insert`` on ``ref_id`` (the declared key): a GOP not stored yet is inserted,
    one already stored is rewritten in place with its identical bytes. The insert half is what
    makes two writers of the same new episode leave one copy (Lance re-plans the later commit
    as an update). The rewrite half is what makes reuse safe from garbage collection: a delete
    planned on an older gops.lance version conflicts with it and starts over (see robodata.integrity._gop_leases).
    """
    table = in_storage_order([e.gops for e in encoded.values()])
    created = create_once(gops_uri(root), table, with_primary_key(table.schema, GOPS_KEY), storage_options)
    if created is not None:
        return table.num_rows, _video_bytes(table), created.version

    def merge_once() -> tuple[int, int, int]:
        gops = open_table(gops_uri(root), storage_options)
        stored = gops.to_table(columns=["ref_id"], filter=episode_filter(episode_index))["ref_id"]
        new = pa.compute.invert(pa.compute.is_in(table["ref_id"], stored))
        builder = keyed_merge(gops, GOPS_KEY).when_matched_update_all().when_not_matched_insert_all()
        # A table written before row checksums existed has no row_xxh3: its new rows go without (one table, one rule).
        stats = builder.execute(table.select([n for n in gops.schema.names if n in table.column_names]))
        return int(stats["num_inserted_rows"]), _video_bytes(table.filter(new)), gops.version

    return retry_commit(
        f"writing episode {episode_index}'s GOPs", gops_uri(root), merge_once, storage_options=storage_options
    )


def in_storage_order(cameras: list[pa.Table]) -> pa.Table:
    """One episode's GOP rows (a table per camera, in recording order) in the order gops.lance
    stores them: by GOP start time, then camera. The GOPs a block of consecutive rows needs are
    then adjacent for every camera, so a training worker reads a run of them in one range read
    (docs/s3.md) rather than one small read per GOP and camera."""
    table = pa.concat_tables(cameras)
    starts = pa.compute.list_element(table["timestamps_ns"], 0).to_numpy()
    camera_rank = np.repeat(np.arange(len(cameras)), [t.num_rows for t in cameras])
    return table.take(np.lexsort((camera_rank, starts)))


def _video_bytes(gops: pa.Table) -> int:
    return int(pa.compute.sum(pa.compute.list_flatten(gops["packet_sizes"])).as_py() or 0)


def check_episode_index_free(episode: EpisodeData, root: str, storage_options: dict | None) -> None:
    """EpisodeIndexTakenError if ``episode.episode_index`` holds a different episode (upload)."""
    frames = open_table(frames_uri(root), storage_options)
    checking = f"checking who holds episode {episode.episode_index}"
    stored = (
        storage_call(checking, frames_uri(root), storage_options, stored_upload_of, frames, episode.episode_index)
        if frames is not None
        else None
    )
    _refuse_if_taken(stored, episode.episode_id, episode.episode_index, root)


def _refuse_if_taken(stored, episode_id: str, episode_index: int, root: str) -> None:
    if stored is not None and stored.episode_id != episode_id:
        raise EpisodeIndexTakenError(episode_index, episode_id, stored.episode_id, root)


def replace_episode_rows(
    root: str,
    rows: pa.Table,
    schema: pa.Schema,
    recorded: list[str],
    episode_id: str,
    replace: bool,
    storage_options: dict | None,
) -> tuple[int, LabelCounts]:
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
        return created.version, LabelCounts(0, 0)

    def replace_once() -> tuple[int, LabelCounts]:
        frames = open_table(uri, storage_options)
        for _ in range(3):
            stored = stored_upload_of(frames, index)
            if not replace:
                _refuse_if_taken(stored, episode_id, index, root)
            source = conform(rows, frames.schema).select([c for c in frames.schema.names if c in recorded])
            annotations = [c for c in frames.schema.names if c not in recorded]
            labels = count_labels(frames, index, annotations, source.num_rows, storage_options)
            builder = keyed_merge(frames, FRAMES_KEY)
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
                    raise  # not the race this handles (a commit conflict is retried by retry_commit)
                frames = latest  # a racing writer stored the episode first: go again as a re-ingest
        raise RuntimeError(f"{uri}: episode {index} kept changing under this commit; try again")

    # Any other writer's commit (an annotation, a compaction, a delete) that overtook this one
    # makes it plan again on the newer version.
    return retry_commit(f"committing episode {index}'s rows", uri, replace_once, storage_options=storage_options)
