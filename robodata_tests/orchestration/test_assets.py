"""Every asset materialized in-process against a temporary root, and the lineage it records."""

import shutil
from pathlib import Path

import dagster as dg
import lance
import numpy as np
import pytest

import robodata
from robodata.format._tables import gops_uri
from robodata.orchestration.defs.ingest import episodes
from robodata.orchestration.defs.labels import annotations
from robodata.orchestration.defs.lineage import CODE_VERSION, code_version_of
from robodata.orchestration.defs.reports import benchmark
from robodata.orchestration.defs.resources import DatasetStore
from robodata.orchestration.defs.training import snapshots
from robodata_tests.orchestration.conftest import (
    EPISODE_KEYS,
    data_version_of,
    make_store,
    materialize_episode,
    metadata_of,
    new_instance,
)

SECRET = "wJalrXUtnFEMI-test-secret-never-shown"
LINEAGE_KEYS = {"dataset_uri", "frames_version", "gops_version", "rows_written", "bytes_written"}


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, short_uploads):
    """Two episodes through raw_episodes -> gop_blobs -> aligned_frames (+ checks), then
    annotations, training_snapshot and benchmark_report; credentials are in the environment."""
    base = tmp_path_factory.mktemp("pipeline")
    store = make_store(base, short_uploads[:2])
    labels = base / "success.csv"
    labels.write_text("episode_index,success\n0,true\n1,false\n")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        instance = new_instance(store)
        episode_runs = [materialize_episode(instance, store, key) for key in EPISODE_KEYS[:2]]
        tail = robodata_materialize(instance, store, str(labels), "run-a")
    return store, instance, episode_runs, tail


def robodata_materialize(instance, store, labels_path: str, run_name: str):
    return dg.materialize(
        [annotations.annotations, snapshots.training_snapshot, benchmark.benchmark_report],
        instance=instance,
        resources={"store": store},
        run_config={
            "ops": {
                "annotations": {"config": {"labels_path": labels_path}},
                "training_snapshot": {"config": {"run_name": run_name}},
                "benchmark_report": {"config": {"samples": 8, "batch_size": 4}},
            }
        },
    )


def test_episode_assets_write_the_episode_and_record_versions(pipeline):
    store, _, runs, _ = pipeline
    first, second = runs
    raw = metadata_of(first, "raw_episodes")
    assert raw["episode_index"] == 0 and raw["state_samples"] == 97
    assert raw["frames_version"] is None and raw["gops_version"] is None  # nothing written yet
    gops = metadata_of(first, "gop_blobs")
    assert gops["gops_version"] == 1 and gops["rows_written"] == gops["gops"] == 24  # 3 cameras x 8 GOPs of G=4
    assert gops["bytes_written"] == gops["video_bytes"] > 0
    frames = metadata_of(first, "aligned_frames")
    assert (frames["frames_version"], frames["gops_version"], frames["rows_written"]) == (1, 1, 97)
    assert metadata_of(second, "aligned_frames")["frames_version"] == 2
    assert metadata_of(second, "gop_blobs")["gops_version"] == 2
    ds = robodata.open(store.root)
    assert ds.version == 3  # + the annotations commit
    assert ds.episodes()["rows"].to_pylist() == [97, 97]


def test_every_materialization_carries_lineage_and_data_version(pipeline):
    store, _, runs, tail = pipeline
    for result, assets in [
        (runs[0], ["raw_episodes", "gop_blobs", "aligned_frames"]),
        (runs[1], ["raw_episodes", "gop_blobs", "aligned_frames"]),
        (tail, ["annotations"]),
    ]:
        for asset in assets:
            metadata = metadata_of(result, asset)
            assert LINEAGE_KEYS <= set(metadata), asset
            assert metadata["dataset_uri"] == store.root
            assert SECRET not in repr(metadata)
            if asset == "raw_episodes":  # the upload itself: no table of the dataset
                assert "dagster/uri" not in metadata
                continue
            table = "gops" if asset == "gop_blobs" else "frames"
            version = metadata[f"{table}_version"]
            assert data_version_of(result, asset) == f"{table}.lance@{version}"
            assert metadata["dagster/uri"] == f"{store.root}/{table}.lance"
            if asset == "annotations":  # the whole table's rows, labelled
                rows = lance.dataset(metadata["dagster/uri"], version=version).count_rows()
                assert metadata["dagster/row_count"] == rows == 2 * 97
            else:  # one partition: that episode's rows (97) or GOPs (3 cameras x 8 of G=4), not the table's
                assert metadata["dagster/row_count"] == (24 if asset == "gop_blobs" else 97)
    assert metadata_of(runs[1], "aligned_frames")["input_gops_version"] == "gops.lance@2"

    # Each asset names what it stands for: the snapshot its tag, the benchmark its report.
    snapshot_meta = metadata_of(tail, "training_snapshot")
    version = snapshot_meta["frames_version"]
    assert snapshot_meta["tag"] == "run-a" and SECRET not in repr(snapshot_meta)
    assert snapshot_meta["dagster/uri"] == f"{store.root}/frames.lance/_refs/tags/run-a.json"
    assert Path(snapshot_meta["dagster/uri"]).is_file()  # where Lance keeps the tag
    assert data_version_of(tail, "training_snapshot") == f"run-a=frames.lance@{version}"
    assert snapshot_meta["dagster/row_count"] == 2 * 97
    report_meta = metadata_of(tail, "benchmark_report")
    assert report_meta["dagster/uri"] == report_meta["report_path"] and Path(report_meta["report_path"]).is_file()
    assert data_version_of(tail, "benchmark_report").startswith(f"readpath_v{version}.md#")
    # downstream materializations name the upstream data version they were built from
    [snapshot] = [
        e for e in tail.get_asset_materialization_events() if e.asset_key.to_user_string() == "training_snapshot"
    ]
    assert snapshot.materialization.tags["dagster/input_data_version/annotations"] == "frames.lance@3"
    assert (
        snapshot.materialization.tags["dagster/code_version"]
        == snapshots.training_snapshot.code_versions_by_key[snapshots.training_snapshot.key]
    )


def test_frames_materializations_show_the_table_schema(pipeline):
    store, _, runs, tail = pipeline
    schema = metadata_of(runs[0], "aligned_frames")["dagster/column_schema"]
    columns = {c.name: c.type for c in schema.columns}
    assert columns["observation_state"] == "fixed_size_list<item: float>[14]"
    assert columns["episode_index"] == "int64" and "observation_images_top_ref_id" in columns
    pointer = next(c for c in schema.columns if c.name == "observation_images_top_frame_index_in_gop")
    assert pointer.description == "internal: points each row at its frame of camera top (frame_index_in_gop)"
    assert "success" in {c.name for c in metadata_of(tail, "annotations")["dagster/column_schema"].columns}
    assert "dagster/column_schema" not in metadata_of(runs[0], "gop_blobs")  # GOP blobs: not a user table


def test_imported_episodes_sit_in_the_lineage_graph():
    from robodata.orchestration.definitions import defs

    graph = defs().get_repository_def().asset_graph
    downstream = {k.to_user_string() for k in graph.get(dg.AssetKey("imported_episodes")).child_keys}
    assert {"annotations", "training_snapshot"} <= downstream
    # each asset its own code version: the storage format's, plus its own function's digest
    versions = [graph.get(key).code_version for key in graph.get_all_asset_keys()]
    assert all(version.startswith(f"{CODE_VERSION}-") for version in versions)
    assert len(set(versions)) == len(versions)


def test_an_asset_s_code_version_follows_its_own_code_only(tmp_path):
    module = tmp_path / "assets.py"
    source = '''
def first(store):
    """Doc."""
    return store.root


def second(store):
    return store.uploads_root
'''
    module.write_text(source)
    before = {name: code_version_of(str(module), name) for name in ("first", "second")}
    module.write_text(source.replace("return store.root", "return store.root + '/x'"))
    edited = {name: code_version_of(str(module), name) for name in ("first", "second")}
    assert edited["first"] != before["first"] and edited["second"] == before["second"]
    # a comment, a docstring or formatting is not a change of code
    module.write_text(source.replace('"""Doc."""', '"""Other doc."""  # note').replace("(store):", "( store ):"))
    assert {name: code_version_of(str(module), name) for name in ("first", "second")} == before


def test_annotations_add_label_columns_without_touching_video(pipeline):
    store, _, runs, tail = pipeline
    metadata = metadata_of(tail, "annotations")
    assert metadata["label_columns"] == "success" and metadata["rows_written"] == 194
    assert metadata["gops_version"] == metadata_of(runs[1], "gop_blobs")["gops_version"]
    table = robodata.open(store.root).to_table(columns=["episode_index", "success"])
    labels = set(zip(table["episode_index"].to_pylist(), table["success"].to_pylist(), strict=True))
    assert labels == {(0, True), (1, False)}


def test_benchmark_report_attaches_the_table_for_the_measured_version(pipeline):
    store, _, _, tail = pipeline
    metadata = metadata_of(tail, "benchmark_report")
    assert metadata["measured_version"] == metadata["frames_version"] == 3
    assert f"frames.lance version 3 with pylance {lance.__version__}" in metadata["report"]
    assert "| batched_fps |" in metadata["report"] and metadata["batched_fps"] > 0
    with open(metadata["report_path"]) as handle:
        assert handle.read() == metadata["report"]


def test_training_snapshot_tag_reopens_the_same_version_after_appends_and_deletes(pipeline, tmp_path, short_uploads):
    source, _, _, tail = pipeline
    shutil.copytree(source.root, tmp_path / "dataset")
    store = make_store(tmp_path, short_uploads)
    snapshot_version = metadata_of(tail, "training_snapshot")["frames_version"]
    seen = robodata.open(store.root, version="run-a")
    rows = seen.to_table(columns=["episode_index", "frame_index", "success"])
    frame = seen[120]["observation_images_top"]

    instance = new_instance(store)
    assert materialize_episode(instance, store, EPISODE_KEYS[2], assets=episodes_assets()).success
    robodata.delete_episodes(store.root, [0])
    assert robodata.open(store.root).episodes()["episode_index"].to_pylist() == [1, 2]

    again = robodata.open(store.root, version="run-a")
    assert again.version == snapshot_version
    assert again.to_table(columns=["episode_index", "frame_index", "success"]).equals(rows)
    np.testing.assert_array_equal(again[120]["observation_images_top"], frame)


def episodes_assets():
    return [episodes.raw_episodes, episodes.gop_blobs, episodes.aligned_frames]


def test_a_bad_upload_fails_raw_episodes_naming_the_file(store):
    states = Path(store.uploads_root) / EPISODE_KEYS[0] / "states.parquet"
    states.unlink()
    instance = new_instance(store)
    result = materialize_episode(instance, store, EPISODE_KEYS[0], raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert f"{states}: is missing" in failure.step_failure_data.error.message
    assert not (Path(store.root) / "gops.lance").exists()


def test_safe_uri_never_shows_credentials(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEY")
    store = DatasetStore(root="s3://AKIAEXAMPLEKEY:topsecret@bucket/robodata/dataset")
    assert store.safe_uri() == "s3://bucket/robodata/dataset"
    assert store.uploads_root.endswith("@bucket/robodata/uploads")  # derived next to the root
    assert "AKIAEXAMPLEKEY" not in store.redact(f"cannot open {store.root}")
    assert DatasetStore(root="/data/ds").uploads_root == "/data/uploads"


def test_gop_blobs_takes_encoding_run_config(store):
    instance = new_instance(store)
    result = materialize_episode(
        instance,
        store,
        EPISODE_KEYS[0],
        assets=episodes_assets(),
        run_config={"ops": {"gop_blobs": {"config": {"gop_size": 4, "crf": 30, "preset": "ultrafast"}}}},
    )
    metadata = metadata_of(result, "gop_blobs")
    assert (metadata["gop_size"], metadata["crf"], metadata["preset"]) == (4, 30, "ultrafast")
    gops = lance.dataset(gops_uri(store.root)).to_table(columns=["n_frames", "crf"])
    assert set(gops["n_frames"].to_pylist()) == {4, 2} and set(gops["crf"].to_pylist()) == {30}
    assert robodata.open(store.root).metadata.gop_size == 4


def test_full_benchmark_attaches_its_plots(pipeline):
    store, instance, _, _ = pipeline
    result = dg.materialize(
        [benchmark.benchmark_report],
        instance=instance,
        resources={"store": store},
        run_config={
            "ops": {"benchmark_report": {"config": {"samples": 4, "batch_size": 4, "full": True, "small": True}}}
        },
    )
    metadata = metadata_of(result, "benchmark_report")
    plots = {key: Path(value) for key, value in metadata.items() if key.startswith("plot_")}
    assert set(plots) == {"plot_scenarios", "plot_storage_vs_gop", "plot_throughput_vs_gop"}
    assert all(path.read_bytes().startswith(b"\x89PNG") for path in plots.values())
    assert metadata["benchmark"].count("](data:image/png;base64,") == 3
    assert Path(metadata["benchmark_report_path"]).parent == Path(store.root) / "reports" / "benchmark_v3"
    assert robodata.open(store.root).version == 3  # measuring wrote nothing to the dataset
