"""Orchestration with Dagster (the ``dagster`` extra), the only part of robodata that imports it.

- ``definitions``: the code location (``workspace.yaml``, ``dg``, ``dagster -m``): the assets,
  checks, sensors and jobs of ``defs/`` (a folder per domain), with per-episode or per-batch
  partitioning chosen there, once.
- ``cluster``: what deploy/dagster.yaml names for a cluster (storage, run launcher) and
  ``deploy/cluster.sh wait``.
- the instance (``write_dagster_home``, ``prepare_dagster_home``, the shipped ``dagster.yaml``),
  the ``robodata`` commands that act on it, the upload sensor's plan (its cursor, ``UploadCursor``, and
  its settings, ``UploadSensorSettings``)
  and the demo, in private modules; their public names are importable from here, loaded on first use so that
  importing this package (as Dagster does to load ``cluster``) loads no definitions.
"""

from __future__ import annotations

from robodata._lazy_exports import lazy_exports

# public name -> the module defining it (imported on first use)
_EXPORTS = {
    "INSTANCE_CONFIG": "robodata.orchestration._instance",
    "prepare_dagster_home": "robodata.orchestration._instance",
    "write_dagster_home": "robodata.orchestration._instance",
    "home_instance": "robodata.orchestration._instance",
    "migrate_partitioning": "robodata.orchestration._repartition",
    "register_uploads_from_cli": "robodata.orchestration._cli_commands",
    "migrate_partitioning_from_cli": "robodata.orchestration._cli_commands",
    "register_import_partitions_from_cli": "robodata.orchestration._cli_commands",
    "run_demo": "robodata.orchestration._demo",
    "run_named_job": "robodata.orchestration._demo",
    "UploadCursor": "robodata.orchestration._upload_queue",
    "UploadSensorSettings": "robodata.orchestration._upload_queue",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
