"""open(uri, version) -> RoboDataset: rows, decoded frames by camera, windows, versions. The read
fast path lives here.

Users need ``open_dataset`` (``robodata.open``), ``RoboDataset``, ``FrameBatch``,
``WindowBatch`` and ``to_numpy``. Training loaders also use ``share_rows``/``adopt_rows`` (one
row index memory-mapped by every DataLoader worker, ``SharedArrays``/``RowIndex``) and
``gop_store`` (a ``GopStore``: which GOPs rows decode from, their sizes and checked bytes).
"""

from robodata.reader._batches import FrameBatch, WindowBatch, to_numpy
from robodata.reader._dataset import RoboDataset, adopt_rows, gop_store, open_dataset, share_rows
from robodata.reader._gop_store import GopStore
from robodata.reader._renditions import PIXEL_FORMATS, PLANAR_RGB
from robodata.reader._row_index import RowIndex, SharedArrays

__all__ = [
    "PIXEL_FORMATS",
    "PLANAR_RGB",
    "FrameBatch",
    "GopStore",
    "RoboDataset",
    "RowIndex",
    "SharedArrays",
    "WindowBatch",
    "adopt_rows",
    "gop_store",
    "open_dataset",
    "share_rows",
    "to_numpy",
]
