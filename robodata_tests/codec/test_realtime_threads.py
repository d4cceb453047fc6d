"""SVT-AV1 run as root makes the thread that opens it (and the encoder's threads) SCHED_FIFO 99,
for good, and every process that thread starts afterwards. robodata's AV1 writer (the LeRobot
export's) leaves every thread, and what it starts, at the ordinary policy."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from fractions import Fraction

import av
import numpy as np

from robodata.codec._realtime_threads import no_realtime_threads_left, realtime_threads
from robodata.lerobot._video import SharedVideoWriter

CHILD_POLICY = [sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"]


def in_a_thread(work: Callable[[], object]) -> object:
    """``work()``'s result, run in a thread of its own; any thread it left real-time is made
    ordinary afterwards, so a failure here does not slow the rest of the suite."""
    result: dict[str, object] = {}
    with no_realtime_threads_left():
        thread = threading.Thread(target=lambda: result.update(value=work()))
        thread.start()
        thread.join()
    return result["value"]


def test_svtav1_opened_as_root_leaves_the_thread_and_its_children_real_time():
    """Why the guard exists. Should SVT-AV1 stop doing this, this fails and the guard can go."""

    def open_bare_encoder() -> tuple[int, int, str]:
        encoder = av.Codec("libsvtav1", "w").create("video")
        encoder.width, encoder.height, encoder.pix_fmt = 64, 48, "yuv420p"
        encoder.time_base = Fraction(1, 30)
        encoder.open()
        child = subprocess.run(CHILD_POLICY, capture_output=True, text=True, check=True).stdout.strip()
        return os.sched_getscheduler(0), len(realtime_threads()), child

    policy, realtime, child = in_a_thread(open_bare_encoder)
    if os.geteuid() == 0:
        assert policy == os.SCHED_FIFO and realtime > 1 and child == str(os.SCHED_FIFO)
    else:
        assert policy == os.SCHED_OTHER and realtime == 0 and child == str(os.SCHED_OTHER)


def test_the_av1_writer_leaves_no_thread_real_time(tmp_path):
    def write() -> tuple[int, set[int], str, int]:
        with SharedVideoWriter(str(tmp_path / "file-000.mp4"), 64, 48, 30) as video:
            for shade in range(4):
                video.add(np.full((48, 64, 3), 60 * shade, np.uint8))
            encoding = os.sched_getscheduler(0), realtime_threads()  # the encoder's threads alive
            child = subprocess.run(CHILD_POLICY, capture_output=True, text=True, check=True).stdout.strip()
        return *encoding, child, video.frames

    policy, realtime, child, frames = in_a_thread(write)
    assert (policy, realtime, child) == (os.SCHED_OTHER, set(), str(os.SCHED_OTHER))
    with av.open(str(tmp_path / "file-000.mp4")) as container:
        assert container.streams.video[0].codec.canonical_name == "av1"
        assert sum(1 for _ in container.decode(video=0)) == frames == 4
