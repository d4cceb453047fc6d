"""The Dagster entry point (workspace.yaml, ``dg``, ``dagster dev``, ``dagster ... -m
robodata.orchestration.definitions``), and the one place the partitioning is chosen.

Dagster's defs-folder loading builds every domain folder and module of ``defs/``, as ``dg``
would, except the ingestion of the partitioning not chosen: ``defs/ingest/`` is per episode,
``defs/batches/`` per upload batch, and both define the same asset keys. ``$ROBODATA_PARTITIONING``
is read here, when the code location loads (a partitions definition is fixed for its life).
The tree is built from the imported package, not from pyproject.toml, so a wheel install loads
the same definitions as a checkout.
"""

import warnings
from pathlib import Path

import dagster as dg

from robodata.orchestration import defs as defs_folder
from robodata.orchestration.defs.resources import PER_BATCH, PER_EPISODE, partitioning

DEFS_FOLDER = Path(defs_folder.__file__).parent
# partitioning -> the defs/ folder holding its ingestion (assets, checks, job, sensor)
INGESTION_OF = {PER_EPISODE: "ingest", PER_BATCH: "batches"}


def domains(mode: str) -> list[str]:
    """The parts of ``defs/`` (folders and modules, relative to it) that build the definitions
    with partitioning ``mode``.

    >>> domains("batch")
    ['batches', 'encoding.py', 'execution.py', 'interop', 'labels', 'lineage.py', 'maintenance', 'reports', 'resources.py', 'retries.py', 'training']
    """
    left_out = {folder for other, folder in INGESTION_OF.items() if other != mode}
    return [
        path.name
        for path in sorted(DEFS_FOLDER.iterdir())
        if path.name not in left_out
        and ((path.is_dir() and (path / "__init__.py").is_file()) or (path.suffix == ".py" and path.stem != "__init__"))
    ]


@dg.definitions
def defs() -> dg.Definitions:
    """Every definition of the code location, with ``$ROBODATA_PARTITIONING``'s ingestion."""
    tree = dg.ComponentTree.from_module(defs_module=defs_folder, project_root=DEFS_FOLDER.parents[2])
    with warnings.catch_warnings():
        # The loader reads each folder's __init__ and each helper module (no `defs` of its own)
        # through a preview function; that is Dagster's loading, not ours, so say nothing.
        warnings.filterwarnings(
            "ignore",
            message=r"Function `load_definitions_from_modules?` is currently in preview",
            category=dg.PreviewWarning,
        )
        return dg.Definitions.merge(*(tree.build_defs(part) for part in domains(partitioning())))
