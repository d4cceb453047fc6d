"""What crashes and races leave behind: ``verify`` finds GOPs stored twice (a problem), orphaned
GOPs, stale lease files and data files no version lists (notes); ``gc`` removes each, and the
dataset reads the same frames afterwards."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

import robodata
from robodata.format._schema import GOPS_SCHEMA
from robodata.format._tables import _write_data_files, frames_uri, gops_uri, open_table
from robodata.integrity._gop_leases import LEASE_PREFIX, STAGING_DIR
from robodata.integrity._verify import verify_dataset


def _frames(root: str) -> np.ndarray:
    ds = robodata.open(root)
    return ds.get_frames(np.arange(0, len(ds), 7), cameras=ds.cameras[:1]).data[ds.cameras[0]]


def _duplicate_episode_gops(root: str, episode: int) -> int:
    """Append a second copy of every GOP row of ``episode`` (what the issue's race left)."""
    gops = open_table(gops_uri(root))
    names = [f.name for f in gops.schema if f.name != "gop"]
    rows = gops.to_table(columns=names, filter=f"episode_index = {episode}", with_row_id=True)
    blobs = [b.readall() for b in gops.take_blobs("gop", ids=rows["_rowid"].to_pylist())]
    columns = {name: rows[name] for name in names} | {"gop": lance.blob_array(blobs)}
    table = pa.table({name: columns[name] for name in GOPS_SCHEMA.names}, schema=GOPS_SCHEMA)
    lance.write_dataset(table, gops_uri(root), mode="append")
    return rows.num_rows


def test_gops_stored_twice_are_a_problem_and_gc_removes_the_copies(dataset_copy):
    root = dataset_copy
    before = _frames(root)
    copies = _duplicate_episode_gops(root, 1)
    report = verify_dataset(root)
    assert not report.ok
    assert any(f"{copies} GOPs are stored more than once ({copies} extra rows" in p for p in report.problems)
    garbage = robodata.collect_garbage(root)
    assert garbage.duplicate_gops == copies and garbage.deleted == 0
    ref_ids = open_table(gops_uri(root)).to_table(columns=["ref_id"])["ref_id"].to_numpy()
    assert len(ref_ids) == len(np.unique(ref_ids))
    assert verify_dataset(root, decode=True).ok
    np.testing.assert_array_equal(_frames(root), before)


def test_orphans_and_stale_leases_are_noted_and_gc_removes_them(dataset_copy):
    root = dataset_copy
    robodata.delete_episodes(root, [2])
    open_table(frames_uri(root)).cleanup_old_versions(older_than=timedelta(0))
    lease = Path(root) / STAGING_DIR / f"{LEASE_PREFIX}7-dead.json"
    lease.parent.mkdir(exist_ok=True)
    lease.write_text(json.dumps({"episode_index": 7, "ref_ids": [1, 2], "taken_at": time.time() - 7200}))
    report = verify_dataset(root)
    assert report.ok, report.summary()  # leftovers are notes, not damage
    assert any("GOPs are referenced by no retained version" in n for n in report.notes)
    assert any("1 lease files of writes (ingests, edits) that did not finish" in n for n in report.notes)
    garbage = robodata.collect_garbage(root, min_age=timedelta(0))
    assert garbage.deleted > 0 and garbage.leases_removed == 1
    assert not lease.exists()
    assert verify_dataset(root).notes == []


def test_data_files_no_version_lists_are_noted_and_removed(dataset_copy):
    """A writer that wrote its data files and never committed (killed, a full disk)."""
    root = dataset_copy
    before = _frames(root)
    rows = open_table(frames_uri(root)).to_table(filter="episode_index = 0")
    _write_data_files(frames_uri(root), rows, rows.schema, None)
    data = Path(frames_uri(root)) / "data"
    listed = {f.path for fragment in open_table(frames_uri(root)).get_fragments() for f in fragment.data_files()}
    stray = [p for p in data.iterdir() if p.name not in listed]
    assert len(stray) == 1
    assert verify_dataset(root).notes == []  # too young: a running writer's files look the same
    old = time.time() - 2 * 3600  # older than verify's default min age (1 h) and DATA_FILE_MIN_AGE
    os.utime(stray[0], (old, old))
    report = verify_dataset(root)
    assert any("1 data files are listed by no version" in n and stray[0].name in n for n in report.notes), report.notes
    assert robodata.collect_garbage(root, min_age=timedelta(0)).data_files_removed == 1
    assert not stray[0].exists()
    assert verify_dataset(root, decode=True).ok
    np.testing.assert_array_equal(_frames(root), before)


def test_a_lease_this_process_no_longer_holds_is_abandoned_one_it_holds_is_kept(tmp_path):
    """A write that ended without removing its lease (the store was down) while its process lives
    on, as a notebook's or a service's would: the lease names a live pid, yet gc sees it is not
    held and removes it; a lease the process still holds keeps its GOPs whatever gc's min_age."""
    from robodata.integrity._gop_leases import hold_gops, read_records, release

    root = str(tmp_path / "ds")
    held = hold_gops(root, 0, [1, 2])
    left = hold_gops(root, 1, [3])
    os.rename(left, left + ".kept")
    release(left)  # ends the write; the file cannot go (renamed away here, the store down in life)
    os.rename(left + ".kept", left)
    records = read_records(root)
    assert records.protected(timedelta(0)) == {1, 2}
    assert [Path(p).name for p in records.abandoned(timedelta(hours=1))] == [Path(left).name]
    release(held)
    assert read_records(root).protected() == set()
