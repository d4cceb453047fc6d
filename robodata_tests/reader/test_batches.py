"""FrameBatch and WindowBatch check that their arrays agree in shape when made, and print shapes
and dtypes, not pixels."""

from __future__ import annotations

import numpy as np
import pytest

import robodata
from robodata.reader import FrameBatch, WindowBatch


def _frames(n: int) -> np.ndarray:
    return np.zeros((n, 4, 6, 3), np.uint8)


def _times(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


def test_a_frame_batch_with_matching_shapes_is_made():
    batch = FrameBatch(indices=np.array([3, 1]), data={"top": _frames(2)}, timestamps_ns={"top": _times(2)})
    assert len(batch) == 2 and batch.cameras == ["top"]
    assert batch["observation_images_top"] is batch.data["top"]
    empty = FrameBatch(indices=np.zeros(0, np.int64), data={}, timestamps_ns={})
    assert len(empty) == 0


def test_a_frame_batch_names_the_array_whose_shape_disagrees():
    indices = np.array([3, 1])
    with pytest.raises(
        ValueError,
        match=r"FrameBatch: data\['top'\] must start with \[2\] \(a frame per row\), got shape \(3, 4, 6, 3\)",
    ):
        FrameBatch(indices=indices, data={"top": _frames(3)}, timestamps_ns={"top": _times(2)})
    with pytest.raises(
        ValueError,
        match=r"FrameBatch: timestamps_ns\['top'\] must be \[2\] \(a timestamp per row\), got shape \(2, 1\)",
    ):
        FrameBatch(indices=indices, data={"top": _frames(2)}, timestamps_ns={"top": _times(2)[:, None]})
    with pytest.raises(
        ValueError,
        match=r"FrameBatch: data and timestamps_ns must name the same cameras, got \['top'\] and \['wrist'\]",
    ):
        FrameBatch(indices=indices, data={"top": _frames(2)}, timestamps_ns={"wrist": _times(2)})
    with pytest.raises(ValueError, match=r"FrameBatch: indices must be \[N\], got shape \(1, 2\)"):
        FrameBatch(indices=indices[None], data={}, timestamps_ns={})


def test_a_frame_batch_prints_shapes_and_dtypes():
    batch = FrameBatch(indices=np.array([3, 1]), data={"top": _frames(2)}, timestamps_ns={"top": _times(2)})
    assert repr(batch) == (
        "FrameBatch:\n  indices: (2,) int64\n  data['top']: (2, 4, 6, 3) uint8\n  timestamps_ns['top']: (2,) int64"
    )


def _window(**changes) -> WindowBatch:
    n, t = 2, 3
    fields = {
        "indices": np.array([5, 9]),
        "offsets": np.array([-1, 0, 1]),
        "rows": np.zeros((n, t), np.int64),
        "is_pad": np.zeros((n, t), bool),
        "data": {"top": np.zeros((n, t, 4, 6, 3), np.uint8)},
        "timestamps_ns": {"top": np.zeros((n, t), np.int64)},
        "columns": {"action": np.zeros((n, t, 14), np.float32)},
    }
    return WindowBatch(**{**fields, **changes})


def test_a_window_batch_with_matching_shapes_is_made():
    window = _window()
    assert len(window) == 2
    assert window["top"].shape == (2, 3, 4, 6, 3) and window["action"].shape == (2, 3, 14)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"offsets": np.array([[0, 1, 2]])}, r"offsets must be \[T\], got shape \(1, 3\)"),
        (
            {"rows": np.zeros((2, 2), np.int64)},
            r"rows must be \[2, 3\] \(a row per window position\), got shape \(2, 2\)",
        ),
        (
            {"is_pad": np.zeros((3, 3), bool)},
            r"is_pad must be \[2, 3\] \(a pad flag per window position\), got shape \(3, 3\)",
        ),
        (
            {"data": {"top": np.zeros((2, 4, 4, 6, 3), np.uint8)}},
            r"data\['top'\] must start with \[2, 3\] \(a frame per window position\), got shape \(2, 4, 4, 6, 3\)",
        ),
        (
            {"timestamps_ns": {"top": np.zeros(6, np.int64)}},
            r"timestamps_ns\['top'\] must be \[2, 3\] \(a timestamp per position\), got shape \(6,\)",
        ),
        ({"timestamps_ns": {}}, r"data and timestamps_ns must name the same cameras, got \['top'\] and \[\]"),
        (
            {"columns": {"action": np.zeros((3, 2, 14), np.float32)}},
            r"columns\['action'\] must start with \[2, 3\] \(a value per window position\), got shape \(3, 2, 14\)",
        ),
    ],
)
def test_a_window_batch_names_the_array_whose_shape_disagrees(changes, message):
    with pytest.raises(ValueError, match="WindowBatch: " + message):
        _window(**changes)


def test_a_window_batch_prints_shapes_and_dtypes():
    assert repr(_window()) == (
        "WindowBatch:\n"
        "  indices: (2,) int64\n"
        "  offsets: (3,) int64\n"
        "  rows: (2, 3) int64\n"
        "  is_pad: (2, 3) bool\n"
        "  data['top']: (2, 3, 4, 6, 3) uint8\n"
        "  timestamps_ns['top']: (2, 3) int64\n"
        "  columns['action']: (2, 3, 14) float32"
    )


def test_the_reads_return_batches_that_pass_their_own_checks(ingested):
    ds = robodata.open(ingested)
    frames = ds.get_frames([5, 90, 5], cameras="top", pixel_format="yuv420p")
    assert frames.data["top"].shape == (3, 720, 640) and frames.timestamps_ns["top"].shape == (3,)
    assert repr(frames).splitlines()[2] == "  data['top']: (3, 720, 640) uint8"
    window = ds.get_windows([0, 300], [-1, 0], cameras="wrist_left", columns=["action", "task"])
    assert repr(window).splitlines() == [
        "WindowBatch:",
        "  indices: (2,) int64",
        "  offsets: (2,) int64",
        "  rows: (2, 2) int64",
        "  is_pad: (2, 2) bool",
        "  data['wrist_left']: (2, 2, 240, 320, 3) uint8",
        "  timestamps_ns['wrist_left']: (2, 2) int64",
        "  columns['action']: (2, 2, 14) float32",
        "  columns['task']: (2, 2) object",
    ]
