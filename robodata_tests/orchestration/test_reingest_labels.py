"""The same promises through Dagster: aligned_frames reports the labels a re-ingest kept, and an
upload taking another episode's index fails unless the gop_blobs config says replace."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa

import robodata
from robodata.format._provenance import stored_uploads
from robodata.orchestration.defs.ingest import episodes
from robodata_tests.orchestration.conftest import (
    EPISODE_ASSETS,
    make_store,
    materialize_episode,
    metadata_of,
    new_instance,
)


def test_aligned_frames_reports_kept_labels_and_replace_is_a_config_flag(uploads, tmp_path):
    store = make_store(tmp_path / "dagster", uploads[:1])
    instance = new_instance(store)
    key = uploads[0].name
    first = materialize_episode(instance, store, key, assets=EPISODE_ASSETS)
    rows = metadata_of(first, "aligned_frames")["rows_written"]
    robodata.add_annotations(
        store.root,
        pa.table(
            {
                "episode_index": np.zeros(rows, dtype=np.int64),
                "frame_index": np.arange(rows),
                "success": np.ones(rows, bool),
            }
        ),
    )
    force = {"ops": {"gop_blobs": {"config": {"force": True}}}}  # the same upload: stored already
    again = metadata_of(
        materialize_episode(instance, store, key, assets=EPISODE_ASSETS, run_config=force), "aligned_frames"
    )
    assert (again["labels_kept_rows"], again["labels_dropped_rows"]) == (rows, 0)
    assert robodata.open(store.root).to_table(["success"])["success"].to_pylist() == [True] * rows

    impostor = tmp_path / "dagster" / "uploads" / "impostor_0"
    shutil.copytree(uploads[1], impostor)
    meta = json.loads((impostor / "episode.json").read_text())
    (impostor / "episode.json").write_text(json.dumps({**meta, "episode_index": 0}))
    episodes.register_uploads(instance, store)
    refused = materialize_episode(instance, store, "impostor_0", assets=EPISODE_ASSETS, raise_on_error=False)
    assert not refused.success
    [failed] = [e for e in refused.all_events if e.is_step_failure]
    assert f"claims episode_index 0, which already holds episode '{key}'" in str(failed.step_failure_data.error)
    assert set(stored_uploads(store.root)) == {key}

    config = {"ops": {"gop_blobs": {"config": {"replace": True}}}}
    replaced = materialize_episode(instance, store, "impostor_0", assets=EPISODE_ASSETS, run_config=config)
    assert replaced.success
    assert {u.episode_id: u.episode_index for u in stored_uploads(store.root).values()} == {"impostor_0": 0}
