"""Blocking checks on aligned_frames: pass on good data; a corrupted reference fails them and
stops downstream assets in the same run."""

import lance

import robodata
from robodata.defs import checks, episodes, snapshots
from robodata.format.tables import gops_uri
from robodata_tests.defs.conftest import EPISODE_KEYS, materialize_episode, new_instance

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


def test_a_corrupted_reference_fails_the_checks_and_blocks_downstream(store):
    instance = new_instance(store)
    key = EPISODE_KEYS[0]
    assert materialize_episode(instance, store, key, assets=[episodes.raw_episodes, episodes.gop_blobs]).success
    # A GOP vanishes between gop_blobs and aligned_frames (as an ill-timed garbage collection would do).
    gops = lance.dataset(gops_uri(store.root))
    lost = gops.to_table(columns=["ref_id"], filter="camera = 'top' AND gop_index = 2")["ref_id"][0].as_py()
    gops.delete(f"ref_id = {lost}")

    result = materialize_episode(
        instance,
        store,
        key,
        assets=[episodes.aligned_frames, *checks.episode_checks, snapshots.training_snapshot],
        run_config={"ops": {"training_snapshot": {"config": {"run_name": "must-not-exist"}}}},
        raise_on_error=False,
    )
    found = evaluations(result)
    assert not result.success
    failed = sorted(name for name, e in found.items() if not e.passed)
    assert failed == ["alignment_within_half_period", "references_resolve", "sampled_frames_decode"]
    assert "rows point at GOPs that are missing" in found["references_resolve"].description
    # GOP 2 holds camera frames 16..23 (533..767 ms); the 100 Hz rows nearest them are 52..78.
    assert "(per camera {'top': 27}; first at frame_index 52)" in found["references_resolve"].description
    assert result.asset_materializations_for_node("training_snapshot") == []
    assert "must-not-exist" not in robodata.open(store.root).tags
