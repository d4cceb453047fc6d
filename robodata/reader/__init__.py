"""open(uri, version) -> RoboDataset: rows, batched decoded takes, windows, versions. The read
fast path lives here."""

from robodata.reader.dataset import RoboDataset, open_dataset

__all__ = ["RoboDataset", "open_dataset"]
