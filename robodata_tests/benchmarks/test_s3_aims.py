"""#43's aims, the 10 TB arithmetic and the s3-peers report pieces, on given figures (no peers'
venv, no store): exact verdicts, exact numbers, exact lines."""

from __future__ import annotations

import math

import pytest

from benchmarks.peers.runner_measurements import epoch_boundary
from benchmarks.s3_aims import evaluate_s3_aims, format_aims, s3_profile
from benchmarks.s3_peers import Epoch, EpochBoundary, RunConfig, d_table, scale_rows, store_table, summarize
from benchmarks.s3_scale import TEN_TB, epoch_at_scale, scale_table
from benchmarks.s3_store import LatencyProxy, ProxiedRequest, StoreFigures

MIB = 1 << 20

FIGURES = {
    "robodata_s3": 600.0,
    "robodata_local": 800.0,
    "train_s3": 760.0,
    "train_local": 800.0,
    "lancedb_s3": 150.0,
    "lancedb_local": 200.0,
    "robodata224_local": 900.0,
    "lancedb224_local": 200.0,
    "gets": 10,
    "bytes": 12 * MIB,
    "mean_bytes_per_get": 1.2 * MIB,
    "large_gets": 8,
    "large_get_mean_bytes": 1.5 * MIB,
    "needed_gop_bytes": 10 * MIB,
    "gops": 8,
    "first_batch_s3_s": 3.0,
    "first_batch_local_s": 2.0,
    "lerobot_first_batch_local_s": 4.0,
    "robodata_s3_epoch_s": 4.0,
    "robodata_local_epoch_s": 3.0,
    "robodata_server_cpu_s": 1.0,
    "robodata_timed_gets": 10,
    "train_s3_epoch_s": 2.0,
    "train_local_epoch_s": 1.9,
    "train_server_cpu_s": 0.5,
    "train_timed_gets": 12,
    "latency_s": 0.03,
    "workers": 2,
}


def test_aims_met_and_missed_with_the_profile_of_a_miss():
    aims = {a["key"]: a for a in evaluate_s3_aims(FIGURES)}
    assert {k: a["met"] for k, a in aims.items()} == {
        "s3_local_loader": False,  # 600 / 800 = 0.75 < 0.9
        "s3_local_train": True,  # 0.95
        "s3_vs_lancedb": True,  # 4.0
        "mean_get": True,  # 1.2 MiB
        "epoch_bytes": False,  # 1.2 > 1.1
        "first_batch": True,  # 3 s <= 4 s
        "local_vs_lancedb": True,  # 4.0
        "local_vs_lancedb_224": False,  # 4.5 < 5
    }
    assert aims["s3_local_loader"]["measured"] == 0.75
    assert aims["s3_local_loader"]["missed_by"] == pytest.approx(1 / 6)
    assert aims["epoch_bytes"]["measured"] == pytest.approx(1.2)
    assert aims["first_batch"]["target"] == 4.0
    assert "why" in aims["s3_local_loader"] and "why" not in aims["mean_get"]
    # server 1 s / 4 s = 25%, GETs 10 x 30 ms / 2 = 0.15 s (4%), local epoch 3 s / 4 s = 75%: decode bound
    assert aims["s3_local_loader"]["why"] == (
        "robodata: s3:// epoch 4.00 s against 3.00 s local; server CPU 1.00 s (25% of the wall); 10 GETs x 30 ms / 2 workers "
        "= 0.15 s of first-byte waits (4%); the local epoch is 75% of it. Bound: decode and the rest (the local epoch)"
    )
    # 10 GETs for 8 GOPs, 12 MiB for 10 MiB of GOPs; 8 of the 10 are span ranges
    assert aims["epoch_bytes"]["why"] == (
        "10 GETs on gops.lance data for 8 GOPs (1.25 per GOP), 1228.8 KiB each, 12.00 MiB for 10.00 MiB of GOPs; "
        "8 of them span ranges of 1536.0 KiB each, 2 under 256 KiB (each worker's scan of the GOP index, each "
        "read's blob descriptors)"
    )


def test_a_latency_bound_epoch_is_named_so():
    figures = {**FIGURES, "train_timed_gets": 400, "train_s3_epoch_s": 5.0, "train_local_epoch_s": 1.0}
    # 400 x 30 ms / 2 workers = 6 s of first-byte waits in a 5 s epoch
    assert s3_profile(figures, "train").endswith("Bound: GETs (first-byte latency, one request per worker at a time)")


def test_the_randomness_aim_joins_the_list_and_keeps_its_own_explanation():
    randomness = {"key": "randomness", "aim": "distinct episodes", "comparison": ">=", "target": 0.8}
    randomness.update(measured=0.5, met=False)
    aims = evaluate_s3_aims(FIGURES, randomness)
    assert aims[-1] is randomness and "why" not in randomness


def test_format_aims_lines():
    aims = evaluate_s3_aims({**FIGURES, "robodata_s3": 760.0, "bytes": 10 * MIB})
    assert format_aims(aims).splitlines() == [
        "MET    make_dataloader D: s3:// / local disk: 0.95 >= 0.9",
        "MET    robodata-train path D: s3:// / local disk: 0.95 >= 0.9",
        "MET    D from the same store: robodata make_dataloader / LanceDBDataset: 5.07 >= 3",
        "MET    mean bytes per GET (MiB), robodata's s3:// epoch: 1.2 >= 1",
        "MET    bytes an s3:// epoch reads / the GOP bytes it needs: 1 <= 1.1",
        "MET    first batch (s): robodata from s3:// at most LeRobotDataset's map-style from the local disk: 3 <= 4",
        "MET    local D does not fall: robodata make_dataloader / LanceDBDataset, local disk: 4 >= 3.5",
        "MISSED local D at 224x224 does not fall: robodata make_dataloader (training rendition) / LanceDBDataset "
        "(v2.Resize), local disk: 4.5 >= 5",
        "       profile: local disk, 224x224: robodata 900.0 samples/s, LanceDBDataset 200.0; the peers report "
        "(robodata bench OUT --peers VENV) profiles local reads",
    ]


def test_ten_terabytes_from_the_measured_bytes_per_get():
    # 20 MB stored, an epoch read 21 MB in 20 GETs (1.05 MB each): at 10 TB, 10.5 TB in 10 M GETs
    row = epoch_at_scale("robodata", stored_bytes=20_000_000, bytes_per_epoch=21_000_000, gets_per_epoch=20)
    assert (row.dataset_bytes, row.bytes_read, row.gets, row.mean_bytes_per_get) == (
        TEN_TB,
        10**13 * 21 // 20,
        10**7,
        1.05e6,
    )
    assert row.fees_usd == pytest.approx(4.0)  # 10 M GETs at USD 0.0004 per 1,000
    small = epoch_at_scale("peer", stored_bytes=10**6, bytes_per_epoch=10**6, gets_per_epoch=50)  # 20 KB GETs
    assert (small.gets, small.fees_usd) == (5 * 10**8, pytest.approx(200.0))
    assert scale_table([row, small]).splitlines()[2:] == [
        "| robodata | 10 TB | 10.50 TB | 1,050.0 KB | 10.00 M | $4.00 |",
        "| peer | 10 TB | 10.00 TB | 20.0 KB | 500.00 M | $200.00 |",
    ]
    with pytest.raises(ValueError, match="peer: stored bytes and GETs per epoch must be positive"):
        epoch_at_scale("peer", stored_bytes=1, bytes_per_epoch=1, gets_per_epoch=0)


def store(video_gets: int, video_bytes: int, other_gets: int, cpu: float, small_video_gets: int = 0) -> StoreFigures:
    requests = [ProxiedRequest("GET", "gops.lance data", 206, video_bytes // video_gets) for _ in range(video_gets)]
    requests += [ProxiedRequest("GET", "gops.lance data", 206, 100) for _ in range(small_video_gets)]
    requests += [ProxiedRequest("GET", "frames.lance manifests", 200, 1000) for _ in range(other_gets)]
    return StoreFigures(tuple(requests), cpu)


def run_epochs() -> list[Epoch]:
    """Two rounds of robodata and the references, as run_rounds records them."""
    epochs = []
    for wall in (2.0, 4.0):
        epochs += [
            Epoch("robodata", "s3", True, 100, wall + 1, first_batch_s=wall, store=store(4, 8 * MIB, 6, 0.5)),
            Epoch("robodata", "s3", False, 100, wall, store=store(4, 8 * MIB, 2, 0.4)),
            Epoch("robodata", "local", True, 100, 1.5, first_batch_s=1.0),
            Epoch("robodata", "local", False, 100, 1.0),
            Epoch("lerobot", "local", True, 0, 5.0, first_batch_s=5.0),
            Epoch("robodata224", "local", False, 100, wall / 8),
        ]
    return epochs


def test_summary_tables_and_scale_from_recorded_epochs():
    epochs = run_epochs()
    figures = summarize(epochs, RunConfig(32, 2, 0, 0.03), needed=8 * MIB, gops=4)
    assert {k: figures[k] for k in ("robodata_s3", "robodata_local", "gets", "bytes", "mean_bytes_per_get")} == {
        "robodata_s3": 37.5,  # median of 50 and 25 samples/s
        "robodata_local": 100.0,
        "gets": 4,
        "bytes": 8 * MIB,
        "mean_bytes_per_get": 2 * MIB,
    }
    assert (figures["first_batch_s3_s"], figures["lerobot_first_batch_local_s"], figures["robodata_s3_epoch_s"]) == (
        3.0,
        5.0,
        3.0,
    )
    assert (figures["robodata_timed_gets"], figures["robodata_server_cpu_s"], figures["gops"]) == (6, 0.4, 4)
    assert (figures["large_gets"], figures["large_get_mean_bytes"]) == (4, 2 * MIB)
    # index scans and blob descriptors are small video GETs: counted in gets, not among the span ranges
    scanned = Epoch("robodata", "s3", True, 100, 3.0, first_batch_s=2.0, store=store(4, 8 * MIB, 6, 0.5, 3))
    assert scanned.video() == (7, 8 * MIB + 300) and scanned.large_video_gets() == (4, 8 * MIB)
    assert d_table(epochs).splitlines()[2] == "| robodata make_dataloader | 100.0 | 37.5 | 0.38x | 1.0 s | 3.0 s |"
    assert figures["robodata224_local"] == 300.0  # median of 400 and 200 samples/s
    assert math.isnan(figures["lancedb224_local"])  # not run: its aim reads nan, never met
    assert "| robodata make_dataloader, 224x224 (training rendition) | 300.0 | - | - | - | - |" in d_table(epochs)
    lines = store_table(epochs, 8 * MIB).splitlines()
    assert lines[1].split() == ["robodata", "cold", "3.00", "10", "8.01", "0.801", "4", "2.000", "1.00", "0.50", "0.17"]
    assert lines[-1] == "server CPU under 80% of a core in every timed epoch: not the bottleneck"
    (row,) = scale_rows(epochs, {"robodata": 16 * MIB, "lancedb": 1})
    assert (row.system, row.gets, row.bytes_read) == ("robodata make_dataloader", 2_384_186, 5 * 10**12)


def test_a_runner_waits_at_the_epoch_boundary_until_the_store_is_noted():
    with LatencyProxy(("127.0.0.1", 9), latency_s=0.0) as proxy:
        boundary = EpochBoundary(proxy, None)
        try:
            epoch_boundary(list(boundary.address))
            epoch_boundary(boundary.address)
        finally:
            boundary.close()
    assert boundary.marks == [(0, 0.0), (0, 0.0)]
