"""dagster-celery's run launcher, plus what run monitoring and terminate need from it.

- A lost worker: dagster-celery reports a run as healthy while its Celery task says STARTED, and
  a worker killed outright (``kill -9``, out of memory, a machine lost) never updates that state,
  so the run would stay STARTED for ever. Here a STARTED task that no live worker reports as
  active, for ``lost_after_seconds`` in a row, is a failed worker: run monitoring marks the run
  failed and run retries start it again.
- A daemon killed while launching: dagster-celery sends the task, then records its id on the run.
  Here the id is recorded first, so that a STARTING run without one was never sent, and the next
  daemon can queue it again safely (robodata.orchestration.cluster.daemon).
- Terminate: dagster-celery only revokes the task with SIGTERM, which Dagster turns into an
  interrupt that the step's retry policy retried: the run went on and succeeded. Here the run is
  marked CANCELING, the task revoked with SIGKILL (the pool starts a fresh process: the worker is
  free again), and the run marked CANCELED once Celery confirms the task stopped (or it never
  started).

Dagster offers no public way to report a run worker's health: ``CheckRunHealthResult`` and
``WorkerStatus`` live in ``dagster._core.launcher`` (the run launcher base class is documented,
its health types are not), and a launcher reaches its instance through ``self._instance``.
Recording the task id first overrides dagster-celery's private ``_launch_celery_task_run``. They
are used here only, and robodata_tests/orchestration/test_cluster_extension_points.py fails
loudly, naming them, when a Dagster release changes their shape (the upstream request:
docs/upstream/dagster-run-worker-health.md).
"""

from __future__ import annotations

import time
from typing import Any

from dagster._core.launcher import CheckRunHealthResult, WorkerStatus
from dagster_celery.launcher import CeleryRunLauncher as _CeleryRunLauncher
from dagster_celery.tags import DAGSTER_CELERY_TASK_ID_TAG

# Celery task states after which nothing of the task runs any more.
_STOPPED = {"SUCCESS", "FAILURE", "REVOKED"}


class CeleryRunLauncher(_CeleryRunLauncher):
    """``dagster_celery.launcher.CeleryRunLauncher`` that notices lost workers and terminates runs.

    Extra config: ``lost_after_seconds`` (default 30), how long a started task may go unreported
    by every worker before its run counts as lost; ``inspect_timeout_seconds`` (default 3), how
    long to wait for the workers' answers.
    """

    def __init__(self, *args: Any, lost_after_seconds: int = 30, inspect_timeout_seconds: int = 3, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lost_after_seconds = lost_after_seconds
        self.inspect_timeout_seconds = inspect_timeout_seconds
        self._unseen_since: dict[str, float] = {}  # task id -> when no worker reported it first
        self._active: tuple[float, set[str] | None] = (0.0, None)

    @classmethod
    def config_type(cls) -> dict:
        from dagster import Field

        base = super().config_type()
        assert isinstance(base, dict)  # dagster-celery's schema: a dict of fields
        return {
            **base,
            "lost_after_seconds": Field(int, is_required=False, default_value=30),
            "inspect_timeout_seconds": Field(int, is_required=False, default_value=3),
        }

    @classmethod
    def from_config_value(cls, inst_data, config_value):
        return cls(inst_data=inst_data, **config_value)

    def check_run_worker_health(self, run) -> CheckRunHealthResult:
        health = super().check_run_worker_health(run)
        task_id = run.tags.get(DAGSTER_CELERY_TASK_ID_TAG)
        if health.status != WorkerStatus.RUNNING or task_id is None:
            self._unseen_since.pop(task_id, None)
            return health
        active = self._active_task_ids()
        if active is None or task_id in active:  # no answer at all (broker down): do not guess
            self._unseen_since.pop(task_id, None)
            return health
        now = time.monotonic()
        unseen_since = self._unseen_since.setdefault(task_id, now)
        if now - unseen_since < self.lost_after_seconds:
            return health
        self._unseen_since.pop(task_id, None)
        info = self.celery.AsyncResult(task_id).info
        worker = info.get("hostname", "?") if isinstance(info, dict) else "?"
        return CheckRunHealthResult(
            WorkerStatus.FAILED,
            f"Celery worker {worker} no longer runs task {task_id} (none of the live workers has "
            f"reported it for {self.lost_after_seconds} s): the worker was stopped, killed or lost.",
        )

    def _active_task_ids(self) -> set[str] | None:
        """Ids of the tasks every live worker is executing (one broadcast, reused for a few
        seconds across the runs of one monitoring pass); None when no worker answered."""
        at, ids = self._active
        if time.monotonic() - at < 5.0:
            return ids
        replies = self.celery.control.inspect(timeout=self.inspect_timeout_seconds).active()
        ids = None if not replies else {t["id"] for tasks in replies.values() for t in tasks}
        self._active = (time.monotonic(), ids)
        return ids

    def _launch_celery_task_run(self, run, task_signature, routing_key) -> None:
        task_id = task_signature.freeze().id  # the id apply_async sends the task under
        self._instance.add_run_tags(run.run_id, {DAGSTER_CELERY_TASK_ID_TAG: task_id})
        super()._launch_celery_task_run(run, task_signature, routing_key)

    def terminate(self, run_id: str) -> bool:
        run = self._instance.get_run_by_id(run_id)
        if run is None or DAGSTER_CELERY_TASK_ID_TAG not in run.tags:
            return False
        self._instance.report_run_canceling(run)
        result = self.celery.AsyncResult(run.tags[DAGSTER_CELERY_TASK_ID_TAG])
        started = result.state not in ("PENDING", "RECEIVED")
        # SIGKILL: Dagster turns a SIGTERM into an interrupt that a step's retry policy retries,
        # so the run went on. The pool replaces the killed process; Lance commits are atomic, so
        # an ingest stopped midway leaves no partial episode (its staged GOPs are collected later).
        result.revoke(terminate=True, signal="SIGKILL")
        deadline = time.monotonic() + 15
        while started and result.state not in _STOPPED and time.monotonic() < deadline:
            time.sleep(0.5)
        if not started or result.state in _STOPPED:
            # Not started: the workers drop a revoked task when it reaches them (and Dagster
            # does not execute a canceled run). Otherwise run monitoring's cancel timeout ends it.
            self._instance.report_run_canceled(run, message="Run terminated: its Celery task was stopped.")
        return True
