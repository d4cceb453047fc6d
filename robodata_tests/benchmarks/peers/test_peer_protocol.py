"""How the peers benchmark talks to the peers' Python and to the user, without the peers' venv:
the runner's PEER_RESULT line and what a bad one is reported as, a missing venv, an unknown
system, and the CLI's peers options."""

from __future__ import annotations

import json
import os
import sys

import pytest

from benchmarks.peers.peer_protocol import (
    REPO_ROOT,
    PeerRunError,
    parse_runner_output,
    peer_python,
    run_job,
    runner_env,
)
from benchmarks.peers.peer_runner import RESULT_PREFIX


def test_parse_takes_the_last_result_line_among_the_peers_output():
    out = (
        'INFO loading\nPEER_RESULT {"protocol": 1, "system": "old"}\nnoise\n'
        'PEER_RESULT {"protocol": 1, "system": "lancedb", "measurements": []}\ntrailing log\n'
    )
    assert parse_runner_output(out)["system"] == "lancedb"


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        ("just logs\n", "printed no PEER_RESULT line"),
        ("PEER_RESULT {not json\n", "is not JSON"),
        ("PEER_RESULT [1, 2]\n", "is not a JSON object"),
        ('PEER_RESULT {"protocol": 1, "error": "FileNotFoundError: meta/info.json"}\n', "FileNotFoundError: meta"),
        ('PEER_RESULT {"protocol": 7, "system": "robodata"}\n', "speaks protocol 7, expected 1"),
    ],
)
def test_parse_names_what_is_wrong(stdout, message):
    with pytest.raises(PeerRunError, match=message):
        parse_runner_output(stdout, "lancedb runner")


def test_runners_write_bytecode_whatever_the_machine_sets(monkeypatch):
    # Else every DataLoader worker a runner spawns compiles torch again, inside the first batch.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = runner_env(sys.executable)
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["HF_HUB_OFFLINE"] == "1" and env["PYTHONPATH"].split(os.pathsep)[0] == str(REPO_ROOT)


def test_peer_python_names_the_missing_venv_and_how_to_build_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no peers venv here .*bash scripts/peers\.sh"):
        peer_python(tmp_path / "nowhere")


def test_runner_reports_an_unknown_system_as_an_error(tmp_path):
    with pytest.raises(PeerRunError, match=r"system 'lerobot2'.*exit code 1"):
        run_job(sys.executable, {"system": "lerobot2", "root": str(tmp_path), "measurements": []})


def test_cli_offers_the_peers_options(capsys):
    from robodata.cli import main

    with pytest.raises(SystemExit):
        main(["bench", "report", "--help"])
    out = capsys.readouterr().out
    for option in ("--peers", "--source", "--rounds", "--gop-size", "--crf"):
        assert option in out


def test_result_prefix_is_what_the_parser_reads():
    line = RESULT_PREFIX + json.dumps({"protocol": 1, "system": "robodata"})
    assert parse_runner_output(line)["system"] == "robodata"
