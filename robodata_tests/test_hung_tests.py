"""A test that hangs fails the suite's run, once, with its stack in the log, instead of holding CI:
run here on a small suite with scripts/test.sh's own xdist options and pyproject.toml's timeouts
scaled down from minutes to seconds."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

HANGS = """
import time


def test_hangs_forever():
    while True:
        time.sleep(1)
"""


def xdist_options() -> list[str]:
    """scripts/test.sh's PARALLEL options, with its two workers."""
    line = next(x for x in (ROOT / "scripts" / "test.sh").read_text().splitlines() if x.startswith("PARALLEL=("))
    return ["-n", "2", *shlex.split(line.removeprefix("PARALLEL=(").removesuffix(")"))]


def test_the_stack_dump_comes_before_the_timeout_ends_the_worker():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["timeout_method"] == "thread"
    assert 0 < options["faulthandler_timeout"] < options["timeout"]


@pytest.mark.slow
def test_a_hung_test_fails_the_run_once_with_its_stack(tmp_path):
    (tmp_path / "test_hangs.py").write_text(HANGS)
    (tmp_path / "test_fine.py").write_text("def test_fine():\n    pass\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntimeout = 6\ntimeout_method = thread\nfaulthandler_timeout = 3\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *xdist_options()]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    log = done.stdout + done.stderr
    assert done.returncode == 1, log
    # the faulthandler dump, from the worker, names the hung test's frame
    assert re.search(r'File ".*test_hangs\.py", line \d+ in test_hangs_forever', log), log
    # the run names the test, and no new worker ran its file again (each would crash in turn)
    crashed = re.findall(r"worker '(gw\d+)' crashed while running 'test_hangs.py::test_hangs_forever'", done.stdout)
    assert len(set(crashed)) == 1, log
