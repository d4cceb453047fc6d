"""The peers' systems in the runner: LeRobot 0.6.1's ``LeRobotDataset`` and lerobot-lancedb's
``LanceDBDataset``, each read as its documentation shows (``return_uint8=True``, a size through
``image_transforms``). Their packages are imported only when a system opens: they exist only in
the peers' venv.
"""

from __future__ import annotations

from benchmarks.peers.runner_common import (
    job_size,
    lerobot_train_options,
    loader_closer,
    package_version,
    package_versions,
)


class LeRobotSystem:
    """``lerobot.datasets.lerobot_dataset.LeRobotDataset`` with ``return_uint8=True``."""

    def __init__(self, job: dict) -> None:
        self.job = job  # a profile of the first batch opens the system again from it
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        self.cls = LeRobotDataset
        self.root = job["root"]
        self.backend = job.get("backend") or "torchcodec"
        self.transforms = _peer_resize(job)
        self.ds = self._open(None)
        self.label = f"LeRobot {package_version('lerobot')} ({self.backend})"
        self.versions = package_versions("lerobot", "torch", "torchcodec", "av", "numpy")

    def _open(self, delta_timestamps):
        return self.cls(
            "local/bench",
            root=self.root,
            video_backend=self.backend,
            return_uint8=True,
            delta_timestamps=delta_timestamps,
            image_transforms=self.transforms,
        )

    def sample(self, index: int):
        return self.ds[index]

    def batch(self, indices: list[int]):
        return [self.ds[i] for i in indices]  # no batched path: its DataLoader reads one sample at a time

    def window_reader(self, measurement: dict):
        deltas = [k / measurement["fps"] for k in range(measurement["frames"])]
        windowed = self._open({key: deltas for key in self.ds.meta.video_keys})
        return lambda index: windowed[index]

    def frames(self, indices: list[int]) -> dict:
        return _stack_items([self.ds[i] for i in indices], self.ds.meta.video_keys)

    def loader(self, measurement: dict):
        from torch.utils.data import DataLoader

        loader = DataLoader(
            self.ds,
            batch_sampler=measurement["batches"],
            num_workers=measurement["workers"],
            multiprocessing_context="spawn" if measurement["workers"] else None,
            **lerobot_train_options(measurement["workers"]),
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], loader_closer(loader)


class LanceDBSystem(LeRobotSystem):
    """``lerobot_lancedb.LanceDBDataset`` (torchcodec) on ``lerobot-lance-convert``'s output: a
    local folder, or an s3:// copy of it with the job's ``storage_options``."""

    def __init__(self, job: dict) -> None:
        self.job = job  # a profile of the first batch opens the system again from it
        from lerobot_lancedb import LanceDBDataset

        self.cls = LanceDBDataset
        self.root = job["root"]
        self.transforms = _peer_resize(job)
        self.ds = self._open(None)
        self.label = f"LanceDBDataset (lerobot-lancedb {package_version('lerobot-lancedb')})"
        self.versions = package_versions("lerobot-lancedb", "lancedb", "pylance", "lerobot", "torch", "torchcodec")

    def _open(self, delta_timestamps):
        # an s3:// root reads its tables through lancedb.connect(storage_options=...)
        stored = {"storage_options": self.job["storage_options"]} if self.job.get("storage_options") else {}
        return self.cls(
            root=self.root,
            return_uint8=True,
            delta_timestamps=delta_timestamps,
            image_transforms=self.transforms,
            **stored,
        )

    def batch(self, indices: list[int]):
        return self.ds.__getitems__(indices)

    def frames(self, indices: list[int]) -> dict:
        return _stack_items(self.ds.__getitems__(indices), self.ds.meta.video_keys)

    def loader(self, measurement: dict):
        from lerobot_lancedb import lance_mp_context
        from torch.utils.data import DataLoader

        workers = measurement["workers"]
        loader = DataLoader(
            self.ds,
            batch_sampler=measurement["batches"],
            num_workers=workers,
            multiprocessing_context=lance_mp_context() if workers else None,
            **lerobot_train_options(workers),
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], loader_closer(loader)


class StreamingLeRobotSystem:
    """``lerobot.datasets.streaming_dataset.StreamingLeRobotDataset`` as ``lerobot-train
    --dataset.streaming=true`` builds it (``lerobot.datasets.factory.make_dataset``:
    ``max_num_shards=num_workers``, ``return_uint8=True``) in the DataLoader lerobot-train builds
    for it (``shuffle=False``: it shuffles itself). LeRobot 0.6.1 streams from a local root or the
    Hub, never from s3://. Only ``loader`` measurements: its order is its own, so a measurement's
    ``batches`` give only how many batches to time."""

    def __init__(self, job: dict) -> None:
        from lerobot.datasets.streaming_dataset import StreamingLeRobotDataset

        self.job = job
        self.root = job["root"]
        self.workers = int(job.get("workers", 2))
        self.ds = StreamingLeRobotDataset(
            "local/bench",
            root=self.root,
            image_transforms=_peer_resize(job),
            max_num_shards=self.workers,  # cfg.num_workers, as make_dataset passes it
            tolerance_s=1e-4,  # TrainPipelineConfig's default
            return_uint8=True,
        )
        self.label = f"LeRobot {package_version('lerobot')} StreamingLeRobotDataset"
        self.versions = package_versions("lerobot", "datasets", "torch", "torchcodec")

    def loader(self, measurement: dict):
        from torch.utils.data import DataLoader

        workers = measurement["workers"]
        if workers != self.workers:
            raise ValueError(f"the streaming dataset was sharded for {self.workers} workers, the loader has {workers}")
        loader = DataLoader(
            self.ds,
            batch_size=measurement["batch_size"],
            num_workers=workers,
            shuffle=False,
            drop_last=False,
            multiprocessing_context="spawn" if workers else None,
            **lerobot_train_options(workers),
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], loader_closer(loader)


def _peer_resize(job: dict):
    """The peers' documented resize: ``image_transforms=torchvision.transforms.v2.Resize(size)``."""
    size = job_size(job)
    if size is None:
        return None
    from torchvision.transforms import v2

    return v2.Resize(size)


def _camera_name(key: str) -> str:
    """``observation.images.top`` / ``observation_images_top`` -> ``top``."""
    for prefix in ("observation.images.", "observation_images_"):
        if key.startswith(prefix):
            return key[len(prefix) :]
    return key


def _stack_items(items: list[dict], video_keys) -> dict:
    """Frames of LeRobot-style items (C x H x W tensors) as {camera: [N, H, W, 3] uint8}."""
    import numpy as np

    return {
        _camera_name(key): np.stack([np.asarray(item[key]).transpose(1, 2, 0) for item in items]) for key in video_keys
    }
