"""robodata's systems in the runner: ``RobodataSystem`` (``robodata.open``, ``make_dataloader``
and the in-process decode bound) and ``RobodataCompatSystem`` (``LeRobotCompatDataset`` in the
DataLoader ``robodata-train`` builds for a LeRobot user). robodata is imported only when a system
opens, so this module imports in the peers' venv too.
"""

from __future__ import annotations

import os
from typing import Any

from benchmarks.peers.runner_common import job_size, lerobot_train_options, loader_closer, package_versions
from benchmarks.peers.runner_resize import ResizeBatch, ResizeFrame, resize_hwc

ROW_COLUMNS = ["episode_index", "frame_index", "observation_state", "action"]  # read with robodata's frames
# robodata at a size: "auto" passes ``resolution=`` where robodata's readers take it (renditions),
# else resizes decoded frames like the peers; "resize" always resizes decoded frames.
ROBODATA_SIZE_PATH = os.environ.get("ROBODATA_BENCH_SIZE_PATH", "auto")


class RobodataSystem:
    """robodata's own reader, run like the peers (in its own process, from the dataset folder)."""

    def __init__(self, job: dict) -> None:
        self.job = job  # a profile of the first batch opens the system again from it
        import robodata

        self.uri = job["root"]
        self.ds = robodata.open(self.uri, version=job.get("version"), storage_options=job.get("storage_options"))
        self.concurrency = job.get("concurrency") or os.cpu_count() or 1
        _one_decode_thread(job)
        self.size = job_size(job)
        self.by_resolution = self.size is not None and robodata_takes_resolution()
        self.label = "robodata"
        self.versions = package_versions("pylance", "av", "torch", "numpy")

    def _at_size(self) -> dict:
        return {"resolution": self.size} if self.by_resolution else {}

    def _resized(self, frames: dict) -> dict:
        if self.size is None or self.by_resolution:
            return frames
        return {k: resize_hwc(v, self.size) for k, v in frames.items()}

    def sample(self, index: int):
        if self.size is None:
            return self.ds[index]
        ds = self.ds
        row = ds.take_rows([index], ROW_COLUMNS)
        return row, self._resized(ds.get_frames([index], **self._at_size()).data)

    def batch(self, indices: list[int]):
        ds = self.ds
        ds.take_rows(sorted(indices), ROW_COLUMNS)
        return self._resized(ds.get_frames(indices, concurrency=self.concurrency, **self._at_size()).data)

    def window_reader(self, measurement: dict):
        ds, offsets = self.ds, measurement["row_offsets"]

        def read(index: int):
            return self._resized(ds.get_windows([index], offsets, columns=[], **self._at_size()).data)

        return read

    def frames(self, indices: list[int]) -> dict:
        return dict(self.ds.get_frames(indices).data)

    def loader(self, measurement: dict):
        from robodata.torch import make_dataloader

        sized: dict[str, Any] = {}
        if self.size is not None:
            sized = {"resolution": self.size} if self.by_resolution else {"transform": ResizeBatch(self.size)}
        loader = make_dataloader(
            self.uri,
            batch_size=measurement["batch_size"],
            num_workers=measurement["workers"],
            seed=measurement["seed"],
            shuffle=measurement.get("order", "global"),
            window_rows=measurement.get("window_rows"),
            version=self.ds.version,
            storage_options=self.ds.storage_options,
            **sized,
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], loader.close

    def bound(self, measurement: dict) -> dict:
        """The decode bound of ``batches`` (``robodata.measure.batches_decode_bound``): the least
        decoding any reader of these rows must do, at the measurement's size."""
        from robodata.measure import batches_decode_bound

        return batches_decode_bound(self.ds, measurement["batches"], self.size, int(measurement.get("chunks", 4)))


def _one_decode_thread(job: dict) -> None:
    """Profiles ask for one decode thread (cProfile sees only the calling thread); ds[i] and the
    torch datasets take no concurrency argument, so the pool's default is lowered."""
    if job.get("concurrency") == 1:
        os.environ["ROBODATA_DECODE_THREADS"] = "1"  # every read that names no concurrency


def robodata_takes_resolution() -> bool:
    """Whether this robodata's training readers take ``resolution=`` (training renditions)."""
    if ROBODATA_SIZE_PATH == "resize":
        return False
    import inspect

    from robodata.lerobot import LeRobotCompatDataset
    from robodata.torch import BatchReader

    return all(
        "resolution" in inspect.signature(f).parameters for f in (BatchReader.__init__, LeRobotCompatDataset.__init__)
    )


class RobodataCompatSystem:
    """robodata for a LeRobot user: ``LeRobotCompatDataset`` in the ``DataLoader`` ``robodata-train``
    builds (``sampler=ds.item_sampler(...)``, the decode-once order), or LeRobot's uniform
    ``DataLoader(shuffle=True)`` (``order`` "global")."""

    def __init__(self, job: dict) -> None:
        self.job = job  # a profile of the first batch opens the system again from it
        import robodata

        self.uri = job["root"]
        self.version = robodata.open(
            self.uri, version=job.get("version"), storage_options=job.get("storage_options")
        ).version
        self.storage_options = job.get("storage_options")
        self.dtype = job.get("dtype") or "uint8"
        _one_decode_thread(job)
        self.size = job_size(job)
        self.label = f"robodata LeRobotCompatDataset ({self.dtype})"
        self.versions = package_versions("pylance", "av", "torch", "numpy")
        self._ds = None

    def _dataset(self):
        from robodata.lerobot import LeRobotCompatDataset

        if self._ds is None:
            sized = {}
            if self.size is not None:
                sized = (
                    {"resolution": self.size}
                    if robodata_takes_resolution()
                    else {"image_transforms": ResizeFrame(self.size)}
                )
            self._ds = LeRobotCompatDataset(
                self.uri,
                version=self.version,
                storage_options=self.storage_options,
                return_uint8=self.dtype == "uint8",
                **sized,
            )
        return self._ds

    def batch(self, indices: list[int]):
        """What one DataLoader worker does per batch with PyTorch's default collate."""
        from torch.utils.data import default_collate

        return default_collate(self._dataset().__getitems__(indices))

    def loader(self, measurement: dict):
        """As ``robodata-train`` builds it for a LeRobot user: ``order`` "block" (the default) is
        ``DataLoader(ds, sampler=ds.item_sampler(...), batch_size=B, num_workers=W)``, the
        decode-once order; "global" is LeRobot's own ``DataLoader(ds, shuffle=True)`` (uniform)."""
        import torch
        from torch.utils.data import DataLoader

        from robodata.torch import worker_context

        ds = self._dataset()
        batch_size, workers, seed = measurement["batch_size"], measurement["workers"], measurement["seed"]
        if measurement.get("order", "block") == "block":
            order: dict[str, Any] = {"sampler": ds.item_sampler(batch_size=batch_size, num_workers=workers, seed=seed)}
        else:
            torch.manual_seed(seed)
            order = {"shuffle": True}
        # Spawned, as lerobot-train's are: this process has read through Lance (the version above),
        # and a worker forked after that stops with ForkedWorkerError (docs/training.md).
        loader = DataLoader(
            ds,
            batch_size=batch_size,
            num_workers=workers,
            multiprocessing_context=worker_context() if workers else None,
            **lerobot_train_options(workers),
            **order,
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], loader_closer(loader)
