"""Upload and dataset paths that are not what they must be are refused, and nothing stored
changes: episode ids that are not plain names (``..``, quotes, spaces, SQL), an upload outside
the uploads root, symbolic links out of the upload folder, files that are not regular files (a
FIFO, a link to ``/dev/zero``: these held the ingest forever), an upload or a dataset root that
is a file (the check each case gets: bad_input.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import robodata
from robodata.errors import BadUploadError, DatasetLocationError
from robodata_tests.ingest.bad_input import Case, Context, check_refused, ingest, ingest_after, refusal_test, refused


def ingest_path(make_path: Callable[[Context], Path | str], uploads_root: bool = True):
    """A case body that ingests an untouched upload from a path the uploads root does not own."""

    def run(ctx: Context):
        return ingest(ctx, make_path(ctx), uploads_root)

    return run


def outside_root(ctx: Context) -> Path:
    elsewhere = ctx.uploads_root.parent / "elsewhere" / ctx.upload.name
    elsewhere.parent.mkdir()
    return ctx.upload.rename(elsewhere)


def dot_dot_path(ctx: Context) -> str:
    outside_root(ctx)
    return f"{ctx.uploads_root}/../elsewhere/{ctx.upload.name}"


def moved_outside(upload: Path, name: str) -> Path:
    """``name`` moved out of the upload (beside the uploads root), its place taken by a link."""
    outside = upload.parent.parent / "elsewhere" / name
    outside.parent.mkdir(exist_ok=True)
    (upload / name).rename(outside)
    (upload / name).symlink_to(outside)
    return outside


def link_outside(name: str):
    return lambda upload: moved_outside(upload, name)


def upload_folder_links_outside(ctx: Context) -> Path:
    """The upload folder itself is a link to a folder elsewhere."""
    outside = ctx.uploads_root.parent / "elsewhere" / ctx.upload.name
    outside.parent.mkdir()
    ctx.upload.rename(outside)
    ctx.upload.symlink_to(outside, target_is_directory=True)
    return ctx.upload


def fifo_instead_of(name: str):
    """``name`` replaced by a named pipe nobody writes to: reading it would wait forever."""

    def damage(upload: Path) -> None:
        (upload / name).unlink()
        os.mkfifo(upload / name)

    return damage


def link_to_dev_zero(name: str):
    """``name`` replaced by a link to ``/dev/zero``: reading it never ends."""

    def damage(upload: Path) -> None:
        (upload / name).unlink()
        (upload / name).symlink_to("/dev/zero")

    return damage


def upload_is_a_file(ctx: Context) -> Path:
    path = ctx.uploads_root / "episode_000009"
    path.write_text("not a folder")
    return path


def into_dataset_that_is_a_file(ctx: Context):
    target = ctx.uploads_root.parent / "dataset-file"
    target.write_text("not a dataset")
    if ctx.cli is not None:
        return ctx.cli(["ingest", str(ctx.upload), str(target / "ds")])
    return robodata.ingest_episode(str(ctx.upload), str(target / "ds"))


# fmt: off
CASES = [
    # episode ids and paths
    # via_cli=False (here and upload-outside-uploads-root): the command line has no --uploads-root
    Case("id-with-dot-dot", ingest_path(dot_dot_path), BadUploadError, ("../elsewhere/episode_000001", "not a folder directly inside"), via_cli=False),
    Case("id-is-dot-dot", ingest_path(lambda ctx: f"{ctx.upload}/..", uploads_root=False), BadUploadError, ("invalid episode id '..'",)),
    Case("id-with-quote", ingest_after(lambda u: None, folder="ep'1"), BadUploadError, ("ep'1", "invalid episode id")),
    Case("id-with-double-quote", ingest_after(lambda u: None, folder='ep"1'), BadUploadError, ('ep"1', "invalid episode id")),
    Case("id-with-spaces", ingest_after(lambda u: None, folder="episode 1"), BadUploadError, ("episode 1", "invalid episode id")),
    Case("id-with-sql", ingest_after(lambda u: None, folder="1) OR (1=1; DROP TABLE frames --"), BadUploadError, ("1) OR (1=1; DROP TABLE frames --", "invalid episode id")),
    Case("upload-outside-uploads-root", ingest_path(outside_root), BadUploadError, ("elsewhere/episode_000001", "not a folder directly inside"), via_cli=False),
    # hostile uploads: links out of the upload folder
    refused("camera-file-links-outside", link_outside("top.mp4"), "top.mp4", "symbolic link", "outside the upload folder"),
    refused("states-links-outside", link_outside("states.parquet"), "states.parquet", "symbolic link", "outside the upload folder"),
    refused("episode-json-links-outside", link_outside("episode.json"), "episode.json", "symbolic link", "outside the upload folder"),
    Case("upload-folder-links-outside", ingest_path(upload_folder_links_outside), BadUploadError, ("episode_000001", "upload folder is a symbolic link", "elsewhere")),
    # paths
    Case("upload-path-is-a-file", ingest_path(upload_is_a_file), BadUploadError, ("episode_000009", "is a file, not an upload folder")),
    Case("dataset-path-is-a-file", into_dataset_that_is_a_file, DatasetLocationError, ("dataset-file", "is a file; a dataset root must be a folder")),
]
# fmt: on


# Files that used to hold the ingest forever: each case fails (pytest-timeout) instead of hanging.
NOT_REGULAR_CASES = [
    refused(
        "camera-file-is-a-fifo",
        fifo_instead_of("top.mp4"),
        "episode_000001/top.mp4: is a named pipe (FIFO), not a regular file",
    ),
    refused(
        "camera-file-links-to-dev-zero",
        link_to_dev_zero("wrist_left.mp4"),
        "episode_000001/wrist_left.mp4: is a symbolic link to /dev/zero, outside the upload folder",
    ),
    refused(
        "states-is-a-fifo",
        fifo_instead_of("states.parquet"),
        "episode_000001/states.parquet: is a named pipe (FIFO), not a regular file",
    ),
    refused(
        "states-links-to-dev-zero",
        link_to_dev_zero("states.parquet"),
        "episode_000001/states.parquet: is a symbolic link to /dev/zero, outside the upload folder",
    ),
    refused(
        "episode-json-is-a-fifo",
        fifo_instead_of("episode.json"),
        "episode_000001/episode.json: is a named pipe (FIFO), not a regular file",
    ),
]


test_bad_input = refusal_test(CASES)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("via", ["api", "cli"])
@pytest.mark.parametrize("case", NOT_REGULAR_CASES, ids=[case.id for case in NOT_REGULAR_CASES])
def test_files_that_are_not_regular(
    case: Case, via: str, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys
):
    check_refused(case, via, sample_uploads, dataset_copy, stored_frames, tmp_path, capsys)


@pytest.mark.timeout(180)
def test_a_fifo_beside_the_upload_files_is_not_read(sample_uploads, dataset_copy, tmp_path):
    """A FIFO or a link to /dev/zero the episode does not name is no part of it: the ingest (and
    its fingerprint of the folder) never opens them."""
    upload = tmp_path / "uploads" / sample_uploads[1].name
    shutil.copytree(sample_uploads[1], upload)
    os.mkfifo(upload / "notes")
    (upload / "zeros").symlink_to("/dev/zero")
    before = robodata.open(dataset_copy).version
    result = robodata.ingest_episode(str(upload), dataset_copy, uploads_root=str(tmp_path / "uploads"))
    assert result.frames_version > before
    assert result.rows == len(robodata.open(dataset_copy).to_table(["frame_index"], filter="episode_index = 1"))
