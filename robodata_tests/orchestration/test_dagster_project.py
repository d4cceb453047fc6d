"""The Dagster project as its users meet it: commands run from the repository root without
DAGSTER_HOME, the instance config in a wheel, and a store resource
whose fields say where the data lives."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import dagster as dg

import robodata
from robodata import orchestration as instance
from robodata.orchestration.defs import resources

REPO = Path(__file__).resolve().parents[2]
INSTANCE_IN_PACKAGE = instance.INSTANCE_CONFIG


def _env_without_dagster_home() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def test_definitions_validate_from_the_repository_root_without_dagster_home():
    dagster = Path(sys.executable).with_name("dagster")
    before = set(REPO.iterdir())
    done = subprocess.run(
        [str(dagster), "definitions", "validate", "-m", "robodata.orchestration.definitions"],
        cwd=REPO,
        env=_env_without_dagster_home(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "All code locations passed validation" in done.stderr + done.stdout
    assert set(REPO.iterdir()) == before  # Dagster's temporary instance folder is gone again


def test_instance_config_ships_in_the_wheel(tmp_path):
    assert INSTANCE_IN_PACKAGE.parent == Path(robodata.__file__).parent / "dagster_home"
    assert not (REPO / "dagster.yaml").exists()  # one instance config, shipped in the package
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "robodata", source / "robodata", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), "."],
        cwd=source,
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = tmp_path.glob("robodata-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("robodata/dagster_home/dagster.yaml") == INSTANCE_IN_PACKAGE.read_bytes()


def test_prepared_home_holds_the_packaged_config(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", "")  # restored after the test: prepare_dagster_home sets it
    home = instance.prepare_dagster_home(tmp_path / "home")
    assert (home / "dagster.yaml").read_bytes() == INSTANCE_IN_PACKAGE.read_bytes()
    with dg.DagsterInstance.get() as dagster_instance:
        assert dagster_instance.root_directory == str(home)  # SQLite storage inside the home
        # No run hangs: stuck starts and cancels time out, a dead worker's run fails and is
        # retried (twice), but a failed step is not re-run as a whole run (a bad upload fails once).
        assert dagster_instance.run_monitoring_enabled
        assert dagster_instance.run_monitoring_start_timeout_seconds == 180
        assert dagster_instance.run_retries_enabled and dagster_instance.run_retries_max_retries == 2
        assert dagster_instance.run_retries_retry_on_asset_or_op_failure is False


def _configured(store: resources.DatasetStore) -> dict:
    """What the UI's resource page shows as the store's configured values."""
    return json.loads(store.get_resource_definition().config_schema.default_value_as_json_str)


def test_store_fields_name_the_environment_variables_that_set_them(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-shown-secret")
    monkeypatch.setenv("ROBODATA_ROOT", "s3://lab/robodata/dataset")
    monkeypatch.delenv("ROBODATA_UPLOADS", raising=False)
    shown = _configured(resources.store_from_env())
    assert shown == {
        "root": {"env": "ROBODATA_ROOT"},
        "uploads_root": "s3://lab/robodata/uploads",
        "storage_timeout_s": None,
    }
    monkeypatch.setenv("ROBODATA_UPLOADS", "s3://lab/incoming")
    assert _configured(resources.store_from_env())["uploads_root"] == {"env": "ROBODATA_UPLOADS"}
    monkeypatch.delenv("ROBODATA_ROOT")
    monkeypatch.delenv("ROBODATA_UPLOADS")
    monkeypatch.chdir(tmp_path)
    shown = _configured(resources.store_from_env())
    assert shown == {
        "root": str(tmp_path / "demo" / "dataset"),
        "uploads_root": str(tmp_path / "demo" / "uploads"),
        "storage_timeout_s": None,  # None: $ROBODATA_STORAGE_TIMEOUT_S, else 60 s
    }
    assert "never-shown-secret" not in json.dumps(shown)


def test_store_bound_to_environment_variables_resolves_them_in_a_run(monkeypatch, tmp_path):
    monkeypatch.setenv("ROBODATA_ROOT", str(tmp_path / "dataset"))
    monkeypatch.setenv("ROBODATA_UPLOADS", str(tmp_path / "incoming"))
    seen = {}

    @dg.asset
    def where(store: resources.DatasetStore) -> None:
        seen.update(root=store.root, uploads=store.uploads_root)

    assert dg.materialize([where], resources={"store": resources.store_from_env()}).success
    assert seen == {"root": str(tmp_path / "dataset"), "uploads": str(tmp_path / "incoming")}
