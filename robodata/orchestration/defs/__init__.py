"""Dagster: assets, partitions, checks, sensors, jobs and the dataset-store resource, a folder
per domain (ingest/ per episode, batches/ per upload batch, labels/, training/, maintenance/,
interop/, reports/), loaded by Dagster's defs-folder autoloading in
``robodata.orchestration.definitions``, which leaves out the ingestion of the partitioning not
chosen.

Thin by design: every asset calls the robodata library; no format logic lives here, and what
the sensor and the CLI use beside the definitions (the upload queue's plan, the instance
helpers) sits one level up, in ``robodata.orchestration``'s private modules. Each module exposes
at most one ``defs = dg.Definitions(...)``, unconditionally; shared helpers (resources, lineage,
encoding config) sit at this level.
"""
