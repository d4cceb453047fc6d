"""kill -9 a compaction (``compact --older-than 0s``) and a garbage collection at named points,
each in a process of its own: before and after each of their commits, between the manifests and
the files of a version cleanup, and the moment the first data file or manifest of a table is
deleted (inside Lance's native code, where a timed kill rarely lands). After each kill every
listed version opens and verifies, ``gc`` and ``verify`` pass, and compacting again works."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

import robodata
from robodata.edits._old_versions import remove_old_versions
from robodata.edits._upkeep import upkeep_dataset
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.integrity._verify import verify_dataset
from robodata_tests.crash_helpers import killed, start
from robodata_tests.dataset_checks import assert_one_copy

pytestmark = pytest.mark.slow

PARALLEL = 4
# The steps of an upkeep and of a gc a kill lands on (crash_helpers' "hooks").
HOOKS = [
    "robodata.edits._upkeep:_commit_compaction",
    "robodata.edits._old_versions:_remove",
    "lance:LanceDataset.create_scalar_index",
    "lance:LanceDataset.delete",
    "robodata.edits._garbage:remove_records",
]
# (operation, where it kills itself). _remove#1 / #2: a table's old manifests, then its files.
KILLS = [
    ("compact", {"kill_at": ["_commit_compaction", "after", 0]}),
    ("compact", {"kill_at": ["create_scalar_index", "after", 0]}),
    ("compact", {"kill_at": ["_remove#1", "after", 0]}),  # frames.lance's old manifests gone
    ("compact", {"kill_at": ["_remove#2", "before", 0]}),
    ("compact", {"kill_at": ["delete", "after", 0]}),  # gc's delete, before gops.lance's compaction
    ("compact", {"kill_at": ["_commit_compaction#2", "after", 0]}),
    ("compact", {"kill_at": ["_remove#3", "after", 0]}),  # gops.lance's old manifests gone
    ("compact", {"kill_on_delete": "frames.lance/data"}),
    ("compact", {"kill_on_delete": "gops.lance/data"}),
    ("compact", {"kill_on_delete": "frames.lance/_versions"}),
    ("gc", {"kill_at": ["delete", "before", 0]}),
    ("gc", {"kill_at": ["delete", "after", 0]}),
    ("gc", {"kill_at": ["remove_records", "after", 0]}),
]


@pytest.fixture(scope="module")
def base(eight_short_uploads, tmp_path_factory) -> tuple[str, dict[int, int]]:
    """Three episodes, one re-ingested and one deleted: old versions, old data files and
    unreferenced GOPs for upkeep to remove."""
    root = str(tmp_path_factory.mktemp("kill-upkeep") / "base")
    rows = {e: robodata.ingest_episode(str(eight_short_uploads[e]), root).rows for e in (0, 1, 2)}
    robodata.ingest_episode(str(eight_short_uploads[1]), root)
    robodata.delete_episodes(root, [2])
    rows.pop(2)
    return root, rows


def _assert_readable(root: str, rows: dict[int, int]) -> None:
    """Every listed version of frames.lance opens and verifies; the newest holds ``rows``."""
    for info in open_table(frames_uri(root)).versions():
        report = verify_dataset(root, version=info["version"])
        assert report.ok, (info["version"], report.summary())
    for info in open_table(gops_uri(root)).versions():
        open_table(gops_uri(root), version=info["version"]).to_table(columns=["ref_id", "episode_index"])
    assert_one_copy(robodata.open(root), rows)
    report = verify_dataset(root, leftovers_min_age=timedelta(0))
    assert report.ok, report.summary()


def test_kills_inside_compaction_and_gc_leave_every_listed_version_readable(base, tmp_path):
    source, rows = base
    roots = [str(tmp_path / f"ds{i}") for i in range(len(KILLS))]
    for (op, _), root in zip(KILLS, roots, strict=True):
        shutil.copytree(source, root)
        if op == "gc":  # episode 2's GOPs become unreferenced: gc has a delete to make
            remove_old_versions(frames_uri(root), older_than=timedelta(0))

    def run(i: int) -> tuple[bool, list[str]]:
        op, where = KILLS[i]
        return killed(start(op, roots[i], None, hooks=HOOKS, **where))

    with ThreadPoolExecutor(PARALLEL) as pool:
        outcomes = list(pool.map(run, range(len(KILLS))))
    assert [was_killed for was_killed, _ in outcomes] == [True] * len(KILLS), list(zip(KILLS, outcomes, strict=True))

    def check(i: int) -> None:
        root = roots[i]
        _assert_readable(root, rows)
        robodata.collect_garbage(root, min_age=timedelta(0))
        _assert_readable(root, rows)
        upkeep_dataset(root, older_than=timedelta(0), gc_min_age=timedelta(0))  # finishes what the kill left
        _assert_readable(root, rows)
        assert [v["version"] for v in open_table(frames_uri(root)).versions()] == [open_table(frames_uri(root)).version]

    with ThreadPoolExecutor(PARALLEL) as pool:
        list(pool.map(check, range(len(KILLS))))
