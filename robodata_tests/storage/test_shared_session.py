"""s3fs clients with credentials come from one aiobotocore session per process (botocore reads
its endpoint and service models once), each call still with a client and options of its own."""

from __future__ import annotations

import robodata.storage._uris as uris
from robodata.storage._uris import fsspec_filesystem

OPTIONS = {"aws_access_key_id": "AKIDEXAMPLE", "aws_secret_access_key": "secret", "aws_endpoint": "http://127.0.0.1:9"}


def test_calls_with_credentials_share_this_processs_session_not_their_file_system():
    first, second = fsspec_filesystem("s3://b/x", OPTIONS), fsspec_filesystem("s3://b/y", OPTIONS)
    assert first is not second  # a client and connections of its own, as before
    assert first.session is second.session is uris._SESSIONS[uris.os.getpid()]
    other = fsspec_filesystem("s3://b/x", {**OPTIONS, "aws_secret_access_key": "another"})
    assert other.session is first.session and other.secret == "another"


def test_a_forked_child_makes_its_own_session(monkeypatch):
    parent = fsspec_filesystem("s3://b/x", OPTIONS).session
    monkeypatch.setattr(uris.os, "getpid", lambda: -1)  # as in a child after fork
    child = fsspec_filesystem("s3://b/x", OPTIONS).session
    assert child is not parent and list(uris._SESSIONS) == [-1]


def test_without_credentials_each_call_resolves_its_own():
    # no key given: s3fs makes a session of its own, which finds credentials (environment,
    # profile, instance role) for this call
    assert fsspec_filesystem("s3://b/x", {"aws_endpoint": "http://127.0.0.1:9"}).session is None
