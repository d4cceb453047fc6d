"""The storms' duplicate GOP rows, forced. Two writers of one episode: B plans its GOP insert
and waits, A commits the same GOPs, then B commits. Lance re-plans B as an update only when its
commit check sees A's insert of the same keys, which failed in two ways:

- once ``robodata upkeep`` had indexed ``ref_id``, Lance's merge_insert joined through the
  index and its commit no longer checked inserted keys: every such race stored the GOPs twice
  (from the storms' second round on). The keyed writes now join without the index.
- ``compact --older-than 0`` between A's commit and B's removed A's version: Lance checks a
  commit only against the versions still on disk. Version cleanup now keeps every version
  committed since a running write (an ingest's lease, any other writer's write lease) began."""

from __future__ import annotations

import threading
from datetime import timedelta

import numpy as np
import pyarrow as pa
from lance.dataset import MergeInsertBuilder

import robodata
import robodata.edits._upkeep as upkeep
from robodata.format._tables import gops_uri, open_table
from robodata.integrity._gop_leases import read_records
from robodata_tests.dataset_checks import assert_one_copy


def _held_gops_insert(monkeypatch, writer: str):
    """In thread ``writer``, the first GOP ``merge_insert`` reads its rows, then waits (its insert
    planned, not committed) until ``release`` is set; ``planned`` says it is waiting."""
    planned, release = threading.Event(), threading.Event()
    real_execute = MergeInsertBuilder.execute

    def execute(self, data, *args, **kwargs):
        if threading.current_thread().name != writer or "packet_sizes" not in data.column_names or planned.is_set():
            return real_execute(self, data, *args, **kwargs)

        def batches():
            yield from data.to_batches()
            planned.set()
            assert release.wait(120)

        return real_execute(self, pa.RecordBatchReader.from_batches(data.schema, batches()), *args, **kwargs)

    monkeypatch.setattr(MergeInsertBuilder, "execute", execute)
    return planned, release


def _race(monkeypatch, root: str, upload, between) -> tuple:
    """Writer B of ``upload`` plans its GOP insert and waits; writer A of it commits, then
    ``between()`` runs; then B commits. Returns (A's result, B's result)."""
    planned, release = _held_gops_insert(monkeypatch, "writer-b")
    outcome: dict = {}

    def writer_b():
        try:
            outcome["b"] = robodata.ingest_episode(str(upload), root)
        except BaseException as exc:
            outcome["error"] = exc

    b = threading.Thread(target=writer_b, name="writer-b")
    b.start()
    try:
        assert planned.wait(120)
        a = robodata.ingest_episode(str(upload), root)  # writer A commits first
        between()
    finally:
        release.set()
        b.join(120)
    assert "error" not in outcome, outcome.get("error")
    return a, outcome["b"]


def _assert_one_copy(root: str, expected: dict[int, int]) -> None:
    ref_ids = open_table(gops_uri(root)).to_table(columns=["ref_id"])["ref_id"].to_numpy()
    assert len(ref_ids) == len(np.unique(ref_ids)), f"{len(ref_ids) - len(np.unique(ref_ids))} duplicate GOP rows"
    assert_one_copy(robodata.open(root), expected)
    assert read_records(root).leases == []


def test_two_writers_of_one_episode_on_an_indexed_dataset_leave_one_copy(monkeypatch, eight_short_uploads, tmp_path):
    root = str(tmp_path / "ds")
    first = robodata.ingest_episode(str(eight_short_uploads[0]), root)
    upkeep.upkeep_dataset(root, gc_min_age=timedelta(0))  # indexes ref_id (and keeps every version)
    assert ["ref_id"] in [list(i.field_names) for i in open_table(gops_uri(root)).describe_indices()]
    a, b = _race(monkeypatch, root, eight_short_uploads[1], lambda: None)
    assert b.gops_written == 0  # B found A's GOPs and stored none of its own
    _assert_one_copy(root, {0: first.rows, 1: a.rows})


def test_a_cleanup_between_two_writers_of_one_episode_leaves_one_copy(monkeypatch, eight_short_uploads, tmp_path):
    monkeypatch.setattr(upkeep, "CLOCK_SKEW", timedelta(0))  # one host: the versions from before B began go
    root = str(tmp_path / "ds")
    first = robodata.ingest_episode(str(eight_short_uploads[0]), root)
    reports = []

    def compact_and_clean_up():
        reports.append(upkeep.upkeep_dataset(root, older_than=timedelta(0), gc_min_age=timedelta(0)))
        # B's lease is held (its process is alive): A's versions stay, so B's commit sees A's insert.
        assert len(read_records(root).leases) == 1

    a, b = _race(monkeypatch, root, eight_short_uploads[1], compact_and_clean_up)
    assert reports[0].gops.versions_removed >= 1  # the versions from before B began still go
    assert b.gops_written == 0
    _assert_one_copy(root, {0: first.rows, 1: a.rows})
