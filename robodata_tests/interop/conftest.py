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
    """Moto's standalone S3 server (``python -m moto.server``) on 127.0.0.1 in its own process,
    with bucket ``interop``; yields the storage options that reach it."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    import boto3

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RuntimeError(f"moto server did not start on {endpoint}") from None
            time.sleep(0.2)
    options = {
        "aws_access_key_id": "interop-test-key",
        "aws_secret_access_key": "interop-test-secret",
        "aws_endpoint": endpoint,
        "aws_region": "us-east-1",
        "allow_http": "true",
    }
    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=options["aws_access_key_id"],
        aws_secret_access_key=options["aws_secret_access_key"],
        region_name=options["aws_region"],
    ).create_bucket(Bucket="interop")
    yield options
    server.terminate()
    server.wait(timeout=30)
