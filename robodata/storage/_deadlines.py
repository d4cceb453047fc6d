"""Every storage call has a deadline: a store that accepts connections and never answers costs
the user at most ``ROBODATA_STORAGE_TIMEOUT_S`` seconds per step, then StorageUnreachableError
naming the store and the step; never an endless wait.

Two layers: each request carries object_store / botocore timeouts (so nothing waits forever,
even in a thread nobody waits for), and each Lance call on a remote store runs under a wall-clock
deadline (``call_with_deadline``), because Lance retries some requests on its own.

>>> storage_timeout_s({"robodata_timeout_s": "5"})
5.0
"""

from __future__ import annotations

import contextvars
import math
import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

DEFAULT_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 5.0  # a store that does not even accept a connection fails fast
TIMEOUT_ENV = "ROBODATA_STORAGE_TIMEOUT_S"
# A robodata key in storage options (Lance and fsspec never see it): the deadline for this store.
TIMEOUT_OPTION = "robodata_timeout_s"

T = TypeVar("T")

# The step (action, uri) the current thread is in, set by storage_step: a deadline names it.
current_step: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "robodata_storage_step", default=None
)


def storage_timeout_s(storage_options: dict | None = None) -> float:
    """The deadline in seconds: ``storage_options["robodata_timeout_s"]``, else
    ``$ROBODATA_STORAGE_TIMEOUT_S``, else 60."""
    raw = (storage_options or {}).get(TIMEOUT_OPTION) or os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT_S
    return positive_seconds(raw, f"{TIMEOUT_ENV} / {TIMEOUT_OPTION}")


def positive_seconds(raw: object, setting: str) -> float:
    """``raw`` (a setting's value) as a positive number of seconds; ValueError naming ``setting``.

    >>> positive_seconds("2.5", "ROBODATA_X_S")
    2.5
    """
    try:
        value = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{setting} must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{setting} must be positive, got {raw!r}")
    return value


def lance_options(uri: str, storage_options: dict | None) -> dict | None:
    """``storage_options`` as Lance takes them for ``uri``: on a remote store, per-request
    timeouts filled in from the deadline (unless given); robodata's own keys removed."""
    from robodata.storage._uris import http_endpoint_allowed, is_remote

    if not is_remote(uri):
        return None if storage_options is None else {k: v for k, v in storage_options.items() if k != TIMEOUT_OPTION}
    # An http:// endpoint (given, or AWS_ENDPOINT_URL's) works without AWS_ALLOW_HTTP.
    options = {k: v for k, v in http_endpoint_allowed(storage_options).items() if k != TIMEOUT_OPTION}
    timeout = storage_timeout_s(storage_options)
    options.setdefault("timeout", f"{timeout:g}s")
    options.setdefault("connect_timeout", f"{min(CONNECT_TIMEOUT_S, timeout):g}s")
    # object_store gives up retrying once this much time has passed since the first attempt.
    options.setdefault("client_retry_timeout", str(math.ceil(timeout)))
    return options


def botocore_config(storage_options: dict | None) -> dict:
    """s3fs ``config_kwargs``: the same timeouts for listing and reading uploads."""
    timeout = storage_timeout_s(storage_options)
    return {
        "connect_timeout": min(CONNECT_TIMEOUT_S, timeout),
        "read_timeout": timeout,
        "retries": {"max_attempts": 1, "mode": "standard"},
    }


# Storage calls whose caller gave up on them at the deadline (their threads may still be in Lance).
_abandoned: list[threading.Thread] = []


def abandoned_calls() -> int:
    """How many storage calls passed their deadline and are still running in Lance."""
    return sum(thread.is_alive() for thread in _abandoned)


def exit_now_if_abandoned(code: int) -> None:
    """End the process with ``code`` at once (stdio and logging flushed) when a storage call
    passed its deadline and is still running; otherwise return.

    For a command's error exit: the interpreter's normal exit does not wait for the abandoned
    thread, but it does tear down every module (seconds for lance, pyarrow and torch on a busy
    machine) while that thread is still inside Lance, which would hand it a half-finalized
    interpreter when Lance's own retries end. Nothing is left to write after the error was printed.
    """
    if not abandoned_calls():
        return
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or gone: nothing more can be said on it
            pass
    os._exit(code)


class DeadlineExceeded(TimeoutError):
    """A storage call did not finish within its deadline (storage_step turns it into
    StorageUnreachableError naming the store and the step)."""


def call_with_deadline(uri: str, storage_options: dict | None, fn: Callable[..., T], /, *args, **kwargs) -> T:
    """``fn(*args, **kwargs)`` or DeadlineExceeded after the deadline, when ``uri`` is remote
    (a local file system is called directly).

    The call runs in a daemon thread: Lance cannot be interrupted, so past the deadline the
    thread is abandoned and the caller gets the error at once. A daemon thread does not hold up
    the process's exit (nor a DataLoader worker's or a Dagster step's): Lance's own retries on a
    silent store last about six times the deadline (object_store's request timeout, retried by
    Lance), and a non-daemon thread made every command wait for them after printing its error.
    Nothing is lost by leaving: a write not yet committed leaves no version, and a commit that
    did land is reported as "may or may not have landed".
    """
    from robodata.storage._uris import is_remote, safe_uri

    if not is_remote(uri):
        return fn(*args, **kwargs)
    timeout = storage_timeout_s(storage_options)
    outcome: dict[str, object] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc
        finally:
            done.set()

    # The call sees the caller's context (the current storage step, anything a caller tracks
    # per task in a ContextVar), though it runs on another thread.
    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(run,), name="robodata-storage-call", daemon=True)
    thread.start()
    if not done.wait(timeout):
        _abandoned[:] = [t for t in _abandoned if t.is_alive()] + [thread]
        # storage_step names the store and the step; without one, name the store here.
        where = "" if current_step.get() else f" from {safe_uri(uri, storage_options)}"
        raise DeadlineExceeded(f"no answer within {timeout:g} s{where}")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
