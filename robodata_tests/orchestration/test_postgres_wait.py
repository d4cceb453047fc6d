"""A PostgreSQL connect of the cluster's instance waits for the server
(robodata.orchestration.cluster.postgres_storage): a real PostgreSQL started and stopped by
``deploy/cluster.sh`` (the cluster's own; no other part of the cluster), connected to through
SQLAlchemy with one connection per use (NullPool), as dagster-postgres's storages in the run
workers and the daemon do. The whole cluster's restart drill is in test_cluster.py."""

from __future__ import annotations

import logging
import threading
import time

import pytest
import sqlalchemy
from sqlalchemy.pool import NullPool

from benchmarks.orchestration.cluster import CLUSTER_SH, base_env, loaded_env, run_bash, teardown
from robodata.orchestration.cluster import postgres_storage

pytestmark = pytest.mark.slow  # starts PostgreSQL (initdb) and stops it for a few seconds
OUTAGE_S = 4  # longer than the wait in PostgreSQL's own start, shorter than the connect's wait


@pytest.fixture(scope="module")
def postgres():
    """deploy/cluster.sh's PostgreSQL alone, with its role and database; its environment."""
    env = loaded_env(base_env())
    try:
        run_bash(f"bash {CLUSTER_SH} up postgres", env, timeout=300)
        yield env
    finally:
        teardown(env)


@pytest.fixture(autouse=True)
def no_outage_seen_yet(monkeypatch):
    """Each test starts in a process that has seen no outage: the wait is counted per process, and
    an earlier test on this test worker may have left one open (its last connect failed)."""
    monkeypatch.setattr(postgres_storage, "_unreachable_since", None)


def _url(env: dict[str, str], password: str | None = None) -> sqlalchemy.URL:
    return sqlalchemy.URL.create(
        "postgresql+psycopg2",
        username=env["DAGSTER_PG_USER"],
        password=password or env["DAGSTER_PG_PASSWORD"],
        host=env["DAGSTER_PG_HOST"],
        port=int(env["DAGSTER_PG_PORT"]),
        database=env["DAGSTER_PG_DB"],
    )


def test_a_connect_during_an_outage_waits_for_postgresql(postgres, monkeypatch, caplog):
    monkeypatch.setenv("ROBODATA_PG_CONNECT_WAIT_S", "120")
    engine = sqlalchemy.create_engine(_url(postgres), poolclass=NullPool)
    with engine.connect() as connection:
        assert connection.exec_driver_sql("SELECT 1").scalar() == 1
    run_bash(f"bash {CLUSTER_SH} down postgres", postgres, timeout=120)

    def start_again() -> None:
        time.sleep(OUTAGE_S)
        run_bash(f"bash {CLUSTER_SH} up postgres", postgres, timeout=120)

    restarter = threading.Thread(target=start_again)
    restarter.start()
    try:
        with caplog.at_level(logging.WARNING, postgres_storage.__name__), engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT 41 + 1").scalar() == 42  # refused at first
    finally:
        restarter.join()
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "PostgreSQL is not answering",
        "PostgreSQL answers again",
    ]


def test_a_refused_login_fails_at_once_and_a_long_outage_fails_after_the_wait(postgres, monkeypatch, caplog):
    monkeypatch.setenv("ROBODATA_PG_CONNECT_WAIT_S", "120")
    wrong = sqlalchemy.create_engine(_url(postgres, password="not-the-password"), poolclass=NullPool)
    with (
        caplog.at_level(logging.WARNING, postgres_storage.__name__),
        pytest.raises(sqlalchemy.exc.OperationalError, match="password authentication failed"),
    ):
        wrong.connect()
    assert caplog.records == []  # not waited for: PostgreSQL answered

    monkeypatch.setenv("ROBODATA_PG_CONNECT_WAIT_S", "1")
    run_bash(f"bash {CLUSTER_SH} down postgres", postgres, timeout=120)
    try:
        engine = sqlalchemy.create_engine(_url(postgres), poolclass=NullPool)
        with pytest.raises(sqlalchemy.exc.OperationalError, match="Connection refused"):
            engine.connect()
        with pytest.raises(sqlalchemy.exc.OperationalError, match="Connection refused"):
            engine.connect()  # the same outage: its wait is spent
    finally:
        run_bash(f"bash {CLUSTER_SH} up postgres", postgres, timeout=120)
    with engine.connect() as connection:  # back: a connect succeeds, and the next outage waits again
        assert connection.exec_driver_sql("SELECT 1").scalar() == 1
    assert [r.getMessage().split(";")[0] for r in caplog.records] == [
        "PostgreSQL is not answering",
        "PostgreSQL answers again",
    ]
