"""A real dagster-webserver on 127.0.0.1 over this repository's workspace.yaml (or ``dagster
dev`` in a clean clone of it), driven over GraphQL: the one way the UI tests start it, launch partition runs or a backfill and stop it
(and, for backfills, the dagster-daemon that carries them out)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from robodata.orchestration import INSTANCE_CONFIG

REPO = Path(__file__).resolve().parents[2]
WEBSERVER = Path(sys.executable).with_name("dagster-webserver")

LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""
LAUNCH = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on RunConfigValidationInvalid { errors { message } } } }"""
RUN_STATUS = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }"
BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message }
  ... on InvalidSubsetError { message } ... on UnauthorizedError { message } } }"""
BACKFILL_STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) {
  ... on PartitionBackfill { status } ... on PythonError { message } } }"""
SENSOR = """query($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) {
  __typename ... on Sensor { id } ... on PythonError { message } } }"""
STOP_SENSOR = """mutation($id: String!) { stopSensor(id: $id) {
  __typename ... on StopSensorMutationResult { instigationState { status } }
  ... on PythonError { message } ... on UnauthorizedError { message } } }"""
DAEMON = Path(sys.executable).with_name("dagster-daemon")
DAGSTER = Path(sys.executable).with_name("dagster")


def instance_home(path: Path) -> Path:
    """The repository's instance config (its storage under ``path``, as ``robodata dagster-home``
    writes it), but runs launch at once: these tests start no daemon to dequeue them (``dagster dev``
    does)."""
    config = yaml.safe_load(INSTANCE_CONFIG.read_text())
    config["run_coordinator"] = {"module": "dagster.core.run_coordinator", "class": "DefaultRunCoordinator"}
    config["concurrency"].pop("runs")
    path.mkdir()
    (path / "dagster.yaml").write_text(yaml.safe_dump(config))
    return path


@dataclass
class Webserver:
    port: int
    process: subprocess.Popen
    location: str = ""
    last_backfill: str = ""

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        url = f"http://127.0.0.1:{self.port}/graphql"
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        for attempt in range(5):
            try:
                # A bound for a hung server, not a timing: a launch mutation loads the code location
                # in the webserver, which took over 30 s with the suite's other workers on both cores.
                with urllib.request.urlopen(request, timeout=120) as response:
                    payload = json.loads(response.read())
                break
            except urllib.error.HTTPError as error:
                # the webserver answers 500 while its code server (re)starts under load; a request
                # it still fails after that is the test's failure, with the server's words
                if error.code < 500 or attempt == 4:
                    raise AssertionError(f"{error}: {error.read()[-2000:]!r}") from error
                time.sleep(3)
        assert "errors" not in payload, payload["errors"]
        return payload["data"]

    def wait_for(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"webserver exited with {self.process.returncode} waiting for {what}"
            try:
                value = predicate()
            except OSError:  # not listening yet
                value = None
            if value:
                return value
            time.sleep(1)
        raise AssertionError(f"timed out waiting for {what}")

    def run_partitions(self, job: str, partitions: list[str], timeout: float = 300) -> list[str]:
        """Launch one run of ``job`` per partition, all at once (each in its own run worker
        process), and return their final statuses."""
        run_ids = []
        for key in partitions:
            params = {
                "selector": {
                    "repositoryLocationName": self.location,
                    "repositoryName": "__repository__",
                    "jobName": job,
                },
                "runConfigData": {},
                "executionMetadata": {"tags": [{"key": "dagster/partition", "value": key}]},
            }
            launched = self.graphql(LAUNCH, {"params": params})["launchRun"]
            assert launched["__typename"] == "LaunchRunSuccess", launched
            run_ids.append(launched["run"]["runId"])
        return [self.wait_for(lambda i=i: self._finished(i), timeout, "the runs to finish") for i in run_ids]

    def stop_sensor(self, name: str) -> None:
        """Stop sensor ``name`` as the UI's toggle does (its state stored in the instance, which
        a daemon started afterwards reads)."""
        selector = {"repositoryLocationName": self.location, "repositoryName": "__repository__", "sensorName": name}
        sensor = self.graphql(SENSOR, {"selector": selector})["sensorOrError"]
        assert sensor["__typename"] == "Sensor", sensor
        stopped = self.graphql(STOP_SENSOR, {"id": sensor["id"]})["stopSensor"]
        assert stopped["__typename"] == "StopSensorMutationResult", stopped
        assert stopped["instigationState"]["status"] == "STOPPED", stopped

    def launch_backfill(self, assets: list[str], partitions: list[str]) -> str:
        """Launch a backfill of ``assets`` over ``partitions`` as the UI's *Materialize* does (a
        daemon carries it out); return its id."""
        params = {"assetSelection": [{"path": [a]} for a in assets], "partitionNames": partitions}
        launched = self.graphql(BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert launched["__typename"] == "LaunchBackfillSuccess", launched
        self.last_backfill = launched["backfillId"]
        return self.last_backfill

    def wait_for_backfill(self, backfill_id: str, timeout: float = 600) -> str:
        """The backfill's final status, once it has one."""

        def finished():
            status = self.graphql(BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]["status"]
            return status if status in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED") else None

        return self.wait_for(finished, timeout, "the backfill to finish")

    def _loaded(self):
        entries = self.graphql(LOCATIONS)["workspaceOrError"]["locationEntries"]
        for entry in entries:
            error = entry["locationOrLoadError"]
            if error and error["__typename"] == "PythonError":
                raise AssertionError(f"code location failed to load: {error['message']}")
        return entries if entries and all(e["loadStatus"] == "LOADED" for e in entries) else None

    def _finished(self, run_id: str):
        status = self.graphql(RUN_STATUS, {"id": run_id})["runOrError"]["status"]
        return status if status in ("SUCCESS", "FAILURE", "CANCELED") else None


def clean_clone(destination: Path) -> Path:
    """The repository's tracked files (as they are in the work tree) copied to ``destination``:
    what a fresh clone holds, without the checkout's ignored files (.venv, caches, instances)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (REPO / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, destination / name)
    return destination


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_group(process: subprocess.Popen) -> None:
    """Stop ``process`` and its children: ``dagster`` ignores SIGTERM when backgrounded, so its
    process group gets SIGKILL after 30 s."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def running_dev(
    command: list[str], checkout: Path, home: Path, env: dict[str, str], log: Path, load_timeout: float = 300
) -> Iterator[Webserver]:
    """``command`` (``["dg", "dev"]``, ``["dagster", "dev", ...]``: the webserver and a daemon) in
    ``checkout`` with instance ``home`` (its own robodata first on the path), in a process
    session of its own, its code location loaded; the whole session is stopped on exit."""
    program, *arguments = command
    with _serving(
        arguments, checkout, home, env, log, load_timeout, program=Path(sys.executable).with_name(program)
    ) as server:
        yield server


@contextmanager
def running_webserver(home: Path, env: dict[str, str], log: Path, load_timeout: float = 300) -> Iterator[Webserver]:
    """dagster-webserver with instance ``home`` and the extra environment ``env``, its code
    location loaded (a cold start on a loaded machine can take minutes); its whole process group
    is stopped on exit (``dagster`` ignores SIGTERM when backgrounded: it gets SIGKILL after 30 s)."""
    with _serving(["-w", "workspace.yaml"], REPO, home, env, log, load_timeout, program=WEBSERVER) as server:
        yield server


@contextmanager
def _serving(
    arguments: list[str],
    checkout: Path,
    home: Path,
    env: dict[str, str],
    log: Path,
    load_timeout: float,
    program: Path = DAGSTER,
) -> Iterator[Webserver]:
    """``program arguments`` on a free port in ``checkout`` with instance ``home``, in a process
    session of its own, until its code location has loaded; the whole session is stopped on exit."""
    port = _free_port()
    environment = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]),
        **env,
    }
    with log.open("w") as output:  # read it when a test fails
        process = subprocess.Popen(
            [str(program), *arguments, "-h", "127.0.0.1", "-p", str(port)],
            cwd=checkout, env=environment, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        server = Webserver(port, process)
        try:
            [location] = server.wait_for(server._loaded, load_timeout, "the code location to load")
            server.location = location["name"]
            yield server
        finally:
            _stop_group(process)


@contextmanager
def running_daemon(home: Path, env: dict[str, str], log: Path) -> Iterator[subprocess.Popen]:
    """dagster-daemon over the same workspace and instance (backfills, run queue, monitoring,
    sensors: stop one first with ``Webserver.stop_sensor``); its process group is stopped on exit."""
    environment = {
        **os.environ,
        "DAGSTER_HOME": str(home),
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        **env,
    }
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(DAEMON), "run", "-w", "workspace.yaml"],
            cwd=REPO, env=environment, stdout=output, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            yield process
        finally:
            _stop_group(process)
