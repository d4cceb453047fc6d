"""A test that hangs fails the suite's run, once, with its stack in the log, instead of holding CI:
run here on a small suite with the xdist options scripts/test.sh passes (``@scripts/xdist.args``)
and pyproject.toml's pytest configuration, its two timeouts scaled from minutes to seconds in the
same ratio (a faulthandler dump set to come after the timeout would be missing from the log)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HUNG_AFTER_S = 10.0  # the scaled pytest-timeout

HANGS = """
import time


def test_hangs_forever():
    while True:
        time.sleep(1)
"""


def scaled_timeouts() -> list[str]:
    """``-o`` overrides of pyproject.toml's ``timeout`` and ``faulthandler_timeout``, both scaled so
    that the timeout is HUNG_AFTER_S."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    scale = HUNG_AFTER_S / float(options["timeout"])
    return [
        "-o",
        f"timeout={HUNG_AFTER_S}",
        "-o",
        f"faulthandler_timeout={float(options['faulthandler_timeout']) * scale}",
    ]


@pytest.mark.slow
def test_a_hung_test_fails_the_run_once_with_its_stack(tmp_path):
    (tmp_path / "test_hangs.py").write_text(HANGS)
    (tmp_path / "test_fine.py").write_text("def test_fine():\n    pass\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml")]
    command += ["--rootdir", str(tmp_path), "-n", "2", f"@{ROOT / 'scripts' / 'xdist.args'}", *scaled_timeouts()]
    done = subprocess.run(
        [*command, "test_hangs.py", "test_fine.py"], cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    log = done.stdout + done.stderr
    assert done.returncode == 1, log
    # the faulthandler dump, from the worker, names the hung test's frame
    assert re.search(r'File ".*test_hangs\.py", line \d+ in test_hangs_forever', log), log
    # the run names the test, and no new worker ran its file again (each would crash in turn)
    crashed = re.findall(r"worker '(gw\d+)' crashed while running 'test_hangs.py::test_hangs_forever'", done.stdout)
    assert len(set(crashed)) == 1, log
    assert "1 passed" in done.stdout, log  # the other file ran to its end on the other worker
