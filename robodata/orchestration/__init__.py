"""Orchestration with Dagster (the ``dagster`` extra), the only part of robodata that imports it.

- ``definitions``: the code location (``workspace.yaml``, ``dg``, ``dagster -m``): the assets,
  checks, sensors and jobs of ``defs/`` (a folder per domain), with per-episode or per-batch
  partitioning chosen there, once.
- ``cluster``: what deploy/dagster.yaml names for a cluster (storage, run launcher) and
  ``deploy/cluster.sh wait``.
- the instance (``write_dagster_home``, ``prepare_dagster_home``, the shipped ``dagster.yaml``), the ``robodata``
  commands that act on it, the upload sensor's plan and the demo, in private modules; their
  public names are importable from here, loaded on first use so that importing this package
  (as Dagster does to load ``cluster``) loads no definitions.
"""

from __future__ import annotations

import importlib
from typing import Any

# public name -> the private module defining it
_PUBLIC = {
    "INSTANCE_CONFIG": "_instance",
    "prepare_dagster_home": "_instance",
    "write_dagster_home": "_instance",
    "home_instance": "_instance",
    "migrate_partitioning": "_repartition",
    "register_uploads_from_cli": "_cli_commands",
    "migrate_partitioning_from_cli": "_cli_commands",
    "register_import_partitions_from_cli": "_cli_commands",
    "run_demo": "_demo",
    "run_named_job": "_demo",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_PUBLIC[name]}"), name)
