"""Dagster's definitions-state storage, whose read waits out a PostgreSQL outage.

Every code server reads the latest "defs state" (the versions of state-backed components) from
the run storage before it loads the definitions; the daemon starts a fresh code server every 60 s
(Dagster's fixed workspace reload). With PostgreSQL down, that read failed after
dagster-postgres's ~6 s of connect retries, the code location loaded as an error, and the sensors
stayed off until the next reload: up to a minute after PostgreSQL was back. This storage is
Dagster's own (``dagster.UPathDefsStateStorage``: the same files, the same pointer in the run
storage) and retries that read for up to ``wait_seconds``, so a code server started during an
outage loads as soon as PostgreSQL answers, with the state it would have read anyway. Named in
deploy/dagster.yaml (``defs_state_storage``); public parts only.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any, Self

import dagster as dg
import sqlalchemy
from dagster_postgres.utils import DagsterPostgresException

_log = logging.getLogger(__name__)
# What dagster-postgres raises once its own connect retries are spent, and what SQLAlchemy raises
# for a connection refused or lost (dagster-postgres does not wrap every query).
_UNREACHABLE = (DagsterPostgresException, sqlalchemy.exc.OperationalError)
RETRY_EVERY_S = 2.0


class PatientDefsStateStorage(dg.UPathDefsStateStorage):
    """``dagster.UPathDefsStateStorage`` whose ``get_latest_defs_state_info`` retries while the
    instance's storage is unreachable, for up to ``wait_seconds`` (then raises the last error).
    ``base_path`` defaults to Dagster's own folder, ``$DAGSTER_HOME/storage/defs_state``."""

    def __init__(self, base_path: Any, wait_seconds: float, inst_data: Any = None):
        super().__init__(base_path=base_path, inst_data=inst_data)
        self.wait_seconds = wait_seconds

    @classmethod
    def config_type(cls) -> dg.Shape:
        return dg.Shape(
            {
                "base_path": dg.Field(dg.StringSource, is_required=False),
                "storage_options": dg.Field(dg.Permissive(), is_required=False),
                "wait_seconds": dg.Field(dg.IntSource, is_required=False, default_value=120),
            }
        )

    @classmethod
    def from_config_value(cls, inst_data: Any, config_value: Mapping[str, Any]) -> Self:
        from upath import UPath  # Dagster's own dependency, as in the base class

        base = config_value.get("base_path") or os.path.join(os.environ["DAGSTER_HOME"], "storage", "defs_state")
        return cls(
            base_path=UPath(base, **config_value.get("storage_options", {})),
            wait_seconds=config_value["wait_seconds"],
            inst_data=inst_data,
        )

    def get_latest_defs_state_info(self) -> Any:  # DefsStateInfo | None
        deadline = time.monotonic() + self.wait_seconds
        warned = False
        while True:
            try:
                return super().get_latest_defs_state_info()
            except _UNREACHABLE as exc:
                if time.monotonic() + RETRY_EVERY_S > deadline:
                    raise
                if not warned:
                    _log.warning(
                        "the instance's storage is unreachable; waiting up to %s s for it before loading "
                        "the definitions (%s)", self.wait_seconds, str(exc).splitlines()[0],
                    )  # fmt: skip
                    warned = True
                time.sleep(RETRY_EVERY_S)
