"""``pip install 'robodata[dagster]'`` materializes ``benchmark_report``: the wheel built from this
checkout, installed into a folder of its own, run from outside the checkout (so no benchmarks/
can be found), measures the dataset and puts the read figures in the asset's metadata."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

# Runs in the child, with only the installed wheel's robodata on the path.
MATERIALIZE = """
import importlib.util, json, sys
import dagster as dg
import robodata
from robodata.ingest import ingest_episode
from robodata.sample_data import write_sample_uploads
from robodata.orchestration.defs.reports.benchmark import benchmark_report
from robodata.orchestration.defs.resources import DatasetStore

assert importlib.util.find_spec("benchmarks") is None, "a benchmarks package is importable"
(upload,) = write_sample_uploads("uploads", 1, seconds=1.0)
version = ingest_episode(str(upload), "dataset").frames_version
config = {"samples": 4, "batch_size": 4, "window_frames": 2, "loader_samples": 8}
result = dg.materialize(
    [benchmark_report],
    resources={"store": DatasetStore(root="dataset", uploads_root="uploads")},
    run_config={"ops": {"benchmark_report": {"config": config}}},
)
(materialization,) = result.asset_materializations_for_node("benchmark_report")
metadata = {name: getattr(value, "value", value) for name, value in materialization.metadata.items()}
torch = sorted(m for m in sys.modules if m.split(".")[0] == "torch")  # robodata[dagster] has no torch
print(json.dumps({"robodata": robodata.__file__, "version": version, "metadata": metadata, "torch": torch}, default=str))
"""


@pytest.mark.slow
@pytest.mark.dagster
def test_the_installed_wheel_materializes_the_benchmark_report(tmp_path, built_wheel):
    wheel = built_wheel
    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--target", site, wheel],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    assert not (site / "benchmarks").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(MATERIALIZE)],
        cwd=elsewhere,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout.splitlines()[-1])
    assert ran["robodata"] == str(site / "robodata" / "__init__.py")  # the wheel's, not the checkout's
    assert ran["torch"] == []  # the training loader's figures need no PyTorch
    figures = ran["metadata"]
    assert figures["measured_version"] == figures["dataset_version"] == ran["version"]
    assert figures["column"] == "observation_images_top"  # the largest camera
    assert (figures["window_frames"], figures["window_cameras"], figures["loader_batch_size"]) == (2, 3, 4)
    assert figures["loader_samples"] >= 8
    assert figures["decode_bound_fps"] == pytest.approx(
        figures["sequential_decode_fps"] * 2 / (figures["gop_size"] + 1)
    )
    for rate in ("single_frame_fps", "batched_fps", "row_all_cameras_per_s", "windows_per_s", "loader_samples_per_s"):
        assert figures[rate] > 0, rate
    assert figures["report_path"] == f"dataset/reports/readpath_v{ran['version']}.md"
    report = (elsewhere / figures["report_path"]).read_text()
    assert f"Measured on frames.lance version {ran['version']}" in report and "| windows_per_s |" in report
    assert "benchmark" not in figures and "peers" not in figures  # the checkout's harnesses were not asked for
