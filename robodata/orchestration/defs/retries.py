"""Transient storage failures retried within the step; everything else fails at once.

Dagster's ``RetryPolicy`` retries whatever a step raises, including the interrupt that
terminating a run raises in its running step (``op_execution_error_boundary`` turns it into a
retry request); with the in-process executor the run then went on as if nothing had been asked.
So the assets that talk to storage carry no ``RetryPolicy``: ``storage_retries`` requests the
retry itself (``dg.RetryRequested``, on ``STORAGE_RETRY``'s schedule) for a failure
``lineage.failure`` classified as transient (robodata's ``StorageError``: a timeout, a 503, a
dropped connection; a file not found yet), and only for that. Bad input fails once with its
one-line reason logged first; an unexpected error (a bug) fails once with its whole stack; the
interrupt goes through, so Dagster ends a terminated run CANCELED.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import dagster as dg

# A transient storage failure is retried after 3, 6 and 12 s (+-50% jitter, so parallel runs do
# not retry in step).
STORAGE_RETRY = dg.RetryPolicy(max_retries=3, delay=3, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)

Step = TypeVar("Step", bound=Callable[..., Any])


def storage_retries(step: Step) -> Step:
    """Decorate an asset's function (under ``@dg.asset``) to retry it as ``STORAGE_RETRY`` says
    when it raises a retryable ``dg.Failure`` (``lineage.failure`` of a transient storage error).
    A non-retryable one (bad input) is logged as one ERROR line, the reason, before the step
    fails, so the run's log shows the reason above Dagster's own "Steps failed" summary and
    stack; any other exception propagates untouched (no retry)."""

    @functools.wraps(step)
    def retried(context: dg.AssetExecutionContext, *args: Any, **kwargs: Any) -> Any:
        try:
            return step(context, *args, **kwargs)
        except dg.Failure as exc:
            if not exc.allow_retries:
                context.log.error(exc.description or "")
                raise
            cause = exc
        # Past max_retries Dagster fails the step, keeping the cause's message and metadata.
        raise dg.RetryRequested(
            max_retries=STORAGE_RETRY.max_retries,
            seconds_to_wait=STORAGE_RETRY.calculate_delay(context.retry_number + 1),
        ) from cause

    return retried  # type: ignore[return-value]
