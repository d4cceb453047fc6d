"""kill -9 an ingest at a random point (seeded), on a local disk and on s3:// (moto): the dataset
opens, ``verify --decode`` passes, a re-ingest lands one copy of the episode, and garbage
collection removes whatever the killed run staged, its lease included."""

from __future__ import annotations

import random
import shutil
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

import robodata
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.integrity._verify import verify_dataset
from robodata_tests.crash_helpers import killed, lease_files, start
from robodata_tests.dataset_checks import assert_one_copy

pytestmark = pytest.mark.slow

# 16 on a local disk, 4 on s3:// (moto answers a few hundred requests a second): 20 in all
TRIALS = {"local": 16, "s3": 4}
PARALLEL = 4  # children killed at once
SEED = 222


def _trial_plan(seed: int, trials: int) -> list[tuple[str, list]]:
    """(what the root holds before the ingest, where the ingest kills itself: the storage step,
    before / during / after it, and how far into it for "during")."""
    rng = random.Random(seed)
    kinds = ["empty", "other episode", "same episode"]
    # An ingest into an empty root takes 8 storage steps, into an existing dataset 6.
    return [
        (kinds[i % 3], [rng.randint(1, 8), rng.choice(["before", "during", "after"]), round(rng.uniform(0, 0.03), 4)])
        for i in range(trials)
    ]


def _prepare(kind: str, root: str, base: str, s3) -> None:
    if kind == "empty":
        return
    if s3 is None:
        shutil.copytree(base, root)
    else:
        s3.put_tree(base, root)


def _run_trials(roots: list[str], plan, uploads, options) -> list[tuple[bool, list[str]]]:
    """Run the ingests (episode 1 into an empty root or beside episode 0; episode 0 again over
    itself), PARALLEL at a time, each killing itself at its point."""

    def one(i: int) -> tuple[bool, list[str]]:
        kind, kill_at = plan[i]
        upload = uploads[0] if kind == "same episode" else uploads[1]
        return killed(start("ingest", roots[i], options, upload=str(upload), kill_at=kill_at))

    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(pool.map(one, range(len(roots))))


def _check(root: str, kind: str, uploads, options: dict | None, base_rows: dict[int, int]) -> str:
    """The promises after a kill; returns what the kill left (for the counts)."""
    leases = lease_files(root, options)
    frames = open_table(frames_uri(root), options)
    gops = open_table(gops_uri(root), options)
    if frames is not None:
        robodata.open(root, storage_options=options)  # opens
        report = verify_dataset(root, decode=True, storage_options=options)
        assert report.ok, report.summary()
    before = 0 if kind == "empty" else 1  # the version each table had before the ingest
    if frames is not None and frames.version > before:
        where = "after its rows commit" + (", lease left" if leases else "")
    elif gops is not None and gops.version > before:
        where = "between its GOP and rows commits"
    else:
        where = "before its GOP commit" + (", lease left" if leases else "")
    upload = uploads[0] if kind == "same episode" else uploads[1]
    result = robodata.ingest_episode(str(upload), root, storage_options=options)
    expected = {result.episode_index: result.rows}
    if kind != "empty":
        expected = {**base_rows, **expected}
    assert_one_copy(robodata.open(root, storage_options=options), expected)
    garbage = robodata.collect_garbage(root, min_age=timedelta(0), storage_options=options)
    assert lease_files(root, options) == []
    assert garbage.leases_removed == len(leases)
    assert robodata.collect_garbage(root, dry_run=True, storage_options=options).unreferenced == 0
    return where


def _trials(tmp_path, uploads, options, make_root, s3=None) -> dict[str, int]:
    base = str(tmp_path / "base")
    robodata.ingest_episode(str(uploads[0]), base)
    base_rows = {0: len(robodata.open(base))}
    trials = TRIALS["local" if s3 is None else "s3"]
    plan = _trial_plan(SEED if s3 is None else SEED + 1, trials)
    roots = [make_root(i) for i in range(trials)]
    for (kind, _), root in zip(plan, roots, strict=True):
        _prepare(kind, root, base, s3)
    outcomes = _run_trials(roots, plan, uploads, options)

    def check(i: int) -> None:
        if outcomes[i][0]:
            _check(roots[i], plan[i][0], uploads, options, base_rows)

    with ThreadPoolExecutor(PARALLEL) as pool:  # each trial has its own root
        list(pool.map(check, range(trials)))
    where: dict[str, int] = {}
    for (_, kill_at), (was_killed, steps) in zip(plan, outcomes, strict=True):
        landed = f"{kill_at[1]} {steps[-1]}" if was_killed else "finished first"
        where[landed] = where.get(landed, 0) + 1
    print(f"kill -9 trials: {dict(sorted(where.items()))}")
    assert sum(k for k, _ in outcomes) >= trials // 2, where  # most land mid-ingest
    return where


def test_kill_ingest_local(tmp_path, eight_short_uploads):
    _trials(tmp_path, eight_short_uploads, None, lambda i: str(tmp_path / f"ds{i}"))


def test_kill_ingest_s3(tmp_path, eight_short_uploads, s3):
    _trials(tmp_path, eight_short_uploads, s3.storage_options, lambda i: s3.fresh_uri(f"kill{i}"), s3)


@pytest.mark.parametrize(
    ("kind", "gop_commit"),
    [("empty", "commit"), ("other episode", "execute")],  # creating gops.lance; a merge into it
)
def test_kill_between_the_gop_commit_and_the_rows_commit(tmp_path, eight_short_uploads, kind, gop_commit):
    """The window random kills rarely land in: the episode's GOPs committed, its rows not. The
    dataset reads as before, the GOPs stay leased until gc finds the lease dead, then go."""
    base = str(tmp_path / "base")
    robodata.ingest_episode(str(eight_short_uploads[0]), base)
    root = str(tmp_path / "ds")
    _prepare(kind, root, base, None)
    was_killed, steps = killed(
        start("ingest", root, None, upload=str(eight_short_uploads[1]), kill_at=[gop_commit, "after", 0])
    )
    assert was_killed and steps[-1] == gop_commit, steps
    assert len(lease_files(root, None)) == 1
    where = _check(root, kind, eight_short_uploads, None, {0: len(robodata.open(base))})
    assert where == "between its GOP and rows commits"
