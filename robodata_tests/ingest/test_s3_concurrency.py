"""Eight episodes ingested at once, by eight separate processes, into one s3:// dataset (what a
Dagster backfill on the multiprocess executor does): each row lands exactly once."""

from __future__ import annotations

import multiprocessing
import traceback

import robodata
from robodata_tests.dataset_checks import assert_one_copy, gop_rows


def _ingest(args: tuple[str, str, dict]) -> robodata.IngestResult | str:
    upload, root, options = args
    try:
        return robodata.ingest_episode(upload, root, storage_options=options)
    except Exception:  # reported to the parent, which fails the test with it
        return traceback.format_exc()


def _ingest_in_processes(pool, uploads, root: str, options: dict) -> list[robodata.IngestResult]:
    results = pool.map(_ingest, [(str(u), root, options) for u in uploads], chunksize=1)
    failures = [r for r in results if isinstance(r, str)]
    assert not failures, failures[0]
    return results


def test_eight_writers_one_dataset(s3, s3_root, eight_short_uploads):
    options = s3.storage_options
    # Lance is not fork-safe: every worker is a fresh interpreter.
    with multiprocessing.get_context("spawn").Pool(len(eight_short_uploads)) as pool:
        results = _ingest_in_processes(pool, eight_short_uploads, s3_root, options)
        # Re-running some of them, again at the same time, must still leave one copy of each.
        again = _ingest_in_processes(pool, [eight_short_uploads[2], eight_short_uploads[5]], s3_root, options)
    # Every ingest is its own commit: versions 1..8, no commit lost or merged.
    assert sorted(r.frames_version for r in results) == list(range(1, 9))
    rows = {r.episode_index: r.rows for r in results}
    first_pass = robodata.open(s3_root, version=8, storage_options=options)
    assert len(first_pass) == sum(rows.values())
    assert_one_copy(first_pass, rows)

    assert sorted(r.frames_version for r in again) == [9, 10]
    assert all(r.gops_written == 0 for r in again)
    ds = robodata.open(s3_root, storage_options=options)
    assert ds.version == 10
    assert_one_copy(ds, rows)
    assert gop_rows(s3_root, options) == {r.episode_index: r.gops for r in results}
