"""robodata's benchmarks: outside the wheel, in the source checkout only. Run a scenario with
``python -m benchmarks SCENARIO ...`` or ``robodata bench SCENARIO ...`` (``__main__`` lists them);
the ``benchmark_report`` Dagster asset calls the report harness when this package is present.

- the report against the LeRobot v3 layout: ``harness``, ``scenarios``, ``sweep``, ``report``;
- ``peers/``: against the real LeRobot 0.6.1 and LanceDBDataset, each in its own process;
- ``readpath``, ``loader``, ``upkeep_scale``: the read path, the training loader, upkeep at scale;
- ``orchestration/``: the Dagster layer itself (landing time, sensor ticks, batch partitions).

>>> from benchmarks import run_benchmark  # doctest: +SKIP
>>> run_benchmark("bench_out", small=True).table_markdown  # doctest: +SKIP
"""

_HARNESS = ("BenchmarkConfig", "BenchmarkResult", "run_benchmark")


def __getattr__(name: str):
    # Imported on first use: the harness pulls in matplotlib and the exporter, which the CLI's
    # other scenarios should not pay for.
    if name in _HARNESS:
        from benchmarks import harness

        return getattr(harness, name)
    raise AttributeError(f"module 'benchmarks' has no attribute {name!r}")


__all__ = list(_HARNESS)
