"""One code location name however Dagster is started: ``dg dev``, ``dagster dev`` (workspace.yaml)
and ``dagster dev -m`` all serve ``robodata.orchestration.definitions``, the name the CLI's ``-m``
commands and the cluster's daemon give it, so a backfill started from the CLI against the
instance they serve runs (a run names its code location; a daemon serving another name failed
every run at once with DagsterCodeLocationNotFoundError)."""

import os
import subprocess

import dagster as dg
import pytest

import robodata
from robodata.orchestration import write_dagster_home
from robodata_tests.orchestration.conftest import EPISODE_KEYS, make_store
from robodata_tests.orchestration.webserver import DAGSTER, clean_clone, running_dev

MODULE = "robodata.orchestration.definitions"
# docs/dagster.md's ways of starting the UI and the daemon, from the repository root
DOCUMENTED = {
    "dg dev": ["dg", "dev"],
    "dagster dev": ["dagster", "dev"],
    "dagster dev -m": ["dagster", "dev", "-m", MODULE],
}


@pytest.mark.slow
@pytest.mark.parametrize("command", DOCUMENTED.values(), ids=DOCUMENTED.keys())
def test_a_cli_backfill_runs_on_the_location_each_documented_start_serves(command, tmp_path, short_uploads):
    keys = EPISODE_KEYS[:2]
    checkout = clean_clone(tmp_path / "a-checkout")  # dg's default name would be "a-checkout"
    store = make_store(tmp_path, short_uploads[:2])
    home, _ = write_dagster_home(tmp_path / "home")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("episodes", keys)
    env = {"ROBODATA_ROOT": store.root, "ROBODATA_UPLOADS": store.uploads_root}
    with running_dev(command, checkout, home, env, tmp_path / "dev.log") as server:
        assert server.location == MODULE
        server.stop_sensor("upload_sensor")  # the backfill's runs are the only ones
        environment = {
            **os.environ,
            **env,
            "DAGSTER_HOME": str(home),
            "PYTHONPATH": os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]),
        }
        started = subprocess.run(
            [str(DAGSTER), "job", "backfill", "-m", MODULE, "-j", "ingest_episode",
             "--partitions", ",".join(keys), "--noprompt"],
            cwd=checkout, env=environment, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert started.returncode == 0, started.stderr[-3000:]

        def finished() -> list[dg.DagsterRun] | None:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                runs = [run for run in instance.get_runs() if "dagster/backfill" in run.tags]
            done = [run for run in runs if run.is_finished]
            return runs if len(runs) == len(keys) and len(done) == len(keys) else None

        runs = server.wait_for(finished, 600, "the backfill's runs to finish")
    assert {run.tags["dagster/partition"]: run.status for run in runs} == {
        key: dg.DagsterRunStatus.SUCCESS for key in keys
    }
    assert {run.remote_job_origin.location_name for run in runs} == {MODULE}
    assert robodata.open(store.root).episodes()["rows"].to_pylist() == [97, 97]
