"""dataset_maintenance (asset and nightly schedule) and `robodata compact`."""

import re

import dagster as dg

import robodata
from robodata.cli import main
from robodata.format._tables import frames_uri, open_table
from robodata.orchestration.definitions import defs
from robodata.orchestration.defs.maintenance.upkeep import dataset_maintenance, nightly_maintenance
from robodata.orchestration.defs.resources import DatasetStore
from robodata_tests.edits.test_upkeep import assert_reads_exactly, write_tiny


def test_dataset_maintenance_compacts_and_records_what_it_did(tmp_path):
    root = str(tmp_path / "ds")
    write_tiny(root, range(4))
    robodata.open(root).lance_dataset.tags.create("run-a", 2)
    result = dg.materialize(
        [dataset_maintenance],
        resources={"store": DatasetStore(root=root, uploads_root=str(tmp_path / "uploads"))},
        run_config={"ops": {"dataset_maintenance": {"config": {"older_than_hours": 0}}}},
    )
    [event] = result.get_asset_materialization_events()
    metadata = {k: v.value for k, v in event.materialization.metadata.items()}
    assert metadata["frames_fragments"] == 1 and metadata["gops_fragments"] == 1
    assert metadata["frames_version"] == open_table(frames_uri(root)).version
    assert metadata["versions_removed"] > 0 and "episode_index (created)" in metadata["summary"]
    assert_reads_exactly(robodata.open(root), [0, 1, 2, 3])
    assert_reads_exactly(robodata.open(root, version="run-a"), [0, 1])


def test_dataset_maintenance_without_a_dataset_does_nothing(tmp_path):
    store = DatasetStore(root=str(tmp_path / "none"), uploads_root=str(tmp_path / "uploads"))
    result = dg.materialize([dataset_maintenance], resources={"store": store})
    [event] = result.get_asset_materialization_events()
    assert event.materialization.metadata["skipped"].value == "no dataset yet"
    assert not (tmp_path / "none").exists()


def test_maintenance_runs_nightly_in_the_project_definitions():
    assert nightly_maintenance.cron_schedule == "0 3 * * *"
    assert nightly_maintenance.default_status == dg.DefaultScheduleStatus.RUNNING
    job = defs().resolve_job_def("dataset_maintenance_job")
    assert [key.to_user_string() for key in job.asset_layer.executable_asset_keys] == ["dataset_maintenance"]


def test_compact_command_reports_each_table(tmp_path, capsys):
    root = str(tmp_path / "ds")
    write_tiny(root, range(3))
    assert main(["compact", root, "--older-than", "0", "--gc-min-age", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    expected = r"frames\.lance: fragments 3 -> 1, \d+ old versions removed \(\d+ bytes\), indexes episode_index"
    assert re.match(expected, out[0])
    assert len(open_table(frames_uri(root)).versions()) == 1  # only the newest left
    assert out[1].startswith("gops.lance: fragments 3 -> 1,") and out[2].startswith("gc: 0 unreferenced GOPs")
    assert_reads_exactly(robodata.open(root), [0, 1, 2])


def test_compact_command_refuses_a_bad_duration(tmp_path, capsys):
    try:
        main(["compact", str(tmp_path), "--older-than", "soon"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "'soon' is not a duration such as 7d, 12h, 30m or 0" in capsys.readouterr().err
