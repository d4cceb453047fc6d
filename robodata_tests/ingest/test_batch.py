"""Ingesting an upload batch with the library: episodes already stored are skipped, and a
failure while committing names the episodes committed before it, each whole."""

import shutil

import pytest

import robodata
from robodata.errors import BadUploadError, IncompatibleEpisodeError
from robodata.format._provenance import stored_uploads
from robodata.format._versions import current_versions
from robodata.ingest import _batch as batch
from robodata.ingest._batch import BatchEpisodeError, ingest_batch, plan_batch
from robodata.ingest._upload_summary import upload_state_samples


def test_a_commit_failure_names_what_landed_and_a_rerun_ingests_the_rest(tmp_path, eight_short_uploads, monkeypatch):
    batch_uri, dataset = tmp_path / "uploads" / "b", str(tmp_path / "dataset")
    for upload in eight_short_uploads[:3]:
        shutil.copytree(upload, batch_uri / upload.name)
    ids = [u.name for u in eight_short_uploads[:3]]
    commit = batch.commit_episode_frames

    def fail_on_the_second(episode, *args, **kwargs):
        if episode.episode_id == ids[1]:
            raise IncompatibleEpisodeError(f"{episode.origin}: audit failed (simulated)")
        return commit(episode, *args, **kwargs)

    monkeypatch.setattr(batch, "commit_episode_frames", fail_on_the_second)
    with pytest.raises(BatchEpisodeError) as failed:
        ingest_batch(str(batch_uri), dataset)
    assert failed.value.committed == ids[:1] and failed.value.not_committed == ids[1:]
    assert str(failed.value) == (
        f"batch b: episode {ids[1]} failed: {batch_uri / ids[1]}: audit failed (simulated) "
        f"[committed before it, each whole: {ids[0]}; not committed: {ids[1]}, {ids[2]}]"
    )
    assert sorted(stored_uploads(dataset)) == ids[:1]
    assert len(robodata.open(dataset)) == upload_state_samples(str(batch_uri / ids[0]))

    monkeypatch.setattr(batch, "commit_episode_frames", commit)
    assert [u.episode_id for u in plan_batch(str(batch_uri), dataset).to_ingest] == ids[1:]
    version = current_versions(dataset).frames
    result = ingest_batch(str(batch_uri), dataset)
    assert result.episodes == ids[1:] and [u.episode_id for u in result.plan.stored] == ids[:1]
    assert current_versions(dataset).frames == version + 2  # one commit per episode
    assert len(robodata.open(dataset)) == sum(upload_state_samples(str(batch_uri / i)) for i in ids)


def test_two_uploads_claiming_one_episode_index_fail_before_anything_is_written(tmp_path, eight_short_uploads):
    batch_uri, dataset = tmp_path / "uploads" / "b", str(tmp_path / "dataset")
    shutil.copytree(eight_short_uploads[0], batch_uri / "episode_a")
    shutil.copytree(eight_short_uploads[0], batch_uri / "episode_b")  # same episode.json: same index
    with pytest.raises(BatchEpisodeError) as failed:
        ingest_batch(str(batch_uri), dataset)
    assert str(failed.value) == (
        f"batch b: episode episode_b failed: {batch_uri / 'episode_b' / 'episode.json'}: episode_index 0 is "
        "also claimed by episode_a in this batch [no episode of the batch was committed (frames.lance unchanged)]"
    )
    with pytest.raises(BatchEpisodeError, match="also claimed by episode_a"):  # staging alone checks it too
        batch.stage_batch(plan_batch(str(batch_uri), dataset), dataset)
    assert stored_uploads(dataset) == {}


def test_a_batch_without_a_complete_upload_is_refused(tmp_path):
    (tmp_path / "uploads" / "typo" / "episode_000000").mkdir(parents=True)  # no episode.json
    with pytest.raises(BadUploadError, match="typo: no complete upload folder in this batch"):
        ingest_batch(str(tmp_path / "uploads" / "typo"), str(tmp_path / "dataset"))
