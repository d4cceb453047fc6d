"""robodata's own summary statistics: moments stored per episode at ingest, merged per version
(``stored_stats``; LeRobot's quantile statistics are ``LeRobotCompatDataset.meta.stats``)."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.errors import RoboDataError
from robodata.format import _stats as stats
from robodata.format._schema import image_column
from robodata.lerobot import stored_stats
from robodata.sample_data import write_sample_uploads


def expected_stats(uri: str, version: int) -> dict:
    """Statistics straight from the version's rows and decoded frames, without stored moments."""
    ds = robodata.open(uri, version=version)
    table = ds.to_table(columns=["observation_state", "action"])
    out = {}
    for column, key in (("observation_state", "observation.state"), ("action", "action")):
        values = np.asarray(table[column].to_pylist(), dtype=np.float64)
        out[key] = {
            "mean": values.mean(0),
            "std": values.std(0),
            "min": values.min(0),
            "max": values.max(0),
            "count": len(values),
        }
    for camera in ds.cameras:
        column = image_column(camera)
        refs = ds.to_table(columns=["episode_index", "frame_index", f"{column}_ref_id", f"{column}_frame_index_in_gop"])
        sampled = []
        for episode in np.unique(refs["episode_index"].to_numpy()):
            # The rows showing a GOP's first frame, in time order; the first row per GOP.
            rows = np.flatnonzero(
                (refs["episode_index"].to_numpy() == episode) & (refs[f"{column}_frame_index_in_gop"].to_numpy() == 0)
            )
            rows = rows[np.argsort(refs["frame_index"].to_numpy()[rows], kind="stable")]
            _, keep = np.unique(refs[f"{column}_ref_id"].to_numpy()[rows], return_index=True)
            keep = np.sort(keep)
            spread = np.linspace(0, len(keep) - 1, min(len(keep), stats.SAMPLED_GOPS)).round().astype(int)
            sampled += rows[keep[np.unique(spread)]].tolist()
        frames = ds.get_frames(sampled, cameras=column)[column]
        pixels = frames[:, ::4, ::4].reshape(-1, 3) / 255.0
        out[f"observation.images.{camera}"] = {
            "mean": pixels.mean(0).reshape(3, 1, 1),
            "std": pixels.std(0).reshape(3, 1, 1),
            "count": len(frames),
        }
    return out


def assert_stats_match(got: dict, expected: dict) -> None:
    assert sorted(got) == sorted(expected)
    for key, wanted in expected.items():
        assert int(got[key]["count"][0]) == wanted["count"], key
        for name in ("mean", "std", "min", "max"):
            if name in wanted:
                assert got[key][name].shape == wanted[name].shape, (key, name)
                np.testing.assert_allclose(got[key][name], wanted[name], rtol=1e-6, atol=1e-6, err_msg=f"{key} {name}")


def test_stats_follow_delete_and_reingest_without_a_pass_over_the_data(eight_short_uploads, tmp_path, monkeypatch):
    monkeypatch.setattr(stats, "SAMPLED_GOPS", 1)  # episodes have 2-3 GOPs: sample only the first
    root = str(tmp_path / "ds")
    for upload in eight_short_uploads[:3]:
        robodata.ingest_episode(str(upload), root)
    first = robodata.open(root).version
    robodata.delete_episodes(root, [1])
    replacement = write_sample_uploads(tmp_path / "again", episodes=1, seed=99, seconds=0.7, start_index=2)[0]
    robodata.ingest_episode(str(replacement), root)
    latest = robodata.open(root).version

    # Every episode's moments were stored at ingest: nothing is computed from the data here.
    now = stored_stats(root)
    before = stored_stats(root, version=first)
    assert before["observation.state"]["count"][0] > now["observation.state"]["count"][0]
    assert now["observation.images.top"]["count"][0] == 2  # one GOP per episode
    assert_stats_match(now, expected_stats(root, latest))
    assert_stats_match(before, expected_stats(root, first))


def test_a_dataset_that_lost_its_stored_statistics_is_named(eight_short_uploads, tmp_path):
    import shutil

    root = str(tmp_path / "ds")
    for upload in eight_short_uploads[:2]:
        robodata.ingest_episode(str(upload), root)
    shutil.rmtree(f"{root}/stats.lance")
    with pytest.raises(RoboDataError) as error:
        stored_stats(root)
    assert str(error.value) == f"{root}: version 2 has no stored statistics for episodes [0, 1] in stats.lance"


@pytest.mark.parametrize("key", ["observation.state", "action", "observation.images.top"])
def test_stats_have_lerobots_layout(eight_short_uploads, tmp_path, key):
    root = str(tmp_path / "ds")
    robodata.ingest_episode(str(eight_short_uploads[0]), root)
    stats = stored_stats(root)[key]
    assert sorted(stats) == ["count", "max", "mean", "min", "std"]
    assert stats["mean"].shape == ((3, 1, 1) if "images" in key else (14,))
