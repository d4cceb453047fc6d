"""dagster-postgres's storage, with the webserver's pooled connections checked before use.

The webserver keeps one PostgreSQL connection per storage open; after PostgreSQL restarts, each
is dead and the first GraphQL request on it failed. dagster-postgres has no option for
SQLAlchemy's ``pool_pre_ping``, so this module gives every connection pool that keeps
connections (a ``QueuePool``: the webserver's; the daemon and the run workers open a connection
per use, with no pool to go stale) SQLAlchemy's public "pessimistic" disconnect handling: at
checkout the connection is pinged, and a dead one is replaced by a fresh one. While PostgreSQL
is down, dagster-postgres's own connect retry (about 6 s) makes requests wait.

Only public parts: dagster-postgres's ``DagsterPostgresStorage`` with its own config and
``__init__`` (``storage: custom`` names this module, so every process of the instance imports
it) and SQLAlchemy's pool events.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy
from dagster_postgres import DagsterPostgresStorage
from sqlalchemy.pool import QueuePool


def _ping(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    try:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("SELECT 1")
        finally:
            cursor.close()
    except Exception as exc:  # any failure: the pool discards the connection and connects again
        raise sqlalchemy.exc.DisconnectionError(str(exc)) from exc


if not sqlalchemy.event.contains(QueuePool, "checkout", _ping):
    sqlalchemy.event.listen(QueuePool, "checkout", _ping)


class PostgresStorage(DagsterPostgresStorage):
    """``storage: postgres`` whose webserver connections survive a PostgreSQL restart; the same
    config (``postgres_db`` or ``postgres_url``), under ``storage: custom`` in dagster.yaml."""
