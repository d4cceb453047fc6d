"""robodata.measure: the read figures of one dataset version, each named, on the largest camera,
the decode bound derived from sequential decode; the Markdown report names the version."""

from __future__ import annotations

import pytest

import robodata
from robodata.measure import camera_frame_offsets, figures_markdown, measure_reads, time_batches, write_report


def test_measure_reads_reports_every_figure_of_the_version_asked_for(dataset_copy):
    ds = robodata.open(dataset_copy)
    figures = measure_reads(
        dataset_copy, version=ds.version, samples=3, batch_size=4, window_frames=3, loader_samples=6
    )
    assert figures["dataset_version"] == ds.version and figures["gop_size"] == ds.metadata.gop_size
    assert figures["column"] == "observation_images_top"  # 640x480 against the wrists' 320x240
    assert figures["decode_bound_fps"] == pytest.approx(
        figures["sequential_decode_fps"] * 2 / (ds.metadata.gop_size + 1)
    )
    assert figures["single_vs_bound"] == pytest.approx(figures["single_frame_fps"] / figures["decode_bound_fps"])
    assert (figures["window_frames"], figures["window_cameras"]) == (3, len(ds.cameras))
    assert figures["batch_size"] == figures["loader_batch_size"] == 4
    assert figures["loader_samples"] == 8  # whole batches of 4 until 6 samples have come


def test_windows_step_one_camera_frame_in_control_rows(ingested):
    ds = robodata.open(ingested)
    # 100 Hz rows, 30 fps cameras: a frame every 3.33 rows
    assert (ds.metadata.control_hz, ds.metadata.cameras["top"].fps) == (100, 30)
    assert camera_frame_offsets(ds, 4, "top") == [0, 3, 7, 10]


def test_time_batches_counts_the_samples_after_the_first_batch():
    figures = time_batches(iter([[0] * 5] * 10), samples=12, size_of=len)
    assert figures["samples"] == 15  # three batches of 5: the first one past 12 ends the count
    with pytest.raises(RuntimeError, match="the loader yielded no batch"):
        time_batches(iter([]), samples=1, size_of=len)


def test_the_report_names_the_version_and_lands_under_reports(tmp_path):
    markdown = figures_markdown("Read path", {"single_frame_fps": 310.0, "column": "observation_images_top"}, 7)
    assert markdown.startswith("# Read path\n\nMeasured on frames.lance version 7 with pylance ")
    assert "| single_frame_fps | 310.00 |\n| column | observation_images_top |\n" in markdown
    uri = write_report(str(tmp_path / "ds"), "readpath_v7", markdown)
    assert uri == f"{tmp_path}/ds/reports/readpath_v7.md"
    assert (tmp_path / "ds" / "reports" / "readpath_v7.md").read_text() == markdown
