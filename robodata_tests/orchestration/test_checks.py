"""Blocking checks on aligned_frames: pass on good data; a corrupted reference fails them and
stops downstream assets in the same run."""

import dagster as dg
import lance

import robodata
from robodata.format._tables import gops_uri
from robodata.format._versions import current_versions
from robodata.integrity._verify import verify_dataset
from robodata.orchestration.defs.ingest import checks, episodes
from robodata.orchestration.defs.training import snapshots
from robodata.reader._dataset import gop_store
from robodata_tests.orchestration.conftest import EPISODE_ASSETS, EPISODE_KEYS, materialize_episode, new_instance

CHECK_NAMES = sorted(spec.name for check in checks.episode_checks for spec in check.check_specs)


def evaluations(result) -> dict[str, object]:
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_checks_pass_on_a_good_episode(store):
    instance = new_instance(store)
    result = materialize_episode(instance, store, EPISODE_KEYS[1])
    found = evaluations(result)
    assert sorted(found) == CHECK_NAMES
    assert all(e.passed for e in found.values()), {n: e.description for n, e in found.items()}
    assert found["row_count_matches_upload"].metadata["rows"].value == 97
    # the alignment error as numbers Dagster plots: the worst, and one per camera
    alignment = found["alignment_within_half_period"].metadata
    cameras = robodata.open(store.root).cameras
    per_camera = {key: alignment[f"max_error_ms/{key}"] for key in cameras}
    assert all(isinstance(value, dg.FloatMetadataValue) for value in [*per_camera.values(), alignment["max_error_ms"]])
    assert alignment["max_error_ms"].value == max(value.value for value in per_camera.values())


def test_the_episode_checks_run_as_one_step(store):
    assert [len(c.check_specs) for c in checks.episode_checks] == [6]  # one multi-asset check
    assert "gops_match_checksums" in CHECK_NAMES


def test_a_gop_lost_before_commit_fails_the_audit_and_commits_nothing(store):
    """Write, audit, publish: a GOP vanishes between gop_blobs and aligned_frames (as an ill-timed
    garbage collection would do); the audit refuses the episode before anything is committed."""
    instance = new_instance(store)
    assert materialize_episode(instance, store, EPISODE_KEYS[0]).success
    before = current_versions(store.root).frames
    key = EPISODE_KEYS[1]
    assert materialize_episode(instance, store, key, assets=[episodes.raw_episodes, episodes.gop_blobs]).success
    gops = lance.dataset(gops_uri(store.root))
    lost = gops.to_table(columns=["ref_id"], filter="episode_index = 1 AND camera = 'top' AND gop_index = 2")
    gops.delete(f"ref_id = {lost['ref_id'][0].as_py()}")

    result = materialize_episode(
        instance,
        store,
        key,
        assets=[episodes.aligned_frames, *checks.episode_checks, snapshots.training_snapshot],
        run_config={"ops": {"training_snapshot": {"config": {"run_name": "must-not-exist"}}}},
        raise_on_error=False,
    )
    assert not result.success
    assert current_versions(store.root).frames == before  # nothing committed
    assert robodata.open(store.root).episodes()["episode_index"].to_pylist() == [0]
    [failed] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    reason = failed.step_failure_data.user_failure_data
    assert reason.description.startswith(
        "episode 1 was not committed (the dataset's version is unchanged); its checks failed: "
        "staged_gops_decode: 1 problem(s) with the staged GOPs: 1 staged GOPs are not in gops.lance"
    )
    # At G=4, GOP 2 holds camera frames 8..11 (267..367 ms at 30 fps); the 100 Hz rows nearest
    # them are 26..38.
    assert "(per camera {'top': 13}; first at frame_index 26)" in reason.description
    shown = {k: v.value for k, v in reason.metadata.items()}
    assert shown["check row_count_matches_upload"] == "passed: episode 1 has all 97 rows"
    assert shown["check references_resolve"].startswith("FAILED: episode 1: rows point at GOPs that are missing")
    assert result.asset_materializations_for_node("training_snapshot") == []
    assert "must-not-exist" not in robodata.open(store.root).tags


def test_a_corrupt_gop_fails_the_checks_and_a_reingest_repairs_it(store):
    from robodata_tests.integrity.test_corruption import flip_gop_bytes

    instance = new_instance(store)
    key = EPISODE_KEYS[0]
    assert materialize_episode(instance, store, key).success
    version = current_versions(store.root).frames
    ds = robodata.open(store.root)
    ref = int(gop_store(ds).refs([40], "observation_images_wrist_right")[0])
    gop = ds.lance_dataset.take([40], columns=["observation_images_wrist_right_gop_index"]).column(0)[0].as_py()
    flip_gop_bytes(store.root, gop_store(ds).read([ref])[ref])

    # The checks alone (with raw_episodes, which writes nothing, to give the run its partition).
    selection = dg.AssetSelection.assets(episodes.raw_episodes) | dg.AssetSelection.checks_for_assets(
        episodes.aligned_frames
    )
    only_checks = dg.materialize(
        [*EPISODE_ASSETS, *checks.episode_checks],
        selection=selection,
        partition_key=key,
        instance=instance,
        resources={"store": store},
        raise_on_error=False,
    )
    found = evaluations(only_checks)
    assert sorted(found) == CHECK_NAMES
    assert sorted(n for n, e in found.items() if not e.passed) == ["gops_match_checksums", "sampled_frames_decode"]
    assert f"GOP {gop} of episode 0, camera 'wrist_right'" in found["sampled_frames_decode"].description
    assert f"episode 0: GOP {gop} of episode 0, camera 'wrist_right'" in found["gops_match_checksums"].description
    # Re-ingesting (forced: the dataset holds this upload already) rewrites the episode's stored
    # GOPs with the freshly encoded bytes; the audit then finds every GOP sound and the checks pass.
    force = {"ops": {"gop_blobs": {"config": {"force": True}}}}
    assert materialize_episode(instance, store, key, raise_on_error=False).success is False  # skipped: still corrupt
    again = materialize_episode(instance, store, key, run_config=force)
    assert again.success and current_versions(store.root).frames > version
    assert all(e.passed for e in evaluations(again).values())
    assert verify_dataset(store.root).ok
