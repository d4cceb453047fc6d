"""The storms' duplicate GOP rows, forced: Lance checks a commit only against the versions still
on disk that came after the version it planned on. Writer B plans its GOP insert, writer A of the
same episode commits, ``compact --older-than 0`` commits a compaction and removes every older
version (A's among them), then B commits: against the compaction alone it looks new, and the
table held every GOP twice. Version cleanup now keeps every version committed since a running
write (an ingest's lease, any other writer's write lease) began."""

from __future__ import annotations

import threading
from datetime import timedelta

import numpy as np
import pyarrow as pa
from lance.dataset import MergeInsertBuilder

import robodata
import robodata.edits.upkeep as upkeep
from robodata.format.tables import gops_uri, open_table
from robodata.integrity.gop_leases import read_records
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


def test_a_cleanup_between_two_writers_of_one_episode_leaves_one_copy(monkeypatch, eight_short_uploads, tmp_path):
    monkeypatch.setattr(upkeep, "CLOCK_SKEW", timedelta(0))  # one host: the versions from before B began go
    root = str(tmp_path / "ds")
    first = robodata.ingest_episode(str(eight_short_uploads[0]), root)
    planned, release = _held_gops_insert(monkeypatch, "writer-b")
    outcome: dict = {}

    def writer_b():
        try:
            outcome["b"] = robodata.ingest_episode(str(eight_short_uploads[1]), root)
        except BaseException as exc:
            outcome["error"] = exc

    b = threading.Thread(target=writer_b, name="writer-b")
    b.start()
    try:
        assert planned.wait(120)
        a = robodata.ingest_episode(str(eight_short_uploads[1]), root)  # writer A commits first
        report = upkeep.upkeep_dataset(root, older_than=timedelta(0), gc_min_age=timedelta(0))
        # B's lease is held (its process is alive): A's versions stay, so B's commit sees A's insert.
        assert len(read_records(root).leases) == 1
        assert report.gops.versions_removed >= 1  # the versions from before B began still go
    finally:
        release.set()
        b.join(120)
    assert "error" not in outcome, outcome.get("error")
    ref_ids = open_table(gops_uri(root)).to_table(columns=["ref_id"])["ref_id"].to_numpy()
    assert len(ref_ids) == len(np.unique(ref_ids)), f"{len(ref_ids) - len(np.unique(ref_ids))} duplicate GOP rows"
    assert outcome["b"].gops_written == 0  # B found A's GOPs and stored none of its own
    assert_one_copy(robodata.open(root), {0: first.rows, 1: a.rows})
    assert read_records(root).leases == []
