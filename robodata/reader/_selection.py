"""Checking what a read asks for (row offsets, cameras, per-row columns) before anything is read: the dataset's
reads and its GOP store's answer a bad row or camera with the same error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from robodata.format._schema import image_column

if TYPE_CHECKING:
    from robodata.reader._dataset import RoboDataset

# Dataset row offsets (0..len(ds)-1): a list, a range or an integer numpy array.
RowIndices: TypeAlias = Sequence[int] | np.ndarray


def checked_rows(indices: RowIndices, n: int) -> np.ndarray:
    """``indices`` as a 1-D int64 array; IndexError for a row outside ``0..n-1``.

    >>> checked_rows(range(3), 591)
    array([0, 1, 2])
    """
    if isinstance(indices, str):  # a column name given where the rows belong
        raise TypeError(f"row indices expected, got the column name {indices!r}; pass (indices, columns)")
    array = np.asarray(indices, dtype=np.int64).reshape(-1)
    if array.size and (array.min() < 0 or array.max() >= n):
        bad = array[(array < 0) | (array >= n)][0]
        raise IndexError(f"row {bad} is out of range for a dataset of {n} rows")
    return array


def checked_cameras(uri: str, known: list[str], cameras: str | Sequence[str] | None) -> list[str]:
    """Camera names (a camera or its image column), checked against ``known``, each once; every
    camera for None.

    >>> checked_cameras("data/demo", ["top", "wrist"], ["observation_images_wrist", "top", "wrist"])
    ['wrist', 'top']
    """
    if cameras is None:
        return list(known)
    names = [cameras] if isinstance(cameras, str) else list(cameras)
    by_column = {image_column(camera): camera for camera in known}
    unknown = [name for name in names if name not in known and name not in by_column]
    if unknown:
        raise KeyError(
            f"{uri}: no camera {unknown[0]!r}; the cameras are {', '.join(known)} "
            f"(or by image column: {', '.join(by_column)})"
        )
    return list(dict.fromkeys(by_column.get(name, name) for name in names))


def checked_columns(dataset: RoboDataset, columns: str | Sequence[str] | None) -> list[str]:
    """Per-row column names of ``dataset``, checked before Lance sees them; none for None.

    >>> checked_columns(ds, "action")
    ['action']
    """
    names = [] if columns is None else [columns] if isinstance(columns, str) else list(columns)
    if not names:
        return names  # no schema walk for a frames-only read
    known = dataset.columns
    for name in names:
        if name in dataset.image_columns or name in dataset.cameras:
            raise KeyError(f"{dataset.uri}: {name!r} is a camera: pass it in cameras=, not columns=")
        if name not in known:
            raise KeyError(f"{dataset.uri}: no column {name!r} at version {dataset.version}; its columns are {known}")
    return names
