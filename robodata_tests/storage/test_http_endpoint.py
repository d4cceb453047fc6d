"""An http:// S3 endpoint works without AWS_ALLOW_HTTP: every Lance call's options get
``allow_http`` (issue 42.4), unless the user said otherwise. (The moto round trip through
LeRobotCompatDataset and robodata-train is robodata_tests/lerobot/test_s3_http_endpoint.py.)"""

from __future__ import annotations

from robodata.storage import storage_options_from_env
from robodata.storage._deadlines import lance_options
from robodata.storage._uris import http_endpoint_allowed

HTTP = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}


def test_the_endpoint_given_or_from_the_environment_decides():
    assert http_endpoint_allowed({"endpoint_url": "http://minio:9000"}, environ={}) == {
        "endpoint_url": "http://minio:9000",
        "allow_http": "true",
    }
    assert http_endpoint_allowed({}, environ={"AWS_ENDPOINT": "HTTP://minio:9000"}) == {"allow_http": "true"}
    # an https endpoint given wins over an http one in the environment: nothing to allow
    assert http_endpoint_allowed({"aws_endpoint": "https://s3.example.com"}, environ=HTTP) == {
        "aws_endpoint": "https://s3.example.com"
    }
    assert http_endpoint_allowed(None, environ={}) == {}


def test_what_the_user_said_is_kept():
    assert http_endpoint_allowed({"allow_http": "false"}, environ=HTTP) == {"allow_http": "false"}
    assert http_endpoint_allowed({"aws_allow_http": "false"}, environ=HTTP) == {"aws_allow_http": "false"}
    assert http_endpoint_allowed({}, environ={**HTTP, "AWS_ALLOW_HTTP": "false"}) == {}  # Lance reads it
    assert storage_options_from_env({**HTTP, "AWS_ALLOW_HTTP": "false"}) == {
        "aws_endpoint": "http://127.0.0.1:9000",
        "allow_http": "false",
    }


def test_every_lance_call_on_s3_gets_it(monkeypatch):
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT", "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    options = lance_options("s3://bucket/ds/frames.lance", None)  # no options: the environment's
    assert options is not None and options["allow_http"] == "true"
    assert lance_options("data/ds/frames.lance", None) is None  # a local table: nothing to add
