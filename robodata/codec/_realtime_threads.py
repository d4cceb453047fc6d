"""Keep an encoder from leaving this process's threads real-time.

SVT-AV1 (``libsvtav1``, LeRobot's default encoder, in PyAV's wheel) sets the thread that opens an
encoder to ``SCHED_FIFO`` at priority 99 when the process runs as root (``svt_av1_enc_init_handle``
calls ``pthread_setschedparam``), and the encoder's own threads, created next, inherit it. The
thread stays real-time after the encoder closes, and so does every process it starts: a
CPU-bound real-time process takes a core from everything else on the machine (the Linux default
leaves others 5%). In this project's test suite, one export to AV1 made a test worker and every
server it started later real-time, and the cluster test's walk-through took 450-650 s instead
of 105 s beside them. Containers often run as root.

``no_realtime_threads_left()`` puts every thread that became real-time inside its block back to
the ordinary policy when the block ends; threads that were real-time before are left alone.
Linux only (elsewhere it does nothing: SVT-AV1 sets no policy there).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

_REALTIME = {getattr(os, "SCHED_FIFO", -1), getattr(os, "SCHED_RR", -1)}
_TASKS = "/proc/self/task"


def realtime_threads() -> set[int]:
    """Thread ids of this process whose scheduling policy is real-time (FIFO or round-robin)."""
    if not os.path.isdir(_TASKS):
        return set()
    found = set()
    for entry in os.listdir(_TASKS):
        try:
            if os.sched_getscheduler(int(entry)) in _REALTIME:
                found.add(int(entry))
        except (ProcessLookupError, PermissionError):
            continue  # the thread ended meanwhile
    return found


@contextlib.contextmanager
def no_realtime_threads_left() -> Iterator[None]:
    """Around an encoder's open: threads that became real-time in the block are ordinary again.

    >>> import av
    >>> from fractions import Fraction
    >>> with no_realtime_threads_left():
    ...     encoder = av.Codec("libsvtav1", "w").create("video")
    ...     encoder.width, encoder.height, encoder.pix_fmt = 64, 48, "yuv420p"
    ...     encoder.time_base = Fraction(1, 30)
    ...     encoder.open()
    >>> realtime_threads()
    set()
    """
    before = realtime_threads()
    try:
        yield
    finally:
        for tid in realtime_threads() - before:
            with contextlib.suppress(ProcessLookupError):
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
