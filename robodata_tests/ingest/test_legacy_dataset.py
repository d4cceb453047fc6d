"""A dataset written before robodata declared table keys and stored uploads (as the previous
release wrote it: plain appends, no upload columns) takes new ingests: its keys are declared,
its upload columns added, its labels kept, and an old episode is adopted by its re-ingest."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

import robodata
from robodata.codec import EncoderSettings
from robodata.format.keys import FRAMES_KEY, GOPS_KEY, has_primary_key
from robodata.format.provenance import UPLOAD_COLUMNS, stored_uploads
from robodata.format.schema import GOPS_SCHEMA, frames_schema
from robodata.format.tables import append_or_create, frames_uri, gops_uri, open_table
from robodata.ingest import read_upload
from robodata.ingest.camera_encoding import camera_layout, encode_camera
from robodata.ingest.frame_rows import build_rows, dataset_metadata


def _write_like_the_previous_release(upload, root: str) -> int:
    episode = read_upload(str(upload))
    settings = EncoderSettings()
    encoded = {c.name: encode_camera(episode.episode_index, c, settings) for c in episode.cameras}
    append_or_create(gops_uri(root), pa.concat_tables([e.gops for e in encoded.values()]), GOPS_SCHEMA)
    schema = frames_schema(dataset_metadata(episode, settings))
    rows = build_rows(episode, {n: camera_layout(e) for n, e in encoded.items()}, schema)
    append_or_create(frames_uri(root), rows, schema)
    return rows.num_rows


def test_a_dataset_from_before_keys_and_upload_columns_takes_new_ingests(uploads, tmp_path):
    root = str(tmp_path / "ds")
    n = _write_like_the_previous_release(uploads[0], root)
    assert not has_primary_key(open_table(frames_uri(root)).schema, FRAMES_KEY)
    assert stored_uploads(root) == {}
    robodata.add_annotations(
        root,
        pa.table(
            {
                "episode_index": np.zeros(n, dtype=np.int64),
                "frame_index": np.arange(n),
                "success": np.ones(n, bool),
            }
        ),
    )

    robodata.ingest_episode(str(uploads[1]), root)
    again = robodata.ingest_episode(str(uploads[0]), root)  # the old episode is adopted, labels kept
    assert (again.labels_kept_rows, again.labels_dropped_rows, again.gops_written) == (n, 0, 0)
    frames, gops = open_table(frames_uri(root)), open_table(gops_uri(root))
    assert has_primary_key(frames.schema, FRAMES_KEY) and has_primary_key(gops.schema, GOPS_KEY)
    assert set(UPLOAD_COLUMNS) <= set(frames.schema.names)
    assert {u.episode_id: u.episode_index for u in stored_uploads(root).values()} == {
        uploads[0].name: 0,
        uploads[1].name: 1,
    }
    ds = robodata.open(root)
    table = ds.to_table(["episode_index", "success"])
    assert table.filter(table["episode_index"].to_numpy() == 0)["success"].to_pylist() == [True] * n
    decoded = ds.get_frames(np.arange(len(ds)))
    assert all(a.shape[0] == len(ds) for a in decoded.data.values())
