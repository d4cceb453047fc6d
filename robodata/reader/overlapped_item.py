"""One row with every camera frame, the GOP fetch and decode overlapping the row read.

``ds[i]`` reads the row from frames.lance (~1 ms) and only then fetches and decodes the row's
GOPs. The GOP references are already in memory (the row index), so the frames can start on a
thread while the calling thread reads the row; the row read then costs nothing extra.

>>> item = read_item(ds, 123)   # the same dict as ds[123]
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from robodata.reader.dataset import RoboDataset

_pool = ThreadPoolExecutor(1, thread_name_prefix="robodata-item")


def read_item(ds: RoboDataset, index: int) -> dict[str, np.ndarray | object]:
    """``ds[index]``, with the camera frames decoding while the row is read."""
    index = int(ds._check_indices([index])[0])  # noqa: SLF001 - the same bounds check and error as ds[i]
    frames = _pool.submit(ds.take_blobs_decoded, columns=ds.image_columns, indices=[index])
    row = ds.lance_dataset.take([index]).to_pydict()
    item: dict[str, np.ndarray | object] = {}
    for name, values in row.items():
        value = values[0]
        item[name] = np.asarray(value, dtype=np.float32) if isinstance(value, list) else value
    item.update({name: array[0] for name, array in frames.result().items()})
    return item
