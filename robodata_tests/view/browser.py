"""Headless Debian Chromium, driven over its DevTools pipe (JSON over file descriptors 3 and 4,
no extra package): open a page, wait until its scripts say it is ready, read the DOM, take a
screenshot. scripts/install_system.sh installs the `chromium` package.

Waiting on the page itself, not on a fixed time, matters: video decoding runs outside
Chromium's virtual time, so ``--dump-dom --virtual-time-budget`` may read the page too early
on a busy machine.
"""

from __future__ import annotations

import base64
import contextlib
import glob
import io
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

WINDOW = (1280, 1500)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--mute-audio",
    "--autoplay-policy=no-user-gesture-required",
    # A paused video idle for a while has its decoder suspended; on a busy machine that happened
    # between load and the first seek, and the screen kept frame 0 though the seek had ended.
    "--disable-background-media-suspend",
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
]

# Chromium reads DevTools commands on fd 3 and answers on fd 4.
_ONTO_3_AND_4 = (
    "import os, sys; r, w = (os.dup(int(fd)) for fd in sys.argv[1:3]); "
    "os.dup2(r, 3); os.dup2(w, 4); os.set_inheritable(3, True); os.set_inheritable(4, True); "
    "os.execv(sys.argv[3], sys.argv[3:])"
)


class Chromium:
    """One headless Chromium; ``open(url)`` gives a tab sized ``WINDOW`` at device scale 1.

    >>> with Chromium() as browser:
    ...     tab = browser.open("file:///tmp/page.html"); tab.wait_until("document.title !== ''")
    """

    def __init__(self) -> None:
        path = shutil.which("chromium")
        assert path, "Debian's chromium is not installed: run scripts/install_system.sh"
        self._profile = tempfile.TemporaryDirectory(prefix="robodata-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # A small trampoline moves the pipe ends onto fds 3 and 4, then becomes chromium (a
        # preexec_fn would fork this process, which Lance warns about).
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _ONTO_3_AND_4,
                str(to_browser_r),
                str(from_browser_w),
                path,
                *FLAGS,
                f"--user-data-dir={self._profile.name}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            pass_fds=(to_browser_r, from_browser_w),
            # Its own process group, so closing reaches the renderer and utility processes too.
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer, self._next_id = b"", 0

    def call(self, method: str, session: str | None = None, timeout: float = 60, **params) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next_id:
                assert "error" not in answer, f"{method}: {answer['error']}"
                return answer["result"]

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0 and select.select([self._from_browser], [], [], left)[0], "chromium did not answer"
            chunk = os.read(self._from_browser, 1 << 20)
            assert chunk, "chromium exited"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> Tab:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        tab = Tab(self, session)
        tab.call(
            "Emulation.setDeviceMetricsOverride", width=WINDOW[0], height=WINDOW[1], deviceScaleFactor=1, mobile=False
        )
        tab.call("Page.enable")
        tab.call("Page.navigate", url=url)
        return tab

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self, timeout: float = 20) -> None:
        """Stop every Chromium process, then remove the profile. Killing only the browser process
        left its children writing into the profile while it was being removed (CI failed with
        "Directory not empty: 'Default'"), so the whole process group goes, and the profile is
        removed only once none of it is left."""
        try:
            self.call("Browser.close", timeout=5)
        except (AssertionError, OSError):
            pass  # it has already gone, or does not answer: the kill below covers both
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=5)
        group = self._process.pid
        deadline = time.monotonic() + timeout
        while self._process.poll() is None or _running_in_group(group):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            assert time.monotonic() < deadline, f"chromium's processes (group {group}) did not exit"
            time.sleep(0.05)
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._profile.cleanup()


def _running_in_group(group: int) -> bool:
    """Whether a process of ``group`` is still running (zombies, which hold no files, do not count:
    whether they are reaped soon depends on the container's init)."""
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it exited while we looked
        state, process_group = fields[0], int(fields[2])
        if process_group == group and state not in ("Z", "X"):
            return True
    return False


class Tab:
    def __init__(self, browser: Chromium, session: str) -> None:
        self._browser, self._session = browser, session

    def call(self, method: str, **params) -> dict:
        return self._browser.call(method, self._session, **params)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def wait_until(self, expression: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not self.evaluate(expression):
            assert time.monotonic() < deadline, f"the page never satisfied {expression}"
            time.sleep(0.2)

    def dom(self) -> str:
        """The page's DOM as it is now (after its scripts ran)."""
        return self.evaluate("document.documentElement.outerHTML")

    def screenshot(self) -> np.ndarray:
        """The viewport as RGB pixels, ``WINDOW`` CSS pixels at scale 1."""
        data = self.call("Page.captureScreenshot", format="png")["data"]
        return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))

    def settled_screenshot(self, timeout: float = 30) -> np.ndarray:
        """The viewport once it stops changing: two screenshots a moment apart are equal. A seeked
        video's frame reaches the screen some time after its ``seeked`` event, later still on a
        busy machine; a page that never settles fails here."""
        deadline = time.monotonic() + timeout
        previous = self.screenshot()
        while True:
            time.sleep(1.0)
            current = self.screenshot()
            if np.array_equal(current, previous):
                return current
            assert time.monotonic() < deadline, f"the page kept changing for {timeout} s"
            previous = current


def attributes(dom: str, tag: str, **match: str) -> list[dict[str, str]]:
    """The attributes of every ``<tag>`` in ``dom`` whose attributes include ``match``
    (``class_`` stands for ``class``)."""
    found = []
    for opening in re.findall(rf"<{tag}\b([^>]*)>", dom):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', opening))
        if all(attrs.get(k.rstrip("_").replace("_", "-")) == v for k, v in match.items()):
            found.append(attrs)
    return found


def box(attrs: dict[str, str]) -> tuple[int, int, int, int]:
    """``data-box`` (x, y, width, height in CSS pixels) that the page's player records."""
    x, y, w, h = (int(v) for v in attrs["data-box"].split(","))
    return x, y, w, h
