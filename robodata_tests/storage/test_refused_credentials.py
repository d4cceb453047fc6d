"""Credentials the store refuses (403) are a clear one-line error naming the store, on the write
and the read path, through the API and the CLI; nothing is created and no credential is shown.

The store is moto's standalone server with its IAM authentication switched on (what
``INITIAL_NO_AUTH_ACTION_COUNT=0`` does, switched at run time, on this module's private server
only, during each test): every request signed with a key moto's IAM does not know is answered
``403 InvalidAccessKeyId``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import robodata
from robodata.errors import DatasetLocationError, StorageError
from robodata.storage import fsspec_filesystem

REPO_ROOT = Path(__file__).resolve().parents[2]
WRONG_KEY = "AKIAREFUSEDKEY0000001"
WRONG_SECRET = "REFUSED-SECRET-do-not-show-7f3a"


def _keys(server) -> list[str]:
    """Every object key in the server's bucket (read with the server's own, accepted, keys)."""
    return sorted(fsspec_filesystem(server.uri(), server.storage_options).find(server.uri()))


@pytest.fixture(scope="module")
def one_episode_store(module_s3, sample_uploads):
    """This module's own moto server, holding a one-episode dataset at ``ds``."""
    root = module_s3.uri("ds")
    robodata.ingest_episode(str(sample_uploads[0]), root, storage_options=module_s3.storage_options)
    return module_s3, root


@pytest.fixture
def refusing_store(one_episode_store):
    """The module's server with IAM authentication on for the test; yields (server, dataset
    root, the keys stored before)."""
    server, root = one_episode_store
    before = _keys(server)
    server.require_auth(True)
    yield server, root, before
    server.require_auth(False)  # so the check below can list the bucket
    assert _keys(server) == before  # nothing created, nothing changed


def _refused_options(server) -> dict[str, str]:
    return {**server.storage_options, "aws_access_key_id": WRONG_KEY, "aws_secret_access_key": WRONG_SECRET}


def _assert_clear(message: str, server) -> None:
    assert "\n" not in message, message
    for secret in (WRONG_SECRET, WRONG_KEY, server.secret_key, server.access_key):
        assert secret not in message, message
    assert "<?xml" not in message, message  # the store's answer in a few words, not its XML


@pytest.mark.s3
def test_refused_credentials_are_one_clear_line_and_write_nothing(refusing_store, sample_uploads, tmp_path):
    server, root, _ = refusing_store
    options = _refused_options(server)
    new_root = server.uri("new-ds")
    upload = str(sample_uploads[1])

    # Writing into a new dataset: the bucket check (before anything is encoded) is refused.
    with pytest.raises(DatasetLocationError) as raised:
        robodata.ingest_episode(upload, new_root, storage_options=options)
    message = str(raised.value)
    _assert_clear(message, server)
    assert message == (
        f"{new_root}: access to bucket '{server.bucket}' at {server.endpoint} was denied (Forbidden); "
        "check the credentials and the bucket policy. Nothing was written"
    )

    # Importing (here ALOHA HDF5) is refused the same way, before any episode is read.
    from robodata.interop import import_hdf5
    from robodata_tests.interop.test_hdf5_import import _write_episode

    (tmp_path / "aloha").mkdir()
    _write_episode(tmp_path / "aloha" / "episode_0.hdf5", 0, compress=False)
    with pytest.raises(DatasetLocationError, match=f"^{new_root}: access to bucket .* was denied") as raised:
        import_hdf5(str(tmp_path / "aloha" / "episode_*.hdf5"), new_root, storage_options=options, progress=False)
    _assert_clear(str(raised.value), server)

    # Reading the existing dataset: Lance's first request is refused.
    with pytest.raises(StorageError) as raised:
        robodata.open(root, storage_options=options)
    message = str(raised.value)
    _assert_clear(message, server)
    assert message == (
        f"{root}/frames.lance: {server.endpoint} refused a request while opening the dataset: 403 Forbidden "
        "(InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.); "
        "check the credentials and the bucket policy"
    )

    # Writing into the existing dataset: refused the same way, before anything is encoded.
    with pytest.raises(DatasetLocationError, match=f"^{root}: access to bucket .* was denied") as raised:
        robodata.ingest_episode(upload, root, storage_options=options)
    _assert_clear(str(raised.value), server)


@pytest.mark.s3
def test_refused_credentials_on_the_command_line_exit_2(refusing_store, sample_uploads):
    server, root, _ = refusing_store
    env = {
        **os.environ,
        **server.environ,
        "AWS_ACCESS_KEY_ID": WRONG_KEY,
        "AWS_SECRET_ACCESS_KEY": WRONG_SECRET,
        "PYTHONPATH": str(REPO_ROOT),
    }
    commands = {
        "info": [root],
        "ingest": [str(sample_uploads[1]), server.uri("new-ds")],
    }
    expected = {
        "info": f"robodata info: {root}/frames.lance: {server.endpoint} refused a request while opening the "
        "dataset: 403 Forbidden (InvalidAccessKeyId:",
        "ingest": f"robodata ingest: {server.uri('new-ds')}: access to bucket '{server.bucket}' at "
        f"{server.endpoint} was denied (Forbidden); check the credentials",
    }
    for name, args in commands.items():
        done = subprocess.run(
            [sys.executable, "-m", "robodata.cli", name, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
        for secret in (WRONG_SECRET, WRONG_KEY, server.secret_key, server.access_key):
            assert secret not in done.stdout + done.stderr
        [line] = [x for x in done.stderr.splitlines() if x.startswith(f"robodata {name}: ")]
        _assert_clear(line, server)
        assert line.startswith(expected[name]), line


@pytest.mark.s3
def test_a_bad_session_token_on_an_s3_upload_names_the_store(refusing_store, sample_uploads):
    """s3fs turns the store's 403 into ``[Errno 22]`` (a bad token) or a bare PermissionError (an
    unknown key, as here, moto checking the key first): either way the message names the upload,
    the endpoint and the step, and says what to check."""
    from robodata.errors import StorageError
    from robodata.ingest import read_upload

    server, _, _ = refusing_store
    upload = server.uri("uploads", sample_uploads[1].name)
    bad_token = {**server.storage_options, "aws_session_token": "BAD-TOKEN-do-not-show-91c2"}
    with pytest.raises(StorageError) as raised:
        read_upload(upload, bad_token)
    message = str(raised.value)
    _assert_clear(message, server)
    assert "BAD-TOKEN-do-not-show-91c2" not in message
    assert message.startswith(f"{upload}: {server.endpoint} refused a request while reading the upload: "), message
    assert "check the credentials and the bucket policy" in message
    assert "[Errno" not in message
