"""Dataset upkeep: compaction, version retention that keeps tags, GC, scalar indexes; exact reads
before and after, and ingests racing a compaction."""

import threading
from datetime import timedelta

import numpy as np
import pytest

import robodata
from benchmarks.tiny_episodes import episode_level, frame_level, identify, tiny_episode
from robodata.edits import _upkeep as upkeep
from robodata.edits._upkeep import upkeep_dataset
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.ingest import _writer as writer
from robodata.ingest._writer import write_episode

NOW = {"older_than": timedelta(0)}  # remove every untagged old version


def write_tiny(root: str, indices) -> None:
    for index in indices:
        write_episode(tiny_episode(index), root)


def assert_reads_exactly(ds, episodes: list[int]) -> None:
    """Every row of ``ds`` is its episode's row, and every frame decodes to its planted level."""
    table = ds.to_table(columns=["episode_index", "frame_index"])
    pairs = sorted(zip(table["episode_index"].to_pylist(), table["frame_index"].to_pylist(), strict=True))
    assert pairs == [(e, f) for e in episodes for f in range(10)]  # one copy of each, no more
    rows = [int(i) for i in np.arange(len(ds))]
    frames = ds.get_frames(rows, cameras="cam")["cam"]
    for row, frame in zip(rows, frames, strict=True):
        episode, index = table["episode_index"][row].as_py(), table["frame_index"][row].as_py()
        seen = identify(frame)
        assert abs(seen[0] - episode_level(episode)) <= 3 and abs(seen[1] - frame_level(index)) <= 3, (row, seen)


@pytest.fixture
def tiny_dataset(tmp_path) -> str:
    root = str(tmp_path / "ds")
    write_tiny(root, range(6))
    return root


def test_upkeep_compacts_indexes_and_collects_while_reads_stay_exact(tiny_dataset):
    root = tiny_dataset
    robodata.open(root).lance_dataset.tags.create("run-a", 3)  # episodes 0-2
    write_tiny(root, [6, 7])
    robodata.delete_episodes(root, [7])  # its GOPs become garbage once old versions go (and its fragment)
    before = robodata.open(root)
    assert_reads_exactly(before, [0, 1, 2, 3, 4, 5, 6])  # loads the GOP index before upkeep

    kept = upkeep_dataset(root, gc_min_age=timedelta(0))  # default retention: a week
    assert kept.frames.fragments_before == 7 and kept.frames.fragments_after == 1
    assert kept.gops.fragments_after == 1 and kept.frames.versions_removed == 0
    assert_reads_exactly(before, [0, 1, 2, 3, 4, 5, 6])  # a reader opened before compaction

    report = upkeep_dataset(root, gc_min_age=timedelta(0), **NOW)
    assert report.garbage.deleted == 3  # episode 7's three GOPs (10 frames, G=4)
    assert report.frames.versions_removed > 0 and report.gops.versions_removed > 0
    assert report.frames.indexes == ["episode_index (updated)"]
    assert report.gops.indexes == ["ref_id (updated)", "episode_index (updated)"]
    assert_reads_exactly(robodata.open(root), [0, 1, 2, 3, 4, 5, 6])
    assert_reads_exactly(robodata.open(root, version="run-a"), [0, 1, 2])  # the tag kept its version
    frames = open_table(frames_uri(root))
    assert [v["version"] for v in frames.versions()] == [3, frames.version]
    assert len(open_table(gops_uri(root)).get_fragments()) == 1


def test_upkeep_creates_indexes_then_folds_new_rows_into_them(tiny_dataset):
    first = upkeep_dataset(tiny_dataset, **NOW)
    assert first.frames.indexes == ["episode_index (created)"]
    assert first.gops.indexes == ["ref_id (created)", "episode_index (created)"]
    write_tiny(tiny_dataset, [6])
    frames = open_table(frames_uri(tiny_dataset))
    assert frames.to_table(filter="episode_index = 6")["frame_index"].to_pylist() == list(range(10))
    second = upkeep_dataset(tiny_dataset, **NOW)
    assert second.frames.indexes == ["episode_index (updated)"]
    assert_reads_exactly(robodata.open(tiny_dataset), [0, 1, 2, 3, 4, 5, 6])


def hold(module, name: str, first_only: bool = True):
    """Replace ``module.name`` so its first call waits at the start until released."""
    original = getattr(module, name)
    reached, release, calls = threading.Event(), threading.Event(), []

    def held(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1 or not first_only:
            reached.set()
            assert release.wait(120), "never released"
        return original(*args, **kwargs)

    held.calls = calls
    return held, reached, release


def test_an_ingest_held_at_its_commit_survives_a_whole_upkeep(tiny_dataset, monkeypatch):
    held, reached, release = hold(writer, "replace_episode_rows")
    monkeypatch.setattr(writer, "replace_episode_rows", held)
    errors = []

    def ingest():
        try:
            write_tiny(tiny_dataset, [3, 9])  # a re-ingest, then a new episode
        except Exception as exc:  # reported by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=ingest)
    thread.start()
    assert reached.wait(120)  # episode 3's GOPs are written, its rows not committed
    upkeep_dataset(tiny_dataset, **NOW)  # default gc_min_age: the fresh GOPs are kept
    release.set()
    thread.join(120)
    assert errors == []
    assert_reads_exactly(robodata.open(tiny_dataset), [0, 1, 2, 3, 4, 5, 9])


def test_a_compaction_held_at_its_commit_while_ingests_commit(tiny_dataset, monkeypatch):
    held, reached, release = hold(upkeep, "_commit_compaction")
    monkeypatch.setattr(upkeep, "_commit_compaction", held)
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(report=upkeep_dataset(tiny_dataset, **NOW)))
    thread.start()
    assert reached.wait(120)  # frames.lance's fragments are rewritten, not yet committed
    write_tiny(tiny_dataset, [2, 8])  # rewrites rows of a fragment being compacted, and appends
    release.set()
    thread.join(120)
    # The rewrite lost to the ingest's commit and was planned again: frames twice, gops once.
    assert len(held.calls) == 3 and outcome["report"].frames.fragments_after == 1
    assert_reads_exactly(robodata.open(tiny_dataset), [0, 1, 2, 3, 4, 5, 8])
