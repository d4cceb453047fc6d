"""Benchmarks of the Dagster layer itself: how long an upload takes to land (``robodata
bench-landing``) and what an upload-sensor tick costs at thousands of uploads (``robodata
bench-sensor``). They sit above ``defs`` (they drive it), unlike ``robodata.bench``, which
``defs`` uses for the ``benchmark_report`` asset."""
