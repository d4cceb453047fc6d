"""A daemon killed while launching a run: the cluster's launcher records the Celery task id before
it sends the task, and the next daemon (robodata.orchestration.cluster.daemon) queues again every
STARTING run without one. On a SQLite instance and Celery's in-memory broker here; the whole drill
(SIGKILL to the daemon mid-backfill) is test_cluster.py's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.launcher import LaunchRunContext
from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin
from dagster_celery.tags import DAGSTER_CELERY_TASK_ID_TAG
from kombu.exceptions import OperationalError

from robodata.orchestration.cluster.daemon import REQUEUED_MESSAGE, requeue_runs_lost_at_launch

pytestmark = pytest.mark.dagster


@dg.op
def nothing() -> None:
    pass


@dg.job
def one_step() -> None:
    nothing()


def launcher_overrides(broker: str) -> dict:
    return {
        "run_launcher": {
            "module": "robodata.orchestration.cluster.run_launcher",
            "class": "CeleryRunLauncher",
            "config": {"broker": broker, "backend": "cache+memory://"},
        }
    }


def starting_run(instance: dg.DagsterInstance, tags: dict[str, str] | None = None) -> dg.DagsterRun:
    """A run of ``one_step`` that a daemon marked STARTING, with the origins a queued run has."""
    location = RegisteredCodeLocationOrigin("robodata.orchestration.definitions")
    run = dg.DagsterRun(
        job_name="one_step",
        status=dg.DagsterRunStatus.STARTING,
        tags=tags,
        job_code_origin=dg.reconstructable(one_step).get_python_origin(),
        remote_job_origin=RemoteJobOrigin(RemoteRepositoryOrigin(location, "__repository__"), "one_step"),
    )
    return instance.add_run(run)


def test_the_task_sent_carries_the_id_recorded_on_the_run():
    with dg.instance_for_test(overrides=launcher_overrides("memory://")) as instance:
        run = starting_run(instance)
        launcher = instance.run_launcher
        launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
        with launcher.celery.connection_for_read() as connection:
            queue = connection.SimpleQueue("dagster")
            message = queue.get(timeout=5)
            queue.close()
        assert message.headers["task"] == "execute_job"
        assert instance.get_run_by_id(run.run_id).tags[DAGSTER_CELERY_TASK_ID_TAG] == message.headers["id"]


def test_the_id_is_recorded_before_the_task_is_sent():
    """The broker refuses the task: the run already carries its id (dagster-celery's own order,
    send then record, left a run that was sent without one)."""
    with dg.instance_for_test(overrides=launcher_overrides("redis://127.0.0.1:9/0")) as instance:
        run = starting_run(instance)
        with pytest.raises(OperationalError, match="127.0.0.1:9"):
            instance.run_launcher.launch_run(LaunchRunContext(dagster_run=run, workspace=None))
        assert DAGSTER_CELERY_TASK_ID_TAG in instance.get_run_by_id(run.run_id).tags


def test_only_starting_runs_without_a_task_id_are_queued_again():
    with dg.instance_for_test() as instance:
        lost = starting_run(instance)
        sent = starting_run(instance, tags={DAGSTER_CELERY_TASK_ID_TAG: "a-task"})
        started = instance.add_run(dg.DagsterRun(job_name="one_step", status=dg.DagsterRunStatus.STARTED))
        assert requeue_runs_lost_at_launch(instance) == [lost.run_id]
        statuses = {run.run_id: instance.get_run_by_id(run.run_id).status for run in (lost, sent, started)}
        assert statuses == {
            lost.run_id: dg.DagsterRunStatus.QUEUED,
            sent.run_id: dg.DagsterRunStatus.STARTING,
            started.run_id: dg.DagsterRunStatus.STARTED,
        }
        messages = [entry.message for entry in instance.all_logs(lost.run_id)]
        assert REQUEUED_MESSAGE in messages
        assert requeue_runs_lost_at_launch(instance) == []  # once


def test_the_daemon_command_queues_lost_runs_then_becomes_dagster_daemon(tmp_path: Path):
    """`python -m robodata.orchestration.cluster.daemon ARGS` as supervisord runs it, with
    ``--help`` after it so that dagster-daemon answers and exits."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        lost = starting_run(instance)
    out = subprocess.run(
        [sys.executable, "-m", "robodata.orchestration.cluster.daemon", "--help"],
        env=env, capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    assert f"robodata: run {lost.run_id} was lost while launching: queued again" in out
    assert "Usage: dagster-daemon run" in out
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        assert instance.get_run_by_id(lost.run_id).status == dg.DagsterRunStatus.QUEUED
