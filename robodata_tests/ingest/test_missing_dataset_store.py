"""A store that is not there is not an empty dataset: a bucket that does not exist (through the
API and the CLI) or an endpoint answering 404 to everything (a wrong AWS_ENDPOINT_URL) is refused
before anything is written, with one line that names the bucket and the endpoint."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

import robodata
from robodata.errors import DatasetLocationError


@contextmanager
def endpoint_answering_404():
    """A loopback HTTP server that answers every request 404: a wrong AWS_ENDPOINT_URL."""

    class NotFound(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            self.send_response(404)
            self.send_header("Content-Length", "9")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(b"not found")

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_missing_bucket_is_not_an_empty_dataset(s3, sample_uploads, tmp_path):
    root = "s3://no-such-bucket-here/ds"
    with pytest.raises(DatasetLocationError) as raised:
        robodata.ingest_episode(str(sample_uploads[0]), root, storage_options=s3.storage_options)
    message = str(raised.value)
    assert f"{root}: bucket 'no-such-bucket-here' does not exist at {s3.endpoint}" in message
    assert "\n" not in message and s3.secret_key not in message and s3.access_key not in message
    assert "no-such-bucket-here" not in _buckets(s3)  # nothing created

    env = {**os.environ, **s3.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "robodata.cli", "ingest", str(sample_uploads[0]), root],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and s3.secret_key not in done.stderr
    [line] = [x for x in done.stderr.splitlines() if x.startswith("robodata ingest: ")]
    assert "bucket 'no-such-bucket-here' does not exist" in line


def test_an_endpoint_answering_404_is_not_an_empty_dataset(sample_uploads):
    with endpoint_answering_404() as endpoint:
        options = {
            "aws_endpoint": endpoint,
            "allow_http": "true",
            "aws_region": "us-east-1",
            "aws_access_key_id": "AKIAEXAMPLE",
            "aws_secret_access_key": "EXAMPLESECRET",
        }
        with pytest.raises(DatasetLocationError, match=f"bucket 'lab' does not exist at {endpoint}"):
            robodata.ingest_episode(str(sample_uploads[0]), "s3://lab/ds", storage_options=options)


def _buckets(s3) -> set[str]:
    from robodata.storage import fsspec_filesystem

    return {p.rstrip("/") for p in fsspec_filesystem(s3.uri(), s3.storage_options).ls("")}
