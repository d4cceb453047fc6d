"""The Dagster project as its users meet it: the top level at the repository root, commands run
from it without DAGSTER_HOME, the root instance config (and its copy in a wheel), and a store resource
whose fields say where the data lives."""

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import dagster as dg
import pytest

import robodata
from robodata import orchestration as instance
from robodata.orchestration.defs import resources

pytestmark = pytest.mark.scheduled_first  # a wheel built and installed, Dagster started from it

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
    # Dagster's temporary instance folder is gone again; the root dagster.yaml it read may leave
    # its storage folder, which git ignores
    left = sorted(str(p.relative_to(REPO)) for p in set(REPO.iterdir()) - before)
    ignored = subprocess.run(["git", "check-ignore", *left], cwd=REPO, capture_output=True, text=True).stdout.split()
    assert left == ignored, left


def test_the_top_level_the_design_card_names_is_at_the_repository_root():
    for name in ("pyproject.toml", "README.md", "workspace.yaml", "dagster.yaml"):
        assert (REPO / name).is_file(), name
    for name in ("robodata", "robodata_tests"):
        assert (REPO / name / "__init__.py").is_file(), name


def test_the_shipped_instance_config_is_the_root_one():
    # A wheel has no repository root: the package ships a copy, which must not drift.
    assert INSTANCE_IN_PACKAGE == Path(robodata.__file__).parent / "orchestration" / "dagster.yaml"
    assert INSTANCE_IN_PACKAGE.read_bytes() == (REPO / "dagster.yaml").read_bytes()


def _one_run(dagster_instance: dg.DagsterInstance) -> None:
    @dg.asset
    def marker() -> int:
        return 1

    assert dg.materialize([marker], instance=dagster_instance).success


def test_the_instance_is_the_same_whatever_the_working_directory(tmp_path, monkeypatch):
    """One DAGSTER_HOME, one instance: a run recorded from one folder is seen from another, and
    neither folder gets storage of its own (a relative base_dir made a second, empty instance)."""
    home = tmp_path / "home"
    done = subprocess.run(
        [str(Path(sys.executable).with_name("robodata")), "dagster-home", str(home)],
        cwd=tmp_path, env=_env_without_dagster_home(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"export DAGSTER_HOME={home}\n"
    assert (home / "dagster.yaml").read_bytes() == INSTANCE_IN_PACKAGE.read_bytes()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    here, there = tmp_path / "here", tmp_path / "there"
    for folder in (here, there):
        folder.mkdir()
    monkeypatch.chdir(here)
    with dg.DagsterInstance.get() as dagster_instance:
        _one_run(dagster_instance)
        dagster_instance.add_dynamic_partitions("episodes", ["episode_000000"])
    monkeypatch.chdir(there)
    with dg.DagsterInstance.get() as dagster_instance:
        assert len(dagster_instance.get_runs()) == 1
        assert dagster_instance.get_dynamic_partitions("episodes") == ["episode_000000"]
        assert dagster_instance.storage_directory() == str(home / "storage")
        # what the instance config sets besides its storage
        assert dagster_instance.run_monitoring_enabled
        assert dagster_instance.run_monitoring_start_timeout_seconds == 180
        assert dagster_instance.run_retries_enabled and dagster_instance.run_retries_max_retries == 2
        assert dagster_instance.run_retries_retry_on_asset_or_op_failure is False
        assert dagster_instance.get_concurrency_config().pool_config.default_pool_limit == 2
        assert isinstance(dagster_instance.run_coordinator, dg.QueuedRunCoordinator)
        assert dagster_instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 4
    assert list(here.iterdir()) == list(there.iterdir()) == []
    assert (home / "history" / "runs.db").is_file() and (home / "schedules" / "schedules.db").is_file()


def test_the_packaged_dg_config_is_the_project_s(tmp_path):
    """definitions.py loads the defs folder with the package's dg.toml (a wheel has no
    pyproject.toml); the `dg` command reads pyproject's [tool.dg.project]: the same modules."""
    packaged = tomllib.loads((REPO / "robodata" / "orchestration" / "dg.toml").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["dg"]["project"]
    assert packaged["directory_type"] == "project"
    assert packaged["project"] == {key: project[key] for key in ("root_module", "defs_module", "code_location_name")}


def test_an_installed_wheel_writes_its_instance_and_loads_the_location_outside_a_checkout(tmp_path, built_wheel):
    """The wheel as a user installs it, run from a folder that is no checkout: the instance
    config comes from `robodata dagster-home`, and the code location loads under its one name."""
    wheel = built_wheel
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("robodata/orchestration/dagster.yaml") == (REPO / "dagster.yaml").read_bytes()
        assert "robodata/orchestration/dg.toml" in archive.namelist()
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    user = tmp_path / "user"
    user.mkdir()
    env = {**_env_without_dagster_home(), "PYTHONPATH": str(site)}

    def run(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run(command, cwd=user, env=env, capture_output=True, text=True, timeout=300)

    home = run(sys.executable, "-m", "robodata.cli", "dagster-home", "dagster_home")
    assert home.returncode == 0, home.stderr
    assert home.stdout == f"export DAGSTER_HOME={user / 'dagster_home'}\n"
    env["DAGSTER_HOME"] = str(user / "dagster_home")
    where = run(sys.executable, "-c", "import robodata.orchestration.definitions as d; print(d.__file__)")
    assert where.stdout.strip() == str(site / "robodata" / "orchestration" / "definitions.py"), where.stderr
    dagster = str(Path(sys.executable).with_name("dagster"))
    valid = run(dagster, "definitions", "validate", "-m", "robodata.orchestration.definitions")
    assert valid.returncode == 0, valid.stderr[-3000:]
    assert "Validation successful for code location robodata.orchestration.definitions" in valid.stderr + valid.stdout


def test_a_written_home_keeps_a_dagster_yaml_already_there(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    home, written = instance.write_dagster_home(tmp_path / "home")
    assert (home, written) == (tmp_path / "home", False)
    assert (home / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"


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
