"""How ``robodata`` ends after one of its errors while a storage call it gave up on is still
running: the command itself (its console script, ``python -m robodata.cli``) ends the process at
once, as exit_now_if_abandoned promises; a caller of ``main(argv)`` gets exit code 2 back and
its process goes on.

Each run is a fresh process whose ``info`` meets a store that never answers (a call that waits
past a 0.2 s deadline, then is abandoned) and that registers an atexit handler: the
interpreter's normal shutdown runs it, ending the process at once (os._exit) does not."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DATASET = "s3://lab/never-answers"

SILENT_STORE = """
import atexit, sys, threading
import robodata._summary
from robodata.errors import StorageError
from robodata.storage._deadlines import call_with_deadline
from robodata.storage._failures import storage_step

never = threading.Event()


def silent_store(uri, **kwargs):
    with storage_step("reading the dataset", uri):
        call_with_deadline(uri, {"robodata_timeout_s": "0.2"}, never.wait, 600)


def refusing_store(uri, **kwargs):
    raise StorageError(f"{uri}: the store refused")


robodata._summary.dataset_summary = silent_store if sys.argv[1] == "silent" else refusing_store
del sys.argv[1]
atexit.register(print, "the interpreter shut down", flush=True)
"""
RUNS = {
    # What pip writes as the console script of pyproject's "robodata.cli:main".
    "console script": "from robodata.cli import main\nsys.exit(main())\n",
    "python -m robodata.cli": "import runpy\nrunpy.run_module('robodata.cli', run_name='__main__', alter_sys=True)\n",
    "a caller of main(argv)": (
        "from robodata.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print('main returned', code, flush=True)\n"
        "sys.exit(code)\n"
    ),
}
UNREACHABLE = (
    f"robodata info: {DATASET}: could not reach object storage while reading the dataset: no answer within 0.2 s\n"
)


def robodata_info(how: str, store: str) -> subprocess.CompletedProcess:
    """``robodata info`` run as ``how`` against a ``store`` ("silent" or "refusing")."""
    return subprocess.run(
        [sys.executable, "-", store, "info", DATASET],
        input=SILENT_STORE + RUNS[how],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_console_script_is_main_called_without_arguments():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["robodata"] == "robodata.cli:main"


@pytest.mark.parametrize("how", ["console script", "python -m robodata.cli"])
def test_the_command_ends_at_once_while_a_storage_call_still_runs(how):
    done = robodata_info(how, "silent")
    assert (done.returncode, done.stderr, done.stdout) == (2, UNREACHABLE, "")


def test_a_caller_of_main_gets_2_back_and_its_process_goes_on():
    done = robodata_info("a caller of main(argv)", "silent")
    assert (done.returncode, done.stderr) == (2, UNREACHABLE)
    assert done.stdout == "main returned 2\nthe interpreter shut down\n"


def test_with_no_storage_call_running_the_command_shuts_down_normally():
    done = robodata_info("console script", "refusing")
    assert (done.returncode, done.stderr) == (2, f"robodata info: {DATASET}: the store refused\n")
    assert done.stdout == "the interpreter shut down\n"
