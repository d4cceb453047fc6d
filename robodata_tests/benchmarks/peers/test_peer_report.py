"""What the peers benchmark reports, on a fake peer result whose every figure is known: medians
over rounds, the ratios and the decode bound, the aims met or missed and by how much, the
side-by-side table, the report and its plot."""

from __future__ import annotations

import pytest
from PIL import Image

from benchmarks.peers.peer_report import render_peer_report, side_by_side_table, write_peer_plot
from benchmarks.peers.peer_scenarios import SYSTEMS, PeerConfig, peer_aims, ratio_rows, summarize


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
