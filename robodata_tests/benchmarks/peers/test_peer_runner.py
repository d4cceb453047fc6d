"""The peers runner measuring robodata for real, in its own process with robodata's Python: each
scenario's timings, the loader's batches as planned, reads at the policy's size (torchvision's
resize kernel), the decode bound decoding what the reader decodes, and the LeRobot user's path
in robodata-train's order."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import robodata
from benchmarks.peers.peer_protocol import run_job
from benchmarks.peers.peer_scenarios import SYSTEMS, PeerConfig, loader_rows_match, plan_round, scenario_jobs
from benchmarks.peers.runner_resize import ResizeFrame, resize_hwc
from robodata.reader._dataset import gop_store
from robodata.torch._block_order import BlockSampler

pytestmark = pytest.mark.scheduled_first  # the quick stage's longest file


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
