"""The robodata command: sample data, ingest, info, tag, delete, gc, and errors on bad input."""

from __future__ import annotations

import json

import pytest

from robodata.cli import main


def test_sample_ingest_info_tag_delete_gc(tmp_path, capsys):
    uploads, dataset = tmp_path / "uploads", str(tmp_path / "ds")
    assert main(["sample-data", str(uploads), "--episodes", "2", "--seconds", "1"]) == 0
    folders = sorted(str(p) for p in uploads.iterdir())
    assert [p.rsplit("/", 1)[1] for p in folders] == ["episode_000000", "episode_000001"]
    assert main(["ingest", *folders, dataset, "--gop-size", "4"]) == 0
    capsys.readouterr()
    assert main(["info", dataset]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["episodes"] == 2 and info["version"] == 2 and info["gop_size"] == 4
    assert info["gop_rows"] == 2 * 3 * 8  # 30 frames per camera in GOPs of 4
    assert main(["tag", dataset, "before-delete"]) == 0
    assert main(["delete", dataset, "0"]) == 0
    capsys.readouterr()
    assert main(["info", dataset, "--version", "before-delete"]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 2
    assert main(["gc", dataset, "--dry-run"]) == 0
    assert "0 unreferenced" in capsys.readouterr().out


def test_errors_name_the_file_and_exit_2(tmp_path, capsys):
    missing = tmp_path / "uploads" / "episode_000009"
    missing.mkdir(parents=True)
    assert main(["ingest", str(missing), str(tmp_path / "ds")]) == 2
    err = capsys.readouterr().err
    assert "episode.json" in err and "missing" in err


def test_debug_shows_the_traceback_of_robodata_errors(tmp_path, capsys):
    missing = tmp_path / "uploads" / "episode_000009"
    missing.mkdir(parents=True)
    assert main(["--debug", "ingest", str(missing), str(tmp_path / "ds")]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "BadUploadError" in err
    assert err.rstrip().splitlines()[-1].startswith(f"robodata ingest: {missing}")
    # after the command too
    assert main(["ingest", str(missing), str(tmp_path / "ds"), "--debug"]) == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_a_bug_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    """Only robodata's own errors become one line: a KeyError or ValueError from a bug is raised
    (a traceback and exit code 1 from the console script), never shown as a user's mistake."""
    from robodata import cli

    def broken(args):
        return {}["no such key"]

    configure, _ = cli.COMMANDS["info"]
    monkeypatch.setitem(cli.COMMANDS, "info", (configure, broken))
    with pytest.raises(KeyError, match="no such key"):
        main(["info", str(tmp_path)])
    assert capsys.readouterr().err == ""


def test_a_command_configures_only_its_own_options(monkeypatch):
    """Options are built for the command being run only: one whose options need an extra (a
    benchmark, Dagster) does not stop the others."""
    from robodata import cli

    def needs_an_extra(parser):
        raise ModuleNotFoundError("No module named 'dagster'", name="dagster")

    monkeypatch.setitem(cli.COMMANDS, "needs-dagster", (needs_an_extra, lambda args: 0))
    with pytest.raises(SystemExit) as done:
        main(["sample-data", "--help"])
    assert done.value.code == 0
    with pytest.raises(ModuleNotFoundError):
        main(["needs-dagster"])


def test_a_users_mistakes_are_one_line(ingested, tmp_path, capsys):
    nowhere = tmp_path / "nowhere"
    cases = [
        (["info", str(nowhere)], f"robodata info: no robodata dataset at {nowhere} (frames.lance does not exist)"),
        (
            ["info", ingested, "--version", "no-such-tag"],
            "version 'no-such-tag' not found (no such version number or tag)",
        ),
        (["tag", ingested, "t", "--version", "999"], "version 999 not found"),
        (["annotate", ingested, str(tmp_path / "labels.csv")], f"{tmp_path / 'labels.csv'}: label file does not exist"),
    ]
    upload = str(tmp_path / "uploads" / "episode_000000")
    assert main(["sample-data", str(tmp_path / "uploads"), "--episodes", "1", "--seconds", "0.5"]) == 0
    cases += [
        (
            ["ingest", upload, str(tmp_path / "ds"), "--gop-size", "0"],
            "robodata ingest: gop_size must be in 1..1024, got 0",
        ),
        (["ingest", upload, str(tmp_path / "ds"), "--crf", "99"], "robodata ingest: crf must be in 0..51, got 99"),
    ]
    for argv, message in cases:
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        [line] = [x for x in err.splitlines() if x.startswith("robodata ")]  # progress bars aside
        assert message in line and "Traceback" not in err, err
    assert not (tmp_path / "ds").exists()
