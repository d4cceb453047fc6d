"""Re-ingest keeps labels; every episode knows its upload (id, fingerprint, folder); an upload
may not take an episode_index that holds a different episode unless told to replace it."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import robodata
from robodata.cli import main
from robodata.errors import EpisodeIndexTakenError
from robodata.format._provenance import StoredUpload, stored_uploads
from robodata.format._tables import gops_uri, open_table
from robodata.format._versions import current_versions
from robodata.ingest import read_upload
from robodata.ingest._two_step import stage_gops
from robodata.storage._uploads import list_complete_uploads, upload_fingerprint


def _labels(root: str, episode: int) -> dict[int, tuple]:
    rows = robodata.open(root).to_table(["episode_index", "frame_index", "success", "score"]).to_pylist()
    return {r["frame_index"]: (r["success"], r["score"]) for r in rows if r["episode_index"] == episode}


def _label(root: str, episode: int, n: int) -> dict[int, tuple]:
    frames = np.arange(n)
    labels = pa.table(
        {
            "episode_index": np.full(n, episode, dtype=np.int64),
            "frame_index": frames,
            "success": frames % 3 == 0,
            "score": (frames * 0.5).astype(np.float64),
        }
    )
    robodata.add_annotations(root, labels)
    return {int(f): (bool(f % 3 == 0), float(f * 0.5)) for f in frames}


def _truncate_states(upload, keep: int) -> None:
    states = pq.read_table(upload / "states.parquet")
    pq.write_table(states.slice(0, keep), upload / "states.parquet")


def test_reingest_keeps_the_labels_of_rows_that_still_exist(uploads, tmp_path, capsys):
    root = str(tmp_path / "ds")
    first = robodata.ingest_episode(str(uploads[0]), root)
    robodata.ingest_episode(str(uploads[1]), root)
    labelled = _label(root, 0, first.rows)
    other = _label(root, 1, 10)

    again = robodata.ingest_episode(str(uploads[0]), root)
    assert (again.labels_kept_rows, again.labels_dropped_rows) == (first.rows, 0)
    assert _labels(root, 0) == labelled  # 97 of 97 labels kept, values unchanged

    _truncate_states(uploads[0], 60)  # the upload is fixed: fewer rows than before
    assert main(["ingest", str(uploads[0]), root]) == 0
    assert f"labelled rows: 60 kept, {first.rows - 60} dropped" in capsys.readouterr().out
    assert _labels(root, 0) == {f: v for f, v in labelled.items() if f < 60}
    assert {f: v for f, v in _labels(root, 1).items() if v[0] is not None} == other  # other episode untouched

    _truncate_states(uploads[0], 50)
    shrunk = robodata.ingest_episode(str(uploads[0]), root)
    assert (shrunk.rows, shrunk.labels_kept_rows, shrunk.labels_dropped_rows) == (50, 50, 10)


def test_every_episode_knows_its_upload(uploads, tmp_path):
    root = str(tmp_path / "ds")
    assert stored_uploads(root) == {}
    for upload in uploads[:2]:
        robodata.ingest_episode(str(upload), root)
    listed = {u.episode_id: u for u in list_complete_uploads(str(uploads[0].parent))}
    expected = {u.name: StoredUpload(u.name, i, listed[u.name].fingerprint, str(u)) for i, u in enumerate(uploads[:2])}
    assert stored_uploads(root) == expected
    assert stored_uploads(root, version=1) == {uploads[0].name: expected[uploads[0].name]}
    assert upload_fingerprint(str(uploads[0])) == listed[uploads[0].name].fingerprint

    _truncate_states(uploads[1], 40)  # the upload changes: so does its stored fingerprint
    changed = upload_fingerprint(str(uploads[1]))
    assert changed != expected[uploads[1].name].fingerprint
    robodata.ingest_episode(str(uploads[1]), root)
    assert stored_uploads(root)[uploads[1].name].fingerprint == changed


def _gop_rows(root: str) -> int:
    return open_table(gops_uri(root)).count_rows()


def test_an_upload_may_not_take_another_episodes_index(uploads, tmp_path):
    root = str(tmp_path / "ds")
    robodata.ingest_episode(str(uploads[0]), root)
    impostor = tmp_path / "uploads" / "another_robot_0"  # another folder, episode_index 0 too
    shutil.copytree(uploads[1], impostor)
    meta = json.loads((impostor / "episode.json").read_text())
    (impostor / "episode.json").write_text(json.dumps({**meta, "episode_index": 0}))
    before, gops = current_versions(root), _gop_rows(root)

    message = f"episode 'another_robot_0' claims episode_index 0, which already holds episode '{uploads[0].name}'"
    with pytest.raises(EpisodeIndexTakenError, match=message):
        robodata.ingest_episode(str(impostor), root)
    with pytest.raises(EpisodeIndexTakenError, match=message):
        stage_gops(read_upload(str(impostor)), root)  # the Dagster path: refused before any GOP
    assert main(["ingest", str(impostor), root]) == 2
    assert current_versions(root) == before and _gop_rows(root) == gops  # nothing written, no GOPs
    assert not list((tmp_path / "ds" / "_staging").glob("*.json"))
    assert set(stored_uploads(root)) == {uploads[0].name}

    assert main(["ingest", str(impostor), root, "--replace"]) == 0
    assert {u.episode_id: u.episode_index for u in stored_uploads(root).values()} == {"another_robot_0": 0}
    assert len(robodata.open(root)) == len(read_upload(str(impostor)))
