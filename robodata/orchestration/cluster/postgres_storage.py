"""dagster-postgres's storage, with the webserver's pooled connections checked before use.

The webserver keeps one PostgreSQL connection per storage open; after PostgreSQL restarts, each
is dead and the first GraphQL request on it failed. Here every checkout pings the connection
first and takes a fresh one if the ping fails (SQLAlchemy's "pessimistic" disconnect handling);
while PostgreSQL is down, dagster-postgres's own connect retry (about 6 s) makes requests wait.
The daemon and the run workers open a connection per use already (no pool to go stale).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy
from dagster_postgres import DagsterPostgresStorage
from dagster_postgres.event_log import PostgresEventLogStorage
from dagster_postgres.run_storage import PostgresRunStorage
from dagster_postgres.schedule_storage import PostgresScheduleStorage
from dagster_postgres.utils import get_token_provider_from_config, pg_url_from_config


def _ping(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    try:
        with dbapi_connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # any failure: the pool discards it and connects again
        raise sqlalchemy.exc.DisconnectionError(str(exc)) from exc


class _PingBeforeUse:
    _engine: sqlalchemy.engine.Engine

    def optimize_for_webserver(self, statement_timeout: int, pool_recycle: int, max_overflow: int) -> None:
        super().optimize_for_webserver(statement_timeout, pool_recycle, max_overflow)  # type: ignore[misc]
        sqlalchemy.event.listen(self._engine, "checkout", _ping)


class _RunStorage(_PingBeforeUse, PostgresRunStorage):
    pass


class _EventLogStorage(_PingBeforeUse, PostgresEventLogStorage):
    pass


class _ScheduleStorage(_PingBeforeUse, PostgresScheduleStorage):
    pass


class PostgresStorage(DagsterPostgresStorage):
    """``storage: postgres`` whose webserver connections survive a PostgreSQL restart; the same
    config (``postgres_db`` or ``postgres_url``), under ``storage: custom`` in dagster.yaml."""

    def __init__(
        self,
        postgres_url: str,
        should_autocreate_tables: bool = True,
        inst_data: Any = None,
        token_provider: Any = None,
    ):
        self.postgres_url = postgres_url
        self.should_autocreate_tables = should_autocreate_tables
        self._inst_data = inst_data
        self._run_storage = _RunStorage(postgres_url, should_autocreate_tables, token_provider=token_provider)
        self._event_log_storage = _EventLogStorage(
            postgres_url, should_autocreate_tables, token_provider=token_provider
        )
        self._schedule_storage = _ScheduleStorage(postgres_url, should_autocreate_tables, token_provider=token_provider)
        # DagsterStorage's __init__, past DagsterPostgresStorage's, which would open storages of its own
        super(DagsterPostgresStorage, self).__init__()

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Any) -> PostgresStorage:
        return cls(
            inst_data=inst_data,
            postgres_url=pg_url_from_config(config_value),
            should_autocreate_tables=config_value.get("should_autocreate_tables", True),
            token_provider=get_token_provider_from_config(config_value),
        )
