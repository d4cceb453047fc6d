"""Through Dagster, an odd-sized camera is recorded in the raw_episodes materialization's
metadata and, by aligned_frames' commit, with the episode in the dataset."""

from __future__ import annotations

from robodata.format._provenance import stored_uploads
from robodata.orchestration.defs.resources import DatasetStore
from robodata_tests.ingest.camera_uploads import ODD_SIZE_NOTE, ODD_SIZE_RECORD, marked_frame, write_camera_upload
from robodata_tests.orchestration.conftest import materialize_episode, metadata_of, new_instance


def test_an_odd_frame_size_is_in_the_run_metadata_and_the_dataset(tmp_path):
    write_camera_upload(tmp_path / "uploads" / "ep0", [marked_frame(641, 481)] * 6, [0, 33, 67, 100, 133, 167])
    store = DatasetStore(root=str(tmp_path / "dataset"), uploads_root=str(tmp_path / "uploads"))
    instance = new_instance(store)
    result = materialize_episode(instance, store, "ep0")
    assert result.success
    assert metadata_of(result, "raw_episodes")["camera_adjustments"] == ODD_SIZE_NOTE
    [adjustment] = stored_uploads(store.root)["ep0"].adjustments
    assert adjustment == ODD_SIZE_RECORD
