"""The benchmark harness on tiny sizes: report structure, measured figures, plots, and the
LeRobot-layout baseline reader returning the frames robodata returns."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from PIL import Image

import robodata
from benchmarks.harness import BenchmarkConfig, run_benchmark
from benchmarks.lerobot_baseline import FrameTimestampError, LeRobotLayoutReader, decode_video_frames_pyav
from benchmarks.pairing import baseline_rows
from benchmarks.report import SECTIONS
from robodata.codec._quality import psnr
from robodata.format._schema import ref_columns

pytestmark = pytest.mark.slow  # the module's fixture runs the whole (tiny) benchmark

TINY = BenchmarkConfig.small()  # 3 episodes x 1 s, G in {1, 8}, a few samples per scenario
IDENTIFIERS = {"episode_index", "workers"}  # integers in results.json that name things rather than measure them


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return run_benchmark(tmp_path_factory.mktemp("bench"), small=True, progress=False)


def _numbers(value, path="results"):
    """Every (path, number) leaf of a results.json subtree, identifiers and flags aside."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in IDENTIFIERS:
                yield from _numbers(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{path}[{i}]")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, value


def test_report_has_every_section_the_cpu_count_and_the_command(run):
    text = run.report_path.read_text()
    for heading in SECTIONS:
        assert heading in text
    assert f"**{os.cpu_count()} CPUs**" in text
    assert f"`{run.results['command']}`" in text
    assert "re-implementation" in text and "decode_video_frames_pyav" in text and "_query_videos" in text
    assert run.table_markdown in text
    for name in ("A1", "A3", "B32", "C"):
        assert f"| {name} |" in text


def test_results_json_structure(run):
    results = json.loads(run.results_path.read_text())
    assert set(results) >= {
        "command",
        "machine",
        "config",
        "dataset",
        "baseline",
        "scenarios",
        "storage",
        "sweep",
        "ingest",
        "aims",
        "profiles",
        "plots",
        "storage_matched",
    }
    assert results["machine"]["cpu_count"] == os.cpu_count()
    assert [s["scenario"] for s in results["scenarios"]] == ["A1", "A3", "B32", "C"]
    assert [r["gop_size"] for r in results["sweep"]] == [1, 8]
    assert results["dataset"]["episodes"] == TINY.episodes
    assert results["dataset"]["version"] == run.dataset_version == TINY.episodes
    baseline = results["baseline"]
    assert baseline["episodes"] == TINY.episodes
    assert baseline["encoding"]["codec"] == "av1" and baseline["encoding"]["g"] == 2
    assert baseline["encoding"]["crf"] == 30
    # As LeRobot records: the cameras' 30 fps, each camera frame once, not robodata's 100 Hz rows.
    assert baseline["fps"] == 30 and baseline["encoding"]["fps"] == 30
    # 3 episodes at 2 per file: 2 MP4s per camera, several episodes in the first.
    assert baseline["video_files"] == 2 * 3
    assert {a["key"] for a in results["aims"]} >= {"A1", "A3", "B32", "C", "bytes", "psnr", "jpeg_g8", "bound_g8"}
    for aim in results["aims"]:
        assert aim["met"] == (
            aim["measured"] >= aim["target"] if aim["comparison"] == ">=" else aim["measured"] <= aim["target"]
        )
        assert ("missed_by" in aim) == (not aim["met"])
        if not aim["met"] and not aim["key"].startswith(("bytes", "psnr", "jpeg")):
            assert "cProfile" in run.report_path.read_text() and aim["key"] in results["profiles"]
    assert results["ingest"]["cameras"] == 3
    # The training DataLoader grid: both loaders at every (workers, batch size) of the config.
    assert sorted((r["loader"], r["workers"], r["batch_size"]) for r in results["loader"]) == sorted(
        (name, w, b)
        for name in ("lerobot-layout", "robodata")
        for w in TINY.loader_workers
        for b in TINY.loader_batch_sizes
    )
    assert all(r["samples"] >= max(TINY.loader_samples, 3 * r["batch_size"]) for r in results["loader"])


def test_every_figure_is_a_positive_finite_measured_number(run):
    results = json.loads(run.results_path.read_text())
    measured = {
        k: results[k]
        for k in ("scenarios", "storage", "sweep", "ingest", "aims", "profiles", "storage_matched", "loader")
    }
    numbers = list(_numbers(measured))
    assert len(numbers) > 100
    for path, number in numbers:
        assert math.isfinite(number) and number > 0, f"{path} = {number}"
    # Ratios are the quotient of the figures they summarise, not typed in.
    for s in results["scenarios"]:
        assert s["ratio"] == pytest.approx(s["robodata_per_s"] / s["baseline_per_s"])
    for r in results["sweep"]:
        assert r["decode_bound_fps"] == pytest.approx(r["sequential_decode_fps"] * 2 / (r["gop_size"] + 1))


def test_plots_are_valid_pngs(run):
    assert set(run.plots) == {"storage_vs_gop", "throughput_vs_gop", "scenarios"}
    for path in run.plots.values():
        assert path.parent == run.out_dir and path.stat().st_size > 0
        with Image.open(path) as image:
            image.verify()
            assert image.format == "PNG"
        with Image.open(path) as image:
            assert image.size[0] > 300 and image.size[1] > 200


def test_baseline_reader_returns_robodata_frames(run):
    ds = robodata.open(run.dataset_uri)
    reader = LeRobotLayoutReader(run.out_dir / "work" / "lerobot")
    paired = baseline_rows(ds, reader)
    # The baseline is exported at the camera rate: one sample per camera frame, 30 of 100 rows.
    assert reader.fps == 30
    ref, _, in_gop = ref_columns("top")
    refs = ds.to_table(columns=[ref, in_gop])
    assert len(reader) == len(set(zip(refs[ref].to_pylist(), refs[in_gop].to_pylist(), strict=True))) < len(ds)
    top = ds.get_frames(np.arange(len(ds)), cameras="top")["top"]
    shown = [int(paired[row]) for row in range(len(ds))]
    assert sorted(set(shown)) == list(range(len(reader)))  # every baseline sample is some row's frame
    for row in (0, 1, 2, 3, len(ds) // 2, len(ds) // 2 + 1, len(ds) - 1):
        ours, theirs = ds[row], reader[int(paired[row])]
        assert theirs["episode_index"] == ours["episode_index"]
        for camera in ds.cameras:
            # The baseline re-encodes robodata's frames with AV1 crf 30: close, not equal.
            assert psnr(ours[f"observation_images_{camera}"], theirs[f"observation.images.{camera}"]) > 30
        # ...and it is the same camera frame, not a neighbour: closer to ours than to any other.
        others = [
            psnr(top[r], theirs["observation.images.top"])
            for r in range(len(ds))
            if not np.array_equal(top[r], top[row])
        ]
        assert psnr(top[row], theirs["observation.images.top"]) > max(others)


def test_baseline_window_pads_at_the_episode_end_like_lerobot(run):
    reader = LeRobotLayoutReader(run.out_dir / "work" / "lerobot")
    last = reader.episodes[0]["dataset_to_index"] - 1
    item = reader.get_item(last, delta_indices=[-3, 0, 3])
    key = reader.video_keys[0]
    assert item[key].shape[0] == 3
    assert item[f"{key}_is_pad"].tolist() == [False, False, True]
    np.testing.assert_array_equal(item[key][1], item[key][2])  # the padded frame repeats the edge


def test_baseline_rejects_a_timestamp_off_the_frame_grid(run):
    reader = LeRobotLayoutReader(run.out_dir / "work" / "lerobot")
    path = reader.video_path(0, reader.video_keys[0])
    half_frame = 0.5 / reader.fps
    with pytest.raises(FrameTimestampError, match="tolerance_s=0.0001"):
        decode_video_frames_pyav(path, [half_frame], 1e-4)
    assert decode_video_frames_pyav(path, [1 / reader.fps], 1e-4).shape[0] == 1


def test_cli_registers_the_report_scenario(capsys):
    from robodata.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["bench", "report", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for option in ("OUT_DIR".lower(), "--episodes", "--seconds", "--small", "--dataset"):
        assert option in out.lower()


def test_an_existing_dataset_is_measured_at_its_version_and_left_unchanged(run, tmp_path):
    from dataclasses import replace

    from benchmarks import run_benchmark as exported

    ingested = run.dataset_uri  # the first run's dataset, measured as an existing one
    before = robodata.open(ingested)
    config = replace(TINY, gop_sizes=(8,), batch_sizes=(16,), single_samples=2, window_samples=1)
    result = exported(tmp_path / "out", dataset_uri=ingested, version=before.version, config=config, progress=False)
    assert result.dataset_uri == ingested and result.dataset_version == before.version
    facts = result.results["dataset"]
    assert facts["generated_sample_data"] is False and facts["rows"] == len(before)
    # No source frames for an existing dataset: bytes are compared, PSNR only against robodata's frames.
    assert "psnr" not in {a["key"] for a in result.results["aims"]}
    assert result.results["storage"]["baseline_psnr_vs_robodata_db"] > 30
    assert [s["scenario"] for s in result.results["scenarios"]] == ["A1", "A3", "B16", "C"]
    after = robodata.open(ingested)
    assert after.version == before.version and after.versions() == before.versions()
    robodata_row = next(line for line in result.report_path.read_text().splitlines() if line.startswith("| robodata ("))
    assert robodata_row.endswith("| n/a |")  # PSNR against a source that is not at hand


def test_baseline_reader_names_a_folder_that_is_not_a_lerobot_dataset(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"info\.json.*not a LeRobot v3 dataset"):
        LeRobotLayoutReader(tmp_path)


def test_benchmark_report_asset_names_a_missing_peers_venv(dataset_copy, tmp_path):
    import dagster as dg

    from robodata.orchestration.defs.reports.benchmark import benchmark_report
    from robodata.orchestration.defs.resources import DatasetStore

    store = DatasetStore(root=dataset_copy, uploads_root=str(tmp_path / "uploads"))
    missing = tmp_path / "no-peers-venv"
    result = dg.materialize(
        [benchmark_report],
        resources={"store": store},
        raise_on_error=False,
        run_config={
            "ops": {"benchmark_report": {"config": {"samples": 4, "batch_size": 2, "peers_venv": str(missing)}}}
        },
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = (
        failure.step_failure_data.error.cause.message
        if failure.step_failure_data.error.cause
        else failure.step_failure_data.error.message
    )
    assert f"{missing}: no peers venv here" in message and "scripts/peers.sh" in message
