"""The imported_episodes asset: one partition per source episode, source in run config, Lance
versions in the metadata, resumable, failures that name the file."""

from __future__ import annotations

import dagster as dg
import pyarrow.compute as pc

import robodata
from robodata.cli import main
from robodata.format._versions import current_versions
from robodata.orchestration import prepare_dagster_home
from robodata.orchestration.defs.interop.imports import imported_episodes, register_import_partitions
from robodata.orchestration.defs.resources import DatasetStore

from .test_hdf5_import import STEPS, _write_episode


def _materialize(instance, store, key: str, config: dict) -> dg.ExecuteInProcessResult:
    return dg.materialize(
        [imported_episodes],
        partition_key=key,
        instance=instance,
        resources={"store": store},
        run_config={"ops": {"imported_episodes": {"config": config}}},
        raise_on_error=False,
    )


def _metadata(result: dg.ExecuteInProcessResult) -> dict:
    [materialization] = result.asset_materializations_for_node("imported_episodes")
    return {key: value.value for key, value in materialization.metadata.items()}


def test_hdf5_partitions_import_one_episode_each_and_resume(tmp_path):
    folder = tmp_path / "aloha"
    folder.mkdir()
    for n in (0, 1):
        _write_episode(folder / f"episode_{n}.hdf5", n, compress=bool(n))
    store = DatasetStore(root=str(tmp_path / "dataset"), uploads_root=str(tmp_path / "uploads"))
    config = {"source": str(folder / "episode_*.hdf5"), "format": "aloha_hdf5", "task": "insertion"}
    instance = dg.DagsterInstance.ephemeral()
    keys = register_import_partitions(instance, config["source"], "aloha_hdf5")
    assert keys == ["source_episode_000000", "source_episode_000001"]
    assert instance.get_dynamic_partitions("imported_episodes") == keys

    first = _materialize(instance, store, keys[1], config)
    assert first.success
    meta = _metadata(first)
    versions = current_versions(store.root)
    assert (meta["frames_version"], meta["gops_version"]) == (versions.frames, versions.gops)
    assert meta["dataset_uri"] == store.root and meta["rows_written"] == STEPS
    assert meta["episode_index"] == 1 and meta["already_present"] is False and meta["bytes_written"] > 0
    assert _materialize(instance, store, keys[0], config).success
    ds = robodata.open(store.root)
    assert ds.episodes()["episode_index"].to_pylist() == [0, 1]

    again = _metadata(_materialize(instance, store, keys[1], config))
    assert again["already_present"] is True and again["rows_written"] == 0
    assert again["frames_version"] == robodata.open(store.root).version  # nothing new was committed


def test_lerobot_partition_and_a_failure_that_names_the_file(exported, tmp_path):
    store = DatasetStore(root=str(tmp_path / "dataset"), uploads_root=str(tmp_path / "uploads"))
    instance = dg.DagsterInstance.ephemeral()
    keys = register_import_partitions(instance, exported)
    assert keys == ["source_episode_000000", "source_episode_000001", "source_episode_000002"]
    result = _materialize(instance, store, keys[2], {"source": exported})
    assert result.success and _metadata(result)["episode_index"] == 2
    table = robodata.open(store.root).to_table(columns=["episode_index"])
    assert pc.unique(table["episode_index"]).to_pylist() == [2]

    missing = str(tmp_path / "no_such_lerobot")
    failed = _materialize(instance, store, keys[0], {"source": missing})
    assert not failed.success
    [failure] = [e for e in failed.all_events if e.event_type_value == "STEP_FAILURE"]
    assert f"{missing}/meta/info.json: is missing" in failure.event_specific_data.error.message


def test_register_imports_command_adds_each_source_episode_once(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "aloha"
    folder.mkdir()
    for n in (3, 5):
        _write_episode(folder / f"episode_{n}.hdf5", n, compress=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    prepare_dagster_home(tmp_path / "home")
    args = ["register-imports", str(folder / "episode_*.hdf5"), "--format", "aloha_hdf5"]
    assert main(args) == 0 and main(args) == 0
    keys = ["source_episode_000003", "source_episode_000005"]
    assert capsys.readouterr().out.split() == keys * 2
    with dg.DagsterInstance.get() as instance:
        assert instance.get_dynamic_partitions("imported_episodes") == keys
    monkeypatch.delenv("DAGSTER_HOME")
    assert main(args) == 2 and "DAGSTER_HOME is not set" in capsys.readouterr().err
