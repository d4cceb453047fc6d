"""Garbage collection racing a re-ingest that reuses stored GOPs: whichever side is held at its
critical point while the other runs, no committed row ever points at a missing GOP."""

from __future__ import annotations

import threading
from datetime import timedelta

import lance
import numpy as np

import robodata
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata_tests.ingest.race_hooks import run_together


class Hold:
    """Stops the first call of ``method`` on ``table`` until released; ``reached`` is set when
    the caller is waiting."""

    def __init__(self) -> None:
        self.reached, self.release, self.used = threading.Event(), threading.Event(), False

    def wait(self) -> None:
        if self.used:
            return
        self.used = True
        self.reached.set()
        assert self.release.wait(120)


def _orphaned_episode(root: str, upload) -> int:
    """Episode 0's GOPs still stored but referenced by no retained frames version (the episode
    was deleted and old versions cleaned up), as a re-ingest of the same upload finds them."""
    robodata.ingest_episode(str(upload), root)
    robodata.delete_episodes(root, [0])
    open_table(frames_uri(root)).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    gops = open_table(gops_uri(root)).count_rows()
    assert robodata.collect_garbage(root, dry_run=True).unreferenced == gops
    return gops


def _all_frames_decode(root: str) -> int:
    ds = robodata.open(root)
    decoded = ds.get_frames(np.arange(len(ds)))
    assert all(array.shape[0] == len(ds) for array in decoded.data.values())
    return len(ds)


def test_gc_while_a_reingest_waits_before_its_frames_commit(monkeypatch, eight_short_uploads, tmp_path):
    uploads = eight_short_uploads  # read only: ingest never writes to an upload
    root = str(tmp_path / "ds")
    gops = _orphaned_episode(root, uploads[0])
    hold = Hold()
    from lance.dataset import MergeInsertBuilder

    original_execute = MergeInsertBuilder.execute
    frames_builders = set()
    original_merge_insert = lance.LanceDataset.merge_insert

    def merge_insert(self, on=None):
        builder = original_merge_insert(self, on)
        if self.uri.rstrip("/").endswith("frames.lance"):
            frames_builders.add(id(builder))
        return builder

    def execute(self, data_obj, *, schema=None):
        if id(self) in frames_builders:
            hold.wait()
        return original_execute(self, data_obj, schema=schema)

    monkeypatch.setattr(lance.LanceDataset, "merge_insert", merge_insert)
    monkeypatch.setattr(MergeInsertBuilder, "execute", execute)

    def gc_while_held():
        assert hold.reached.wait(120)  # the re-ingest has its GOPs and is about to commit its rows
        try:
            return robodata.collect_garbage(root)
        finally:
            hold.release.set()

    result, report = run_together(lambda: robodata.ingest_episode(str(uploads[0]), root), gc_while_held)
    assert report.deleted == 0  # every GOP was leased by the waiting ingest
    assert result.gops == gops and _all_frames_decode(root) == result.rows


def test_a_reingest_while_gc_waits_before_its_delete(monkeypatch, eight_short_uploads, tmp_path):
    uploads = eight_short_uploads  # read only: ingest never writes to an upload
    root = str(tmp_path / "ds")
    gops = _orphaned_episode(root, uploads[0])
    hold = Hold()
    lance_dataset = lance.LanceDataset
    original_delete = lance_dataset.delete

    def delete(self, predicate, *args, **kwargs):
        if self.uri.rstrip("/").endswith("gops.lance"):
            hold.wait()  # GC has decided every GOP of episode 0 is garbage
        return original_delete(self, predicate, *args, **kwargs)

    monkeypatch.setattr(lance_dataset, "delete", delete)

    def ingest_while_gc_waits():
        assert hold.reached.wait(120)
        try:
            return robodata.ingest_episode(str(uploads[0]), root)  # reuses the GOPs GC picked
        finally:
            hold.release.set()

    report, result = run_together(lambda: robodata.collect_garbage(root), ingest_while_gc_waits)
    assert result.gops_written == 0  # the GOPs were reused, not written again
    assert report.deleted == 0  # GC's delete was overtaken, planned again, and found them in use
    assert open_table(gops_uri(root)).count_rows() == gops
    assert _all_frames_decode(root) == result.rows


def test_gc_whose_version_a_cleanup_removes_meanwhile_decides_again(monkeypatch, eight_short_uploads, tmp_path):
    """gc reads the newest gops.lance version at least ``min_age`` old; a compaction's cleanup
    removes that version (manifest first, then its files) after gc listed it and before gc reads
    it. gc decides again on the versions listed now instead of failing on a healthy dataset."""
    import robodata.edits._garbage as garbage
    import robodata.edits._upkeep as upkeep

    monkeypatch.setattr(upkeep, "CLOCK_SKEW", timedelta(0))  # one host: versions from before gc began go
    root = str(tmp_path / "ds")
    orphans = _orphaned_episode(root, eight_short_uploads[0])
    robodata.ingest_episode(str(eight_short_uploads[1]), root)
    settled = open_table(gops_uri(root)).version  # gc's "at least min_age old" version below
    stamp = open_table(gops_uri(root)).versions()[-1]["timestamp"]
    monkeypatch.setattr(garbage, "_age", lambda timestamp: stamp - timestamp)  # ages as of that commit
    upkeep._compact(gops_uri(root), None)  # rewrites its fragments: its files are its own now
    hold = Hold()
    real_checkout = lance.LanceDataset.checkout_version

    def checkout_version(self, version):
        if threading.current_thread().name == "held-gc" and self.uri.rstrip("/").endswith("gops.lance"):
            hold.wait()  # gc has listed gops.lance's versions and picked the settled one
        return real_checkout(self, version)

    monkeypatch.setattr(lance.LanceDataset, "checkout_version", checkout_version)
    outcome = {}

    def gc():
        try:
            outcome["report"] = robodata.collect_garbage(root, min_age=timedelta(0))
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=gc, name="held-gc")
    thread.start()
    try:
        assert hold.reached.wait(120)
        cleaned = upkeep.TableUpkeep(0, 0, 0, 0)
        upkeep._remove_old_versions(root, gops_uri(root), cleaned, timedelta(0), None, timedelta(0), None)
        assert settled not in [v["version"] for v in open_table(gops_uri(root)).versions()]
    finally:
        hold.release.set()
        thread.join(120)
    assert "error" not in outcome, outcome.get("error")
    # Decided again: no version is old enough any more, so every orphan counts as too recent.
    report = outcome["report"]
    assert (report.unreferenced, report.too_recent, report.deleted) == (orphans, orphans, 0)
    assert _all_frames_decode(root) == len(robodata.open(root))
