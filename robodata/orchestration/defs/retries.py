"""Storage hiccups retried within the step, and a terminated run left to stop.

Dagster's ``RetryPolicy`` retries whatever a step raises, including the interrupt that
terminating a run raises in its running step (``op_execution_error_boundary`` turns it into a
retry request); with the in-process executor the run then went on as if nothing had been asked.
So the assets that talk to storage carry no ``RetryPolicy``: ``storage_retries`` requests the
retry itself (``dg.RetryRequested``, on ``STORAGE_RETRY``'s schedule) for an error that may pass
on a second try, and lets the interrupt through, so Dagster ends a terminated run CANCELED.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import dagster as dg

# A storage hiccup (a timeout, a 503, a dropped connection: StorageError) or an unexpected error
# is retried after 3, 6 and 12 s (+-50% jitter, so parallel runs do not retry in step); a bad
# upload (``lineage.failure``: a Failure that does not allow retries) fails at once.
STORAGE_RETRY = dg.RetryPolicy(max_retries=3, delay=3, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)

Step = TypeVar("Step", bound=Callable[..., Any])


def storage_retries(step: Step) -> Step:
    """Decorate an asset's function (under ``@dg.asset``) to retry it as ``STORAGE_RETRY`` says,
    except on a ``dg.Failure(allow_retries=False)`` (bad input), a Dagster framework error, or an
    interrupt (terminate, Ctrl-C: a ``BaseException``, never caught here)."""

    @functools.wraps(step)
    def retried(context: dg.AssetExecutionContext, *args: Any, **kwargs: Any) -> Any:
        try:
            return step(context, *args, **kwargs)
        except dg.Failure as exc:
            if not exc.allow_retries:
                raise
            cause: Exception = exc
        except (dg.DagsterError, dg.RetryRequested):
            raise
        except Exception as exc:
            cause = exc
        # Past max_retries Dagster fails the step, keeping the cause's message and metadata.
        raise dg.RetryRequested(
            max_retries=STORAGE_RETRY.max_retries,
            seconds_to_wait=STORAGE_RETRY.calculate_delay(context.retry_number + 1),
        ) from cause

    return retried  # type: ignore[return-value]
