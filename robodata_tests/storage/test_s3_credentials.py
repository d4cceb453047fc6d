"""Credentials reach storage and nothing else: with a recognisable secret planted in the storage
options and the environment, no error message (bad upload, missing dataset, unreachable store,
missing bucket), CLI output, Lance schema metadata, version metadata or stored object contains
it."""

from __future__ import annotations

import pytest

import robodata
from robodata.cli import main as cli
from robodata.errors import BadUploadError, DatasetLocationError, StorageUnreachableError
from robodata.format._tables import frames_uri, gops_uri, open_table
from robodata.storage import fsspec_filesystem
from robodata_tests.fixtures.s3_server import free_port


def _secrets(s3) -> list[str]:
    return [s3.secret_key, s3.access_key]


def _assert_clean(text: str, s3) -> None:
    for secret in _secrets(s3):
        assert secret not in text


def test_planted_secret_appears_nowhere(s3, s3_root, eight_short_uploads, monkeypatch, capsys):
    options = s3.storage_options
    uploads = f"{s3_root}/uploads"
    good = s3.put_tree(eight_short_uploads[0], f"{uploads}/{eight_short_uploads[0].name}")
    broken = s3.put_tree(eight_short_uploads[1], f"{uploads}/{eight_short_uploads[1].name}", skip=("episode.json",))
    root = f"{s3_root}/ds"
    # The CLI takes credentials from the environment only.
    for name, value in s3.environ.items():
        monkeypatch.setenv(name, value)
    assert cli(["ingest", good, root]) == 0

    # Errors a user sees: a bad upload on s3://, a missing dataset, a store that is not there.
    messages = []
    with pytest.raises(BadUploadError) as bad:
        robodata.ingest_episode(broken, root, storage_options=options, uploads_root=uploads)
    messages.append(str(bad.value))
    with pytest.raises(FileNotFoundError) as missing:
        robodata.open(f"{s3_root}/nothing-here", storage_options=options)
    messages.append(str(missing.value))
    gone = {**options, "aws_endpoint": f"http://127.0.0.1:{free_port()}", "client_max_retries": "0"}
    with pytest.raises(StorageUnreachableError) as unreachable:
        robodata.ingest_episode(str(eight_short_uploads[1]), root, storage_options=gone)
    messages.append(str(unreachable.value))
    assert "could not reach http://127.0.0.1:" in messages[-1]
    # A missing bucket is found before anything is written (robodata.storage._dataset_root).
    with pytest.raises(DatasetLocationError, match="bucket 'no-such-bucket' does not exist at") as refused:
        robodata.ingest_episode(str(eight_short_uploads[0]), "s3://no-such-bucket/ds", storage_options=options)
    messages.append(str(refused.value))
    for message in messages:
        _assert_clean(message, s3)

    # The CLI prints none of them, even on failure.
    assert cli(["info", root]) == 0
    assert cli(["info", f"{s3_root}/nothing-here"]) == 2
    printed = capsys.readouterr()
    assert '"episodes": 1' in printed.out and "no robodata dataset" in printed.err
    _assert_clean(printed.out + printed.err, s3)

    # Lance metadata: schema metadata of both tables and every version's metadata.
    for table in (open_table(frames_uri(root), options), open_table(gops_uri(root), options)):
        for key, value in (table.schema.metadata or {}).items():
            _assert_clean(key.decode() + value.decode(), s3)
        for version in table.versions():
            _assert_clean(repr(version), s3)

    # Every object written under the dataset root: manifests, transactions, data files.
    fs = fsspec_filesystem(root, options)
    stored = fs.find(root)
    assert any(path.endswith(".manifest") for path in stored) and any("/data/" in p for p in stored)
    for path in stored:
        data = fs.cat_file(path)
        for secret in _secrets(s3):
            assert secret.encode() not in data, path
