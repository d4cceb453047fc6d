"""Importing a LeRobot dataset again: every imported episode stores its source and a fingerprint
of its content, so the same content is skipped (wherever it is read from), an episode edited in
the source is imported again as a re-ingest (one copy, labels kept), and an episode of another
source claiming a stored episode_index is refused before anything is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import robodata
from robodata.errors import EpisodeIndexTakenError
from robodata.format._provenance import stored_episodes
from robodata.lerobot import import_lerobot

DATA_FILE = "data/chunk-000/file-000.parquet"  # episodes 0 and 1 (the export writes 2 per file)


def _add_to_actions(root: Path, episode_index: int, delta: float) -> None:
    """Edit the source: episode ``episode_index``'s actions change by ``delta``."""
    table = pq.read_table(root / DATA_FILE)
    mine = pc.equal(table["episode_index"], episode_index).to_numpy(zero_copy_only=False)
    action = table["action"].combine_chunks()
    values = action.flatten().to_numpy().reshape(len(action), -1).copy()
    values[mine] += np.float32(delta)
    edited = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1), pa.float32()), values.shape[1])
    pq.write_table(table.set_column(table.column_names.index("action"), "action", edited), root / DATA_FILE)


def _rows(ds) -> pa.Table:
    return ds.to_table(columns=["episode_index", "frame_index", "action", "success"]).sort_by(
        [("episode_index", "ascending"), ("frame_index", "ascending")]
    )


@pytest.mark.slow
def test_reimporting_skips_stored_content_and_reimports_edited_episodes(exported, tmp_path):
    source = tmp_path / "lerobot"
    shutil.copytree(exported, source)
    target = str(tmp_path / "ds")
    first = import_lerobot(str(source), target, progress=False)
    assert first.imported == [0, 1, 2]

    stored = stored_episodes(target)
    assert sorted(stored) == [0, 1, 2]
    for index, episode in stored.items():
        assert episode.episode_id == f"lerobot_episode_{index:06d}"
        assert episode.source_uri == f"{source} episode {index}"
        assert len(episode.fingerprint) == 16 and int(episode.fingerprint, 16) >= 0
    assert len({e.fingerprint for e in stored.values()}) == 3

    ds = robodata.open(target)
    labels = pa.table({"episode_index": [1] * 5, "frame_index": list(range(5)), "success": [True] * 5})
    robodata.add_annotations(target, labels)
    before = robodata.open(target)
    before_rows = _rows(before)

    # The same dataset again, then a copy of it elsewhere (new paths, new file times): nothing to do.
    again = import_lerobot(str(source), target, progress=False)
    assert (again.imported, again.skipped, again.changed) == ([], [0, 1, 2], [])
    moved = tmp_path / "elsewhere" / "lerobot"
    shutil.copytree(source, moved)
    assert import_lerobot(str(moved), target, progress=False).skipped == [0, 1, 2]
    after = robodata.open(target)
    assert after.version == before.version and _rows(after).equals(before_rows)

    # Episode 1 edited in the source: imported again, one copy, its labels kept.
    _add_to_actions(source, 1, 0.5)
    edited = import_lerobot(str(source), target, progress=False)
    assert (edited.imported, edited.skipped, edited.changed) == ([1], [0, 2], [1])
    after = robodata.open(target)
    assert len(after) == len(ds) and after.version > before.version
    rows = _rows(after)
    keys = list(zip(rows["episode_index"].to_pylist(), rows["frame_index"].to_pylist(), strict=True))
    assert len(set(keys)) == len(keys)  # one copy
    assert rows["success"].to_pylist() == before_rows["success"].to_pylist()  # labels kept
    one = pc.equal(rows["episode_index"], 1)
    new_actions = np.stack(rows.filter(one)["action"].to_numpy(zero_copy_only=False))
    old_actions = np.stack(before_rows.filter(one)["action"].to_numpy(zero_copy_only=False))
    np.testing.assert_allclose(new_actions, old_actions + 0.5, atol=1e-6)
    others = pc.invert(one)
    assert rows.filter(others).equals(before_rows.filter(others))
    assert stored_episodes(target)[1].fingerprint != stored[1].fingerprint
    assert {i: e.fingerprint for i, e in stored_episodes(target).items() if i != 1} == {
        i: e.fingerprint for i, e in stored.items() if i != 1
    }

    # Another source (the copy, edited differently) claiming episode 1: refused, nothing written.
    _add_to_actions(moved, 1, -0.25)
    version = robodata.open(target).version
    with pytest.raises(EpisodeIndexTakenError) as refused:
        import_lerobot(str(moved), target, progress=False)
    assert str(refused.value) == (
        f"{target}: {moved} episode 1 would become episode_index 1, which already holds episode "
        f"'lerobot_episode_000001' from {source} episode 1; nothing was written (import it into another "
        "dataset, or delete that episode first)"
    )
    assert robodata.open(target).version == version


def test_hdf5_reimport_skips_copies_and_reimports_an_edited_file(tmp_path):
    import h5py

    from robodata.interop import import_hdf5
    from robodata_tests.interop.test_hdf5_import import STEPS, _write_episode

    folder = tmp_path / "aloha"
    folder.mkdir()
    _write_episode(folder / "episode_0.hdf5", 0, compress=False)
    _write_episode(folder / "episode_1.hdf5", 10, compress=True)
    target = str(tmp_path / "ds")
    assert import_hdf5(str(folder / "episode_*.hdf5"), target, progress=False).imported == [0, 1]
    stored = stored_episodes(target)
    assert [e.source_uri for e in stored.values()] == [str(folder / f"episode_{i}.hdf5") for i in (0, 1)]
    assert all(len(e.fingerprint) == 16 for e in stored.values())
    robodata.add_annotations(target, pa.table({"episode_index": [0, 0], "frame_index": [0, 1], "success": [1, 2]}))
    version = robodata.open(target).version

    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    assert import_hdf5(str(copy / "episode_*.hdf5"), target, progress=False).skipped == [0, 1]
    assert robodata.open(target).version == version

    with h5py.File(folder / "episode_0.hdf5", "r+") as f:
        qpos = f["/observations/qpos"][...]
        qpos[3, 0] += 1.0
        f["/observations/qpos"][...] = qpos
    edited = import_hdf5(str(folder / "episode_*.hdf5"), target, progress=False)
    assert (edited.imported, edited.skipped, edited.changed) == ([0], [1], [0])
    ds = robodata.open(target)
    table = ds.to_table(columns=["frame_index", "success", "observation_state"], filter="episode_index = 0")
    assert table.sort_by("frame_index")["success"].to_pylist()[:3] == [1, 2, None]  # labels kept
    keys = ds.to_table(columns=["episode_index", "frame_index"])
    pairs = set(zip(keys["episode_index"].to_pylist(), keys["frame_index"].to_pylist(), strict=True))
    assert len(pairs) == keys.num_rows == 2 * STEPS  # one copy of each episode
    state = np.stack(table.sort_by("frame_index")["observation_state"].to_numpy(zero_copy_only=False))
    np.testing.assert_array_equal(state, qpos.astype(np.float32))  # the edited signals
