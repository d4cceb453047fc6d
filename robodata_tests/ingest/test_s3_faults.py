"""The S3 server goes away in the middle of an ingest: the error says what could not be reached,
the dataset stays at its old version (never a partial episode), unreferenced GOPs are invisible
and `robodata gc` removes them, and a rerun after the server is back leaves one copy."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

import robodata
from robodata.cli import main as cli
from robodata.errors import StorageUnreachableError
from robodata.ingest import _writer as writer
from robodata_tests.dataset_checks import assert_one_copy, gop_rows


@pytest.fixture
def private_s3(module_s3):
    """The module's server (its tests stop it, kill it and start it again), running and without
    a fault switch armed, whatever the test before left; each test writes under its own prefix."""
    module_s3.start()  # a no-op unless the test before left it stopped or dead
    module_s3.disarm()
    return module_s3


def _options(server) -> dict[str, str]:
    # No retries (Lance defaults to three) keeps each unreachable-server failure short.
    return {**server.storage_options, "client_max_retries": "0"}


def _assert_names_the_store(error: pytest.ExceptionInfo, server, step: str, table: str) -> None:
    message = str(error.value)
    assert f"could not reach {server.endpoint} while {step}" in message
    assert table in message
    assert server.secret_key not in message and server.access_key not in message


def test_server_stops_between_gop_write_and_frames_commit(private_s3, eight_short_uploads, monkeypatch, capsys):
    server, options = private_s3, _options(private_s3)
    root = server.fresh_uri("stop-before-commit")
    first = robodata.ingest_episode(str(eight_short_uploads[0]), root, storage_options=options)
    before = robodata.open(root, storage_options=options)
    frame_before = before.get_frames([5], cameras="top")["top"]

    commit = writer.replace_episode_rows

    def stop_then_commit(*args, **kwargs):
        server.stop()
        return commit(*args, **kwargs)

    monkeypatch.setattr(writer, "replace_episode_rows", stop_then_commit)
    with pytest.raises(StorageUnreachableError) as error:
        robodata.ingest_episode(str(eight_short_uploads[1]), root, storage_options=options)
    _assert_names_the_store(error, server, "committing episode 1's rows", f"{root}/frames.lance")
    with pytest.raises(StorageUnreachableError) as error:  # a reader meets the same clear error
        robodata.open(root, storage_options=options)
    _assert_names_the_store(error, server, "opening the dataset", f"{root}/frames.lance")
    monkeypatch.undo()
    server.start()

    # The failed run's GOPs were written but nothing points at them: readers see the old version.
    after = robodata.open(root, storage_options=options)
    assert (after.version, len(after)) == (before.version, first.rows)
    np.testing.assert_array_equal(after.get_frames([5], cameras="top")["top"], frame_before)
    assert gop_rows(root, options) == {0: first.gops, 1: first.gops}

    # The documented cleanup step removes them, and only them; with a minimum age (the CLI's
    # default) it leaves GOPs young enough to belong to an ingest that is still running.
    dry = robodata.collect_garbage(root, dry_run=True, storage_options=options)
    assert (dry.unreferenced, dry.deleted) == (first.gops, 0)
    young = robodata.collect_garbage(root, storage_options=options, min_age=timedelta(hours=1))
    assert (young.unreferenced, young.too_recent, young.deleted) == (first.gops, first.gops, 0)
    for name, value in server.environ.items():
        monkeypatch.setenv(name, value)
    assert cli(["gc", root, "--min-age-minutes", "0"]) == 0
    assert f"{first.gops} unreferenced GOP rows; deleted {first.gops}" in capsys.readouterr().out
    assert gop_rows(root, options) == {0: first.gops}
    assert_one_copy(robodata.open(root, storage_options=options), {0: first.rows})

    rerun = robodata.ingest_episode(str(eight_short_uploads[1]), root, storage_options=options)
    ds = robodata.open(root, storage_options=options)
    assert ds.version == rerun.frames_version == before.version + 1
    assert_one_copy(ds, {0: first.rows, 1: rerun.rows})
    assert gop_rows(root, options) == {0: first.gops, 1: rerun.gops}


@pytest.mark.parametrize(
    "table, step",
    [("frames.lance", "committing episode 1's rows"), ("gops.lance", "writing episode 1's GOPs")],
    ids=["frames-commit", "gops-commit"],
)
def test_server_dies_during_a_commit(private_s3, eight_short_uploads, table, step):
    server, options = private_s3, _options(private_s3)
    root = server.fresh_uri(f"die-in-{table}")
    first = robodata.ingest_episode(str(eight_short_uploads[0]), root, storage_options=options)
    old_version = robodata.open(root, storage_options=options).version

    # The process exits, unanswered, as the commit's manifest PUT arrives.
    server.die_on("PUT", f"{table}/_versions/")
    with pytest.raises(StorageUnreachableError) as error:
        robodata.ingest_episode(str(eight_short_uploads[1]), root, storage_options=options)
    assert server.wait_exited() == 1
    _assert_names_the_store(error, server, step, f"{root}/{table}")
    server.start()

    ds = robodata.open(root, storage_options=options)
    if ds.version == old_version:
        assert_one_copy(ds, {0: first.rows})
    else:  # the commit landed before the server went: then the whole episode is there
        assert_one_copy(ds, {0: first.rows, 1: first.rows})

    rerun = robodata.ingest_episode(str(eight_short_uploads[1]), root, storage_options=options)
    again = robodata.ingest_episode(str(eight_short_uploads[1]), root, storage_options=options)
    assert again.gops_written == 0
    ds = robodata.open(root, storage_options=options)
    assert ds.version == again.frames_version
    assert_one_copy(ds, {0: first.rows, 1: rerun.rows})
    assert gop_rows(root, options) == {0: first.gops, 1: rerun.gops}
