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
- ``loader``: a ``torch.utils.data.DataLoader`` with ``workers`` spawned workers over ``batches``
  (robodata: its own ``make_dataloader`` with ``seed``, whose batches the caller computed the
  same way); seconds to the first batch, then seconds per batch.
- ``frames``: decode ``indices`` and save every camera's frames (H x W x 3 uint8) to ``out`` (.npz).
- ``profile``: cProfile ``of`` (sample, batch or window) once over its inputs; own time per function.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

PROTOCOL = 1
RESULT_PREFIX = "PEER_RESULT "
SYSTEMS = ("robodata", "lerobot", "lancedb")


# --- the systems ---------------------------------------------------------------------------------
class RobodataSystem:
    """robodata's own reader, run like the peers (in its own process, from the dataset folder)."""

    def __init__(self, job: dict) -> None:
        import robodata

        self.uri = job["root"]
        self.ds = robodata.open(self.uri, version=job.get("version"), storage_options=job.get("storage_options"))
        # Profiles ask for one decode thread (cProfile sees only the calling thread); ds[i] and
        # get_windows take no concurrency argument, so the pool's default is lowered too.
        self.concurrency = job.get("concurrency") or os.cpu_count() or 1
        if self.concurrency == 1:
            from robodata.reader import decode_pool

            decode_pool.default_concurrency = lambda: 1
        self.label = "robodata"
        self.versions = _versions("pylance", "av", "torch", "numpy")

    def sample(self, index: int):
        return self.ds[index]

    def batch(self, indices: list[int]):
        ds = self.ds
        ds.lance_dataset.take(sorted(indices), columns=["episode_index", "frame_index", "observation_state", "action"])
        return ds.get_frames(indices, concurrency=self.concurrency)

    def window_reader(self, measurement: dict):
        ds, offsets = self.ds, measurement["row_offsets"]
        return lambda index: ds.get_windows([index], offsets)

    def frames(self, indices: list[int]) -> dict:
        return dict(self.ds.get_frames(indices).data)

    def loader(self, measurement: dict):
        from robodata.torch.torch_dataset import make_dataloader

        loader = make_dataloader(
            self.uri,
            batch_size=measurement["batch_size"],
            num_workers=measurement["workers"],
            seed=measurement["seed"],
            shuffle="global",
            version=self.ds.version,
            storage_options=self.ds.storage_options,
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], loader.close


class LeRobotSystem:
    """``lerobot.datasets.lerobot_dataset.LeRobotDataset`` with ``return_uint8=True``."""

    def __init__(self, job: dict) -> None:
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        self.cls = LeRobotDataset
        self.root = job["root"]
        self.backend = job.get("backend") or "torchcodec"
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
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], lambda: None


class LanceDBSystem(LeRobotSystem):
    """``lerobot_lancedb.LanceDBDataset`` (torchcodec) on ``lerobot-lance-convert``'s output."""

    def __init__(self, job: dict) -> None:
        from lerobot_lancedb import LanceDBDataset

        self.cls = LanceDBDataset
        self.root = job["root"]
        self.ds = self._open(None)
        self.label = f"LanceDBDataset (lerobot-lancedb {_version('lerobot-lancedb')})"
        self.versions = _versions("lerobot-lancedb", "lancedb", "pylance", "lerobot", "torch", "torchcodec")

    def _open(self, delta_timestamps):
        return self.cls(root=self.root, return_uint8=True, delta_timestamps=delta_timestamps)

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
        )
        return loader, lambda batch: [int(i) for i in batch["index"]], lambda: None


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
    return {"robodata": RobodataSystem, "lerobot": LeRobotSystem, "lancedb": LanceDBSystem}[system](job)


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
    try:
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
    system = open_system(job)
    measurements = [measure(system, m, job.get("warmup", [0])) for m in job.get("measurements", [])]
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
