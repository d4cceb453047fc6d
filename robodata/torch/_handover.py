"""How a batch read in a DataLoader worker reaches the training process without copying its frames.

A worker's batch crosses to the training process as shared-memory tensors. PyTorch's
``default_collate`` stacks per-sample values into shared memory, and the worker's queue moves
every other tensor there when it sends it: either way a copy of every frame, about 25 ms per
``[32, 480, 640, 3]`` camera tensor. robodata's datasets read a whole batch at once, so they can
skip both copies:

- ``SharedOutputs`` allocates the frame arrays in shared memory before the decoder writes them;
- ``__getitems__`` returns a ``SampleBatch``, which holds the batch already stacked. Its samples
  are ``BatchItem`` dicts, a type this module registers in PyTorch's ``default_collate_fn_map``
  (PyTorch's documented way to extend ``default_collate``). So a plain ``DataLoader`` (LeRobot's
  training script builds one without a ``collate_fn``) hands the stacked batch over as it is.
  A list of samples from elsewhere is collated as PyTorch always does.

>>> batch = SampleBatch({"action": torch.zeros(2, 14), "task": ["pick", "place"]})
>>> torch.utils.data.default_collate(batch) is batch.stacked, batch[1]["task"]
(True, 'place')
>>> torch.utils.data.default_collate([batch[0], batch[1]])["action"].shape  # stacked again
torch.Size([2, 14])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data._utils.collate import collate, default_collate_fn_map


class SharedOutputs:
    """Output arrays allocated in shared memory, in a DataLoader worker: the batch's tensors then
    go to the training process without a copy.

    >>> shared = SharedOutputs()
    >>> array = shared((2, 4, 4, 3))
    >>> tensor = shared.tensor(array)
    >>> tensor.is_shared(), tensor.shape, shared.tensor(np.zeros(3)) is None
    (True, torch.Size([2, 4, 4, 3]), True)
    >>> shared.tensor(shared((2,), np.float32)).dtype
    torch.float32
    """

    def __init__(self) -> None:
        self._tensors: dict[int, tuple[np.ndarray, torch.Tensor]] = {}

    def __call__(self, shape: tuple[int, ...], dtype: np.dtype | type = np.uint8) -> np.ndarray:
        dtype = np.dtype(dtype)
        size = int(np.prod(shape))
        storage = torch.UntypedStorage._new_shared(max(size * dtype.itemsize, 1))  # in shared memory from the start
        strides = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]  # C order, in elements
        element = torch.from_numpy(np.zeros(0, dtype=dtype)).dtype
        tensor = torch.empty(0, dtype=element).set_(storage, 0, shape, strides)
        array = tensor.numpy()
        self._tensors[id(array)] = (array, tensor)
        return array

    def tensor(self, array) -> torch.Tensor | None:
        """The shared tensor ``array`` views (forgotten once asked for), or None."""
        entry = self._tensors.pop(id(array), None)
        return entry[1] if entry is not None and entry[0] is array else None

    def as_tensor(self, array: np.ndarray) -> torch.Tensor:
        """``array`` as a tensor: the shared one it views, or one on its own memory."""
        tensor = self.tensor(array)
        return tensor if tensor is not None else torch.from_numpy(array)

    def clear(self) -> None:
        self._tensors.clear()


def to_tensors(batch: dict, shared: SharedOutputs | None = None) -> dict:
    """Numpy arrays as tensors (sharing memory unless read-only, e.g. straight from Arrow), arrays
    of strings or other objects as lists (as ``default_collate`` gathers them); tensors and
    anything else stay as they are. Arrays ``shared`` allocated become the shared-memory tensors
    they view.

    >>> to_tensors({"task": np.array(["pick", "place"], dtype=object), "step": np.arange(2)})
    {'task': ['pick', 'place'], 'step': tensor([0, 1])}
    """
    tensors = {}
    for name, value in batch.items():
        tensor = shared.tensor(value) if shared is not None else None
        tensors[name] = tensor if tensor is not None else _tensor(value)
    return tensors


def _tensor(value):
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype == object:
        return value.tolist()
    return torch.from_numpy(value if value.flags.writeable else value.copy())


class BatchItem(dict):
    """One sample of a ``SampleBatch``: a plain dict of its values (the type marks it for collate)."""


class SampleBatch(Sequence):
    """What ``__getitems__`` returns: per-sample dicts (``batch[i]``, ``BatchItem``) and
    ``stacked``, the whole batch as one dict, which collate returns as it is."""

    def __init__(self, stacked: dict) -> None:
        self.stacked = stacked
        self._len = len(next(iter(stacked.values()))) if stacked else 0

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._len))]
        if not -self._len <= i < self._len:
            raise IndexError(f"sample {i} of a batch of {self._len}")
        return BatchItem({name: value[i] for name, value in self.stacked.items()})


def _collate_items(batch, *, collate_fn_map=None):
    """``default_collate`` of ``BatchItem`` samples: a whole ``SampleBatch`` as it is stacked,
    any other list of them as plain dicts."""
    if isinstance(batch, SampleBatch):
        return batch.stacked
    return collate([dict(item) for item in batch], collate_fn_map=collate_fn_map)


default_collate_fn_map[BatchItem] = _collate_items


def collate_batch(samples):
    """DataLoader ``collate_fn``: PyTorch's ``default_collate``, which (with this module
    imported) returns a ``SampleBatch`` as it is stacked, without a copy.

    >>> from robodata.torch._batch_reader import BatchReader
    >>> from robodata.torch._torch_dataset import RoboTorchDataset
    >>> dataset = RoboTorchDataset(BatchReader("data/demo", cameras=[]))
    >>> loader = torch.utils.data.DataLoader(dataset, batch_sampler=[[0, 1, 2], [3, 4]], collate_fn=collate_batch)
    >>> [batch["action"].shape for batch in loader]
    [torch.Size([3, 14]), torch.Size([2, 14])]

    """
    return torch.utils.data.default_collate(samples)
