"""What the reads return: ``FrameBatch`` (``get_frames``) and ``WindowBatch`` (``get_windows``).

Like torchcodec's ``FrameBatch``, each checks on construction that its arrays agree in their
leading dimensions (a batch of N rows has N frames and N timestamps per camera) and prints the
shapes and dtypes of its arrays, never their pixels. ``to_numpy`` turns a per-row Arrow column
into the array a batch holds.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pyarrow as pa

from robodata.format._schema import camera_of


@dataclass(frozen=True, repr=False)
class FrameBatch:
    """Decoded camera frames of N rows, what ``RoboDataset.get_frames`` returns.

    Attributes
    ----------
    indices : numpy.ndarray
        ``[N]`` int64: the dataset row offsets asked for, in request order.
    data : dict[str, numpy.ndarray]
        Camera name -> ``[N, H, W, 3]`` uint8 RGB frames; ``batch["top"]`` is ``batch.data["top"]``.
    timestamps_ns : dict[str, numpy.ndarray]
        Camera name -> ``[N]`` int64: when each frame was captured (the camera's clock, ns). A
        camera frame is shared by the rows nearest to it in time, so neighbours may repeat it.

    Raises
    ------
    ValueError
        On construction, when ``indices`` is not 1-D, ``data`` and ``timestamps_ns`` name
        different cameras, or a camera's frames or timestamps are not N long.

    Examples
    --------
    >>> ds.get_frames([5, 90], cameras="top")
    FrameBatch:
      indices: (2,) int64
      data['top']: (2, 480, 640, 3) uint8
      timestamps_ns['top']: (2,) int64
    """

    indices: np.ndarray
    data: dict[str, np.ndarray]
    timestamps_ns: dict[str, np.ndarray]

    def __post_init__(self) -> None:
        n = _rows_of(self, self.indices, 1)
        _same_cameras(self, self.data, self.timestamps_ns)
        for camera, frames in self.data.items():
            _leading(self, f"data[{camera!r}]", frames, (n,), "a frame per row")
            _exact(self, f"timestamps_ns[{camera!r}]", self.timestamps_ns[camera], (n,), "a timestamp per row")

    @property
    def cameras(self) -> list[str]:
        """The cameras in this batch."""
        return list(self.data)

    def __getitem__(self, camera: str) -> np.ndarray:
        """A camera's frames, by its name or its image column (``observation_images_top``)."""
        if camera not in self.data:
            return self.data[camera_of(camera, list(self.data))]
        return self.data[camera]

    def __len__(self) -> int:
        return len(self.indices)

    def __repr__(self) -> str:
        return _describe(self)


@dataclass(frozen=True, repr=False)
class WindowBatch:
    """Temporal windows around N rows at T row offsets, what ``RoboDataset.get_windows`` returns.

    Attributes
    ----------
    indices : numpy.ndarray
        ``[N]`` int64: the rows the windows are centred on.
    offsets : numpy.ndarray
        ``[T]`` int64: the row offsets of each window (k rows is k / control_hz seconds).
    rows : numpy.ndarray
        ``[N, T]`` int64: the rows read; past an episode's edge, the edge row repeated.
    is_pad : numpy.ndarray
        ``[N, T]`` bool: True where the window ran past its episode (LeRobot's ``*_is_pad``).
    data : dict[str, numpy.ndarray]
        Camera name -> ``[N, T, H, W, 3]`` uint8 frames.
    timestamps_ns : dict[str, numpy.ndarray]
        Camera name -> ``[N, T]`` int64 capture times of those frames.
    columns : dict[str, numpy.ndarray]
        Per-row column -> ``[N, T, ...]`` values (e.g. ``action``: ``[N, T, joints]`` float32).

    Raises
    ------
    ValueError
        On construction, when ``indices`` or ``offsets`` is not 1-D, ``data`` and
        ``timestamps_ns`` name different cameras, or ``rows``, ``is_pad``, a camera's frames or
        timestamps, or a column's values do not start with ``[N, T]``.

    Examples
    --------
    >>> ds.get_windows([1, 300], range(-2, 1), cameras=[], columns=["action"])
    WindowBatch:
      indices: (2,) int64
      offsets: (3,) int64
      rows: (2, 3) int64
      is_pad: (2, 3) bool
      columns['action']: (2, 3, 14) float32
    """

    indices: np.ndarray
    offsets: np.ndarray
    rows: np.ndarray
    is_pad: np.ndarray
    data: dict[str, np.ndarray]
    timestamps_ns: dict[str, np.ndarray]
    columns: dict[str, np.ndarray]

    def __post_init__(self) -> None:
        window = (_rows_of(self, self.indices, 1), _rows_of(self, self.offsets, 1, "offsets", "[T]"))
        _exact(self, "rows", self.rows, window, "a row per window position")
        _exact(self, "is_pad", self.is_pad, window, "a pad flag per window position")
        _same_cameras(self, self.data, self.timestamps_ns)
        for camera, frames in self.data.items():
            _leading(self, f"data[{camera!r}]", frames, window, "a frame per window position")
            _exact(self, f"timestamps_ns[{camera!r}]", self.timestamps_ns[camera], window, "a timestamp per position")
        for name, values in self.columns.items():
            _leading(self, f"columns[{name!r}]", values, window, "a value per window position")

    def __getitem__(self, name: str) -> np.ndarray:
        """A camera's frames or a column's values by name."""
        return self.data[name] if name in self.data else self.columns[name]

    def __len__(self) -> int:
        return len(self.indices)

    def __repr__(self) -> str:
        return _describe(self)


def to_numpy(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An Arrow column as numpy: fixed-size lists (state, action) as a 2-D array of their own
    dtype, other columns as 1-D (object dtype for strings).

    >>> to_numpy(pa.chunked_array([pa.array([[1.0, 2.0], [3.0, 4.0]], pa.list_(pa.float32(), 2))]))
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_fixed_size_list(column.type):
        return column.values.to_numpy(zero_copy_only=False).reshape(len(column), column.type.list_size)
    return column.to_numpy(zero_copy_only=False)


def _rows_of(batch: object, array: np.ndarray, ndim: int, name: str = "indices", shape: str = "[N]") -> int:
    if np.ndim(array) != ndim:
        raise ValueError(f"{type(batch).__name__}: {name} must be {shape}, got shape {np.shape(array)}")
    return len(array)


def _same_cameras(batch: object, data: dict[str, np.ndarray], timestamps: dict[str, np.ndarray]) -> None:
    if list(data) != list(timestamps):
        raise ValueError(
            f"{type(batch).__name__}: data and timestamps_ns must name the same cameras, "
            f"got {list(data)} and {list(timestamps)}"
        )


def _leading(batch: object, name: str, array: np.ndarray, expected: tuple[int, ...], what: str) -> None:
    if np.shape(array)[: len(expected)] != expected:
        raise ValueError(
            f"{type(batch).__name__}: {name} must start with {list(expected)} ({what}), got shape {np.shape(array)}"
        )


def _exact(batch: object, name: str, array: np.ndarray, expected: tuple[int, ...], what: str) -> None:
    if np.shape(array) != expected:
        raise ValueError(
            f"{type(batch).__name__}: {name} must be {list(expected)} ({what}), got shape {np.shape(array)}"
        )


def _describe(batch: object) -> str:
    """One line per array: its name, shape and dtype (a batch of frames is megabytes of pixels)."""
    lines = [f"{type(batch).__name__}:"]
    for field in fields(batch):  # type: ignore[arg-type]
        value = getattr(batch, field.name)
        named = value.items() if isinstance(value, dict) else [(None, value)]
        for key, array in named:
            label = field.name if key is None else f"{field.name}[{key!r}]"
            lines.append(f"  {label}: {tuple(np.shape(array))} {np.asarray(array).dtype}")
    return "\n".join(lines)
