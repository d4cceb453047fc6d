"""Benchmark harness and the LeRobot-layout baseline.

>>> from robodata.bench import run_benchmark  # doctest: +SKIP
>>> run_benchmark("bench_out", small=True).table_markdown  # doctest: +SKIP
"""

_HARNESS = ("BenchmarkConfig", "BenchmarkResult", "run_benchmark")


def __getattr__(name: str):
    # Imported on first use: the harness pulls in matplotlib and the exporter, which the CLI's
    # other commands (and robodata.bench.quality users) should not pay for.
    if name in _HARNESS:
        from robodata.bench import harness

        return getattr(harness, name)
    raise AttributeError(f"module 'robodata.bench' has no attribute {name!r}")


__all__ = list(_HARNESS)
