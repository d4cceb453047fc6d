"""What the cluster (robodata.orchestration.cluster) takes from Dagster, dagster-celery and
dagster-postgres: public parts where there are some; the private ones the run launcher needs
(docs/upstream/dagster-run-worker-health.md) checked against the release they were tested with, so an upgrade that
changes them fails here, by name, not in a cluster's run monitoring."""

import inspect
from importlib.metadata import version

import pytest
import sqlalchemy
from dagster_celery.launcher import CeleryRunLauncher as DagsterCeleryRunLauncher
from sqlalchemy.pool import QueuePool

from robodata.orchestration.cluster import postgres_storage, run_launcher

# The release the cluster's private uses were written and tested against (constraints.txt).
TESTED = {"dagster": "1.13.27", "dagster-celery": "0.29.27", "dagster-postgres": "0.29.27"}


def test_the_installed_dagster_is_the_release_the_cluster_was_tested_with():
    installed = {name: version(name) for name in TESTED}
    assert installed == TESTED, (
        f"Dagster {installed} is not the tested {TESTED}: check the private shapes below still hold "
        "(run them), then update TESTED and constraints.txt"
    )


def test_the_run_launcher_s_private_dagster_shapes_are_unchanged():
    """dagster._core.launcher's health types and the launcher's instance attribute, as
    robodata.orchestration.cluster.run_launcher uses them."""
    from dagster._core.launcher import CheckRunHealthResult, RunLauncher, WorkerStatus

    assert run_launcher.CheckRunHealthResult is CheckRunHealthResult
    assert {"RUNNING", "FAILED"} <= {status.name for status in WorkerStatus}
    assert CheckRunHealthResult._fields[:2] == ("status", "msg")
    assert list(inspect.signature(RunLauncher.check_run_worker_health).parameters) == ["self", "run"]
    assert isinstance(inspect.getattr_static(RunLauncher, "_instance"), property)
    assert issubclass(run_launcher.CeleryRunLauncher, DagsterCeleryRunLauncher)
    # dagster-celery's: the launcher's health check and its Celery app, which ours extends
    assert DagsterCeleryRunLauncher.check_run_worker_health is not RunLauncher.check_run_worker_health
    assert "celery" in inspect.getsource(DagsterCeleryRunLauncher.__init__)
    # the send that ours records the task id before (test_runs_lost_at_launch.py sends through it)
    assert list(inspect.signature(DagsterCeleryRunLauncher._launch_celery_task_run).parameters) == [
        "self",
        "run",
        "task_signature",
        "routing_key",
    ]


def test_the_storage_is_dagster_postgres_s_own_with_its_own_config():
    from dagster_postgres import DagsterPostgresStorage

    assert postgres_storage.PostgresStorage.__mro__[1] is DagsterPostgresStorage
    assert "__init__" not in vars(postgres_storage.PostgresStorage)
    assert {"config_type", "from_config_value"}.isdisjoint(vars(postgres_storage.PostgresStorage))


def test_a_pooled_connection_that_died_is_replaced_at_checkout(tmp_path):
    """SQLAlchemy's public pool event: what the webserver's pooled PostgreSQL connections get
    (here on SQLite, whose closed connection fails like a dead one)."""
    assert sqlalchemy.event.contains(QueuePool, "checkout", postgres_storage._ping)
    # no reset on return: a connection goes back into the pool untouched, as the webserver's idle
    # PostgreSQL connection sits there when the server restarts
    engine = sqlalchemy.create_engine(
        f"sqlite:///{tmp_path / 'db.sqlite'}", poolclass=QueuePool, pool_size=1, pool_reset_on_return=None
    )
    with engine.connect() as connection:
        connection.exec_driver_sql("SELECT 1")
    pooled = engine.raw_connection()
    pooled.dbapi_connection.close()  # the server went away behind the pool's back
    pooled.close()  # back into the pool, dead
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT 41 + 1").scalar() == 42
    sqlalchemy.event.remove(QueuePool, "checkout", postgres_storage._ping)
    try:
        pooled = engine.raw_connection()
        pooled.dbapi_connection.close()
        pooled.close()
        with pytest.raises(sqlalchemy.exc.ProgrammingError), engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1")  # without the ping: the dead connection is used
    finally:
        sqlalchemy.event.listen(QueuePool, "checkout", postgres_storage._ping)


def test_deploy_names_the_cluster_classes():
    import yaml

    from robodata_tests.orchestration.webserver import REPO

    config = yaml.safe_load((REPO / "deploy" / "dagster.yaml").read_text())
    assert (config["storage"]["custom"]["module"], config["storage"]["custom"]["class"]) == (
        postgres_storage.__name__,
        postgres_storage.PostgresStorage.__name__,
    )
    assert config["run_launcher"]["module"] == run_launcher.__name__
