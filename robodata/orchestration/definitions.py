"""The Dagster entry point (workspace.yaml, ``dg``, ``dagster dev``, ``dagster ... -m
robodata.orchestration.definitions``): Dagster's documented ``dg.load_from_defs_folder`` over
``defs/``, a folder per domain.

The partitioning is chosen inside the defs: ``defs/ingest/`` (per episode) and ``defs/batches/``
(per upload batch) define the same asset keys, and each of their modules' ``defs`` is a
``@dg.definitions`` function (``resources.with_partitioning``) that builds its definitions only
under its own ``$ROBODATA_PARTITIONING``, read when the code location loads (a partitions
definition is fixed for its life). The project config it reads is the package's own dg.toml, so
a wheel install loads the same definitions as a checkout.
"""

from pathlib import Path

import dagster as dg


@dg.definitions
def defs() -> dg.Definitions:
    """Every definition of the code location, with ``$ROBODATA_PARTITIONING``'s ingestion."""
    return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
