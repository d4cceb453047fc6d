"""The episode checks (``ingest/checks.py``) with batch partitioning: one step runs them on every
episode of the batch and reports each check once for the batch."""

import dagster as dg

from robodata.integrity._episode_checks import IntegrityResult
from robodata.orchestration.defs.batches.batches import upload_batches
from robodata.orchestration.defs.ingest.checks import CHECK_DESCRIPTIONS, _episode_outcomes, _result, _specs
from robodata.orchestration.defs.resources import PER_BATCH, DatasetStore, with_partitioning
from robodata.storage._uploads import list_complete_uploads


@dg.multi_asset_check(
    specs=_specs(upload_batches),
    description="The same checks on every episode of the batch (batch partitioning), in one step.",
)
def batch_integrity(context: dg.AssetCheckExecutionContext, store: DatasetStore):
    uploads = list_complete_uploads(store.batch_uri(context.partition_key), store.storage_options())
    checks = [_episode_outcomes(store, upload.uri) for upload in uploads]
    for name in CHECK_DESCRIPTIONS:
        # The dataset-wide check once; the others on each episode of the batch.
        outcomes = [checks[0][name]()] if checks and name == "schema_metadata_complete" else [c[name]() for c in checks]
        yield _result(store, name, combined(outcomes, [u.episode_id for u in uploads]))


def combined(outcomes: list[IntegrityResult], episodes: list[str]) -> IntegrityResult:
    """One result for a batch: passed when every episode's passed; the failures described.

    >>> combined([IntegrityResult(True, "ok"), IntegrityResult(False, "episode 1: 2 rows")], ["a", "b"]).description
    '1 of 2 episodes failed: episode 1: 2 rows'
    """
    failed = [o.description for o in outcomes if not o.passed]
    if not outcomes:
        return IntegrityResult(False, "the batch holds no complete upload", {"episodes_checked": 0})
    details = {"episodes_checked": len(outcomes), "episodes_failed": len(failed)}
    if failed:
        return IntegrityResult(
            False, f"{len(failed)} of {len(outcomes)} episodes failed: " + "; ".join(failed[:5]), details
        )
    if len(outcomes) == 1:
        return IntegrityResult(True, outcomes[0].description, details | dict(outcomes[0].details))
    more = f" and {len(episodes) - 5} more" if len(episodes) > 5 else ""
    return IntegrityResult(True, f"all {len(outcomes)} episodes passed: {', '.join(episodes[:5])}{more}", details)


batch_checks = [batch_integrity]

defs = with_partitioning(PER_BATCH, dg.Definitions(asset_checks=batch_checks))
