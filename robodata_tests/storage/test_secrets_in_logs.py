"""With Python's root logger at DEBUG (as Dagster and many notebooks set it), no log record of an
ingest, an upload listing and read, and a read of the dataset on s3:// shows the session token or
the access key id: botocore logs both in its request headers; robodata scrubs them
(``robodata.storage._log_secrets``)."""

from __future__ import annotations

import logging
import secrets

import robodata
from robodata.ingest import read_upload
from robodata.storage._uploads import list_complete_uploads


def test_no_log_record_shows_a_credential(s3, eight_short_uploads, caplog):
    token = f"PLANTED-SESSION-TOKEN-{secrets.token_hex(16)}"
    options = {**s3.storage_options, "aws_session_token": token}  # moto takes any token
    uploads, dataset = s3.fresh_uri("log-uploads"), s3.fresh_uri("log-dataset")
    s3.put_tree(eight_short_uploads[0], f"{uploads}/episode_000000")

    caplog.set_level(logging.DEBUG)  # the root logger and its handler, every library's DEBUG records
    [upload] = list_complete_uploads(uploads, options)
    assert read_upload(upload.uri, options).episode_index == 0
    robodata.ingest_episode(upload.uri, dataset, storage_options=options)
    ds = robodata.open(dataset, storage_options=options)
    assert ds.get_frames([3], cameras="observation_images_top")["observation_images_top"].shape[0] == 1

    records = [(r.name, r.getMessage(), caplog.handler.format(r)) for r in caplog.records]
    storage = [message for name, message, _ in records if name.startswith(("botocore", "aiobotocore", "s3fs"))]
    # The libraries did log their requests (headers included), so the check below can fail.
    assert any("X-Amz-Security-Token" in m or "Authorization" in m for m in storage), storage[:20]
    for name, message, formatted in records:
        for credential in (token, s3.access_key, s3.secret_key):
            assert credential not in message, f"{name}: {message}"
            assert credential not in formatted, f"{name}: {formatted}"


def test_a_record_made_without_a_name_passes_the_scrubber():
    """Dagster's log manager calls ``logging.makeLogRecord({})`` (a record named None) for every
    event: once the scrubber is installed (any s3:// file system does it), that must still work,
    or every Dagster run in the process fails."""
    from robodata.storage._log_secrets import remember_secrets

    remember_secrets({"aws_session_token": "planted-token-" + secrets.token_hex(8)})
    assert logging.makeLogRecord({}).name is None
