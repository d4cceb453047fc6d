"""gops.lance stores an episode's GOPs in (episode, GOP start time, camera) order, in its data
files as in its rows, after the first ingest (a create), later ones (a merge_insert) and a
compaction: the GOPs a block of rows needs lie next to each other for every camera, so a training
worker reads them in one range read (docs/s3.md)."""

from __future__ import annotations

import lance
import numpy as np

import robodata
from robodata.edits._upkeep import upkeep_dataset
from robodata.format._tables import gops_uri


def stored_order(root: str) -> list[list[tuple[int, int, str]]]:
    """Per fragment, its GOPs' (episode, start time, camera) in the order their bytes lie in the
    fragment's data file; asserts that order is the rows' order (row offsets) too."""
    gops = lance.dataset(gops_uri(root))
    table = gops.to_table(columns=["episode_index", "camera", "timestamps_ns", "gop"], with_row_address=True)
    addresses = table["_rowaddr"].to_numpy().astype(np.int64)
    positions = table["gop"].combine_chunks().field("position").to_numpy().astype(np.int64)
    fragments = []
    for fragment in np.unique(addresses >> 32):
        rows = np.flatnonzero(addresses >> 32 == fragment)
        by_bytes = rows[np.argsort(positions[rows], kind="stable")]
        assert (by_bytes == rows[np.argsort(addresses[rows] & 0xFFFFFFFF)]).all(), "bytes not in row order"
        fragments.append(
            [
                (table["episode_index"][r].as_py(), table["timestamps_ns"][r][0].as_py(), table["camera"][r].as_py())
                for r in by_bytes.tolist()
            ]
        )
    return fragments


def assert_time_then_camera(fragments: list[list[tuple[int, int, str]]], cameras: list[str], episodes: int) -> None:
    seen = [entry for fragment in fragments for entry in fragment]
    key = [(episode, start, cameras.index(camera)) for episode, start, camera in seen]
    for fragment in fragments:
        keys = [(e, t, cameras.index(c)) for e, t, c in fragment]
        assert keys == sorted(keys)  # time-major within an episode, never camera-major
    assert sorted(key) == sorted(set(key)) and len({e for e, _, _ in seen}) == episodes
    first_episode = [k for k in key if k[0] == key[0][0]]
    # Each GOP time holds every camera before the next time begins.
    assert [k[2] for k in first_episode[: len(cameras) * 2]] == list(range(len(cameras))) * 2


def test_gops_are_stored_time_major_through_ingests_and_compaction(eight_short_uploads, tmp_path):
    root = str(tmp_path / "ds")
    for upload in eight_short_uploads[:3]:  # the first creates gops.lance, the others merge into it
        robodata.ingest_episode(str(upload), root)
    cameras = robodata.open(root).cameras
    assert len(cameras) > 1
    before = stored_order(root)
    assert len(before) == 3  # a fragment per ingest
    assert_time_then_camera(before, cameras, episodes=3)

    upkeep_dataset(root)
    after = stored_order(root)
    assert len(after) == 1  # compacted into one data file, the order kept
    assert after[0] == [entry for fragment in before for entry in fragment]
    assert_time_then_camera(after, cameras, episodes=3)
