"""The peak memory of a ``robodata`` command run in a subprocess, as the command itself saw it.

The child reports its own high-water mark (``VmHWM``) as it exits. ``wait4``'s ``ru_maxrss`` is
not that: it keeps the RSS the child was forked with, so a child of a large pytest process
reports pytest's size, whatever the command used.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CLI_WITH_PEAK_REPORT = (
    "import atexit, os, sys\n"
    "def _peak():\n"
    "    kb = next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]\n"
    "    open(os.environ['PEAK_RSS_FILE'], 'w').write(kb)\n"
    "atexit.register(_peak)\n"
    "from robodata.cli import main\n"
    "sys.exit(main())\n"
)


def robodata_peak_rss_mb(*args: str) -> tuple[int, str, float]:
    """(exit code, stderr, peak RSS in MB) of ``robodata ARGS`` in a subprocess."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory(prefix="robodata-peak-") as scratch:
        report = Path(scratch) / "peak_kb"
        process = subprocess.run(
            [sys.executable, "-c", _CLI_WITH_PEAK_REPORT, *args],
            env={**env, "PEAK_RSS_FILE": str(report)},
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        return process.returncode, process.stderr, int(report.read_text()) / 1024
