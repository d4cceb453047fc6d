"""open(uri, version) -> RoboDataset: rows, decoded frames by camera, windows, versions. The read
fast path lives here.

Users need ``open_dataset`` (``robodata.open``), ``RoboDataset``, ``FrameBatch``,
``WindowBatch``, ``to_numpy``, ``RowIndex`` (what ``ds.rows`` is) and the pixel formats a read
may ask for (``PIXEL_FORMATS``, ``PLANAR_RGB``). robodata's own loaders (``robodata.torch``,
``robodata.lerobot``) also share one row index between DataLoader workers and prefetch GOP
bytes, through ``share_rows``/``adopt_rows``/``gop_store`` in the private ``_dataset`` module.
"""

from robodata.reader._batches import FrameBatch, WindowBatch, to_numpy
from robodata.reader._dataset import RoboDataset, open_dataset
from robodata.reader._renditions import PIXEL_FORMATS, PLANAR_RGB
from robodata.reader._row_index import RowIndex

__all__ = [
    "PIXEL_FORMATS",
    "PLANAR_RGB",
    "FrameBatch",
    "RoboDataset",
    "RowIndex",
    "WindowBatch",
    "open_dataset",
    "to_numpy",
]
