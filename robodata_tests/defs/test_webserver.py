"""`dagster dev`'s UI end to end: a real dagster-webserver on 127.0.0.1 loads workspace.yaml,
lists the assets over GraphQL, launches a run for each of three partitions at once (each run in
a process of its own, all committing to one dataset) and sees every episode land exactly once."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import dagster as dg
import yaml

import robodata
from robodata.defs.instance import INSTANCE_CONFIG
from robodata_tests.defs.conftest import EPISODE_KEYS, make_store

REPO = Path(__file__).resolve().parents[2]
WEBSERVER = Path(sys.executable).with_name("dagster-webserver")
EXPECTED_ASSETS = {
    "raw_episodes",
    "gop_blobs",
    "aligned_frames",
    "annotations",
    "benchmark_report",
    "training_snapshot",
}

LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
ASSETS = "{ assetNodes { assetKey { path } } }"
LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
RUN_STATUS = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        payload = json.loads(response.read())
    assert "errors" not in payload, payload["errors"]
    return payload["data"]


def wait_for(predicate, timeout: float, what: str, server: subprocess.Popen):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, f"webserver exited with {server.returncode} while waiting for {what}"
        try:
            value = predicate()
        except OSError:  # not listening yet
            value = None
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out waiting for {what}")


def instance_home(path: Path) -> Path:
    """The repository's instance config, but runs launch at once: this test starts no daemon
    to dequeue them (``dagster dev`` does)."""
    config = yaml.safe_load(INSTANCE_CONFIG.read_text())
    config["run_coordinator"] = {"module": "dagster.core.run_coordinator", "class": "DefaultRunCoordinator"}
    config["concurrency"].pop("runs")
    path.mkdir()
    (path / "dagster.yaml").write_text(yaml.safe_dump(config))
    return path


def test_webserver_lists_assets_and_runs_partitions_at_once(tmp_path, short_uploads, monkeypatch):
    store = make_store(tmp_path, short_uploads)
    home = instance_home(tmp_path / "home")
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # dagster.yaml's storage lives under it
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("episodes", EPISODE_KEYS)
    port = free_port()
    log = (tmp_path / "webserver.log").open("w")  # read it when this test fails
    env = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "ROBODATA_ROOT": store.root,
        "ROBODATA_UPLOADS": store.uploads_root,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    server = subprocess.Popen(
        [str(WEBSERVER), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        [location] = wait_for(lambda: _loaded(port), 120, "the code location to load", server)
        assert location["name"] == "robodata.definitions"

        keys = {"/".join(node["assetKey"]["path"]) for node in graphql(port, ASSETS)["assetNodes"]}
        assert EXPECTED_ASSETS <= keys

        run_ids = []
        for key in EPISODE_KEYS:  # launched together; each run starts its own worker process
            params = {
                "selector": {
                    "repositoryLocationName": location["name"],
                    "repositoryName": "__repository__",
                    "jobName": "ingest_episode",
                },
                "runConfigData": {},  # ingest_episode runs its steps in one process by default
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": key}]},
            }
            launched = graphql(port, LAUNCH, {"params": params})["launchRun"]
            assert launched["__typename"] == "LaunchRunSuccess", launched
            run_ids.append(launched["run"]["runId"])
        for run_id in run_ids:
            status = wait_for(lambda run_id=run_id: _finished(port, run_id), 300, "the runs to finish", server)
            assert status == "SUCCESS"
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.fetch_materializations(dg.AssetKey("aligned_frames"), limit=10).records
        assert sorted(r.asset_materialization.partition for r in records) == EPISODE_KEYS
        assert {r.asset_materialization.metadata["rows_written"].value for r in records} == {97}
    ds = robodata.open(store.root)
    keys = ds.to_table(columns=["episode_index", "frame_index"]).to_pylist()
    assert len({(k["episode_index"], k["frame_index"]) for k in keys}) == len(keys) == 3 * 97
    assert ds.episodes()["rows"].to_pylist() == [97, 97, 97]


def _loaded(port: int):
    entries = graphql(port, LOCATIONS)["workspaceOrError"]["locationEntries"]
    for entry in entries:
        error = entry["locationOrLoadError"]
        if error and error["__typename"] == "PythonError":
            raise AssertionError(f"code location failed to load: {error['message']}")
    return entries if entries and all(e["loadStatus"] == "LOADED" for e in entries) else None


def _finished(port: int, run_id: str):
    status = graphql(port, RUN_STATUS, {"id": run_id})["runOrError"]["status"]
    return status if status in ("SUCCESS", "FAILURE", "CANCELED") else None
