"""An export of the shared sample dataset, made once: AV1 encoding is the slow part of these tests."""

from __future__ import annotations

import pytest

from robodata.interop import export_lerobot


@pytest.fixture(scope="session")
def exported(ingested, tmp_path_factory) -> str:
    """The sample dataset (3 episodes) as LeRobot v3, 2 episodes per file. Treat as read-only."""
    root = tmp_path_factory.mktemp("lerobot") / "sample_lerobot"
    export_lerobot(ingested, root, episodes_per_file=2, progress=False)
    return str(root)


@pytest.fixture(scope="session")
def s3_options():
    """Moto's standalone S3 server on 127.0.0.1 (a thread of this process) with bucket ``interop``;
    yields the storage options that reach it."""
    import socket

    import boto3
    from moto.server import ThreadedMotoServer

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    options = {
        "aws_access_key_id": "interop-test-key",
        "aws_secret_access_key": "interop-test-secret",
        "aws_endpoint": f"http://127.0.0.1:{port}",
        "aws_region": "us-east-1",
        "allow_http": "true",
    }
    boto3.client(
        "s3",
        endpoint_url=options["aws_endpoint"],
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
        region_name=options["aws_region"],
    ).create_bucket(Bucket="interop")
    yield options
    server.stop()
