"""open(uri, version) -> RoboDataset: rows, decoded frames by camera, windows, versions. The read
fast path lives here."""

from robodata.reader.dataset import FrameBatch, RoboDataset, WindowBatch, open_dataset, to_numpy

__all__ = ["FrameBatch", "RoboDataset", "WindowBatch", "open_dataset", "to_numpy"]
