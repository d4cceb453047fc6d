"""The plan every system of the peers benchmark reads: the same moments, robodata by its rows and
the peers by the paired indices of their own frames, and in the block order the LeRobot user's
path reads its item sampler's batches."""

from __future__ import annotations

import numpy as np

from benchmarks.peers.peer_scenarios import SYSTEMS, PeerConfig, plan_round, scenario_jobs, scenario_key


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
