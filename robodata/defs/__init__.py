"""Dagster: assets, partitions, checks, sensors, jobs and the dataset-store resource, a folder
per domain (ingest/, batches/, labels/, training/, maintenance/, interop/, reports/), loaded
by Dagster's defs-folder autoloading (``robodata.definitions``, ``dg``).

Thin by design: every asset calls the robodata library; no format logic lives here, and the
plain library code the sensor and the CLI use (the upload queue in ``robodata.ingest.upload_queue``,
the instance helpers in ``robodata.dagster_home``) lives outside. Each module exposes at most
one ``defs = dg.Definitions(...)``; shared helpers (resources, lineage, encoding config) sit at
this level.
"""

import warnings

import dagster as dg

# The defs-folder loader reads each folder's __init__ and each helper module (no `defs` of its
# own) through a preview function; that is Dagster's loading, not ours, so say nothing on load.
warnings.filterwarnings(
    "ignore", message=r"Function `load_definitions_from_modules?` is currently in preview", category=dg.PreviewWarning
)
