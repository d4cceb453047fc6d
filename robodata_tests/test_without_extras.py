"""`pip install robodata` without extras: reading, writing and the core commands work with
Dagster, torch, matplotlib, h5py and pandas unimportable (a sys.meta_path blocker in a fresh
interpreter), and a command that needs an extra says which one in one line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXTRAS = ("dagster", "dagster_webserver", "torch", "matplotlib", "h5py", "pandas")

# Runs first in the child: every import of an extra's package fails as if it were not installed.
BLOCKER = f"""
import importlib.abc, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {EXTRAS!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
"""


def run_without_extras(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    script = BLOCKER + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)


def test_open_and_read_a_row_without_extras(ingested):
    done = run_without_extras(
        f"""
        import robodata
        ds = robodata.open({ingested!r})
        item = ds[0]
        print(len(ds), item["episode_index"], item["frame_index"], item["observation_images_top"].shape)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in {EXTRAS!r})
        print("extras loaded:", loaded)
        """
    )
    assert done.returncode == 0, done.stderr
    rows, episode, frame, shape = done.stdout.splitlines()[0].split(" ", 3)
    assert int(rows) == len(__import__("robodata").open(ingested)) and (episode, frame) == ("0", "0")
    assert shape == "(480, 640, 3)"
    assert done.stdout.splitlines()[1] == "extras loaded: []"


def test_the_blocker_blocks():
    done = run_without_extras("import dagster")
    assert done.returncode == 1 and "No module named 'dagster'" in done.stderr


def test_core_commands_without_extras(tmp_path):
    uploads, dataset = tmp_path / "uploads", tmp_path / "ds"
    done = run_without_extras(
        f"""
        from robodata.cli import main
        assert main(["sample-data", {str(uploads)!r}, "--episodes", "1", "--seconds", "0.5"]) == 0
        assert main(["ingest", {str(uploads / "episode_000000")!r}, {str(dataset)!r}]) == 0
        assert main(["info", {str(dataset)!r}]) == 0
        """
    )
    assert done.returncode == 0, done.stderr
    assert '"episodes": 1' in done.stdout


def test_a_command_that_needs_an_extra_names_it(ingested, tmp_path):
    not_hdf5 = tmp_path / "episode_0.hdf5"
    not_hdf5.write_bytes(b"not read: h5py is missing")
    done = run_without_extras(
        f"""
        from robodata.cli import main
        print(main(["view", {ingested!r}, "--episode", "0", "--out", {str(tmp_path / "page.html")!r}]))
        print(main(["import-hdf5", {str(not_hdf5)!r}, {str(tmp_path / "imported")!r}]))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", "2"]
    errors = done.stderr.splitlines()
    assert "robodata view: an episode page's plots needs matplotlib: pip install 'robodata[plots]'" in errors
    assert "robodata import-hdf5: HDF5 import needs h5py: pip install 'robodata[interop]'" in errors
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "page.html").exists() and not (tmp_path / "imported").exists()
