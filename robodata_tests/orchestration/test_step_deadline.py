"""A Dagster step ends the way a command and a DataLoader worker do after a storage deadline: a
step whose store accepts connections and never answers fails with the one-line
StorageUnreachableError naming the store, at the deadline (not after Lance's own retries, some
six times longer), and the run completes as failed; the call Lance is still making is left in a
daemon thread, which holds up neither the step nor the process's exit.

The bounds are hang checks, not timings (a 3 s deadline; a step that waited for Lance's retries
would take about 18 s more)."""

from __future__ import annotations

import threading
import time

import dagster as dg

from robodata.orchestration.defs.maintenance.upkeep import dataset_maintenance
from robodata.orchestration.defs.resources import DatasetStore
from robodata.storage._deadlines import TIMEOUT_ENV, abandoned_calls
from robodata_tests.fixtures.silent_store import SilentProxy

DEADLINE_S = 3
MARGIN_S = 10
SECRET = "step-deadline-secret-9f3a"


def test_a_step_on_a_silent_store_fails_at_the_deadline_and_the_run_ends(monkeypatch, tmp_path):
    proxy = SilentProxy()  # silent from its first connection
    environ = {
        "AWS_ACCESS_KEY_ID": "AKIASTEPDEADLINE",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": proxy.endpoint,
        TIMEOUT_ENV: str(DEADLINE_S),
    }
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    store = DatasetStore(root="s3://silent-bucket/dataset", uploads_root=str(tmp_path / "uploads"))
    instance = dg.DagsterInstance.ephemeral()
    try:
        started = time.monotonic()
        result = dg.materialize(
            [dataset_maintenance], instance=instance, resources={"store": store}, raise_on_error=False
        )
        took = time.monotonic() - started
    finally:
        proxy.close()

    assert proxy.first_contact is not None  # the step did reach the store
    assert not result.success
    assert instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.FAILURE
    [failure] = result.get_step_failure_events()
    step_error = failure.step_failure_data.error
    error = step_error.cause or step_error  # Dagster wraps what the step raised
    assert error.cls_name == "StorageUnreachableError", error.to_string()
    message = error.message.strip()
    assert "\n" not in message, message  # one line
    assert f"could not reach {proxy.endpoint} while" in message, message
    assert f"no answer within {DEADLINE_S} s" in message, message
    assert message.startswith("robodata.errors.StorageUnreachableError: s3://silent-bucket/dataset/"), message
    assert SECRET not in step_error.to_string()
    print(f"step failed {took:.1f} s after the run started (deadline {DEADLINE_S} s): {message}")
    assert took < DEADLINE_S + MARGIN_S, f"the run took {took:.0f} s"
    # The call Lance is still making was abandoned in a daemon thread: nothing waits for it.
    assert abandoned_calls() >= 1
    storage_threads = [t for t in threading.enumerate() if t.name == "robodata-storage-call"]
    assert storage_threads and all(t.daemon for t in storage_threads)
