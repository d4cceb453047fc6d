"""After a storage deadline the process ends, not only the wait: with a store that accepts
connections and never answers and ``ROBODATA_STORAGE_TIMEOUT_S`` (4 s; 10 s for the training
script, which reads through the store before it goes silent), ``robodata info``,
``robodata ingest``, ``robodata verify`` and a training script iterating a DataLoader over
``LeRobotCompatDataset`` (the store going silent under its worker) each print one line naming the
store and exit. Before the storage call ran in a daemon thread, Lance's own retries kept each
process alive for about six times the deadline after the message.

The bounds are hang checks, not timings, so they are counted in deadlines: exit within two
deadlines of the message and four of the first request to the store. A process that waits for
Lance's retries exits some five deadlines after the message. A fixed 5 s after the message was
too tight: under load, the training script's normal interpreter exit (torch, the DataLoader's
worker) took 7 s in CI."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import robodata
from robodata.storage._deadlines import TIMEOUT_ENV
from robodata_tests.fixtures.silent_store import SilentProxy

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 10  # the training script's reads before the store goes silent must not miss it
# The commands' stores are silent from their first connection: no call has to succeed in time.
SILENT_FROM_THE_START_DEADLINE_S = 4
EXIT_AFTER_MESSAGE_DEADLINES = 2
EXIT_AFTER_FIRST_REQUEST_DEADLINES = 4

TRAIN = """
import sys
from torch.utils.data import DataLoader
from robodata.errors import RoboDataError
from robodata.storage import env_storage_options
from robodata.lerobot import LeRobotCompatDataset

ds = LeRobotCompatDataset(sys.argv[1], storage_options=env_storage_options())
print("ready", flush=True)
sys.stdin.readline()  # the store goes silent now
try:
    for batch in DataLoader(ds, batch_size=4, num_workers=1, shuffle=True):
        pass
except RoboDataError as exc:  # the worker's error: its last line is the message
    print("train:", str(exc).strip().splitlines()[-1], file=sys.stderr)
    sys.exit(2)
"""


def _environ(endpoint: str, fake_credentials: dict[str, str], deadline_s: float = DEADLINE_S) -> dict[str, str]:
    env = {**os.environ, **fake_credentials, "AWS_ENDPOINT_URL": endpoint, TIMEOUT_ENV: str(deadline_s)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


class Run:
    """A process whose stderr lines are timed as they arrive."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], deadline_s: float, **popen) -> None:
        self.name, self.deadline_s = name, deadline_s
        self.process = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True, **popen)
        self.started = time.monotonic()
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def restart_clock(self) -> None:
        self.started = time.monotonic()

    def finish(self) -> None:
        try:
            self.process.wait(timeout=self.deadline_s * 20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.exited = time.monotonic()
        self._reader.join(timeout=10)

    @property
    def err(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def check(self, prefix: str, store: SilentProxy) -> None:
        """One line starting with ``prefix`` names the store (progress bars aside); the process
        exits with code 2 within two deadlines of printing it, and within four of its first request
        to the store (not of its start: start-up on a loaded 2-core machine can take 20 s)."""
        errors = [(at, line) for at, line in self.lines if line.startswith(prefix)]
        assert len(errors) == 1, self.err
        printed, line = errors[0]
        print(
            f"{self.name}: first request at {store.first_contact - self.started:.1f} s, message at "
            f"{printed - self.started:.1f} s, exit {self.process.returncode} at {self.exited - self.started:.1f} s: {line}"
        )
        assert self.process.returncode == 2, self.err
        assert f"could not reach {store.endpoint}" in line, line
        assert self.exited - printed < EXIT_AFTER_MESSAGE_DEADLINES * self.deadline_s, (
            f"{self.name} exited {self.exited - printed:.0f} s after its message"
        )
        waited = self.exited - max(self.started, store.first_contact)
        assert waited < EXIT_AFTER_FIRST_REQUEST_DEADLINES * self.deadline_s, (
            f"{self.name} exited {waited:.0f} s after its first request to the store"
        )


def test_the_commands_exit_soon_after_the_deadline(s3, eight_short_uploads):
    credentials = {k: v for k, v in s3.environ.items() if k != "AWS_ENDPOINT_URL"}
    dataset = s3.fresh_uri("never-answers")
    robodata_cli = [sys.executable, "-c", "import sys; from robodata.cli import main; sys.exit(main())"]
    commands = {
        "info": [*robodata_cli, "info", dataset],
        "ingest": [*robodata_cli, "ingest", str(eight_short_uploads[0]), dataset],
        "verify": [*robodata_cli, "verify", dataset],
    }
    stores = {name: SilentProxy() for name in commands}  # each silent from its first connection
    try:  # all at once: the test costs one deadline, not three
        runs = [
            Run(
                name,
                argv,
                _environ(stores[name].endpoint, credentials, SILENT_FROM_THE_START_DEADLINE_S),
                SILENT_FROM_THE_START_DEADLINE_S,
                stdout=subprocess.DEVNULL,
            )
            for name, argv in commands.items()
        ]
        for run in runs:
            run.finish()
    finally:
        for store in stores.values():
            store.close()
    for run in runs:
        run.check(f"robodata {run.name}: ", stores[run.name])
        assert s3.secret_key not in run.err


def test_a_dataloader_worker_ends_the_training_script(s3, eight_short_uploads):
    dataset = s3.fresh_uri("silent-under-worker")
    robodata.ingest_episode(str(eight_short_uploads[0]), dataset, storage_options=s3.storage_options)
    proxy = SilentProxy(("127.0.0.1", s3.port))
    env = _environ(proxy.endpoint, {k: v for k, v in s3.environ.items() if k != "AWS_ENDPOINT_URL"})
    try:
        train = Run(
            "DataLoader",
            [sys.executable, "-c", TRAIN, dataset],
            env,
            DEADLINE_S,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert train.process.stdout.readline().strip() == "ready", train.err
        proxy.go_silent()
        train.restart_clock()  # from the moment the store goes silent
        train.process.stdin.write("go\n")
        train.process.stdin.flush()
        train.finish()
    finally:
        proxy.close()
    train.check("train: ", proxy)
