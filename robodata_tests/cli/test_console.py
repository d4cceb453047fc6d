"""What an operator sees on the console: one line per error (exit code 2), no Lance log lines
through the progress bars, edits that report what they could not do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import robodata
from robodata.cli import main
from robodata.errors import EpisodeNotFoundError, StorageError

REPO = Path(__file__).resolve().parents[2]


def run_robodata(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "LANCE_LOG"}  # the user's choice only from env
    environ.update({"PYTHONPATH": str(REPO), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "robodata.cli", *args], env=environ, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("lance_log, shown", [(None, False), ("warn", True)])
def test_lance_warnings_stay_off_the_console_unless_asked_for(sample_uploads, tmp_path, lance_log, shown):
    env = {"LANCE_LOG": lance_log} if lance_log else None
    done = run_robodata("ingest", str(sample_uploads[0]), str(tmp_path / "ds"), env=env)
    assert done.returncode == 0, done.stderr
    # Lance says "No existing dataset at ..., it will be created" at WARN on a first write.
    assert ("WARN" in done.stderr and "it will be created" in done.stderr) is shown, done.stderr


def test_a_storage_error_is_one_line_and_exit_2(monkeypatch, capsys):
    import robodata._summary

    def refuse(*args, **kwargs):
        raise StorageError(
            "s3://lab/ds/frames.lance: http://127.0.0.1:9 refused a request while reading:\n"
            '<?xml version="1.0"?>\n<Error><Code>AccessDenied</Code></Error>'
        )

    monkeypatch.setattr(robodata._summary, "dataset_summary", refuse)
    assert main(["info", "s3://lab/ds"]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        "robodata info: s3://lab/ds/frames.lance: http://127.0.0.1:9 refused a request while "
        'reading: <?xml version="1.0"?> <Error><Code>AccessDenied</Code></Error>\n'
    )


def test_deleting_an_episode_the_dataset_lacks_is_an_error_and_writes_nothing(dataset_copy, capsys):
    version = robodata.open(dataset_copy).version
    with pytest.raises(EpisodeNotFoundError, match="no episode 42 in the dataset"):
        robodata.delete_episodes(dataset_copy, [1, 42])
    assert main(["delete", dataset_copy, "42"]) == 2
    assert "no episode 42 in the dataset" in capsys.readouterr().err
    ds = robodata.open(dataset_copy)
    assert ds.version == version and ds.episodes()["episode_index"].to_pylist() == [0, 1, 2]


def test_labels_for_rows_the_dataset_lacks_are_reported(dataset_copy, tmp_path, capsys):
    version = robodata.open(dataset_copy).version
    labels = pa.table(
        {"episode_index": [0, 0, 7, 9], "frame_index": [1, 100_000, 0, 0], "grasp": [True, False, True, True]}
    )
    result = robodata.add_annotations(dataset_copy, labels)
    assert result == version + 1 and result.labelled_rows == 1
    assert (result.unmatched_rows, result.unmatched_episodes) == (3, [0, 7, 9])
    table = robodata.open(dataset_copy).to_table(columns=["episode_index", "frame_index", "grasp"])
    assert table.filter(pa.compute.is_valid(table["grasp"])).to_pylist() == [
        {"episode_index": 0, "frame_index": 1, "grasp": True}
    ]
    with pytest.raises(ValueError, match="none of the 1 label rows matches a row of the dataset"):
        robodata.add_annotations(dataset_copy, pa.table({"episode_index": [8], "frame_index": [0], "grasp": [True]}))

    # Per-episode labels (no frame_index) through the command line: episode 5 is not stored.
    path = tmp_path / "success.csv"
    path.write_text("episode_index,success\n1,true\n5,false\n")
    assert main(["annotate", dataset_copy, str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 label rows NOT applied: no such rows in the dataset (episodes [5])" in out
    assert f"dataset version {version + 2}" in out
    success = robodata.open(dataset_copy).to_table(columns=["episode_index", "success"])
    assert set(success.filter(pa.compute.is_valid(success["success"]))["episode_index"].to_pylist()) == {1}
