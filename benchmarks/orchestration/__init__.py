"""Benchmarks of the Dagster layer itself: how long an upload takes to land (``robodata bench
landing``), what an upload-sensor tick costs at thousands of uploads (``robodata bench sensor``)
and per-episode against batch partitions (``robodata bench batches``). They drive ``robodata.orchestration.defs``.
``cluster`` starts the cluster in deploy/ as docs/cluster.md does (the cluster tests' starter too), and
``cluster_drills`` measures its recovery from killed parts (``robodata bench cluster-drills``)."""
