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
from benchmarks.peers import lerobot_writer
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
    scenario_key,
    summarize,
)
from benchmarks.peers.peer_storage import psnr_figures, quality_camera
from benchmarks.peers.runner_resize import ResizeFrame, resize_hwc
from robodata.codec._quality import psnr
from robodata.reader import gop_store
from robodata.torch._block_order import BlockSampler


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
    config = PeerConfig(batch_size=16, loader_batches=3, loader_workers=0, seed=4, window_rows=64)
    blocks = BlockSampler.for_dataset(ds, batch_size=16).block_of_row
    plan = plan_round(np.random.default_rng(0), len(ds), config, round_index=1, blocks=blocks)
    robodata_system = SYSTEMS[0]
    _, loader_jobs = scenario_jobs(robodata_system, plan, np.arange(len(ds)), config, {"row_offsets": [0], "fps": 30})
    job = {"system": "robodata", "root": ingested, "measurements": loader_jobs}
    loader = run_job(sys.executable, job)["measurements"][0]
    # the block order: one whole epoch read first, then the planned epoch timed batch by batch, its first too
    assert loader["first_batch_s"] > 0 and len(loader["seconds"]) == 3 and loader["samples"] == [16, 16, 16]
    # robodata's make_dataloader(seed=...) reads exactly the rows the plan gave the peers.
    assert loader_rows_match(loader_jobs[0]["batches"], loader["delivered"])
    assert not loader_rows_match(loader_jobs[0]["batches"], loader["delivered"][::-1])


def test_runner_reports_an_unknown_system_as_an_error(tmp_path):
    with pytest.raises(PeerRunError, match=r"system 'lerobot2'.*exit code 1"):
        run_job(sys.executable, {"system": "lerobot2", "root": str(tmp_path), "measurements": []})


# --- the plan: every system reads the same moments --------------------------------------------------
def test_peers_read_the_paired_indices_of_robodatas_rows():
    config = PeerConfig(single_samples=4, batches=2, batch_size=5, windows=3, loader_batches=6, order="global")
    plan = plan_round(np.random.default_rng(3), rows=20, config=config, round_index=0)
    assert len(plan["D"]) == 6  # 20 rows make 4 batches an epoch: the next epoch follows
    paired = np.arange(20) // 2 + 100  # two rows per peer frame, as at a control rate of twice the camera's
    window = {"row_offsets": [0, 2, 4], "fps": 50.0}
    by_key = {s.key: s for s in SYSTEMS}
    ours = scenario_jobs(by_key["robodata"], plan, paired, config, window)
    theirs = scenario_jobs(by_key["lancedb"], plan, paired, config, window)
    assert ours[0][0]["indices"] == [int(i) for i in plan["A"]]
    assert theirs[0][0]["indices"] == [int(paired[i]) for i in plan["A"]]
    assert theirs[0][1]["batches"] == [[int(paired[i]) for i in b] for b in plan["B"]]
    assert theirs[0][2]["indices"] == [int(paired[i]) for i in plan["C"]]
    assert theirs[0][2]["fps"] == 50.0 and theirs[0][2]["frames"] == 8
    assert theirs[1][0]["batches"] == [[int(paired[i]) for i in b] for b in plan["D"]]
    assert ours[1][0]["seed"] == theirs[1][0]["seed"] == 0
    # The LeRobot user's path reads only D (robodata rows: its items are LeRobot's order), the bound
    # decodes D's robodata rows in-process; at 224 x 224 every name carries the size.
    compat = scenario_jobs(by_key["robodata-compat"], plan, paired, config, window, (224, 224))
    assert compat[0] == [] and compat[1][0]["name"] == "D@224"
    assert compat[1][0]["batches"] == [[int(i) for i in b] for b in plan["D"]]
    assert "warm_epochs" in compat[1][0] and compat[1][0]["warm_epochs"] == 0  # the uniform order: no warm epoch
    bound = scenario_jobs(by_key["bound"], plan, paired, config, window)
    assert bound[0] == [] and bound[1][0]["kind"] == "bound" and bound[1][0]["name"] == "D"  # beside D
    assert scenario_key("C", (224, 224)) == "C@224" and scenario_key("C", (224, 160)) == "C@224x160"


def test_in_the_block_order_the_lerobot_users_path_reads_its_item_samplers_batches():
    from benchmarks.peers.peer_scenarios import compat_batches
    from robodata.lerobot._block_order import BlockOrderSampler

    rows, blocks = 40, np.repeat(np.arange(10), 4)
    config = PeerConfig(batch_size=8, loader_batches=7, loader_workers=2, window_rows=16)
    plan = plan_round(np.random.default_rng(0), rows, config, round_index=2, blocks=blocks)
    sampler = BlockOrderSampler(blocks, batch_size=8, num_workers=2, seed=plan["seed"], window_rows=16)
    planned = compat_batches(sampler, config)
    # epoch 1 (after the warm one), cut as DataLoader(batch_size=8) cuts it, then epoch 2 for the 7th batch
    epoch1, epoch2 = sampler.order(1), sampler.order(2)
    assert [b.tolist() for b in planned] == [epoch1[i : i + 8].tolist() for i in range(0, 40, 8)] + [
        epoch2[0:8].tolist(),
        epoch2[8:16].tolist(),
    ]
    plan["D_compat"] = {"D": planned[:5], "D@224": planned[:3]}
    paired = np.arange(rows) + 100
    window = {"row_offsets": [0], "fps": 50.0}
    by_key = {s.key: s for s in SYSTEMS}
    compat = scenario_jobs(by_key["robodata-compat"], plan, paired, config, window, (224, 224))[1][0]
    assert compat["batches"] == [b.tolist() for b in planned[:3]] and compat["order"] == "block"
    ours = scenario_jobs(by_key["robodata"], plan, paired, config, window)[1][0]
    theirs = scenario_jobs(by_key["lancedb"], plan, paired, config, window)[1][0]
    # both robodata paths read a whole epoch first and time the next; the peers read make_dataloader's batches
    assert (compat["warm_epochs"], ours["warm_epochs"], theirs["warm_epochs"]) == (1, 1, 0)
    assert theirs["batches"] == [[int(paired[i]) for i in b] for b in plan["D"]]


# --- medians, ratios, aims, report on a fake peer result -------------------------------------------
def _measurement(name, kind, seconds, samples, **extra):
    return {"name": name, "kind": kind, "seconds": seconds, "samples": samples, **extra}


def _fake_rounds():
    """Two rounds. robodata: A 10/s then 30/s (median 20), B 400/s, C 8/s, D 300/s (600/s at 224).
    LeRobot torchcodec A 10/s, pyav 5/s; LanceDB A 8/s, C 4/s, D 150/s (200/s at 224). The LeRobot
    user's path D 280/s (500/s at 224), float 100/s; the bound 600/s (900/s at 224). Built so
    every ratio is known exactly."""

    def system(a, b, c, d, first, d224=None):
        measured = [
            _measurement("A", "sample", [1 / a, 1 / a], [1, 1]),
            _measurement("B", "batch", [0.08], [b * 0.08]),
            _measurement("C", "window", [1 / c], [1]),
            _measurement("D", "loader", [32 / d] * 3, [32] * 3, first_batch_s=first, delivered=[]),
        ]
        if d224:
            measured.append(_measurement("D@224", "loader", [32 / d224] * 3, [32] * 3, first_batch_s=first))
        return measured

    def loader_only(d, first, d224=None):
        measured = [_measurement("D", "loader", [32 / d] * 3, [32] * 3, first_batch_s=first, delivered=[])]
        if d224:
            measured.append(_measurement("D@224", "loader", [32 / d224] * 3, [32] * 3, first_batch_s=first))
        return measured

    first = {
        "robodata": system(10, 400, 8, 300, 2.0, 600),
        "robodata-compat": loader_only(280, 2.5, 500),
        "robodata-compat-float": loader_only(100, 3.0),
        "lerobot-torchcodec": system(10, 100, 4, 100, 9.0, 150),
        "lerobot-pyav": system(5, 50, 2, 50, 9.5),
        "lancedb": system(8, 200, 4, 150, 5.0, 200),
        "bound": [
            _measurement("D", "bound", [32 / 600] * 2, [32] * 2),
            _measurement("D@224", "bound", [32 / 900], [32]),
        ],
    }
    second = {**first, "robodata": system(30, 400, 8, 300, 4.0, 600)}
    return [first, second]


def test_summary_is_the_median_over_rounds_and_ratios_use_the_faster_lerobot():
    summary = summarize(_fake_rounds())
    assert summary["A"]["robodata"]["per_s"] == pytest.approx(20.0)
    assert summary["A"]["robodata"]["rounds"] == pytest.approx([10.0, 30.0])
    assert summary["D"]["robodata"]["first_batch_s"] == pytest.approx(3.0)
    rows = {r["scenario"]: r for r in ratio_rows(summary)}
    assert [r["scenario"] for r in ratio_rows(summary)] == ["A", "B", "C", "D", "D@224"]  # native, then at 224
    assert rows["A"]["vs_lerobot"] == {"ratio": pytest.approx(2.0), "against": "lerobot-torchcodec"}
    assert rows["A"]["ratios"]["lerobot-pyav"] == pytest.approx(4.0)
    assert rows["A"]["vs_lancedb"]["ratio"] == pytest.approx(2.5)
    assert rows["B"]["vs_lerobot"]["ratio"] == pytest.approx(4.0)
    assert rows["D"]["first_batch_s"]["lancedb"] == pytest.approx(5.0)
    assert rows["D"]["description"] == "DataLoader, 2 workers, batch 32, every camera (steady samples/s)"
    assert rows["D@224"]["description"].endswith("(steady samples/s), at 224x224")
    # Both robodata paths against each peer, and every system's share of the decode bound.
    assert rows["D"]["versus"]["robodata-compat"]["lerobot"]["ratio"] == pytest.approx(2.8)
    assert rows["D"]["versus"]["robodata-compat-float"]["lancedb"]["ratio"] == pytest.approx(100 / 150)
    assert rows["D"]["bound"] == pytest.approx(600.0) and rows["D"]["of_bound"]["robodata"] == pytest.approx(0.5)
    assert rows["D@224"]["of_bound"]["lancedb"] == pytest.approx(200 / 900)
    assert "bound" not in rows["A"]
    small = {r["scenario"]: r["description"] for r in ratio_rows(summary, PeerConfig.small())}
    assert small["D"].startswith("DataLoader, 0 workers, batch 8") and small["B"].startswith("random batches of 8")


def test_the_bound_is_cpu_work_spread_over_every_core():
    from benchmarks.peers.peer_scenarios import round_figures

    # 64 samples took 0.2 s wall under a neighbour's load but 0.2 CPU s on 2 threads: 640 samples/s.
    bound = {"kind": "bound", "seconds": [0.1, 0.1], "cpu_seconds": [0.1, 0.1], "threads": 2, "samples": [32, 32]}
    assert round_figures(bound)["per_s"] == pytest.approx(640.0)
    assert round_figures({**bound, "cpu_seconds": None})["per_s"] == pytest.approx(320.0)  # older results: wall


def test_aims_are_the_issues_and_say_by_how_much_the_others_miss():
    storage = {
        "robodata": {"bytes_per_frame": 4000.0, "psnr_top_db": 36.0},
        "lerobot-torchcodec": {"bytes_per_frame": 5000.0, "psnr_top_db": 36.5},
    }
    aims = {a["key"]: a for a in peer_aims(summarize(_fake_rounds()), storage)}
    assert aims["A-robodata-lancedb"]["met"] and aims["A-robodata-lancedb"]["measured"] == pytest.approx(2.5)
    assert "A-robodata-lerobot" not in aims and not any(k.startswith("B-") for k in aims)  # no aim: reported only
    assert (aims["C-robodata-lancedb"]["met"], aims["C-robodata-lancedb"]["missed_by"]) == (False, pytest.approx(0.2))
    assert aims["D-robodata-lerobot"]["met"] and aims["D-robodata-lancedb"]["met"]  # 3x >= 3x; 2x >= 2x
    assert aims["D-robodata-compat-lerobot"]["missed_by"] == pytest.approx(0.2 / 3)
    assert aims["D-robodata-compat-lancedb"]["measured"] == pytest.approx(280 / 150)
    assert aims["D-compat-robodata"]["met"] and aims["D-compat-robodata"]["measured"] == pytest.approx(280 / 300)
    assert aims["D@224-robodata-lancedb"]["missed_by"] == pytest.approx(0.25)  # 3x of 4x
    assert aims["D@224-robodata-compat-lancedb"]["measured"] == pytest.approx(2.5)
    first = aims["first-batch-robodata"]
    assert first["met"] and (first["measured"], first["target"], first["comparison"]) == (3.0, 9.0, "<=")
    assert aims["first-batch-robodata-compat"]["measured"] == pytest.approx(2.5)
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
    next(a for a in aims if not a["met"])["why"] = (
        "robodata (window, 1 decode thread): 5.0 ms per call, 60% video decode"
    )
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
        "peers_source": "LeRobotDataset writer from the source frames",
        "layouts_seconds": {
            "lerobot_writer": 30.0,
            "lerobot_lance_convert": 9.0,
            "writer": {"encoder": {"vcodec": "libsvtav1", "g": 2, "crf": 30}},
        },
        "size_path": "decoded frames resized like the peers'",
        "rendition": None,
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
        "| scenario | LeRobot 0.6.1 (torchcodec) | LeRobot 0.6.1 (pyav) | LanceDBDataset (lerobot-lancedb 0.3.1) | "
        "robodata | robodata / LeRobot | robodata / LanceDB | decode bound | robodata / bound |"
    )
    a = next(line for line in lines if line.startswith("| A "))
    assert a.endswith("| 10.0 | 5.0 | 8.0 | 20.0 | 2.00x | **2.50x** (aim 1.5x, met) | n/a |  |")
    c = next(line for line in lines if line.startswith("| C "))
    assert c.endswith("| 4.0 | 2.0 | 4.0 | 8.0 | 2.00x | **2.00x** (aim 2.5x, missed by 20%) | n/a |  |")
    d = [line for line in lines if line.startswith("| D ")]
    assert d[0].startswith(
        "| D DataLoader, 2 workers, batch 32, make_dataloader, decode-once order (samples/s) | 100.0 | 50.0 | 150.0 |"
    )
    assert d[0].endswith("| **3.00x** (aim 3x, met) | **2.00x** (aim 2x, met) | 600.0 | 50% |")
    assert d[1].startswith(
        "| D DataLoader, 2 workers, batch 32, LeRobotCompatDataset (uint8), decode-once order (item_sampler) (samples/s) |"
    )
    assert "**2.80x** (aim 3x, missed by 7%)" in d[1] and d[1].endswith("| 600.0 | 47% |")
    assert "LeRobotCompatDataset (float)" in d[2] and "| 0.67x |" in d[2]  # no aim on the float path
    first = next(line for line in lines if "time to first batch, make_dataloader" in line)
    assert first.endswith("| 9.00 | 9.50 | 5.00 | 3.00 | **0.33x** (aim <= 1x, met) | 0.60x |  |  |")
    d224 = next(line for line in lines if line.startswith("| D DataLoader, 2 workers, batch 32 @ 224x224, make_"))
    assert d224.endswith("| 150.0 | n/a | 200.0 | 600.0 | 4.00x | **3.00x** (aim 4x, missed by 25%) | 900.0 | 67% |")
    table = "\n".join(lines)
    assert "| bytes per camera frame | 5,000 | 5,000 | 5,100 | 4,000 | **0.80x** (aim <= 1x, met) | 0.78x |" in table
    assert lines[-1].startswith("| PSNR of `top` vs the source, dB | 36.50 | 36.50 | 36.50 | 36.00 | **-0.50 dB** (aim")


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
    assert "**gym-aloha**" in text and "60% video decode" in text and "short by 20.0%" in text
    assert "LeRobot 0.6.1's own writer from the same source frames" in text and "vcodec libsvtav1, g 2, crf 30" in text
    assert "robodata reads by decoded frames resized like the peers'" in text
    peers = "| native | LanceDBDataset (lerobot-lancedb 0.3.1) | make_dataloader's batches | 150.0 | 5.00 | 25% |"
    assert peers in text
    compat = "| 224x224 | robodata LeRobotCompatDataset uint8 | decode-once order (item_sampler) | 500.0 | 2.50 | 56% |"
    assert compat in text
    assert "`DataLoader(ds, sampler=ds.item_sampler(batch_size=B, num_workers=W, seed=S)" in text
    # with the uniform order both robodata paths say so
    uniform = render_peer_report({**results, "config": {**results["config"], "order": "global"}})
    assert "| native | robodata LeRobotCompatDataset uint8 | uniform order |" in uniform
    assert "shuffle=True, num_workers" in uniform
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
    assert table[2] == "| 4 | 23 | n/a | yes | n/a | n/a | 300.0 | 1.00 | 6,000 | 36.00 | 36.00 | n/a | **chosen** |"
    assert table[4].endswith("| 35.00 | 35.00 | n/a |  |")
    # The decode bound, where measured, is the throughput the choice is made on (wall-clock D is noisy).
    for point, bound in zip(points, (100.0, 90.0, 80.0, 400.0), strict=True):
        point["bound_samples_per_s"] = bound
    mark_frontier(points)
    assert choose_default(points, max_bytes_per_frame=6200.0, min_psnr_db=35.5)["gop_size"] == 4
    assert choose_default(points, max_bytes_per_frame=7000.0)["gop_size"] == 2  # fastest bound within 7,000 bytes


def test_the_default_is_the_cheapest_random_read_within_a_tenth_of_the_best_decode_bound():
    def point(gop, preset, bound, random_read, size, db):
        return {
            **_point(gop, 20, 0.0, size, db),
            "preset": preset,
            "bound_samples_per_s": bound,
            "random_row_cpu_ms": random_read,
            "ingest_seconds": 15.0,
        }

    points = mark_frontier(
        [
            point(8, "veryfast", 1000.0, 5.0, 3741.0, 44.2),
            point(4, "veryfast", 940.0, 4.0, 4291.0, 44.3),  # over LeRobot's bytes
            point(4, "faster", 920.0, 4.1, 4180.0, 44.5),
            point(2, "faster", 850.0, 3.2, 4200.0, 44.6),  # more than 10% below the best bound
        ]
    )
    assert all(p["on_frontier"] for p in points)
    chosen = choose_default(points, max_bytes_per_frame=4279.0, min_psnr_db=43.99)
    assert (chosen["gop_size"], chosen["preset"]) == (4, "faster")
    table = sweep_table(points, chosen).splitlines()
    assert table[4] == "| 4 | 20 | faster | yes | 4.10 | 920.0 | 0.0 | 1.00 | 4,180 | 44.50 | 44.50 | 15 | **chosen** |"
    # A point no better on any axis than another leaves the frontier.
    points.append(point(4, "medium", 900.0, 4.2, 4190.0, 44.4))
    assert mark_frontier(points)[-1]["on_frontier"] is False


# --- the peers' dataset: LeRobot's own writer from the source frames -------------------------------
class _RecordingLeRobotDataset:
    """Stands in for LeRobot's LeRobotDataset (not installed here): records what the writer calls."""

    last = None

    def __init__(self, args: dict) -> None:
        self.args, self.frames, self.saved, self.finalized = args, [], [], 0

    @classmethod
    def create(cls, repo_id, fps, features, root=None, robot_type=None, use_videos=True):
        cls.last = cls(
            {
                "repo_id": repo_id,
                "fps": fps,
                "features": features,
                "root": root,
                "robot_type": robot_type,
                "use_videos": use_videos,
            }
        )
        return cls.last

    def add_frame(self, frame: dict) -> None:
        self.frames.append(frame)

    def save_episode(self) -> None:
        self.saved.append(len(self.frames))

    def finalize(self) -> None:
        self.finalized += 1


def test_lerobot_writer_records_every_source_frame_through_lerobots_calls(sample_uploads, tmp_path):
    import av
    import pyarrow.parquet as pq

    uploads = list(reversed(sample_uploads))  # written in episode order whatever order they come in
    result = lerobot_writer.write_lerobot(tmp_path / "lr", uploads, dataset_cls=_RecordingLeRobotDataset)
    ds = _RecordingLeRobotDataset.last
    assert ds.args["fps"] == 30 and ds.args["use_videos"] and ds.args["robot_type"] == "aloha"
    features = ds.args["features"]
    assert features["observation.images.top"] == {
        "dtype": "video",
        "shape": (480, 640, 3),
        "names": ["height", "width", "channels"],
    }
    assert features["observation.images.wrist_left"]["shape"] == (240, 320, 3)
    assert features["observation.state"]["shape"] == (14,) and features["action"]["names"][0] == "left_waist"
    # One LeRobot frame per camera frame: 2 s at 30 fps per episode, saved episode by episode, finalized once.
    assert ds.saved == [60, 120, 180] and ds.finalized == 1 and result["frames"] == 180
    with av.open(str(sample_uploads[1] / "top.mp4")) as container:
        source = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    second = ds.frames[60:120]
    assert len(source) == 60
    for i in (0, 17, 59):
        np.testing.assert_array_equal(second[i]["observation.images.top"], source[i])  # the source pixels
    states = pq.read_table(sample_uploads[1] / "states.parquet")
    # The state of the control step (100 Hz) nearest the camera frame (30 fps): frame 17 at 0.5667 s -> step 57.
    np.testing.assert_array_equal(second[17]["observation.state"], states["observation_state"][57].as_py())
    instruction = json.loads((sample_uploads[1] / "episode.json").read_text())["language_instruction"]
    assert instruction and {f["task"] for f in second} == {instruction}


def test_nearest_steps_picks_the_closest_control_step():
    steps = np.arange(10) / 100.0
    assert lerobot_writer.nearest_steps(steps, [0.0, 0.014, 0.016, 0.5]).tolist() == [0, 1, 2, 9]


# --- at the policy's size and the decode bound ------------------------------------------------------
def test_resize_is_torchvisions_kernel_on_frames_and_batches():
    import torch

    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (2, 48, 64, 3), dtype=np.uint8)
    out = resize_hwc(frames, (24, 20))
    assert out.shape == (2, 24, 20, 3) and out.dtype == np.uint8
    chw = torch.from_numpy(frames[0]).permute(2, 0, 1).contiguous()
    expected = torch.nn.functional.interpolate(chw[None], size=(24, 20), mode="bilinear", antialias=True)[0]
    np.testing.assert_array_equal(out[0], expected.permute(1, 2, 0).numpy())
    window = ResizeFrame((24, 20))(torch.from_numpy(frames).permute(0, 3, 1, 2))  # T x C x H x W
    np.testing.assert_array_equal(window.permute(0, 2, 3, 1).numpy(), out)
    assert (resize_hwc(np.full((1, 48, 48, 3), 200, np.uint8), (24, 24)) == 200).all()  # flat stays flat


def test_runner_reads_at_the_policy_size_and_measures_the_decode_bound(ingested):
    ds = robodata.open(ingested)
    batches = [[0, 5, 9, 40], [len(ds) - 1, 3]]
    job = {
        "system": "robodata",
        "root": ingested,
        "size": [32, 24],
        "warmup": [1],
        "measurements": [
            {"name": "A@32x24", "kind": "sample", "indices": [2, 7]},
            {"name": "B@32x24", "kind": "batch", "batches": batches},
            {"name": "C@32x24", "kind": "window", "indices": [4], "frames": 8, "row_offsets": [0, 3, 7]},
            {"name": "D@32x24", "kind": "bound", "batches": batches},
        ],
    }
    a, b, c, bound = run_job(sys.executable, job)["measurements"]
    assert len(a["seconds"]) == 2 and len(b["seconds"]) == 2 and len(c["seconds"]) == 1
    assert (
        sum(bound["samples"]) == pytest.approx(6)
        and len(bound["seconds"]) == len(bound["cpu_seconds"])
        and bound["threads"] >= 1
    )
    # Every camera's wanted frame is converted, each GOP decoded once, up to the last frame wanted of it.
    rows = [i for b in batches for i in b]
    last: dict[int, int] = {}
    for camera in ds.cameras:
        refs, in_gop = gop_store(ds).frame_refs(rows, camera)
        for ref, k in zip(refs.tolist(), in_gop.tolist(), strict=True):
            last[ref] = max(last.get(ref, -1), k)
    assert bound["frames_wanted"] == 6 * len(ds.cameras)
    assert bound["frames_decoded"] == sum(k + 1 for k in last.values())


def test_bound_decodes_what_the_reader_decodes(ingested):
    ds = robodata.open(ingested)
    batch = [3, 11, 50]
    job = {"system": "robodata", "root": ingested, "measurements": [{"name": "D", "kind": "bound", "batches": [batch]}]}
    bound = run_job(sys.executable, job)["measurements"][0]
    rows = ds.rows
    gops = {(c, int(rows.ref_id[c][i])) for c in ds.cameras for i in batch}
    last = {g: max(int(rows.frame_in_gop[g[0]][i]) for i in batch if int(rows.ref_id[g[0]][i]) == g[1]) for g in gops}
    # Each GOP of the batch decoded once, up to the last frame wanted of it; no rendition here.
    assert bound["frames_decoded"] == sum(k + 1 for k in last.values()) and bound["frames_wanted"] == 3 * len(
        ds.cameras
    )
    assert bound["renditions"] is False


def test_runner_runs_the_lerobot_users_path_in_robodata_trains_order(ingested):
    from benchmarks.peers.peer_compat import compat_datasets, compat_plan

    ds = robodata.open(ingested)
    config = PeerConfig(batch_size=4, loader_batches=3, loader_workers=0, sizes=(None,))
    # the batches DataLoader(ds, sampler=ds.item_sampler(batch_size=4, num_workers=0, seed=1)) makes in
    # epoch 1 (after the warm epoch), planned in this process as the harness does
    planned, native = compat_plan(compat_datasets(ingested, ds.version, None, config), config, seed=1)
    batches = [[int(i) for i in b] for b in planned["D"]]
    assert len(batches) == 3 and all(len(b) == 4 for b in batches)
    assert [list(b) for b in native["batches"]] == batches  # no episode filter here: items are robodata rows
    assert native["window_rows"] > 0
    loader = {"name": "D", "kind": "loader", "batches": batches, "batch_size": 4, "workers": 0, "seed": 1}
    for dtype, size in (("uint8", None), ("float32", [24, 32])):
        block = {**loader, "order": "block", "warm_epochs": 1}
        job = {"system": "robodata-compat", "root": ingested, "dtype": dtype, "size": size, "measurements": [block]}
        result = run_job(sys.executable, job)
        measured = result["measurements"][0]
        assert result["label"] == f"robodata LeRobotCompatDataset ({dtype})"
        # a whole epoch read first, then the next timed batch by batch, its first too
        assert measured["first_batch_s"] > 0 and measured["samples"] == [4, 4, 4] and len(measured["seconds"]) == 3
        if size is None:  # the item_sampler's own batches, in order (at 24x32 the window may differ)
            assert measured["delivered"] == batches
    # order "global": LeRobot's own DataLoader(shuffle=True), its first batch untimed
    uniform = {**loader, "order": "global"}
    job = {"system": "robodata-compat", "root": ingested, "measurements": [uniform]}
    measured = run_job(sys.executable, job)["measurements"][0]
    assert measured["samples"] == [4, 4] and len(measured["delivered"]) == 3
    delivered = [i for batch in measured["delivered"] for i in batch]
    assert len(set(delivered)) == 12 and all(0 <= i < len(ds) for i in delivered)  # shuffled, no repeats
    assert not loader_rows_match(batches, measured["delivered"])


def test_rendered_episodes_are_reused_across_footage_sizes(tmp_path):
    from benchmarks.peers.footage import reuse_rendered

    six = tmp_path / "aloha-6x300-seed0"
    for index in range(2):
        (six / f"episode_{index:06d}").mkdir(parents=True)
        (six / f"episode_{index:06d}" / "top.mp4").write_bytes(bytes([index]) * 10)
        (six / f"episode_{index:06d}" / "episode.json").write_text("{}")
    (six / "episode_000002").mkdir()  # still rendering: no episode.json yet
    (tmp_path / "aloha-6x150-seed0" / "episode_000002").mkdir(parents=True)  # other steps: never reused
    (tmp_path / "aloha-6x150-seed0" / "episode_000002" / "episode.json").write_text("{}")
    three = tmp_path / "aloha-3x300-seed0"
    three.mkdir()
    assert reuse_rendered(three, 3, 300, 0) == [0, 1]
    assert (three / "episode_000001" / "top.mp4").read_bytes() == bytes([1]) * 10
    assert not (three / "episode_000002").exists()
    assert reuse_rendered(three, 3, 300, 0) == []  # already there


def test_sweep_ingests_each_point_with_its_settings_and_measures_psnr_on_the_given_rows(sample_uploads, tmp_path):
    from benchmarks.peers.gop_crf_sweep import sweep_gop_crf
    from robodata.ingest import stored_settings

    uploads = {0: sample_uploads[0]}
    points = sweep_gop_crf(
        uploads,
        tmp_path / "sweep",
        gop_sizes=(4,),
        crfs=(23,),
        presets=("veryfast",),
        fast_decodes=(True, False),
        random_rows=5,
        batch_size=8,
        workers=0,
        loader_batches=3,
        quality_rows=np.array([0, 50, 150]),
    )
    assert [(p["gop_size"], p["crf"], p["fast_decode"]) for p in points] == [(4, 23, True), (4, 23, False)]
    for point in points:
        settings = stored_settings(point["dataset_uri"])
        assert (settings.gop_size, settings.crf, settings.preset, settings.fast_decode) == (
            4,
            23,
            "veryfast",
            point["fast_decode"],
        )
        assert point["loader_samples_per_s"] > 0 and point["bound_samples_per_s"] > 0 and 20 < point["psnr_top_db"] < 99
        assert point["random_row_cpu_ms"] > 0
    # Deblocking and CABAC (fastdecode off) spend fewer bytes on the same pictures.
    assert points[1]["bytes_per_frame"] < points[0]["bytes_per_frame"]
