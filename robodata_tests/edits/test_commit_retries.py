"""Commit conflicts are retried by every writer (one helper, ``robodata.format._commits``): an
annotation overtaken by a compaction lands; a writer that keeps losing gets one line naming the
table and the conflict, never Lance's raw "Please retry" text or its source paths."""

from __future__ import annotations

import threading
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import robodata
import robodata.edits._upkeep as upkeep
import robodata.format._commits as commits
from robodata.format._commits import retry_commit
from robodata.format._tables import frames_uri, open_frames

ROUNDS = 4
LANCE_CONFLICT = (
    "Retryable commit conflict for version 9: This Update transaction was preempted by concurrent "
    "transaction Rewrite at version 9. Please retry., /home/runner/work/lance/lance/rust/lance/src/io/commit.rs:1067:17"
)


def test_a_conflict_is_retried_then_reported_in_one_line():
    calls = []

    def always_loses():
        calls.append(1)
        raise OSError(LANCE_CONFLICT)

    with pytest.raises(robodata.CommitConflictError) as raised:
        retry_commit("adding labels ['success']", "ds/frames.lance", always_loses, attempts=3, base_delay_s=0)
    message = str(raised.value)
    assert len(calls) == 3
    assert message == (
        "ds/frames.lance: adding labels ['success'] lost to a concurrent Rewrite commit (version 9) 3 times in "
        "a row, each time planned again on the newer version; nothing of it was committed, run it again"
    )
    assert "\n" not in message and "Please retry" not in message and ".rs:" not in message


def test_other_errors_are_not_retried():
    calls = []

    def fails():
        calls.append(1)
        raise ValueError("Not found: ds/frames.lance")

    with pytest.raises(ValueError, match="Not found"):
        retry_commit("deleting episodes [1]", "ds/frames.lance", fails, base_delay_s=0)
    assert len(calls) == 1


@pytest.mark.parametrize("attempts", [1, commits.ATTEMPTS])
def test_an_annotation_that_loses_its_commit_is_planned_again(monkeypatch, dataset_copy, attempts):
    """Lance 14 rebases most annotation/compaction pairs itself; the ones it cannot (the issue's
    3 of 16) raise its retryable conflict, given here to the first commit: retried, the labels
    land; with one attempt (no retry) the user gets the one-line error and nothing is written."""
    monkeypatch.setitem(commits.retry_commit.__kwdefaults__, "attempts", attempts)
    monkeypatch.setitem(commits.retry_commit.__kwdefaults__, "base_delay_s", 0.0)
    root = dataset_copy
    real_add_columns = lance.LanceDataset.add_columns
    lost = []

    def add_columns(self, *args, **kwargs):
        if not lost:
            lost.append(self.version)
            raise OSError(LANCE_CONFLICT)
        return real_add_columns(self, *args, **kwargs)

    monkeypatch.setattr(lance.LanceDataset, "add_columns", add_columns)
    before = open_frames(root).version
    labels = pa.table({"episode_index": [0, 2], "frame_index": [3, 4], "success": [True, False]})
    if attempts == 1:
        with pytest.raises(robodata.CommitConflictError, match=r"frames.lance: adding labels \['success'\] lost to"):
            robodata.add_annotations(root, labels)
        assert open_frames(root).version == before
        return
    assert robodata.add_annotations(root, labels).version == before + 1
    columns = ["episode_index", "frame_index", "success"]
    stored = open_frames(root).to_table(columns=columns, filter="success IS NOT NULL")
    found = sorted(zip(*(stored[c].to_pylist() for c in columns), strict=True))
    assert found == [(0, 3, True), (2, 4, False)]


@pytest.mark.slow
def test_annotations_beside_compactions_always_land(dataset_copy, uploads):
    """The issue's case: annotate while compact runs, ROUNDS rounds; every label lands."""
    root = dataset_copy
    errors: list[BaseException] = []
    for round_ in range(ROUNDS):
        robodata.ingest_episode(str(uploads[round_ % 3]), root)  # a fragment to compact
        name = f"label_{round_}"
        start = threading.Barrier(2)

        def run(fn, start=start):
            start.wait()
            try:
                fn()
            except BaseException as exc:
                errors.append(exc)

        labels = pa.table({"episode_index": [0, 1, 2], "frame_index": [round_] * 3, name: [round_] * 3})
        threads = [
            threading.Thread(target=run, args=(lambda labels=labels: robodata.add_annotations(root, labels),)),
            threading.Thread(
                target=run,
                args=(lambda: upkeep.upkeep_dataset(root, older_than=timedelta(days=1), gc_min_age=timedelta(0)),),
            ),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors, errors[0]
    table = open_frames(root).to_table()
    for round_ in range(ROUNDS):
        name = f"label_{round_}"
        labelled = table.filter(pa.compute.is_valid(table[name]))
        assert sorted(labelled["episode_index"].to_pylist()) == [0, 1, 2], name
        assert set(labelled["frame_index"].to_pylist()) == {round_}
    assert frames_uri(root)


@pytest.mark.parametrize("vanished", ["manifest", "data-files"])
def test_an_annotation_whose_version_a_cleanup_removed_is_planned_again(monkeypatch, dataset_copy, vanished):
    """The issue's annotate beside gc / ``compact --older-than 0``: a cleanup removes the versions
    the labels' commit is checked against (Lance then reads a manifest that is gone: "Not found:
    .../_versions/N.manifest", raised here as Lance words it) or, after a compaction, the data
    files they were planned on (Lance's own error). Lance's raw "Not found" reached the user; now
    the write is planned again on the newest version and lands."""
    monkeypatch.setitem(commits.retry_commit.__kwdefaults__, "base_delay_s", 0.0)
    root = dataset_copy
    real_add_columns = lance.LanceDataset.add_columns
    calls: list[int] = []

    def add_columns(self, *args, **kwargs):
        calls.append(self.version)
        if len(calls) == 1:  # another writer commits, then a cleanup removes every older version
            latest = open_frames(root)
            if vanished == "data-files":
                latest.optimize.compact_files(materialize_deletions_threshold=0.0)
            else:
                latest.create_scalar_index("frame_index", "BTREE")
            open_frames(root).cleanup_old_versions(older_than=timedelta(0))
            assert self.version not in [v["version"] for v in open_frames(root).versions()]
            if vanished == "manifest":
                manifest = f"{root.lstrip('/')}/frames.lance/_versions/{self.version + 1}.manifest"
                raise OSError(f"Not found: {manifest}, /home/runner/work/lance/lance/rust/lance-io/src/local.rs:273:40")
        return real_add_columns(self, *args, **kwargs)

    monkeypatch.setattr(lance.LanceDataset, "add_columns", add_columns)
    labels = pa.table({"episode_index": [0, 1], "frame_index": [2, 3], "grasp_ok": [True, False]})
    result = robodata.add_annotations(root, labels)
    assert len(calls) == 2 and calls[1] > calls[0]  # planned again, on the newest version
    assert result.version == open_frames(root).version
    columns = ["episode_index", "frame_index", "grasp_ok"]
    stored = open_frames(root).to_table(columns=columns, filter="grasp_ok IS NOT NULL")
    assert sorted(zip(*(stored[c].to_pylist() for c in columns), strict=True)) == [(0, 2, True), (1, 3, False)]


def test_a_file_missing_on_every_attempt_is_reported_as_missing_not_in_lance_words():
    calls = []

    def always_missing():
        calls.append(1)
        raise ValueError(
            "Dataset at path ds/frames.lance/_versions/7.manifest was not found: Not found: "
            "ds/frames.lance/_versions/7.manifest, /home/runner/work/lance/lance/rust/lance-io/src/local.rs:273:40"
        )

    with pytest.raises(robodata.StorageError) as raised:
        retry_commit("adding labels ['success']", "ds/frames.lance", always_missing, attempts=3, base_delay_s=0)
    assert len(calls) == 3
    assert str(raised.value) == (
        "ds/frames.lance: ds/frames.lance/_versions/7.manifest is missing while adding labels ['success'], though "
        "each attempt was planned on the newest version; restore it from a backup or a replica"
    )
