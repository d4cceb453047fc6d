"""Assertions several tests share about what a dataset holds."""

from __future__ import annotations

import numpy as np

from robodata.format._tables import gops_uri, open_table


def assert_one_copy(ds, expected_rows: dict[int, int]) -> None:
    """``ds`` holds exactly ``expected_rows[e]`` rows of each episode e, each (episode, frame_index)
    once with frame_index 0..n-1, and every row's GOP reference of every camera resolves."""
    table = ds.to_table(["episode_index", "frame_index"])
    episodes = table["episode_index"].to_numpy()
    frames = table["frame_index"].to_numpy()
    found = {int(e): int((episodes == e).sum()) for e in np.unique(episodes)}
    assert found == expected_rows
    for episode, n in expected_rows.items():
        assert sorted(frames[episodes == episode].tolist()) == list(range(n))
    decoded = ds.get_frames(np.arange(len(ds)))
    for camera, array in decoded.data.items():
        assert array.shape[0] == len(ds), camera


def gop_rows(root: str, storage_options: dict | None = None) -> dict[int, int]:
    """GOP rows per episode in gops.lance, referenced or not."""
    gops = open_table(gops_uri(root), storage_options)
    if gops is None:
        return {}
    episodes = gops.to_table(columns=["episode_index"])["episode_index"].to_numpy()
    return {int(e): int((episodes == e).sum()) for e in np.unique(episodes)}
