"""Through Dagster, an odd-sized camera is recorded in the raw_episodes materialization's
metadata and, by aligned_frames' commit, with the episode in the dataset."""

from __future__ import annotations

from robodata.format._provenance import stored_uploads
from robodata.orchestration.defs.resources import DatasetStore
from robodata_tests.ingest.camera_uploads import marked_frame, write_camera_upload
from robodata_tests.orchestration.conftest import materialize_episode, metadata_of, new_instance


def test_an_odd_frame_size_is_in_the_run_metadata_and_the_dataset(tmp_path):
    write_camera_upload(tmp_path / "uploads" / "ep0", [marked_frame(641, 481)] * 6, [0, 33, 67, 100, 133, 167])
    store = DatasetStore(root=str(tmp_path / "dataset"), uploads_root=str(tmp_path / "uploads"))
    instance = new_instance(store)
    result = materialize_episode(instance, store, "ep0")
    assert result.success
    note = "cam.mp4: cropped 641x481 to 640x480 (H.264 4:2:0 needs an even width and height; the last column/row is dropped)"
    assert metadata_of(result, "raw_episodes")["camera_adjustments"] == note
    [adjustment] = stored_uploads(store.root)["ep0"].adjustments
    assert adjustment == {
        "camera": "cam",
        "file": "cam.mp4",
        "original_size": [641, 481],
        "stored_size": [640, 480],
        "rotation_degrees": 0,
        "done": [note],
    }
