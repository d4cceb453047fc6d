"""Dagster: assets, partitions, checks, sensor, jobs and the dataset-store resource.

Thin by design: every asset calls the robodata library; no format logic lives here. Each module
exposes ``defs = dg.Definitions(...)`` and ``robodata/definitions.py`` merges them.
"""
