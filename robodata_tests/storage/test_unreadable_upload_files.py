"""Listing and fingerprinting uploads reads only regular files inside each upload: a FIFO nobody
writes to and a link to ``/dev/zero`` used to hold the upload sensor's scan (and every ingest)
forever, since the fingerprint hashed every file's bytes. They count by what they are, unread."""

from __future__ import annotations

import os
import shutil

import pytest

from robodata.storage._uploads import local_file_problem, scan_uploads, upload_fingerprint


@pytest.mark.timeout(120)
def test_scanning_uploads_does_not_read_fifos_or_devices(sample_uploads, tmp_path):
    root = tmp_path / "uploads"
    upload = root / sample_uploads[1].name
    shutil.copytree(sample_uploads[1], upload)
    plain = upload_fingerprint(str(upload))
    os.mkfifo(upload / "notes")
    (upload / "zeros").symlink_to("/dev/zero")

    listed = scan_uploads(str(root)).complete

    assert [u.episode_id for u in listed] == [upload.name]
    assert listed[0].fingerprint == upload_fingerprint(str(upload)) != plain  # the folder did change
    # Replacing the FIFO by a regular file changes the fingerprint again: its kind counted.
    with_fifo = listed[0].fingerprint
    (upload / "notes").unlink()
    (upload / "notes").write_bytes(b"")
    assert upload_fingerprint(str(upload)) not in (with_fifo, plain)


def test_what_an_upload_file_may_be(tmp_path):
    folder = tmp_path / "upload"
    folder.mkdir()
    (folder / "top.mp4").write_bytes(b"video")
    (folder / "inside").symlink_to(folder / "top.mp4")
    os.mkfifo(folder / "pipe")
    (folder / "pipe-link").symlink_to(folder / "pipe")
    (folder / "zero").symlink_to("/dev/zero")
    (tmp_path / "elsewhere.mp4").write_bytes(b"another episode's video")
    (folder / "outside").symlink_to(tmp_path / "elsewhere.mp4")
    (folder / "loop").symlink_to(folder / "loop")

    problems = {name: local_file_problem(str(folder / name), str(folder)) for name in sorted(os.listdir(folder))}

    assert problems == {
        "inside": None,  # a link inside the upload folder is fine
        "loop": "is a symbolic link that cannot be followed (Too many levels of symbolic links)",
        "outside": f"is a symbolic link to {tmp_path / 'elsewhere.mp4'}, outside the upload folder",
        "pipe": "is a named pipe (FIFO), not a regular file",
        "pipe-link": "is a named pipe (FIFO), not a regular file",
        "top.mp4": None,
        "zero": "is a symbolic link to /dev/zero, outside the upload folder",
    }
    assert local_file_problem(str(folder / "missing.mp4"), str(folder)) is None  # the caller names it
