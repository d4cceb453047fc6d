"""gop_renditions: a rendition added per episode partition through Dagster, as new versions that
leave the full-resolution GOPs and the rows as they were."""

from __future__ import annotations

import robodata
from robodata.format._renditions import RENDITION_COLUMN
from robodata.format._tables import gops_uri, open_table
from robodata.orchestration.defs.ingest.renditions import gop_renditions
from robodata_tests.orchestration.conftest import EPISODE_KEYS, materialize_episode, metadata_of, new_instance


def test_the_asset_adds_a_rendition_to_each_stored_episode(store):
    instance = new_instance(store)
    for key in EPISODE_KEYS[:2]:
        assert materialize_episode(instance, store, key).success
    before = robodata.open(store.root)
    rows_before = before.lance_dataset.to_table(with_row_id=True)
    full_before = open_table(gops_uri(store.root)).to_table(columns=["ref_id", "gop_xxh3"], with_row_id=True)
    config = {"ops": {"gop_renditions": {"config": {"size": "160x120", "cameras": ["top"]}}}}
    first = materialize_episode(instance, store, EPISODE_KEYS[0], assets=[gop_renditions], run_config=config)
    assert first.success
    meta = metadata_of(first, "gop_renditions")
    assert meta["rendition"] == "160x120" and meta["episode_index"] == 0 and meta["rows_written"] > 0
    after = robodata.open(store.root)
    assert after.version == before.version + 1 and after.metadata.renditions == {"top": ["160x120"]}
    assert after.lance_dataset.to_table(with_row_id=True).equals(rows_before)
    second = materialize_episode(instance, store, EPISODE_KEYS[1], assets=[gop_renditions], run_config=config)
    assert second.success and robodata.open(store.root).version == after.version  # declared once
    gops = open_table(gops_uri(store.root))
    assert gops.to_table(columns=["ref_id", "gop_xxh3"], filter=f"{RENDITION_COLUMN} IS NULL", with_row_id=True).equals(
        full_before
    )
    per_episode = gops.to_table(columns=["episode_index", "camera"], filter=f"{RENDITION_COLUMN} = '160x120'")
    full_top = full_before.num_rows  # all cameras
    assert set(per_episode["camera"].to_pylist()) == {"top"}
    assert set(per_episode["episode_index"].to_pylist()) == {0, 1} and 0 < per_episode.num_rows < full_top
    frames = robodata.open(store.root).get_frames([0, 1, 2], cameras="top", resolution=(120, 160))
    assert frames["top"].shape == (3, 120, 160, 3)
