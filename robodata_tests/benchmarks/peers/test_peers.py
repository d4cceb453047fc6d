"""The peers benchmark's own code, without the peers' venv: the runner's JSON protocol (run for
real with robodata's Python), the plan every system reads, medians, ratios, aims and the
side-by-side report on a fake peer result."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from PIL import Image

import robodata
from benchmarks.peers.footage import benchmark_uploads, gym_aloha_available
from benchmarks.peers.gop_crf_sweep import choose_default, mark_frontier, sweep_table
from benchmarks.peers.peer_protocol import PeerRunError, parse_runner_output, peer_python, run_job
from benchmarks.peers.peer_report import render_peer_report, side_by_side_table, write_peer_plot
from benchmarks.peers.peer_runner import RESULT_PREFIX
from benchmarks.peers.peer_scenarios import (
    SYSTEMS,
    PeerConfig,
    loader_rows_match,
    peer_aims,
    plan_round,
    ratio_rows,
    scenario_jobs,
    summarize,
)
from benchmarks.peers.peer_storage import psnr_figures, quality_camera
from robodata.codec.quality import psnr


# --- the runner protocol -------------------------------------------------------------------------
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


def test_peer_python_names_the_missing_venv_and_how_to_build_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no peers venv here .*bash scripts/peers\.sh"):
        peer_python(tmp_path / "nowhere")


def test_runner_measures_robodata_in_its_own_process(ingested, tmp_path):
    ds = robodata.open(ingested)
    out = tmp_path / "frames.npz"
    batches = [[0, 5, 9], [len(ds) - 1, 3, 4]]
    job = {
        "system": "robodata",
        "root": ingested,
        "warmup": [1],
        "measurements": [
            {"name": "A", "kind": "sample", "indices": [2, 7, 11]},
            {"name": "B", "kind": "batch", "batches": batches},
            {"name": "C", "kind": "window", "indices": [4, 40], "frames": 8, "row_offsets": [0, 3, 7, 10]},
            {"name": "F", "kind": "frames", "indices": [6, 1], "out": str(out)},
            {"name": "P", "kind": "profile", "of": "batch", "batches": batches},
        ],
    }
    result = run_job(sys.executable, job)  # a real subprocess speaking the protocol
    assert result["system"] == "robodata" and result["label"] == "robodata"
    assert result["versions"]["pylance"] != "not installed"
    a, b, c, f, p = result["measurements"]
    assert (a["name"], len(a["seconds"]), a["samples"]) == ("A", 3, [1, 1, 1])
    assert (b["name"], len(b["seconds"]), b["samples"]) == ("B", 2, [3, 3])
    assert (c["name"], len(c["seconds"]), c["samples"]) == ("C", 2, [1, 1])
    assert all(s > 0 for m in (a, b, c) for s in m["seconds"])
    expected = ds.get_frames([6, 1])
    with np.load(out) as frames:
        assert sorted(frames.files) == sorted(ds.cameras) == sorted(f["cameras"])
        for camera in ds.cameras:
            np.testing.assert_array_equal(frames[camera], expected.data[camera])  # the exact decoded frames
    assert p["seconds_per_call"] > 0 and any("decode" in name for name in p["own_seconds"])


def test_runner_loader_delivers_the_planned_batches(ingested):
    ds = robodata.open(ingested)
    config = PeerConfig(batch_size=16, loader_batches=3, loader_workers=0, seed=4)
    plan = plan_round(np.random.default_rng(0), len(ds), config, round_index=1)
    robodata_system = SYSTEMS[0]
    _, loader_jobs = scenario_jobs(robodata_system, plan, np.arange(len(ds)), config, {"row_offsets": [0], "fps": 30})
    job = {"system": "robodata", "root": ingested, "measurements": loader_jobs}
    loader = run_job(sys.executable, job)["measurements"][0]
    assert loader["first_batch_s"] > 0 and len(loader["seconds"]) == 2 and loader["samples"] == [16, 16]
    # robodata's make_dataloader(seed=...) reads exactly the rows the plan gave the peers.
    assert loader_rows_match(loader_jobs[0]["batches"], loader["delivered"])
    assert not loader_rows_match(loader_jobs[0]["batches"], loader["delivered"][::-1])


def test_runner_reports_an_unknown_system_as_an_error(tmp_path):
    with pytest.raises(PeerRunError, match=r"system 'lerobot2'.*exit code 1"):
        run_job(sys.executable, {"system": "lerobot2", "root": str(tmp_path), "measurements": []})


# --- the plan: every system reads the same moments --------------------------------------------------
def test_peers_read_the_paired_indices_of_robodatas_rows():
    config = PeerConfig(single_samples=4, batches=2, batch_size=5, windows=3, loader_batches=6)
    plan = plan_round(np.random.default_rng(3), rows=20, config=config, round_index=0)
    assert len(plan["D"]) == 6  # 20 rows make 4 batches an epoch: the next epoch follows
    paired = np.arange(20) // 2 + 100  # two rows per peer frame, as at a control rate of twice the camera's
    window = {"row_offsets": [0, 2, 4], "fps": 50.0}
    ours = scenario_jobs(SYSTEMS[0], plan, paired, config, window)
    theirs = scenario_jobs(SYSTEMS[3], plan, paired, config, window)
    assert ours[0][0]["indices"] == [int(i) for i in plan["A"]]
    assert theirs[0][0]["indices"] == [int(paired[i]) for i in plan["A"]]
    assert theirs[0][1]["batches"] == [[int(paired[i]) for i in b] for b in plan["B"]]
    assert theirs[0][2]["indices"] == [int(paired[i]) for i in plan["C"]]
    assert theirs[0][2]["fps"] == 50.0 and theirs[0][2]["frames"] == 8
    assert theirs[1][0]["batches"] == [[int(paired[i]) for i in b] for b in plan["D"]]
    assert ours[1][0]["seed"] == theirs[1][0]["seed"] == 0


# --- medians, ratios, aims, report on a fake peer result -------------------------------------------
def _measurement(name, kind, seconds, samples, **extra):
    return {"name": name, "kind": kind, "seconds": seconds, "samples": samples, **extra}


def _fake_rounds():
    """Two rounds. robodata: A 10/s then 30/s (median 20), B 400/s, C 8/s, D 300/s. LeRobot torchcodec
    A 10/s, pyav 5/s; LanceDB A 8/s. Built so every ratio is known exactly."""

    def system(a, b, c, d, first):
        return [
            _measurement("A", "sample", [1 / a, 1 / a], [1, 1]),
            _measurement("B", "batch", [0.08], [b * 0.08]),
            _measurement("C", "window", [1 / c], [1]),
            _measurement("D", "loader", [32 / d] * 3, [32] * 3, first_batch_s=first, delivered=[]),
        ]

    first = {
        "robodata": system(10, 400, 8, 300, 2.0),
        "lerobot-torchcodec": system(10, 100, 4, 100, 9.0),
        "lerobot-pyav": system(5, 50, 2, 50, 9.5),
        "lancedb": system(8, 200, 4, 150, 5.0),
    }
    second = {**first, "robodata": system(30, 400, 8, 300, 4.0)}
    return [first, second]


def test_summary_is_the_median_over_rounds_and_ratios_use_the_faster_lerobot():
    summary = summarize(_fake_rounds())
    assert summary["A"]["robodata"]["per_s"] == pytest.approx(20.0)
    assert summary["A"]["robodata"]["rounds"] == pytest.approx([10.0, 30.0])
    assert summary["D"]["robodata"]["first_batch_s"] == pytest.approx(3.0)
    rows = {r["scenario"]: r for r in ratio_rows(summary)}
    assert rows["A"]["vs_lerobot"] == {"ratio": pytest.approx(2.0), "against": "lerobot-torchcodec"}
    assert rows["A"]["ratios"]["lerobot-pyav"] == pytest.approx(4.0)
    assert rows["A"]["vs_lancedb"]["ratio"] == pytest.approx(2.5)
    assert rows["B"]["vs_lerobot"]["ratio"] == pytest.approx(4.0)
    assert rows["D"]["first_batch_s"]["lancedb"] == pytest.approx(5.0)
    assert rows["D"]["description"] == "DataLoader, 2 workers, batch 32, every camera (steady samples/s)"
    small = {r["scenario"]: r["description"] for r in ratio_rows(summary, PeerConfig.small())}
    assert small["D"].startswith("DataLoader, 0 workers, batch 8") and small["B"].startswith("random batches of 8")


def test_aims_say_which_are_met_and_by_how_much_the_others_miss():
    storage = {
        "robodata": {"bytes_per_frame": 4000.0, "psnr_top_db": 36.0},
        "lerobot-torchcodec": {"bytes_per_frame": 5000.0, "psnr_top_db": 36.5},
    }
    aims = {a["key"]: a for a in peer_aims(summarize(_fake_rounds()), storage)}
    assert (aims["A-lerobot"]["met"], aims["A-lerobot"]["missed_by"]) == (False, pytest.approx(1 / 3))
    assert aims["A-lancedb"]["met"] and aims["A-lancedb"]["measured"] == pytest.approx(2.5)
    assert aims["B-lerobot"]["met"] and not aims["B-lancedb"]["met"]  # 4x >= 4x; 2x < 3x
    assert aims["D-lerobot"]["met"] and not aims["D-lancedb"]["met"]  # 3x; 2x
    assert aims["bytes"]["met"] and aims["bytes"]["measured"] == pytest.approx(0.8)
    assert not aims["psnr"]["met"] and aims["psnr"]["target"] == 36.5


def _fake_results(tmp_path):
    summary = summarize(_fake_rounds())
    storage = {
        "robodata": {"bytes_per_frame": 4000.0, "psnr_top_db": 36.0},
        "lerobot-torchcodec": {"bytes_per_frame": 5000.0, "psnr_top_db": 36.5},
        "lancedb": {"bytes_per_frame": 5100.0, "psnr_top_db": 36.5},
        "quality_camera": "top",
        "quality_rows": 4,
    }
    aims = peer_aims(summary, storage)
    aims[0]["why"] = "robodata (sample, 1 decode thread): 5.0 ms per call, 60% video decode"
    return {
        "command": "robodata bench out --peers .peers-venv",
        "config": PeerConfig().__dict__,
        "machine": {
            "cpu_count": 2,
            "processor": "x86_64",
            "python": "3.11",
            "load_average_at_start": "9.00 1 1",
            "load_average_at_end": "8.00 1 1",
            "wall_seconds": 90.0,
        },
        "footage": {"source": "gym-aloha"},
        "layouts_seconds": {"export_lerobot": 3.0, "lerobot_lance_convert": 9.0},
        "dataset": {
            "uri": "out/work/dataset",
            "version": 3,
            "episodes": 3,
            "rows": 300,
            "control_hz": 50.0,
            "cameras": {"top": "640x480@50"},
            "gop_size": 8,
            "codec": "h264",
        },
        "systems": {s.key: {"label": s.label, "versions": {"torch": "2.11.0"}} for s in SYSTEMS},
        "summary": summary,
        "ratios": ratio_rows(summary),
        "storage": storage,
        "aims": aims,
        "profiles": {},
        "loader_same_rows": [{"round": 0, "system": "robodata", "same_rows": True}],
        "plots": {"peers": "peers.png"},
    }


def test_side_by_side_table_on_a_fake_peer_result(tmp_path):
    lines = side_by_side_table(_fake_results(tmp_path)).splitlines()
    assert lines[0] == (
        "| scenario (samples/s) | robodata | LeRobot 0.6.1 (torchcodec) | LeRobot 0.6.1 (pyav) | "
        "LanceDBDataset (lerobot-lancedb 0.3.1) | robodata / LeRobot | robodata / LanceDB |"
    )
    a = next(line for line in lines if line.startswith("| A "))
    assert a.endswith("| 20.0 | 10.0 | 5.0 | 8.0 | **2.00x** (aim 3x, missed by 33%) | **2.50x** (aim 2x, met) |")
    b = next(line for line in lines if line.startswith("| B "))
    assert "| 400.0 | 100.0 | 50.0 | 200.0 | **4.00x** (aim 4x, met) | **2.00x** (aim 3x, missed by 33%) |" in b
    assert "| bytes per camera frame | 4,000 | 5,000 | 5,000 | 5,100 | **0.80x** bytes (no more) |" in "\n".join(lines)
    assert lines[-1].startswith("| PSNR of `top` vs the source, dB | 36.00 | 36.50 | 36.50 | 36.50 | **-0.50 dB** |")


def test_report_has_every_system_the_aims_the_load_and_the_reasons(tmp_path):
    results = _fake_results(tmp_path)
    text = render_peer_report(results)
    for heading in (
        "## Side by side",
        "## Aims",
        "## D: the training DataLoader",
        "## Where the time goes",
        "## Method",
        "## Figures",
    ):
        assert heading in text
    assert "`robodata bench out --peers .peers-venv`" in text and "load average 9.00 1 1" in text
    assert "**gym-aloha**" in text and "60% video decode" in text and "short by 33.3%" in text
    assert "| LanceDBDataset (lerobot-lancedb 0.3.1) | 150.0 | 5.00 | 150.0, 150.0 |" in text
    path = write_peer_plot(results, tmp_path / "peers.png")
    with Image.open(path) as image:
        assert image.format == "PNG" and image.size[0] > 500


# --- storage figures and footage --------------------------------------------------------------------
def test_psnr_figures_of_one_camera_and_of_all():
    rng = np.random.default_rng(0)
    top = [rng.integers(0, 256, (8, 8, 3), dtype=np.uint8) for _ in range(2)]
    side = [rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)]
    noisy_top = np.stack([np.clip(f.astype(int) + 3, 0, 255).astype(np.uint8) for f in top])
    noisy_side = np.stack([np.clip(f.astype(int) - 9, 0, 255).astype(np.uint8) for f in side])
    figures = psnr_figures({"top": top, "side": side}, {"top": noisy_top, "side": noisy_side}, "top")
    each = [psnr(r, t) for r, t in zip(top + side, [*noisy_top, *noisy_side], strict=True)]
    assert figures["psnr_top_db"] == pytest.approx(np.mean(each[:2]))
    assert figures["psnr_db"] == pytest.approx(np.mean(each))
    assert figures["psnr_db"] < figures["psnr_top_db"]  # the side camera is noisier
    assert quality_camera(["angle", "top"]) == "top" and quality_camera(["left", "right"]) == "left"


def test_synthetic_footage_without_the_peers_venv(tmp_path):
    assert not gym_aloha_available(None) and not gym_aloha_available(tmp_path / "python")
    uploads, source = benchmark_uploads(tmp_path, None, source="auto", episodes=1, seconds=0.2)
    assert source == "synthetic" and (uploads[0] / "episode.json").exists()
    with pytest.raises(ValueError, match="needs the peers' venv"):
        benchmark_uploads(tmp_path, None, source="aloha")


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


# --- the G x CRF sweep's choice -------------------------------------------------------------------
def _point(g, crf, per_s, size, db):
    return {
        "gop_size": g,
        "crf": crf,
        "loader_samples_per_s": per_s,
        "loader_first_batch_s": 1.0,
        "bytes_per_frame": size,
        "psnr_top_db": db,
        "psnr_db": db,
    }


def test_frontier_and_default_within_lerobots_bytes_and_psnr():
    points = mark_frontier(
        [
            _point(4, 23, 300.0, 6000.0, 36.0),
            _point(8, 23, 280.0, 4500.0, 36.5),
            _point(8, 28, 270.0, 4600.0, 35.0),  # beaten by G=8 crf 23 on every axis
            _point(2, 28, 320.0, 7000.0, 33.0),
        ]
    )
    assert [p["on_frontier"] for p in points] == [True, True, False, True]
    chosen = choose_default(points, max_bytes_per_frame=6200.0, min_psnr_db=35.5)
    assert (chosen["gop_size"], chosen["crf"]) == (4, 23)  # fastest within the limits; G=2 is too big
    assert choose_default(points, max_bytes_per_frame=5000.0, min_psnr_db=35.5)["gop_size"] == 8
    assert choose_default(points, max_bytes_per_frame=1000.0) is None
    table = sweep_table(points, chosen).splitlines()
    assert table[2] == "| 4 | 23 | 300.0 | 1.00 | 6,000 | 36.00 | 36.00 | **chosen** |"
    assert table[4].endswith("| 35.00 | 35.00 |  |")
