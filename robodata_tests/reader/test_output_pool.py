"""Frame arrays are used again only once nothing of the caller's refers to them
(robodata.reader._output_pool): kept results keep their frames, dropped ones give their memory."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import robodata
from robodata.reader._output_pool import OutputPool

TOP = "top"


def address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]


def holders() -> dict:
    """Ways a caller keeps a result's memory without keeping the array object itself."""
    ways = {
        "slice": lambda array: array[1:],
        "reshape": lambda array: array.reshape(-1),
        "memoryview": memoryview,
    }
    try:
        import torch
    except ImportError:  # robodata without its torch extra
        return ways
    ways["torch tensor"] = torch.from_numpy
    return ways


@pytest.mark.parametrize("way", sorted(holders()))
def test_an_array_the_caller_still_reaches_is_not_handed_out_again(way):
    pool = OutputPool()
    first = pool((3, 4, 2))
    first[:] = 7
    kept = holders()[way](first)
    del first
    gc.collect()
    second = pool((3, 4, 2))
    second[:] = 9
    assert (np.asarray(kept) == 7).all()


def test_a_dropped_array_is_handed_out_again_and_the_pool_keeps_within_its_bytes():
    pool = OutputPool(max_bytes=48)
    first = pool((2, 12))
    where = address(first)
    del first
    assert address(pool((2, 12))) == where  # dropped (and the result above dropped at once too)
    a, b = pool((2, 12)), pool((2, 12))  # the second is beyond 48 bytes: not kept
    assert address(a) == where and address(b) != where
    del a, b
    assert address(pool((2, 12))) == where


def test_frames_a_caller_keeps_stay_exact_while_later_reads_reuse_dropped_memory(ingested):
    ds = robodata.open(ingested)
    kept = ds.get_frames([3, 90, 200], cameras="top")
    expected = np.array(kept.data[TOP])  # a copy
    addresses = set()
    for start in range(0, 60, 3):
        later = ds.get_frames([start, start + 1, start + 2], cameras="top")  # same shape as kept
        addresses.add(address(later.data[TOP]))
        del later
    assert np.array_equal(kept.data[TOP], expected)
    assert address(kept.data[TOP]) not in addresses
    assert len(addresses) == 1  # every later read used the memory the one before it dropped
    windows = ds.get_windows([10], [0, 1, 2], cameras="top", columns=[])
    frames = np.array(windows.data[TOP])
    ds.get_windows([300], [0, 1, 2], cameras="top", columns=[])
    assert np.array_equal(windows.data[TOP], frames)
