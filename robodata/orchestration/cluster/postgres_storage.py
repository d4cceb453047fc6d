"""dagster-postgres's storage, riding out a PostgreSQL restart or failover of up to a minute.

Connecting waits for PostgreSQL. dagster-postgres retries a failed connect for about 6 s and
then raises ``DagsterPostgresException: too many retries for DB connection``. In a run, that
exception is raised by Dagster's own step machinery (storing the step's output event, reading the
dynamic partitions before the step), so the step failed, and a failed step is not retried as a
run (``retry_on_asset_or_op_failure: false``, right for a bad upload): a run in flight across a
longer outage failed for good (docs/cluster.md, "PostgreSQL restarts"). Here every PostgreSQL
connect of a process that opened the instance (run workers, daemon, webserver, code servers)
retries, every ``RETRY_EVERY_S``, while the server is not there (refused, shutting down,
starting up), until ``ROBODATA_PG_CONNECT_WAIT_S`` seconds (default ``CONNECT_WAIT_S``) have
passed since the process's first failed connect of the outage; after that, connects fail as
before until one succeeds. A refused login (wrong password, no such role or database) fails at
once.

The webserver's pooled connections are checked before use. It keeps one PostgreSQL connection
per storage open; after PostgreSQL restarts, each is dead and the first GraphQL request on it
failed. dagster-postgres has no option for SQLAlchemy's ``pool_pre_ping``, so every connection
pool that keeps connections (a ``QueuePool``: the webserver's; the daemon and the run workers
open a connection per use, with no pool to go stale) is given SQLAlchemy's public "pessimistic"
disconnect handling: at checkout the connection is pinged, and a dead one is replaced by a
fresh one (which waits as above).

Only public parts: dagster-postgres's ``DagsterPostgresStorage`` with its own config and
``__init__`` (``storage: custom`` names this module, so every process of the instance imports
it) and SQLAlchemy's events: the pool's ``checkout`` and the dialect's ``do_connect`` (which
makes the connection itself, as SQLAlchemy documents; dagster-postgres's ``auth_provider``
token hook is a later ``do_connect`` listener and would be skipped: this storage is for a
password, as deploy/dagster.yaml configures it).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import sqlalchemy
from dagster_postgres import DagsterPostgresStorage
from sqlalchemy.pool import QueuePool

_log = logging.getLogger(__name__)
CONNECT_WAIT_S = 60.0  # a restart, or a failover of 10-30 s, with room for a loaded machine
RETRY_EVERY_S = 1.0
_unreachable_since: float | None = None  # time.monotonic() of this process's first failed connect in an outage
# A connect that no wait can fix: PostgreSQL answered and refused the login.
_REFUSED_LOGIN = (
    "authentication failed",
    "no pg_hba.conf entry",
    "does not exist",
    "no password supplied",
    "permission denied",
)


def connect_wait_s() -> float:
    """How long a connect waits for PostgreSQL: ``ROBODATA_PG_CONNECT_WAIT_S``, else ``CONNECT_WAIT_S``."""
    return float(os.environ.get("ROBODATA_PG_CONNECT_WAIT_S") or CONNECT_WAIT_S)


def _connect_when_up(dialect: Any, _record: Any, cargs: list[Any], cparams: dict[str, Any]) -> Any:
    global _unreachable_since
    if dialect.name != "postgresql":
        return None  # SQLAlchemy connects as usual
    while True:
        try:
            connection = dialect.connect(*cargs, **cparams)
        except dialect.loaded_dbapi.OperationalError as exc:
            reason = " ".join(str(exc).split())
            if any(fragment in reason for fragment in _REFUSED_LOGIN):
                raise
            now = time.monotonic()
            if _unreachable_since is None:
                _unreachable_since = now
                _log.warning("PostgreSQL is not answering; waiting up to %.0f s for it (%s)", connect_wait_s(), reason)
            # The wait is counted from the outage's first failed connect, whoever retries after it
            # (dagster-postgres retries each failed connect 5 times: 5 waits otherwise).
            left = _unreachable_since + connect_wait_s() - now
            if left <= 0:
                raise
            time.sleep(min(RETRY_EVERY_S, left))
            continue
        if _unreachable_since is not None:
            _log.warning("PostgreSQL answers again")
            _unreachable_since = None
        return connection


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
# On the Engine class: every engine's dialect (dagster-postgres makes its engines itself).
if not sqlalchemy.event.contains(sqlalchemy.engine.Engine, "do_connect", _connect_when_up):
    sqlalchemy.event.listen(sqlalchemy.engine.Engine, "do_connect", _connect_when_up)


class PostgresStorage(DagsterPostgresStorage):
    """``storage: postgres`` whose connects wait out a PostgreSQL restart (up to
    ``ROBODATA_PG_CONNECT_WAIT_S``, 60 s by default) and whose webserver connections survive it;
    the same config (``postgres_db`` or ``postgres_url``), under ``storage: custom`` in dagster.yaml."""
