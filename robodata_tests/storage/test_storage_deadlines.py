"""A store that accepts connections and never answers: ingest, info/open and a warm read each
end with StorageUnreachableError naming the store and the step, within the configured deadline
(here 2 s), instead of retrying forever."""

from __future__ import annotations

import pytest

import robodata
from robodata.cli import main as cli
from robodata.errors import StorageUnreachableError
from robodata.storage._deadlines import TIMEOUT_ENV, TIMEOUT_OPTION, lance_options, storage_timeout_s
from robodata_tests.fixtures.silent_store import SilentProxy


@pytest.fixture
def silent_store(s3):
    s3.start()
    proxy = SilentProxy(("127.0.0.1", s3.port))
    options = {**s3.storage_options, "aws_endpoint": proxy.endpoint}
    # Setting up may be slow on a busy machine; the steps under test get a 2 s deadline.
    yield proxy, {**options, TIMEOUT_OPTION: "60"}, {**options, TIMEOUT_OPTION: "2"}
    proxy.close()


def _assert_names_store_and_step(error: pytest.ExceptionInfo, proxy: SilentProxy, step: str, secret: str) -> None:
    message = str(error.value)
    assert f"could not reach {proxy.endpoint} while {step}" in message, message
    assert secret not in message


def test_ingest_open_and_a_warm_read_meet_the_deadline(silent_store, s3, eight_short_uploads):
    proxy, relaxed, options = silent_store
    root = s3.fresh_uri("silent")
    robodata.ingest_episode(str(eight_short_uploads[0]), root, storage_options=relaxed)
    ds = robodata.open(root, storage_options=options)
    warm = ds.get_frames([3], cameras="top")  # indexes loaded: the next read is warm
    assert warm["top"].shape[0] == 1
    proxy.go_silent()

    with pytest.raises(StorageUnreachableError) as error:  # warm read
        ds.get_frames([40], cameras="top")
    _assert_names_store_and_step(error, proxy, "reading 1 GOPs", s3.secret_key)
    assert "no answer within 2 s" in str(error.value)
    with pytest.raises(StorageUnreachableError) as error:  # a row's values
        ds[5]
    _assert_names_store_and_step(error, proxy, "reading row 5", s3.secret_key)
    with pytest.raises(StorageUnreachableError) as error:  # open
        robodata.open(root, storage_options=options)
    _assert_names_store_and_step(error, proxy, "opening the dataset", s3.secret_key)
    with pytest.raises(StorageUnreachableError) as error:  # ingest
        robodata.ingest_episode(str(eight_short_uploads[1]), root, storage_options=options)
    _assert_names_store_and_step(error, proxy, "reading the dataset's schema", s3.secret_key)


def test_robodata_info_meets_the_deadline(silent_store, s3, monkeypatch, capsys):
    proxy, _, _ = silent_store
    proxy.go_silent()
    for name, value in {**s3.environ, "AWS_ENDPOINT_URL": proxy.endpoint, TIMEOUT_ENV: "2"}.items():
        monkeypatch.setenv(name, value)
    try:
        code = cli(["info", s3.fresh_uri("silent-info")])
    except StorageUnreachableError as exc:  # the CLI may let it through or print it and exit 2
        message = str(exc)
    else:
        assert code == 2
        message = capsys.readouterr().err
    assert f"could not reach {proxy.endpoint} while opening the dataset" in message
    assert s3.secret_key not in message


def test_the_deadline_is_configurable_and_reaches_every_request(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert storage_timeout_s() == 60.0
    monkeypatch.setenv(TIMEOUT_ENV, "7.5")
    assert storage_timeout_s() == 7.5
    assert storage_timeout_s({TIMEOUT_OPTION: "3"}) == 3.0  # an explicit option wins
    options = lance_options("s3://b/ds/frames.lance", {"aws_region": "x", TIMEOUT_OPTION: "3"})
    assert options == {"aws_region": "x", "timeout": "3s", "connect_timeout": "3s", "client_retry_timeout": "3"}
    assert lance_options("/local/ds/frames.lance", None) is None
    with pytest.raises(ValueError, match="must be a number of seconds"):
        storage_timeout_s({TIMEOUT_OPTION: "soon"})


def test_listing_and_reading_uploads_meet_the_deadline(silent_store, s3, eight_short_uploads):
    from robodata.ingest import read_upload
    from robodata.storage._uploads import list_complete_uploads

    proxy, relaxed, options = silent_store
    uploads = s3.fresh_uri("silent-uploads")
    s3.put_tree(eight_short_uploads[0], f"{uploads}/episode_000000")
    assert [u.episode_id for u in list_complete_uploads(uploads, relaxed)] == ["episode_000000"]
    proxy.go_silent()
    with pytest.raises(StorageUnreachableError) as error:
        list_complete_uploads(uploads, options)
    _assert_names_store_and_step(error, proxy, "listing uploads", s3.secret_key)
    with pytest.raises(StorageUnreachableError) as error:
        read_upload(f"{uploads}/episode_000000", options)
    _assert_names_store_and_step(error, proxy, "reading the upload", s3.secret_key)


def test_the_dagster_resource_carries_the_deadline(monkeypatch):
    from robodata.orchestration.defs.resources import DatasetStore

    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert storage_timeout_s(DatasetStore(root="/tmp/ds", storage_timeout_s=4).storage_options()) == 4.0
    assert storage_timeout_s(DatasetStore(root="/tmp/ds").storage_options()) == 60.0


def test_a_commit_whose_store_goes_silent_ends_with_the_error(silent_store, s3, eight_short_uploads, monkeypatch):
    from robodata.ingest import _writer as writer

    proxy, relaxed, options = silent_store
    root = s3.fresh_uri("silent-commit")
    first = robodata.ingest_episode(str(eight_short_uploads[0]), root, storage_options=relaxed)
    commit = writer.replace_episode_rows

    def silent_then_commit(*args):
        proxy.go_silent()
        return commit(*args[:-1], options)  # the last argument: the storage options

    monkeypatch.setattr(writer, "replace_episode_rows", silent_then_commit)
    with pytest.raises(StorageUnreachableError) as error:
        robodata.ingest_episode(str(eight_short_uploads[1]), root, storage_options=relaxed)
    _assert_names_store_and_step(error, proxy, "committing episode 1's rows", s3.secret_key)
    monkeypatch.undo()
    assert robodata.open(root, storage_options=s3.storage_options).version == first.frames_version


def test_a_commit_conflict_under_a_storage_step_stays_a_conflict():
    """Wrapping an edit's commit in the deadline helper must not make another writer's win look
    like an unreachable store (Lance's conflict message also says LanceError(IO)): the caller
    sees the conflict and can retry it."""
    from robodata.storage._failures import storage_call

    conflict = OSError("LanceError(IO): Retryable commit conflict for version 7: preempted by concurrent Rewrite")

    def commit():
        raise conflict

    with pytest.raises(OSError) as error:
        storage_call("adding label columns", "s3://lab/ds/frames.lance", None, commit)
    assert error.value is conflict
    with pytest.raises(StorageUnreachableError):  # a store that did not answer still is one
        storage_call(
            "adding label columns",
            "s3://lab/ds/frames.lance",
            None,
            _raise,
            OSError("LanceError(IO): error sending request"),
        )


def _raise(exc: BaseException):
    raise exc
