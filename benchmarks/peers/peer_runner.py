"""Measure one reader (robodata, LeRobot's ``LeRobotDataset`` or lerobot-lancedb's
``LanceDBDataset``) in a process of its own, so the peers' packages never mix with robodata's.

``robodata bench OUT --peers VENV`` starts this file with the peers' Python (or with robodata's
own for the robodata side), writes a job as JSON on its standard input and reads one line
``PEER_RESULT {json}`` from its standard output (anything else printed there is ignored). The
file imports only the standard library at the top, so it runs in either environment:

    echo '{"system": "lerobot", "root": "bench_out/work/lerobot", "backend": "torchcodec",
           "measurements": [{"name": "A", "kind": "sample", "indices": [5, 17]}]}' \
        | .peers-venv/bin/python benchmarks/peers/peer_runner.py

Kinds of measurement (each times every call; ``indices`` are the system's own sample indices):

- ``sample``: ``ds[i]`` one at a time (every camera).
- ``batch``: ``batches`` through the system's batched path (robodata ``get_frames`` plus
  the rows' state and action; LanceDB ``__getitems__``; LeRobot has none: one ``ds[i]`` per row).
- ``window``: ``frames`` consecutive camera frames x every camera at each of ``indices``
  (LeRobot and LanceDB ``delta_timestamps`` of k / ``fps``; robodata ``get_windows`` at
  ``row_offsets``).
- ``loader``: a ``torch.utils.data.DataLoader`` with ``workers`` workers over ``batches``
  (robodata: its own ``make_dataloader`` with ``seed``, whose batches the caller computed the
  same way; robodata-compat: ``LeRobotCompatDataset`` in ``DataLoader(ds,
  sampler=ds.item_sampler(batch_size=, num_workers=, seed=), batch_size=, num_workers=,
  multiprocessing_context=worker_context())`` as ``robodata-train`` builds it for a LeRobot user,
  or with ``order`` "global" LeRobot's uniform ``shuffle=True``; every LeRobot-facing loader with
  lerobot-train's defaults, ``LEROBOT_TRAIN_LOADER``); seconds to the first batch,
  then seconds per batch. With ``warm_epochs`` whole epochs are read first and the next one is
  timed in full, its first batch too.
- ``bound`` (robodata only): the in-process decode bound of ``batches``: their GOPs read into
  memory first, then each decoded once as far as its last wanted frame (and every wanted frame
  converted to RGB, resized at ``size``) on every core, one single-threaded decoder per thread,
  no Lance, no workers, no copies between processes; wall and CPU seconds of ``chunks`` parts
  (the bound is samples / (CPU s / cores)).
- ``frames``: decode ``indices`` and save every camera's frames (H x W x 3 uint8) to ``out`` (.npz).
- ``profile``: cProfile ``of`` (sample, batch or window) once over its inputs; own time per function.

A job or measurement with ``size`` [H, W] (the policy's input, 224 x 224) reads frames at that size:
the peers through their documented ``image_transforms`` (torchvision ``v2.Resize``), robodata
through ``resolution=`` where its readers have it (a stored training rendition when the dataset
has one), else by resizing the decoded frames with the same kernel (``RESIZE`` below).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

PROTOCOL = 1
RESULT_PREFIX = "PEER_RESULT "
ROW_COLUMNS = ["episode_index", "frame_index", "observation_state", "action"]  # read with robodata's frames
SYSTEMS = ("robodata", "robodata-compat", "lerobot", "lancedb")
# The DataLoader options lerobot-train 0.6.1 passes by default (its TrainPipelineConfig:
# prefetch_factor 4, persistent_workers True): every LeRobot-facing loader here gets them.
LEROBOT_TRAIN_LOADER = {"prefetch_factor": 4, "persistent_workers": True}
# robodata at a size: "auto" passes ``resolution=`` where robodata's readers take it (renditions),
# else resizes decoded frames like the peers; "resize" always resizes decoded frames.
ROBODATA_SIZE_PATH = os.environ.get("ROBODATA_BENCH_SIZE_PATH", "auto")


# --- the systems ---------------------------------------------------------------------------------
class RobodataSystem:
    """robodata's own reader, run like the peers (in its own process, from the dataset folder)."""

    def __init__(self, job: dict) -> None:
        self.job = job  # a profile of the first batch opens the system again from it
        import robodata

        self.uri = job["root"]
        self.ds = robodata.open(self.uri, version=job.get("version"), storage_options=job.get("storage_options"))
        self.concurrency = job.get("concurrency") or os.cpu_count() or 1
        _one_decode_thread(job)
        self.size = _size(job)
        self.by_resolution = self.size is not None and robodata_takes_resolution()
        self.label = "robodata"
        self.versions = _versions("pylance", "av", "torch", "numpy")

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
        """The decode bound of ``batches``: every GOP they need decoded once, as far as the last
        frame any of their rows wants, and every wanted frame converted (RGB, at the size) once per
        row: the least decoding any reader of these rows must do. From GOP bytes already in memory,
        on every core (one thread per core with its single-threaded decoder), through the reader's
        own GOP tasks (a stored rendition's GOPs where one fits the size, else the full GOPs scaled);
        no Lance read, no checksum, no worker, no copy between processes. Timed in CPU seconds (the
        bound is samples / (CPU s / cores)), in ``chunks`` parts for a median."""
        from concurrent.futures import ThreadPoolExecutor

        import numpy as np

        from robodata.reader import gop_store
        from robodata.reader._renditions import decode_requests, output_shape

        ds, size = self.ds, self.size
        gops = gop_store(ds)
        rows = ds.rows  # which GOP and frame each row shows
        idx = np.concatenate([np.asarray(b, dtype=np.int64) for b in measurement["batches"]])
        requests = []
        for camera in ds.cameras:
            out = np.empty((len(idx), *output_shape(ds.metadata, camera, size)), np.uint8)
            refs, in_gop = rows.ref_id[camera][idx], rows.frame_in_gop[camera][idx]
            requests += decode_requests(ds.metadata, gops.index, camera, refs, in_gop, out, size)
        tasks = gops.decode_tasks(requests)  # one per GOP; reads the GOP bytes now, outside the timing
        chunks = max(1, min(int(measurement.get("chunks", 4)), len(tasks)))
        parts = [tasks[i::chunks] for i in range(chunks)]
        threads = os.cpu_count() or 1
        seconds, cpu_seconds = [], []
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(lambda task: task.run(), tasks[:threads]))  # warm: one decoder per thread
            for part in parts:
                part = sorted(part, key=lambda t: -max(t.wanted))  # longest GOP prefixes first, as the reader
                start, cpu = time.perf_counter(), time.process_time()  # CPU time of every thread
                list(pool.map(lambda task: task.run(), part))
                seconds.append(time.perf_counter() - start)
                cpu_seconds.append(time.process_time() - cpu)
        wanted = [sum(len(t.wanted) for t in part) for part in parts]
        return {
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            # samples: rows x cameras per part over the cameras (a part holds whole GOPs of any camera)
            "samples": [w / len(ds.cameras) for w in wanted],
            "threads": threads,
            "frames_decoded": sum(max(t.wanted) + 1 for t in tasks),
            "frames_wanted": sum(len(t.wanted) for t in tasks),
            "distinct_frames_wanted": sum(len(set(t.wanted)) for t in tasks),
            "renditions": bool(size) and any(t.size is None for t in tasks),
        }


def _one_decode_thread(job: dict) -> None:
    """Profiles ask for one decode thread (cProfile sees only the calling thread); ds[i] and the
    torch datasets take no concurrency argument, so the pool's default is lowered."""
    if job.get("concurrency") == 1:
        from robodata.reader import _decode_pool as decode_pool

        decode_pool.default_concurrency = lambda: 1


def robodata_takes_resolution() -> bool:
    """Whether this robodata's training readers take ``resolution=`` (training renditions)."""
    if ROBODATA_SIZE_PATH == "resize":
        return False
    import inspect

    from robodata.lerobot import LeRobotCompatDataset
    from robodata.torch._batch_reader import BatchReader

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
        self.size = _size(job)
        self.label = f"robodata LeRobotCompatDataset ({self.dtype})"
        self.versions = _versions("pylance", "av", "torch", "numpy")
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
            **_lerobot_train_options(workers),
            **order,
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], _closer(loader)


class ResizeFrame:
    """Resize one C x H x W (or T x C x H x W) frame tensor: bilinear with antialiasing, the kernel
    torchvision's ``v2.Resize`` runs on tensors (the peers' transform; robodata's venv has no
    torchvision). uint8 stays uint8."""

    def __init__(self, size) -> None:
        self.size = tuple(int(v) for v in size)

    def __call__(self, frame):
        import torch

        lead = frame.shape[:-3]
        flat = frame.reshape(-1, *frame.shape[-3:])
        if flat.dtype == torch.uint8:
            out = torch.nn.functional.interpolate(flat, size=self.size, mode="bilinear", antialias=True)
        else:
            out = torch.nn.functional.interpolate(flat.float(), size=self.size, mode="bilinear", antialias=True)
        return out.reshape(*lead, *out.shape[-3:])


class ResizeBatch:
    """``make_dataloader``'s ``transform``: every image column of a numpy batch ([N, H, W, 3] or
    [N, T, H, W, 3] uint8) resized to ``size`` with ``ResizeFrame``'s kernel."""

    def __init__(self, size) -> None:
        self.frame = ResizeFrame(size)

    def __call__(self, batch: dict) -> dict:
        return {k: resize_hwc(v, self.frame.size) if _is_image(k, v) else v for k, v in batch.items()}


def _is_image(key: str, value) -> bool:
    return "images" in key and not key.endswith("_is_pad") and getattr(value, "ndim", 0) >= 4


def resize_hwc(frames, size):
    """[..., H, W, 3] uint8 numpy frames resized to ``size`` (H, W), same layout and dtype."""
    import numpy as np
    import torch

    array = np.asarray(frames)
    tensor = torch.from_numpy(np.ascontiguousarray(array)).movedim(-1, -3)
    out = ResizeFrame(size)(tensor).movedim(-3, -1).contiguous()
    return out.numpy()


def _size(job: dict):
    size = job.get("size")
    return None if not size else (int(size[0]), int(size[1]))


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
        self.label = f"LeRobot {_version('lerobot')} ({self.backend})"
        self.versions = _versions("lerobot", "torch", "torchcodec", "av", "numpy")

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
            **_lerobot_train_options(measurement["workers"]),
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], _closer(loader)


class LanceDBSystem(LeRobotSystem):
    """``lerobot_lancedb.LanceDBDataset`` (torchcodec) on ``lerobot-lance-convert``'s output."""

    def __init__(self, job: dict) -> None:
        self.job = job  # a profile of the first batch opens the system again from it
        from lerobot_lancedb import LanceDBDataset

        self.cls = LanceDBDataset
        self.root = job["root"]
        self.transforms = _peer_resize(job)
        self.ds = self._open(None)
        self.label = f"LanceDBDataset (lerobot-lancedb {_version('lerobot-lancedb')})"
        self.versions = _versions("lerobot-lancedb", "lancedb", "pylance", "lerobot", "torch", "torchcodec")

    def _open(self, delta_timestamps):
        return self.cls(
            root=self.root, return_uint8=True, delta_timestamps=delta_timestamps, image_transforms=self.transforms
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
            **_lerobot_train_options(workers),
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], _closer(loader)


def _lerobot_train_options(workers: int) -> dict:
    """``LEROBOT_TRAIN_LOADER`` where DataLoader takes it (with workers), as lerobot-train passes it."""
    return dict(LEROBOT_TRAIN_LOADER) if workers else {}


def _closer(loader):
    """Stops a loader's persistent workers: DataLoader keeps them on its iterator, which shuts them
    down when it is dropped (DataLoader has no public close)."""
    return lambda: setattr(loader, "_iterator", None)


def _peer_resize(job: dict):
    """The peers' documented resize: ``image_transforms=torchvision.transforms.v2.Resize(size)``."""
    size = _size(job)
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


def open_system(job: dict):
    """The reader a job names."""
    system = job.get("system")
    if system not in SYSTEMS:
        raise ValueError(f"job names system {system!r}; expected one of {SYSTEMS}")
    classes = {
        "robodata": RobodataSystem,
        "robodata-compat": RobodataCompatSystem,
        "lerobot": LeRobotSystem,
        "lancedb": LanceDBSystem,
    }
    return classes[system](job)


# --- measurements --------------------------------------------------------------------------------
def _timed(call, inputs: list) -> list[float]:
    seconds = []
    for value in inputs:
        start = time.perf_counter()
        call(value)
        seconds.append(time.perf_counter() - start)
    return seconds


def measure(system, measurement: dict, warmup: list[int]) -> dict:
    """Run one measurement of a job and return its figures."""
    kind = measurement["kind"]
    result = {"name": measurement["name"], "kind": kind}
    if kind == "sample":
        for index in warmup:
            system.sample(index)
        result["seconds"] = _timed(system.sample, measurement["indices"])
        result["samples"] = [1] * len(measurement["indices"])
    elif kind == "batch":
        system.batch(warmup)
        result["seconds"] = _timed(system.batch, measurement["batches"])
        result["samples"] = [len(b) for b in measurement["batches"]]
    elif kind == "window":
        read = system.window_reader(measurement)
        for index in warmup:
            read(index)
        result["seconds"] = _timed(read, measurement["indices"])
        result["samples"] = [1] * len(measurement["indices"])
    elif kind == "loader":
        result.update(_measure_loader(system, measurement))
    elif kind == "frames":
        import numpy as np

        frames = system.frames(measurement["indices"])
        np.savez(measurement["out"], **frames)
        result["cameras"] = {camera: list(array.shape) for camera, array in frames.items()}
    elif kind == "bound":
        result.update(system.bound(measurement))
    elif kind == "profile":
        result.update(_profile(system, measurement))
    else:
        raise ValueError(f"unknown measurement kind {kind!r}")
    return result


def _measure_loader(system, measurement: dict) -> dict:
    loader, indices_of, close = system.loader(measurement)
    wanted = len(measurement["batches"])
    seconds, samples, delivered = [], [], []
    start = last = time.perf_counter()
    first_batch_s = None
    warm = int(measurement.get("warm_epochs") or 0)
    try:
        if warm:
            # Whole epochs first (its first batch is the cold one), then the next epoch timed in
            # full: every batch, the first too, so work done early for later batches is counted.
            for _epoch in range(warm):
                for _batch in loader:
                    if first_batch_s is None:
                        first_batch_s = time.perf_counter() - start
            last = time.perf_counter()
            for batch in loader:
                now = time.perf_counter()
                seconds.append(now - last)
                last = now
                rows = indices_of(batch)
                samples.append(len(rows))
                delivered.append(rows)
                if len(delivered) >= wanted:
                    break
            return {"first_batch_s": first_batch_s, "seconds": seconds, "samples": samples, "delivered": delivered}
        for batch in loader:
            now = time.perf_counter()
            if first_batch_s is None:
                first_batch_s = now - start
            else:
                seconds.append(now - last)
            last = now
            rows = indices_of(batch)
            samples.append(len(rows))
            delivered.append(rows)
            if len(delivered) >= wanted:
                break
    finally:
        close()
    return {"first_batch_s": first_batch_s, "seconds": seconds, "samples": samples[1:], "delivered": delivered}


def _profile(system, measurement: dict) -> dict:
    import cProfile
    import pstats

    of = measurement["of"]
    if of == "sample":
        call, inputs = system.sample, measurement["indices"]
    elif of == "batch":
        call, inputs = system.batch, measurement["batches"]
    elif of == "open":  # the training process's part of the first batch: open the dataset, read a batch

        def call(batch):
            return open_system(system.job).batch(batch)

        inputs = measurement["batches"]
    else:
        call, inputs = system.window_reader(measurement), measurement["indices"]
    call(inputs[0])  # warm: open files and decoders outside the profile
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    for value in inputs:
        call(value)
    profiler.disable()
    elapsed = time.perf_counter() - start
    # (file, line, function) -> (cc, nc, own, cumulative, callers); typeshed leaves the table out
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    own: dict[str, float] = {}
    for (file, _, function), entry in stats.items():
        name = f"{file}:{function}"
        own[name] = own.get(name, 0.0) + entry[2]
    top = dict(sorted(own.items(), key=lambda kv: -kv[1])[:200])
    return {"seconds_per_call": elapsed / len(inputs), "own_seconds": top}


# --- protocol --------------------------------------------------------------------------------------
def _version(name: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _versions(*names: str) -> dict[str, str]:
    return {name: _version(name) for name in names}


def run_job(job: dict) -> dict:
    """Open the job's system once and run its measurements in order."""
    if job.get("protocol", PROTOCOL) != PROTOCOL:
        raise ValueError(f"job speaks protocol {job.get('protocol')}, this runner {PROTOCOL}")
    systems = {}  # one opened system per size: a measurement's own ``size`` overrides the job's

    def system_for(measurement: dict):
        size = measurement.get("size", job.get("size"))
        key = tuple(size) if size else None
        if key not in systems:
            systems[key] = open_system({**job, "size": size})
        return systems[key]

    system = system_for({})
    measurements = [measure(system_for(m), m, job.get("warmup", [0])) for m in job.get("measurements", [])]
    return {
        "protocol": PROTOCOL,
        "system": job["system"],
        "label": system.label,
        "versions": system.versions,
        "python": sys.version.split()[0],
        "pid": os.getpid(),
        "measurements": measurements,
    }


def main() -> int:
    try:
        job = json.loads(sys.stdin.read())
        result = run_job(job)
        code = 0
    except Exception as exc:  # reported through the protocol, with the traceback for the log
        traceback.print_exc()
        result = {"protocol": PROTOCOL, "error": f"{type(exc).__name__}: {exc}"}
        code = 1
    sys.stdout.write("\n" + RESULT_PREFIX + json.dumps(result) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    exit_code = main()
    sys.stderr.flush()
    # Decoder and DataLoader threads of the peers can abort at interpreter teardown ("terminate
    # called without an active exception"); the result is out, so leave without it.
    os._exit(exit_code)
