"""moto's standalone S3 server on 127.0.0.1 for benchmark commands (never a remote store)."""

from __future__ import annotations

import contextlib
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

BUCKET = "robodata-bench"


@dataclass(frozen=True)
class LocalS3:
    endpoint: str
    storage_options: dict[str, str]
    environ: dict[str, str]
    pid: int  # the server process (its CPU time: benchmarks.s3_store.server_cpu_seconds)

    def uri(self, prefix: str) -> str:
        return f"s3://{BUCKET}/{prefix.strip('/')}"


@contextlib.contextmanager
def local_s3() -> Iterator[LocalS3]:
    """A moto server in its own process with bucket ``robodata-bench``, stopped on exit.

    >>> with local_s3() as s3: print(s3.uri("uploads"))  # doctest: +SKIP
    s3://robodata-bench/uploads
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    key, secret = f"AKIABENCH{secrets.token_hex(4).upper()}", secrets.token_hex(16)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start on 127.0.0.1:{port}") from None
                time.sleep(0.2)
        import boto3

        boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1"
        ).create_bucket(Bucket=BUCKET)
        options = {
            "aws_access_key_id": key,
            "aws_secret_access_key": secret,
            "aws_endpoint": endpoint,
            "aws_region": "us-east-1",
            "allow_http": "true",
        }
        environ = {
            "AWS_ACCESS_KEY_ID": key,
            "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_REGION": "us-east-1",
        }
        yield LocalS3(endpoint, options, environ, process.pid)
    finally:
        process.terminate()
        process.wait(timeout=30)


def upload_tree(local: str, uri: str, storage_options: dict[str, str]) -> None:
    """Copy the files under the local folder ``local`` to ``uri``, object by object."""
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    from robodata.storage import fsspec_filesystem

    fs = fsspec_filesystem(uri, storage_options)
    files = [p for p in Path(local).rglob("*") if p.is_file()]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda p: fs.put_file(str(p), f"{uri}/{p.relative_to(local).as_posix()}"), files))
