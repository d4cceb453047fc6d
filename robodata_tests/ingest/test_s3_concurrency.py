"""Eight episodes ingested at once, by eight separate processes, into one s3:// dataset (what a
Dagster backfill on the multiprocess executor does): each row lands exactly once."""

from __future__ import annotations

import json

import robodata
from robodata_tests.crash_helpers import finish, start
from robodata_tests.dataset_checks import assert_one_copy, gop_rows


def _ingest_in_processes(uploads, root: str, options: dict) -> list[robodata.IngestResult]:
    """Ingest each upload in a process of its own, all at once (Lance is not fork-safe: never a
    fork of this process; see crash_helpers)."""
    procs = [start("ingest", root, options, upload=str(u)) for u in uploads]
    outputs = [finish(proc) for proc in procs]  # a failure fails the test with its traceback
    results = []
    for output in outputs:
        [line] = [x for x in output.splitlines() if x.startswith("result ")]
        results.append(robodata.IngestResult(**json.loads(line.split(" ", 1)[1])))
    return results


def test_eight_writers_one_dataset(s3, s3_root, eight_short_uploads):
    options = s3.storage_options
    results = _ingest_in_processes(eight_short_uploads, s3_root, options)
    # Re-running some of them, again at the same time, must still leave one copy of each.
    again = _ingest_in_processes([eight_short_uploads[2], eight_short_uploads[5]], s3_root, options)
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
