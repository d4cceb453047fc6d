"""The cluster's Dagster daemon: ``dagster-daemon run``, after queuing again the runs that the
daemon before it stopped in the middle of launching.

The daemon launches a queued run in two writes: it marks the run STARTING, then hands it to Celery
(the run launcher records the Celery task id on the run before it sends the task). A daemon killed
between the two (SIGKILL, a lost machine) leaves a STARTING run that no worker will ever take. Run
monitoring fails it after ``start_timeout_seconds``, and Dagster does not retry it when it belongs
to a ``dagster job backfill`` (the CLI marks its backfill completed as soon as the runs are queued):
the backfill ends with a failed run it never tried.

Only the daemon launches runs, and supervisord starts a new one only after the old one exited, so a
STARTING run without a task id is one that no Celery worker can hold: it goes back in the queue,
and the new daemon launches it once. A run whose task id is recorded is left to run monitoring (the
task may be queued in Redis; launching it again could run it twice).

Usage, as deploy/cluster.sh's supervisord runs it::

    python -m robodata.orchestration.cluster.daemon -m robodata.orchestration.definitions
"""

from __future__ import annotations

import os
import sys

import dagster as dg
from dagster_celery.tags import DAGSTER_CELERY_TASK_ID_TAG

REQUEUED_MESSAGE = (
    "The daemon stopped while launching this run, before its Celery task was sent: "
    "queued again by the next daemon (robodata.orchestration.cluster.daemon)."
)


def requeue_runs_lost_at_launch(instance: dg.DagsterInstance) -> list[str]:
    """Put every STARTING run that has no Celery task id back in the queue; return their ids.

    Call it only while no daemon runs (a live daemon's run may be between its two writes)."""
    starting = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTING]))
    lost = [run for run in starting if DAGSTER_CELERY_TASK_ID_TAG not in run.tags]
    for run in lost:
        instance.report_engine_event(REQUEUED_MESSAGE, run)
        instance.report_dagster_event(dg.DagsterEvent.job_enqueue(run), run_id=run.run_id)
    return [run.run_id for run in lost]


def main(argv: list[str] | None = None) -> None:
    """Queue again the runs lost at launch, then become ``dagster-daemon run ARGV``."""
    args = sys.argv[1:] if argv is None else argv
    try:
        with dg.DagsterInstance.get() as instance:
            for run_id in requeue_runs_lost_at_launch(instance):
                print(f"robodata: run {run_id} was lost while launching: queued again", flush=True)
    except Exception as exc:  # PostgreSQL still down after the connect wait: the daemon copes
        # The type only: a driver's message may quote the connection string.
        print(f"robodata: runs lost at launch not checked ({type(exc).__name__}); starting the daemon", flush=True)
    os.execvp("dagster-daemon", ["dagster-daemon", "run", *args])


if __name__ == "__main__":
    main()
