"""Forked DataLoader workers beside Lance, which is not fork-safe once a process has used it.

A process that has used Lance holds its runtime's threads; a child forked from it inherits the
runtime's state without the threads, and its next Lance read can crash (measured: 3 of 5 forked
children of such a process died of SIGSEGV re-opening the dataset). A process that has only
imported Lance forks safely (20 of 20). So a dataset that wants to work with a plain
``DataLoader(num_workers=N)`` (fork, the default on Linux) does its Lance reads in a short-lived
helper process (``run_without_lance``) and opens Lance lazily in each worker; a worker forked
after all from a process that had used Lance is told so (``forked_from_lance``) before it reads.

>>> run_without_lance(lambda: sum(range(4)))  # in a forked helper where this process has not used Lance
6
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import warnings
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

_used_in: int | None = None  # pid of the process that used Lance through robodata's torch datasets
_at_fork = False  # set in the parent just before a fork; the child inherits it
_forked_from_lance = False


def lance_thread_count() -> int:
    """Lance runtime threads alive in this process (Linux; 0 where /proc is not available)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    count = 0
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                name = comm.read().strip()
        except OSError:
            continue
        count += name.startswith(("lance", "tokio"))
    return count


def lance_used() -> bool:
    """Whether this process has used Lance (so children forked from it are unsafe)."""
    return _used_in == os.getpid() or lance_thread_count() > 0


def mark_lance_used() -> None:
    """Record that this process is about to use Lance itself."""
    global _used_in
    _used_in = os.getpid()


def forked_from_lance() -> bool:
    """In a forked child: whether its parent had used Lance when it forked."""
    return _forked_from_lance


_quiet: tuple | None = None  # the filter hiding Lance's fork warning during a safe fork


def _before_fork() -> None:
    """Runs before Lance's own at-fork hook (registered later, so called first): remember whether
    the fork is safe, and when it is, keep Lance from warning that it is not."""
    global _at_fork, _quiet
    _at_fork = lance_used()
    if not _at_fork:
        warnings.filterwarnings("ignore", message="lance is not fork-safe")
        _quiet = warnings.filters[0]


def _after_fork(in_child: bool) -> None:
    global _forked_from_lance, _quiet
    if in_child:
        _forked_from_lance = _at_fork
    if _quiet is not None:
        try:
            warnings.filters.remove(_quiet)  # type: ignore[attr-defined]  # a list at run time
        except ValueError:
            pass
        _quiet = None
        warnings._filters_mutated()  # type: ignore[attr-defined]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=lambda: _after_fork(False),
        after_in_child=lambda: _after_fork(True),
    )


class ForkedAfterLanceError(RuntimeError):
    """A DataLoader worker forked from a process that had used Lance. Its message is always the
    one line it was made with, also when DataLoader re-raises it in the training process (which
    calls the class with its own multi-line text)."""

    text = "this process was forked after Lance was used"

    def __init__(self, *_: object, **__: object) -> None:
        super().__init__(self.text)


def run_without_lance(function: Callable[[], T]) -> T:
    """``function()`` in a short-lived forked child when this process has not used Lance, so
    that it stays safe to fork (DataLoader workers); its result comes back pickled, its
    exceptions are raised here. Where this process has used Lance already, or cannot fork,
    ``function()`` runs here."""
    if not hasattr(os, "fork") or lance_used():
        mark_lance_used()
        return function()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()  # safe: no Lance here yet (and _before_fork keeps Lance from saying otherwise)
    if pid == 0:  # the helper: read, send, leave without running the parent's exit handlers
        try:
            os.close(read_end)
            try:
                result: tuple[bool, object] = (True, function())
            except BaseException as exc:  # every failure goes back to the caller
                result = (False, exc)
            with os.fdopen(write_end, "wb") as out:
                try:
                    pickle.dump(result, out, protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as exc:  # an unpicklable exception: its text
                    pickle.dump((False, RuntimeError(f"{type(exc).__name__}: {exc}")), out)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as inp:
        data = inp.read()
    _, status = os.waitpid(pid, 0)
    if not data:
        reason = (
            f"signal {signal.Signals(-os.waitstatus_to_exitcode(status)).name}" if os.WIFSIGNALED(status) else status
        )
        raise RuntimeError(f"the helper process reading the dataset ended without a result ({reason})")
    ok, value = pickle.loads(data)
    if not ok:
        raise value
    return value
