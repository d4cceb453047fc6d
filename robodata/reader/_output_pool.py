"""Frame arrays used again once the caller has let go of them.

Fresh memory for decoded frames costs more than it seems: a batch's arrays are megabytes, so
the allocator maps new pages for them and the kernel zeroes each page the decoder first
writes, and freeing them returns the pages, so the next call pays again. Reading 8-frame
windows of 3 cameras at 640x480 (22 MB a window), that was a third of the read's CPU (24.6
against 15.9 ms a window on 2 cores, measured by keeping the allocator's pages instead). The pool
keeps the arrays it made and hands one out again only when nothing outside the pool refers to
it: no result, view, tensor or buffer of the caller's can see its frames change.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

# Arrays kept for reuse per reader: enough for a few batches of 32 rows x 3 cameras at 640x480.
DEFAULT_POOL_BYTES = 512 * 2**20


def _references(arrays: list[np.ndarray], position: int) -> int:
    return sys.getrefcount(arrays[position])


# What _references counts for an array only the pool's list holds (this interpreter's own count).
_UNUSED = _references([np.empty(0)], 0)


class OutputPool:
    """``pool(shape)``: an uninitialised uint8 array, one the pool made before if the caller has
    dropped every reference to it, else a new one (kept while the pool has room).

    >>> pool = OutputPool()
    >>> first = pool((2, 4, 3))
    >>> pool((2, 4, 3)) is first  # still in use: a new array
    False
    >>> address = first.__array_interface__["data"][0]
    >>> del first
    >>> pool((2, 4, 3)).__array_interface__["data"][0] == address  # dropped: the same memory again
    True
    """

    def __init__(self, max_bytes: int = DEFAULT_POOL_BYTES) -> None:
        self.max_bytes = max_bytes
        self._arrays: dict[tuple[int, ...], list[np.ndarray]] = {}
        self._bytes = 0
        self._lock = threading.Lock()  # get_frames runs on several threads (``ds[i]`` on one of its own)

    def __call__(self, shape: tuple[int, ...]) -> np.ndarray:
        shape = tuple(int(n) for n in shape)
        with self._lock:
            arrays = self._arrays.setdefault(shape, [])
            for position in range(len(arrays)):
                if _references(arrays, position) <= _UNUSED:
                    return arrays[position]
            array = np.empty(shape, dtype=np.uint8)
            if self._bytes + array.nbytes <= self.max_bytes:
                arrays.append(array)
                self._bytes += array.nbytes
            return array
