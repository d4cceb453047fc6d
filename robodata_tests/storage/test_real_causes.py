"""Each failure is told as what happened, naming the table or the path: a full disk, a damaged
manifest, a deleted data file; Lance's raw wording and the source paths of its build machine
never reach the user. And a relative ``uploads_root`` with an absolute upload path inside it
is accepted."""

from __future__ import annotations

import errno
import shutil
import subprocess
from pathlib import Path

import pytest

import robodata
from robodata.cli import main as cli
from robodata.errors import StorageError
from robodata.ingest import read_upload
from robodata.storage._lance_errors import explain

LANCE_SOURCE = "/home/runner/work/lance"


def _damaged_copy(dataset: str, tmp_path: Path, damage) -> str:
    copy = tmp_path / "ds"
    shutil.copytree(dataset, copy)
    damage(copy)
    return str(copy)


def _truncate_manifest(table: str):
    def damage(root: Path) -> None:
        for manifest in (root / table / "_versions").glob("*.manifest"):
            with manifest.open("r+b") as handle:
                handle.truncate(100)

    return damage


def _delete_data_files(table: str):
    def damage(root: Path) -> None:
        for data in (root / table / "data").glob("*.lance"):
            data.unlink()

    return damage


@pytest.mark.parametrize("table", ["frames.lance", "gops.lance"])
def test_a_damaged_manifest_names_its_table(ingested, tmp_path, capsys, table):
    dataset = _damaged_copy(ingested, tmp_path, _truncate_manifest(table))
    for command in ("info", "verify"):
        assert cli([command, dataset]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"{dataset}/{table}: the table is damaged: its manifest cannot be read" in err, err
        assert LANCE_SOURCE not in err and "LanceError" not in err


@pytest.mark.parametrize(("table", "commands"), [("frames.lance", ("info", "verify")), ("gops.lance", ("verify",))])
def test_a_deleted_data_file_is_a_missing_file_of_its_table(ingested, tmp_path, capsys, table, commands):
    dataset = _damaged_copy(ingested, tmp_path, _delete_data_files(table))
    for command in commands:
        code, said = cli([command, dataset]), capsys.readouterr()
        if (table, command) == ("frames.lance", "verify"):
            # frames.lance's checksums name every missing file: verify lists them as problems.
            assert code == 1
            err = next(line for line in said.out.splitlines() if "is missing" in line)
        else:
            assert code == 2
            err = said.err.strip().splitlines()[-1]
        assert f"{dataset}/{table}: data file {dataset}/{table}/data/" in err, err
        assert "is missing (deleted or never fully written)" in err
        assert LANCE_SOURCE not in err and "Not found" not in err


def test_no_space_left_names_the_path():
    # Lance's own words on a full disk (a 3 MB tmpfs), and a plain ENOSPC from Python's side.
    lance_says = OSError(
        "LanceError(IO): No space left on device (os error 28), "
        "/home/runner/work/lance/lance/rust/lance-file/src/writer/structural.rs:190:9"
    )
    said = explain(lance_says, "/data/ds/gops.lance", "writing episode 0's GOPs")
    assert isinstance(said, StorageError)
    assert str(said) == (
        "/data/ds/gops.lance: no space left on the device holding /data/ds/gops.lance while writing "
        "episode 0's GOPs; free some space and run it again"
    )
    python_says = OSError(errno.ENOSPC, "No space left on device", "/data/ds/frames.lance/data/x.lance")
    assert "holding /data/ds/frames.lance/data/x.lance" in str(explain(python_says, "/data/ds/frames.lance", "x"))
    assert explain(OSError("something else"), "/data/ds/frames.lance", "x") is None


def _can_mount_tmpfs(target: Path) -> bool:
    return (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(target)], capture_output=True).returncode
        == 0
    )


def test_a_full_disk_is_no_space_left(tmp_path, capsys):
    """On a real full disk (a 3 MB tmpfs; mounting one needs root, which the CI container has)."""
    from robodata.sample_data import write_sample_uploads

    disk = tmp_path / "disk"
    disk.mkdir()
    if not _can_mount_tmpfs(disk):
        pytest.fail("cannot mount a 3 MB tmpfs (needs root): the full-disk case cannot run here")
    try:
        [upload] = write_sample_uploads(tmp_path / "uploads", episodes=1, seed=3, seconds=8.0)
        assert cli(["ingest", str(upload), str(disk / "ds")]) == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"{disk}/ds/gops.lance: no space left on the device holding" in err, err
        assert LANCE_SOURCE not in err
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_a_relative_uploads_root_with_an_absolute_upload_inside(sample_uploads, tmp_path, monkeypatch):
    root = tmp_path / "uploads"
    shutil.copytree(sample_uploads[1], root / sample_uploads[1].name)
    monkeypatch.chdir(tmp_path)
    episode = read_upload(str(root / sample_uploads[1].name), uploads_root="uploads")
    assert episode.episode_index == 1
    result = robodata.ingest_episode(str(root / sample_uploads[1].name), str(tmp_path / "ds"), uploads_root="uploads")
    assert result.rows == len(episode.timestamps_ns)


def test_unprefixed_option_names_reach_fsspec_too(s3, sample_uploads):
    """``secret_access_key`` (as Lance also accepts it) and a missing bucket: the bucket is said
    to be missing, not the store unreachable; no credential in the message."""
    from robodata.errors import DatasetLocationError
    from robodata.storage._uris import canonical_options, redact

    options = {
        "access_key_id": s3.access_key,
        "secret_access_key": s3.secret_key,
        "endpoint": s3.endpoint,
        "region": "us-east-1",
        "allow_http": "true",
    }
    assert canonical_options(options)["aws_secret_access_key"] == s3.secret_key
    assert redact(f"x {s3.secret_key} y", options) == "x *** y"
    with pytest.raises(DatasetLocationError) as raised:
        robodata.ingest_episode(str(sample_uploads[0]), "s3://no-such-bucket-here/ds", storage_options=options)
    assert str(raised.value).startswith(
        f"s3://no-such-bucket-here/ds: bucket 'no-such-bucket-here' does not exist at {s3.endpoint}"
    )
    assert s3.secret_key not in str(raised.value) and s3.access_key not in str(raised.value)
