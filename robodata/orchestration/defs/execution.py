"""How every run executes its steps, whichever way it starts (the sensor, a UI or GraphQL
launch, a backfill, ``dagster asset materialize``): one executor for the whole code location.

In-process: a run's steps (an episode's three assets and its checks) run one after another in
the run's own process. The multiprocess default starts a Python process per step, which costs
more than a short episode's whole ingest (a backfill from the UI took ~5x longer per episode).
Parallelism comes from runs: one per partition, side by side, bounded by the run queue
(``max_concurrent_runs``), spread over machines by the run launcher, and the ``video_encode``
pool bounds concurrent encodes across all of them.
"""

import dagster as dg

EXECUTOR = dg.in_process_executor

defs = dg.Definitions(executor=EXECUTOR)
